package emr_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/laxity-dev/laxity/internal/emr"
	"github.com/laxity-dev/laxity/internal/emr/emrfake"
)

// fakeEpoch is when emrfake creates its first job run without a clock.
var fakeEpoch = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// batchRun is the job run of batch index of query q1, attempt 1.
func batchRun(index int) emr.JobRun {
	name := fmt.Sprintf("q1-b%d", index)
	return emr.JobRun{
		Name:                  name,
		ClientToken:           name + "-r1",
		EntryPoint:            "s3://analytics/jobs/q1.py",
		EntryPointArguments:   []string{"--from-tuple", "0", "--to-tuple", "2090000"},
		SparkSubmitParameters: "--conf spark.executor.memory=4g",
		Executors:             4,
		Tags:                  map[string]string{"laxity.dev/query": "q1", "laxity.dev/step": "batch"},
	}
}

// TestJobLifecycle starts a job run, checks what reached AWS, and follows
// the run through its states.
func TestJobLifecycle(t *testing.T) {
	ctx := context.Background()
	f := emrfake.New(t)
	c := newClient(t, f)
	run := batchRun(0)
	id, err := c.StartJob(ctx, run)
	if err != nil {
		t.Fatalf("StartJob: %v", err)
	}

	wantSent := emrfake.StartJobRunRequest{
		Name:             "q1-b0",
		ClientToken:      "q1-b0-r1",
		ExecutionRoleArn: emrfake.ExecutionRoleARN,
		ReleaseLabel:     emrfake.ReleaseLabel,
		JobDriver: emrfake.JobDriver{SparkSubmitJobDriver: &emrfake.SparkSubmitJobDriver{
			EntryPoint:            "s3://analytics/jobs/q1.py",
			EntryPointArguments:   []string{"--from-tuple", "0", "--to-tuple", "2090000"},
			SparkSubmitParameters: "--conf spark.executor.memory=4g --conf spark.executor.instances=4",
		}},
		Tags: map[string]string{"laxity.dev/query": "q1", "laxity.dev/step": "batch"},
	}
	if diff := cmp.Diff(wantSent, f.LastStart()); diff != "" {
		t.Errorf("StartJobRun body (-want +got):\n%s", diff)
	}

	created := fakeEpoch
	finished := fakeEpoch.Add(30 * time.Second)
	steps := []struct {
		state, details, reason string
		want                   emr.JobState
	}{
		{state: emr.StatePending, want: emr.JobState{State: emr.StatePending, CreatedAt: &created, Tags: run.Tags}},
		{state: emr.StateSubmitted, want: emr.JobState{State: emr.StateSubmitted, CreatedAt: &created, Tags: run.Tags}},
		{state: emr.StateRunning, want: emr.JobState{State: emr.StateRunning, CreatedAt: &created, Tags: run.Tags}},
		{state: emr.StateCompleted, details: "JobRun completed successfully. It ran for 30 Seconds",
			want: emr.JobState{State: emr.StateCompleted, Message: "JobRun completed successfully. It ran for 30 Seconds",
				CreatedAt: &created, FinishedAt: &finished, Tags: run.Tags}},
	}
	for _, step := range steps {
		f.SetState(id, step.state, step.details, step.reason)
		got, err := c.DescribeJob(ctx, id)
		if err != nil {
			t.Fatalf("DescribeJob in %s: %v", step.state, err)
		}
		if diff := cmp.Diff(step.want, got); diff != "" {
			t.Errorf("DescribeJob in %s (-want +got):\n%s", step.state, diff)
		}
		if got.Finished() != (step.state == emr.StateCompleted) {
			t.Errorf("Finished() in %s = %t", step.state, got.Finished())
		}
	}
}

func TestDescribeFailedJob(t *testing.T) {
	ctx := context.Background()
	f := emrfake.New(t)
	c := newClient(t, f)
	id, err := c.StartJob(ctx, batchRun(0))
	if err != nil {
		t.Fatalf("StartJob: %v", err)
	}
	f.SetState(id, emr.StateFailed, "Job failed with exit code 1: OutOfMemoryError", "USER_ERROR")
	got, err := c.DescribeJob(ctx, id)
	if err != nil {
		t.Fatalf("DescribeJob: %v", err)
	}
	if want := "USER_ERROR: Job failed with exit code 1: OutOfMemoryError"; got.State != emr.StateFailed || got.Message != want || !got.Finished() {
		t.Errorf("DescribeJob = %+v, want state FAILED, finished, message %q", got, want)
	}

	_, err = c.DescribeJob(ctx, "0000000000000000099")
	const wantErr = "describing job run 0000000000000000099: emr-containers DescribeJobRun: ResourceNotFoundException: Job run 0000000000000000099 doesn't exist."
	if err == nil || err.Error() != wantErr {
		t.Errorf("DescribeJob of an unknown run = %v, want %q", err, wantErr)
	}
	if !emr.IsInvalid(err) {
		t.Errorf("IsInvalid(%v) = false, want true", err)
	}
}

