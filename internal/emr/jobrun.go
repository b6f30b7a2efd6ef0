package emr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/emrcontainers"
	"github.com/aws/aws-sdk-go-v2/service/emrcontainers/types"
	"github.com/aws/smithy-go"
)

// The states of a job run, as EMR on EKS reports them.
const (
	StatePending       = string(types.JobRunStatePending)
	StateSubmitted     = string(types.JobRunStateSubmitted)
	StateRunning       = string(types.JobRunStateRunning)
	StateCompleted     = string(types.JobRunStateCompleted)
	StateFailed        = string(types.JobRunStateFailed)
	StateCancelled     = string(types.JobRunStateCancelled)
	StateCancelPending = string(types.JobRunStateCancelPending)
)

// JobRun is one step to run as a Spark job on the virtual cluster.
type JobRun struct {
	// Name is the job run's name, the step's deterministic name; FindJob
	// looks runs up by it.
	Name string `json:"name"`
	// ClientToken is StartJobRun's idempotency token, derived by the caller
	// from the deterministic step name and attempt, e.g. "q1-b3-r1".
	ClientToken string `json:"clientToken"`
	// EntryPoint is the application's jar or Python file, e.g. an s3:// URI.
	EntryPoint string `json:"entryPoint"`
	// EntryPointArguments are the application's arguments.
	EntryPointArguments []string `json:"entryPointArguments,omitempty"`
	// SparkSubmitParameters are passed to spark-submit. They must not set
	// the executor count or enable dynamic allocation: StartJob sets
	// spark.executor.instances to Executors.
	SparkSubmitParameters string `json:"sparkSubmitParameters,omitempty"`
	// Executors is the number of Spark executors, at least 1.
	Executors int32 `json:"executors"`
	// Tags are the job run's AWS tags.
	Tags map[string]string `json:"tags,omitempty"`
}

// JobState is what EMR on EKS says about a job run.
type JobState struct {
	// State is one of the State* constants.
	State string
	// Message says why the run is in State: the failure reason and AWS's
	// state details, when it gives them.
	Message string
	// CreatedAt and FinishedAt are nil until AWS reports them.
	CreatedAt, FinishedAt *time.Time
	// Tags are the job run's AWS tags.
	Tags map[string]string
}

// Finished says whether the run has ended: completed, failed or cancelled.
func (s JobState) Finished() bool {
	switch s.State {
	case StateCompleted, StateFailed, StateCancelled:
		return true
	}
	return false
}

// StartJob starts r on the virtual cluster with the Config's execution role
// and release label, and returns the job run's ID.
//
// StartJobRun is idempotent in its client token: a second call with the same
// r.ClientToken returns the run the first call started instead of starting
// another one. So a launch repeated after the operator crashed between
// starting a step and recording it does not run the step twice, as long as
// the token is derived from the step and attempt rather than made up anew.
func (c *Client) StartJob(ctx context.Context, r JobRun) (string, error) {
	if r.Name == "" {
		return "", rejectf("starting a job run: the name must not be empty")
	}
	params, err := r.sparkSubmitParameters()
	if err != nil {
		return "", fmt.Errorf("starting job run %s: %w", r.Name, err)
	}
	out, err := c.emr.StartJobRun(ctx, &emrcontainers.StartJobRunInput{
		VirtualClusterId: aws.String(c.cfg.VirtualClusterID),
		Name:             aws.String(r.Name),
		ClientToken:      aws.String(r.ClientToken),
		ExecutionRoleArn: aws.String(c.cfg.ExecutionRoleARN),
		ReleaseLabel:     aws.String(c.cfg.ReleaseLabel),
		JobDriver: &types.JobDriver{SparkSubmitJobDriver: &types.SparkSubmitJobDriver{
			EntryPoint:            aws.String(r.EntryPoint),
			EntryPointArguments:   r.EntryPointArguments,
			SparkSubmitParameters: aws.String(params),
		}},
		Tags: r.Tags,
	})
	if err != nil {
		return "", fmt.Errorf("starting job run %s: %w", r.Name, wrapCall(serviceEMR, "StartJobRun", err))
	}
	if aws.ToString(out.Id) == "" {
		return "", fmt.Errorf("starting job run %s: StartJobRun returned no job run ID", r.Name)
	}
	return *out.Id, nil
}

// sparkSubmitParameters checks r and returns its spark-submit parameters
// with the executor count appended.
func (r JobRun) sparkSubmitParameters() (string, error) {
	switch {
	case r.ClientToken == "":
		// The SDK would make up a random token, and a repeated launch would
		// start a second run.
		return "", rejectf("the client token must not be empty")
	case r.Executors < 1:
		return "", rejectf("%d executors: at least one is needed", r.Executors)
	}
	if err := checkExecutorSettings(r.SparkSubmitParameters); err != nil {
		return "", err
	}
	executors := fmt.Sprintf("--conf spark.executor.instances=%d", r.Executors)
	if params := strings.TrimSpace(r.SparkSubmitParameters); params != "" {
		return params + " " + executors, nil
	}
	return executors, nil
}

