package controllers

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/test/builder"
)

// origin is the instant the unit tests and stories of this package start
// from.
var origin = builder.Origin

// conditionSummary is a condition's type, status and reason.
type conditionSummary map[string]string

func summarize(conditions []metav1.Condition) conditionSummary {
	out := conditionSummary{}
	for _, c := range conditions {
		out[c.Type] = string(c.Status) + "/" + c.Reason
	}
	return out
}

// kstatusOf is what kstatus, and so Flux and the GitOps tools built on it,
// makes of an object.
func kstatusOf(t *testing.T, obj runtime.Object) status.Status {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	result, err := status.Compute(&unstructured.Unstructured{Object: content})
	if err != nil {
		t.Fatal(err)
	}
	return result.Status
}

func TestQueryConditions(t *testing.T) {
	deadline := origin.Add(time.Hour)
	slack := func(d time.Duration) *time.Duration { return &d }
	finished := func(end time.Time) *laxityv1alpha1.FinalStatus {
		return &laxityv1alpha1.FinalStatus{Outcome: laxityv1alpha1.StepSucceeded, End: &metav1.Time{Time: end}, ResultLocation: "s3://out/final"}
	}
	tests := []struct {
		name    string
		final   *laxityv1alpha1.FinalStatus
		state   queryState
		want    conditionSummary
		message string
		kstatus status.Status
	}{
		{
			name:    "no schedule",
			state:   queryState{now: origin, noSchedule: true},
			want:    conditionSummary{"Ready": "False/ScheduleNotFound"},
			message: `ElasticSchedule "tpch" not found in namespace analytics`,
			kstatus: status.InProgressStatus,
		},
		{
			name:    "not planned yet",
			state:   queryState{now: origin},
			want:    conditionSummary{"Ready": "False/WaitingForPlan"},
			kstatus: status.InProgressStatus,
		},
		{
			name:  "on track",
			state: queryState{now: origin, planned: true, slack: slack(125 * time.Second)},
			want: conditionSummary{
				"Ready": "True/OnTrack", "OnTrack": "True/SlackPositive",
				"DeadlineMissed": "False/SlackPositive", "Succeeded": "False/InProgress",
			},
			message: "Slack 2m5s",
			kstatus: status.CurrentStatus,
		},
		{
			name:  "negative slack is at risk but not stalled",
			state: queryState{now: origin, planned: true, slack: slack(-30 * time.Second)},
			want: conditionSummary{
				"Ready": "False/AtRisk", "OnTrack": "False/SlackNegative",
				"DeadlineMissed": "False/SlackPositive", "Succeeded": "False/InProgress",
			},
			message: "Slack -30s: the query would finish late even on the plan's largest pool",
			kstatus: status.InProgressStatus,
		},
		{
			name:  "no feasible plan",
			state: queryState{now: origin, planned: true, slack: slack(time.Minute), plannedLate: 90 * time.Second},
			want: conditionSummary{
				"Ready": "False/NoFeasiblePlan", "OnTrack": "False/NoFeasiblePlan",
				"Stalled": "True/NoFeasiblePlan", "DeadlineMissed": "False/SlackPositive", "Succeeded": "False/InProgress",
			},
			message: "No plan meets the deadline: the least late one finishes the query 90s after it",
			kstatus: status.FailedStatus,
		},
		{
			name:  "a step failed on every attempt",
			state: queryState{now: origin, planned: true, slack: slack(time.Minute), failedOut: "Batch 2 failed on all 3 attempts"},
			want: conditionSummary{
				"Ready": "False/StepFailed", "OnTrack": "False/StepFailed",
				"Stalled": "True/StepFailed", "DeadlineMissed": "False/SlackPositive", "Succeeded": "False/InProgress",
			},
			message: "Batch 2 failed on all 3 attempts",
			kstatus: status.FailedStatus,
		},
		{
			name:  "deadline passed",
			state: queryState{now: deadline.Add(time.Second), planned: true, slack: slack(-time.Minute)},
			want: conditionSummary{
				"Ready": "False/AtRisk", "OnTrack": "False/SlackNegative",
				"Stalled": "True/DeadlinePassed", "DeadlineMissed": "True/DeadlinePassed", "Succeeded": "False/InProgress",
			},
			message: "The deadline has passed",
			kstatus: status.FailedStatus,
		},
		{
			name:  "input unavailable: it shows, the query is not given up",
			state: queryState{now: origin, planned: true, slack: slack(time.Minute), inputErr: errors.New("spec.input.kafka.secretRef: Secret kafka-client: not found")},
			want: conditionSummary{
				"Ready": "False/InputUnavailable", "DeadlineMissed": "False/SlackPositive", "Succeeded": "False/InProgress",
			},
			message: "spec.input.kafka.secretRef: Secret kafka-client: not found",
			kstatus: status.InProgressStatus,
		},
		{
			name:  "finished: an input gone since does not matter",
			final: finished(deadline.Add(-time.Minute)),
			state: queryState{now: deadline.Add(time.Hour), planned: true, slack: slack(time.Minute), inputErr: errors.New("topic deleted")},
			want: conditionSummary{
				"Ready": "True/FinalMergeSucceeded", "OnTrack": "True/FinalMergeSucceeded",
				"DeadlineMissed": "False/SlackPositive", "Succeeded": "True/FinalMergeSucceeded",
			},
			message: "Finished",
			kstatus: status.CurrentStatus,
		},
		{
			name:  "finished in time",
			final: finished(deadline.Add(-time.Minute)),
			state: queryState{now: deadline.Add(time.Hour), planned: true, slack: slack(time.Minute)},
			want: conditionSummary{
				"Ready": "True/FinalMergeSucceeded", "OnTrack": "True/FinalMergeSucceeded",
				"DeadlineMissed": "False/SlackPositive", "Succeeded": "True/FinalMergeSucceeded",
			},
			message: "Finished",
			kstatus: status.CurrentStatus,
		},
		{
			name:  "finished late: done, not stalled, the miss on record",
			final: finished(deadline.Add(time.Minute)),
			state: queryState{now: deadline.Add(time.Hour), planned: true, slack: slack(-time.Minute)},
			want: conditionSummary{
				"Ready": "True/FinalMergeSucceeded", "OnTrack": "False/FinalMergeSucceeded",
				"DeadlineMissed": "True/DeadlinePassed", "Succeeded": "True/FinalMergeSucceeded",
			},
			message: "Finished",
			kstatus: status.CurrentStatus,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := &laxityv1alpha1.IntermittentQuery{
				ObjectMeta: metav1.ObjectMeta{Name: "q1", Namespace: "analytics", Generation: 3},
				Spec: laxityv1alpha1.IntermittentQuerySpec{
					ScheduleName: "tpch", Deadline: metav1.NewTime(deadline),
				},
				Status: laxityv1alpha1.IntermittentQueryStatus{ObservedGeneration: 3, Final: tc.final},
			}
			setQueryConditions(q, tc.state)
			if diff := cmp.Diff(tc.want, summarize(q.Status.Conditions)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if ready := meta.FindStatusCondition(q.Status.Conditions, "Ready"); tc.message != "" && ready.Message != tc.message {
				t.Errorf("Ready message %q, want %q", ready.Message, tc.message)
			}
			if got := kstatusOf(t, q); got != tc.kstatus {
				t.Errorf("kstatus %s, want %s", got, tc.kstatus)
			}
		})
	}
}

