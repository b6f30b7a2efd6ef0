package controllers

import (
	"cmp"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/spec"
	"github.com/laxity-dev/laxity/internal/version"
)

// Prometheus metrics of laxity's reconcilers, registered on
// controller-runtime's registry and served by the manager's metrics endpoint
// (--metrics-bind-address) next to controller-runtime's own.
//
// Labels are bounded by the objects in the cluster and fixed enumerations:
// namespace, schedule and query names, the step kind (batch, partial,
// final), the outcome (Succeeded, Failed), the re-plan reason and the
// timeline (simulated, executable); laxity_build_info's version labels have
// one series per process. No series is labelled with a step or
// SparkApplication name, so a query's series count does not grow with its
// batches.
//
// A schedule's series go when the schedule does (its finalizer has run, or
// its reconcile finds it gone), a query's slack when the query does.
// Counters of a schedule that are bumped again afterwards (a step of a
// query that outlives its schedule finishes) come back until the manager
// restarts; their number is bounded by the schedule names ever used.
const metricsNamespace = "laxity"

// Label names.
const (
	labelNamespace = "namespace"
	labelSchedule  = "schedule"
	labelQuery     = "query"
	labelReason    = "reason"
	labelKind      = "kind"
	labelOutcome   = "outcome"
	labelTimeline  = "timeline"
	labelVersion   = "version"
	labelRevision  = "revision"
	labelGoVersion = "goversion"
)

// Values of the timeline label of laxity_plan_cost.
const (
	TimelineSimulated  = "simulated"
	TimelineExecutable = "executable"
)

