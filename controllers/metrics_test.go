package controllers

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/test/builder"
)

// laxityMetricNames are every metric laxity registers.
var laxityMetricNames = []string{
	"laxity_plan_cost", "laxity_plan_search_seconds", "laxity_replans_total",
	"laxity_pool_nodes_requested", "laxity_pool_nodes_ready",
	"laxity_steps_launched_total", "laxity_steps_finished_total",
	"laxity_query_slack_seconds", "laxity_query_late_tuples", "laxity_deadline_misses_total",
	"laxity_pool_observed_lead_time_seconds", "laxity_pool_planned_lead_time_seconds",
	"laxity_query_learned_slowdown_ratio", "laxity_query_learned_margin_ratio", "laxity_query_learned_tail_margin_ratio",
	"laxity_pool_spend_total", "laxity_step_duration_seconds", "laxity_build_info",
	"laxity_search_budget_exceeded_total",
}

// gatherLaxity gathers controller-runtime's registry and keeps laxity's
// families.
func gatherLaxity() []*dto.MetricFamily {
	families, err := metrics.Registry.Gather()
	if err != nil {
		panic(err)
	}
	var out []*dto.MetricFamily
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), metricsNamespace+"_") {
			out = append(out, f)
		}
	}
	return out
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func matches(m *dto.Metric, want map[string]string) bool {
	got := labelsOf(m)
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// metric is the value of the gauge or counter series of name whose labels
// include want, summed over the series that match, without creating any;
// 0 when none matches.
func metric(name string, want map[string]string) float64 {
	var value float64
	for _, f := range gatherLaxity() {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if !matches(m, want) {
				continue
			}
			switch {
			case m.Gauge != nil:
				value += m.GetGauge().GetValue()
			case m.Counter != nil:
				value += m.GetCounter().GetValue()
			}
		}
	}
	return value
}

// seriesOf lists laxity's series labelled with namespace ns.
func seriesOf(ns string) []string {
	return seriesMatching(map[string]string{labelNamespace: ns})
}

// scheduleSeriesOf lists laxity's series of one schedule.
func scheduleSeriesOf(ns, schedule string) []string {
	return seriesMatching(map[string]string{labelNamespace: ns, labelSchedule: schedule})
}

func seriesMatching(want map[string]string) []string {
	var out []string
	for _, f := range gatherLaxity() {
		for _, m := range f.GetMetric() {
			if matches(m, want) {
				out = append(out, fmt.Sprintf("%s%v", f.GetName(), labelsOf(m)))
			}
		}
	}
	return out
}

func TestMetricsAreRegisteredAndLintClean(t *testing.T) {
	// Give every vector a series, so that Gather reports it.
	const ns = "lint"
	planCostMetric.WithLabelValues(ns, "s", TimelineSimulated).Set(1)
	replansMetric.WithLabelValues(ns, "s", ReplanInitial).Inc()
	nodesRequestedMetric.WithLabelValues(ns, "s").Set(2)
	nodesReadyMetric.WithLabelValues(ns, "s").Set(2)
	stepsLaunchedMetric.WithLabelValues(ns, "s", "batch").Inc()
	stepsFinishedMetric.WithLabelValues(ns, "s", "batch", "Succeeded").Inc()
	querySlackMetric.WithLabelValues(ns, "q").Set(3)
	deadlineMissesMetric.WithLabelValues(ns, "s").Inc()
	planSearchSecondsMetric.Observe(0)
	leadTimeMetric.WithLabelValues(ns, "s").Observe(60)
	plannedLeadTimeMetric.WithLabelValues(ns, "s").Set(60)
	querySlowdownMetric.WithLabelValues(ns, "q").Set(1.2)
	queryMarginMetric.WithLabelValues(ns, "q").Set(0.1)
	queryTailMarginMetric.WithLabelValues(ns, "q").Set(0.1)
	poolSpendMetric.WithLabelValues(ns, "s").Add(1)
	searchBudgetExceededMetric.WithLabelValues(ns, "s").Inc()
	stepDurationMetric.WithLabelValues(ns, "s", "q", "batch", "Succeeded").Observe(30)
	queryLateTuplesMetric.WithLabelValues(ns, "q").Set(3)
	defer func() {
		forgetSchedule(ns, "s")
		forgetQuery(ns, "q")
	}()

	problems, err := testutil.GatherAndLint(metrics.Registry, laxityMetricNames...)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	var got []string
	for _, f := range gatherLaxity() {
		got = append(got, f.GetName())
	}
	for _, name := range laxityMetricNames {
		if !strings.Contains(strings.Join(got, " "), name) {
			t.Errorf("%s is not registered on controller-runtime's registry (have %v)", name, got)
		}
	}
}