// Recomputed from the same state, the conditions do not change, and a slack
// that moves by seconds moves neither the status nor its messages.
func TestQueryConditionsAreStable(t *testing.T) {
	q := &laxityv1alpha1.IntermittentQuery{Spec: laxityv1alpha1.IntermittentQuerySpec{Deadline: metav1.NewTime(origin.Add(time.Hour))}}
	slack := 10 * time.Minute
	setQueryConditions(q, queryState{now: origin, planned: true, slack: &slack})
	before := q.Status.DeepCopy()
	for s := range 30 {
		slack := 10*time.Minute - time.Duration(s)*time.Second
		setQueryConditions(q, queryState{now: origin.Add(time.Duration(s) * time.Second), planned: true, slack: &slack})
	}
	if diff := cmp.Diff(before, &q.Status); diff != "" {
		t.Errorf("30 s of a shrinking slack rewrote the status (-before +after):\n%s", diff)
	}
	stall := queryState{now: origin, planned: true, slack: &slack, failedOut: "Batch 0 failed"}
	setQueryConditions(q, stall)
	stalled := meta.FindStatusCondition(q.Status.Conditions, "Stalled").LastTransitionTime
	setQueryConditions(q, stall)
	if got := meta.FindStatusCondition(q.Status.Conditions, "Stalled").LastTransitionTime; !got.Equal(&stalled) {
		t.Errorf("Stalled moved its transition time from %v to %v on an unchanged state", stalled, got)
	}
}

