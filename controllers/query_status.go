package controllers

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/dispatch"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/internal/steprun"
)

// writeSteps records every step's latest attempt in the status.
func writeSteps(q *laxityv1alpha1.IntermittentQuery, batches, partials []observedStep, final *observedStep) {
	q.Status.Batches = nil
	processed := int64(0)
	for _, b := range batches {
		q.Status.Batches = append(q.Status.Batches, laxityv1alpha1.BatchStatus{
			Index: int32(b.step.Index), FromTuple: b.step.FromTuple, ToTuple: b.step.ToTuple, Nodes: b.step.Nodes,
			SparkApplication: b.name, Attempt: int32(b.step.Attempt),
			Start: metaTime(b.obs.Started), End: metaTime(b.obs.Ended), Outcome: b.obs.Phase, ResultLocation: b.result,
			Message: failure(b.obs), SharedWith: b.step.Members,
		})
		if b.obs.Phase == laxityv1alpha1.StepSucceeded {
			processed = b.step.ToTuple
		}
	}
	q.Status.ProcessedTuples = &processed
	q.Status.Partials = nil
	for _, p := range partials {
		q.Status.Partials = append(q.Status.Partials, laxityv1alpha1.PartialStatus{
			Index: int32(p.step.Index), Inputs: int32(p.step.Inputs), Nodes: p.step.Nodes, SparkApplication: p.name, Attempt: int32(p.step.Attempt),
			Start: metaTime(p.obs.Started), End: metaTime(p.obs.Ended), Outcome: p.obs.Phase, ResultLocation: p.result,
			Message: failure(p.obs),
		})
	}
	q.Status.Final = nil
	if final != nil {
		q.Status.Final = &laxityv1alpha1.FinalStatus{
			Inputs: int32(final.step.Inputs), Nodes: final.step.Nodes, SparkApplication: final.name, Attempt: int32(final.step.Attempt),
			Start: metaTime(final.obs.Started), End: metaTime(final.obs.Ended), Outcome: final.obs.Phase, ResultLocation: final.result,
			Message: failure(final.obs),
		}
	}
}

// failure is why a failed step failed, cut to what the status keeps.
func failure(o sparkapp.Observation) string {
	if o.Phase != laxityv1alpha1.StepFailed {
		return ""
	}
	const most = 4096
	if len(o.Message) <= most {
		return o.Message
	}
	return strings.ToValidUTF8(o.Message[:most-3], "") + "..."
}

func metaTime(t *time.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	return &metav1.Time{Time: *t}
}

// dampedSlack is the slack to show: the previous value while the new one is
// within slackResolution of it and on the same side of zero, else the new
// one in whole seconds.
func dampedSlack(previous laxityv1alpha1.Decimal, slack time.Duration) laxityv1alpha1.Decimal {
	if old, err := previous.Float64(); err == nil {
		delta := costmodel.Duration(slack.Seconds() - old)
		if delta.Abs() < slackResolution && (old < 0) == (slack < 0) {
			return previous
		}
	}
	return laxityv1alpha1.Decimal(strconv.FormatInt(int64(slack.Seconds()), 10))
}

// shownSlack is the damped slack of the status, for condition messages: the
// exact slack would change them, and so write the status, every second.
func shownSlack(q *laxityv1alpha1.IntermittentQuery) time.Duration {
	seconds, _ := q.Status.SlackSeconds.Float64()
	return costmodel.Duration(seconds)
}

// queryState is what a query's conditions are computed from.
type queryState struct {
	now        time.Time
	noSchedule bool
	planned    bool
	slack      *time.Duration
	// failedOut says which step failed on its last allowed attempt; "" when
	// none did.
	failedOut string
	// plannedLate is how late the plan in force finishes the query.
	plannedLate time.Duration
	// inputErr is why the query's input could not be read, if it could not.
	inputErr error
	// refused is why the schedule does not run the query (its namespace's
	// grants, or a template that cannot become a step), with its reason.
	refused       error
	refusedReason string
}

// plannedLate is how late the plan in force finishes the query, 0 when it
// finishes in time. Only an infeasible plan (the least late candidate, on
// the largest pool size) finishes a query late. The run-time slack cannot
// tell: before the window closes it counts the remaining batches as if their
// tuples were there, so a query no pool size can finish in time showed
// OnTrack next to a schedule that said Feasible=False and named it.
func plannedLate(doc *planner.Document, query string) time.Duration {
	if doc.Chosen.Feasible {
		return 0
	}
	for _, p := range doc.Queries {
		if p.Name == query && p.Slack < 0 {
			return costmodel.Duration(-p.Slack)
		}
	}
	return 0
}

// failedOut describes the step of q whose latest attempt failed with no
// attempt left, or is "" when there is none. The schedule makes at most
// maxAttempts tries of a step (dispatch.Attempt.LastAllowed; attempts
// passed over for a taken name are not tries) and then launches nothing
// more of the query, so its
// slack, which models only the work left, would keep it OnTrack until the
// deadline passed.
func failedOut(q *laxityv1alpha1.IntermittentQuery, maxAttempts int) string {
	return failedOutTaken(q, maxAttempts, nil)
}

