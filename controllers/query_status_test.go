package controllers

import (
	"strings"
	"testing"
	"unicode/utf8"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/sparkapp"
)

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
