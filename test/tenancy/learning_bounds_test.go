package tenancy_test

import (
	"context"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/learn"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/internal/spec"
	"github.com/laxity-dev/laxity/test/builder"
)

// learningOneSecond is a cost model that prices every batch and every merge
// at 1 s, whatever its work and nodes.
var learningOneSecond = builder.CostModel(builder.BatchCost("1", "0", "0"), builder.MergeCost("1", "0", "0"))

// learningFinishSteps plays spark-operator for the query ns/query: every
// SparkApplication laxity made of it that has no status yet is marked
// COMPLETED, as having run took from its submission to its termination,
// until n have. It returns once n steps have completed.
func learningFinishSteps(ctx context.Context, ns, query string, took time.Duration, n int) {
	done := map[string]bool{}
	Eventually(func(g Gomega) int {
		list := sparkapp.NewList()
		g.Expect(asCarol.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{sparkapp.LabelQuery: query})).To(Succeed())
		for i := range list.Items {
			app := &list.Items[i]
			if len(done) >= n || done[app.GetName()] {
				continue
			}
			if _, has, _ := unstructured.NestedMap(app.Object, "status"); has {
				done[app.GetName()] = true
				continue
			}
			end := time.Now().UTC().Truncate(time.Second)
			app.Object["status"] = map[string]any{
				"driverInfo":                map[string]any{"podName": app.GetName() + "-driver"},
				"applicationState":          map[string]any{"state": sparkapp.StateCompleted},
				"lastSubmissionAttemptTime": end.Add(-took).Format(time.RFC3339),
				"terminationTime":           end.Format(time.RFC3339),
				"submissionAttempts":        int64(1),
				"executionAttempts":         int64(1),
			}
			g.Expect(asCarol.Status().Update(ctx, app)).To(Succeed())
			done[app.GetName()] = true
		}
		return len(done)
	}).WithTimeout(2 * timeout).WithPolling(poll).Should(BeNumerically(">=", n))
}

// learnedOf is the query's status.learned, read as carol.
func learnedOf(ctx context.Context, q *laxityv1alpha1.IntermittentQuery) func(Gomega) *laxityv1alpha1.LearnedModel {
	return func(g Gomega) *laxityv1alpha1.LearnedModel {
		g.Expect(asCarol.Get(ctx, client.ObjectKeyFromObject(q), q)).To(Succeed())
		return q.Status.Learned
	}
}

// learnedBatchFactor is how many times the declared 1 s a learned model
// prices a batch: its batch overhead, the only coefficient of
// learningOneSecond.
func learnedBatchFactor(g Gomega, l *laxityv1alpha1.LearnedModel) float64 {
	g.Expect(l).NotTo(BeNil())
	g.Expect(l.CostModel).NotTo(BeNil())
	v, err := strconv.ParseFloat(l.CostModel.Batch.OverheadSeconds, 64)
	g.Expect(err).NotTo(HaveOccurred())
	return v
}

var _ = Describe("learning stays inside its bounds", func() {
	BeforeEach(teamPoolsReady)

	It("holds the in-window correction of two absurdly slow steps at the documented bound", func(ctx SpecContext) {
		create(ctx, asAlice, builder.Schedule(teamA, "slow-steps").SmallBatches().Obj())
		q := query(teamA, "slow-steps", "slow-steps", 2*time.Hour).CostModel(learningOneSecond).Obj()
		create(ctx, asAlice, q)

		By("two of its steps, modelled at 1 s each, ran 130 s each")
		learningFinishSteps(ctx, teamA, q.Name, 130*time.Second, 2)

		By("the model plans use is at most learn.ModelBound times the declared one, not 130 or 260 times")
		Eventually(func(g Gomega) int32 {
			l := learnedOf(ctx, q)(g)
			g.Expect(l).NotTo(BeNil())
			return l.BatchObservations + l.MergeObservations
		}).WithTimeout(timeout).WithPolling(poll).Should(BeNumerically(">=", 2))
		l := learnedOf(ctx, q)(Default)
		Expect(l.Applied).To(BeTrue(), "the learned model is applied: %+v", l)
		Expect(learnedBatchFactor(Default, l)).To(BeNumerically("~", learn.ModelBound, 1e-6))
		slowdown, err := l.SlowdownPercent.Float64()
		Expect(err).NotTo(HaveOccurred())
		Expect(slowdown).To(BeNumerically("<=", (learn.ModelBound-1)*100))
		margin, err := l.RuntimeMarginPercent.Float64()
		Expect(err).NotTo(HaveOccurred())
		Expect(margin).To(BeNumerically("<=", learn.MarginBound*100))
	})

	It("learns a RecurringQuery's model only from the windows it owns, never from a labelled query, in its namespace or another", func(ctx SpecContext) {
		create(ctx, asAlice, builder.Schedule(teamA, "learning-pool").SmallBatches().Obj())
		rq := builder.Recurring(teamA, "learned-orders").Schedule("learning-pool").Obj()
		rq.Spec.Suspend = true // no window of its own: nothing it owns ran
		rq.Spec.Template.CostModel = learningOneSecond
		create(ctx, asAlice, rq)

		By("alice labels a query of her own as a window of the RecurringQuery, without its owner reference")
		mine := query(teamA, "learned-copy", "learning-pool", 2*time.Hour).CostModel(learningOneSecond).Obj()
		mine.Labels = map[string]string{spec.LabelRecurringQuery: rq.Name}
		create(ctx, asAlice, mine)
		By("bob does the same in team-b, naming it like one of alice's windows")
		create(ctx, asBob, builder.Schedule(teamB, "learning-pool").SmallBatches().Obj())
		theirs := query(teamB, rq.Name+"-202601010000", "learning-pool", 2*time.Hour).CostModel(learningOneSecond).Obj()
		theirs.Labels = map[string]string{spec.LabelRecurringQuery: rq.Name}
		create(ctx, asBob, theirs)

		By("both queries' steps ran 30 times slower than modelled, and each query learned it")
		learningFinishSteps(ctx, teamA, mine.Name, 30*time.Second, 2)
		learningFinishSteps(ctx, teamB, theirs.Name, 30*time.Second, 2)
		for _, q := range []*laxityv1alpha1.IntermittentQuery{mine, theirs} {
			Eventually(func(g Gomega) int {
				l := learnedOf(ctx, q)(g)
				g.Expect(l).NotTo(BeNil())
				return len(l.Observations)
			}).WithTimeout(timeout).WithPolling(poll).Should(BeNumerically(">=", 1), "query %s/%s", q.Namespace, q.Name)
		}

		By("a pass of the RecurringQuery after that learns nothing from them")
		Expect(asCarol.Get(ctx, client.ObjectKeyFromObject(rq), rq)).To(Succeed())
		rq.Spec.SuccessfulWindowsHistoryLimit = ptr.To(ptr.Deref(rq.Spec.SuccessfulWindowsHistoryLimit, 3) + 1)
		Expect(asAlice.Update(ctx, rq)).To(Succeed())
		Eventually(func(g Gomega) int64 {
			g.Expect(asCarol.Get(ctx, client.ObjectKeyFromObject(rq), rq)).To(Succeed())
			return rq.Status.ObservedGeneration
		}).WithTimeout(timeout).WithPolling(poll).Should(Equal(rq.Generation))
		Expect(rq.Status.Learned).To(BeNil(), "the RecurringQuery learned from queries it does not own: %+v", rq.Status.Learned)
		Expect(metav1.GetControllerOf(mine)).To(BeNil())
	})
})