func TestRecordScheduleStatus(t *testing.T) {
	es := &laxityv1alpha1.ElasticSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: "unit-schedule", Name: "tpch"}}
	es.Status.Chosen = &laxityv1alpha1.ChosenPlan{Cost: "0.9400", ExecutableCost: "1.0100"}
	es.Status.NodesRequested = ptr.To[int32](4)
	es.Status.NodesReady = ptr.To[int32](2)
	recordScheduleStatus(es)
	defer forgetSchedule(es.Namespace, es.Name)

	for name, want := range map[string]float64{
		"simulated":  0.94,
		"executable": 1.01,
	} {
		if got := testutil.ToFloat64(planCostMetric.WithLabelValues(es.Namespace, es.Name, name)); got != want {
			t.Errorf("laxity_plan_cost{timeline=%q} = %v, want %v", name, got, want)
		}
	}
	if got := testutil.ToFloat64(nodesRequestedMetric.WithLabelValues(es.Namespace, es.Name)); got != 4 {
		t.Errorf("laxity_pool_nodes_requested = %v, want 4", got)
	}
	if got := testutil.ToFloat64(nodesReadyMetric.WithLabelValues(es.Namespace, es.Name)); got != 2 {
		t.Errorf("laxity_pool_nodes_ready = %v, want 2", got)
	}

	// A status without a value has no series.
	es.Status.NodesReady = nil
	es.Status.Chosen = nil
	recordScheduleStatus(es)
	if s := seriesMatching(map[string]string{labelNamespace: es.Namespace}); len(s) != 1 {
		t.Errorf("series left: %v, want only laxity_pool_nodes_requested", s)
	}
	forgetSchedule(es.Namespace, es.Name)
	if s := seriesOf(es.Namespace); len(s) != 0 {
		t.Errorf("series left after the schedule went: %v", s)
	}
}

func TestQuerySlackSeries(t *testing.T) {
	q := &laxityv1alpha1.IntermittentQuery{ObjectMeta: metav1.ObjectMeta{Namespace: "unit-slack", Name: "q1"}}
	recordQuerySlack(q, 87500*time.Millisecond)
	if got := testutil.ToFloat64(querySlackMetric.WithLabelValues(q.Namespace, q.Name)); got != 87.5 {
		t.Errorf("laxity_query_slack_seconds = %v, want 87.5", got)
	}
	recordQuerySlack(q, -3*time.Second)
	if got := testutil.ToFloat64(querySlackMetric.WithLabelValues(q.Namespace, q.Name)); got != -3 {
		t.Errorf("laxity_query_slack_seconds = %v, want -3", got)
	}
	forgetQuery(q.Namespace, q.Name)
	if s := seriesOf(q.Namespace); len(s) != 0 {
		t.Errorf("series left after the query went: %v", s)
	}
}

