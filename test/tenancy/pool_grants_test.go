package tenancy_test

import (
	"context"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/pool"
	"github.com/laxity-dev/laxity/test/builder"
)

// poolGrantsBufferNodes is the node count laxity asks of the schedule's
// CapacityBuffer (its nodes-requested annotation), 0 when there is none.
func poolGrantsBufferNodes(ctx context.Context, es *laxityv1alpha1.ElasticSchedule) func(Gomega) int {
	return func(g Gomega) int {
		cb := &unstructured.Unstructured{}
		cb.SetGroupVersionKind(pool.CapacityBufferKind)
		err := asCarol.Get(ctx, client.ObjectKey{Namespace: es.Namespace, Name: pool.CapacityBufferName(es.Name)}, cb)
		if apierrors.IsNotFound(err) {
			return 0
		}
		g.Expect(err).NotTo(HaveOccurred())
		n, err := strconv.Atoi(cb.GetAnnotations()[pool.AnnotationNodesRequested])
		g.Expect(err).NotTo(HaveOccurred())
		replicas, _, _ := unstructured.NestedInt64(cb.Object, "spec", "replicas")
		g.Expect(replicas).To(BeNumerically("<=", n), "the buffer holds more pods than nodes asked for")
		return n
	}
}

// poolGrantsBufferPolicy is carol's grant of CapacityBuffers on the nodes
// selector selects, up to maxNodes, to namespace ns.
func poolGrantsBufferPolicy(name, ns string, selector map[string]string, maxNodes int32) *laxityv1alpha1.TenantPolicy {
	p := builder.TenantPolicy(name).Namespaces(ns).Obj()
	p.Spec.CapacityBuffers = []laxityv1alpha1.CapacityBufferGrant{{NodeSelector: selector, MaxNodes: ptr.To(maxNodes)}}
	return p
}

// poolGrantsQuota sets the hard limits of namespace team A's quota small.
func poolGrantsQuota(ctx context.Context, cpu string, pods string) {
	var q corev1.ResourceQuota
	Expect(asCarol.Get(ctx, client.ObjectKey{Namespace: teamA, Name: "small"}, &q)).To(Succeed())
	q.Spec.Hard = corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse(cpu), corev1.ResourcePods: resource.MustParse(pods)}
	Expect(asCarol.Update(ctx, &q)).To(Succeed())
}

// poolGrantsPlanned is the message of the schedule's Planned condition.
func poolGrantsPlanned(ctx context.Context, es *laxityv1alpha1.ElasticSchedule) func(Gomega) string {
	return func(g Gomega) string {
		c := condition(ctx, es, func() []metav1.Condition { return es.Status.Conditions }, laxityv1alpha1.ElasticSchedulePlannedCondition)(g)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		return c.Message
	}
}

// poolGrantsNodePools is carol's dynamic client of Karpenter's NodePools,
// to watch every write of a pool's spec.replicas.
func poolGrantsNodePools() dynamic.NamespaceableResourceInterface {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: carol}
	dc, err := dynamic.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	return dc.Resource(schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"})
}

// poolGrantsReplicasSince is every spec.replicas the NodePool name had
// since resourceVersion rv, in order, each change once: it marks the pool
// with an annotation and replays the pool's watch from rv up to that
// mark, so that no write in between is missed, however brief.
func poolGrantsReplicasSince(ctx context.Context, name, rv string) []int64 {
	pools := poolGrantsNodePools()
	mark := strconv.FormatInt(time.Now().UnixNano(), 10)
	patch := []byte(`{"metadata":{"annotations":{"test.laxity.dev/mark":"` + mark + `"}}}`)
	_, err := pools.Patch(ctx, name, "application/merge-patch+json", patch, metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
	w, err := pools.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: rv})
	Expect(err).NotTo(HaveOccurred())
	defer w.Stop()
	var seen []int64
	for ev := range w.ResultChan() {
		Expect(ev.Type).NotTo(Equal(watch.Error), "watching NodePool %s: %v", name, ev.Object)
		u, ok := ev.Object.(*unstructured.Unstructured)
		Expect(ok).To(BeTrue())
		if n, found, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); found && (len(seen) == 0 || seen[len(seen)-1] != n) {
			seen = append(seen, n)
		}
		if ev.Type == watch.Deleted || u.GetAnnotations()["test.laxity.dev/mark"] == mark {
			return seen
		}
	}
	Fail("the watch of NodePool " + name + " ended before the mark")
	return nil
}

