//go:build cluster

package cluster_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/laxity-dev/laxity/internal/localcluster"
)

var _ = Describe("The local cluster", func() {
	It("keeps a static NodePool's nodes, places a Deployment's pods on them, and removes them at zero replicas", func(ctx SpecContext) {
		c := theCluster.Client
		const poolName = "static"
		ns := namespace(ctx, "static")

		pool := localcluster.NewNodePool(poolName, new(int64(2)))
		requested := time.Now()
		Expect(c.Create(ctx, pool)).To(Succeed())
		DeferCleanup(deletePool, poolName)

		By("Karpenter creating two NodeClaims and two Nodes")
		Eventually(ctx, nodeClaims).WithArguments(poolName).WithTimeout(time.Minute).Should(HaveLen(2))
		Eventually(ctx, nodes).WithArguments(poolName).WithTimeout(time.Minute).Should(HaveLen(2))

		By("KWOK making them Ready after the lead time")
		var readyAfter time.Duration
		Eventually(ctx, func(g Gomega) {
			expectReadyNodes(ctx, g, poolName, 2)
			readyAfter = time.Since(requested)
		}).WithTimeout(leadTime + 2*time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
		AddReportEntry("static NodePool: request → both nodes Ready", readyAfter.Round(time.Millisecond).String(), ReportEntryVisibilityAlways)
		// KWOK counts from the nodes' creationTimestamp, in whole seconds.
		Expect(readyAfter).To(BeNumerically(">=", leadTime-time.Second))

		By("kube-scheduler placing a Deployment's pods on the pool's nodes")
		deploy := deployment(ns, "work", 4, poolName)
		Expect(c.Create(ctx, deploy)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			list, err := nodes(ctx, poolName)
			g.Expect(err).NotTo(HaveOccurred())
			onPool := map[string]bool{}
			for _, n := range list {
				onPool[n.Name] = true
			}
			var pods corev1.PodList
			g.Expect(c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": "work"})).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(4))
			for _, p := range pods.Items {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
				g.Expect(onPool).To(HaveKey(p.Spec.NodeName), "pod %s is on %q, not a node of the pool", p.Name, p.Spec.NodeName)
			}
		}).WithTimeout(time.Minute).Should(Succeed())

		By("Karpenter removing the nodes when the pool goes to zero")
		scaledDown := time.Now()
		Expect(c.Patch(ctx, pool, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":0}}`)))).To(Succeed())
		Eventually(ctx, nodes).WithArguments(poolName).WithTimeout(3 * time.Minute).Should(BeEmpty())
		Eventually(ctx, nodeClaims).WithArguments(poolName).WithTimeout(time.Minute).Should(BeEmpty())
		AddReportEntry("static NodePool: zero replicas → nodes gone", time.Since(scaledDown).Round(time.Millisecond).String(), ReportEntryVisibilityAlways)
	}, SpecTimeout(8*time.Minute))

	It("provisions a node of a dynamic NodePool for a pending pod, runs the pod for its run time and removes the empty node", func(ctx SpecContext) {
		c := theCluster.Client
		const poolName = "dynamic"
		ns := namespace(ctx, "dynamic")

		Expect(c.Create(ctx, localcluster.NewNodePool(poolName, nil))).To(Succeed())
		DeferCleanup(deletePool, poolName)
		Consistently(ctx, nodeClaims).WithArguments(poolName).WithTimeout(3 * time.Second).Should(BeEmpty())

		By("a pending pod making Karpenter provision a node")
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: ns, Name: "job",
				Annotations: map[string]string{localcluster.RunSecondsAnnotation: "5"},
			},
			Spec: corev1.PodSpec{
				NodeSelector:  map[string]string{localcluster.NodePoolLabel: poolName},
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{container()},
			},
		}
		requested := time.Now()
		Expect(c.Create(ctx, pod)).To(Succeed())
		Eventually(ctx, nodeClaims).WithArguments(poolName).WithTimeout(time.Minute).Should(HaveLen(1))

		By("the pod running on the new node once it is Ready")
		Eventually(ctx, func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
		}).WithTimeout(leadTime + 2*time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
		running := time.Now()
		AddReportEntry("dynamic NodePool: pending pod → pod Running", running.Sub(requested).Round(time.Millisecond).String(), ReportEntryVisibilityAlways)
		list, err := nodes(ctx, poolName)
		Expect(err).NotTo(HaveOccurred())
		Expect(list).To(HaveLen(1))
		Expect(pod.Spec.NodeName).To(Equal(list[0].Name))
		Expect(running.Sub(requested)).To(BeNumerically(">=", leadTime-time.Second))

		By("KWOK ending the pod after its run time")
		Eventually(ctx, func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodSucceeded))
		}).WithTimeout(time.Minute).Should(Succeed())
		ran := time.Since(running)
		AddReportEntry("dynamic NodePool: pod Running → Succeeded (run time 5s)", ran.Round(time.Millisecond).String(), ReportEntryVisibilityAlways)
		Expect(ran).To(BeNumerically(">=", 3*time.Second))

		By("Karpenter removing the empty node")
		Eventually(ctx, nodes).WithArguments(poolName).WithTimeout(3 * time.Minute).Should(BeEmpty())
	}, SpecTimeout(8*time.Minute))
})

// namespace makes a namespace for one spec, deleted after it.
func namespace(ctx context.Context, prefix string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	Expect(theCluster.Client.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(theCluster.Client.Delete(ctx, ns))).To(Succeed())
	})
	return ns.Name
}

// deletePool deletes a NodePool and waits until its nodes are gone, so the
// next spec starts from an empty cluster.
func deletePool(ctx SpecContext, name string) {
	pool := &unstructured.Unstructured{}
	pool.SetGroupVersionKind(localcluster.NodePoolKind)
	pool.SetName(name)
	Expect(client.IgnoreNotFound(theCluster.Client.Delete(ctx, pool))).To(Succeed())
	Eventually(ctx, nodes).WithArguments(name).WithTimeout(3 * time.Minute).Should(BeEmpty())
}

// nodeClaims lists the NodeClaims of a NodePool.
func nodeClaims(ctx context.Context, pool string) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(localcluster.NodeClaimKind.GroupVersion().WithKind(localcluster.NodeClaimKind.Kind + "List"))
	err := theCluster.Client.List(ctx, list, client.MatchingLabels{localcluster.NodePoolLabel: pool})
	return list.Items, err
}

// nodes lists the Nodes of a NodePool.
func nodes(ctx context.Context, pool string) ([]corev1.Node, error) {
	var list corev1.NodeList
	err := theCluster.Client.List(ctx, &list, client.MatchingLabels{localcluster.NodePoolLabel: pool})
	return list.Items, err
}

// expectReadyNodes expects the pool to have n nodes, every one Ready.
func expectReadyNodes(ctx context.Context, g Gomega, pool string, n int) {
	list, err := nodes(ctx, pool)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(list).To(HaveLen(n))
	for i := range list {
		g.Expect(ready(&list[i])).To(BeTrue(), "node %s is not Ready", list[i].Name)
	}
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func container() corev1.Container {
	return corev1.Container{
		Name:  "work",
		Image: "stand-in",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("500m"),
			corev1.ResourceMemory: resource.MustParse("256Mi"),
		}},
	}
}

func deployment(ns, name string, replicas int32, pool string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{localcluster.NodePoolLabel: pool},
					Containers:   []corev1.Container{container()},
				},
			},
		},
	}
}
