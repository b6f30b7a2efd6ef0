package controllers

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/planner"
)

// Reasons of the events an IntermittentQuery records, each once per fact.
const (
	// ReasonLaunched is a step of the query's that started: a batch or a
	// merge SparkApplication (or job run) the status records for the first
	// time.
	ReasonLaunched = "Launched"
	// ReasonRetried is a failed step started again under its next
	// attempt's name.
	ReasonRetried = "Retried"
	// ReasonFailedOut is a step that failed on its last allowed attempt:
	// nothing more of the query runs.
	ReasonFailedOut = "FailedOut"
	// ReasonAtRisk is a query that turned from on track to expected late.
	ReasonAtRisk = "AtRisk"
	// ReasonDeadlineMissed is a query whose deadline passed before its
	// final merge succeeded, or whose final merge ended after it.
	ReasonDeadlineMissed = "DeadlineMissed"
	// ReasonSucceeded is a query whose final merge succeeded.
	ReasonSucceeded = "Succeeded"
)

// queryEvent is an event of a query and the fact it announces: key names
// the fact, so that the process can tell a fact it has announced already.
type queryEvent struct {
	key string
	note
}

// queryEvents are the events of what the query's status records for the
// first time in after, against before: steps launched or retried, a step
// failed out, the query at risk, its deadline missed, its result. They come
// from transitions only, so recomputing after from itself yields none.
// recovered is true when after shows the query back on track, which lets
// a later turn to at risk be announced again.
func queryEvents(q *laxityv1alpha1.IntermittentQuery, before, after *laxityv1alpha1.IntermittentQueryStatus) (evs []queryEvent, recovered bool) {
	add := func(key, kind, reason, action, message string) {
		evs = append(evs, queryEvent{key: key, note: note{kind: kind, reason: reason, action: action, message: message}})
	}
	old := map[stepKey]stepView{}
	for _, s := range stepViews(before) {
		old[stepKey{s.kind, s.index}] = s
	}
	for _, s := range stepViews(after) {
		key := fmt.Sprintf("%s/%s/%d/%d", ReasonLaunched, s.kind, s.index, s.attempt)
		prev, seen := old[stepKey{s.kind, s.index}]
		switch {
		case seen && prev.attempt >= s.attempt:
		case seen:
			// A step is launched again only after an attempt failed (an
			// attempt whose name was taken never ran): the failure may not
			// have been seen before the retry was.
			message := fmt.Sprintf("%s retried as %s (attempt %d) on %d nodes%s after %s failed", s.title(), s.app, s.attempt+1, s.nodes, s.tuples(), prev.app)
			if prev.outcome == laxityv1alpha1.StepFailed && prev.message != "" {
				message += ": " + prev.message
			}
			add(key, corev1.EventTypeNormal, ReasonRetried, "Launch", message)
		default:
			add(key, corev1.EventTypeNormal, ReasonLaunched, "Launch", fmt.Sprintf("%s launched as %s on %d nodes%s", s.title(), s.app, s.nodes, s.tuples()))
		}
	}
	if message, out := failedOutMessage(after); out {
		if _, was := failedOutMessage(before); !was {
			add(ReasonFailedOut, corev1.EventTypeWarning, ReasonFailedOut, "Launch", message)
		}
	}
	if risk, message := atRisk(after); risk && !wasAtRisk(before) {
		add(ReasonAtRisk, corev1.EventTypeWarning, ReasonAtRisk, "Track", message)
	}
	recovered = onTrack(after)
	if deadlineMissDecided(q, after) && !deadlineMissDecided(q, before) {
		message := meta.FindStatusCondition(after.Conditions, laxityv1alpha1.IntermittentQueryDeadlineMissedCondition).Message
		if f := after.Final; f != nil && f.Outcome == laxityv1alpha1.StepSucceeded && f.End != nil {
			message = fmt.Sprintf("The final merge ended at %s, %s after the deadline", f.End.UTC().Format(time.RFC3339), f.End.Sub(q.Spec.Deadline.Time).Round(time.Second))
		}
		add(ReasonDeadlineMissed, corev1.EventTypeWarning, ReasonDeadlineMissed, "Track", message)
	}
	if succeeded(after) && !succeeded(before) {
		message := meta.FindStatusCondition(after.Conditions, laxityv1alpha1.IntermittentQuerySucceededCondition).Message
		add(ReasonSucceeded, corev1.EventTypeNormal, ReasonSucceeded, "Merge", "The final merge "+after.Final.SparkApplication+" succeeded. "+message)
	}
	return evs, recovered
}