func TestScheduleConditions(t *testing.T) {
	feasible := &planner.Document{Chosen: planner.Chosen{InitialNodes: 2, BatchSizeFactor: 1, Cost: 0.5, Feasible: true}}
	infeasible := &planner.Document{Chosen: planner.Chosen{InitialNodes: 10, BatchSizeFactor: 1, Cost: 3,
		Failure: &planner.Failure{Query: "q7", LateSeconds: 412}}}
	tests := []struct {
		name    string
		state   scheduleState
		want    conditionSummary
		message string
		kstatus status.Status
	}{
		{
			name:    "no queries",
			state:   scheduleState{noQueries: true},
			want:    conditionSummary{"Planned": "False/NoQueries", "Ready": "True/NoQueries"},
			kstatus: status.CurrentStatus,
		},
		{
			name:    "a spec that cannot be planned",
			state:   scheduleState{invalid: errors.New("IntermittentQuery q1: spec.costModel: no samples")},
			want:    conditionSummary{"Planned": "False/InvalidSpec", "Ready": "False/InvalidSpec", "Stalled": "True/InvalidSpec"},
			message: "IntermittentQuery q1: spec.costModel: no samples",
			kstatus: status.FailedStatus,
		},
		{
			name:  "planned, the pool ready",
			state: scheduleState{doc: feasible, requested: 2, ready: 2},
			want: conditionSummary{
				"Planned": "True/PlanFound", "Feasible": "True/DeadlinesMet", "PoolReady": "True/NodesReady", "Ready": "True/DeadlinesMet",
			},
			kstatus: status.CurrentStatus,
		},
		{
			name:  "planned, nodes on their way within their lead time: ready, as GitOps should see a routine scale-up",
			state: scheduleState{doc: feasible, requested: 10, ready: 2, due: 2, lead: 2 * time.Minute},
			want: conditionSummary{
				"Planned": "True/PlanFound", "Feasible": "True/DeadlinesMet", "PoolReady": "False/WaitingForNodes", "Ready": "True/ScalingUp",
			},
			message: "Scaling up as planned: 2 of 10 requested nodes ready, the rest requested less than the 2m0s lead time ago",
			kstatus: status.CurrentStatus,
		},
		{
			name:  "nodes overdue: asked for more than a lead time ago and not ready",
			state: scheduleState{doc: feasible, requested: 10, ready: 2, due: 6, lead: 2 * time.Minute},
			want: conditionSummary{
				"Planned": "True/PlanFound", "Feasible": "True/DeadlinesMet", "PoolReady": "False/NodesOverdue", "Ready": "False/NodesOverdue",
			},
			message: "2 of 10 requested nodes ready; 6 were asked for more than the 2m0s lead time ago",
			kstatus: status.InProgressStatus,
		},
		{
			name:  "nodes lost: not ready, though within the lead time of their new request",
			state: scheduleState{doc: feasible, requested: 4, ready: 1, due: 0, lead: 2 * time.Minute, nodesLost: "Ready nodes fell from 4 to 1"},
			want: conditionSummary{
				"Planned": "True/PlanFound", "Feasible": "True/DeadlinesMet", "PoolReady": "False/NodesLost", "Ready": "False/NodesLost",
			},
			message: "Ready nodes fell from 4 to 1; 1 of 4 requested nodes ready",
			kstatus: status.InProgressStatus,
		},
		{
			name:  "more due than now requested (the plan scaled down): only what is requested can be overdue",
			state: scheduleState{doc: feasible, requested: 3, ready: 3, due: 8, lead: 2 * time.Minute},
			want: conditionSummary{
				"Planned": "True/PlanFound", "Feasible": "True/DeadlinesMet", "PoolReady": "True/NodesReady", "Ready": "True/DeadlinesMet",
			},
			kstatus: status.CurrentStatus,
		},
		{
			name:  "the backend fails: AWS's message, and kstatus keeps waiting, as a retry may help",
			state: scheduleState{doc: feasible, requested: 4, ready: 2, backendErr: errors.New("resizing the pool to 4 nodes: eks UpdateNodegroupConfig: AccessDeniedException: not authorized")},
			want: conditionSummary{
				"Planned": "True/PlanFound", "Feasible": "True/DeadlinesMet", "PoolReady": "False/BackendError", "Ready": "False/BackendError",
			},
			message: "resizing the pool to 4 nodes: eks UpdateNodegroupConfig: AccessDeniedException: not authorized",
			kstatus: status.InProgressStatus,
		},
		{
			name:  "no queries, and the backend fails releasing the pool",
			state: scheduleState{noQueries: true, backendErr: errors.New("reading the pool size: eks DescribeNodegroup: ResourceNotFoundException: No node group found")},
			want: conditionSummary{
				"Planned": "False/NoQueries", "PoolReady": "False/BackendError", "Ready": "False/BackendError",
			},
			message: "reading the pool size: eks DescribeNodegroup: ResourceNotFoundException: No node group found",
			kstatus: status.InProgressStatus,
		},
		{
			name:  "no plan meets every deadline",
			state: scheduleState{doc: infeasible, requested: 10, ready: 10},
			want: conditionSummary{
				"Planned": "True/PlanFound", "Feasible": "False/NoFeasiblePlan", "PoolReady": "True/NodesReady",
				"Ready": "False/NoFeasiblePlan", "Stalled": "True/NoFeasiblePlan",
			},
			message: "No plan meets every deadline",
			kstatus: status.FailedStatus,
		},
		{
			name:  "the search of new specs over its budget: the plan in force runs on, Planned and Ready say why",
			state: scheduleState{doc: feasible, requested: 2, ready: 2, overBudget: "the plan search of the current specs ran longer than the 30s one search may take"},
			want: conditionSummary{
				"Planned": "False/SearchBudgetExceeded", "Feasible": "True/DeadlinesMet", "PoolReady": "True/NodesReady", "Ready": "False/SearchBudgetExceeded",
			},
			message: "the plan search of the current specs ran longer than the 30s one search may take",
			kstatus: status.InProgressStatus,
		},
		{
			name:  "over budget with a stuck step: the stuck step is what Ready reports",
			state: scheduleState{doc: feasible, requested: 2, ready: 2, stuck: "q1-b0 stuck", overBudget: "over budget"},
			want: conditionSummary{
				"Planned": "False/SearchBudgetExceeded", "Feasible": "True/DeadlinesMet", "PoolReady": "True/NodesReady", "Ready": "False/StepStuck",
			},
			message: "q1-b0 stuck",
			kstatus: status.InProgressStatus,
		},
		{
			name:    "over budget without a plan in force: nothing runs until the next try",
			state:   scheduleState{invalid: errors.New("no plan yet"), invalidReason: "SearchBudgetExceeded"},
			want:    conditionSummary{"Planned": "False/SearchBudgetExceeded", "Ready": "False/SearchBudgetExceeded", "Stalled": "True/SearchBudgetExceeded"},
			message: "no plan yet",
			kstatus: status.FailedStatus,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			es := builder.AnalyticsSchedule()
			es.Generation, es.Status.ObservedGeneration = 2, 2
			setScheduleConditions(es, tc.state)
			if diff := cmp.Diff(tc.want, summarize(es.Status.Conditions)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if ready := meta.FindStatusCondition(es.Status.Conditions, "Ready"); tc.message != "" && ready.Message != tc.message {
				t.Errorf("Ready message %q, want %q", ready.Message, tc.message)
			}
			if got := kstatusOf(t, es); got != tc.kstatus {
				t.Errorf("kstatus %s, want %s", got, tc.kstatus)
			}
		})
	}
	// A fixed spec clears Stalled.
	es := builder.AnalyticsSchedule()
	setScheduleConditions(es, scheduleState{doc: infeasible, requested: 10, ready: 10})
	setScheduleConditions(es, scheduleState{doc: feasible, requested: 2, ready: 2})
	if c := meta.FindStatusCondition(es.Status.Conditions, "Stalled"); c != nil {
		t.Errorf("Stalled stayed after a feasible plan: %+v", c)
	}
	// An unobserved generation is in progress, whatever the conditions say.
	es.Generation, es.Status.ObservedGeneration = 3, 2
	if got := kstatusOf(t, es); got != status.InProgressStatus {
		t.Errorf("kstatus of an unobserved generation %s, want InProgress", got)
	}
}

