package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/test/builder"
)

// fourBusyQueries need a pool larger than the smallest size after their
// windows close, where steps side by side on parts of it bill less.
func fourBusyQueries(ns string) []client.Object {
	return []client.Object{
		builder.Query(ns, "alpha").Rate("400").Slack(90 * time.Second).Obj(),
		builder.Query(ns, "bravo").Rate("300").Slack(2 * time.Minute).Obj(),
		builder.Query(ns, "charlie").Rate("300").Slack(150 * time.Second).Obj(),
		builder.Query(ns, "delta").Rate("200").Slack(3 * time.Minute).Obj(),
	}
}

var _ = Describe("Steps side by side, pass by pass against the offline run", Ordered, func() {
	const lead = 2 * time.Minute
	var d *differential
	BeforeAll(func(ctx SpecContext) {
		w := newWorld(ctx, "side-by-side", lead)
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4, 8).LeadTime(lead).
			Planning(laxityv1alpha1.Planning{Concurrency: laxityv1alpha1.ConcurrencyConcurrent}).Obj()
		w.create(ctx, w.schedule)
		w.create(ctx, fourBusyQueries(w.ns)...)
		d = runDifferential(ctx, w, 40*time.Minute, 5*time.Second)
	})

	It("plans lanes", func(ctx SpecContext) {
		es := fsSchedule(ctx, d.w)
		Expect(es.Status.Chosen).NotTo(BeNil())
		Expect(es.Status.Chosen.Lanes).To(BeNumerically(">=", 2))
	})

	It("decides as the offline operator at every pass", func() {
		Expect(d.passes).NotTo(BeEmpty())
		Expect(d.mismatches).To(BeEmpty())
	})

	It("runs steps side by side, each with executors for its own nodes only", func(ctx SpecContext) {
		steps, err := listSteps(ctx, k8sClient, d.w.es.Options, d.w.ns, nil)
		Expect(err).NotTo(HaveOccurred())
		type ran struct {
			name       string
			nodes      int
			start, end time.Time
		}
		var sideBySide []ran
		for _, st := range steps {
			_, step, err := sparkapp.StepOf(st.Object)
			Expect(err).NotTo(HaveOccurred())
			if !step.SideBySide {
				continue
			}
			app, ok := st.Object.(*unstructured.Unstructured)
			Expect(ok).To(BeTrue())
			instances, found, err := unstructured.NestedInt64(app.Object, "spec", "executor", "instances")
			Expect(err).NotTo(HaveOccurred())
			Expect(found).To(BeTrue())
			Expect(instances).To(BeEquivalentTo(step.Nodes), "step %s: one executor per node of its own", app.GetName())
			Expect(st.Obs.Started).NotTo(BeNil())
			Expect(st.Obs.Ended).NotTo(BeNil())
			sideBySide = append(sideBySide, ran{name: app.GetName(), nodes: int(step.Nodes), start: *st.Obs.Started, end: *st.Obs.Ended})
		}
		overlapping := 0
		for i, a := range sideBySide {
			held := a.nodes
			for j, b := range sideBySide {
				if i != j && !b.start.After(a.start) && b.end.After(a.start) {
					held += b.nodes
				}
			}
			if held > a.nodes {
				overlapping++
			}
			Expect(held).To(BeNumerically("<=", 8), "at %s the steps running hold %d nodes, more than the largest size", a.start.Sub(origin), held)
		}
		Expect(overlapping).To(BeNumerically(">", 0), "no two steps ran at once")
	})

	It("runs the window to its end, every deadline met", func(ctx SpecContext) {
		Expect(d.w.settled(ctx)).To(BeTrue())
		var queries laxityv1alpha1.IntermittentQueryList
		Expect(k8sClient.List(ctx, &queries, client.InNamespace(d.w.ns))).To(Succeed())
		for _, q := range queries.Items {
			Expect(meta.IsStatusConditionTrue(q.Status.Conditions, laxityv1alpha1.IntermittentQuerySucceededCondition)).To(BeTrue(), "query %s: %v", q.Name, q.Status.Conditions)
		}
	})
})
