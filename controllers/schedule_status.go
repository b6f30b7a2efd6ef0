package controllers

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/dispatch"
	"github.com/laxity-dev/laxity/internal/planner"
)

// writePlanStatus copies the plan in force into the status.
func writePlanStatus(es *laxityv1alpha1.ElasticSchedule, doc *planner.Document, now time.Time) {
	c := doc.Chosen
	es.Status.Chosen = &laxityv1alpha1.ChosenPlan{
		InitialNodes: int32(c.InitialNodes), BatchSizeFactor: int32(c.BatchSizeFactor),
		Cost: money(c.Cost), ExecutableCost: money(c.ExecutableCost), MaxNodes: int32(c.MaxNodes), Feasible: c.Feasible,
		Policy: laxityv1alpha1.PlanningPolicy(c.Policy), Lanes: int32(c.Lanes),
	}
	es.Status.Candidates = nil
	for _, cand := range doc.Candidates {
		pc := laxityv1alpha1.PlanCandidate{
			InitialNodes: int32(cand.InitialNodes), BatchSizeFactor: int32(cand.BatchSizeFactor), Feasible: cand.Feasible,
		}
		// The search does not price a candidate that misses a deadline: a
		// cost of 0 would read as the cheapest plan.
		if cand.Feasible {
			pc.Cost, pc.MaxNodes = money(cand.Cost), int32(cand.MaxNodes)
		}
		es.Status.Candidates = append(es.Status.Candidates, pc)
	}
	es.Status.Queries = nil
	for _, q := range doc.Queries {
		es.Status.Queries = append(es.Status.Queries, laxityv1alpha1.QueryPlan{
			Name: q.Name, BatchSize: q.BatchSize, Batches: int32(q.Batches),
			Finish: wholeSeconds(at(doc.Origin, q.Finish)), Deadline: wholeSeconds(at(doc.Origin, q.Deadline)),
			SlackSeconds: laxityv1alpha1.NewDecimal(q.Slack, 1),
		})
	}
	es.Status.NodeRequests = nil
	for _, p := range doc.Requests {
		if t := at(doc.Origin, p.At); !t.Before(now) {
			es.Status.NodeRequests = append(es.Status.NodeRequests, laxityv1alpha1.NodeRequest{At: wholeSeconds(t), Nodes: int32(p.Nodes)})
		}
	}
	es.Status.SearchSeconds = laxityv1alpha1.NewDecimal(doc.SearchSeconds, 3)
	es.Status.MaxSupportedRateFactor = laxityv1alpha1.NewDecimal(doc.MaxSupportedRateFactor, 2)
	origin := wholeSeconds(doc.Origin)
	es.Status.PlanOrigin = &origin
}

// wholeSeconds is t as the status can hold it: metav1.Time is serialized to
// the second, so a finer instant read back from the API server never equals
// the one just computed, and the status would be written on every pass.
func wholeSeconds(t time.Time) metav1.Time {
	return metav1.NewTime(t.Truncate(time.Second))
}

func money(v float64) laxityv1alpha1.Decimal { return laxityv1alpha1.NewDecimal(v, 4) }

// at is the instant seconds after origin, to the millisecond.
func at(origin time.Time, seconds float64) time.Time {
	return origin.Add(costmodel.Duration(seconds).Round(time.Millisecond))
}

// scheduleState is what the schedule's conditions are computed from.
type scheduleState struct {
	noQueries bool
	// invalid is why no plan could be made; invalidReason its condition
	// reason ("" means InvalidSpec).
	invalid          error
	invalidReason    string
	doc              *planner.Document
	requested, ready int32
	// backendErr is the pass's backend failure, if any.
	backendErr error
	// stuck describes the steps cancelled as stuck and waiting for their
	// retry, "" when there are none.
	stuck string
	// nodesLost says how the ready nodes fell in this pass (NodesLost),
	// "" when they did not.
	nodesLost string
	// due is how many nodes should be ready by now: those the plan asked
	// for at least a lead time (and overdueGrace) ago; see nodesDue.
	due int32
	// lead is the provisioning lead time the plan assumes.
	lead time.Duration
	// capped says how the pool sizes were lowered to a ceiling before
	// planning; overCeiling how this pass's write was lowered to one (""
	// for neither).
	capped, overCeiling string
	// overBudget says that the plan searches of the current specs run out
	// of their time budget and doc is the plan in force kept meanwhile;
	// "" when they do not.
	overBudget string
	// sharing says what the plan shares and what it leaves unshared and
	// why (sharingMessage); "" when the schedule declares no stream.
	sharing string
}

