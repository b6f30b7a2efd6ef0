package sparkapp

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/laxity-dev/laxity/api/v1alpha1"
)

// States of status.applicationState.state that spark-operator
// (sparkoperator.k8s.io/v1beta2, api/v1beta2/sparkapplication_types.go)
// writes. A new application has the empty state.
const (
	StateNew              = ""
	StateSubmitted        = "SUBMITTED"
	StateRunning          = "RUNNING"
	StateCompleted        = "COMPLETED"
	StateFailed           = "FAILED"
	StateSubmissionFailed = "SUBMISSION_FAILED"
	StatePendingRerun     = "PENDING_RERUN"
	StateInvalidating     = "INVALIDATING"
	StateSucceeding       = "SUCCEEDING"
	StateFailing          = "FAILING"
	StateUnknown          = "UNKNOWN"
	StateSuspending       = "SUSPENDING"
	StateSuspended        = "SUSPENDED"
	StateResuming         = "RESUMING"
)

// Observation is what laxity reads from a step's SparkApplication.
type Observation struct {
	// Phase is the step's outcome so far: Pending or Running while the step
	// may still run (both hold the pool), Succeeded or Failed once
	// spark-operator is done with it.
	Phase v1alpha1.StepOutcome
	// State is status.applicationState.state as spark-operator wrote it.
	State string
	// Message is status.applicationState.errorMessage, if any.
	Message string
	// Started is status.lastSubmissionAttemptTime, when the step was last
	// submitted; nil while Pending.
	Started *time.Time
	// Ended is status.terminationTime, when the driver terminated; set only
	// once the step is Succeeded or Failed.
	Ended *time.Time
}

// Observe reads a step's state from its SparkApplication's status, as
// spark-operator writes it. It never fails: missing or malformed fields read
// as absent.
//
// spark-operator's states map onto step outcomes as follows; only COMPLETED
// and FAILED are final for spark-operator, so laxity waits for them, except
// for a failed submission spark-operator will not retry:
//
//	state                               Phase      why
//	"" (new), NEW                       Pending    not submitted yet
//	SUBMITTED, RUNNING                  Running    driver pod created / running
//	SUCCEEDING                          Running    driver done; COMPLETED next, unless restartPolicy Always re-runs it
//	FAILING                             Running    driver failed; spark-operator may still retry it (restartPolicy OnFailure)
//	INVALIDATING                        Running    spec changed; pods being deleted before a re-run
//	UNKNOWN                             Running    driver pod state unknown (e.g. node lost)
//	SUSPENDING                          Running    pods being deleted for spec.suspend
//	PENDING_RERUN, SUSPENDED, RESUMING  Pending    no pods; waiting to be (re)submitted
//	SUBMISSION_FAILED                   Failed     if restartPolicy lets spark-operator retry no more
//	SUBMISSION_FAILED                   Pending    while spark-operator will resubmit (its ShouldRetry)
//	COMPLETED                           Succeeded
//	FAILED                              Failed
//	anything else                       Running    not final; laxity keeps waiting
//
// SparkApplication v1beta2 has no status.submissionTime (v1beta1 had), and
// its CRD prunes one, so Started comes from lastSubmissionAttemptTime, which
// a re-run moves forward. A Failed submission that has no terminationTime
// yet ended when it was attempted.
func Observe(app *unstructured.Unstructured) Observation {
	if app == nil {
		return Observation{Phase: v1alpha1.StepPending}
	}
	o := Observation{
		State:   nestedString(app.Object, "status", "applicationState", "state"),
		Message: nestedString(app.Object, "status", "applicationState", "errorMessage"),
	}
	attempted := nestedTime(app.Object, "status", "lastSubmissionAttemptTime")
	terminated := nestedTime(app.Object, "status", "terminationTime")

	switch o.State {
	case StateNew, "NEW", StatePendingRerun, StateSuspended, StateResuming:
		o.Phase = v1alpha1.StepPending
	case StateCompleted:
		o.Phase = v1alpha1.StepSucceeded
	case StateFailed:
		o.Phase = v1alpha1.StepFailed
	case StateSubmissionFailed:
		if willResubmit(app) {
			o.Phase = v1alpha1.StepPending
		} else {
			o.Phase = v1alpha1.StepFailed
			if terminated == nil {
				terminated = attempted
			}
		}
	default:
		o.Phase = v1alpha1.StepRunning
	}

	if o.Phase != v1alpha1.StepPending {
		o.Started = attempted
	}
	if o.Phase == v1alpha1.StepSucceeded || o.Phase == v1alpha1.StepFailed {
		o.Ended = terminated
	}
	return o
}

// willResubmit mirrors spark-operator's ShouldRetry for a failed submission
// (pkg/util): restartPolicy Always resubmits forever, OnFailure while
// status.submissionAttempts <= restartPolicy.onSubmissionFailureRetries.
func willResubmit(app *unstructured.Unstructured) bool {
	switch nestedString(app.Object, "spec", "restartPolicy", "type") {
	case "Always":
		return true
	case "OnFailure":
		retries, ok := nestedInt(app.Object, "spec", "restartPolicy", "onSubmissionFailureRetries")
		if !ok {
			return false
		}
		attempts, _ := nestedInt(app.Object, "status", "submissionAttempts")
		return attempts <= retries
	default:
		return false
	}
}

// nestedString is the string at path, or "" when it is absent or not a
// string.
func nestedString(obj map[string]any, path ...string) string {
	s, _, err := unstructured.NestedString(obj, path...)
	if err != nil {
		return ""
	}
	return s
}

// nestedInt is the integer at path; ok is false when it is absent or not an
// integer.
func nestedInt(obj map[string]any, path ...string) (int64, bool) {
	v, found, err := unstructured.NestedFieldNoCopy(obj, path...)
	if err != nil || !found {
		return 0, false
	}
	switch n := v.(type) {
	case int64:
		return n, true
	case float64:
		if n == float64(int64(n)) {
			return int64(n), true
		}
	}
	return 0, false
}

// nestedTime is the RFC 3339 instant at path, or nil when it is absent,
// null, zero or malformed.
func nestedTime(obj map[string]any, path ...string) *time.Time {
	s := nestedString(obj, path...)
	if s == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil || t.IsZero() {
		return nil
	}
	return &t
}
