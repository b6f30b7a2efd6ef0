//go:build cluster

package cluster_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/localcluster"
	"github.com/laxity-dev/laxity/internal/sparkapp"
)

var _ = Describe("The Spark stand-in", func() {
	It("runs a SparkApplication's driver and executors on a pool's nodes for its run time and writes spark-operator's states", func(ctx SpecContext) {
		c := theCluster.Client
		const poolName = "spark"
		ns := namespace(ctx, "spark")

		stop, err := theCluster.StartSparkStandIn(&localcluster.SparkStandIn{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stop)

		Expect(c.Create(ctx, localcluster.NewNodePool(poolName, new(int64(2))))).To(Succeed())
		DeferCleanup(deletePool, poolName)
		Eventually(ctx, func(g Gomega) {
			expectReadyNodes(ctx, g, poolName, 2)
		}).WithTimeout(leadTime + 2*time.Minute).Should(Succeed())

		By("a SparkApplication of three executors of 1 core and 2g, running 6 seconds")
		pool := map[string]any{localcluster.NodePoolLabel: poolName}
		app := sparkapp.New()
		app.SetNamespace(ns)
		app.SetName("query-b0")
		app.SetAnnotations(map[string]string{localcluster.RunSecondsAnnotation: "6"})
		app.Object["spec"] = map[string]any{
			"type": "Scala", "mode": "cluster", "sparkVersion": "3.5.0",
			"mainApplicationFile": "local:///opt/query.jar",
			"driver":              map[string]any{"cores": int64(1), "memory": "1g", "nodeSelector": pool},
			"executor":            map[string]any{"cores": int64(1), "memory": "2g", "instances": int64(3), "nodeSelector": pool},
		}
		Expect(c.Create(ctx, app)).To(Succeed())

		By("the stand-in running the driver and executors on the pool's nodes")
		Eventually(ctx, func(g Gomega) string {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(app), app)).To(Succeed())
			return sparkapp.Observe(app).State
		}).WithTimeout(time.Minute).Should(Equal(sparkapp.StateRunning))
		running := time.Now()
		Eventually(ctx, func(g Gomega) {
			list, err := nodes(ctx, poolName)
			g.Expect(err).NotTo(HaveOccurred())
			onPool := map[string]bool{}
			for _, n := range list {
				onPool[n.Name] = true
			}
			var pods corev1.PodList
			g.Expect(c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{localcluster.SparkAppNameLabel: app.GetName()})).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(4))
			roles := map[string]int{}
			for _, p := range pods.Items {
				roles[p.Labels[localcluster.SparkRoleLabel]]++
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
				g.Expect(onPool).To(HaveKey(p.Spec.NodeName), "pod %s is on %q", p.Name, p.Spec.NodeName)
				if p.Labels[localcluster.SparkRoleLabel] == "executor" {
					req := p.Spec.Containers[0].Resources.Requests
					g.Expect(req.Cpu().Equal(resource.MustParse("1"))).To(BeTrue(), "cpu %v", req.Cpu())
					g.Expect(req.Memory().Equal(resource.MustParse("2432Mi"))).To(BeTrue(), "memory %v", req.Memory())
				}
			}
			g.Expect(roles).To(Equal(map[string]int{"driver": 1, "executor": 3}))
		}).WithTimeout(time.Minute).Should(Succeed())

		By("the application completing after its run time, its executors gone")
		Eventually(ctx, func(g Gomega) v1alpha1.StepOutcome {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(app), app)).To(Succeed())
			return sparkapp.Observe(app).Phase
		}).WithTimeout(time.Minute).Should(Equal(v1alpha1.StepSucceeded))
		AddReportEntry("Spark stand-in: RUNNING → COMPLETED (run time 6s)", time.Since(running).Round(time.Millisecond).String(), ReportEntryVisibilityAlways)
		seen := sparkapp.Observe(app)
		Expect(seen.State).To(Equal(sparkapp.StateCompleted))
		Expect(seen.Started).NotTo(BeNil())
		Expect(seen.Ended).NotTo(BeNil())
		Expect(seen.Ended.Sub(*seen.Started)).To(BeNumerically(">=", 5*time.Second))
		driverPod, _, _ := unstructured.NestedString(app.Object, "status", "driverInfo", "podName")
		Expect(driverPod).To(Equal("query-b0-driver"))
		Eventually(ctx, func(g Gomega) {
			var pods corev1.PodList
			g.Expect(c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{localcluster.SparkRoleLabel: "executor"})).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty())
		}).WithTimeout(time.Minute).Should(Succeed())
	}, SpecTimeout(6*time.Minute))

	It("fails a SparkApplication whose spec makes no pods, as a failed spark-submit", func(ctx SpecContext) {
		c := theCluster.Client
		ns := namespace(ctx, "spark-bad")
		stop, err := theCluster.StartSparkStandIn(&localcluster.SparkStandIn{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stop)

		app := sparkapp.New()
		app.SetNamespace(ns)
		app.SetName("bad")
		app.Object["spec"] = map[string]any{
			"type": "Scala", "mode": "cluster", "sparkVersion": "3.5.0",
			"mainApplicationFile": "local:///opt/query.jar",
			"driver":              map[string]any{"memory": "lots"},
			"executor":            map[string]any{"instances": int64(1)},
		}
		Expect(c.Create(ctx, app)).To(Succeed())
		Eventually(ctx, func(g Gomega) v1alpha1.StepOutcome {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(app), app)).To(Succeed())
			return sparkapp.Observe(app).Phase
		}).WithTimeout(time.Minute).Should(Equal(v1alpha1.StepFailed))
		seen := sparkapp.Observe(app)
		Expect(seen.State).To(Equal(sparkapp.StateSubmissionFailed))
		Expect(seen.Message).To(ContainSubstring("spec.driver.memory"))
	}, SpecTimeout(2*time.Minute))
})
