package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/test/builder"
)

// The poison suite: objects a careless or hostile tenant can get past the
// API server, each in its own namespace, next to a healthy tenant's
// schedule. The reconcilers read through one cluster-wide informer cache,
// as the manager's do, so an object that breaks decoding or listing would
// stop the healthy tenant too. The healthy schedule must be planned and
// meet its deadlines; every bad object must carry a condition naming its
// problem; no reconcile may panic.

// cachedReader starts an informer cache over the whole cluster with the
// manager's settings and returns a client that reads through it.
func cachedReader(ctx context.Context) client.Client {
	informers, err := cache.New(cfg, cache.Options{Scheme: k8sClient.Scheme(), ByObject: CacheOptions().ByObject})
	Expect(err).NotTo(HaveOccurred())
	go func() { _ = informers.Start(ctx) }()
	c, err := client.New(cfg, client.Options{Scheme: k8sClient.Scheme(), Cache: &client.CacheOptions{Reader: informers, Unstructured: true}})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// useCache makes the world's reconcilers read through c.
func (w *world) useCache(c client.Client) {
	w.es.Client = c
	w.iq.Client = c
	w.es.Runner, w.iq.Runner = StepRunners(c, nil), StepRunners(c, nil)
	w.caughtUp = func(ctx context.Context) { caughtUp(ctx, c, w.ns) }
}

// versions maps the names of a list's items to their resource versions.
func versions(list client.ObjectList) map[string]string {
	out := map[string]string{}
	Expect(meta.EachListItem(list, func(o runtime.Object) error {
		m, err := meta.Accessor(o)
		if err != nil {
			return err
		}
		out[m.GetNamespace()+"/"+m.GetName()] = m.GetResourceVersion()
		return nil
	})).To(Succeed())
	return out
}

// caughtUp waits until the cache holds what the API server holds in ns, so
// that a tick never acts on a read older than the last write: the
// reconcilers on a manager would simply be woken again, which a story that
// ticks a fake clock cannot wait for.
func caughtUp(ctx context.Context, cached client.Client, ns string) {
	lists := func() []client.ObjectList {
		return []client.ObjectList{
			&laxityv1alpha1.ElasticScheduleList{}, &laxityv1alpha1.IntermittentQueryList{}, sparkapp.NewList(),
		}
	}
	Eventually(func(g Gomega) {
		direct, viaCache := lists(), lists()
		for i := range direct {
			g.Expect(k8sClient.List(ctx, direct[i], client.InNamespace(ns))).To(Succeed())
			g.Expect(cached.List(ctx, viaCache[i], client.InNamespace(ns))).To(Succeed())
			g.Expect(versions(viaCache[i])).To(Equal(versions(direct[i])))
		}
		// The pool's nodes, which are not namespaced.
		nodes := client.MatchingLabels{"laxity.dev/pool": ns}
		var directNodes, cachedNodes corev1.NodeList
		g.Expect(k8sClient.List(ctx, &directNodes, nodes)).To(Succeed())
		g.Expect(cached.List(ctx, &cachedNodes, nodes)).To(Succeed())
		g.Expect(versions(&cachedNodes)).To(Equal(versions(&directNodes)))
	}).WithTimeout(10 * time.Second).WithPolling(10 * time.Millisecond).Should(Succeed())
}

// poisonTenant is a namespace holding bad objects. Its schedules and
// queries are reconciled every tick through the shared cache; errors are
// kept (a bad object may well fail its reconcile), panics fail the story.
type poisonTenant struct {
	name   string
	w      *world
	errors []string
}

func newPoisonTenant(ctx context.Context, name string, c client.Client) *poisonTenant {
	w := newWorld(ctx, "poison-"+name, 2*time.Minute)
	w.useCache(c)
	return &poisonTenant{name: name, w: w}
}

// reconcile runs both reconcilers over everything in the tenant's
// namespace at now.
func (p *poisonTenant) reconcile(ctx context.Context, now time.Time) {
	p.w.clock.SetTime(now)
	schedules := &unstructured.UnstructuredList{}
	schedules.SetGroupVersionKind(laxityv1alpha1.GroupVersion.WithKind("ElasticScheduleList"))
	Expect(k8sClient.List(ctx, schedules, client.InNamespace(p.w.ns))).To(Succeed())
	for _, s := range schedules.Items {
		if _, err := p.w.es.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&s)}); err != nil {
			p.errors = append(p.errors, fmt.Sprintf("ElasticSchedule %s: %v", s.GetName(), err))
		}
	}
	queries := &unstructured.UnstructuredList{}
	queries.SetGroupVersionKind(laxityv1alpha1.GroupVersion.WithKind("IntermittentQueryList"))
	Expect(k8sClient.List(ctx, queries, client.InNamespace(p.w.ns))).To(Succeed())
	for _, q := range queries.Items {
		if _, err := p.w.iq.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&q)}); err != nil {
			p.errors = append(p.errors, fmt.Sprintf("IntermittentQuery %s: %v", q.GetName(), err))
		}
	}
}

