package controllers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/dispatch"
	"github.com/laxity-dev/laxity/internal/learn"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/replan"
	"github.com/laxity-dev/laxity/internal/spec"
)

// Re-plan reasons, recorded on the plan and counted in metrics.
const (
	ReplanInitial      = "Initial"
	ReplanSpecChanged  = "SpecChanged"
	ReplanRateExceeded = "RateExceeded"
	ReplanRateFellBack = "RateFellBack"
	ReplanStepFailed   = "StepFailed"
	// ReplanNodesLost: ready nodes fell below what the running or due step
	// needs and what the plan expects ready (dispatch.NodesLost); the new
	// plan starts from the nodes really there.
	ReplanNodesLost = "NodesLost"
	// ReplanModelLearned: what laxity learned from the steps that ran (a
	// query's cost model and margin) or from the nodes that arrived (the
	// pool's lead time) differs from what the plan in force priced its
	// steps with by more than learn.DefaultTolerance.
	ReplanModelLearned = "ModelLearned"
	// ReplanRunningSlow: the window's steps ran slower than the plan in
	// force priced them, by less than that tolerance, but enough that at
	// the learned model a query's remaining steps would leave it negative
	// slack; the remainder is re-planned at once, so that nodes are asked
	// for a lead time earlier rather than after the deadline is lost.
	ReplanRunningSlow = "RunningSlow"
)

// replanning is why the pass re-plans ("" when the plan in force holds)
// and, when the reason is lost nodes, what the PoolReady condition says
// about them.
type replanning struct {
	reason    string
	nodesLost string
}

// judge says whether the plan in force still holds: there is one, it was
// made from the same specs, the measured rates are within what it supports,
// no step has used up its attempts since it was made, and the ready nodes
// did not fall below what the work in progress needs.
func (r *ElasticScheduleReconciler) judge(ctx context.Context, v *view, p *passResult) (replanning, error) {
	if v.stored != nil && v.allFinished() {
		// The plan in force stays: a plan of finished queries would plan
		// work that is done, for deadlines that may have passed.
		return replanning{}, nil
	}
	if reason := replanReason(v.es, v.queries, v.planned, v.finished(), v.stored, v.inputsHash, v.rates(), v.now); reason != "" {
		log.FromContext(ctx).V(1).Info("re-planning", "reason", reason)
		return replanning{reason: reason}, nil
	}
	dqs, err := v.dispatchQueries()
	if err != nil {
		return replanning{}, err
	}
	if reason, message := learnedChange(v, dqs); reason != "" {
		log.FromContext(ctx).Info("re-planning", "reason", reason, "change", message)
		p.note(corev1.EventTypeNormal, laxityv1alpha1.ModelLearnedReason, "Replan", message)
		return replanning{reason: reason}, nil
	}
	settings := spec.DispatchSettings(v.es, &v.stored.doc, r.Options.MaxAttempts, r.Options.Backoff)
	if exhausted := dispatch.Exhausted(v.now, settings, dqs); len(exhausted) > 0 && v.stored.reason != ReplanStepFailed {
		log.FromContext(ctx).V(1).Info("re-planning", "reason", ReplanStepFailed, "exhausted", exhausted)
		return replanning{reason: ReplanStepFailed}, nil
	}
	doc := &v.stored.doc
	need := max(dispatch.Holding(dqs), dispatch.BehindSchedule(doc, dqs, r.Options.MaxAttempts, v.now))
	expected := dispatch.ExpectedReady(doc.Origin, doc.Requests, v.lead, v.now)
	if !dispatch.NodesLost(int(v.previousReady), int(v.ready), need, expected) {
		log.FromContext(ctx).V(1).Info("the plan in force holds", "planReason", v.stored.reason, "readyNodes", v.ready, "expectedReady", expected, "need", need)
		return replanning{}, nil
	}
	message := fmt.Sprintf("Ready nodes fell from %d to %d, below the %d the work in progress needs and the %d the plan expects ready now: re-planning from the %d there and requesting the nodes again",
		v.previousReady, v.ready, need, expected, v.ready)
	log.FromContext(ctx).Info("nodes lost", "from", v.previousReady, "to", v.ready, "need", need, "expected", expected)
	p.note(corev1.EventTypeWarning, laxityv1alpha1.NodesLostReason, "Replan", message)
	return replanning{reason: ReplanNodesLost, nodesLost: message}, nil
}

