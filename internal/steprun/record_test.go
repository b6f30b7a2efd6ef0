package steprun

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/sparkapp"
)

func TestObserveJobRun(t *testing.T) {
	created := time.Date(2026, 12, 1, 0, 5, 0, 0, time.UTC)
	finished := created.Add(40 * time.Second)
	times := map[string]string{RecordCreatedAt: "2026-12-01T00:05:00Z", RecordFinishedAt: "2026-12-01T00:05:40Z"}
	with := func(state string, extra map[string]string) map[string]string {
		data := map[string]string{RecordRequest: "{}"}
		if state != "" {
			data[RecordState] = state
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
		{"pending", with("PENDING", map[string]string{RecordCreatedAt: times[RecordCreatedAt]}),
			sparkapp.Observation{Phase: laxityv1alpha1.StepRunning, State: "PENDING", Started: &created}},
		{"running", with("RUNNING", map[string]string{RecordCreatedAt: times[RecordCreatedAt]}),
			sparkapp.Observation{Phase: laxityv1alpha1.StepRunning, State: "RUNNING", Started: &created}},
		{"cancel pending still holds the pool", with("CANCEL_PENDING", times),
			sparkapp.Observation{Phase: laxityv1alpha1.StepRunning, State: "CANCEL_PENDING", Started: &created}},
		{"completed", with("COMPLETED", times),
			sparkapp.Observation{Phase: laxityv1alpha1.StepSucceeded, State: "COMPLETED", Started: &created, Ended: &finished}},
		{"failed, with the reason", with("FAILED", map[string]string{RecordCreatedAt: times[RecordCreatedAt], RecordFinishedAt: times[RecordFinishedAt], RecordMessage: "USER_ERROR: exit 1"}),
			sparkapp.Observation{Phase: laxityv1alpha1.StepFailed, State: "FAILED", Message: "USER_ERROR: exit 1", Started: &created, Ended: &finished}},
		{"cancelled is a failure", with("CANCELLED", times),
			sparkapp.Observation{Phase: laxityv1alpha1.StepFailed, State: "CANCELLED", Started: &created, Ended: &finished}},
		{"a state EMR adds later keeps laxity waiting", with("QUEUED", nil),
			sparkapp.Observation{Phase: laxityv1alpha1.StepRunning, State: "QUEUED"}},
		{"malformed times read as absent", with("COMPLETED", map[string]string{RecordCreatedAt: "yesterday"}),
			sparkapp.Observation{Phase: laxityv1alpha1.StepSucceeded, State: "COMPLETED"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ObserveRecord(&corev1.ConfigMap{Data: tc.data})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ObserveRecord (-want +got):\n%s", diff)
			}
		})
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