// sharingMessage is what the plan in force shares: how many of its
// batches are shared steps, and the notes of spec.WorkloadNotes (a stream
// without a scan model is not shared).
func sharingMessage(doc *planner.Document, notes []string) string {
	shared, members := 0, map[string]bool{}
	for _, s := range doc.Steps {
		if len(s.Members) > 0 {
			shared++
			for _, m := range s.Members {
				members[m] = true
			}
		}
	}
	var parts []string
	if shared > 0 {
		parts = append(parts, fmt.Sprintf("%d shared batches serve %d queries", shared, len(members)))
	}
	return strings.Join(append(parts, notes...), "; ")
}

// overdueGrace is how much longer than the lead time the plan assumes
// nodes may take before the schedule calls them overdue: a node's arrival
// is seen on the next pass, and a pool a few seconds slower than declared
// is not a problem anyone should be paged for.
const overdueGrace = 30 * time.Second

// nodesDue is how many nodes the plan asked for at least a lead time plus
// overdueGrace before now: the plan's request level at that instant, and 0
// when it is before the plan's first request (a plan made less than a lead
// time ago, whose nodes may all still be on their way). Nodes requested
// more recently are not due yet: the plan asks for them a lead time ahead
// of need, so a pool short of them is scaling up as planned.
func nodesDue(origin time.Time, requests []planner.NodeLevel, lead time.Duration, now time.Time) int32 {
	by := now.Add(-lead - overdueGrace)
	if len(requests) == 0 || by.Before(at(origin, requests[0].At)) {
		return 0
	}
	return int32(dispatch.RequestAt(origin, requests, by))
}

