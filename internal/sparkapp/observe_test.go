package sparkapp

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/laxity-dev/laxity/api/v1alpha1"
)

func TestObserve(t *testing.T) {
	const (
		submitted  = "2026-12-01T00:10:00Z"
		terminated = "2026-12-01T00:11:30Z"
	)
	at := func(s string) *time.Time {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			panic(err)
		}
		return &t
	}
	app := func(spec, status map[string]any) *unstructured.Unstructured {
		obj := map[string]any{"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication", "spec": spec}
		if status != nil {
			obj["status"] = status
		}
		return &unstructured.Unstructured{Object: obj}
	}
	status := func(state string, extra ...any) map[string]any {
		s := map[string]any{
			"applicationState":          map[string]any{"state": state},
			"lastSubmissionAttemptTime": submitted,
			"driverInfo":                map[string]any{},
		}
		for i := 0; i < len(extra); i += 2 {
			s[extra[i].(string)] = extra[i+1]
		}
		return s
	}
	onFailure := func(retries int64) map[string]any {
		return map[string]any{"restartPolicy": map[string]any{"type": "OnFailure", "onSubmissionFailureRetries": retries}}
	}
	for _, tc := range []struct {
		name string
		app  *unstructured.Unstructured
		want Observation
	}{
		{name: "nil", app: nil, want: Observation{Phase: v1alpha1.StepPending}},
		{name: "no status yet", app: app(nil, nil), want: Observation{Phase: v1alpha1.StepPending}},
		{name: "new", app: app(nil, map[string]any{"applicationState": map[string]any{"state": ""}}), want: Observation{Phase: v1alpha1.StepPending}},
		{name: "NEW of older operators", app: app(nil, map[string]any{"applicationState": map[string]any{"state": "NEW"}}),
			want: Observation{Phase: v1alpha1.StepPending, State: "NEW"}},
		{name: "submitted", app: app(nil, status(StateSubmitted)),
			want: Observation{Phase: v1alpha1.StepRunning, State: StateSubmitted, Started: at(submitted)}},
		{name: "running", app: app(nil, status(StateRunning)),
			want: Observation{Phase: v1alpha1.StepRunning, State: StateRunning, Started: at(submitted)}},
		{name: "succeeding is still running", app: app(nil, status(StateSucceeding, "terminationTime", terminated)),
			want: Observation{Phase: v1alpha1.StepRunning, State: StateSucceeding, Started: at(submitted)}},
		{name: "failing is still running", app: app(nil, status(StateFailing, "terminationTime", terminated)),
			want: Observation{Phase: v1alpha1.StepRunning, State: StateFailing, Started: at(submitted)}},
		{name: "invalidating", app: app(nil, status(StateInvalidating)),
			want: Observation{Phase: v1alpha1.StepRunning, State: StateInvalidating, Started: at(submitted)}},
		{name: "unknown", app: app(nil, status(StateUnknown)),
			want: Observation{Phase: v1alpha1.StepRunning, State: StateUnknown, Started: at(submitted)}},
		{name: "suspending", app: app(nil, status(StateSuspending)),
			want: Observation{Phase: v1alpha1.StepRunning, State: StateSuspending, Started: at(submitted)}},
		{name: "an unrecognised state is not final", app: app(nil, status("EXPLODED")),
			want: Observation{Phase: v1alpha1.StepRunning, State: "EXPLODED", Started: at(submitted)}},
		{name: "pending rerun", app: app(nil, map[string]any{"applicationState": map[string]any{"state": StatePendingRerun}, "lastSubmissionAttemptTime": nil}),
			want: Observation{Phase: v1alpha1.StepPending, State: StatePendingRerun}},
		{name: "suspended", app: app(nil, status(StateSuspended)),
			want: Observation{Phase: v1alpha1.StepPending, State: StateSuspended}},
		{name: "resuming", app: app(nil, status(StateResuming)),
			want: Observation{Phase: v1alpha1.StepPending, State: StateResuming}},
		{name: "completed", app: app(nil, status(StateCompleted, "terminationTime", terminated)),
			want: Observation{Phase: v1alpha1.StepSucceeded, State: StateCompleted, Started: at(submitted), Ended: at(terminated)}},
		{name: "failed", app: app(nil, map[string]any{
			"applicationState":          map[string]any{"state": StateFailed, "errorMessage": "driver container failed with ExitCode: 1"},
			"lastSubmissionAttemptTime": submitted, "terminationTime": terminated,
		}), want: Observation{Phase: v1alpha1.StepFailed, State: StateFailed, Message: "driver container failed with ExitCode: 1", Started: at(submitted), Ended: at(terminated)}},
		{name: "submission failed, no retries", app: app(nil, map[string]any{
			"applicationState":          map[string]any{"state": StateSubmissionFailed, "errorMessage": "failed to run spark-submit"},
			"lastSubmissionAttemptTime": submitted, "submissionAttempts": int64(1),
		}), want: Observation{Phase: v1alpha1.StepFailed, State: StateSubmissionFailed, Message: "failed to run spark-submit", Started: at(submitted), Ended: at(submitted)}},
		{name: "submission failed, Never", app: app(map[string]any{"restartPolicy": map[string]any{"type": "Never"}}, status(StateSubmissionFailed, "terminationTime", terminated)),
			want: Observation{Phase: v1alpha1.StepFailed, State: StateSubmissionFailed, Started: at(submitted), Ended: at(terminated)}},
		{name: "submission failed, spark-operator will resubmit", app: app(onFailure(3), status(StateSubmissionFailed, "submissionAttempts", int64(3))),
			want: Observation{Phase: v1alpha1.StepPending, State: StateSubmissionFailed}},
		{name: "submission failed, resubmissions used up", app: app(onFailure(3), status(StateSubmissionFailed, "submissionAttempts", int64(4))),
			want: Observation{Phase: v1alpha1.StepFailed, State: StateSubmissionFailed, Started: at(submitted), Ended: at(submitted)}},
		{name: "submission failed, OnFailure without submission retries", app: app(map[string]any{"restartPolicy": map[string]any{"type": "OnFailure", "onFailureRetries": int64(3)}}, status(StateSubmissionFailed)),
			want: Observation{Phase: v1alpha1.StepFailed, State: StateSubmissionFailed, Started: at(submitted), Ended: at(submitted)}},
		{name: "submission failed, Always", app: app(map[string]any{"restartPolicy": map[string]any{"type": "Always"}}, status(StateSubmissionFailed)),
			want: Observation{Phase: v1alpha1.StepPending, State: StateSubmissionFailed}},
		{name: "malformed state", app: app(nil, map[string]any{"applicationState": map[string]any{"state": int64(3)}}),
			want: Observation{Phase: v1alpha1.StepPending}},
		{name: "malformed applicationState", app: app(nil, map[string]any{"applicationState": "RUNNING"}),
			want: Observation{Phase: v1alpha1.StepPending}},
		{name: "malformed times", app: app(nil, status(StateCompleted, "lastSubmissionAttemptTime", "yesterday", "terminationTime", int64(5))),
			want: Observation{Phase: v1alpha1.StepSucceeded, State: StateCompleted}},
		{name: "null termination time", app: app(nil, status(StateCompleted, "terminationTime", nil)),
			want: Observation{Phase: v1alpha1.StepSucceeded, State: StateCompleted, Started: at(submitted)}},
		{name: "submissionTime is not read", app: app(nil, map[string]any{"applicationState": map[string]any{"state": StateRunning}, "submissionTime": submitted}),
			want: Observation{Phase: v1alpha1.StepRunning, State: StateRunning}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Observe(tc.app)); diff != "" {
				t.Errorf("Observe (-want +got):\n%s", diff)
			}
		})
	}
}
