//go:build e2e

// Package e2e runs the built laxity binary as a process against a local
// kube-apiserver and etcd (no container engine needed).
package e2e

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/manifest"
	"github.com/laxity-dev/laxity/test/testenv"
)

var (
	testEnv    *testenv.Env
	k8sClient  client.Client
	kubeconfig string
	binary     string
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	suiteConfig, reporterConfig := GinkgoConfiguration()
	suiteConfig.RandomizeAllSpecs = true
	RunSpecs(t, "laxity end to end", suiteConfig, reporterConfig)
}

var _ = BeforeSuite(func() {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	Expect(err).NotTo(HaveOccurred())
	binary = filepath.Join(GinkgoT().TempDir(), "laxity")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Dir = root
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))

	testEnv, k8sClient, kubeconfig = controlPlane(testenv.WithThirdPartyCRDs(testenv.SparkApplications, testenv.MachineDeployments))
})

// controlPlane starts a kube-apiserver and etcd with laxity's CRDs and
// those opts add, and returns them, a client and a kubeconfig file for the
// binary.
func controlPlane(opts ...testenv.Option) (*testenv.Env, client.Client, string) {
	env, err := testenv.Start(opts...)
	Expect(err).NotTo(HaveOccurred())
	kubeconfig, err := env.WriteKubeconfig(GinkgoT().TempDir(), "laxity-e2e")
	Expect(err).NotTo(HaveOccurred())
	return env, env.Client, kubeconfig
}

var _ = AfterSuite(func() {
	Expect(testEnv.Stop()).To(Succeed())
})

var _ = Describe("laxity manager", func() {
	It("plans the TPC-H sample and asks its MachineDeployment for the plan's first nodes", func(ctx SpecContext) {
		Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "analytics"}})).To(Succeed())
		md := &unstructuredMachineDeployment{}
		Expect(k8sClient.Create(ctx, md.object("analytics", "spark-workers"))).To(Succeed())
		set, err := manifest.Load(filepath.Join("..", "..", "config", "samples", "tpch.yaml"))
		Expect(err).NotTo(HaveOccurred())
		for _, s := range set.Schedules {
			Expect(k8sClient.Create(ctx, s.Object)).To(Succeed())
		}
		for _, q := range set.Queries {
			Expect(k8sClient.Create(ctx, q.Object)).To(Succeed())
		}

		var logs bytes.Buffer
		managerCtx, stop := context.WithCancel(context.Background())
		defer stop()
		manager := exec.CommandContext(managerCtx, binary, "manager", "--kubeconfig", kubeconfig,
			"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--allowed-service-accounts", "spark")
		manager.Stdout, manager.Stderr = &logs, &logs
		Expect(manager.Start()).To(Succeed())
		defer func() {
			stop()
			_ = manager.Wait()
			AddReportEntry("manager log", logs.String())
		}()

		Eventually(func(g Gomega) {
			var es laxityv1alpha1.ElasticSchedule
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: "analytics", Name: "tpch"}, &es)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(es.Status.Conditions, laxityv1alpha1.ElasticSchedulePlannedCondition)).To(BeTrue())
			g.Expect(es.Status.Chosen).NotTo(BeNil())
			g.Expect(es.Status.Candidates).To(HaveLen(30))
			g.Expect(es.Finalizers).To(ContainElement("laxity.dev/pool"))
			var cm corev1.ConfigMap
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: "analytics", Name: "tpch-plan"}, &cm)).To(Succeed())
			g.Expect(cm.Data).To(HaveKey("plan.json"))
			g.Expect(md.replicas(ctx, k8sClient, "analytics", "spark-workers")).To(BeNumerically(">=", 0))
		}).WithTimeout(60 * time.Second).WithPolling(time.Second).Should(Succeed())

		Eventually(func(g Gomega) {
			var q laxityv1alpha1.IntermittentQuery
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: "analytics", Name: "tpch-q1"}, &q)).To(Succeed())
			g.Expect(q.Status.ObservedGeneration).To(Equal(q.Generation), "status %+v", q.Status)
			g.Expect(meta.FindStatusCondition(q.Status.Conditions, laxityv1alpha1.IntermittentQueryReadyCondition)).NotTo(BeNil())
		}).WithTimeout(60 * time.Second).WithPolling(time.Second).Should(Succeed())
	})

	It("rejects bad flags with exit status 1", func() {
		out, err := exec.Command(binary, "manager", "--no-such-flag").CombinedOutput()
		var exit *exec.ExitError
		Expect(errors.As(err, &exit)).To(BeTrue(), "%v", err)
		Expect(exit.ExitCode()).To(Equal(1))
		Expect(string(out)).To(ContainSubstring("unknown flag: --no-such-flag"))
	})
})