var (
	// planCostMetric is the plan in force's cost, for its instantaneous
	// node timeline (the simulated one, where nodes come the moment they are
	// asked for) and its executable one (lead time, keep-alive, billing minimum).
	planCostMetric = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Name: "plan_cost",
		Help: "Cost of the plan in force, in the currency of pricePerNodeHour, for its simulated (instantaneous) and its executable node timeline.",
	}, []string{labelNamespace, labelSchedule, labelTimeline})

	// planFeasibleMetric says whether the plan in force meets every
	// deadline, for an alert on a schedule that cannot.
	planFeasibleMetric = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Name: "plan_feasible",
		Help: "1 when the plan in force meets every query's deadline, 0 when no plan does (a ratio: no unit).",
	}, []string{labelNamespace, labelSchedule})

	// planSearchSecondsMetric is the wall-clock time one plan search took.
	// It is measured with the wall clock, not the controllers' clock, so a
	// fake or scaled clock (tests, the demo) does not distort it; the plan's
	// own searchSeconds uses the controllers' clock.
	planSearchSecondsMetric = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: metricsNamespace, Name: "plan_search_seconds",
		Help:    "Wall-clock seconds one plan search (every initial size by every batch-size factor) took.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 10), // 1 ms … ~262 s
	})

	// replansMetric counts the plans made and stored, by why.
	replansMetric = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metricsNamespace, Name: "replans_total",
		Help: "Plans made and stored for a schedule, by reason (Initial, SpecChanged, RateExceeded, RateFellBack, StepFailed, NodesLost, ModelLearned, RunningSlow).",
	}, []string{labelNamespace, labelSchedule, labelReason})

	nodesRequestedMetric = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Name: "pool_nodes_requested",
		Help: "Nodes the schedule's pool was last asked for (status.nodesRequested).",
	}, []string{labelNamespace, labelSchedule})

	nodesReadyMetric = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Name: "pool_nodes_ready",
		Help: "Ready Node objects matching the schedule's nodeSelector when last observed (status.nodesReady).",
	}, []string{labelNamespace, labelSchedule})

	// stepsLaunchedMetric counts the SparkApplications the schedule created:
	// a create that finds the object already there (a launch repeated after
	// a crash) is not a launch and is not counted.
	stepsLaunchedMetric = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metricsNamespace, Name: "steps_launched_total",
		Help: "Steps launched (SparkApplications created, retries included), by kind (batch, partial, final).",
	}, []string{labelNamespace, labelSchedule, labelKind})

	// stepsFinishedMetric counts step attempts that finished; see
	// countFinishedSteps for how each is counted once.
	stepsFinishedMetric = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metricsNamespace, Name: "steps_finished_total",
		Help: "Step attempts that finished, by kind (batch, partial, final) and outcome (Succeeded, Failed).",
	}, []string{labelNamespace, labelSchedule, labelKind, labelOutcome})

	querySlackMetric = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Name: "query_slack_seconds",
		Help: "A query's slack when last reconciled: how much later than modelled it could finish and still meet its deadline; negative when expected late.",
	}, []string{labelNamespace, labelQuery})

	queryLateTuplesMetric = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Name: "query_late_tuples",
		Help: "A query's tuples that arrived after its window's batches were cut where they arrived, so that no batch reads them (status.lateTuples).",
	}, []string{labelNamespace, labelQuery})

	// deadlineMissesMetric counts queries that missed their deadline, once
	// per query; see deadlineMissDecided.
	deadlineMissesMetric = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metricsNamespace, Name: "deadline_misses_total",
		Help: "Queries whose deadline passed before their final merge succeeded, counted once per query.",
	}, []string{labelNamespace, labelSchedule})

	// leadTimeMetric is every measured provisioning lead time: from the
	// moment more nodes were asked for to the moment that many were Ready.
	leadTimeMetric = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: metricsNamespace, Name: "pool_observed_lead_time_seconds",
		Help:    "Measured provisioning lead times of the schedule's pool, in seconds: from a request for more nodes until that many were Ready.",
		Buckets: prometheus.ExponentialBuckets(5, 2, 10), // 5 s … ~43 min
	}, []string{labelNamespace, labelSchedule})

	// plannedLeadTimeMetric is the lead time plans use (declared or
	// learned), once a lead time has been measured.
	plannedLeadTimeMetric = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Name: "pool_planned_lead_time_seconds",
		Help: "Provisioning lead time the schedule's plans assume, in seconds: the declared one, or the measured one when it is materially longer and learning is applied.",
	}, []string{labelNamespace, labelSchedule})

	// poolSpendMetric is the money the schedule's pool actually cost, as
	// observed: see spendMeter. Its name names no currency: the amount is in
	// whatever currency pricePerNodeHour is written in, which laxity does
	// not know.
	poolSpendMetric = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metricsNamespace, Name: "pool_spend_total",
		Help: "Money the schedule's pool cost, in the currency of pricePerNodeHour: the node-seconds its Ready nodes were seen ready, each node billed at least billingMinimum, times pricePerNodeHour / 3600.",
	}, []string{labelNamespace, labelSchedule})

	// searchBudgetExceededMetric counts the plan searches that ran out of
	// --plan-timeout, each once, as the SearchBudgetExceeded event reports
	// them: the Planned condition says only that the last one did.
	searchBudgetExceededMetric = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metricsNamespace, Name: "search_budget_exceeded_total",
		Help: "Plan searches of the schedule that ran out of their compute budget (--plan-timeout) and were stopped, the plan in force kept.",
	}, []string{labelNamespace, labelSchedule})

	// stepDurationMetric is how long each finished step attempt ran, from
	// its start to its end as its status records them.
	stepDurationMetric = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: metricsNamespace, Name: "step_duration_seconds",
		Help:    "Seconds a finished step attempt ran, from its start to its end, by query, kind (batch, partial, final) and outcome (Succeeded, Failed).",
		Buckets: prometheus.ExponentialBuckets(5, 2, 12), // 5 s … ~2.8 h
	}, []string{labelNamespace, labelSchedule, labelQuery, labelKind, labelOutcome})

	// buildInfoMetric says which build is running, as Prometheus's own
	// build_info metrics do.
	buildInfoMetric = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Name: "build_info",
		Help: "Always 1, labelled with the running build's version, source revision and Go version.",
	}, []string{labelVersion, labelRevision, labelGoVersion})

	// querySlowdownMetric, queryMarginMetric and queryTailMarginMetric are
	// what a query learned.
	querySlowdownMetric = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Name: "query_learned_slowdown_ratio",
		Help: "How long a query's steps took against its declared cost model, as a ratio (1.3: 30% longer), fitted from the steps that ran.",
	}, []string{labelNamespace, labelQuery})
	queryMarginMetric = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Name: "query_learned_margin_ratio",
		Help: "Runtime margin sized from how far a query's measured step durations spread around its fitted model, as a fraction (0.1: 10% headroom).",
	}, []string{labelNamespace, labelQuery})
	queryTailMarginMetric = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Name: "query_learned_tail_margin_ratio",
		Help: "Share of a query's last batch and final merge that its plans keep spare before the deadline, on top of the runtime margin, sized from the same spread, as a fraction (0.1: 10%).",
	}, []string{labelNamespace, labelQuery})
)

