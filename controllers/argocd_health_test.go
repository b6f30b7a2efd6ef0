package controllers

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/test/builder"
)

// updateArgoCD rewrites the Argo CD health checks' stored objects and
// expectations from the cases below.
var updateArgoCD = flag.Bool("update-argocd", false, "rewrite config/argocd's testdata and health_test.yaml from the condition functions")

// argoCDCustomizations is where the Argo CD health checks are.
const argoCDCustomizations = "../config/argocd/laxity.dev"

// healthCase is an object in one condition state, made by the functions
// the controllers set conditions with, and the health Argo CD must give it.
type healthCase struct {
	name            string
	obj             client.Object
	status, message string
}

// healthCases are, for every kind, an object in every condition state.
// TestArgoCDHealthTestdata keeps config/argocd's stored objects equal to
// them; test/argocd runs the health checks on the stored objects.
func healthCases() map[string][]healthCase {
	// Schedules.
	feasible := &planner.Document{Chosen: planner.Chosen{InitialNodes: 2, BatchSizeFactor: 1, Cost: 0.5, Feasible: true}}
	infeasible := &planner.Document{Chosen: planner.Chosen{InitialNodes: 10, BatchSizeFactor: 1, Cost: 3, Failure: &planner.Failure{Query: "q7", LateSeconds: 412}}}
	schedule := func(state scheduleState) *laxityv1alpha1.ElasticSchedule {
		es := builder.AnalyticsSchedule()
		es.Generation, es.Status.ObservedGeneration = 2, 2
		if state.doc != nil {
			es.Status.NodesRequested, es.Status.NodesReady = &state.requested, &state.ready
		}
		setScheduleConditions(es, state)
		return es
	}
	const lead = 5 * time.Minute
	deleting := schedule(scheduleState{doc: feasible, requested: 4, ready: 4})
	deleting.DeletionTimestamp = &metav1.Time{Time: origin}
	deleting.Finalizers = []string{poolFinalizer}
	unobserved := schedule(scheduleState{doc: feasible, requested: 4, ready: 4})
	unobserved.Generation = 3
	undecodable := func(obj client.Object, conditions *[]metav1.Condition, kind string) {
		message := undecodableMessage(kind, errors.New(`spec.nodePool.provisioningLeadTime: time: invalid duration "6 minutes"`))
		for _, c := range []metav1.Condition{
			{Type: "Ready", Status: metav1.ConditionFalse, Reason: laxityv1alpha1.UndecodableReason, Message: message, ObservedGeneration: obj.GetGeneration()},
			{Type: "Stalled", Status: metav1.ConditionTrue, Reason: laxityv1alpha1.UndecodableReason, Message: message, ObservedGeneration: obj.GetGeneration()},
		} {
			setCondition(conditions, c)
		}
	}
	undecodableSchedule := schedule(scheduleState{doc: feasible, requested: 4, ready: 4})
	undecodable(undecodableSchedule, &undecodableSchedule.Status.Conditions, "ElasticSchedule")
	schedules := []healthCase{
		{"no_status", builder.AnalyticsSchedule(), "Progressing", "Waiting for the schedule to be planned"},
		{"no_queries", schedule(scheduleState{noQueries: true}), "Healthy", "Nothing to run; the pool is at its idle size"},
		{"planned_pool_ready", schedule(scheduleState{doc: feasible, requested: 4, ready: 4, lead: lead}), "Healthy", "Planned and running"},
		{"scaling_up", schedule(scheduleState{doc: feasible, requested: 10, ready: 2, due: 2, lead: lead}), "Healthy",
			"Scaling up as planned: 2 of 10 requested nodes ready, the rest requested less than the 5m0s lead time ago"},
		{"nodes_overdue", schedule(scheduleState{doc: feasible, requested: 10, ready: 2, due: 10, lead: lead}), "Degraded",
			"2 of 10 requested nodes ready; 10 were asked for more than the 5m0s lead time ago"},
		{"nodes_lost", schedule(scheduleState{doc: feasible, requested: 4, ready: 1, lead: lead, nodesLost: "Ready nodes fell from 4 to 1"}), "Progressing",
			"Ready nodes fell from 4 to 1; 1 of 4 requested nodes ready"},
		{"backend_error", schedule(scheduleState{doc: feasible, requested: 4, ready: 2, lead: lead,
			backendErr: errors.New("resizing the pool to 4 nodes: eks UpdateNodegroupConfig: AccessDeniedException: not authorized")}), "Degraded",
			"resizing the pool to 4 nodes: eks UpdateNodegroupConfig: AccessDeniedException: not authorized"},
		{"step_stuck", schedule(scheduleState{doc: feasible, requested: 4, ready: 4, lead: lead,
			stuck: "Batch 3 of q1 (q1-b3-r0) stayed Running 12m0s, past 4× its modelled 2m0s; cancelled, retried after the backoff"}), "Degraded",
			"Batch 3 of q1 (q1-b3-r0) stayed Running 12m0s, past 4× its modelled 2m0s; cancelled, retried after the backoff"},
		{"invalid_spec", schedule(scheduleState{invalid: errors.New("IntermittentQuery q1: spec.costModel.batch: no samples")}), "Degraded",
			"IntermittentQuery q1: spec.costModel.batch: no samples"},
		{"no_feasible_plan", schedule(scheduleState{doc: infeasible, requested: 10, ready: 10, lead: lead}), "Degraded",
			"No plan meets every deadline: q7 would be 412s late even on 10 nodes"},
		{"undecodable", undecodableSchedule, "Degraded", undecodableSchedule.Status.Conditions[len(undecodableSchedule.Status.Conditions)-1].Message},
		{"generation_not_observed", unobserved, "Progressing", "Waiting for the controller to see the latest spec"},
		{"deleting", deleting, "Progressing", "Being deleted: the node pool is released first"},
	}

	// Queries.
	deadline := origin.Add(time.Hour)
	slack := func(d time.Duration) *time.Duration { return &d }
	query := func(state queryState, final *laxityv1alpha1.FinalStatus, batches ...laxityv1alpha1.BatchStatus) *laxityv1alpha1.IntermittentQuery {
		q := builder.Query("analytics", "q1").Schedule("tpch").Deadline(deadline).Obj()
		q.Generation, q.Status.ObservedGeneration = 1, 1
		q.Status.Batches, q.Status.Final = batches, final
		setQueryConditions(q, state)
		return q
	}
	finished := func(end time.Time) *laxityv1alpha1.FinalStatus {
		return &laxityv1alpha1.FinalStatus{Inputs: 12, Nodes: 2, SparkApplication: "q1-final-r0", Outcome: laxityv1alpha1.StepSucceeded,
			Start: &metav1.Time{Time: end.Add(-time.Minute)}, End: &metav1.Time{Time: end}, ResultLocation: "s3a://results/analytics/q1/final"}
	}
	failedBatch := laxityv1alpha1.BatchStatus{Index: 1, FromTuple: 1000, ToTuple: 2000, Nodes: 4, SparkApplication: "q1-b1-r2", Attempt: 2,
		Outcome: laxityv1alpha1.StepFailed, Message: "Job aborted due to stage failure: executor lost"}
	planned := queryState{now: origin, planned: true, slack: slack(125 * time.Second)}
	failedOutState := planned
	failedOutState.failedOut = "Batch 1 failed on all 3 attempts, the last as q1-b1-r2 (Job aborted due to stage failure: executor lost); no further attempt will be made, so the query cannot finish"
	late := planned
	late.plannedLate = 90 * time.Second
	input := planned
	input.inputErr = errors.New("spec.input.kafka.secretRef: Secret kafka-client not found in namespace analytics")
	unobservedQuery := query(planned, nil)
	unobservedQuery.Generation = 2
	deletingQuery := query(planned, nil)
	deletingQuery.DeletionTimestamp = &metav1.Time{Time: origin}
	deletingQuery.Finalizers = []string{"laxity.dev/job-runs"}
	undecodableQuery := query(planned, nil)
	undecodable(undecodableQuery, &undecodableQuery.Status.Conditions, "IntermittentQuery")
	queries := []healthCase{
		{"no_status", builder.Query("analytics", "q1").Schedule("tpch").Deadline(deadline).Obj(), "Progressing", "Waiting for the query's schedule to plan it"},
		{"schedule_not_found", query(queryState{now: origin, noSchedule: true}, nil), "Degraded", `ElasticSchedule "tpch" not found in namespace analytics`},
		{"waiting_for_plan", query(queryState{now: origin}, nil), "Progressing", "The schedule has not planned this query yet"},
		{"on_track", query(planned, nil), "Healthy", "Slack 2m5s"},
		{"at_risk", query(queryState{now: origin, planned: true, slack: slack(-30 * time.Second)}, nil), "Degraded",
			"Slack -30s: the query would finish late even on the plan's largest pool"},
		{"no_feasible_plan", query(late, nil), "Degraded", "No plan meets the deadline: the least late one finishes the query 90s after it"},
		{"step_failed_out", query(failedOutState, nil, failedBatch), "Degraded", failedOutState.failedOut},
		{"deadline_passed", query(queryState{now: deadline.Add(time.Second), planned: true, slack: slack(-time.Minute)}, nil), "Degraded", "The deadline has passed"},
		{"input_unavailable", query(input, nil), "Degraded", "spec.input.kafka.secretRef: Secret kafka-client not found in namespace analytics"},
		{"finished_in_time", query(queryState{now: deadline, planned: true}, finished(deadline.Add(-time.Minute))), "Healthy",
			"Final result at s3a://results/analytics/q1/final"},
		{"finished_late", query(queryState{now: deadline.Add(time.Hour), planned: true}, finished(deadline.Add(2*time.Minute))), "Degraded",
			"Finished late: The deadline 2026-12-01T01:00:00Z passed before the final merge succeeded"},
		{"undecodable", undecodableQuery, "Degraded", undecodableQuery.Status.Conditions[len(undecodableQuery.Status.Conditions)-1].Message},
		{"generation_not_observed", unobservedQuery, "Progressing", "Waiting for the controller to see the latest spec"},
		{"deleting", deletingQuery, "Progressing", "Being deleted: its steps are cancelled first"},
	}

	// Recurring queries.
	recurring := func(set func(rq *laxityv1alpha1.RecurringQuery), windows ...laxityv1alpha1.RecurringWindow) *laxityv1alpha1.RecurringQuery {
		rq := builder.Recurring("analytics", "hourly").Obj()
		rq.Generation, rq.Status.ObservedGeneration = 1, 1
		rq.Status.Windows = windows
		set(rq)
		return rq
	}
	scheduled := func(rq *laxityv1alpha1.RecurringQuery) {
		setRecurringReady(rq, metav1.ConditionTrue, laxityv1alpha1.WindowsScheduledReason,
			"The windows ahead exist; the next is created when the one before it starts, at 2026-12-01T02:00:00Z")
	}
	window := func(hour int, outcome laxityv1alpha1.WindowOutcome, met bool) laxityv1alpha1.RecurringWindow {
		start := metav1.NewTime(origin.Add(time.Duration(hour) * time.Hour))
		w := laxityv1alpha1.RecurringWindow{Start: start, Query: "hourly-" + start.UTC().Format("200601021504"), Outcome: outcome, Met: met}
		if outcome == laxityv1alpha1.WindowSkipped {
			w.Query, w.Message = "", "Its start was missed by more than spec.startingDeadline (5m0s)"
		}
		return w
	}
	suspended := recurring(func(rq *laxityv1alpha1.RecurringQuery) {
		rq.Spec.Suspend = true
		setRecurringReady(rq, metav1.ConditionTrue, laxityv1alpha1.SuspendedReason, "Suspended: no new window is created")
	}, window(0, laxityv1alpha1.WindowSucceeded, true))
	unobservedRecurring := recurring(scheduled)
	unobservedRecurring.Generation = 2
	deletingRecurring := recurring(scheduled)
	deletingRecurring.DeletionTimestamp = &metav1.Time{Time: origin}
	deletingRecurring.Finalizers = []string{"example.com/hold"}
	recurrings := []healthCase{
		{"no_status", builder.Recurring("analytics", "hourly").Obj(), "Progressing", "Waiting for the first windows to be created"},
		{"windows_scheduled", recurring(scheduled, window(1, laxityv1alpha1.WindowRunning, false), window(0, laxityv1alpha1.WindowSucceeded, true)), "Healthy",
			"The windows ahead exist; the next is created when the one before it starts, at 2026-12-01T02:00:00Z"},
		{"suspended", suspended, "Suspended", "Suspended: no new window is created"},
		{"window_name_taken", recurring(func(rq *laxityv1alpha1.RecurringQuery) {
			setRecurringReady(rq, metav1.ConditionFalse, laxityv1alpha1.WindowNameTakenReason,
				"IntermittentQueries not owned by this RecurringQuery hold the names of its windows, which do not run: hourly-202612010100")
		}), "Degraded", "IntermittentQueries not owned by this RecurringQuery hold the names of its windows, which do not run: hourly-202612010100"},
		{"invalid_spec", recurring(func(rq *laxityv1alpha1.RecurringQuery) {
			setRecurringStalled(rq, laxityv1alpha1.InvalidSpecReason, `spec.schedule: "0 25 * * *": end of range (25) above maximum (23): 25`)
		}), "Degraded", `spec.schedule: "0 25 * * *": end of range (25) above maximum (23): 25`},
		{"schedule_not_found", recurring(func(rq *laxityv1alpha1.RecurringQuery) {
			setRecurringStalled(rq, laxityv1alpha1.ScheduleNotFoundReason, `spec.template.scheduleName: ElasticSchedule "tpch" not found in namespace analytics`)
		}), "Degraded", `spec.template.scheduleName: ElasticSchedule "tpch" not found in namespace analytics`},
		{"last_window_missed", recurring(scheduled, window(1, laxityv1alpha1.WindowRunning, false), window(0, laxityv1alpha1.WindowMissed, false)), "Degraded",
			"The newest finished window, hourly-202612010000, missed its deadline"},
		{"last_window_failed", recurring(scheduled, window(0, laxityv1alpha1.WindowFailed, false)), "Degraded",
			"The newest finished window, hourly-202612010000, failed: a step failed on every attempt"},
		{"last_window_late", recurring(scheduled, window(1, laxityv1alpha1.WindowSucceeded, false), window(0, laxityv1alpha1.WindowMissed, false)), "Degraded",
			"The newest finished window, hourly-202612010100, finished after its deadline"},
		{"last_window_skipped", recurring(scheduled, window(1, laxityv1alpha1.WindowSkipped, false), window(0, laxityv1alpha1.WindowSucceeded, true)), "Degraded",
			"The newest window was skipped: Its start was missed by more than spec.startingDeadline (5m0s)"},
		{"recovered_after_a_miss", recurring(scheduled, window(1, laxityv1alpha1.WindowSucceeded, true), window(0, laxityv1alpha1.WindowMissed, false)), "Healthy",
			"The windows ahead exist; the next is created when the one before it starts, at 2026-12-01T02:00:00Z"},
		{"generation_not_observed", unobservedRecurring, "Progressing", "Waiting for the controller to see the latest spec"},
		{"deleting", deletingRecurring, "Progressing", "Being deleted"},
	}
	return map[string][]healthCase{"ElasticSchedule": schedules, "IntermittentQuery": queries, "RecurringQuery": recurrings}
}