// failedOutMessage says whether the status shows a step failed on its last
// attempt (Stalled with reason StepFailed), and the condition's message,
// which names the step.
func failedOutMessage(s *laxityv1alpha1.IntermittentQueryStatus) (string, bool) {
	if s == nil {
		return "", false
	}
	c := meta.FindStatusCondition(s.Conditions, laxityv1alpha1.IntermittentQueryStalledCondition)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != laxityv1alpha1.StepFailedReason {
		return "", false
	}
	return c.Message, true
}

// atRisk says whether the status shows the query expected late before its
// deadline, with no step failed out (which FailedOut announces), and why.
func atRisk(s *laxityv1alpha1.IntermittentQueryStatus) (bool, string) {
	if s == nil || meta.IsStatusConditionTrue(s.Conditions, laxityv1alpha1.IntermittentQueryDeadlineMissedCondition) {
		return false, ""
	}
	c := meta.FindStatusCondition(s.Conditions, laxityv1alpha1.IntermittentQueryOnTrackCondition)
	if c == nil || c.Status != metav1.ConditionFalse || (c.Reason != laxityv1alpha1.SlackNegativeReason && c.Reason != laxityv1alpha1.NoFeasiblePlanReason) {
		return false, ""
	}
	return true, c.Message
}

// wasAtRisk says whether the status showed the query off track in any
// way: a query going from one kind of trouble to another is not newly at
// risk.
func wasAtRisk(s *laxityv1alpha1.IntermittentQueryStatus) bool {
	return s != nil && meta.IsStatusConditionFalse(s.Conditions, laxityv1alpha1.IntermittentQueryOnTrackCondition)
}

func onTrack(s *laxityv1alpha1.IntermittentQueryStatus) bool {
	return s != nil && meta.IsStatusConditionTrue(s.Conditions, laxityv1alpha1.IntermittentQueryOnTrackCondition)
}

func succeeded(s *laxityv1alpha1.IntermittentQueryStatus) bool {
	return s != nil && s.Final != nil && s.Final.Outcome == laxityv1alpha1.StepSucceeded
}

// stepView is a step's latest attempt as the status records it, with what
// an event says about it.
type stepView struct {
	kind          planner.StepKind
	index         int32
	app           string
	attempt       int32
	nodes         int32
	outcome       laxityv1alpha1.StepOutcome
	message       string
	batch         bool
	fromTuple, to int64
}

func (s stepView) title() string { return stepTitle(s.kind, int(s.index)) }

func (s stepView) tuples() string {
	if !s.batch {
		return ""
	}
	return " (tuples [" + strconv.FormatInt(s.fromTuple, 10) + ", " + strconv.FormatInt(s.to, 10) + "))"
}

func stepViews(s *laxityv1alpha1.IntermittentQueryStatus) []stepView {
	if s == nil {
		return nil
	}
	var out []stepView
	for _, b := range s.Batches {
		out = append(out, stepView{kind: planner.StepBatch, index: b.Index, app: b.SparkApplication, attempt: b.Attempt, nodes: b.Nodes,
			outcome: b.Outcome, message: b.Message, batch: true, fromTuple: b.FromTuple, to: b.ToTuple})
	}
	for _, p := range s.Partials {
		out = append(out, stepView{kind: planner.StepPartial, index: p.Index, app: p.SparkApplication, attempt: p.Attempt, nodes: p.Nodes,
			outcome: p.Outcome, message: p.Message})
	}
	if f := s.Final; f != nil {
		out = append(out, stepView{kind: planner.StepFinal, app: f.SparkApplication, attempt: f.Attempt, nodes: f.Nodes,
			outcome: f.Outcome, message: f.Message})
	}
	return out
}

// announceQueryEvents is the events to emit for what a status write of the
// query recorded for the first time, on the two guards that count a
// transition once (see recordQueryTransitions): the transition from the
// status the reconcile read to the one it wrote, once that write has
// succeeded, and the process's memory of the facts it announced, which a
// reconcile from a stale cached status would announce again.
func announceQueryEvents(q *laxityv1alpha1.IntermittentQuery, before, after *laxityv1alpha1.IntermittentQueryStatus) []note {
	evs, recovered := queryEvents(q, before, after)
	counted.Lock()
	defer counted.Unlock()
	mem := countedFor(q)
	if recovered {
		// Back on track: a later turn to at risk is a new fact.
		delete(mem.announced, ReasonAtRisk)
	}
	var out []note
	for _, e := range evs {
		if !mem.announced[e.key] {
			mem.announced[e.key] = true
			out = append(out, e.note)
		}
	}
	return out
}