func TestCountFinishedSteps(t *testing.T) {
	batch := func(index, attempt int32, outcome laxityv1alpha1.StepOutcome) laxityv1alpha1.BatchStatus {
		return laxityv1alpha1.BatchStatus{Index: index, Attempt: attempt, Outcome: outcome}
	}
	const (
		pending   = laxityv1alpha1.StepPending
		running   = laxityv1alpha1.StepRunning
		succeeded = laxityv1alpha1.StepSucceeded
		failed    = laxityv1alpha1.StepFailed
	)
	for _, tc := range []struct {
		name          string
		before, after *laxityv1alpha1.IntermittentQueryStatus
		want          []string
	}{{
		name:   "a running batch finishes",
		before: &laxityv1alpha1.IntermittentQueryStatus{Batches: []laxityv1alpha1.BatchStatus{batch(0, 0, running)}},
		after:  &laxityv1alpha1.IntermittentQueryStatus{Batches: []laxityv1alpha1.BatchStatus{batch(0, 0, succeeded)}},
		want:   []string{"batch/Succeeded"},
	}, {
		name:   "nothing changed: a repeated reconcile counts nothing",
		before: &laxityv1alpha1.IntermittentQueryStatus{Batches: []laxityv1alpha1.BatchStatus{batch(0, 0, succeeded)}},
		after:  &laxityv1alpha1.IntermittentQueryStatus{Batches: []laxityv1alpha1.BatchStatus{batch(0, 0, succeeded)}},
	}, {
		name:  "a step first seen finished (a restarted manager with an empty status, a missed update)",
		after: &laxityv1alpha1.IntermittentQueryStatus{Batches: []laxityv1alpha1.BatchStatus{batch(0, 0, succeeded), batch(1, 0, failed)}},
		want:  []string{"batch/Succeeded", "batch/Failed"},
	}, {
		name:   "a retry seen before the failed attempt was: the attempt it replaced failed",
		before: &laxityv1alpha1.IntermittentQueryStatus{Batches: []laxityv1alpha1.BatchStatus{batch(0, 0, running)}},
		after:  &laxityv1alpha1.IntermittentQueryStatus{Batches: []laxityv1alpha1.BatchStatus{batch(0, 2, succeeded)}},
		want:   []string{"batch/Failed", "batch/Failed", "batch/Succeeded"},
	}, {
		name:   "the failed attempt was counted when seen; its retry is pending",
		before: &laxityv1alpha1.IntermittentQueryStatus{Batches: []laxityv1alpha1.BatchStatus{batch(0, 0, failed)}},
		after:  &laxityv1alpha1.IntermittentQueryStatus{Batches: []laxityv1alpha1.BatchStatus{batch(0, 1, pending)}},
	}, {
		name: "merges",
		before: &laxityv1alpha1.IntermittentQueryStatus{
			Partials: []laxityv1alpha1.PartialStatus{{Index: 0, Outcome: running}},
			Final:    &laxityv1alpha1.FinalStatus{Outcome: running},
		},
		after: &laxityv1alpha1.IntermittentQueryStatus{
			Partials: []laxityv1alpha1.PartialStatus{{Index: 0, Outcome: succeeded}, {Index: 1, Outcome: failed}},
			Final:    &laxityv1alpha1.FinalStatus{Attempt: 1, Outcome: succeeded},
		},
		want: []string{"partial/Succeeded", "partial/Failed", "final/Failed", "final/Succeeded"},
	}, {
		name:   "a status that went back (an attempt's object deleted) counts nothing",
		before: &laxityv1alpha1.IntermittentQueryStatus{Batches: []laxityv1alpha1.BatchStatus{batch(0, 1, succeeded)}},
		after:  &laxityv1alpha1.IntermittentQueryStatus{Batches: []laxityv1alpha1.BatchStatus{batch(0, 0, failed)}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			done := map[stepKey]int32{}
			record := func(k planner.StepKind, o laxityv1alpha1.StepOutcome, _ *time.Duration) {
				got = append(got, string(k)+"/"+string(o))
			}
			countFinishedSteps(tc.before, tc.after, done, record)
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("counted %v, want %v", got, tc.want)
			}
			// The same transition written again from a stale status.
			got = nil
			countFinishedSteps(tc.before, tc.after, done, record)
			if len(got) != 0 {
				t.Errorf("counted %v again from the same status", got)
			}
		})
	}
}