// replanReason says why the plan in force no longer holds by its inputs and
// the measured rates, or "". planned are the queries in the planner's form,
// by name; a query missing there has a spec the plan search reports on.
func replanReason(es *laxityv1alpha1.ElasticSchedule, queries []laxityv1alpha1.IntermittentQuery, planned map[string]planner.Query, finished map[string]bool, stored *storedPlan, inputs string, rates map[string]float64, now time.Time) string {
	switch {
	case stored == nil:
		return ReplanInitial
	case stored.inputs != inputs:
		return ReplanSpecChanged
	}
	for i := range queries {
		q := &queries[i]
		pq, ok := planned[q.Name]
		if !ok || finished[q.Name] {
			continue
		}
		declared := replan.RateAt(pq.Rates, now.Sub(q.Spec.Window.Start.Time).Seconds())
		switch replan.Compare(measuredRate(es, pq, rates), declared, stored.rates[q.Name], stored.doc.MaxSupportedRateFactor, spec.RateRules(es)) {
		case replan.Exceeds:
			return ReplanRateExceeded
		case replan.FellBack:
			return ReplanRateFellBack
		}
	}
	return ""
}

// learnedChange says whether what was learned changed the plan in force's
// prices enough to re-plan (ReplanModelLearned, ReplanRunningSlow, or ""),
// and what changed, for the event. dqs are the queries' run-time view,
// priced with what was learned.
func learnedChange(v *view, dqs []dispatch.Query) (reason, message string) {
	models := v.stored.models
	if models == nil {
		return "", ""
	}
	if planned, now := models.LeadTimeSeconds, v.workload.Pool.ProvisioningLeadTime; planned > 0 && math.Abs(now-planned) > planned*learn.DefaultTolerance {
		return ReplanModelLearned, fmt.Sprintf("The pool's measured provisioning lead time is %s; the plan in force assumed %s: re-planning",
			costmodel.Duration(now), costmodel.Duration(planned))
	}
	sizes := v.workload.Pool.Sizes
	largest := sizes[len(sizes)-1]
	plans := make(map[string]*planner.QueryPlan, len(v.stored.doc.Queries))
	for i := range v.stored.doc.Queries {
		plans[v.stored.doc.Queries[i].Name] = &v.stored.doc.Queries[i]
	}
	// The steps as the plan in force priced them, and the largest move of a
	// query's prices since: the slowdown the rest of the window is judged at.
	asPlanned := make([]dispatch.Query, 0, len(dqs))
	slowest, slowestQuery, slowestChange := 1.0, "", 0.0
	for _, dq := range dqs {
		pq, known := v.planned[dq.Name]
		was, planned := models.Queries[dq.Name]
		if !known || !planned || v.launched[dq.Name].finished() {
			asPlanned = append(asPlanned, dq)
			continue
		}
		points := pricePoints(plans[dq.Name], sizes)
		change := learn.Change(learn.Learned{Model: was.Cost, Margin: was.Margin}, learn.Learned{Model: pq.Cost, Margin: pq.Margin}, points)
		if change > learn.DefaultTolerance {
			return ReplanModelLearned, changeMessage(v, dq.Name, change) + ": re-planning"
		}
		dq.Cost = planner.Query{Cost: was.Cost, Margin: was.Margin}.Planned(v.workload.Planning)
		if f := slowerBy(dq.Cost, pq.Planned(v.workload.Planning), points); f > slowest {
			slowest, slowestQuery, slowestChange = f, dq.Name, change
		}
		asPlanned = append(asPlanned, dq)
	}
	if unsafe := dispatch.UnsafeAt(v.now, asPlanned, slowest, largest); len(unsafe) > 0 {
		return ReplanRunningSlow, fmt.Sprintf("%s; at that slowdown the work left would make %s late even on %d nodes: re-planning the rest of the window",
			changeMessage(v, slowestQuery, slowestChange), strings.Join(unsafe, ", "), largest)
	}
	return "", ""
}

