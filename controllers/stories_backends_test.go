package controllers

import (
	"context"
	"fmt"
	"slices"
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
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/dispatch"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/pool"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/test/builder"
)

// Story 7: the same small workload on each node pool backend. The pool
// object the backend drives (a Cluster API MachineDeployment, a static
// Karpenter NodePool, the placeholder Deployment, the CapacityBuffer) is
// read after every tick,
// and its spec.replicas is held against what the schedule says it requested
// and what the plan asked for at that instant. The same runs measure the
// reconcile cost (reconcileCostIts): the reconcilers write through a
// counting client. The scale backend's /scale writes go through the scale
// client and are not in those counts; the pool object's resourceVersion
// shows them.

// backendStoryMachineDeployment is a MachineDeployment the real Cluster API
// CRD accepts, at the apiVersion of the design document's sample, holding one node (the
// schedule's idle size), with fields a /scale write must leave alone.
const backendStoryMachineDeployment = `
apiVersion: cluster.x-k8s.io/v1beta1
kind: MachineDeployment
metadata:
  name: spark-workers
  namespace: %[1]s
  labels: {team: analytics}
  annotations: {example.com/note: keep me}
spec:
  clusterName: spark
  replicas: 1
  selector:
    matchLabels: {laxity.dev/pool: %[1]s}
  template:
    metadata:
      labels: {laxity.dev/pool: %[1]s}
    spec:
      clusterName: spark
      version: v1.33.1
      bootstrap: {dataSecretName: bootstrap}
      infrastructureRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: DockerMachineTemplate, name: workers}
`

// backendStoryNodePool is a static Karpenter NodePool (cluster-scoped, so
// named after the story's namespace) whose nodes carry the pool's label.
const backendStoryNodePool = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: %[1]s
  labels: {team: analytics}
  annotations: {example.com/note: keep me}
spec:
  replicas: 1
  limits: {nodes: "20"}
  template:
    metadata:
      labels: {laxity.dev/pool: %[1]s}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.2xlarge]}