// TestStartJobSameClientToken repeats a launch, as an operator restarted
// between starting a step and recording it would: one run, one ID.
func TestStartJobSameClientToken(t *testing.T) {
	ctx := context.Background()
	f := emrfake.New(t)
	c := newClient(t, f)
	first, err := c.StartJob(ctx, batchRun(3))
	if err != nil {
		t.Fatalf("StartJob: %v", err)
	}
	again, err := newClient(t, f).StartJob(ctx, batchRun(3))
	if err != nil {
		t.Fatalf("StartJob again: %v", err)
	}
	if again != first || f.RunCount() != 1 {
		t.Errorf("the same client token twice gave IDs %s and %s and %d runs; want one run", first, again, f.RunCount())
	}

	retry := batchRun(3)
	retry.ClientToken = "q1-b3-r2"
	second, err := c.StartJob(ctx, retry)
	if err != nil {
		t.Fatalf("StartJob of attempt 2: %v", err)
	}
	if second == first || f.RunCount() != 2 {
		t.Errorf("a new attempt's token gave ID %s (first %s) and %d runs; want a second run", second, first, f.RunCount())
	}
}

// TestFindJobAfterRestart finds runs by name and client token with a
// client built afresh, through several pages, ignoring runs whose names
// merely start alike and a run of the same name with another token.
func TestFindJobAfterRestart(t *testing.T) {
	ctx := context.Background()
	f := emrfake.New(t)
	c := newClient(t, f)
	retry := batchRun(1)
	retry.ClientToken = "q1-b1-r2"
	// q1-b1 runs twice; q1-b10 and q1-b11 start like it and are newer than
	// both its runs.
	runs := []emr.JobRun{batchRun(0), batchRun(1), batchRun(2), retry, batchRun(10), batchRun(11)}
	ids := map[string]string{}
	for _, run := range runs {
		id, err := c.StartJob(ctx, run)
		if err != nil {
			t.Fatalf("StartJob %s: %v", run.ClientToken, err)
		}
		ids[run.ClientToken] = id
	}

	restarted := newClient(t, f)
	for _, run := range runs {
		id, found, err := restarted.FindJob(ctx, run.Name, run.ClientToken)
		if want := ids[run.ClientToken]; err != nil || !found || id != want {
			t.Errorf("FindJob(%s, %s) = %s, %t, %v; want %s, true", run.Name, run.ClientToken, id, found, err, want)
		}
	}
	if id, found, err := restarted.FindJob(ctx, "q1-b5", batchRun(5).ClientToken); err != nil || found {
		t.Errorf("FindJob of a run never started = %s, %t, %v; want not found", id, found, err)
	}
	if id, found, err := restarted.FindJob(ctx, "q1-b1", "another-namespace-q1-b1"); err != nil || found {
		t.Errorf("FindJob with another token = %s, %t, %v; want not found", id, found, err)
	}
	// q1-b1's prefix matches four runs: two of the fake's two-run pages.
	before := f.CallCount(emrfake.OpListJobRuns)
	if _, _, err := restarted.FindJob(ctx, "q1-b1", "no-such-token"); err != nil {
		t.Fatalf("FindJob(q1-b1): %v", err)
	}
	if n := f.CallCount(emrfake.OpListJobRuns) - before; n != 2 {
		t.Errorf("FindJob(q1-b1) read %d ListJobRuns pages, want 2", n)
	}
}

