package controllers

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/spec"
	"github.com/laxity-dev/laxity/internal/standin"
	"github.com/laxity-dev/laxity/test/builder"
)

// slowWorld is a world whose Spark stand-in runs every step slowdown times
// longer than the queries' declared cost models say, with the schedule
// learning as told.
func slowWorld(ctx context.Context, name string, lead time.Duration, slowdown float64, learning laxityv1alpha1.Learning) *world {
	w := newWorld(ctx, name, lead)
	w.spark.Duration = standin.Slower(standin.ModelledDuration(k8sClient, spec.CostModel), slowdown, 0, 0)
	w.iq.Recorder = events.NewFakeRecorder(1000)
	w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4, 8).LeadTime(lead).SmallBatches().Obj()
	w.schedule.Spec.Planning.Learning = learning
	w.create(ctx, w.schedule)
	w.create(ctx, threeQueries(w.ns)...)
	return w
}

// missed counts the world's queries that missed their deadline or did not
// finish.
func missed(ctx context.Context, w *world) int {
	var queries laxityv1alpha1.IntermittentQueryList
	Expect(k8sClient.List(ctx, &queries, client.InNamespace(w.ns))).To(Succeed())
	n := 0
	for _, q := range queries.Items {
		if meta.IsStatusConditionTrue(q.Status.Conditions, laxityv1alpha1.IntermittentQueryDeadlineMissedCondition) ||
			!meta.IsStatusConditionTrue(q.Status.Conditions, laxityv1alpha1.IntermittentQuerySucceededCondition) {
			n++
		}
	}
	return n
}

var _ = Describe("A schedule whose Spark runs 40% slower than its queries' cost models say", Ordered, func() {
	const lead = 2 * time.Minute
	var learning, blind *world
	var seen []string
	BeforeAll(func(ctx SpecContext) {
		learning = slowWorld(ctx, "learn-apply", lead, 0.4, laxityv1alpha1.LearningApply)
		learning.run(ctx, 40*time.Minute)
		learning.report(ctx)
		seen = fsEvents(learning, nil)
		blind = slowWorld(ctx, "learn-off", lead, 0.4, laxityv1alpha1.LearningOff)
		// Long enough for steps to finish and be learned from, were
		// learning on.
		blind.run(ctx, 12*time.Minute)
	})

	It("learns the slowdown from the steps that ran and plans with it", func(ctx SpecContext) {
		for _, name := range []string{"alpha", "bravo", "charlie"} {
			q := fsQuery(ctx, learning, name)
			l := q.Status.Learned
			Expect(l).NotTo(BeNil(), name)
			Expect(l.Applied).To(BeTrue(), name)
			slowdown, err := l.SlowdownPercent.Float64()
			Expect(err).NotTo(HaveOccurred())
			// With the declared model as the prior, one window moves most of the
			// way to the true 40%.
			Expect(slowdown).To(BeNumerically(">=", 20), "%s learned slowdown %s%%", name, l.SlowdownPercent)
			Expect(slowdown).To(BeNumerically("<=", 45), "%s learned slowdown %s%%", name, l.SlowdownPercent)
			Expect(l.BatchObservations).To(BeNumerically(">=", 2), name)
			Expect(l.Observations).NotTo(BeEmpty(), name)
			fmt.Fprintf(GinkgoWriter, "%s: slowdown %s%%, margin %s%%, %d+%d observations\n", name, l.SlowdownPercent, l.RuntimeMarginPercent, l.BatchObservations, l.MergeObservations)
		}
	})

	It("re-plans when what it learned changes the plan's prices, saying what changed", func(ctx SpecContext) {
		Expect(fsCount(seen, laxityv1alpha1.ModelLearnedReason, "IntermittentQuery")).To(BeNumerically(">=", 1), "events: %v", seen)
		Expect(fsCount(seen, "Re-planned ("+ReplanModelLearned+")")+fsCount(seen, "Re-planned ("+ReplanRunningSlow+")")).To(BeNumerically(">=", 1), "events: %v", seen)
		stored, err := loadPlan(ctx, k8sClient, learning.schedule)
		Expect(err).NotTo(HaveOccurred())
		Expect(stored.models).NotTo(BeNil())
		declared, err := spec.CostModel(fsQuery(ctx, learning, "alpha"))
		Expect(err).NotTo(HaveOccurred())
		Expect(stored.models.Queries["alpha"].Cost.Batch.Overhead).To(BeNumerically(">", declared.Batch.Overhead), "the last plan priced alpha's batches with the learned, slower model")
	})

	It("meets every deadline", func(ctx SpecContext) {
		Expect(missed(ctx, learning)).To(BeZero())
	})

	It("learns nothing and never re-plans for a model with learning Off", func(ctx SpecContext) {
		for _, name := range []string{"alpha", "bravo", "charlie"} {
			Expect(fsQuery(ctx, blind, name).Status.Learned).To(BeNil(), "learning Off keeps nothing")
		}
		Expect(fsSchedule(ctx, blind).Status.LeadTime).To(BeNil())
		off := fsEvents(blind, nil)
		Expect(fsCount(off, laxityv1alpha1.ModelLearnedReason)).To(BeZero(), "events: %v", off)
	})

	It("measures the pool's lead time from the nodes that arrived", func(ctx SpecContext) {
		es := fsSchedule(ctx, learning)
		Expect(es.Status.LeadTime).NotTo(BeNil())
		Expect(es.Status.LeadTime.Observations).NotTo(BeEmpty())
		for _, o := range es.Status.LeadTime.Observations {
			// The stand-in makes nodes Ready a lead time after they are
			// asked for; passes every 10 s see it up to that much later.
			Expect(o.Duration).To(BeNumerically("~", lead, 15*time.Second))
		}
		Expect(spec.LeadTime(es)).To(Equal(lead), "a pool that delivers as declared is planned as declared")
	})
})

