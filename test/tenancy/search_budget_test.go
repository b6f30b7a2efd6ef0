package tenancy_test

import (
	"context"
	"fmt"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/controllers"
	"github.com/laxity-dev/laxity/test/builder"
)

// searchBudget is the manager's --plan-timeout in this suite.
const searchBudget = 3 * time.Second

// searchBudgetAllowance is how much longer than its own search a tenant's
// re-plan may take to show: the watch event, the pass's reads and writes,
// and this story's polling.
const searchBudgetAllowance = 2 * time.Second

// bigSearchQueries are the queries of one of alice's schedules whose plan
// search takes minutes: eight week-long windows in units of 500 tuples at
// 50 tuples/s (a single query of them plans in a fraction of a second).
func bigSearchQueries(schedule string) []*laxityv1alpha1.IntermittentQuery {
	start := time.Now().Add(time.Minute)
	var out []*laxityv1alpha1.IntermittentQuery
	for i := range 8 {
		out = append(out, builder.Query(teamA, fmt.Sprintf("%s-week-%d", schedule, i)).Schedule(schedule).
			Window(start, 7*24*time.Hour).Slack(time.Hour).Rate("50").Granularity(500).Obj())
	}
	return out
}

// searchPlanOf is the schedule's plan ConfigMap, as carol reads it.
func searchPlanOf(ctx context.Context, ns, schedule string) func(Gomega) *corev1.ConfigMap {
	return func(g Gomega) *corev1.ConfigMap {
		var cm corev1.ConfigMap
		g.Expect(asCarol.Get(ctx, client.ObjectKey{Namespace: ns, Name: controllers.PlanConfigMapName(schedule)}, &cm)).To(Succeed())
		return &cm
	}
}