func TestCancelJob(t *testing.T) {
	ctx := context.Background()
	f := emrfake.New(t)
	c := newClient(t, f)
	running, err := c.StartJob(ctx, batchRun(0))
	if err != nil {
		t.Fatalf("StartJob: %v", err)
	}
	f.SetState(running, emr.StateRunning, "", "")
	if err := c.CancelJob(ctx, running); err != nil {
		t.Fatalf("CancelJob of a running run: %v", err)
	}
	if state, err := c.DescribeJob(ctx, running); err != nil || state.State != emr.StateCancelPending {
		t.Errorf("after CancelJob: %+v, %v; want CANCEL_PENDING", state, err)
	}
	if err := c.CancelJob(ctx, running); err != nil {
		t.Errorf("CancelJob while the cancellation is pending: %v", err)
	}
	f.SetState(running, emr.StateCancelled, "", "")
	if err := c.CancelJob(ctx, running); err != nil {
		t.Errorf("CancelJob of a cancelled run: %v", err)
	}

	completed, err := c.StartJob(ctx, batchRun(1))
	if err != nil {
		t.Fatalf("StartJob: %v", err)
	}
	f.SetState(completed, emr.StateCompleted, "", "")
	if err := c.CancelJob(ctx, completed); err != nil {
		t.Errorf("CancelJob of a completed run: %v", err)
	}

	err = c.CancelJob(ctx, "0000000000000000099")
	if err == nil || !emr.IsInvalid(err) ||
		!strings.HasPrefix(err.Error(), "cancelling job run 0000000000000000099: emr-containers CancelJobRun: ResourceNotFoundException: ") {
		t.Errorf("CancelJob of an unknown run = %v, want an invalid ResourceNotFoundException", err)
	}
}

// TestThrottledCallsAreRetried throttles each job run call a few times:
// the SDK retries until the call succeeds, and the start still makes one
// run.
func TestThrottledCallsAreRetried(t *testing.T) {
	ctx := context.Background()
	f := emrfake.New(t)
	c := newClient(t, f)
	for _, op := range []string{emrfake.OpStartJobRun, emrfake.OpDescribeJobRun, emrfake.OpListJobRuns, emrfake.OpCancelJobRun} {
		f.Fail(op, 3, http.StatusTooManyRequests, "ThrottlingException", "Rate exceeded")
	}
	id, err := c.StartJob(ctx, batchRun(0))
	if err != nil {
		t.Fatalf("StartJob: %v", err)
	}
	if _, err := c.DescribeJob(ctx, id); err != nil {
		t.Errorf("DescribeJob: %v", err)
	}
	if got, found, err := c.FindJob(ctx, "q1-b0", batchRun(0).ClientToken); err != nil || !found || got != id {
		t.Errorf("FindJob = %s, %t, %v; want %s", got, found, err, id)
	}
	if err := c.CancelJob(ctx, id); err != nil {
		t.Errorf("CancelJob: %v", err)
	}
	for _, op := range []string{emrfake.OpStartJobRun, emrfake.OpDescribeJobRun, emrfake.OpListJobRuns, emrfake.OpCancelJobRun} {
		if n := f.CallCount(op); n != 4 {
			t.Errorf("%s calls = %d, want 3 throttled and 1 answered", op, n)
		}
	}
	if f.RunCount() != 1 {
		t.Errorf("%d job runs, want 1", f.RunCount())
	}
}

// TestThrottlingOutlastsRetries throttles more often than the client
// tries: the error says so, with AWS's words, and is retryable.
func TestThrottlingOutlastsRetries(t *testing.T) {
	f := emrfake.New(t)
	c := newClient(t, f)
	f.Fail(emrfake.OpStartJobRun, 10, http.StatusTooManyRequests, "ThrottlingException", "Rate exceeded")
	_, err := c.StartJob(context.Background(), batchRun(0))
	const want = "starting job run q1-b0: emr-containers StartJobRun: ThrottlingException: Rate exceeded (gave up after 4 attempts)"
	if err == nil || err.Error() != want {
		t.Fatalf("StartJob = %v, want %q", err, want)
	}
	if !emr.IsRetryable(err) || emr.IsInvalid(err) {
		t.Errorf("IsRetryable, IsInvalid = %t, %t; want true, false", emr.IsRetryable(err), emr.IsInvalid(err))
	}
	if n := f.CallCount(emrfake.OpStartJobRun); n != 4 {
		t.Errorf("StartJobRun calls = %d, want 4", n)
	}
}