func init() {
	metrics.Registry.MustRegister(
		planCostMetric, planFeasibleMetric, planSearchSecondsMetric, replansMetric,
		nodesRequestedMetric, nodesReadyMetric,
		stepsLaunchedMetric, stepsFinishedMetric,
		querySlackMetric, queryLateTuplesMetric, deadlineMissesMetric,
		leadTimeMetric, plannedLeadTimeMetric, querySlowdownMetric, queryMarginMetric, queryTailMarginMetric,
		poolSpendMetric, stepDurationMetric, buildInfoMetric, searchBudgetExceededMetric,
	)
	build := version.Get()
	// A build outside a git checkout knows no revision; a label of its own
	// says so rather than an empty one.
	revision := cmp.Or(build.Revision, "unknown")
	buildInfoMetric.WithLabelValues(build.Version, revision, build.GoVersion).Set(1)
}

// scheduleVecs are the vectors with namespace and schedule labels, whose
// series go with the schedule.
var scheduleVecs = []interface {
	DeletePartialMatch(prometheus.Labels) int
}{planCostMetric, planFeasibleMetric, replansMetric, nodesRequestedMetric, nodesReadyMetric, stepsLaunchedMetric, stepsFinishedMetric, deadlineMissesMetric, leadTimeMetric, plannedLeadTimeMetric,
	poolSpendMetric, stepDurationMetric, searchBudgetExceededMetric}

// recordReplan counts a plan made and stored, and how long its search took
// by the wall clock.
func recordReplan(es *laxityv1alpha1.ElasticSchedule, reason string, search time.Duration) {
	replansMetric.WithLabelValues(es.Namespace, es.Name, reason).Inc()
	planSearchSecondsMetric.Observe(search.Seconds())
}

// recordSearchBudgetExceeded counts a plan search of the schedule that ran
// out of its budget.
func recordSearchBudgetExceeded(es *laxityv1alpha1.ElasticSchedule) {
	searchBudgetExceededMetric.WithLabelValues(es.Namespace, es.Name).Inc()
}

// recordLaunch counts a step the schedule created.
func recordLaunch(es *laxityv1alpha1.ElasticSchedule, kind planner.StepKind) {
	stepsLaunchedMetric.WithLabelValues(es.Namespace, es.Name, string(kind)).Inc()
}