// changeMessage says how much what the query learned moved its prices, for
// the ModelLearned event.
func changeMessage(v *view, query string, change float64) string {
	var learned *laxityv1alpha1.LearnedModel
	if q := v.query(query); q != nil {
		learned = q.Status.Learned
	}
	return fmt.Sprintf("IntermittentQuery %s: its steps, priced with what was learned from the steps that ran (%s), take %+.0f%% against the plan in force",
		query, learnedSummary(learned), 100*change)
}

// slowerBy is the largest factor by which now prices one of the steps at
// points above was, and 1 when it prices none higher.
func slowerBy(was, now costmodel.Model, points []learn.Observation) float64 {
	slowest := 1.0
	for _, p := range points {
		line, then := now.Batch, was.Batch
		if p.Kind == learn.Merge {
			line, then = now.Merge, was.Merge
		}
		if before := then.Seconds(p.Nodes, p.Work); before > 0 {
			slowest = max(slowest, line.Seconds(p.Nodes, p.Work)/before)
		}
	}
	return slowest
}

// learnedSummary is the learned slowdown and margin, for messages.
func learnedSummary(l *laxityv1alpha1.LearnedModel) string {
	if l == nil {
		return "nothing learned"
	}
	return fmt.Sprintf("slowdown %s%%, margin %s%%, from %s and %s", l.SlowdownPercent, l.RuntimeMarginPercent,
		plural(int(l.BatchObservations), "batch", "batches"), plural(int(l.MergeObservations), "merge", "merges"))
}

// plural is n with the noun in the number n asks for.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// pricePoints are the steps a change of a query's cost model is measured
// on: a batch of the planned size and a final merge of the planned batches,
// on every pool size; none when the plan does not cover the query.
func pricePoints(plan *planner.QueryPlan, sizes []int) []learn.Observation {
	if plan == nil {
		return nil
	}
	out := make([]learn.Observation, 0, 2*len(sizes))
	for _, n := range sizes {
		out = append(out,
			learn.Observation{Kind: learn.Batch, Work: float64(plan.BatchSize), Nodes: n},
			learn.Observation{Kind: learn.Merge, Work: float64(max(plan.Batches, 1)), Nodes: n})
	}
	return out
}

// measuredRate is the query's measured rate, if any, and what the
// measurement can tell apart.
func measuredRate(es *laxityv1alpha1.ElasticSchedule, pq planner.Query, rates map[string]float64) replan.Observed {
	return replan.Observed{Measured: rates[pq.Name], Resolution: replan.Resolution(pq.Granularity, es.Spec.Planning.RateWindow.Seconds())}
}