// gone waits until obj no longer exists.
func poolGrantsGone(ctx context.Context, obj client.Object) {
	Eventually(func() bool {
		return apierrors.IsNotFound(asCarol.Get(ctx, client.ObjectKeyFromObject(obj), obj))
	}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue())
}

var _ = Describe("backends, ceilings and one writer per pool", func() {
	BeforeEach(teamPoolsReady)

	It("refuses a CapacityBuffer without a grant of its nodes, and bounds one by the grant's ceiling and the namespace's ResourceQuota", func(ctx SpecContext) {
		create(ctx, asCarol, &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "small"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
				corev1.ResourceRequestsCPU: resource.MustParse("1"), corev1.ResourcePods: resource.MustParse("2"),
			}},
		})
		perNode := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi")}

		By("alice asks for 100000 nodes of 64 CPUs on team B's GPU pool")
		gpus := builder.Schedule(teamA, "grabs-gpus").Sizes(100000).NodeSelector(map[string]string{"karpenter.sh/nodepool": "team-b-gpu"}).
			Backend(builder.CapacityBufferBackend(perNode)).Obj()
		create(ctx, asAlice, gpus)
		create(ctx, asAlice, query(teamA, "on-gpus", "grabs-gpus", time.Hour).Obj())
		refusal := refusedFor(laxityv1alpha1.NotPermittedReason,
			"spec.nodePool.backend.capacityBuffer: keeping room with a CapacityBuffer on the nodes spec.nodePool.nodeSelector selects, {karpenter.sh/nodepool=team-b-gpu} is not permitted",
			"no TenantPolicy selecting namespace team-a grants it (spec.capacityBuffers)")
		Eventually(scheduleStalled(ctx, gpus)).WithTimeout(timeout).WithPolling(poll).Should(refusal)
		Consistently(poolGrantsBufferNodes(ctx, gpus)).WithTimeout(2 * time.Second).WithPolling(poll).Should(BeZero())

		By("carol grants team A room on its own pool only, up to 3 nodes: team B's pool stays refused")
		grant(ctx, poolGrantsBufferPolicy("team-a-buffers", teamA, map[string]string{"laxity.dev/pool": teamA}, 3))
		Consistently(scheduleStalled(ctx, gpus)).WithTimeout(2 * time.Second).WithPolling(poll).Should(refusal)
		Expect(poolGrantsBufferNodes(ctx, gpus)(Default)).To(BeZero())

		By("on team A's own pool, the quota (1 CPU, 2 pods) has room for no 64-CPU node: nothing is planned, no node asked for")
		own := builder.Schedule(teamA, "own-buffer").Sizes(100000).Backend(builder.CapacityBufferBackend(perNode)).Obj()
		create(ctx, asAlice, own)
		create(ctx, asAlice, query(teamA, "on-own", "own-buffer", time.Hour).Obj())
		Eventually(scheduleStalled(ctx, own)).WithTimeout(timeout).WithPolling(poll).Should(refusedFor(laxityv1alpha1.OverCeilingReason,
			"spec.nodePool.sizes: no pool size fits under the ceiling of 0 nodes (ResourceQuota small hard requests.cpu: 1, 64 per node)"))
		Expect(poolGrantsBufferNodes(ctx, own)(Default)).To(BeZero())

		By("with room for two such nodes in the quota, the plan's sizes are capped to 2")
		poolGrantsQuota(ctx, "128", "10")
		Eventually(poolGrantsPlanned(ctx, own)).WithTimeout(timeout).WithPolling(poll).Should(
			ContainSubstring("spec.nodePool.sizes are capped to [2] by the ceiling of 2 nodes (ResourceQuota small hard requests.cpu: 128, 64 per node)"))
		Eventually(poolGrantsBufferNodes(ctx, own)).WithTimeout(timeout).WithPolling(poll).Should(Equal(2))
		Consistently(poolGrantsBufferNodes(ctx, own)).WithTimeout(2 * time.Second).WithPolling(poll).Should(BeNumerically("<=", 2))

		By("with a larger quota, the grant's ceiling of 3 nodes bounds it")
		poolGrantsQuota(ctx, "6400", "1000")
		Eventually(poolGrantsPlanned(ctx, own)).WithTimeout(timeout).WithPolling(poll).Should(
			ContainSubstring("capped to [3] by the ceiling of 3 nodes (TenantPolicy team-a-buffers spec.capacityBuffers[0].maxNodes)"))
		Eventually(poolGrantsBufferNodes(ctx, own)).WithTimeout(timeout).WithPolling(poll).Should(Equal(3))
		Consistently(poolGrantsBufferNodes(ctx, own)).WithTimeout(2 * time.Second).WithPolling(poll).Should(BeNumerically("<=", 3))
	})

	It("lets one schedule at a time resize a pool two namespaces are allowed on: the later is refused, naming the holder, and never writes", func(ctx SpecContext) {
		create(ctx, asCarol, nodePool("shared-ab", 0, "team-a,team-b"))
		By("the shared pool's 4 nodes, which both teams' schedules select")
		readyNodes(ctx, "shared-ab", 4)
		onShared := func(ns, name string, size int32) *laxityv1alpha1.ElasticSchedule {
			return builder.Schedule(ns, name).Sizes(size).NodeSelector(map[string]string{"laxity.dev/pool": "shared-ab"}).
				Backend(builder.ScaleBackend("karpenter.sh/v1", "NodePool", "shared-ab")).Obj()
		}
		holder := onShared(teamA, "holder", 4)
		create(ctx, asAlice, holder)
		create(ctx, asAlice, query(teamA, "on-ab", "holder", time.Hour).Obj())
		Eventually(replicas(ctx, "shared-ab")).WithTimeout(timeout).WithPolling(poll).Should(BeEquivalentTo(4))
		u, err := poolGrantsNodePools().Get(ctx, "shared-ab", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		since := u.GetResourceVersion()

		By("bob's schedules on the same pool, created later, are refused and name alice's")
		later, next := onShared(teamB, "later", 1), onShared(teamB, "next", 2)
		for _, es := range []*laxityv1alpha1.ElasticSchedule{later, next} {
			create(ctx, asBob, es)
			create(ctx, asBob, query(teamB, es.Name+"-q", es.Name, time.Hour).Obj())
			Eventually(scheduleStalled(ctx, es)).WithTimeout(timeout).WithPolling(poll).Should(refusedFor(laxityv1alpha1.PoolInUseReason,
				"spec.nodePool.backend.scale: NodePool.karpenter.sh shared-ab is resized by ElasticSchedule team-a/holder, which claimed it first"))
		}
		Consistently(replicas(ctx, "shared-ab")).WithTimeout(3 * time.Second).WithPolling(poll).Should(BeEquivalentTo(4))
		Expect(poolGrantsReplicasSince(ctx, "shared-ab", since)).To(Equal([]int64{4}), "the pool's spec.replicas took another value than the holder's")

		By("deleting a refused schedule leaves the pool as it is")
		Expect(asBob.Delete(ctx, later)).To(Succeed())
		poolGrantsGone(ctx, later)
		Expect(scheduleStalled(ctx, next)(Default)).To(refusedFor(laxityv1alpha1.PoolInUseReason, "team-a/holder"))
		Expect(poolGrantsReplicasSince(ctx, "shared-ab", since)).To(Equal([]int64{4}))

		By("deleting the holder releases the pool, and then the next schedule takes it over")
		Expect(asAlice.Delete(ctx, holder)).To(Succeed())
		poolGrantsGone(ctx, holder)
		Eventually(scheduleStalled(ctx, next)).WithTimeout(timeout).WithPolling(poll).Should(BeNil())
		Eventually(replicas(ctx, "shared-ab")).WithTimeout(timeout).WithPolling(poll).Should(BeEquivalentTo(2))
		Expect(poolGrantsReplicasSince(ctx, "shared-ab", since)).To(Equal([]int64{4, 0, 2}), "the holder released the pool, then the next one asked for its own size, once")
	})

	It("says a pool deleted mid-window was not found, not that it is not permitted", func(ctx SpecContext) {
		np := nodePool("vanishing", 0, "team-a")
		Expect(asCarol.Create(ctx, np)).To(Succeed())
		es := builder.Schedule(teamA, "on-vanishing").Sizes(3).Backend(builder.ScaleBackend("karpenter.sh/v1", "NodePool", "vanishing")).Obj()
		create(ctx, asAlice, es)
		create(ctx, asAlice, query(teamA, "on-vanishing-q", "on-vanishing", time.Hour).Obj())
		Eventually(replicas(ctx, "vanishing")).WithTimeout(timeout).WithPolling(poll).Should(BeEquivalentTo(3))

		By("carol deletes the pool while the window's batches run")
		Expect(asCarol.Delete(ctx, np)).To(Succeed())
		Eventually(scheduleStalled(ctx, es)).WithTimeout(timeout).WithPolling(poll).Should(refusedFor(laxityv1alpha1.PoolNotFoundReason,
			"spec.nodePool.backend.scale: NodePool.karpenter.sh vanishing was not found"))
		Expect(scheduleStalled(ctx, es)(Default)).To(HaveField("Message", Not(ContainSubstring("allowed-namespaces"))))
	})
})
