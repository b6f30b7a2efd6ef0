package jobrun

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/emr"
	"github.com/laxity-dev/laxity/internal/emr/emrfake"
	"github.com/laxity-dev/laxity/internal/steprun"
)

// emrSchedule is a schedule on the EMR on EKS backend of aws.
func emrSchedule(aws *emrfake.Server) *laxityv1alpha1.ElasticSchedule {
	cfg := aws.Config()
	es := &laxityv1alpha1.ElasticSchedule{}
	es.Namespace, es.Name = "ns", "pool"
	es.Spec.NodePool.Backend = laxityv1alpha1.PoolBackend{EMRContainers: &laxityv1alpha1.EMRContainersBackend{
		VirtualClusterID: cfg.VirtualClusterID, ExecutionRoleARN: cfg.ExecutionRoleARN, ReleaseLabel: cfg.ReleaseLabel,
		Region: cfg.Region, NodegroupName: cfg.NodegroupName, ClusterName: cfg.ClusterName, Endpoint: cfg.Endpoint,
	}}
	return es
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
	record := &corev1.ConfigMap{Data: map[string]string{steprun.RecordRequest: string(request)}}
	record.Name, record.Labels = "q1-b0", map[string]string{steprun.LabelQuery: "q1"}
	other := &corev1.ConfigMap{Data: map[string]string{steprun.RecordRequest: string(request)}}
	other.Name, other.Labels = "q2-b0", map[string]string{steprun.LabelQuery: "q2"}

	r := New(nil, jobRuns, emrSchedule(aws))
	if err := r.CancelUnfinished(ctx, []steprun.Step{{Object: record}, {Object: other}}, "q1"); err != nil {
		t.Fatalf("CancelUnfinished: %v", err)
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
