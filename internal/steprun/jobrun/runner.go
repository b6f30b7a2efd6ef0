// Package jobrun runs a step as an EMR on EKS job run, for schedules with
// the emrContainers backend. A run lives outside the cluster, so its record
// in the cluster is a ConfigMap in steprun's record format: named like the
// step, labelled and annotated like the SparkApplication it stands for,
// owned by the query. The record is created before StartJobRun and holds
// the request with its client token, so a launch repeated after a crash
// sends the same request and gets the same run back; it is also where the
// runner mirrors the run's state, so the IntermittentQuery controller reads
// job runs as it reads SparkApplications. AWS tags could not be that
// record: a tag value holds 256 characters, a Kafka batch's offsets need
// more. The query carries Finalizer until its unfinished runs are
// cancelled.
package jobrun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/emr"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/internal/steprun"
)

// Finalizer keeps a query whose steps ran as job runs until the unfinished
// ones are cancelled.
const Finalizer = "laxity.dev/job-runs"

// Runner runs one schedule's steps as job runs.
type Runner struct {
	client  client.Client
	clients *emr.Clients
	// backend is the schedule's emrContainers backend, nil when it has
	// another: its job runs, launched before, can then be neither read nor
	// cancelled, and saying so is left to the calls that need AWS.
	backend *laxityv1alpha1.EMRContainersBackend
}

var _ steprun.Runner = (*Runner)(nil)

// New is the job-run runner of es, talking to EMR on EKS through clients
// (nil when the manager runs no EMR on EKS client).
func New(c client.Client, clients *emr.Clients, es *laxityv1alpha1.ElasticSchedule) *Runner {
	return &Runner{client: c, clients: clients, backend: es.Spec.NodePool.Backend.EMRContainers}
}

// Finalizer is the job-run finalizer.
func (r *Runner) Finalizer() string { return Finalizer }

// jobRunClient is the schedule's EMR on EKS client.
func (r *Runner) jobRunClient(ctx context.Context) (*emr.Client, error) {
	if r.backend == nil {
		return nil, errors.New("spec.nodePool.backend is no longer emrContainers: the schedule's job runs cannot be read or cancelled")
	}
	if r.clients == nil {
		return nil, errors.New("spec.nodePool.backend.emrContainers: this manager runs no EMR on EKS client")
	}
	c, err := r.clients.For(ctx, emr.ConfigFrom(r.backend))
	if err != nil {
		return nil, fmt.Errorf("spec.nodePool.backend.emrContainers: %w", err)
	}
	return c, nil
}

// newRecord is the record of the job run that runs app.
func newRecord(app *unstructured.Unstructured, run emr.JobRun) (*corev1.ConfigMap, error) {
	request, err := json.Marshal(run)
	if err != nil {
		return nil, fmt.Errorf("encoding the job run of %s: %w", app.GetName(), err)
	}
	return steprun.NewRecord(app, map[string]string{steprun.RecordRequest: string(request)}), nil
}

// clientToken is StartJobRun's idempotency token for a step: derived from
// the step's deterministic name and the query's UID, so that a query
// deleted and created again under the same name starts new runs.
func clientToken(q *laxityv1alpha1.IntermittentQuery, step string) string {
	sum := sha256.Sum256([]byte(string(q.UID) + "/" + step))
	return hex.EncodeToString(sum[:16])
}

// Launch launches the step app describes as a job run: the finalizer on q
// first, as the run lives outside the cluster, then the record, then
// StartJobRun. created is false when the record was already there: the
// launch was made before, and Sync carries it on, as it does a record
// whose StartJobRun failed here.
func (r *Runner) Launch(ctx context.Context, q *laxityv1alpha1.IntermittentQuery, app *unstructured.Unstructured, now time.Time) (bool, string, error) {
	runs, err := r.jobRunClient(ctx)
	if err != nil {
		return false, "", &steprun.BackendError{Err: err}
	}
	run, err := emr.JobRunOf(app, clientToken(q, app.GetName()))
	if err != nil {
		return false, "", fmt.Errorf("IntermittentQuery %s: %w", q.Name, err)
	}
	if controllerutil.AddFinalizer(q, Finalizer) {
		if err := r.client.Update(ctx, q); err != nil {
			return false, "", fmt.Errorf("adding the job-run finalizer to %s: %w", q.Name, err)
		}
	}
	record, err := newRecord(app, run)
	if err != nil {
		return false, "", err
	}
	if err := steprun.Own(q, record, app, r.client.Scheme()); err != nil {
		return false, "", fmt.Errorf("owning %s: %w", record.Name, err)
	}
	if err := r.client.Create(ctx, record); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Ours: launched before. Not ours: the name is taken, and
			// StartJobRun is never called for a record laxity did not
			// write.
			squatter, err := steprun.TakenBy(ctx, r.client, q, &corev1.ConfigMap{}, record.Namespace, record.Name)
			return false, squatter, err
		}
		return false, "", fmt.Errorf("recording job run %s: %w", record.Name, err)
	}
	if err := r.syncJobRun(ctx, runs, record, now); err != nil {
		return true, "", &steprun.BackendError{Err: err}
	}
	return true, "", nil
}