var _ = Describe("A schedule that only observes what it learns", Ordered, func() {
	var w *world
	BeforeAll(func(ctx SpecContext) {
		w = slowWorld(ctx, "learn-observe", 2*time.Minute, 0.4, laxityv1alpha1.LearningObserve)
		w.run(ctx, 12*time.Minute)
	})

	It("reports the learned model without changing any plan", func(ctx SpecContext) {
		q := fsQuery(ctx, w, "alpha")
		Expect(q.Status.Learned).NotTo(BeNil())
		Expect(q.Status.Learned.Applied).To(BeFalse())
		seen := fsEvents(w, nil)
		Expect(fsCount(seen, "Re-planned ("+ReplanModelLearned+")")).To(BeZero(), "events: %v", seen)
		rec := w.iq.Recorder.(*events.FakeRecorder)
		var observed []string
		for len(rec.Events) > 0 {
			observed = append(observed, <-rec.Events)
		}
		Expect(fsCount(observed, laxityv1alpha1.ModelLearnedReason, "Observe")).To(BeNumerically(">=", 1), "events: %v", observed)
	})
})

var _ = Describe("A RecurringQuery over six windows whose Spark runs 50% slower than declared", Ordered, func() {
	const lead = 2 * time.Minute
	var w *world
	var rqr *RecurringQueryReconciler
	var seen []string
	var beforeRestart *laxityv1alpha1.LearnedModel
	rqKey := func() client.ObjectKey { return client.ObjectKey{Namespace: w.ns, Name: "orders"} }
	recurring := func(ctx context.Context) *laxityv1alpha1.RecurringQuery {
		var rq laxityv1alpha1.RecurringQuery
		Expect(k8sClient.Get(ctx, rqKey(), &rq)).To(Succeed())
		return &rq
	}
	// restart replaces the reconcilers by new ones, with nothing in memory,
	// as a restarted manager's.
	restart := func(ctx context.Context) {
		fresh := newWorld(ctx, "unused", lead)
		w.es, w.iq = fresh.es, fresh.iq
		w.es.Clock, w.iq.Clock = w.clock, w.clock
		rqr = &RecurringQueryReconciler{Client: k8sClient, Clock: w.clock, Recorder: events.NewFakeRecorder(1000)}
	}
	BeforeAll(func(ctx SpecContext) {
		w = newWorld(ctx, "learn-recurring", lead)
		// Slower than the margin a query plans with until it is learned
		// (25%), so that what is learned applies.
		w.spark.Duration = standin.Slower(standin.ModelledDuration(k8sClient, spec.CostModel), 0.5, 0, 0)
		rqr = &RecurringQueryReconciler{Client: k8sClient, Clock: w.clock, Recorder: events.NewFakeRecorder(1000)}
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4, 8).LeadTime(lead).SmallBatches().Obj()
		w.create(ctx, w.schedule)
		w.create(ctx, builder.Recurring(w.ns, "orders").Limits(10, 10).Obj())
		// Windows start every 10 minutes from the first after origin (at
		// 10 minutes); six of them end by 65 minutes, the last due 4
		// minutes later.
		end := origin.Add(80 * time.Minute)
		// Between the fourth window's deadline and the fifth's start.
		restartAt := origin.Add(49*time.Minute + 30*time.Second)
		w.at(restartAt)
		for t := origin; !t.After(end); t = w.next(t) {
			if t.Equal(restartAt) {
				beforeRestart = recurring(ctx).Status.Learned.DeepCopy()
				seen = fsEvents(w, seen)
				restart(ctx)
			}
			w.clock.SetTime(t)
			res, err := rqr.Reconcile(ctx, ctrl.Request{NamespacedName: rqKey()})
			Expect(err).NotTo(HaveOccurred())
			w.tick(ctx, t)
			w.requeue(t, res)
		}
		seen = fsEvents(w, seen)
		w.report(ctx)
	})

	windows := func(ctx context.Context) []laxityv1alpha1.IntermittentQuery {
		var list laxityv1alpha1.IntermittentQueryList
		Expect(k8sClient.List(ctx, &list, client.InNamespace(w.ns))).To(Succeed())
		var out []laxityv1alpha1.IntermittentQuery
		for _, q := range list.Items {
			if q.Spec.Window.End.Time.Before(origin.Add(66 * time.Minute)) {
				out = append(out, q)
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Spec.Window.Start.Before(&out[j].Spec.Window.Start) })
		return out
	}

	It("meets the deadlines of its windows from the third on", func(ctx SpecContext) {
		ws := windows(ctx)
		Expect(len(ws)).To(BeNumerically(">=", 6))
		for i, q := range ws {
			done := q.Status.Final != nil && q.Status.Final.End != nil
			fmt.Fprintf(GinkgoWriter, "window %d %s: finished %v, learned %s\n", i+1, q.Name, done, learnedSummary(q.Status.Learned))
			if i >= 2 {
				Expect(done).To(BeTrue(), q.Name)
				Expect(q.Status.Final.End.Time).NotTo(BeTemporally(">", q.Spec.Deadline.Time), q.Name)
			}
		}
	})

	It("shows the fitted model and the margin in its status", func(ctx SpecContext) {
		l := recurring(ctx).Status.Learned
		Expect(l).NotTo(BeNil())
		Expect(l.CostModel).NotTo(BeNil())
		slowdown, err := l.SlowdownPercent.Float64()
		Expect(err).NotTo(HaveOccurred())
		// Below the true 50%: the stand-in's timestamps, like a real
		// SparkApplication's, have whole seconds, and it ends a step a
		// whole number of seconds after a whole-second start, so a step of
		// a few seconds measures up to a second short.
		Expect(slowdown).To(BeNumerically(">=", 30))
		Expect(slowdown).To(BeNumerically("<=", 55))
		Expect(l.RuntimeMarginPercent).NotTo(BeEmpty())
		Expect(l.BatchObservations).To(BeNumerically(">=", 10))
		ws := windows(ctx)
		last := ws[len(ws)-1].Status.Learned
		Expect(last).NotTo(BeNil())
		Expect(last.Applied).To(BeTrue(), "the last window plans with what the earlier ones learned")
	})

	It("re-plans for what it learned only while it is still learning", func(ctx SpecContext) {
		learned := fsCount(seen, laxityv1alpha1.ModelLearnedReason)
		Expect(learned).To(BeNumerically(">=", 1), "events: %v", seen)
		// One event per material change: once the model has settled, later
		// windows plan with it from the start and change it too little to
		// re-plan again.
		var late []string
		for _, e := range seen {
			if strings.Contains(e, laxityv1alpha1.ModelLearnedReason) {
				for _, q := range windows(ctx)[4:] {
					if strings.Contains(e, "IntermittentQuery "+q.Name+":") {
						late = append(late, e)
					}
				}
			}
		}
		Expect(late).To(BeEmpty())
	})

	It("keeps what it learned across a manager restart", func(ctx SpecContext) {
		Expect(beforeRestart).NotTo(BeNil())
		after := recurring(ctx).Status.Learned
		Expect(after.BatchObservations).To(BeNumerically(">", beforeRestart.BatchObservations), "learning went on from where it was")
		Expect(int(after.BatchObservations) + int(after.MergeObservations)).To(BeNumerically(">=", int(beforeRestart.BatchObservations)+int(beforeRestart.MergeObservations)))
	})
})