// failedOutTaken is failedOut where taken[name] is how many attempt numbers
// the step whose latest attempt is name passed over because their names
// were taken: those are not tries.
func failedOutTaken(q *laxityv1alpha1.IntermittentQuery, maxAttempts int, taken map[string]int) string {
	var app string
	out := func(attempt int32, outcome laxityv1alpha1.StepOutcome) bool {
		return outcome == laxityv1alpha1.StepFailed &&
			dispatch.FailedOut(dispatch.Attempt{State: dispatch.Failed, Number: int(attempt), NamesTaken: taken[app]}, maxAttempts)
	}
	describe := func(step, app string, attempt int32, message string) string {
		s := fmt.Sprintf("%s failed on all %d attempts, the last as %s", step, attempt+1, app)
		if message != "" {
			s += " (" + message + ")"
		}
		return s + "; no further attempt will be made, so the query cannot finish"
	}
	for _, b := range q.Status.Batches {
		if app = b.SparkApplication; out(b.Attempt, b.Outcome) {
			return describe(fmt.Sprintf("Batch %d", b.Index), b.SparkApplication, b.Attempt, b.Message)
		}
	}
	for _, p := range q.Status.Partials {
		if app = p.SparkApplication; out(p.Attempt, p.Outcome) {
			return describe(fmt.Sprintf("Partial merge %d", p.Index), p.SparkApplication, p.Attempt, p.Message)
		}
	}
	if f := q.Status.Final; f != nil {
		app = f.SparkApplication
	}
	if f := q.Status.Final; f != nil && out(f.Attempt, f.Outcome) {
		return describe("The final merge", f.SparkApplication, f.Attempt, f.Message)
	}
	return ""
}

// setQueryConditions computes OnTrack, DeadlineMissed, Succeeded, Stalled
// and Ready (whose reason is the query's state at a glance) from the status
// and the slack.
func setQueryConditions(q *laxityv1alpha1.IntermittentQuery, s queryState) {
	set := func(t string, status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&q.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: q.Generation})
	}
	// summary sets the conditions that say where the query stands: Ready,
	// OnTrack when given a reason (True for SlackPositive, False for any
	// other), and Stalled when given a reason.
	summary := func(ready metav1.ConditionStatus, readyReason, onTrack, stalled, message string) {
		set(laxityv1alpha1.IntermittentQueryReadyCondition, ready, readyReason, message)
		switch onTrack {
		case "":
		case laxityv1alpha1.SlackPositiveReason:
			set(laxityv1alpha1.IntermittentQueryOnTrackCondition, metav1.ConditionTrue, onTrack, message)
		default:
			set(laxityv1alpha1.IntermittentQueryOnTrackCondition, metav1.ConditionFalse, onTrack, message)
		}
		if stalled == "" {
			meta.RemoveStatusCondition(&q.Status.Conditions, laxityv1alpha1.IntermittentQueryStalledCondition)
		} else {
			set(laxityv1alpha1.IntermittentQueryStalledCondition, metav1.ConditionTrue, stalled, message)
		}
	}
	final := q.Status.Final
	succeeded := final != nil && final.Outcome == laxityv1alpha1.StepSucceeded
	deadline := q.Spec.Deadline.Time
	missed := (succeeded && final.End != nil && final.End.After(deadline)) || (!succeeded && s.now.After(deadline))
	if s.slack != nil {
		q.Status.SlackSeconds = dampedSlack(q.Status.SlackSeconds, *s.slack)
	}
	switch {
	case s.noSchedule:
		summary(metav1.ConditionFalse, laxityv1alpha1.ScheduleNotFoundReason, "", "",
			fmt.Sprintf("ElasticSchedule %q not found in namespace %s", q.Spec.ScheduleName, q.Namespace))
		return
	case s.refused != nil && !succeeded:
		summary(metav1.ConditionFalse, s.refusedReason, "", s.refusedReason, s.refused.Error())
		return
	case !s.planned:
		summary(metav1.ConditionFalse, laxityv1alpha1.WaitingForPlanReason, "", "", "The schedule has not planned this query yet")
		return
	}
	if missed {
		set(laxityv1alpha1.IntermittentQueryDeadlineMissedCondition, metav1.ConditionTrue, laxityv1alpha1.DeadlinePassedReason,
			fmt.Sprintf("The deadline %s passed before the final merge succeeded", deadline.UTC().Format(time.RFC3339)))
	} else {
		set(laxityv1alpha1.IntermittentQueryDeadlineMissedCondition, metav1.ConditionFalse, laxityv1alpha1.SlackPositiveReason, "The deadline has not been missed")
	}
	if succeeded {
		message := fmt.Sprintf("Final result at %s", final.ResultLocation)
		// Tuples that arrived after the last batch (files uploaded later
		// than the lateness the window allows) are not in the result: say
		// so where the result is announced.
		if left := ptr.Deref(q.Status.ArrivedTuples, 0) - ptr.Deref(q.Status.ProcessedTuples, 0); left > 0 {
			message += fmt.Sprintf("; %d tuples arrived after the last batch, later than the window allows, and are not in it", left)
		}
		set(laxityv1alpha1.IntermittentQuerySucceededCondition, metav1.ConditionTrue, laxityv1alpha1.FinalMergeSucceededReason, message)
		onTrack := metav1.ConditionTrue
		if missed {
			onTrack = metav1.ConditionFalse
		}
		set(laxityv1alpha1.IntermittentQueryOnTrackCondition, onTrack, laxityv1alpha1.FinalMergeSucceededReason, "Finished")
		// Finished, late or not: nothing is left to progress.
		summary(metav1.ConditionTrue, laxityv1alpha1.FinalMergeSucceededReason, "", "", "Finished")
		return
	}
	set(laxityv1alpha1.IntermittentQuerySucceededCondition, metav1.ConditionFalse, "InProgress", "The final merge has not succeeded yet")
	switch {
	case s.inputErr != nil:
		summary(metav1.ConditionFalse, laxityv1alpha1.InputUnavailableReason, "", "", s.inputErr.Error())
	case s.failedOut != "":
		r := laxityv1alpha1.StepFailedReason
		summary(metav1.ConditionFalse, r, r, r, s.failedOut)
	case missed:
		summary(metav1.ConditionFalse, laxityv1alpha1.AtRiskReason, laxityv1alpha1.SlackNegativeReason, laxityv1alpha1.DeadlinePassedReason, "The deadline has passed")
	case s.plannedLate > 0:
		r := laxityv1alpha1.NoFeasiblePlanReason
		summary(metav1.ConditionFalse, r, r, r,
			fmt.Sprintf("No plan meets the deadline: the least late one finishes the query %.0fs after it", s.plannedLate.Seconds()))
	case s.slack != nil && *s.slack >= 0:
		summary(metav1.ConditionTrue, laxityv1alpha1.OnTrackReason, laxityv1alpha1.SlackPositiveReason, "", fmt.Sprintf("Slack %s", shownSlack(q)))
	default:
		// Negative slack may still recover (a re-plan, faster batches):
		// at risk, not stalled.
		summary(metav1.ConditionFalse, laxityv1alpha1.AtRiskReason, laxityv1alpha1.SlackNegativeReason, "",
			fmt.Sprintf("Slack %s: the query would finish late even on the plan's largest pool", shownSlack(q)))
	}
}