func TestRecordQueryTransitionsFromAStaleStatus(t *testing.T) {
	q := &laxityv1alpha1.IntermittentQuery{ObjectMeta: metav1.ObjectMeta{Namespace: "unit-stale", Name: "q1", UID: "uid-1"}}
	q.Spec.ScheduleName = "s"
	q.Spec.Deadline = metav1.NewTime(origin)
	defer forgetSchedule(q.Namespace, "s")
	defer forgetQuery(q.Namespace, q.Name)
	missed := []metav1.Condition{{Type: laxityv1alpha1.IntermittentQueryDeadlineMissedCondition, Status: metav1.ConditionTrue}}
	before := &laxityv1alpha1.IntermittentQueryStatus{Batches: []laxityv1alpha1.BatchStatus{{Outcome: laxityv1alpha1.StepRunning}}}
	after := &laxityv1alpha1.IntermittentQueryStatus{Conditions: missed, Batches: []laxityv1alpha1.BatchStatus{{Outcome: laxityv1alpha1.StepSucceeded}}}
	// Three reconciles start from the same cached status; each writes.
	for range 3 {
		recordQueryTransitions(q, before, after)
	}
	finished := testutil.ToFloat64(stepsFinishedMetric.WithLabelValues(q.Namespace, "s", "batch", "Succeeded"))
	misses := testutil.ToFloat64(deadlineMissesMetric.WithLabelValues(q.Namespace, "s"))
	if finished != 1 || misses != 1 {
		t.Errorf("steps finished %v, deadline misses %v; want each counted once", finished, misses)
	}
	// A query of the same name created anew is another query.
	q.UID = "uid-2"
	recordQueryTransitions(q, before, after)
	if got := testutil.ToFloat64(deadlineMissesMetric.WithLabelValues(q.Namespace, "s")); got != 2 {
		t.Errorf("deadline misses %v after the query was created anew, want 2", got)
	}
}