// Sync brings the unfinished job-run records among steps up to date with
// EMR on EKS: it starts the runs whose StartJobRun was not answered (the
// same request and token: never a second run) and mirrors the others'
// state.
func (r *Runner) Sync(ctx context.Context, steps []steprun.Step, now time.Time) error {
	var (
		runs *emr.Client
		errs []error
	)
	for i := range steps {
		record, ok := steps[i].Object.(*corev1.ConfigMap)
		if !ok || steprun.RecordFinished(record) {
			continue
		}
		if _, _, err := sparkapp.StepOf(record); err != nil {
			continue // labelled like a record, but not one laxity wrote
		}
		if runs == nil {
			var err error
			if runs, err = r.jobRunClient(ctx); err != nil {
				return &steprun.BackendError{Err: err}
			}
		}
		// The other runs are still read: one failing call does not hide
		// how the rest are doing.
		if err := r.syncJobRun(ctx, runs, record, now); err != nil {
			errs = append(errs, err)
		}
		steps[i].Obs = steprun.ObserveRecord(record)
	}
	if len(errs) > 0 {
		return &steprun.BackendError{Err: errors.Join(errs...)}
	}
	return nil
}

// syncJobRun starts or reads one job run and writes what changed into its
// record. A request EMR on EKS refuses as written fails the step with AWS's
// message, so it is retried, and then reported, like a failed
// SparkApplication; throttling and other passing failures are returned, to
// be tried again.
func (r *Runner) syncJobRun(ctx context.Context, runs *emr.Client, record *corev1.ConfigMap, now time.Time) error {
	before := record.DeepCopy()
	if record.Data == nil {
		record.Data = map[string]string{}
	}
	id := record.Data[steprun.RecordJobRunID]
	var err error
	if id == "" {
		var run emr.JobRun
		if err = json.Unmarshal([]byte(record.Data[steprun.RecordRequest]), &run); err != nil {
			err = fmt.Errorf("reading the request recorded in %s: %w", record.Name, err)
			failJobRun(record, err, now)
		} else if id, err = runs.StartJob(ctx, run); err == nil {
			record.Data[steprun.RecordJobRunID] = id
		} else if emr.IsInvalid(err) {
			failJobRun(record, err, now)
		}
	}
	if err == nil {
		var state emr.JobState
		if state, err = runs.DescribeJob(ctx, id); err == nil {
			record.Data[steprun.RecordState], record.Data[steprun.RecordMessage] = state.State, state.Message
			setRecordTime(record, steprun.RecordCreatedAt, state.CreatedAt)
			setRecordTime(record, steprun.RecordFinishedAt, state.FinishedAt)
		}
	}
	// What was learnt is kept even when a call failed: a run ID above all.
	if !maps.Equal(before.Data, record.Data) {
		if err := r.client.Patch(ctx, record, client.MergeFrom(before)); err != nil {
			return fmt.Errorf("recording the state of job run %s: %w", record.Name, err)
		}
	}
	if err != nil && !steprun.RecordFinished(record) {
		return fmt.Errorf("job run %s: %w", record.Name, err)
	}
	return nil
}

func failJobRun(record *corev1.ConfigMap, err error, now time.Time) {
	record.Data[steprun.RecordState], record.Data[steprun.RecordMessage] = emr.StateFailed, err.Error()
	record.Data[steprun.RecordFinishedAt] = steprun.Stamp(now)
	if record.Data[steprun.RecordCreatedAt] == "" {
		record.Data[steprun.RecordCreatedAt] = record.Data[steprun.RecordFinishedAt]
	}
}

func setRecordTime(record *corev1.ConfigMap, key string, t *time.Time) {
	if t != nil {
		record.Data[key] = steprun.Stamp(*t)
	}
}

// CancelUnfinished cancels query's unfinished job runs among steps, every
// query's when query is "". A record without a run ID may still have
// started one before a crash: the run is looked up by its name and client
// token.
func (r *Runner) CancelUnfinished(ctx context.Context, steps []steprun.Step, query string) error {
	for _, record := range steprun.UnfinishedRecords(steps, query) {
		runs, err := r.jobRunClient(ctx)
		if err != nil {
			return err
		}
		if err := cancelJobRun(ctx, runs, record); err != nil {
			return err
		}
	}
	return nil
}

// cancelJobRun cancels the job run of one record, looked up by its name
// and client token when the record holds no run ID.
func cancelJobRun(ctx context.Context, runs *emr.Client, record *corev1.ConfigMap) error {
	id, found := record.Data[steprun.RecordJobRunID], true
	if id == "" {
		var run emr.JobRun
		if json.Unmarshal([]byte(record.Data[steprun.RecordRequest]), &run) != nil {
			return nil // an unreadable request was never sent
		}
		var err error
		if id, found, err = runs.FindJob(ctx, run.Name, run.ClientToken); err != nil {
			return err
		}
	}
	if found {
		return runs.CancelJob(ctx, id)
	}
	return nil
}

// CancelStuck cancels a stuck job run through EMR on EKS and marks its
// record CANCELLED at once (EMR on EKS takes a while to agree). Any other
// object, such as a SparkApplication launched before the schedule moved
// to EMR on EKS, is replaced by a record and deleted
// (steprun.ReplaceWithRecord).
func (r *Runner) CancelStuck(ctx context.Context, q *laxityv1alpha1.IntermittentQuery, obj metav1.Object, why string, since, now time.Time) (bool, error) {
	record, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return steprun.ReplaceWithRecord(ctx, r.client, q, obj, why, since, now)
	}
	runs, err := r.jobRunClient(ctx)
	if err != nil {
		return false, err
	}
	if err := cancelJobRun(ctx, runs, record); err != nil {
		return false, err
	}
	before := record.DeepCopy()
	if record.Data == nil {
		record.Data = map[string]string{}
	}
	record.Data[steprun.RecordState], record.Data[steprun.RecordMessage], record.Data[steprun.RecordStuck] = emr.StateCancelled, why, why
	record.Data[steprun.RecordFinishedAt] = steprun.Stamp(now)
	if record.Data[steprun.RecordCreatedAt] == "" {
		record.Data[steprun.RecordCreatedAt] = steprun.Stamp(since)
	}
	return false, r.client.Patch(ctx, record, client.MergeFrom(before))
}
