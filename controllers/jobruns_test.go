package controllers

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/emr"
	"github.com/laxity-dev/laxity/internal/emr/emrfake"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/test/builder"
	"github.com/laxity-dev/laxity/test/builder/emrbuilder"
)

func TestObserveJobRun(t *testing.T) {
	created := time.Date(2026, 12, 1, 0, 5, 0, 0, time.UTC)
	finished := created.Add(40 * time.Second)
	times := map[string]string{recordCreatedAt: "2026-12-01T00:05:00Z", recordFinishedAt: "2026-12-01T00:05:40Z"}
	with := func(state string, extra map[string]string) map[string]string {
		data := map[string]string{recordRequest: "{}"}
		if state != "" {
			data[recordState] = state
		}
		for k, v := range extra {
			data[k] = v
		}
		return data
	}
	for _, tc := range []struct {
		name string
		data map[string]string
		want sparkapp.Observation
	}{
		{"not started yet: holds the pool", with("", nil), sparkapp.Observation{Phase: laxityv1alpha1.StepPending}},
		{"pending", with("PENDING", map[string]string{recordCreatedAt: times[recordCreatedAt]}),
			sparkapp.Observation{Phase: laxityv1alpha1.StepRunning, State: "PENDING", Started: &created}},
		{"running", with("RUNNING", map[string]string{recordCreatedAt: times[recordCreatedAt]}),
			sparkapp.Observation{Phase: laxityv1alpha1.StepRunning, State: "RUNNING", Started: &created}},
		{"cancel pending still holds the pool", with("CANCEL_PENDING", times),
			sparkapp.Observation{Phase: laxityv1alpha1.StepRunning, State: "CANCEL_PENDING", Started: &created}},
		{"completed", with("COMPLETED", times),
			sparkapp.Observation{Phase: laxityv1alpha1.StepSucceeded, State: "COMPLETED", Started: &created, Ended: &finished}},
		{"failed, with the reason", with("FAILED", map[string]string{recordCreatedAt: times[recordCreatedAt], recordFinishedAt: times[recordFinishedAt], recordMessage: "USER_ERROR: exit 1"}),
			sparkapp.Observation{Phase: laxityv1alpha1.StepFailed, State: "FAILED", Message: "USER_ERROR: exit 1", Started: &created, Ended: &finished}},
		{"cancelled is a failure", with("CANCELLED", times),
			sparkapp.Observation{Phase: laxityv1alpha1.StepFailed, State: "CANCELLED", Started: &created, Ended: &finished}},
		{"a state EMR adds later keeps laxity waiting", with("QUEUED", nil),
			sparkapp.Observation{Phase: laxityv1alpha1.StepRunning, State: "QUEUED"}},
		{"malformed times read as absent", with("COMPLETED", map[string]string{recordCreatedAt: "yesterday"}),
			sparkapp.Observation{Phase: laxityv1alpha1.StepSucceeded, State: "COMPLETED"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := observeJobRun(&corev1.ConfigMap{Data: tc.data})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("observeJobRun (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClientToken(t *testing.T) {
	q := &laxityv1alpha1.IntermittentQuery{}
	q.UID = types.UID("3f1c")
	first := clientToken(q, "q1-b3")
	if first != clientToken(q, "q1-b3") {
		t.Error("the token of a step changes between calls")
	}
	if first == clientToken(q, "q1-b3-r1") {
		t.Error("a retry gets the token of the attempt it retries")
	}
	again := q.DeepCopy()
	again.UID = types.UID("77aa")
	if first == clientToken(again, "q1-b3") {
		t.Error("a query created again under the same name gets the old query's tokens")
	}
	if len(first) > 64 {
		t.Errorf("token %q is longer than StartJobRun's 64 characters", first)
	}
}

func TestStepOfJobRunRecord(t *testing.T) {
	record := &corev1.ConfigMap{}
	record.Namespace, record.Name = "analytics", "q1-b4"
	record.Labels = map[string]string{LabelQuery: "q1", LabelStep: "batch"}
	record.Annotations = map[string]string{sparkapp.AnnotationBatchIndex: "3", sparkapp.AnnotationNodes: "2", sparkapp.AnnotationFromTuple: "0", sparkapp.AnnotationToTuple: "10"}
	_, _, err := sparkapp.StepOf(record)
	want := "reading the step of ConfigMap analytics/q1-b4: its labels and annotations describe step q1-b3, not this object"
	if err == nil || err.Error() != want {
		t.Errorf("StepOf = %v, want %q", err, want)
	}
	record.Name = "q1-b3"
	if query, step, err := sparkapp.StepOf(record); err != nil || query != "q1" || step.Index != 3 {
		t.Errorf("StepOf = %q, %+v, %v", query, step, err)
	}
}

func TestFailedOutCarriesTheFailure(t *testing.T) {
	q := &laxityv1alpha1.IntermittentQuery{}
	q.Status.Batches = []laxityv1alpha1.BatchStatus{
		{Index: 0, SparkApplication: "q1-b0", Outcome: laxityv1alpha1.StepSucceeded},
		{Index: 1, SparkApplication: "q1-b1-r2", Attempt: 2, Outcome: laxityv1alpha1.StepFailed,
			Message: "emr-containers StartJobRun: ValidationException: Release label emr-0.0 is not supported"},
	}
	want := "Batch 1 failed on all 3 attempts, the last as q1-b1-r2 (emr-containers StartJobRun: ValidationException: Release label emr-0.0 is not supported); no further attempt will be made, so the query cannot finish"
	if got := failedOut(q, 3); got != want {
		t.Errorf("failedOut =\n%s\nwant\n%s", got, want)
	}
	if got := failedOut(q, 4); got != "" {
		t.Errorf("failedOut with an attempt left = %q, want none", got)
	}
}

func TestFailureKeepsTheStatusSmall(t *testing.T) {
	long := strings.Repeat("é", 3000) // 6,000 bytes
	got := failure(sparkapp.Observation{Phase: laxityv1alpha1.StepFailed, Message: long})
	if len(got) > 4096 || !utf8.ValidString(got) || !strings.HasSuffix(got, "...") {
		t.Errorf("failure kept %d bytes (valid UTF-8: %v)", len(got), utf8.ValidString(got))
	}
	if got := failure(sparkapp.Observation{Phase: laxityv1alpha1.StepRunning, Message: "x"}); got != "" {
		t.Errorf("a running step has failure %q", got)
	}
}

// A start whose answer was lost (the operator crashed before recording the
// run's ID) is found by its name and token and cancelled; a run of the same
// name that is not the record's, such as another namespace's, is left be.
func TestCancelJobRunsFindsARunWhoseIDWasNotRecorded(t *testing.T) {
	ctx := context.Background()
	aws := emrfake.New(t)
	jobRuns := &emr.Clients{Options: []emr.Option{emr.WithCredentials(aws.Credentials()), emr.WithRetries(1, 0)}}
	runs, err := jobRuns.For(ctx, aws.Config())
	if err != nil {
		t.Fatal(err)
	}
	ours := emr.JobRun{Name: "q1-b0", ClientToken: "ours", EntryPoint: "s3://jobs/q1.jar", Executors: 2}
	theirs := ours
	theirs.ClientToken = "theirs"
	oursID, err := runs.StartJob(ctx, ours)
	if err != nil {
		t.Fatal(err)
	}
	theirsID, err := runs.StartJob(ctx, theirs)
	if err != nil {
		t.Fatal(err)
	}
	request, err := json.Marshal(ours)
	if err != nil {
		t.Fatal(err)
	}
	record := &corev1.ConfigMap{Data: map[string]string{recordRequest: string(request)}}
	record.Name, record.Labels = "q1-b0", map[string]string{LabelQuery: "q1"}
	other := &corev1.ConfigMap{Data: map[string]string{recordRequest: string(request)}}
	other.Name, other.Labels = "q2-b0", map[string]string{LabelQuery: "q2"}

	r := &ElasticScheduleReconciler{JobRuns: jobRuns}
	if err := r.cancelJobRuns(ctx, builder.Schedule("ns", "pool").Sizes(2).LeadTime(time.Minute).Backend(emrbuilder.Backend(aws.Config())).Obj(), []stepObject{{object: record}, {object: other}}, "q1"); err != nil {
		t.Fatalf("cancelJobRuns: %v", err)
	}
	states := map[string]string{}
	for _, run := range aws.Runs() {
		states[run.ID] = run.State
	}
	want := map[string]string{oursID: emr.StateCancelPending, theirsID: emr.StatePending}
	if diff := cmp.Diff(want, states); diff != "" {
		t.Errorf("job runs (-want +got):\n%s", diff)
	}
	if n := aws.CallCount(emrfake.OpCancelJobRun); n != 1 {
		t.Errorf("%d CancelJobRun calls, want 1: the other query's record is not this query's", n)
	}
}
