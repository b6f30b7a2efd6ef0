//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/emr"
	"github.com/laxity-dev/laxity/internal/emr/emrfake"
	"github.com/laxity-dev/laxity/test/builder"
	"github.com/laxity-dev/laxity/test/builder/emrbuilder"
	"github.com/laxity-dev/laxity/test/testenv"
)

// A cluster that runs Spark only through EMR on EKS has no spark-operator:
// this control plane has laxity's CRDs and no SparkApplication kind. The
// manager finds AWS's credentials the way it does in a cluster, through the
// default chain (here the environment), and the schedule's endpoint points
// at an in-process EMR on EKS and EKS.
var _ = Describe("laxity manager on EMR on EKS, in a cluster without spark-operator", Ordered, func() {
	var (
		c          client.Client
		kubeconfig string
	)
	BeforeAll(func() {
		var env *testenv.Env
		env, c, kubeconfig = controlPlane()
		DeferCleanup(env.Stop)
	})

	It("runs a query's batches and merge as job runs and sizes the node group", func(ctx SpecContext) {
		aws := emrfake.New(GinkgoT())
		aws.SetClock(time.Now)
		aws.SetUpdatesCompleteAtOnce(true)
		aws.SetScaling(0, 10, 0)
		cfg := aws.Config()

		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "orders"}})).To(Succeed())
		// The administrator grants the namespace the virtual cluster, role,
		// node group and endpoint.
		Expect(c.Create(ctx, builder.TenantPolicy("orders-emr").Namespaces("orders").EMR(emrbuilder.Grant(cfg)).Obj())).To(Succeed())
		// The node group's two nodes are there already, as EKS would have
		// them once asked.
		for _, name := range []string{"ip-10-0-0-1", "ip-10-0-0-2"} {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"eks.amazonaws.com/nodegroup": cfg.NodegroupName}}}
			Expect(c.Create(ctx, node)).To(Succeed())
			node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
			Expect(c.Status().Update(ctx, node)).To(Succeed())
		}
		start := time.Now().Truncate(time.Second).Add(2 * time.Second)
		Expect(c.Create(ctx, builder.Schedule("orders", "orders").Sizes(2).LeadTime(10*time.Second).NoReleaseAfterIdle().Price("0.77").
			NodeSelector(map[string]string{"eks.amazonaws.com/nodegroup": cfg.NodegroupName}).
			Backend(emrbuilder.Backend(cfg)).Obj())).To(Succeed())
		Expect(c.Create(ctx, builder.Query("orders", "revenue").Schedule("orders").
			Window(start, 20*time.Second).Deadline(start.Add(10*time.Minute)).Rate("100").Granularity(100).
			CostModel(builder.CostModel(builder.BatchCost("2", "0", "0.001"), builder.MergeCost("1", "0", "0.1"))).
			Template(`{"type":"Scala","mode":"cluster","sparkVersion":"3.5.3","mainClass":"dev.laxity.Revenue","mainApplicationFile":"s3://jobs/revenue.jar","driver":{"cores":1,"memory":"1g"},"executor":{"cores":2,"memory":"4g"}}`).
			Obj())).To(Succeed())

		var logs bytes.Buffer
		managerCtx, stop := context.WithCancel(context.Background())
		defer stop()
		manager := exec.CommandContext(managerCtx, binary, "manager", "--kubeconfig", kubeconfig,
			"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--poll", "2s")
		creds, err := aws.Credentials().Retrieve(ctx)
		Expect(err).NotTo(HaveOccurred())
		manager.Env = append(os.Environ(),
			"AWS_ACCESS_KEY_ID="+creds.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+creds.SecretAccessKey,
			"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null")
		manager.Stdout, manager.Stderr = &logs, &logs
		Expect(manager.Start()).To(Succeed())
		// The log is read once the manager has exited: until then its
		// output is still being copied into it.
		var stopOnce sync.Once
		shutdown := func() {
			stopOnce.Do(func() {
				stop()
				_ = manager.Wait()
				AddReportEntry("manager log", logs.String())
			})
		}
		defer shutdown()

		// EMR on EKS runs every job run it gets to the end.
		complete := func() {
			for _, run := range aws.Runs() {
				if run.State == emr.StatePending {
					aws.SetState(run.ID, emr.StateCompleted, "", "")
				}
			}
		}
		Eventually(func(g Gomega) {
			complete()
			var q laxityv1alpha1.IntermittentQuery
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "orders", Name: "revenue"}, &q)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(q.Status.Conditions, laxityv1alpha1.IntermittentQuerySucceededCondition)).To(BeTrue(), "%+v", q.Status.Conditions)
			g.Expect(*q.Status.ProcessedTuples).To(Equal(int64(2000)))
		}).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())

		runs := aws.Runs()
		Expect(len(runs)).To(BeNumerically(">=", 2), "a batch and the final merge at least")
		for _, run := range runs {
			Expect(run.State).To(Equal(emr.StateCompleted))
			Expect(run.Request.Tags).To(HaveKeyWithValue("laxity.dev/query", "revenue"))
			Expect(run.Request.JobDriver.SparkSubmitJobDriver.SparkSubmitParameters).To(HaveSuffix("--conf spark.executor.instances=2"))
			var record corev1.ConfigMap
			Expect(c.Get(ctx, client.ObjectKey{Namespace: "orders", Name: run.Name}, &record)).To(Succeed())
			Expect(record.Data).To(HaveKeyWithValue("jobRunId", run.ID))
		}
		Expect(runs[len(runs)-1].Name).To(Equal("revenue-final"))
		Expect(aws.Updates()).NotTo(BeEmpty())
		Expect(aws.Updates()[0].DesiredSize).To(Equal(int32(2)))
		Eventually(aws.DesiredSize).WithTimeout(30*time.Second).Should(BeZero(), "the node group is released at the end")
		shutdown()
		Expect(logs.String()).To(ContainSubstring("serves no SparkApplications"), "the manager said it runs without spark-operator")
	})
})