// checkExecutorSettings rejects spark-submit parameters that set the
// executor count, which laxity sizes to the ready nodes, or that enable
// dynamic allocation, which would let Spark change it.
func checkExecutorSettings(params string) error {
	args, err := splitArgs(params)
	if err != nil {
		return rejectf("sparkSubmitParameters: %v", err)
	}
	for i, arg := range args {
		var setting string
		switch {
		case arg == "--num-executors" || strings.HasPrefix(arg, "--num-executors="):
			return rejectf("sparkSubmitParameters: --num-executors is set by laxity from the ready nodes; remove it")
		case arg == "--conf" && i+1 < len(args):
			setting = args[i+1]
		case strings.HasPrefix(arg, "--conf="):
			setting = strings.TrimPrefix(arg, "--conf=")
		default:
			continue
		}
		key, value, _ := strings.Cut(setting, "=")
		key = strings.TrimSpace(key)
		switch {
		case key == "spark.executor.instances":
			return rejectf("sparkSubmitParameters: spark.executor.instances is set by laxity from the ready nodes; remove it")
		case key == "spark.dynamicAllocation.enabled" && !strings.EqualFold(strings.TrimSpace(value), "false"):
			return rejectf("sparkSubmitParameters: spark.dynamicAllocation.enabled=%s: laxity sizes the executors to the ready nodes; dynamic allocation must stay off", value)
		}
	}
	return nil
}

// splitArgs splits spark-submit parameters into arguments as a POSIX shell
// would for the quoting people use there: whitespace separates, and single
// or double quotes group, as in --conf "spark.driver.extraJavaOptions=-Da -Db".
func splitArgs(s string) ([]string, error) {
	var (
		args    []string
		current strings.Builder
		inArg   bool
		quote   rune
	)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			current.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inArg = r, true
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			if inArg {
				args = append(args, current.String())
				current.Reset()
				inArg = false
			}
		default:
			current.WriteRune(r)
			inArg = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if inArg {
		args = append(args, current.String())
	}
	return args, nil
}

// DescribeJob is the state of the job run with the given ID.
func (c *Client) DescribeJob(ctx context.Context, id string) (JobState, error) {
	out, err := c.emr.DescribeJobRun(ctx, &emrcontainers.DescribeJobRunInput{
		VirtualClusterId: aws.String(c.cfg.VirtualClusterID),
		Id:               aws.String(id),
	})
	if err != nil {
		return JobState{}, fmt.Errorf("describing job run %s: %w", id, wrapCall(serviceEMR, "DescribeJobRun", err))
	}
	if out.JobRun == nil {
		return JobState{}, fmt.Errorf("describing job run %s: DescribeJobRun returned no job run", id)
	}
	run := out.JobRun
	var message []string
	if run.FailureReason != "" {
		message = append(message, string(run.FailureReason))
	}
	if details := aws.ToString(run.StateDetails); details != "" {
		message = append(message, details)
	}
	return JobState{
		State:      string(run.State),
		Message:    strings.Join(message, ": "),
		CreatedAt:  run.CreatedAt,
		FinishedAt: run.FinishedAt,
		Tags:       run.Tags,
	}, nil
}

// FindJob looks up the job run named name that was started with
// clientToken, so that a restarted operator finds a run whose StartJobRun
// answer it never got. The token tells laxity's run from others of the same
// name on the virtual cluster, such as another namespace's step or an
// earlier query of the same name.
func (c *Client) FindJob(ctx context.Context, name, clientToken string) (id string, found bool, err error) {
	pages := emrcontainers.NewListJobRunsPaginator(c.emr, &emrcontainers.ListJobRunsInput{
		VirtualClusterId: aws.String(c.cfg.VirtualClusterID),
		Name:             aws.String(name),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return "", false, fmt.Errorf("finding job run %s: %w", name, wrapCall(serviceEMR, "ListJobRuns", err))
		}
		for i := range page.JobRuns {
			run := &page.JobRuns[i]
			// The name filter is the service's; only an exact match counts,
			// whatever matching it applies.
			if aws.ToString(run.Name) == name && aws.ToString(run.ClientToken) == clientToken && aws.ToString(run.Id) != "" {
				return *run.Id, true, nil
			}
		}
	}
	return "", false, nil
}

// CancelJob cancels the job run with the given ID. A run that has already
// finished, or whose cancellation is under way, is left as it is without an
// error.
func (c *Client) CancelJob(ctx context.Context, id string) error {
	_, err := c.emr.CancelJobRun(ctx, &emrcontainers.CancelJobRunInput{
		VirtualClusterId: aws.String(c.cfg.VirtualClusterID),
		Id:               aws.String(id),
	})
	if err == nil {
		return nil
	}
	cancelErr := fmt.Errorf("cancelling job run %s: %w", id, wrapCall(serviceEMR, "CancelJobRun", err))
	// EMR on EKS refuses to cancel a run that has ended; rather than depend
	// on the wording of that refusal, ask the run's state. A call that did
	// not get an answer, or was throttled, says nothing about the run.
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || IsRetryable(err) {
		return cancelErr
	}
	state, describeErr := c.DescribeJob(ctx, id)
	if describeErr != nil {
		return cancelErr
	}
	if state.Finished() || state.State == StateCancelPending {
		return nil
	}
	return cancelErr
}