// replan makes a new plan and stores it as the plan in force.
//
// The search's time budget is kept per schedule (searchOutcome): a search
// that runs out of it keeps the plan in force and backs off, and a search
// known to be long runs in the lane (SearchLane), not in this worker. When
// the search is in the lane, or the specs cannot be planned, or there is no
// plan in force to keep, done is true: the pass ends there, to be looked
// at again after result's delay (or when the lane wakes it).
func (r *ElasticScheduleReconciler) replan(ctx context.Context, v *view, reason string, p *passResult) (result time.Duration, done bool, err error) {
	es := v.es
	logger := log.FromContext(ctx)
	state := budgetStateOf(es.Status.SearchBudget)
	if wait, next := state.Wait(v.inputsHash, v.now); wait {
		// Backing off: the same specs ran out of the budget a moment ago.
		return r.keepPlan(v, state, next, p)
	}
	run, err := r.searchFor(v)
	if err != nil {
		setScheduleConditions(es, scheduleState{invalid: err})
		p.note(corev1.EventTypeWarning, laxityv1alpha1.InvalidSpecReason, "Plan", err.Error())
		return 0, true, nil
	}
	res, inLane := r.search(ctx, v, state, run)
	if inLane {
		logger.V(1).Info("plan search in the long-search lane", "reason", reason, "budget", r.Options.planTimeout())
		return r.Options.planTimeout(), true, nil
	}
	switch {
	case errors.Is(res.err, planner.ErrSearchBudget):
		state = state.RanOut(v.inputsHash, v.now, r.Options.searchBackoff())
		es.Status.SearchBudget = budgetStatus(state, r.Options.planTimeout(), v.now)
		state = budgetStateOf(es.Status.SearchBudget)
		logger.Info("plan search out of budget", "reason", reason, "budget", r.Options.planTimeout(), "keepingPlan", v.stored != nil,
			"exceeded", state.Exceeded, "nextSearch", state.Next)
		p.note(corev1.EventTypeWarning, laxityv1alpha1.SearchBudgetExceededReason, "Plan", budgetMessage(reason, state, r.Options.planTimeout(), v.stored != nil))
		return r.keepPlan(v, state, state.Next, p)
	case res.err != nil:
		setScheduleConditions(es, scheduleState{invalid: res.err})
		p.note(corev1.EventTypeWarning, laxityv1alpha1.InvalidSpecReason, "Plan", res.err.Error())
		return 0, true, nil
	}
	doc := res.doc
	stored := &storedPlan{doc: doc, inputs: v.inputsHash, reason: reason, rates: res.assumed, models: modelsOf(v.workload)}
	if err := storePlan(ctx, r.Client, es, stored); err != nil {
		return 0, true, err
	}
	v.stored = stored
	es.Status.SearchBudget = nil
	recordReplan(es, reason, res.took)
	logger.Info("planned", "reason", reason, "feasible", doc.Chosen.Feasible, "cost", doc.Chosen.Cost,
		"initialNodes", doc.Chosen.InitialNodes, "maxNodes", doc.Chosen.MaxNodes, "batchSizeFactor", doc.Chosen.BatchSizeFactor,
		"readyNodes", v.ready, "searchSeconds", res.took.Seconds())
	es.Status.LastPlanTime = &metav1.Time{Time: v.now}
	// A plan that misses a deadline is something to act on: a Warning,
	// which `kubectl get events --field-selector type=Warning` lists.
	kind := corev1.EventTypeNormal
	if !doc.Chosen.Feasible {
		kind = corev1.EventTypeWarning
	}
	p.note(kind, "Planned", "Plan", planMessage(&doc, reason))
	return 0, false, nil
}

// search runs the pass's plan search, or has the lane run it (inLane):
//
//   - a result the lane holds for these specs is taken;
//   - while the lane runs this schedule's search of these specs, the pass
//     waits for it;
//   - a search known to be long (the schedule's last one ran out of its
//     budget, or outgrew the worker's share) goes to the lane;
//   - any other runs here, but only for the worker's share of the budget
//     (Options.inlineSearch): past that, it is cut short and handed to the
//     lane with the whole budget, so that no search holds a worker for
//     longer than that share.
//
// Without a lane every search runs here with the whole budget.
func (r *ElasticScheduleReconciler) search(ctx context.Context, v *view, state replan.BudgetState, run search) (res searchResult, inLane bool) {
	budget := r.Options.planTimeout()
	lane := r.LongSearches
	if lane == nil {
		return runSearch(ctx, run, budget), false
	}
	key, uid := client.ObjectKeyFromObject(v.es), v.es.UID
	share := r.Options.inlineSearch()
	if res, ok := lane.take(key, uid, v.inputsHash); ok {
		lane.outgrew(key, uid, res.took > share)
		return res, false
	}
	if held, _ := lane.state(key, uid, v.inputsHash); held {
		return searchResult{}, true
	}
	toLane := func() (searchResult, bool) {
		lane.submit(&laneSearch{schedule: key, uid: uid, inputs: v.inputsHash, budget: budget, run: run, queued: time.Now()})
		return searchResult{}, true
	}
	// A search known to be long goes to the lane at once: run here it
	// would be cut short at the share and run again there from the start.
	if state.Long() || lane.isOutgrown(key, uid) {
		return toLane()
	}
	res = runSearch(ctx, run, share)
	if errors.Is(res.err, planner.ErrSearchBudget) && share < budget && ctx.Err() == nil {
		lane.outgrew(key, uid, true)
		return toLane()
	}
	return res, false
}