// recordScheduleStatus sets the schedule's gauges from its status as
// written: the plan's costs and the pool's requested and ready nodes. A
// value the status does not hold (yet) has no series.
func recordScheduleStatus(es *laxityv1alpha1.ElasticSchedule) {
	ns, name := es.Namespace, es.Name
	setOrDelete := func(g *prometheus.GaugeVec, v *float64, labels ...string) {
		if v == nil {
			g.DeleteLabelValues(labels...)
			return
		}
		g.WithLabelValues(labels...).Set(*v)
	}
	var simulated, executable, feasible *float64
	if c := es.Status.Chosen; c != nil {
		simulated, executable = parseFloat(string(c.Cost)), parseFloat(string(c.ExecutableCost))
		met := 0.0
		if c.Feasible {
			met = 1
		}
		feasible = &met
	}
	setOrDelete(planFeasibleMetric, feasible, ns, name)
	setOrDelete(planCostMetric, simulated, ns, name, TimelineSimulated)
	setOrDelete(planCostMetric, executable, ns, name, TimelineExecutable)
	setOrDelete(nodesRequestedMetric, int32Float(es.Status.NodesRequested), ns, name)
	setOrDelete(nodesReadyMetric, int32Float(es.Status.NodesReady), ns, name)
	if es.Status.LeadTime == nil {
		plannedLeadTimeMetric.DeleteLabelValues(ns, name)
	} else {
		plannedLeadTimeMetric.WithLabelValues(ns, name).Set(spec.LeadTime(es).Seconds())
	}
}

// recordLeadTime observes a measured provisioning lead time.
func recordLeadTime(es *laxityv1alpha1.ElasticSchedule, lead time.Duration) {
	leadTimeMetric.WithLabelValues(es.Namespace, es.Name).Observe(lead.Seconds())
}

// recordLearned sets the query's learned slowdown and margin gauges; a
// query that learned nothing has none.
func recordLearned(q *laxityv1alpha1.IntermittentQuery) {
	l := q.Status.Learned
	if l == nil {
		querySlowdownMetric.DeleteLabelValues(q.Namespace, q.Name)
		queryMarginMetric.DeleteLabelValues(q.Namespace, q.Name)
		queryTailMarginMetric.DeleteLabelValues(q.Namespace, q.Name)
		return
	}
	if v := parseFloat(string(l.SlowdownPercent)); v != nil {
		querySlowdownMetric.WithLabelValues(q.Namespace, q.Name).Set(1 + *v/100)
	}
	if v := parseFloat(string(l.RuntimeMarginPercent)); v != nil {
		queryMarginMetric.WithLabelValues(q.Namespace, q.Name).Set(*v / 100)
	}
	if v := parseFloat(string(l.TailMarginPercent)); v != nil {
		queryTailMarginMetric.WithLabelValues(q.Namespace, q.Name).Set(*v / 100)
	}
}

// forgetSchedule deletes every series of a schedule that has gone.
func forgetSchedule(namespace, name string) {
	for _, v := range scheduleVecs {
		v.DeletePartialMatch(prometheus.Labels{labelNamespace: namespace, labelSchedule: name})
	}
	forgetSpend(namespace, name)
}

// recordQuerySlack sets the query's slack gauge to the slack just computed.
// The gauge is exact, where status.slackSeconds moves only in steps (so
// that a waiting query's status is not rewritten every pass); like the
// status, it keeps the last value while no plan covers the query.
func recordQuerySlack(q *laxityv1alpha1.IntermittentQuery, slack time.Duration) {
	querySlackMetric.WithLabelValues(q.Namespace, q.Name).Set(slack.Seconds())
}

// recordLateTuples sets the query's late-tuples gauge to its count.
func recordLateTuples(q *laxityv1alpha1.IntermittentQuery, late int64) {
	queryLateTuplesMetric.WithLabelValues(q.Namespace, q.Name).Set(float64(late))
}

// forgetQuery deletes the series of a query that has gone, and what this
// process remembers having counted for it.
func forgetQuery(namespace, name string) {
	querySlackMetric.DeleteLabelValues(namespace, name)
	queryLateTuplesMetric.DeleteLabelValues(namespace, name)
	querySlowdownMetric.DeleteLabelValues(namespace, name)
	queryMarginMetric.DeleteLabelValues(namespace, name)
	queryTailMarginMetric.DeleteLabelValues(namespace, name)
	stepDurationMetric.DeletePartialMatch(prometheus.Labels{labelNamespace: namespace, labelQuery: name})
	counted.Lock()
	delete(counted.queries, namespace+"/"+name)
	counted.Unlock()
}