// setScheduleConditions computes Planned, Feasible, PoolReady, Ready and
// Stalled.
//
// Ready summarises, following the kstatus conventions GitOps tools read: it
// stays True while the pool scales up as planned (fewer nodes ready than
// requested, but none requested longer than a lead time ago), since that is
// the schedule working, not waiting; PoolReady says the pool is short. It
// turns False for what needs someone's attention or holds the work back:
// nodes overdue, nodes lost, a failing backend, a stuck step, and (with
// Stalled True) a spec that cannot be planned or no plan that meets every
// deadline.
func setScheduleConditions(es *laxityv1alpha1.ElasticSchedule, s scheduleState) {
	set := func(t string, status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&es.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: es.Generation})
	}
	stalled := func(reason, message string) {
		if reason == "" {
			meta.RemoveStatusCondition(&es.Status.Conditions, laxityv1alpha1.ElasticScheduleStalledCondition)
			return
		}
		set(laxityv1alpha1.ElasticScheduleStalledCondition, metav1.ConditionTrue, reason, message)
	}
	switch {
	case s.noQueries:
		set(laxityv1alpha1.ElasticSchedulePlannedCondition, metav1.ConditionFalse, laxityv1alpha1.NoQueriesReason, "No IntermittentQuery names this schedule")
		if s.backendErr != nil {
			set(laxityv1alpha1.ElasticSchedulePoolReadyCondition, metav1.ConditionFalse, laxityv1alpha1.BackendErrorReason, s.backendErr.Error())
			set(laxityv1alpha1.ElasticScheduleReadyCondition, metav1.ConditionFalse, laxityv1alpha1.BackendErrorReason, s.backendErr.Error())
		} else {
			meta.RemoveStatusCondition(&es.Status.Conditions, laxityv1alpha1.ElasticSchedulePoolReadyCondition)
			set(laxityv1alpha1.ElasticScheduleReadyCondition, metav1.ConditionTrue, laxityv1alpha1.NoQueriesReason, "Nothing to run; the pool is at its idle size")
		}
		stalled("", "")
		return
	case s.invalid != nil:
		reason := s.invalidReason
		if reason == "" {
			reason = laxityv1alpha1.InvalidSpecReason
		}
		set(laxityv1alpha1.ElasticSchedulePlannedCondition, metav1.ConditionFalse, reason, s.invalid.Error())
		set(laxityv1alpha1.ElasticScheduleReadyCondition, metav1.ConditionFalse, reason, s.invalid.Error())
		stalled(reason, s.invalid.Error())
		return
	}
	c := s.doc.Chosen
	planned := fmt.Sprintf("%d initial nodes, %dX batches, cost %.2f", c.InitialNodes, c.BatchSizeFactor, c.Cost)
	if s.capped != "" {
		planned += "; " + s.capped
	}
	if s.sharing != "" {
		planned += "; " + s.sharing
	}
	if s.overBudget != "" {
		set(laxityv1alpha1.ElasticSchedulePlannedCondition, metav1.ConditionFalse, laxityv1alpha1.SearchBudgetExceededReason, s.overBudget)
	} else {
		set(laxityv1alpha1.ElasticSchedulePlannedCondition, metav1.ConditionTrue, laxityv1alpha1.PlanFoundReason, planned)
	}
	poolReady := fmt.Sprintf("%d of %d requested nodes ready", s.ready, s.requested)
	// Nodes lost stay the reason the pool is not ready until it is again:
	// the condition keeps saying so on the passes that wait for them.
	waiting, waitingMessage := laxityv1alpha1.WaitingForNodesReason, poolReady
	if prev := meta.FindStatusCondition(es.Status.Conditions, laxityv1alpha1.ElasticSchedulePoolReadyCondition); s.nodesLost != "" {
		waiting, waitingMessage = laxityv1alpha1.NodesLostReason, s.nodesLost+"; "+poolReady
	} else if prev != nil && prev.Status == metav1.ConditionFalse && prev.Reason == laxityv1alpha1.NodesLostReason {
		waiting, waitingMessage = laxityv1alpha1.NodesLostReason, "Ready nodes were lost and are requested again: "+poolReady
	}
	// Overdue nodes outrank the rest: whatever the reason the pool is
	// short, nodes that should have come by now have not.
	if due := min(s.due, s.requested); s.ready < due {
		waiting, waitingMessage = laxityv1alpha1.NodesOverdueReason,
			fmt.Sprintf("%s; %d were asked for more than the %s lead time ago", poolReady, due, s.lead.Round(time.Second))
	}
	switch {
	case s.backendErr != nil:
		set(laxityv1alpha1.ElasticSchedulePoolReadyCondition, metav1.ConditionFalse, laxityv1alpha1.BackendErrorReason, s.backendErr.Error())
	case s.overCeiling != "":
		set(laxityv1alpha1.ElasticSchedulePoolReadyCondition, metav1.ConditionFalse, laxityv1alpha1.OverCeilingReason, s.overCeiling)
	case s.ready >= s.requested:
		set(laxityv1alpha1.ElasticSchedulePoolReadyCondition, metav1.ConditionTrue, laxityv1alpha1.NodesReadyReason, poolReady)
	default:
		set(laxityv1alpha1.ElasticSchedulePoolReadyCondition, metav1.ConditionFalse, waiting, waitingMessage)
	}
	if !c.Feasible {
		infeasible := fmt.Sprintf("%s would be %.0fs late even on %d nodes", c.Failure.Query, c.Failure.LateSeconds, c.InitialNodes)
		set(laxityv1alpha1.ElasticScheduleFeasibleCondition, metav1.ConditionFalse, laxityv1alpha1.NoFeasiblePlanReason, infeasible)
		set(laxityv1alpha1.ElasticScheduleReadyCondition, metav1.ConditionFalse, laxityv1alpha1.NoFeasiblePlanReason, "No plan meets every deadline")
		stalled(laxityv1alpha1.NoFeasiblePlanReason, "No plan meets every deadline: "+infeasible)
		return
	}
	set(laxityv1alpha1.ElasticScheduleFeasibleCondition, metav1.ConditionTrue, laxityv1alpha1.DeadlinesMetReason, "The plan meets every deadline")
	stalled("", "")
	switch {
	case s.backendErr != nil:
		set(laxityv1alpha1.ElasticScheduleReadyCondition, metav1.ConditionFalse, laxityv1alpha1.BackendErrorReason, s.backendErr.Error())
	case s.overCeiling != "":
		set(laxityv1alpha1.ElasticScheduleReadyCondition, metav1.ConditionFalse, laxityv1alpha1.OverCeilingReason, s.overCeiling)
	case s.stuck != "":
		set(laxityv1alpha1.ElasticScheduleReadyCondition, metav1.ConditionFalse, laxityv1alpha1.StepStuckReason, s.stuck)
	case s.overBudget != "":
		set(laxityv1alpha1.ElasticScheduleReadyCondition, metav1.ConditionFalse, laxityv1alpha1.SearchBudgetExceededReason, s.overBudget)
	case s.ready >= s.requested:
		set(laxityv1alpha1.ElasticScheduleReadyCondition, metav1.ConditionTrue, laxityv1alpha1.DeadlinesMetReason, "Planned and running")
	case waiting == laxityv1alpha1.WaitingForNodesReason:
		set(laxityv1alpha1.ElasticScheduleReadyCondition, metav1.ConditionTrue, laxityv1alpha1.ScalingUpReason,
			fmt.Sprintf("Scaling up as planned: %s, the rest requested less than the %s lead time ago", poolReady, s.lead.Round(time.Second)))
	default:
		set(laxityv1alpha1.ElasticScheduleReadyCondition, metav1.ConditionFalse, waiting, waitingMessage)
	}
}
