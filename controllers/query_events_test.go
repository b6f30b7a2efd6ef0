package controllers

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
)

func TestQueryEvents(t *testing.T) {
	deadline := origin.Add(time.Hour)
	q := &laxityv1alpha1.IntermittentQuery{
		ObjectMeta: metav1.ObjectMeta{Name: "q1", Namespace: "analytics"},
		Spec:       laxityv1alpha1.IntermittentQuerySpec{ScheduleName: "tpch", Deadline: metav1.NewTime(deadline)},
	}
	cond := func(t, s, reason, message string) metav1.Condition {
		return metav1.Condition{Type: t, Status: metav1.ConditionStatus(s), Reason: reason, Message: message}
	}
	batch := func(index, attempt int32, outcome laxityv1alpha1.StepOutcome, message string) laxityv1alpha1.BatchStatus {
		return laxityv1alpha1.BatchStatus{Index: index, FromTuple: int64(index) * 100, ToTuple: int64(index+1) * 100, Nodes: 2,
			SparkApplication: fmt.Sprintf("q1-b%d-r%d", index, attempt), Attempt: attempt, Outcome: outcome, Message: message}
	}
	onTrack := cond("OnTrack", "True", "SlackPositive", "Slack 2m")
	status := func(conditions []metav1.Condition, batches ...laxityv1alpha1.BatchStatus) *laxityv1alpha1.IntermittentQueryStatus {
		return &laxityv1alpha1.IntermittentQueryStatus{Conditions: conditions, Batches: batches}
	}
	final := func(outcome laxityv1alpha1.StepOutcome, end time.Time) *laxityv1alpha1.IntermittentQueryStatus {
		s := status([]metav1.Condition{
			cond("OnTrack", "True", "FinalMergeSucceeded", "Finished"),
			cond("Succeeded", "True", "FinalMergeSucceeded", "Final result at s3://out/q1"),
			cond("DeadlineMissed", "False", "SlackPositive", ""),
		}, batch(0, 0, laxityv1alpha1.StepSucceeded, ""))
		if end.After(deadline) {
			s.Conditions[0].Status = metav1.ConditionFalse
			s.Conditions[2] = cond("DeadlineMissed", "True", "DeadlinePassed", "The deadline passed before the final merge succeeded")
		}
		s.Final = &laxityv1alpha1.FinalStatus{SparkApplication: "q1-final-r0", Nodes: 1, Outcome: outcome, End: &metav1.Time{Time: end}, ResultLocation: "s3://out/q1"}
		return s
	}
	running := final(laxityv1alpha1.StepRunning, deadline.Add(-time.Minute))
	running.Final.End = nil
	running.Conditions = []metav1.Condition{onTrack}

	tests := []struct {
		name          string
		before, after *laxityv1alpha1.IntermittentQueryStatus
		want          []note
		recovered     bool
	}{
		{
			name:      "a first batch",
			after:     status([]metav1.Condition{onTrack}, batch(0, 0, laxityv1alpha1.StepRunning, "")),
			want:      []note{{"Normal", ReasonLaunched, "Launch", "Batch 0 launched as q1-b0-r0 on 2 nodes (tuples [0, 100))"}},
			recovered: true,
		},
		{
			name:      "the same status again: nothing new",
			before:    status([]metav1.Condition{onTrack}, batch(0, 0, laxityv1alpha1.StepRunning, "")),
			after:     status([]metav1.Condition{onTrack}, batch(0, 0, laxityv1alpha1.StepRunning, "")),
			recovered: true,
		},
		{
			name:   "a failed batch retried, the failure quoted",
			before: status([]metav1.Condition{onTrack}, batch(0, 0, laxityv1alpha1.StepFailed, "executor lost")),
			after:  status([]metav1.Condition{onTrack}, batch(0, 1, laxityv1alpha1.StepPending, "")),
			want: []note{{"Normal", ReasonRetried, "Launch",
				"Batch 0 retried as q1-b0-r1 (attempt 2) on 2 nodes (tuples [0, 100)) after q1-b0-r0 failed: executor lost"}},
			recovered: true,
		},
		{
			name:   "a step failed on its last attempt",
			before: status([]metav1.Condition{onTrack}, batch(0, 2, laxityv1alpha1.StepRunning, "")),
			after: status([]metav1.Condition{
				cond("OnTrack", "False", "StepFailed", "Batch 0 failed on all 3 attempts, the last as q1-b0-r2"),
				cond("Stalled", "True", "StepFailed", "Batch 0 failed on all 3 attempts, the last as q1-b0-r2"),
			}, batch(0, 2, laxityv1alpha1.StepFailed, "OOM")),
			want: []note{{"Warning", ReasonFailedOut, "Launch", "Batch 0 failed on all 3 attempts, the last as q1-b0-r2"}},
		},
		{
			name:   "turned at risk",
			before: status([]metav1.Condition{onTrack}),
			after:  status([]metav1.Condition{cond("OnTrack", "False", "SlackNegative", "Slack -30s: the query would finish late")}),
			want:   []note{{"Warning", ReasonAtRisk, "Track", "Slack -30s: the query would finish late"}},
		},
		{
			name:   "from one trouble to another is not newly at risk",
			before: status([]metav1.Condition{cond("OnTrack", "False", "NoFeasiblePlan", "No plan meets the deadline")}),
			after:  status([]metav1.Condition{cond("OnTrack", "False", "SlackNegative", "Slack -30s")}),
		},
		{
			name:   "the deadline passed without a result",
			before: status([]metav1.Condition{cond("OnTrack", "False", "SlackNegative", "Slack -30s"), cond("DeadlineMissed", "False", "SlackPositive", "")}),
			after: status([]metav1.Condition{cond("OnTrack", "False", "SlackNegative", "The deadline has passed"),
				cond("DeadlineMissed", "True", "DeadlinePassed", "The deadline 2026-01-01T01:00:00Z passed before the final merge succeeded")}),
			want: []note{{"Warning", ReasonDeadlineMissed, "Track", "The deadline 2026-01-01T01:00:00Z passed before the final merge succeeded"}},
		},
		{
			name:   "the final merge succeeded in time",
			before: running,
			after:  final(laxityv1alpha1.StepSucceeded, deadline.Add(-time.Minute)),
			want: []note{{"Normal", ReasonSucceeded, "Merge",
				"The final merge q1-final-r0 succeeded. Final result at s3://out/q1"}},
			recovered: true,
		},
		{
			name:   "the final merge succeeded late: both facts",
			before: running,
			after:  final(laxityv1alpha1.StepSucceeded, deadline.Add(90*time.Second)),
			want: []note{
				{"Warning", ReasonDeadlineMissed, "Track", "The final merge ended at " + deadline.Add(90*time.Second).UTC().Format(time.RFC3339) + ", 1m30s after the deadline"},
				{"Normal", ReasonSucceeded, "Merge", "The final merge q1-final-r0 succeeded. Final result at s3://out/q1"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			evs, recovered := queryEvents(q, tc.before, tc.after)
			var got []note
			for _, e := range evs {
				got = append(got, e.note)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(note{})); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if recovered != tc.recovered {
				t.Errorf("recovered %v, want %v", recovered, tc.recovered)
			}
			if again, _ := queryEvents(q, tc.after, tc.after); len(again) != 0 {
				t.Errorf("the status against itself gave events: %+v", again)
			}
		})
	}
}

// A reconcile that starts from a stale cached status writes a transition
// again: the process announces it once; a query back on track can be at
// risk again, which is announced again.
func TestAnnounceQueryEventsOnce(t *testing.T) {
	q := &laxityv1alpha1.IntermittentQuery{ObjectMeta: metav1.ObjectMeta{Name: "once", Namespace: "analytics", UID: types.UID("u1")},
		Spec: laxityv1alpha1.IntermittentQuerySpec{Deadline: metav1.NewTime(origin.Add(time.Hour))}}
	defer forgetQuery(q.Namespace, q.Name)
	onTrack := &laxityv1alpha1.IntermittentQueryStatus{Conditions: []metav1.Condition{{Type: "OnTrack", Status: "True", Reason: "SlackPositive"}}}
	late := &laxityv1alpha1.IntermittentQueryStatus{Conditions: []metav1.Condition{{Type: "OnTrack", Status: "False", Reason: "SlackNegative", Message: "Slack -1s"}}}
	reasons := func(ns []note) []string {
		var out []string
		for _, n := range ns {
			out = append(out, n.reason)
		}
		return out
	}
	steps := []struct {
		before, after *laxityv1alpha1.IntermittentQueryStatus
		want          []string
	}{
		{onTrack, late, []string{ReasonAtRisk}},
		{onTrack, late, nil}, // the same transition from a stale cache
		{late, onTrack, nil},
		{onTrack, late, []string{ReasonAtRisk}}, // at risk again
	}
	for i, s := range steps {
		if diff := cmp.Diff(s.want, reasons(announceQueryEvents(q, s.before, s.after))); diff != "" {
			t.Errorf("step %d (-want +got):\n%s", i, diff)
		}
	}
	// The same name, another query: its facts are new.
	q.UID = "u2"
	if got := reasons(announceQueryEvents(q, onTrack, late)); len(got) != 1 {
		t.Errorf("a new query under the same name announced %v, want AtRisk", got)
	}
}