// countedQuery is what this process has counted for one query: for every
// step the first attempt not counted yet, and whether its deadline miss was.
type countedQuery struct {
	uid    types.UID
	steps  map[stepKey]int32
	missed bool
	// announced are the keys of the events emitted for the query; see
	// announceQueryEvents.
	announced map[string]bool
}

// countedFor is the process's memory of the query, new when the query is
// (a query deleted and created again under its name has another UID). The
// caller holds counted's lock.
func countedFor(q *laxityv1alpha1.IntermittentQuery) *countedQuery {
	key := q.Namespace + "/" + q.Name
	mem := counted.queries[key]
	if mem == nil || mem.uid != q.UID {
		mem = &countedQuery{uid: q.UID, steps: map[stepKey]int32{}, announced: map[string]bool{}}
		counted.queries[key] = mem
	}
	return mem
}

// counted is the process's memory of what it counted, by namespace/name;
// see recordQueryTransitions. It holds a few bytes per step of each live
// query and forgets a query when it goes.
var counted = struct {
	sync.Mutex
	queries map[string]*countedQuery
}{queries: map[string]*countedQuery{}}

// recordQueryTransitions counts what a status write of the query recorded
// for the first time: finished step attempts and a decided deadline miss.
//
// Counting once rests on two guards:
//
//   - The status is the durable record. Only a transition from the status
//     the reconcile read (before) to the one it wrote (after) is counted,
//     and only once that write has succeeded. A repeated reconcile starts
//     from a status that already records the transition and counts
//     nothing; so does a restarted manager, whose fresh cache holds what
//     its predecessor wrote.
//   - The status is written with a merge patch that carries no
//     resourceVersion, so a reconcile that starts from a stale cached
//     status (its own previous write not yet seen) writes the same
//     transition again, successfully. The process therefore also remembers,
//     per query, what it has counted (counted) and never counts that again.
//
// The counters themselves start from zero in a new process, as Prometheus
// counters do.
func recordQueryTransitions(q *laxityv1alpha1.IntermittentQuery, before, after *laxityv1alpha1.IntermittentQueryStatus) {
	counted.Lock()
	defer counted.Unlock()
	mem := countedFor(q)
	countFinishedSteps(before, after, mem.steps, func(kind planner.StepKind, outcome laxityv1alpha1.StepOutcome, ran *time.Duration) {
		stepsFinishedMetric.WithLabelValues(q.Namespace, q.Spec.ScheduleName, string(kind), string(outcome)).Inc()
		if ran != nil {
			stepDurationMetric.WithLabelValues(q.Namespace, q.Spec.ScheduleName, q.Name, string(kind), string(outcome)).Observe(ran.Seconds())
		}
	})
	if !mem.missed && !deadlineMissDecided(q, before) && deadlineMissDecided(q, after) {
		deadlineMissesMetric.WithLabelValues(q.Namespace, q.Spec.ScheduleName).Inc()
		mem.missed = true
	}
}

// stepRecord is a step's latest attempt as the status records it.
type stepRecord struct {
	attempt    int32
	outcome    laxityv1alpha1.StepOutcome
	start, end *metav1.Time
}

// ran is how long the attempt ran, nil when the status does not record
// both its start and its end.
func (r stepRecord) ran() *time.Duration {
	if r.start == nil || r.end == nil || r.end.Before(r.start) {
		return nil
	}
	d := r.end.Sub(r.start.Time)
	return &d
}

type stepKey struct {
	kind  planner.StepKind
	index int32
}