// TestValidationError starts a run AWS refuses: AWS's message reaches the
// caller at once, without retries, as an invalid request.
func TestValidationError(t *testing.T) {
	f := emrfake.New(t)
	c := newClient(t, f, func(c *emr.Config) { c.ReleaseLabel = "emr-latest" })
	_, err := c.StartJob(context.Background(), batchRun(0))
	const want = "starting job run q1-b0: emr-containers StartJobRun: ValidationException: Release label emr-latest is not valid."
	if err == nil || err.Error() != want {
		t.Fatalf("StartJob = %v, want %q", err, want)
	}
	if !emr.IsInvalid(err) || emr.IsRetryable(err) {
		t.Errorf("IsInvalid, IsRetryable = %t, %t; want true, false", emr.IsInvalid(err), emr.IsRetryable(err))
	}
	if n := f.CallCount(emrfake.OpStartJobRun); n != 1 {
		t.Errorf("StartJobRun calls = %d, want 1", n)
	}

	f.Fail(emrfake.OpStartJobRun, 1, http.StatusBadRequest, "ValidationException", "Entry point s3://analytics/jobs/q1.py is not accessible.")
	_, err = newClient(t, f).StartJob(context.Background(), batchRun(0))
	if err == nil || !emr.IsInvalid(err) || !strings.HasSuffix(err.Error(), "ValidationException: Entry point s3://analytics/jobs/q1.py is not accessible.") {
		t.Errorf("StartJob = %v, want an invalid ValidationException with AWS's message", err)
	}
}

func TestStartJobSparkSubmitParameters(t *testing.T) {
	tests := []struct {
		name    string
		params  string
		want    string
		wantErr string
	}{
		{name: "none", params: "", want: "--conf spark.executor.instances=4"},
		{name: "quoted and spaced", params: `  --conf "spark.driver.extraJavaOptions=-Da=1 -Db=2" --conf spark.dynamicAllocation.enabled=false `,
			want: `--conf "spark.driver.extraJavaOptions=-Da=1 -Db=2" --conf spark.dynamicAllocation.enabled=false --conf spark.executor.instances=4`},
		{name: "executor instances", params: "--conf spark.executor.memory=4g --conf spark.executor.instances=8",
			wantErr: "starting job run q1-b0: sparkSubmitParameters: spark.executor.instances is set by laxity from the ready nodes; remove it"},
		{name: "executor instances in quotes", params: `--conf 'spark.executor.instances=8'`,
			wantErr: "sparkSubmitParameters: spark.executor.instances is set by laxity"},
		{name: "conf=", params: `--conf=spark.executor.instances=8`,
			wantErr: "sparkSubmitParameters: spark.executor.instances is set by laxity"},
		{name: "num executors", params: "--num-executors 8",
			wantErr: "sparkSubmitParameters: --num-executors is set by laxity from the ready nodes; remove it"},
		{name: "dynamic allocation", params: "--conf spark.dynamicAllocation.enabled=true",
			wantErr: "sparkSubmitParameters: spark.dynamicAllocation.enabled=true: laxity sizes the executors to the ready nodes; dynamic allocation must stay off"},
		{name: "unterminated quote", params: `--conf "spark.executor.memory=4g`,
			wantErr: "sparkSubmitParameters: unterminated \" quote"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := emrfake.New(t)
			c := newClient(t, f)
			run := batchRun(0)
			run.SparkSubmitParameters = tc.params
			_, err := c.StartJob(context.Background(), run)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !emr.IsInvalid(err) {
					t.Fatalf("StartJob = %v, want an invalid request error containing %q", err, tc.wantErr)
				}
				if n := f.CallCount(emrfake.OpStartJobRun); n != 0 {
					t.Errorf("a rejected run sent %d StartJobRun calls", n)
				}
				return
			}
			if err != nil {
				t.Fatalf("StartJob: %v", err)
			}
			if got := f.LastStart().JobDriver.SparkSubmitJobDriver.SparkSubmitParameters; got != tc.want {
				t.Errorf("sparkSubmitParameters = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestStartJobRejectsIncompleteRun(t *testing.T) {
	f := emrfake.New(t)
	c := newClient(t, f)
	tests := []struct {
		change  func(*emr.JobRun)
		wantErr string
	}{
		{func(r *emr.JobRun) { r.Name = "" }, "starting a job run: the name must not be empty"},
		{func(r *emr.JobRun) { r.ClientToken = "" }, "starting job run q1-b0: the client token must not be empty"},
		{func(r *emr.JobRun) { r.Executors = 0 }, "starting job run q1-b0: 0 executors: at least one is needed"},
	}
	for _, tc := range tests {
		run := batchRun(0)
		tc.change(&run)
		_, err := c.StartJob(context.Background(), run)
		if err == nil || err.Error() != tc.wantErr || !emr.IsInvalid(err) {
			t.Errorf("StartJob = %v, want an invalid request error %q", err, tc.wantErr)
		}
	}
	if n := f.CallCount(emrfake.OpStartJobRun); n != 0 {
		t.Errorf("rejected runs sent %d StartJobRun calls", n)
	}
}