// Files uploaded later than the window allows are not in the result: the
// Succeeded condition says how many tuples it left out.
func TestSucceededSaysWhatTheResultLeftOut(t *testing.T) {
	deadline := origin.Add(time.Hour)
	for _, tc := range []struct {
		arrived, processed int64
		want               string
	}{
		{1000, 1000, "Final result at s3://out/final"},
		{1000, 900, "Final result at s3://out/final; 100 tuples arrived after the last batch, later than the window allows, and are not in it"},
	} {
		q := &laxityv1alpha1.IntermittentQuery{
			Spec: laxityv1alpha1.IntermittentQuerySpec{Deadline: metav1.NewTime(deadline)},
			Status: laxityv1alpha1.IntermittentQueryStatus{
				ArrivedTuples: &tc.arrived, ProcessedTuples: &tc.processed,
				Final: &laxityv1alpha1.FinalStatus{Outcome: laxityv1alpha1.StepSucceeded, End: &metav1.Time{Time: deadline.Add(-time.Minute)}, ResultLocation: "s3://out/final"},
			},
		}
		setQueryConditions(q, queryState{now: deadline, planned: true})
		if got := meta.FindStatusCondition(q.Status.Conditions, laxityv1alpha1.IntermittentQuerySucceededCondition).Message; got != tc.want {
			t.Errorf("arrived %d, processed %d: Succeeded says %q, want %q", tc.arrived, tc.processed, got, tc.want)
		}
	}
}

