package controllers

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/pool"
	"github.com/laxity-dev/laxity/test/builder"
)

// A query whose executors ask for more CPU than any node of the pool has:
// on a cluster they would stay Pending and the query would wait for ever.
// laxity says so on the query, naming the field and the node size, holds
// it, and runs the schedule's other query; once the field is fixed, the
// held query runs and meets its deadline.
var _ = Describe("A query whose executors no node of the pool can hold", Ordered, func() {
	var (
		w *world
		// stalledAt is the first tick the wide query was Stalled; readyAt the
		// first tick a pool node was Ready.
		stalledAt, readyAt time.Time
		fixedAt            time.Time
		// wideLaunchedBeforeFix counts wide's steps launched before the fix.
		wideLaunchedBeforeFix int
		seen                  []string
	)
	const lead = 2 * time.Minute
	// The builder's template asks for 2-core executors; this one for 8 on
	// nodes of 4 CPUs.
	wideTemplate := strings.Replace(builder.DefaultTemplate, `"executor":{"cores":2`, `"executor":{"cores":8`, 1)

	wide := func(ctx SpecContext) *laxityv1alpha1.IntermittentQuery {
		var q laxityv1alpha1.IntermittentQuery
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "wide"}, &q)).To(Succeed())
		return &q
	}

	BeforeAll(func(ctx SpecContext) {
		Expect(wideTemplate).NotTo(Equal(builder.DefaultTemplate))
		w = newWorld(ctx, "executorfit", lead)
		w.es.Refusals = &Refusals{}
		w.iq.Refusals = w.es.Refusals
		w.nodes.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")}
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4).LeadTime(lead).Obj()
		w.create(ctx, w.schedule)
		w.create(ctx,
			builder.Query(w.ns, "narrow").Rate("50").Slack(3*time.Minute).Obj(),
			builder.Query(w.ns, "wide").Rate("40").Slack(time.Hour).Template(wideTemplate).Obj(),
		)
		fixedAt = origin.Add(25 * time.Minute)
		w.at(fixedAt)
		for t := origin; !t.After(origin.Add(2 * time.Hour)); t = w.next(t) {
			if t.Equal(fixedAt) {
				q := wide(ctx)
				q.Spec.SparkApplication.Raw = []byte(builder.DefaultTemplate)
				Expect(k8sClient.Update(ctx, q)).To(Succeed())
			}
			w.tick(ctx, t)
			seen = fsEvents(w, seen)
			if readyAt.IsZero() && w.nodes.Writes > 0 {
				if n, err := readyPoolNodes(ctx, w); err == nil && n > 0 {
					readyAt = t
				}
			}
			if stalledAt.IsZero() && meta.IsStatusConditionTrue(wide(ctx).Status.Conditions, laxityv1alpha1.IntermittentQueryStalledCondition) {
				stalledAt = t
			}
			if t.Before(fixedAt) {
				wideLaunchedBeforeFix = 0
				for _, l := range w.launches {
					if l.query == "wide" {
						wideLaunchedBeforeFix++
					}
				}
			}
			if t.After(fixedAt) && w.settled(ctx) {
				break
			}
		}
		w.report(ctx)
	})

	It("says so on the query as soon as a pool node is ready, naming the field and the node size", func() {
		Expect(readyAt).NotTo(BeZero())
		Expect(stalledAt).To(Equal(readyAt), "Stalled in the pass that first saw a ready node")
		Expect(stalledAt.Before(fixedAt)).To(BeTrue())
		Expect(fsCount(seen, "Warning", laxityv1alpha1.ExecutorDoesNotFitReason, "IntermittentQuery wide is not launched", "spec.sparkApplication.executor.cores", "asks for 8 CPU", "has 4 allocatable")).To(Equal(1),
			"one event for the verdict, not one a pass: %v", seen)
	})

	It("runs the schedule's other query and meets its deadline", func(ctx SpecContext) {
		w.finishedInTime(ctx, "narrow")
	})

	It("launches nothing of the held query while its executors do not fit", func() {
		Expect(wideLaunchedBeforeFix).To(BeZero())
	})

	It("runs the held query once the field is fixed, and meets its deadline", func(ctx SpecContext) {
		q := w.finishedInTime(ctx, "wide")
		Expect(meta.FindStatusCondition(q.Status.Conditions, laxityv1alpha1.IntermittentQueryStalledCondition)).To(BeNil())
		Expect(fsCount(seen, "Normal", laxityv1alpha1.ExecutorDoesNotFitReason)).To(BeZero(),
			"a fixed spec is a new query to judge, not a verdict reversed")
	})
})

// readyPoolNodes counts the world's pool's ready nodes.
func readyPoolNodes(ctx SpecContext, w *world) (int32, error) {
	return pool.ReadyNodes(ctx, k8sClient, w.schedule.Spec.NodePool.NodeSelector)
}
