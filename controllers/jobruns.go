package controllers

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
)

// With the emrContainers backend a step runs as an EMR on EKS job run. Its
// record in the cluster is a ConfigMap named like the step and labelled and
// annotated like the SparkApplication it stands for (DESIGN.md's contract),
// owned by the query. The record is created before StartJobRun and holds
// the request with its client token, so a launch repeated after a crash
// sends the same request and gets the same run back; it is also where the
// ElasticSchedule controller mirrors the run's state, so the
// IntermittentQuery controller reads job runs as it reads SparkApplications.
// AWS tags could not be that record: a tag value holds 256 characters, a
// Kafka batch's offsets need more.

// jobRunFinalizer keeps a query whose steps ran as job runs until the
// unfinished ones are cancelled.
const jobRunFinalizer = "laxity.dev/job-runs"

// Keys of a job-run record's data.
const (
	// recordRequest is the StartJobRun request, emr.JobRun as JSON.
	recordRequest = "request"
	// recordJobRunID is the run's ID, once StartJobRun has returned it.
	recordJobRunID = "jobRunId"
	// recordState, recordMessage, recordCreatedAt and recordFinishedAt mirror
	// DescribeJobRun (times in RFC 3339).
	recordState      = "state"
	recordMessage    = "message"
	recordCreatedAt  = "createdAt"
	recordFinishedAt = "finishedAt"
)

// stepObject is one attempt of a step as laxity reads it back: a
// SparkApplication or a job-run record, and its state.
type stepObject struct {
	object metav1.Object
	obs    sparkapp.Observation
}

// listSteps lists the launched steps in namespace that carry labels: the
// SparkApplications, unless the cluster serves none, and the job-run
// records. Both come from the manager's cache.
func listSteps(ctx context.Context, c client.Reader, opts Options, namespace string, labels client.MatchingLabels) ([]stepObject, error) {
	var out []stepObject
	if !opts.NoSparkApplications {
		apps := sparkapp.NewList()
		if err := c.List(ctx, apps, client.InNamespace(namespace), labels); err != nil {
			return nil, fmt.Errorf("listing SparkApplications: %w", err)
		}
		for i := range apps.Items {
			out = append(out, stepObject{object: &apps.Items[i], obs: sparkapp.Observe(&apps.Items[i])})
		}
	}
	var records corev1.ConfigMapList
	if err := c.List(ctx, &records, client.InNamespace(namespace), labels, client.HasLabels{LabelStep}); err != nil {
		return nil, fmt.Errorf("listing job-run records: %w", err)
	}
	for i := range records.Items {
		out = append(out, stepObject{object: &records.Items[i], obs: observeJobRun(&records.Items[i])})
	}
	return out, nil
}

// observeJobRun reads a step's state from its job-run record:
//
//	state                                      Phase
//	"" (StartJobRun not answered yet)          Pending
//	PENDING, SUBMITTED, RUNNING, CANCEL_PENDING Running
//	COMPLETED                                  Succeeded
//	FAILED, CANCELLED                          Failed
//
// Pending and Running both hold the pool. A run starts when EMR on EKS
// creates it: the API reports no later instant.
func observeJobRun(record *corev1.ConfigMap) sparkapp.Observation {
	o := sparkapp.Observation{State: record.Data[recordState], Message: record.Data[recordMessage]}
	switch o.State {
	case "":
		o.Phase = laxityv1alpha1.StepPending
		return o
	case emr.StateCompleted:
		o.Phase = laxityv1alpha1.StepSucceeded
	case emr.StateFailed, emr.StateCancelled:
		o.Phase = laxityv1alpha1.StepFailed
	default:
		o.Phase = laxityv1alpha1.StepRunning
	}
	o.Started = recordTime(record, recordCreatedAt)
	if o.Phase != laxityv1alpha1.StepRunning {
		o.Ended = recordTime(record, recordFinishedAt)
	}
	return o
}

func recordTime(record *corev1.ConfigMap, key string) *time.Time {
	t, err := time.Parse(time.RFC3339, record.Data[key])
	if err != nil {
		return nil
	}
	return &t
}