func TestDampedSlack(t *testing.T) {
	for _, tc := range []struct {
		previous laxityv1alpha1.Decimal
		slack    time.Duration
		want     laxityv1alpha1.Decimal
	}{
		{"", 90 * time.Second, "90"},
		{"90", 60 * time.Second, "90"},
		{"90", 20 * time.Second, "20"},
		{"30", -5 * time.Second, "-5"},
		{"garbage", 10 * time.Second, "10"},
	} {
		if got := dampedSlack(tc.previous, tc.slack); got != tc.want {
			t.Errorf("dampedSlack(%q, %v) = %q, want %q", tc.previous, tc.slack, got, tc.want)
		}
	}
}

func TestNodesDue(t *testing.T) {
	const lead = 2 * time.Minute
	// The plan starts with 2 nodes, asks for 6 at 300 s and for 1 at 900 s.
	requests := []planner.NodeLevel{{At: 0, Nodes: 2}, {At: 300, Nodes: 6}, {At: 900, Nodes: 1}}
	for _, tc := range []struct {
		name string
		now  time.Duration // after origin
		want int32
	}{
		{"a fresh plan: nothing is due for a lead time and the grace", lead + overdueGrace - time.Second, 0},
		{"the initial nodes are due a lead time and the grace after the plan", lead + overdueGrace, 2},
		{"the nodes asked for at 300 s are not due yet", 300*time.Second + lead, 2},
		{"and are due a lead time and the grace after", 300*time.Second + lead + overdueGrace, 6},
		{"a scale-down a lead time ago lowers what is due", 900*time.Second + lead + overdueGrace, 1},
	} {
		if got := nodesDue(origin, requests, lead, origin.Add(tc.now)); got != tc.want {
			t.Errorf("%s: nodesDue at +%s = %d, want %d", tc.name, tc.now, got, tc.want)
		}
	}
	if got := nodesDue(origin, nil, lead, origin.Add(time.Hour)); got != 0 {
		t.Errorf("no requests: nodesDue = %d, want 0", got)
	}
}