`

// poolTarget is the object a backend resizes, read as it is stored.
type poolTarget struct {
	gvk             schema.GroupVersionKind
	namespace, name string
}

func (p poolTarget) get(ctx context.Context) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(p.gvk)
	return u, k8sClient.Get(ctx, client.ObjectKey{Namespace: p.namespace, Name: p.name}, u)
}

// replicas is the nodes the target holds, or -1 while it does not exist:
// its spec.replicas, and for the placeholder Deployment and the
// CapacityBuffer also the nodes laxity's steps use in its place (inUse, its
// annotation).
func (p poolTarget) replicas(ctx context.Context) int64 {
	n, inUse := p.held(ctx)
	return n + inUse
}

// held is the target's spec.replicas (-1 while it does not exist) and the
// nodes the placeholder Deployment or the CapacityBuffer says laxity's
// steps use.
func (p poolTarget) held(ctx context.Context) (replicas, inUse int64) {
	u, err := p.get(ctx)
	if apierrors.IsNotFound(err) {
		return -1, 0
	}
	Expect(err).NotTo(HaveOccurred())
	n, found, err := unstructured.NestedInt64(u.Object, "spec", "replicas")
	Expect(err).NotTo(HaveOccurred())
	Expect(found).To(BeTrue(), "%s %s has no spec.replicas", p.gvk.Kind, p.name)
	if a, ok := u.GetAnnotations()[pool.AnnotationNodesInUse]; ok {
		inUse, err = strconv.ParseInt(a, 10, 64)
		Expect(err).NotTo(HaveOccurred())
	}
	return n, inUse
}

// untouched is what a /scale write must not change: the target's spec
// without replicas, its labels and its annotations.
func (p poolTarget) untouched(ctx context.Context) map[string]any {
	u, err := p.get(ctx)
	Expect(err).NotTo(HaveOccurred())
	spec, _, err := unstructured.NestedMap(u.Object, "spec")
	Expect(err).NotTo(HaveOccurred())
	delete(spec, "replicas")
	return map[string]any{"spec": spec, "labels": u.GetLabels(), "annotations": u.GetAnnotations()}
}

// poolSample is the pool as seen after one tick.
type poolSample struct {
	at time.Time
	// replicas is the nodes the target holds (-1: no target object yet):
	// its spec.replicas, and for the placeholder backend also inUse, the
	// nodes laxity's steps use in place of its placeholders.
	replicas, placeholders, inUse int64
	// stepNodes is the nodes of the SparkApplications not yet ended.
	stepNodes int64
	// requested is the schedule's status.nodesRequested.
	requested int32
	// planned is what the plan in force's requests timeline asks for now.
	planned int32
	// planOrigin identifies the plan in force.
	planOrigin time.Time
	// gauge is laxity_pool_nodes_requested of the schedule.
	gauge float64
	// untouched is the target's other fields (scale targets only).
	untouched map[string]any
	// resourceVersion is the target's.
	resourceVersion string
}

func (s poolSample) String() string {
	return fmt.Sprintf("%5.0fs replicas %2d (in use %d) requested %2d planned %2d", s.at.Sub(origin).Seconds(), s.replicas, s.inUse, s.requested, s.planned)
}

// backendStory is one run of the story on one backend.
type backendStory struct {
	w       *world
	target  poolTarget
	scale   bool // the target is resized through /scale
	idle    int32
	samples []poolSample
	// plan is the first plan in force.
	plan *planner.Document
	// cost is the run's writes, tick by tick.
	cost *costRun
	// before is the target's other fields when created.
	before map[string]any
}

const backendStoryLead = 2 * time.Minute

// newBackendStory creates the world, the pool target (create, nil for the
// placeholder backend) and a schedule with backend and idle size idle, and
// two queries, then runs the world to the end, sampling the pool after
// every tick.
func newBackendStory(ctx context.Context, name string, idle int32, backend func(ns string) (laxityv1alpha1.PoolBackend, poolTarget, *unstructured.Unstructured)) *backendStory {
	// The reconcilers write through a counting client: the run is also the
	// reconcile-cost measurement (reconcile_cost_test.go).
	w, counts := countingWorld(ctx, name, backendStoryLead)
	ref, target, create := backend(w.ns)
	s := &backendStory{w: w, target: target, scale: ref.Scale != nil, idle: idle, cost: newCostRun(counts, 2)}
	if create != nil {
		Expect(k8sClient.Create(ctx, create)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, create))).To(Succeed()) })
		s.before = target.untouched(ctx)
	}
	w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4, 8).LeadTime(backendStoryLead).Obj()
	w.schedule.Spec.NodePool.IdleNodes = ptr.To(idle)
	// Nodes go back soon after the first window, so that the pool shrinks
	// between the two.
	w.schedule.Spec.NodePool.ReleaseAfterIdle = &metav1.Duration{Duration: time.Minute}
	w.schedule.Spec.NodePool.Backend = ref
	// A light query, then after a gap a heavy one that needs four nodes:
	// the plan's requests go 1 (idle) → 2 → 4 → 1 → 2 → 4 → 1.
	w.create(ctx, w.schedule,
		builder.Query(w.ns, "alpha").Rate("50").Window(origin.Add(5*time.Minute), 3*time.Minute).Slack(90*time.Second).Obj(),
		builder.Query(w.ns, "bravo").Rate("600").Window(origin.Add(12*time.Minute), 3*time.Minute).Slack(time.Minute).Obj(),
	)
	// After the run settles: two ticks for the simulated provisioner to
	// remove the released nodes, then an idle stretch in which nothing
	// changes.
	const settleTicks, idleTicks = 2, 20
	for t := origin; !t.After(origin.Add(30 * time.Minute)); t = t.Add(10 * time.Second) {
		s.cost.tick(ctx, w, t)
		s.sample(ctx, t)
		n := len(s.cost.ticks)
		if s.cost.settled < 0 && w.settled(ctx) {
			s.cost.settled = n - 1
			s.cost.idleFrom = n + settleTicks
		}
		if s.cost.idleFrom >= 0 && n >= s.cost.idleFrom+idleTicks {
			break
		}
	}
	w.report(ctx)
	for i := 1; i < len(s.samples); i++ {
		if s.samples[i].requested != s.samples[i-1].requested {
			s.cost.poolChanges++
		}
	}
	return s
}

func (s *backendStory) sample(ctx context.Context, now time.Time) {
	var es laxityv1alpha1.ElasticSchedule
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(s.w.schedule), &es)).To(Succeed())
	p := poolSample{at: now, requested: ptr.Deref(es.Status.NodesRequested, -1)}
	p.placeholders, p.inUse = s.target.held(ctx)
	p.replicas = p.placeholders + p.inUse
	apps := &unstructured.UnstructuredList{}
	apps.SetGroupVersionKind(sparkapp.GroupVersionKind.GroupVersion().WithKind(sparkapp.GroupVersionKind.Kind + "List"))
	Expect(k8sClient.List(ctx, apps, client.InNamespace(s.w.ns))).To(Succeed())
	for i := range apps.Items {
		if phase := sparkapp.Observe(&apps.Items[i]).Phase; phase == laxityv1alpha1.StepPending || phase == laxityv1alpha1.StepRunning {
			n, err := strconv.ParseInt(apps.Items[i].GetAnnotations()[sparkapp.AnnotationNodes], 10, 64)
			Expect(err).NotTo(HaveOccurred())
			p.stepNodes += n
		}
	}
	stored, err := loadPlan(ctx, k8sClient, &es)
	Expect(err).NotTo(HaveOccurred())
	if stored != nil {
		p.planned = int32(dispatch.RequestAt(stored.doc.Origin, stored.doc.Requests, now))
		p.planOrigin = stored.doc.Origin
		if s.plan == nil {
			s.plan = &stored.doc
		}
	}
	p.gauge = metric("laxity_pool_nodes_requested", map[string]string{labelNamespace: es.Namespace, labelSchedule: es.Name})
	if s.scale {
		p.untouched = s.target.untouched(ctx)
	}
	if u, err := s.target.get(ctx); err == nil {
		p.resourceVersion = u.GetResourceVersion()
	}
	s.samples = append(s.samples, p)
}

// backendStoryIts are the story's assertions, the same for every backend.
func backendStoryIts(story func() *backendStory) {
	It("sizes the pool object to the schedule's requests at every tick", func() {
		s := story()
		for _, p := range s.samples {
			if p.replicas < 0 {
				// Only the placeholder Deployment and the CapacityBuffer
				// are created on demand, and only nothing has been asked
				// for before they are.
				Expect(s.scale).To(BeFalse(), "%s: the target went away", p)
				Expect(p.requested).To(BeZero(), "%s: nodes requested without a placeholder Deployment", p)
				continue
			}
			Expect(p.replicas).To(BeEquivalentTo(p.requested), "%s: spec.replicas is not status.nodesRequested", p)
			Expect(p.gauge).To(BeEquivalentTo(p.requested), "%s: laxity_pool_nodes_requested is not status.nodesRequested", p)
		}
	})

	It("follows the plan's requests timeline: up on time, down never early", func() {
		s := story()
		Expect(s.plan).NotTo(BeNil())
		// The plan in force is the first one throughout: nothing re-plans.
		for _, p := range s.samples {
			Expect(p.planOrigin).To(Equal(s.plan.Origin), "%s: re-planned", p)
		}
		type level struct {
			at    time.Time
			nodes int64
		}
		var plan, pool []level
		for _, r := range s.plan.Requests {
			if n := int64(r.Nodes); len(plan) == 0 || plan[len(plan)-1].nodes != n {
				plan = append(plan, level{at(s.plan.Origin, r.At), n})
			}
		}
		behind := 0
		for i, p := range s.samples {
			// The pool never holds less than the plan asks for; it holds
			// more only while execution lags the plan (the controller keeps
			// the nodes of a step that should have started).
			Expect(int64(p.planned)).To(BeNumerically("<=", max(p.replicas, 0)), "%s", p)
			if int64(p.planned) != max(p.replicas, 0) {
				behind++
			}
			if n := max(p.replicas, 0); i == 0 || max(s.samples[i-1].replicas, 0) != n {
				pool = append(pool, level{p.at, n})
			}
		}
		var got []string
		for _, l := range pool {
			got = append(got, fmt.Sprintf("%4.0fs: %d", l.at.Sub(origin).Seconds(), l.nodes))
		}
		fmt.Fprintf(GinkgoWriter, "plan requests %v\npool %v\n%d of %d ticks above the plan's request (execution behind the plan)\n",
			s.plan.Requests, got, behind, len(s.samples))
		Expect(pool).To(HaveLen(len(plan)), "the pool's sizes %v are not the plan's %v", got, s.plan.Requests)
		for i := range plan {
			Expect(pool[i].nodes).To(Equal(plan[i].nodes), "size %d of the pool: %v, plan %v", i, got, s.plan.Requests)
			if i == 0 {
				continue
			}
			if plan[i].nodes > plan[i-1].nodes {
				// Nodes are asked for at the plan's instant: on the first
				// tick at or after it.
				Expect(pool[i].at).To(Equal(firstTickAtOrAfter(plan[i].at)), "growing to %d nodes", plan[i].nodes)
			} else {
				Expect(pool[i].at).NotTo(BeTemporally("<", plan[i].at), "shrinking to %d nodes before the plan does", plan[i].nodes)
			}
		}
		Expect(slices.ContainsFunc(plan, func(l level) bool { return l.nodes == 4 })).To(BeTrue(), "the story wants a plan that grows to 4 nodes")
	})

	It("returns the pool to the idle size at the end, and leaves it alone while idle", func(ctx SpecContext) {
		s := story()
		last := s.samples[len(s.samples)-1]
		Expect(s.w.settled(ctx)).To(BeTrue(), "the run did not finish: %s", last)
		Expect(last.replicas).To(BeEquivalentTo(s.idle), "%s", last)
		Expect(last.requested).To(Equal(s.idle), "%s", last)
		Expect(s.cost.idleFrom).To(BeNumerically(">", 0))
		for _, p := range s.samples[s.cost.idleFrom:] {
			Expect(p.resourceVersion).To(Equal(last.resourceVersion), "%s: the pool object was written while idle", p)
		}
	})

	It("runs every query to its final merge", func(ctx SpecContext) {
		var queries laxityv1alpha1.IntermittentQueryList
		Expect(k8sClient.List(ctx, &queries, client.InNamespace(story().w.ns))).To(Succeed())
		Expect(queries.Items).To(HaveLen(2))
		for _, q := range queries.Items {
			Expect(q.Status.Final).NotTo(BeNil(), q.Name)
			Expect(q.Status.Final.Outcome).To(Equal(laxityv1alpha1.StepSucceeded), q.Name)
			// Deadlines are story 1's subject. This plan leaves bravo a few
			// seconds of slack, which the 10-second ticks can eat.
			fmt.Fprintf(GinkgoWriter, "%s: final merge ended %v, deadline %v\n", q.Name, q.Status.Final.End.Time, q.Spec.Deadline.Time)
		}
	})

	It("never rewrites the pool object's other fields", func(ctx SpecContext) {
		s := story()
		if !s.scale {
			Skip("the placeholder Deployment and the CapacityBuffer are laxity's own objects")
		}
		for _, p := range s.samples {
			Expect(p.untouched).To(Equal(s.before), "%s: a field other than spec.replicas changed", p)
		}
		u, err := s.target.get(ctx)
		Expect(err).NotTo(HaveOccurred())
		var subresources []string
		for _, mf := range u.GetManagedFields() {
			if mf.Manager == pool.FieldOwner {
				subresources = append(subresources, mf.Subresource)
			}
		}
		Expect(subresources).To(Equal([]string{"scale"}), "laxity wrote the object, not only its /scale")
	})

	It("returns the pool to zero and lets the schedule go when it is deleted", func(ctx SpecContext) {
		s := story()
		key := client.ObjectKeyFromObject(s.w.schedule)
		Expect(seriesOf(s.w.ns)).NotTo(BeEmpty(), "the schedule's metrics were never recorded")
		Expect(k8sClient.Delete(ctx, s.w.schedule)).To(Succeed())
		// There is no manager: reconcile as the delete event would.
		_, err := s.w.es.Reconcile(ctx, ctrl.Request{NamespacedName: key})
		Expect(err).NotTo(HaveOccurred())
		Expect(s.target.replicas(ctx)).To(BeEquivalentTo(0))
		var es laxityv1alpha1.ElasticSchedule
		Expect(apierrors.IsNotFound(k8sClient.Get(ctx, key, &es))).To(BeTrue(), "the schedule is still there: %+v", es.ObjectMeta)
		_, err = s.w.es.Reconcile(ctx, ctrl.Request{NamespacedName: key})
		Expect(err).NotTo(HaveOccurred())
		Expect(scheduleSeriesOf(s.w.ns, "pool")).To(BeEmpty(), "the deleted schedule's series are still exported")
	})
}

// firstTickAtOrAfter is the story's first tick (every 10 s from origin)
// at or after t.
func firstTickAtOrAfter(t time.Time) time.Time {
	tick := 10 * time.Second
	d := t.Sub(origin)
	return origin.Add((d + tick - 1) / tick * tick)
}

func decodeManifest(manifest string, args ...any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal(fmt.Appendf(nil, manifest, args...), &u.Object)).To(Succeed())
	return u
}

func scaleRef(u *unstructured.Unstructured) laxityv1alpha1.PoolBackend {
	return laxityv1alpha1.PoolBackend{Scale: &laxityv1alpha1.ScaleBackend{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Name: u.GetName()}}
}

var _ = Describe("Story 7: a schedule on a Cluster API MachineDeployment (scale backend)", Ordered, func() {
	var s *backendStory
	BeforeAll(func(ctx SpecContext) {
		s = newBackendStory(ctx, "story7-md", 1, func(ns string) (laxityv1alpha1.PoolBackend, poolTarget, *unstructured.Unstructured) {
			md := decodeManifest(backendStoryMachineDeployment, ns)
			return scaleRef(md), poolTarget{gvk: md.GroupVersionKind(), namespace: ns, name: md.GetName()}, md
		})
	})
	backendStoryIts(func() *backendStory { return s })
	reconcileCostIts(func() *costRun { return s.cost })
})

var _ = Describe("Story 7: a schedule on a static Karpenter NodePool (scale backend, cluster-scoped)", Ordered, func() {
	var s *backendStory
	BeforeAll(func(ctx SpecContext) {
		s = newBackendStory(ctx, "story7-np", 1, func(ns string) (laxityv1alpha1.PoolBackend, poolTarget, *unstructured.Unstructured) {
			np := decodeManifest(backendStoryNodePool, ns)
			return scaleRef(np), poolTarget{gvk: np.GroupVersionKind(), name: np.GetName()}, np
		})
	})
	backendStoryIts(func() *backendStory { return s })
	reconcileCostIts(func() *costRun { return s.cost })
})

var _ = Describe("Story 7: a schedule on placeholder pods", Ordered, func() {
	var s *backendStory
	BeforeAll(func(ctx SpecContext) {
		s = newBackendStory(ctx, "story7-ph", 0, func(ns string) (laxityv1alpha1.PoolBackend, poolTarget, *unstructured.Unstructured) {
			// builder.Schedule's backend is the placeholder one.
			ref := builder.Schedule(ns, "pool").Sizes(2).LeadTime(backendStoryLead).Obj().Spec.NodePool.Backend
			return ref, poolTarget{gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, namespace: ns, name: pool.PlaceholderDeploymentName("pool")}, nil
		})
	})
	backendStoryIts(func() *backendStory { return s })
	reconcileCostIts(func() *costRun { return s.cost })

	sharerStoryIts(func() *backendStory { return s }, "placeholder Deployment")
})

// sharerStoryIts are the story's assertions for a backend that holds its
// nodes with an object of its own (object, such as "placeholder
// Deployment"), which gives up the nodes of laxity's steps (pool.Sharer).
func sharerStoryIts(story func() *backendStory, object string) {
	It("creates the "+object+" only once nodes are wanted, and scales it back to none", func() {
		s := story()
		first := -1
		for i, p := range s.samples {
			if p.replicas > 0 {
				first = i
				break
			}
		}
		Expect(first).To(BeNumerically(">", 0), "the %s was there from the start", object)
		for _, p := range s.samples[:first] {
			Expect(p.replicas).To(BeNumerically("<=", 0), "%s", p)
		}
		Expect(s.samples[len(s.samples)-1].replicas).To(BeZero())
	})

	It("holds "+object+" replicas only for the nodes no step uses", func() {
		s := story()
		busy := 0
		for _, p := range s.samples {
			if p.placeholders < 0 {
				continue
			}
			Expect(p.inUse).To(Equal(min(p.stepNodes, int64(p.requested))), "%s: the steps not yet ended hold %d nodes", p, p.stepNodes)
			Expect(p.placeholders).To(Equal(max(int64(p.requested)-p.inUse, 0)), "%s", p)
			if p.inUse > 0 {
				busy++
			}
		}
		fmt.Fprintf(GinkgoWriter, "%d of %d ticks with nodes in use by a step\n", busy, len(s.samples))
		Expect(busy).To(BeNumerically(">", 0), "no tick saw a step's nodes taken from the %s", object)
	})
}

var _ = Describe("Story 7: a schedule on a CapacityBuffer (capacityBuffer backend)", Ordered, func() {
	var s *backendStory
	BeforeAll(func(ctx SpecContext) {
		s = newBackendStory(ctx, "story7-cb", 0, func(ns string) (laxityv1alpha1.PoolBackend, poolTarget, *unstructured.Unstructured) {
			ref := builder.CapacityBufferBackend(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7"), corev1.ResourceMemory: resource.MustParse("28Gi")})
			return ref, poolTarget{gvk: pool.CapacityBufferKind, namespace: ns, name: pool.CapacityBufferName("pool")}, nil
		})
	})
	backendStoryIts(func() *backendStory { return s })
	reconcileCostIts(func() *costRun { return s.cost })
	sharerStoryIts(func() *backendStory { return s }, "CapacityBuffer")

	It("points the CapacityBuffer at a PodTemplate of one node-sized pod per node of the pool", func(ctx SpecContext) {
		cb, err := s.target.get(ctx)
		Expect(err).NotTo(HaveOccurred())
		ref, _, err := unstructured.NestedString(cb.Object, "spec", "podTemplateRef", "name")
		Expect(err).NotTo(HaveOccurred())
		var pt corev1.PodTemplate
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: s.w.ns, Name: ref}, &pt)).To(Succeed())
		Expect(pt.Template.Spec.NodeSelector).To(Equal(s.w.schedule.Spec.NodePool.NodeSelector))
		Expect(pt.Template.Spec.Containers).To(HaveLen(1))
		Expect(pt.Template.Spec.Containers[0].Resources.Requests).To(Equal(corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("7"), corev1.ResourceMemory: resource.MustParse("28Gi"),
		}))
		Expect(pt.Template.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution).To(HaveLen(1), "one buffered pod per node")
		for _, o := range []metav1.Object{cb, &pt} {
			Expect(o.GetOwnerReferences()).To(HaveLen(1))
			Expect(o.GetOwnerReferences()[0].Name).To(Equal("pool"))
			Expect(o.GetOwnerReferences()[0].Kind).To(Equal("ElasticSchedule"))
		}
	})
})