// jobRunRecord is the record of the job run that runs app.
func jobRunRecord(app *unstructured.Unstructured, run emr.JobRun) (*corev1.ConfigMap, error) {
	request, err := json.Marshal(run)
	if err != nil {
		return nil, fmt.Errorf("encoding the job run of %s: %w", app.GetName(), err)
	}
	record := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: app.GetName(), Namespace: app.GetNamespace(),
			Labels: app.GetLabels(), Annotations: app.GetAnnotations(),
		},
		Data: map[string]string{recordRequest: string(request)},
	}
	return record, nil
}

// clientToken is StartJobRun's idempotency token for a step: derived from
// the step's deterministic name and the query's UID, so that a query
// deleted and created again under the same name starts new runs.
func clientToken(q *laxityv1alpha1.IntermittentQuery, step string) string {
	sum := sha256.Sum256([]byte(string(q.UID) + "/" + step))
	return hex.EncodeToString(sum[:16])
}

// jobRunClient is the EMR on EKS client of a schedule with the
// emrContainers backend.
func (r *ElasticScheduleReconciler) jobRunClient(ctx context.Context, es *laxityv1alpha1.ElasticSchedule) (*emr.Client, error) {
	b := es.Spec.NodePool.Backend.EMRContainers
	if b == nil {
		return nil, errors.New("spec.nodePool.backend is no longer emrContainers: the schedule's job runs cannot be read or cancelled")
	}
	if r.JobRuns == nil {
		return nil, errors.New("spec.nodePool.backend.emrContainers: this manager runs no EMR on EKS client")
	}
	c, err := r.JobRuns.For(ctx, emr.ConfigFrom(b))
	if err != nil {
		return nil, fmt.Errorf("spec.nodePool.backend.emrContainers: %w", err)
	}
	return c, nil
}

// launchJobRun launches the step app describes as a job run: the finalizer
// on q first, as the run lives outside the cluster, then the record, then
// StartJobRun. created is false when the record was already there: the
// launch was made before, and syncJobRuns carries it on, as it does a
// record whose StartJobRun failed here.
func (r *ElasticScheduleReconciler) launchJobRun(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, q *laxityv1alpha1.IntermittentQuery, app *unstructured.Unstructured, now time.Time) (bool, error) {
	runs, err := r.jobRunClient(ctx, es)
	if err != nil {
		return false, &backendError{err}
	}
	run, err := emr.JobRunOf(app, clientToken(q, app.GetName()))
	if err != nil {
		return false, fmt.Errorf("IntermittentQuery %s: %w", q.Name, err)
	}
	if controllerutil.AddFinalizer(q, jobRunFinalizer) {
		if err := r.Update(ctx, q); err != nil {
			return false, fmt.Errorf("adding the job-run finalizer to %s: %w", q.Name, err)
		}
	}
	record, err := jobRunRecord(app, run)
	if err != nil {
		return false, err
	}
	if err := controllerutil.SetControllerReference(q, record, r.Scheme()); err != nil {
		return false, fmt.Errorf("owning %s: %w", record.Name, err)
	}
	if err := r.Create(ctx, record); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return false, nil
		}
		return false, fmt.Errorf("recording job run %s: %w", record.Name, err)
	}
	if err := r.syncJobRun(ctx, runs, record, now); err != nil {
		return true, &backendError{err}
	}
	return true, nil
}

// syncJobRuns brings the unfinished job-run records among steps up to date
// with EMR on EKS: it starts the runs whose StartJobRun was not answered
// (the same request and token: never a second run) and mirrors the others'
// state.
func (r *ElasticScheduleReconciler) syncJobRuns(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, steps []stepObject, now time.Time) error {
	var (
		runs *emr.Client
		errs []error
	)
	for i := range steps {
		record, ok := steps[i].object.(*corev1.ConfigMap)
		if !ok || jobRunFinished(record) {
			continue
		}
		if _, _, err := sparkapp.StepOf(record); err != nil {
			continue // labelled like a record, but not one laxity wrote
		}
		if runs == nil {
			var err error
			if runs, err = r.jobRunClient(ctx, es); err != nil {
				return &backendError{err}
			}
		}
		// The other runs are still read: one failing call does not hide
		// how the rest are doing.
		if err := r.syncJobRun(ctx, runs, record, now); err != nil {
			errs = append(errs, err)
		}
		steps[i].obs = observeJobRun(record)
	}
	if len(errs) > 0 {
		return &backendError{errors.Join(errs...)}
	}
	return nil
}

func jobRunFinished(record *corev1.ConfigMap) bool {
	return emr.JobState{State: record.Data[recordState]}.Finished()
}

