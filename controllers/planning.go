package controllers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/pass"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/replan"
	"github.com/laxity-dev/laxity/internal/spec"
)

// Re-plan reasons, recorded on the plan and counted in metrics (see
// internal/pass, which decides them).
const (
	ReplanInitial      = pass.Initial
	ReplanSpecChanged  = pass.SpecChanged
	ReplanRateExceeded = pass.RateExceeded
	ReplanRateFellBack = pass.RateFellBack
	ReplanStepFailed   = pass.StepFailed
	ReplanNodesLost    = pass.NodesLost
	ReplanModelLearned = pass.ModelLearned
	ReplanRunningSlow  = pass.RunningSlow
)

// replanning is why the pass re-plans ("" when the plan in force holds)
// and, when the reason is lost nodes, what the PoolReady condition says
// about them.
type replanning struct {
	reason    string
	nodesLost string
}

// judge says whether the plan in force still holds (pass.Judge), and
// tells why it does not in the log and, for what was learned and for lost
// nodes, in an event.
func (r *ElasticScheduleReconciler) judge(ctx context.Context, v *view, p *passResult) (replanning, error) {
	verdict, err := pass.Judge(v.snapshot(r.Options))
	if err != nil {
		return replanning{}, v.notPlannable(err)
	}
	logger := log.FromContext(ctx)
	switch verdict.Reason {
	case "":
		logger.V(1).Info("the plan in force holds", "planReason", v.stored.reason, "readyNodes", v.ready)
		return replanning{}, nil
	case ReplanModelLearned, ReplanRunningSlow:
		message := learnedMessage(v, verdict)
		logger.Info("re-planning", "reason", verdict.Reason, "change", message)
		p.note(corev1.EventTypeNormal, laxityv1alpha1.ModelLearnedReason, "Replan", message)
	case ReplanNodesLost:
		l := verdict.Lost
		message := fmt.Sprintf("Ready nodes fell from %d to %d, below the %d the work in progress needs and the %d the plan expects ready now: re-planning from the %d there and requesting the nodes again",
			l.From, l.To, l.Need, l.Expected, l.To)
		logger.Info("nodes lost", "from", l.From, "to", l.To, "need", l.Need, "expected", l.Expected)
		p.note(corev1.EventTypeWarning, laxityv1alpha1.NodesLostReason, "Replan", message)
		return replanning{reason: verdict.Reason, nodesLost: message}, nil
	default:
		logger.V(1).Info("re-planning", "reason", verdict.Reason, "exhausted", verdict.Exhausted)
	}
	return replanning{reason: verdict.Reason}, nil
}

// notPlannable is err, the error of a pass decision, with what made a
// query's spec unplannable when that is what it says.
func (v *view) notPlannable(err error) error {
	var np *pass.NotPlannable
	if errors.As(err, &np) {
		return fmt.Errorf("IntermittentQuery %s: %w", np.Query, v.workloadErr)
	}
	return err
}

// learnedMessage says what was learned and what it does to the plan in
// force, for the ModelLearned event.
func learnedMessage(v *view, verdict pass.Verdict) string {
	l := verdict.Learned
	switch {
	case l.Query == "":
		return fmt.Sprintf("The pool's measured provisioning lead time is %s; the plan in force assumed %s: re-planning",
			costmodel.Duration(l.Lead), costmodel.Duration(l.PlannedLead))
	case verdict.Reason == ReplanRunningSlow:
		return fmt.Sprintf("%s; at that slowdown the work left would make %s late even on %d nodes: re-planning the rest of the window",
			changeMessage(v, l.Query, l.Change), strings.Join(l.Unsafe, ", "), l.Nodes)
	}
	return changeMessage(v, l.Query, l.Change) + ": re-planning"
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
		recordSearchBudgetExceeded(es)
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
	stored := &storedPlan{doc: doc, inputs: v.inputsHash, reason: reason, rates: res.assumed, models: pass.ModelsOf(v.workload), arrivals: pass.ArrivalsOf(v.snapshot(r.Options))}
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

// searchFor is the pass's plan search from now (replan.PlanContext), from
// what pass.Search says a search starts from: the observed progress of every
// unfinished query, the rates the rate model assumes, the nodes ready now.
// It returns, with the plan, the rates so assumed, by query, which the
// plan's maximum supported rate is relative to. What it plans from is fixed
// when it is made, so that it can run after the pass (SearchLane).
func (r *ElasticScheduleReconciler) searchFor(v *view) (search, error) {
	if v.workloadErr != nil {
		return nil, v.workloadErr
	}
	in := pass.Search(v.snapshot(r.Options))
	in.Workload.Planning.MaxSteps = r.Options.MaxPlanSteps
	rules, clk := spec.RateRules(v.es), r.Clock
	return func(ctx context.Context) (planner.Document, map[string]float64, error) {
		started := clk.Now()
		doc, assumed, err := replan.PlanContext(ctx, in.Workload, in.Observed, rules, in.Nodes)
		doc.SearchSeconds = clk.Since(started).Seconds()
		return doc, assumed, err
	}, nil
}

func planMessage(doc *planner.Document, reason string) string {
	c := doc.Chosen
	if !c.Feasible {
		return fmt.Sprintf("Re-planned (%s): no plan meets every deadline; %s would be %.0fs late even on %d nodes", reason, c.Failure.Query, c.Failure.LateSeconds, c.InitialNodes)
	}
	return fmt.Sprintf("Re-planned (%s): %d initial nodes, %dX batches, cost %.2f, at most %d nodes", reason, c.InitialNodes, c.BatchSizeFactor, c.Cost, c.MaxNodes)
}