// setCondition sets c as meta.SetStatusCondition does, keeping the
// transition time fixed (see storedObject).
func setCondition(conditions *[]metav1.Condition, c metav1.Condition) {
	for i := range *conditions {
		if (*conditions)[i].Type == c.Type {
			(*conditions)[i] = c
			return
		}
	}
	*conditions = append(*conditions, c)
}

// storedObject is obj as the API server would return it, in YAML, with
// every condition's transition time fixed so that the file does not change
// from one run to the next.
func storedObject(t *testing.T, kind string, obj client.Object) []byte {
	t.Helper()
	obj.GetObjectKind().SetGroupVersionKind(laxityv1alpha1.GroupVersion.WithKind(kind))
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	if md, ok := content["metadata"].(map[string]any); ok && md["creationTimestamp"] == nil {
		md["creationTimestamp"] = origin.Add(-time.Hour).Format(time.RFC3339)
	}
	if status, ok := content["status"].(map[string]any); ok {
		conditions, _ := status["conditions"].([]any)
		for _, c := range conditions {
			c.(map[string]any)["lastTransitionTime"] = origin.Format(time.RFC3339)
		}
		if len(status) == 0 {
			delete(content, "status")
		}
	}
	out, err := yaml.Marshal(content)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestArgoCDHealthTestdata keeps the Argo CD health checks' stored objects
// what the controllers' condition functions make, so that the checks are
// tested against real statuses (run with -update-argocd to rewrite them
// after a change to the conditions).
func TestArgoCDHealthTestdata(t *testing.T) {
	for kind, cases := range healthCases() {
		dir := filepath.Join(argoCDCustomizations, kind)
		type expectation struct {
			HealthStatus struct {
				Status  string `json:"status"`
				Message string `json:"message"`
			} `json:"healthStatus"`
			InputPath string `json:"inputPath"`
		}
		var tests []expectation
		want := map[string][]byte{}
		for _, c := range cases {
			path := filepath.Join("testdata", c.name+".yaml")
			want[path] = storedObject(t, kind, c.obj)
			var e expectation
			e.HealthStatus.Status, e.HealthStatus.Message, e.InputPath = c.status, c.message, path
			tests = append(tests, e)
		}
		expectations, err := yaml.Marshal(map[string]any{"tests": tests})
		if err != nil {
			t.Fatal(err)
		}
		want["health_test.yaml"] = expectations
		if *updateArgoCD {
			if err := os.RemoveAll(filepath.Join(dir, "testdata")); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(dir, "testdata"), 0o755); err != nil {
				t.Fatal(err)
			}
			for path, content := range want {
				if err := os.WriteFile(filepath.Join(dir, path), content, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		stored, err := filepath.Glob(filepath.Join(dir, "testdata", "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var got, wanted []string
		for _, s := range stored {
			rel, _ := filepath.Rel(dir, s)
			got = append(got, rel)
		}
		for path := range want {
			if path != "health_test.yaml" {
				wanted = append(wanted, path)
			}
		}
		sort.Strings(wanted)
		if diff := cmp.Diff(wanted, got); diff != "" {
			t.Errorf("%s: stored objects (-want +got), run go test ./controllers -run TestArgoCDHealthTestdata -update-argocd:\n%s", kind, diff)
		}
		for path, content := range want {
			stored, err := os.ReadFile(filepath.Join(dir, path))
			if err != nil {
				t.Errorf("%s: %v", kind, err)
				continue
			}
			if !bytes.Equal(stored, content) {
				t.Errorf("%s/%s differs from what the condition functions make; run go test ./controllers -run TestArgoCDHealthTestdata -update-argocd, and check the health it expects:\n%s",
					kind, path, cmp.Diff(string(content), string(stored)))
			}
		}
	}
}
