package controllers

import (
	"context"
	"fmt"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
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
	w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4, 8).LeadTime(lead).Obj()
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
		learning.run(ctx, 40*time.Minute, 5*time.Second)
		learning.report(ctx)
		seen = fsEvents(learning, nil)
		blind = slowWorld(ctx, "learn-off", lead, 0.4, laxityv1alpha1.LearningOff)
		blind.run(ctx, 40*time.Minute, 5*time.Second)
	})

	It("learns the slowdown from the steps that ran and plans with it", func(ctx SpecContext) {
		for _, name := range []string{"alpha", "bravo", "charlie"} {
			q := fsQuery(ctx, learning, name)
			l := q.Status.Learned
			Expect(l).NotTo(BeNil(), name)
			Expect(l.Applied).To(BeTrue(), name)
			slowdown, err := strconv.ParseFloat(l.SlowdownPercent, 64)
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
		Expect(stored.models.Queries["alpha"].model().Batch.Overhead).To(BeNumerically(">", declared.Batch.Overhead), "the last plan priced alpha's batches with the learned, slower model")
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
			// asked for; passes every 5 s see it that much later at most.
			Expect(o.Duration).To(BeNumerically("~", lead, 10*time.Second))
		}
		Expect(spec.LeadTime(es)).To(Equal(lead), "a pool that delivers as declared is planned as declared")
	})
})

var _ = Describe("A schedule that only observes what it learns", Ordered, func() {
	var w *world
	BeforeAll(func(ctx SpecContext) {
		w = slowWorld(ctx, "learn-observe", 2*time.Minute, 0.4, laxityv1alpha1.LearningObserve)
		w.run(ctx, 40*time.Minute, 5*time.Second)
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