func stepRecords(s *laxityv1alpha1.IntermittentQueryStatus) map[stepKey]stepRecord {
	out := map[stepKey]stepRecord{}
	if s == nil {
		return out
	}
	for _, b := range s.Batches {
		out[stepKey{planner.StepBatch, b.Index}] = stepRecord{b.Attempt, b.Outcome, b.Start, b.End}
	}
	for _, p := range s.Partials {
		out[stepKey{planner.StepPartial, p.Index}] = stepRecord{p.Attempt, p.Outcome, p.Start, p.End}
	}
	if f := s.Final; f != nil {
		out[stepKey{planner.StepFinal, 0}] = stepRecord{f.Attempt, f.Outcome, f.Start, f.End}
	}
	return out
}

func terminal(o laxityv1alpha1.StepOutcome) bool {
	return o == laxityv1alpha1.StepSucceeded || o == laxityv1alpha1.StepFailed
}

// countFinishedSteps calls finished for every step attempt that after
// records as finished and neither before nor done (the first attempt of
// each step not counted yet, updated here; nil to ignore) does, with how
// long it ran when the status records that. The status holds only each
// step's latest attempt, and a step is retried only after its attempt
// failed, so an attempt that after shows superseded by a later one, and
// that was not counted yet, failed: it is counted as Failed even if no
// reconcile saw it terminal, without a duration.
func countFinishedSteps(before, after *laxityv1alpha1.IntermittentQueryStatus, done map[stepKey]int32, finished func(planner.StepKind, laxityv1alpha1.StepOutcome, *time.Duration)) {
	old := stepRecords(before)
	now := stepRecords(after)
	// Deterministic order, for tests.
	for _, kind := range []planner.StepKind{planner.StepBatch, planner.StepPartial, planner.StepFinal} {
		for key, rec := range sortedSteps(now, kind) {
			first := done[key] // the first attempt not counted yet
			if prev, ok := old[key]; ok {
				next := prev.attempt
				if terminal(prev.outcome) {
					next++
				}
				first = max(first, next)
			}
			for a := first; a < rec.attempt; a++ {
				finished(kind, laxityv1alpha1.StepFailed, nil)
			}
			next := rec.attempt
			if terminal(rec.outcome) {
				next++
			}
			if terminal(rec.outcome) && rec.attempt >= first {
				finished(kind, rec.outcome, rec.ran())
			}
			if done != nil && next > first {
				done[key] = next
			}
		}
	}
}

// sortedSteps yields the records of one kind in index order.
func sortedSteps(m map[stepKey]stepRecord, kind planner.StepKind) func(func(stepKey, stepRecord) bool) {
	return func(yield func(stepKey, stepRecord) bool) {
		maxIndex := int32(-1)
		for k := range m {
			if k.kind == kind {
				maxIndex = max(maxIndex, k.index)
			}
		}
		for i := int32(0); i <= maxIndex; i++ {
			k := stepKey{kind, i}
			if rec, ok := m[k]; ok && !yield(k, rec) {
				return
			}
		}
	}
}

// deadlineMissDecided says whether the status records a deadline miss that
// nothing still to be observed can undo. DeadlineMissed turns True as soon as
// the deadline passes without a succeeded final merge; but a final merge
// seen Running that started by the deadline may already have ended in time
// (its completion not observed yet), and the condition then turns False
// again. Such a miss is undecided until that attempt is seen to finish.
// Every other miss is decided for good: the predicate never turns from true
// back to false while the query's spec stays the same, which is what lets
// recordQueryTransitions count a query's miss once.
func deadlineMissDecided(q *laxityv1alpha1.IntermittentQuery, s *laxityv1alpha1.IntermittentQueryStatus) bool {
	if s == nil || !meta.IsStatusConditionTrue(s.Conditions, laxityv1alpha1.IntermittentQueryDeadlineMissedCondition) {
		return false
	}
	f := s.Final
	if f != nil && f.Outcome == laxityv1alpha1.StepRunning && (f.Start == nil || !f.Start.After(q.Spec.Deadline.Time)) {
		return false
	}
	return true
}

func parseFloat(s string) *float64 {
	if s == "" {
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil
	}
	return &v
}

func int32Float(v *int32) *float64 {
	if v == nil {
		return nil
	}
	f := float64(*v)
	return &f
}