// keepPlan ends a replan whose search ran out of its budget, or waits
// after one that did: the plan in force goes on (the pass dispatches it)
// with Planned and Ready False saying why, until next; without one, the
// schedule is not planned until then.
func (r *ElasticScheduleReconciler) keepPlan(v *view, state replan.BudgetState, next time.Time, p *passResult) (time.Duration, bool, error) {
	msg := budgetCondition(state, r.Options.planTimeout(), v.stored != nil)
	if v.stored == nil {
		setScheduleConditions(v.es, scheduleState{invalid: errors.New(msg), invalidReason: laxityv1alpha1.SearchBudgetExceededReason})
		return max(next.Sub(v.now), time.Second), true, nil
	}
	p.overBudget, p.nextSearch = msg, next
	return 0, false, nil
}

// budgetStateOf is the backoff state the status keeps.
func budgetStateOf(s *laxityv1alpha1.SearchBudgetStatus) replan.BudgetState {
	if s == nil {
		return replan.BudgetState{}
	}
	out := replan.BudgetState{Inputs: s.Inputs, Exceeded: int(s.Exceeded)}
	if s.NextSearchTime != nil {
		out.Next = s.NextSearchTime.Time
	}
	return out
}

// budgetStatus is the backoff state as the status keeps it, to the second
// (never earlier than the backoff said), after a search ran out at now.
func budgetStatus(s replan.BudgetState, budget time.Duration, now time.Time) *laxityv1alpha1.SearchBudgetStatus {
	next, last := wholeSeconds(s.Next), wholeSeconds(now)
	if next.Time.Before(s.Next) {
		next = metav1.NewTime(next.Add(time.Second))
	}
	return &laxityv1alpha1.SearchBudgetStatus{
		Inputs: s.Inputs, Exceeded: int32(min(s.Exceeded, math.MaxInt32)), BudgetSeconds: laxityv1alpha1.NewDecimal(budget.Seconds(), 3),
		LastExceededTime: &last, NextSearchTime: &next,
	}
}

// budgetMessage is the event of a search that ran out of its budget.
func budgetMessage(reason string, s replan.BudgetState, budget time.Duration, kept bool) string {
	return fmt.Sprintf("The plan search (%s) ran out of its budget: %s", reason, budgetCondition(s, budget, kept))
}

// budgetCondition says, for the Planned and Ready conditions, that the
// searches of the schedule's specs run longer than one search may take,
// what is kept, what to change and when the next try is.
func budgetCondition(s replan.BudgetState, budget time.Duration, kept bool) string {
	keeping := "the schedule has no plan yet, so nothing runs"
	if kept {
		keeping = "the plan in force, made from the earlier specs, is kept and still run"
	}
	searches := "the plan search of the current specs"
	if s.Exceeded > 1 {
		searches = fmt.Sprintf("%d plan searches in a row of the current specs", s.Exceeded)
	}
	return fmt.Sprintf("%s ran longer than the %s one search may take (the manager's --plan-timeout); %s. "+
		"To plan within it, give spec.planning.batchSizeFactors fewer entries, use search: Grid, shorten the queries' windows or coarsen their granularity, or split the queries over several schedules. "+
		"Next try at %s (at once if a spec changes), then later each time the budget runs out again",
		searches, budget, keeping, s.Next.UTC().Format(time.RFC3339))
}