func TestDeadlineMissDecided(t *testing.T) {
	deadline := origin.Add(time.Hour)
	q := &laxityv1alpha1.IntermittentQuery{Spec: laxityv1alpha1.IntermittentQuerySpec{Deadline: metav1.NewTime(deadline)}}
	missed := []metav1.Condition{{Type: laxityv1alpha1.IntermittentQueryDeadlineMissedCondition, Status: metav1.ConditionTrue}}
	met := []metav1.Condition{{Type: laxityv1alpha1.IntermittentQueryDeadlineMissedCondition, Status: metav1.ConditionFalse}}
	final := func(outcome laxityv1alpha1.StepOutcome, start time.Duration) *laxityv1alpha1.FinalStatus {
		return &laxityv1alpha1.FinalStatus{Outcome: outcome, Start: &metav1.Time{Time: deadline.Add(start)}}
	}
	for _, tc := range []struct {
		name   string
		status *laxityv1alpha1.IntermittentQueryStatus
		want   bool
	}{
		{"no status", nil, false},
		{"not missed", &laxityv1alpha1.IntermittentQueryStatus{Conditions: met}, false},
		{"missed, no final merge yet", &laxityv1alpha1.IntermittentQueryStatus{Conditions: missed}, true},
		{"missed, final merge pending", &laxityv1alpha1.IntermittentQueryStatus{Conditions: missed, Final: &laxityv1alpha1.FinalStatus{Outcome: laxityv1alpha1.StepPending}}, true},
		{"missed, final merge started after the deadline", &laxityv1alpha1.IntermittentQueryStatus{Conditions: missed, Final: final(laxityv1alpha1.StepRunning, time.Minute)}, true},
		{"undecided: the final merge started in time and may have ended in time", &laxityv1alpha1.IntermittentQueryStatus{Conditions: missed, Final: final(laxityv1alpha1.StepRunning, -time.Minute)}, false},
		{"missed, the final merge failed", &laxityv1alpha1.IntermittentQueryStatus{Conditions: missed, Final: final(laxityv1alpha1.StepFailed, -time.Minute)}, true},
		{"missed, the final merge succeeded late", &laxityv1alpha1.IntermittentQueryStatus{Conditions: missed, Final: final(laxityv1alpha1.StepSucceeded, -time.Minute)}, true},
	} {
		if got := deadlineMissDecided(q, tc.status); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The metrics of a run, against what the cluster shows: one query meets
// its deadline, after its first batch failed once; the other's final merge
// fails every attempt and misses the deadline.
var _ = Describe("Metrics of a schedule's run", Ordered, func() {
	var w *world
	var searchesBefore uint64
	const lead = 2 * time.Minute
	failing := func(app *unstructured.Unstructured) bool {
		query, step, err := sparkapp.StepOf(app)
		if err != nil {
			return false
		}
		return (query == "doomed" && step.Kind == planner.StepFinal) ||
			(query == "steady" && step.Kind == planner.StepBatch && step.Index == 0 && step.Attempt == 0)
	}
	BeforeAll(func(ctx SpecContext) {
		searchesBefore = histogramCount()
		w = newWorld(ctx, "metrics", lead)
		w.spark.Fail = failing
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4, 8).LeadTime(lead).Obj()
		w.create(ctx, w.schedule,
			builder.Query(w.ns, "steady").Rate("50").Window(origin.Add(5*time.Minute), 3*time.Minute).Slack(3*time.Minute).Obj(),
			builder.Query(w.ns, "doomed").Rate("30").Window(origin.Add(5*time.Minute), 3*time.Minute).Slack(4*time.Minute).Obj(),
		)
		// Past doomed's deadline (12 minutes), and a while on.
		for t := origin; !t.After(origin.Add(14 * time.Minute)); t = w.next(t) {
			w.tick(ctx, t)
		}
		w.report(ctx)
		for _, f := range gatherLaxity() {
			for _, m := range f.GetMetric() {
				if matches(m, map[string]string{labelNamespace: w.ns}) {
					fmt.Fprintf(GinkgoWriter, "%s%v %v%v\n", f.GetName(), labelsOf(m), m.GetGauge().GetValue(), m.GetCounter().GetValue())
				}
			}
		}
	})

	apps := func(ctx context.Context) []unstructured.Unstructured {
		list := sparkapp.NewList()
		Expect(k8sClient.List(ctx, list, client.InNamespace(w.ns))).To(Succeed())
		return list.Items
	}
	schedule := map[string]string{labelNamespace: "", labelSchedule: "pool"}
	BeforeEach(func() { schedule[labelNamespace] = w.ns })

	It("counts every SparkApplication created as a launched step, by kind", func(ctx SpecContext) {
		byKind := map[string]float64{}
		for _, app := range apps(ctx) {
			byKind[app.GetLabels()[LabelStep]]++
		}
		Expect(byKind["final"]).To(BeNumerically(">=", 2), "doomed's final merge is retried")
		for _, kind := range []string{"batch", "partial", "final"} {
			got := metric("laxity_steps_launched_total", merged(schedule, labelKind, kind))
			Expect(got).To(Equal(byKind[kind]), "kind %s", kind)
		}
	})

	It("counts every finished attempt once, by kind and outcome", func(ctx SpecContext) {
		want := map[[2]string]float64{}
		for _, app := range apps(ctx) {
			phase := sparkapp.Observe(&app).Phase
			if terminal(phase) {
				want[[2]string{app.GetLabels()[LabelStep], string(phase)}]++
			}
		}
		Expect(want[[2]string{"batch", "Failed"}]).To(Equal(1.0))
		Expect(want[[2]string{"final", "Failed"}]).To(BeNumerically(">=", 2))
		for _, kind := range []string{"batch", "partial", "final"} {
			for _, outcome := range []string{"Succeeded", "Failed"} {
				got := metric("laxity_steps_finished_total", merged(schedule, labelKind, kind, labelOutcome, outcome))
				Expect(got).To(Equal(want[[2]string{kind, outcome}]), "%s/%s", kind, outcome)
			}
		}
	})

	It("counts the missed deadline once", func(ctx SpecContext) {
		var q laxityv1alpha1.IntermittentQuery
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "doomed"}, &q)).To(Succeed())
		Expect(meta.IsStatusConditionTrue(q.Status.Conditions, laxityv1alpha1.IntermittentQueryDeadlineMissedCondition)).To(BeTrue())
		Expect(metric("laxity_deadline_misses_total", schedule)).To(Equal(1.0))
	})

	It("mirrors the schedule's status in the gauges", func(ctx SpecContext) {
		var es laxityv1alpha1.ElasticSchedule
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(w.schedule), &es)).To(Succeed())
		cost, _ := es.Status.Chosen.Cost.Float64()
		executable, _ := es.Status.Chosen.ExecutableCost.Float64()
		Expect(cost).To(BeNumerically(">", 0))
		Expect(metric("laxity_plan_cost", merged(schedule, labelTimeline, TimelineSimulated))).To(Equal(cost))
		Expect(metric("laxity_plan_cost", merged(schedule, labelTimeline, TimelineExecutable))).To(Equal(executable))
		Expect(metric("laxity_pool_nodes_requested", schedule)).To(BeEquivalentTo(*es.Status.NodesRequested))
		Expect(metric("laxity_pool_nodes_ready", schedule)).To(BeEquivalentTo(*es.Status.NodesReady))
		for _, name := range []string{"steady", "doomed"} {
			var q laxityv1alpha1.IntermittentQuery
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &q)).To(Succeed())
			slack, err := q.Status.SlackSeconds.Float64()
			Expect(err).NotTo(HaveOccurred(), name)
			// The status shows the slack in steps (slackResolution); the
			// gauge is exact.
			Expect(metric("laxity_query_slack_seconds", map[string]string{labelNamespace: w.ns, labelQuery: name})).To(BeNumerically("~", slack, slackResolution.Seconds()), name)
		}
	})

	It("counts the plans made, by reason, and times their search", func() {
		Expect(metric("laxity_replans_total", merged(schedule, labelReason, ReplanInitial))).To(Equal(1.0))
		Expect(metric("laxity_replans_total", merged(schedule, labelReason, ReplanStepFailed))).To(Equal(1.0),
			"doomed's final merge used up its attempts")
		total := metric("laxity_replans_total", schedule)
		Expect(histogramCount() - searchesBefore).To(BeNumerically(">=", uint64(total)))
	})

	It("counts nothing again on repeated reconciles or after a restart", func(ctx SpecContext) {
		before := countersOf(w.ns)
		// A restarted manager: new reconcilers, same cluster, and nothing
		// remembered of what was counted.
		counted.Lock()
		counted.queries = map[string]*countedQuery{}
		counted.Unlock()
		restarted := newWorld(ctx, "metrics-restart", lead)
		restarted.es.Clock, restarted.iq.Clock = w.clock, w.clock
		for range 3 {
			for _, r := range []reconcilerFunc{w.es.Reconcile, restarted.es.Reconcile} {
				_, err := r(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w.schedule)})
				Expect(err).NotTo(HaveOccurred())
			}
			for _, name := range []string{"steady", "doomed"} {
				for _, r := range []reconcilerFunc{w.iq.Reconcile, restarted.iq.Reconcile} {
					_, err := r(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: w.ns, Name: name}})
					Expect(err).NotTo(HaveOccurred())
				}
			}
		}
		Expect(countersOf(w.ns)).To(Equal(before))
	})

	It("drops a query's slack when the query goes, and the schedule's series when it goes", func(ctx SpecContext) {
		slack := map[string]string{labelNamespace: w.ns, labelQuery: "steady"}
		Expect(seriesMatching(slack)).NotTo(BeEmpty())
		var q laxityv1alpha1.IntermittentQuery
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "steady"}, &q)).To(Succeed())
		Expect(k8sClient.Delete(ctx, &q)).To(Succeed())
		_, err := w.iq.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&q)})
		Expect(err).NotTo(HaveOccurred())
		Expect(seriesMatching(slack)).To(BeEmpty())
		Expect(seriesMatching(map[string]string{labelNamespace: w.ns, labelQuery: "doomed"})).NotTo(BeEmpty())

		Expect(k8sClient.Delete(ctx, w.schedule)).To(Succeed())
		for range 2 { // the finalizer, then the object gone
			_, err := w.es.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w.schedule)})
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(scheduleSeriesOf(w.ns, "pool")).To(BeEmpty())
	})
})