// namesTaken is, by the name of each step's latest attempt, how many
// attempt numbers it passed over because their names were taken.
func namesTaken(launched launchedSteps) map[string]int {
	out := map[string]int{}
	for _, s := range launched.all() {
		if s.step.NamesTaken > 0 {
			out[s.name] = s.step.NamesTaken
		}
	}
	return out
}

// setForeignCondition sets or removes the ForeignSteps condition.
func setForeignCondition(q *laxityv1alpha1.IntermittentQuery, foreign []steprun.Step, launched launchedSteps) {
	var named []string
	for _, o := range foreign {
		named = append(named, o.Describe())
	}
	sort.Strings(named)
	var taken []string
	for _, s := range launched.all() {
		if s.step.NamesTaken > 0 {
			taken = append(taken, fmt.Sprintf("%s: %d attempt name(s) taken by objects the query does not own, runs as %s", stepTitle(s.step.Kind, s.step.Index), s.step.NamesTaken, s.name))
		}
	}
	cut := func(items []string) string {
		if len(items) > mostNamed {
			return strings.Join(items[:mostNamed], ", ") + fmt.Sprintf(" and %d more", len(items)-mostNamed)
		}
		return strings.Join(items, ", ")
	}
	var reason string
	var parts []string
	if len(named) > 0 {
		reason = laxityv1alpha1.ForeignStepReason
		parts = append(parts, "Not owned by this query, so ignored (never run, counted or merged): "+cut(named))
	}
	if len(taken) > 0 {
		if reason == "" {
			reason = laxityv1alpha1.StepNameTakenReason
		}
		parts = append(parts, "Step names taken: "+cut(taken))
	}
	if reason == "" {
		meta.RemoveStatusCondition(&q.Status.Conditions, IntermittentQueryForeignStepsCondition)
		return
	}
	meta.SetStatusCondition(&q.Status.Conditions, metav1.Condition{
		Type: IntermittentQueryForeignStepsCondition, Status: metav1.ConditionTrue, Reason: reason,
		Message: strings.Join(parts, "; "), ObservedGeneration: q.Generation,
	})
}

// slackResolution is how far the slack must move before the status shows
// it: the slack of a waiting query shrinks by a second every second, and
// writing each second's value would turn every query into a stream of
// status writes.
const slackResolution = time.Minute

// IntermittentQueryForeignStepsCondition is True, and present only then,
// while objects that are not the query's own steps claim to be: objects
// carrying its step labels that it does not own (reason ForeignStep), or
// objects holding the name of one of its steps, which then ran under
// another attempt's name (reason StepNameTaken). The message names them.
// laxity ignores such objects; the condition is there for someone to look.
const IntermittentQueryForeignStepsCondition = "ForeignSteps"

// mostNamed bounds the objects a condition message names.
const mostNamed = 5