// searchBudgetEvents counts the SearchBudgetExceeded events of a schedule.
func searchBudgetEvents(ctx context.Context, ns, schedule string) func(Gomega) int {
	return func(g Gomega) int {
		var list eventsv1.EventList
		g.Expect(asCarol.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		n := 0
		for _, e := range list.Items {
			if e.Regarding.Kind == "ElasticSchedule" && e.Regarding.Name == schedule && e.Reason == laxityv1alpha1.SearchBudgetExceededReason {
				n++
			}
		}
		return n
	}
}

// searchBudgetExceeded is the manager's laxity_search_budget_exceeded_total
// for the schedule namespace/name, read from the registry its metrics
// endpoint serves.
func searchBudgetExceeded(namespace, name string) float64 {
	GinkgoHelper()
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "laxity_search_budget_exceeded_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] == namespace && labels["schedule"] == name {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// scheduleCondition is the schedule's condition of type t.
func scheduleCondition(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, t string) func(Gomega) *metav1.Condition {
	return condition(ctx, es, func() []metav1.Condition { return es.Status.Conditions }, t)
}

var _ = Describe("the search budget", func() {
	It("backs off one tenant's over-budget searches and runs them in a lane of their own, so another tenant's re-plan waits for no one", func(ctx SpecContext) {
		const schedules = 4
		By("bob has a schedule of one small query in team-b, planned")
		bobSchedule := builder.Schedule(teamB, "bob-reports").Obj()
		create(ctx, asBob, bobSchedule)
		bobQuery := query(teamB, "bob-report", "bob-reports", 2*time.Hour).Obj()
		create(ctx, asBob, bobQuery)
		Eventually(searchPlanOf(ctx, teamB, "bob-reports")).WithTimeout(timeout).WithPolling(poll).Should(Not(BeNil()))

		By(fmt.Sprintf("alice has %d schedules in team-a, each planned for one small query", schedules))
		alice := make([]*laxityv1alpha1.ElasticSchedule, schedules)
		planned := make([]string, schedules)
		for i := range alice {
			alice[i] = builder.Schedule(teamA, fmt.Sprintf("alice-big-%d", i)).Obj()
			create(ctx, asAlice, alice[i])
			create(ctx, asAlice, query(teamA, fmt.Sprintf("alice-small-%d", i), alice[i].Name, 2*time.Hour).Obj())
		}
		for i := range alice {
			Eventually(scheduleCondition(ctx, alice[i], laxityv1alpha1.ElasticSchedulePlannedCondition)).WithTimeout(timeout).WithPolling(poll).
				Should(And(Not(BeNil()), HaveField("Reason", laxityv1alpha1.PlanFoundReason)))
		}

		By("alice adds to each schedule eight week-long queries, whose plan search takes minutes: each search runs out of the budget")
		for i := range alice {
			for _, q := range bigSearchQueries(alice[i].Name) {
				create(ctx, asAlice, q)
			}
		}
		for i := range alice {
			Eventually(searchBudgetEvents(ctx, teamA, alice[i].Name)).WithTimeout(2 * timeout).WithPolling(poll).Should(BeNumerically(">=", 1))
			Expect(searchBudgetExceeded(teamA, alice[i].Name)).To(BeNumerically(">=", 1),
				"laxity_search_budget_exceeded_total of %s counts the search its event reported", alice[i].Name)
			// The plan in force: of the queries the last search within the
			// budget saw.
			planned[i] = searchPlanOf(ctx, teamA, alice[i].Name)(Default).Annotations["laxity.dev/plan-inputs"]
		}

		By("alice changes every schedule's spec, a new try for each, as bob changes his query's")
		for i := range alice {
			Expect(asAlice.Get(ctx, client.ObjectKeyFromObject(alice[i]), alice[i])).To(Succeed())
			alice[i].Spec.NodePool.PricePerNodeHour = "1.5"
			Expect(asAlice.Update(ctx, alice[i])).To(Succeed())
		}
		bobBefore := searchPlanOf(ctx, teamB, "bob-reports")(Default).Annotations["laxity.dev/plan-inputs"]
		Expect(asBob.Get(ctx, client.ObjectKeyFromObject(bobQuery), bobQuery)).To(Succeed())
		bobQuery.Spec.Deadline = metav1.NewTime(bobQuery.Spec.Deadline.Add(time.Hour))
		changed := time.Now()
		Expect(asBob.Update(ctx, bobQuery)).To(Succeed())
		var replanned time.Time
		Eventually(func(g Gomega) {
			cm := searchPlanOf(ctx, teamB, "bob-reports")(g)
			g.Expect(cm.Annotations["laxity.dev/plan-inputs"]).NotTo(Equal(bobBefore))
			replanned = time.Now()
		}).WithTimeout(2 * timeout).WithPolling(50 * time.Millisecond).Should(Succeed())
		waited := replanned.Sub(changed)

		By("bob's re-plan took no longer than its own search, and a small allowance")
		Expect(asCarol.Get(ctx, client.ObjectKeyFromObject(bobSchedule), bobSchedule)).To(Succeed())
		own, err := strconv.ParseFloat(string(bobSchedule.Status.SearchSeconds), 64)
		Expect(err).NotTo(HaveOccurred())
		ownSearch := time.Duration(own * float64(time.Second))
		GinkgoWriter.Printf("bob's re-plan showed %s after his change; his search took %s\n", waited, ownSearch)
		Expect(waited).To(BeNumerically("<=", ownSearch+searchBudgetAllowance),
			"bob's re-plan waited %s, his own search took %s: alice's searches held him back", waited, ownSearch)

		By("each of alice's schedules says its search is over budget, what to change and when it tries again, and keeps its plan in force")
		for i := range alice {
			Eventually(func(g Gomega) {
				es := alice[i]
				g.Expect(asCarol.Get(ctx, client.ObjectKeyFromObject(es), es)).To(Succeed())
				g.Expect(es.Status.SearchBudget).NotTo(BeNil())
				g.Expect(es.Status.SearchBudget.Exceeded).To(BeNumerically(">=", 1))
				g.Expect(es.Status.SearchBudget.LastExceededTime).NotTo(BeNil())
				g.Expect(es.Status.SearchBudget.NextSearchTime).NotTo(BeNil())
				// The first of a series waits the default backoff.
				g.Expect(es.Status.SearchBudget.NextSearchTime.Sub(es.Status.SearchBudget.LastExceededTime.Time)).To(BeNumerically(">=", 5*time.Minute))
				plannedCond := meta.FindStatusCondition(es.Status.Conditions, laxityv1alpha1.ElasticSchedulePlannedCondition)
				g.Expect(plannedCond).To(And(Not(BeNil()),
					HaveField("Status", metav1.ConditionFalse), HaveField("Reason", laxityv1alpha1.SearchBudgetExceededReason),
					HaveField("Message", ContainSubstring("ran longer than the 3s one search may take")),
					HaveField("Message", ContainSubstring("the plan in force, made from the earlier specs, is kept")),
					HaveField("Message", ContainSubstring("spec.planning.batchSizeFactors")),
					HaveField("Message", ContainSubstring("Next try at "+es.Status.SearchBudget.NextSearchTime.UTC().Format(time.RFC3339)))))
				g.Expect(meta.FindStatusCondition(es.Status.Conditions, laxityv1alpha1.ElasticScheduleReadyCondition)).To(And(Not(BeNil()),
					HaveField("Status", metav1.ConditionFalse), HaveField("Reason", laxityv1alpha1.SearchBudgetExceededReason)))
			}).WithTimeout(2 * timeout).WithPolling(poll).Should(Succeed())
			Expect(searchPlanOf(ctx, teamA, alice[i].Name)(Default).Annotations["laxity.dev/plan-inputs"]).To(Equal(planned[i]),
				"the plan in force of %s was replaced", alice[i].Name)
		}
		Expect(scheduleCondition(ctx, bobSchedule, laxityv1alpha1.ElasticSchedulePlannedCondition)(Default)).
			To(And(Not(BeNil()), HaveField("Reason", laxityv1alpha1.PlanFoundReason)))
	})
})