type reconcilerFunc func(context.Context, ctrl.Request) (ctrl.Result, error)

// merged is labels with more label pairs.
func merged(labels map[string]string, pairs ...string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		out[k] = v
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[pairs[i]] = pairs[i+1]
	}
	return out
}

// countersOf is every counter series of a namespace with its value.
func countersOf(ns string) map[string]float64 {
	out := map[string]float64{}
	for _, f := range gatherLaxity() {
		for _, m := range f.GetMetric() {
			if m.Counter != nil && matches(m, map[string]string{labelNamespace: ns}) {
				out[fmt.Sprintf("%s%v", f.GetName(), labelsOf(m))] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// histogramCount is how many plan searches laxity_plan_search_seconds has
// observed in this process.
func histogramCount() uint64 {
	for _, f := range gatherLaxity() {
		if f.GetName() == "laxity_plan_search_seconds" {
			return f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	return 0
}

func TestSpendMeter(t *testing.T) {
	const minimum = time.Minute
	type obs struct {
		at    time.Duration // after origin
		ready int32
		want  float64 // node-seconds billed by this observation
	}
	for _, tc := range []struct {
		name string
		obs  []obs
	}{{
		name: "nodes ready from the start are billed the time they were seen, no minimum: when they came is unknown",
		obs:  []obs{{0, 2, 0}, {10 * time.Second, 2, 20}, {20 * time.Second, 0, 20}},
	}, {
		name: "a node seen coming and held past the minimum",
		obs:  []obs{{0, 0, 0}, {10 * time.Second, 1, 0}, {100 * time.Second, 1, 90}, {130 * time.Second, 0, 30}},
	}, {
		name: "a node gone before the minimum is billed the rest",
		obs:  []obs{{0, 0, 0}, {10 * time.Second, 1, 0}, {30 * time.Second, 0, 20 + 40}},
	}, {
		name: "the last to come goes first: the older node has passed its minimum, the newer not",
		obs: []obs{
			{0, 0, 0}, {0, 1, 0}, // one node from 0 s
			{70 * time.Second, 2, 70},        // a second from 70 s
			{80 * time.Second, 1, 2*10 + 50}, // the second goes after 10 s: 50 s more
			{90 * time.Second, 1, 10},
		},
	}, {
		name: "a clock that went back bills nothing",
		obs:  []obs{{time.Minute, 2, 0}, {30 * time.Second, 2, 0}, {2 * time.Minute, 2, 120}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var m spendMeter
			total := 0.0
			for i, o := range tc.obs {
				got := m.observe(o.ready, origin.Add(o.at), minimum)
				if got != o.want {
					t.Errorf("observation %d (%d ready at %s): billed %v node-seconds, want %v", i, o.ready, o.at, got, o.want)
				}
				total += got
			}
			if total < 0 {
				t.Errorf("billed %v in all", total)
			}
		})
	}
}

func TestRecordSpend(t *testing.T) {
	es := builder.Schedule("unit-spend", "pool").Price("0.36").Obj()
	defer forgetSchedule(es.Namespace, es.Name)
	recordSpend(es, 2, origin)
	recordSpend(es, 2, origin.Add(time.Minute))
	// 2 nodes × 60 s × 0.36 / 3600 s.
	if got := testutil.ToFloat64(poolSpendMetric.WithLabelValues(es.Namespace, es.Name)); math.Abs(got-0.012) > 1e-12 {
		t.Errorf("spend %v, want 0.012", got)
	}
	forgetSchedule(es.Namespace, es.Name)
	if got := scheduleSeriesOf(es.Namespace, es.Name); len(got) != 0 {
		t.Errorf("series left after the schedule went: %v", got)
	}
	// Its meter went too: the next pass starts billing afresh.
	recordSpend(es, 2, origin.Add(time.Hour))
	if got := testutil.ToFloat64(poolSpendMetric.WithLabelValues(es.Namespace, es.Name)); got != 0 {
		t.Errorf("spend %v after the schedule came back, want 0 until time passes", got)
	}
}

func TestStepDurationObservedOnce(t *testing.T) {
	q := &laxityv1alpha1.IntermittentQuery{ObjectMeta: metav1.ObjectMeta{Namespace: "unit-duration", Name: "q1", UID: "uid-1"}}
	q.Spec.ScheduleName = "s"
	q.Spec.Deadline = metav1.NewTime(origin.Add(time.Hour))
	defer forgetSchedule(q.Namespace, "s")
	defer forgetQuery(q.Namespace, q.Name)
	start, end := metav1.NewTime(origin), metav1.NewTime(origin.Add(95*time.Second))
	before := &laxityv1alpha1.IntermittentQueryStatus{Batches: []laxityv1alpha1.BatchStatus{{Attempt: 1, Outcome: laxityv1alpha1.StepRunning, Start: &start}}}
	after := &laxityv1alpha1.IntermittentQueryStatus{Batches: []laxityv1alpha1.BatchStatus{
		{Attempt: 1, Outcome: laxityv1alpha1.StepSucceeded, Start: &start, End: &end},
		{Index: 1, Attempt: 0, Outcome: laxityv1alpha1.StepFailed, Start: &start}, // no end recorded: no duration
	}}
	for range 2 { // the second from a stale cached status
		recordQueryTransitions(q, before, after)
	}
	var samples []string
	for _, f := range gatherLaxity() {
		if f.GetName() != "laxity_step_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			if matches(m, map[string]string{labelNamespace: q.Namespace}) {
				samples = append(samples, fmt.Sprintf("%s/%s: %d in %gs", labelsOf(m)[labelKind], labelsOf(m)[labelOutcome],
					m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()))
			}
		}
	}
	if diff := cmp.Diff([]string{"batch/Succeeded: 1 in 95s"}, samples); diff != "" {
		t.Errorf("step durations (-want +got):\n%s", diff)
	}
	forgetQuery(q.Namespace, q.Name)
	if got := seriesMatching(map[string]string{labelNamespace: q.Namespace, labelQuery: q.Name}); len(got) != 0 {
		t.Errorf("series left after the query went: %v", got)
	}
}

func TestBuildInfo(t *testing.T) {
	var found []string
	for _, f := range gatherLaxity() {
		if f.GetName() != "laxity_build_info" {
			continue
		}
		for _, m := range f.GetMetric() {
			l := labelsOf(m)
			if m.GetGauge().GetValue() != 1 || l[labelVersion] == "" || l[labelRevision] == "" || !strings.HasPrefix(l[labelGoVersion], "go") {
				t.Errorf("laxity_build_info%v = %v, want 1 with a version, a revision and a Go version", l, m.GetGauge().GetValue())
			}
			found = append(found, fmt.Sprint(l))
		}
	}
	if len(found) != 1 {
		t.Errorf("laxity_build_info series %v, want one", found)
	}
}

// TestSearchBudgetExceededCountsEachSearch: every search that runs out of
// the budget counts, per schedule, and the series goes with the schedule.
func TestSearchBudgetExceededCountsEachSearch(t *testing.T) {
	es := &laxityv1alpha1.ElasticSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: "unit-budget", Name: "big"}}
	other := &laxityv1alpha1.ElasticSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: "unit-budget", Name: "small"}}
	defer forgetSchedule(other.Namespace, other.Name)
	recordSearchBudgetExceeded(es)
	recordSearchBudgetExceeded(es)
	recordSearchBudgetExceeded(other)
	if got := metric("laxity_search_budget_exceeded_total", map[string]string{labelNamespace: es.Namespace, labelSchedule: es.Name}); got != 2 {
		t.Errorf("laxity_search_budget_exceeded_total{schedule=big} = %v, want 2", got)
	}
	if got := metric("laxity_search_budget_exceeded_total", map[string]string{labelNamespace: es.Namespace, labelSchedule: other.Name}); got != 1 {
		t.Errorf("laxity_search_budget_exceeded_total{schedule=small} = %v, want 1", got)
	}
	forgetSchedule(es.Namespace, es.Name)
	if s := seriesMatching(map[string]string{labelNamespace: es.Namespace, labelSchedule: es.Name}); len(s) != 0 {
		t.Errorf("series left after the schedule went: %v", s)
	}
}