// condition returns the condition of type kind on the named object of the
// tenant (ElasticSchedule or IntermittentQuery), read as unstructured so
// that an object the typed client cannot decode can still be looked at.
func (p *poisonTenant) condition(ctx context.Context, kind, name, conditionType string) *metav1.Condition {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(laxityv1alpha1.GroupVersion.WithKind(kind))
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: p.w.ns, Name: name}, u)).To(Succeed())
	conditions, _, err := unstructured.NestedSlice(u.Object, "status", "conditions")
	Expect(err).NotTo(HaveOccurred())
	for _, c := range conditions {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != conditionType {
			continue
		}
		out := &metav1.Condition{Type: conditionType}
		out.Status = metav1.ConditionStatus(fmt.Sprint(m["status"]))
		out.Reason, _ = m["reason"].(string)
		out.Message, _ = m["message"].(string)
		return out
	}
	return nil
}

// storeUnchecked creates obj with the CRD's validation of the fields at
// paths (dotted, under spec) relaxed to plain strings, then restores the
// CRD: the way an object written under an older, laxer CRD, or edited in
// storage, comes to be.
func storeUnchecked(ctx context.Context, crdName string, obj *unstructured.Unstructured, paths ...string) {
	var crd apiextensionsv1.CustomResourceDefinition
	Expect(k8sClient.Get(ctx, client.ObjectKey{Name: crdName}, &crd)).To(Succeed())
	original := crd.DeepCopy()
	for i := range crd.Spec.Versions {
		for _, path := range paths {
			props := &crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties
			parts := strings.Split(path, ".")
			// Every object on the way loses its CEL rules too: a rule
			// there may read the relaxed field.
			for _, part := range parts[:len(parts)-1] {
				parent := (*props)[part]
				parent.XValidations = nil
				(*props)[part] = parent
				props = &parent.Properties
			}
			(*props)[parts[len(parts)-1]] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		}
		crd.Spec.Versions[i].Schema.OpenAPIV3Schema.XValidations = nil
	}
	Expect(k8sClient.Update(ctx, &crd)).To(Succeed())
	defer func() {
		Eventually(func() error {
			var current apiextensionsv1.CustomResourceDefinition
			if err := k8sClient.Get(ctx, client.ObjectKey{Name: crdName}, &current); err != nil {
				return err
			}
			current.Spec = original.Spec
			return k8sClient.Update(ctx, &current)
		}).WithTimeout(10 * time.Second).Should(Succeed())
	}()
	// The relaxed schema reaches the API server's handlers a moment after
	// the update.
	Eventually(func() error { return k8sClient.Create(ctx, obj.DeepCopy()) }).WithTimeout(10 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
}

// objectOf turns a typed object into the unstructured one to edit.
func objectOf(o client.Object, kind string) *unstructured.Unstructured {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	Expect(err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(laxityv1alpha1.GroupVersion.WithKind(kind))
	return u
}

var _ = Describe("A healthy tenant next to poisoned ones", concurrent, Ordered, func() {
	var (
		healthy *world
		tenants = map[string]*poisonTenant{}
		stop    context.CancelFunc
	)
	const lead = 2 * time.Minute

	BeforeAll(func(ctx SpecContext) {
		var cacheCtx context.Context
		cacheCtx, stop = context.WithCancel(context.Background())
		cached := cachedReader(cacheCtx)

		// What the API server accepts but no plan can be made from, or no
		// decoder can read, each in its own namespace.
		tenant := func(name string) *poisonTenant {
			p := newPoisonTenant(ctx, name, cached)
			tenants[name] = p
			return p
		}

		// A duration past what Go's time.Duration holds, stored before the
		// CRD bounded it.
		p := tenant("undecodable-schedule")
		bad := objectOf(builder.Schedule(p.w.ns, "pool").Sizes(2, 4).LeadTime(lead).Obj(), "ElasticSchedule")
		Expect(unstructured.SetNestedField(bad.Object, "3000000h", "spec", "nodePool", "provisioningLeadTime")).To(Succeed())
		storeUnchecked(ctx, "elasticschedules.laxity.dev", bad, "spec.nodePool.provisioningLeadTime")

		p = tenant("undecodable-query")
		p.w.create(ctx, builder.Schedule(p.w.ns, "pool").Sizes(2, 4).LeadTime(lead).Obj())
		badQuery := objectOf(builder.Query(p.w.ns, "late").Rate("10").Slack(time.Minute).Obj(), "IntermittentQuery")
		Expect(unstructured.SetNestedField(badQuery.Object, "3000000h", "spec", "input", "allowedLateness")).To(Succeed())
		storeUnchecked(ctx, "intermittentqueries.laxity.dev", badQuery, "spec.input.allowedLateness")

		// A window of a year at a million tuples a second: within every
		// bound of the API, far past what one plan may hold.
		p = tenant("unplannable")
		p.w.create(ctx, builder.Schedule(p.w.ns, "pool").Sizes(2, 4).LeadTime(lead).Obj())
		huge := builder.Query(p.w.ns, "year").Rate("1000000").Slack(time.Minute).Obj()
		huge.Spec.Window.End = metav1.NewTime(windowStart.Add(365 * 24 * time.Hour))
		huge.Spec.Deadline = metav1.NewTime(windowStart.Add(365*24*time.Hour + time.Hour))
		p.w.create(ctx, huge)

		// Numbers at the API's extremes.
		p = tenant("extremes")
		pricey := builder.Schedule(p.w.ns, "pool").Sizes(2, 100000).LeadTime(lead).Obj()
		pricey.Spec.NodePool.PricePerNodeHour = "1000000"
		p.w.create(ctx, pricey)
		vast := builder.Query(p.w.ns, "vast").Rate("1000000000000").Slack(time.Minute).Obj()
		vast.Spec.Input.Granularity = 1000000000000000
		p.w.create(ctx, vast)

		healthy = newWorld(ctx, "poison-healthy", lead)
		healthy.useCache(cached)
		healthy.schedule = builder.Schedule(healthy.ns, "pool").Sizes(2, 4, 8).LeadTime(lead).SmallBatches().Obj()
		healthy.create(ctx, healthy.schedule)
		healthy.create(ctx, threeQueries(healthy.ns)...)

		healthy.runFeeding(ctx, 30*time.Minute, func(ctx context.Context, now time.Time) {
			for _, p := range tenants {
				p.reconcile(ctx, now)
			}
			caughtUp(ctx, cached, healthy.ns)
		})
		healthy.report(ctx)
	})

	AfterAll(func() {
		if stop != nil {
			stop()
		}
	})

	It("plans the healthy tenant and meets its deadlines", func(ctx SpecContext) {
		for _, name := range []string{"alpha", "bravo", "charlie"} {
			healthy.finishedInTime(ctx, name)
		}
		Expect(healthy.maxRunning).To(Equal(1))
	})

	It("marks an undecodable schedule, and only it, as stalled", func(ctx SpecContext) {
		p := tenants["undecodable-schedule"]
		c := p.condition(ctx, "ElasticSchedule", "pool", laxityv1alpha1.ElasticScheduleStalledCondition)
		Expect(c).NotTo(BeNil())
		Expect(c.Status).To(Equal(metav1.ConditionTrue))
		Expect(c.Reason).To(Equal(laxityv1alpha1.UndecodableReason))
		Expect(c.Message).To(ContainSubstring("provisioningLeadTime"))
	})

	It("marks an undecodable query as stalled", func(ctx SpecContext) {
		p := tenants["undecodable-query"]
		c := p.condition(ctx, "IntermittentQuery", "late", laxityv1alpha1.IntermittentQueryStalledCondition)
		Expect(c).NotTo(BeNil())
		Expect(c.Status).To(Equal(metav1.ConditionTrue))
		Expect(c.Reason).To(Equal(laxityv1alpha1.UndecodableReason))
		Expect(c.Message).To(ContainSubstring("allowedLateness"))
	})

	It("refuses to plan a workload past the planner's budget, naming the fields to change", func(ctx SpecContext) {
		p := tenants["unplannable"]
		c := p.condition(ctx, "ElasticSchedule", "pool", laxityv1alpha1.ElasticSchedulePlannedCondition)
		Expect(c).NotTo(BeNil())
		Expect(c.Status).To(Equal(metav1.ConditionFalse))
		Expect(c.Reason).To(Equal(laxityv1alpha1.InvalidSpecReason))
		Expect(c.Message).To(ContainSubstring("year"))
		Expect(c.Message).To(ContainSubstring("spec."))
	})

	It("plans numbers at the API's extremes with finite figures, or says why not", func(ctx SpecContext) {
		p := tenants["extremes"]
		c := p.condition(ctx, "ElasticSchedule", "pool", laxityv1alpha1.ElasticSchedulePlannedCondition)
		Expect(c).NotTo(BeNil())
		if c.Status == metav1.ConditionFalse {
			Expect(c.Reason).To(Equal(laxityv1alpha1.InvalidSpecReason))
			Expect(c.Message).To(ContainSubstring("spec."))
			return
		}
		var es laxityv1alpha1.ElasticSchedule
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: p.w.ns, Name: "pool"}, &es)).To(Succeed())
		Expect(es.Status.Chosen).NotTo(BeNil())
		for _, v := range []string{string(es.Status.Chosen.Cost), string(es.Status.Chosen.ExecutableCost)} {
			Expect(strings.ToLower(v)).NotTo(Or(ContainSubstring("inf"), ContainSubstring("nan")))
		}
	})
})