// syncJobRun starts or reads one job run and writes what changed into its
// record. A request EMR on EKS refuses as written fails the step with AWS's
// message, so it is retried, and then reported, like a failed
// SparkApplication; throttling and other passing failures are returned, to
// be tried again.
func (r *ElasticScheduleReconciler) syncJobRun(ctx context.Context, runs *emr.Client, record *corev1.ConfigMap, now time.Time) error {
	before := record.DeepCopy()
	if record.Data == nil {
		record.Data = map[string]string{}
	}
	id := record.Data[recordJobRunID]
	var err error
	if id == "" {
		var run emr.JobRun
		if err = json.Unmarshal([]byte(record.Data[recordRequest]), &run); err != nil {
			err = fmt.Errorf("reading the request recorded in %s: %w", record.Name, err)
			failJobRun(record, err, now)
		} else if id, err = runs.StartJob(ctx, run); err == nil {
			record.Data[recordJobRunID] = id
		} else if emr.IsInvalid(err) {
			failJobRun(record, err, now)
		}
	}
	if err == nil {
		var state emr.JobState
		if state, err = runs.DescribeJob(ctx, id); err == nil {
			record.Data[recordState], record.Data[recordMessage] = state.State, state.Message
			setRecordTime(record, recordCreatedAt, state.CreatedAt)
			setRecordTime(record, recordFinishedAt, state.FinishedAt)
		}
	}
	// What was learnt is kept even when a call failed: a run ID above all.
	if !maps.Equal(before.Data, record.Data) {
		if err := r.Patch(ctx, record, client.MergeFrom(before)); err != nil {
			return fmt.Errorf("recording the state of job run %s: %w", record.Name, err)
		}
	}
	if err != nil && !jobRunFinished(record) {
		return fmt.Errorf("job run %s: %w", record.Name, err)
	}
	return nil
}

func failJobRun(record *corev1.ConfigMap, err error, now time.Time) {
	record.Data[recordState], record.Data[recordMessage] = emr.StateFailed, err.Error()
	record.Data[recordFinishedAt] = now.UTC().Format(time.RFC3339)
	if record.Data[recordCreatedAt] == "" {
		record.Data[recordCreatedAt] = record.Data[recordFinishedAt]
	}
}

func setRecordTime(record *corev1.ConfigMap, key string, t *time.Time) {
	if t != nil {
		record.Data[key] = t.UTC().Format(time.RFC3339)
	}
}

// cancelJobRuns cancels q's unfinished job runs among steps. A record
// without a run ID may still have started one before a crash: the run is
// looked up by its name and client token.
func (r *ElasticScheduleReconciler) cancelJobRuns(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, steps []stepObject, query string) error {
	for _, s := range steps {
		record, ok := s.object.(*corev1.ConfigMap)
		if !ok || jobRunFinished(record) || (query != "" && record.Labels[LabelQuery] != query) {
			continue
		}
		runs, err := r.jobRunClient(ctx, es)
		if err != nil {
			return err
		}
		id, found := record.Data[recordJobRunID], true
		if id == "" {
			var run emr.JobRun
			if json.Unmarshal([]byte(record.Data[recordRequest]), &run) != nil {
				continue // an unreadable request was never sent
			}
			if id, found, err = runs.FindJob(ctx, run.Name, run.ClientToken); err != nil {
				return err
			}
		}
		if found {
			if err := runs.CancelJob(ctx, id); err != nil {
				return err
			}
		}
	}
	return nil
}

// cancelAllJobRuns cancels every unfinished job run of a schedule being
// deleted and lets its deleted queries go.
func (r *ElasticScheduleReconciler) cancelAllJobRuns(ctx context.Context, es *laxityv1alpha1.ElasticSchedule) error {
	steps, err := listSteps(ctx, r.Client, r.Options, es.Namespace, client.MatchingLabels{LabelSchedule: es.Name})
	if err == nil {
		err = r.cancelJobRuns(ctx, es, steps, "")
	}
	if err != nil {
		return fmt.Errorf("cancelling the job runs: %w", err)
	}
	queries, err := queriesOf(ctx, r.Client, es)
	if err != nil {
		return err
	}
	for i := range queries {
		if !queries[i].DeletionTimestamp.IsZero() {
			if err := dropJobRunFinalizer(ctx, r.Client, &queries[i]); err != nil {
				return err
			}
		}
	}
	return nil
}