// searchFor is the pass's plan search from now (replan.PlanContext): from
// the observed progress of every query whose window has opened, with the
// rates the rate model assumes, executable on the nodes ready now. It
// returns, with the plan, the rates so assumed, by query, which the plan's
// maximum supported rate is relative to. What it plans from is fixed when
// it is made, so that it can run after the pass (SearchLane).
func (r *ElasticScheduleReconciler) searchFor(v *view) (search, error) {
	if v.workloadErr != nil {
		return nil, v.workloadErr
	}
	es, now, rates := v.es, v.now, v.rates()
	observed := map[string]replan.Observed{}
	holding := make([]dispatch.Query, 0, len(v.queries))
	for i := range v.queries {
		name := v.queries[i].Name
		pq := v.planned[name]
		o := measuredRate(es, pq, rates)
		o.Arrived, o.Done = v.inputs[name].arrived, progressOf(v.launched[name])
		observed[name] = o
		dq := dispatch.Query{Name: name, Cost: pq.Planned(v.workload.Planning)}
		withLaunched(&dq, v.launched[name], now)
		holding = append(holding, dq)
	}
	busy := dispatch.FreeAt(holding, now).Sub(now).Seconds()
	w := v.workload
	// Finished queries are done: planning them again would re-run their
	// last batch and merge for a deadline that may have passed.
	w.Queries = slices.DeleteFunc(slices.Clone(w.Queries), func(pq planner.Query) bool { return v.launched[pq.Name].finished() })
	w.Planning.MaxSteps = r.Options.MaxPlanSteps
	rules, nodes, clk := spec.RateRules(es), v.nodesNow(w), r.Clock
	return func(ctx context.Context) (planner.Document, map[string]float64, error) {
		started := clk.Now()
		doc, assumed, err := replan.PlanContext(ctx, w, observed, rules, nodes, busy)
		doc.SearchSeconds = clk.Since(started).Seconds()
		return doc, assumed, err
	}, nil
}

// nodesNow is the pool as it is now, for a plan made now: the ready nodes,
// and those the plan in force has asked for and expects.
func (v *view) nodesNow(w planner.Workload) planner.PoolNow {
	requested, by := int(v.ready), 0.0
	if v.stored != nil {
		coming, comingBy := dispatch.Coming(v.stored.doc.Origin, v.stored.doc.Requests, v.stored.doc.Nodes, v.lead, v.now)
		requested, by = max(coming, requested), comingBy.Sub(v.now).Seconds()
	}
	return replan.NodesNow(w, int(v.ready), requested, by)
}

// progressOf is how far the query's launched steps have got.
func progressOf(launched launchedSteps) replan.Progress {
	p := replan.Progress{Batches: len(launched.batches), Partials: len(launched.partials)}
	if n := len(launched.batches); n > 0 {
		p.Tuples = launched.batches[n-1].step.ToTuple
		p.LastFrom = launched.batches[n-1].step.FromTuple
	}
	return p
}

func planMessage(doc *planner.Document, reason string) string {
	c := doc.Chosen
	if !c.Feasible {
		return fmt.Sprintf("Re-planned (%s): no plan meets every deadline; %s would be %.0fs late even on %d nodes", reason, c.Failure.Query, c.Failure.LateSeconds, c.InitialNodes)
	}
	return fmt.Sprintf("Re-planned (%s): %d initial nodes, %dX batches, cost %.2f, at most %d nodes", reason, c.InitialNodes, c.BatchSizeFactor, c.Cost, c.MaxNodes)
}
