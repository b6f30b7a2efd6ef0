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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/dispatch"
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
	// recordStuck is why laxity cancelled the step as stuck: set on the
	// record of a cancelled job run, and on the record that stands for a
	// SparkApplication deleted as stuck (see cancelStuck).
	recordStuck = "stuck"
)

// stepObject is one attempt of a step as laxity reads it back: a
// SparkApplication or a job-run record, and its state.
type stepObject struct {
	object metav1.Object
	obs    sparkapp.Observation
	// stuck is why laxity cancelled the attempt as stuck, "" when it did
	// not (a record's recordStuck).
	stuck string
}

// kind is the object's kind, for messages.
func (o stepObject) kind() string {
	if _, ok := o.object.(*corev1.ConfigMap); ok {
		return "ConfigMap"
	}
	return sparkapp.GroupVersionKind.Kind
}

// describe names the object: kind namespace/name.
func (o stepObject) describe() string {
	return fmt.Sprintf("%s %s/%s", o.kind(), o.object.GetNamespace(), o.object.GetName())
}

// listSteps lists laxity's own launched steps in namespace that carry
// labels (see listAllSteps).
func listSteps(ctx context.Context, c client.Reader, opts Options, namespace string, labels client.MatchingLabels) ([]stepObject, error) {
	owned, _, err := listAllSteps(ctx, c, opts, namespace, labels)
	return owned, err
}

// listAllSteps lists the objects in namespace that carry labels and may be
// steps: the SparkApplications, unless the cluster serves none, and the
// job-run records, all from the manager's cache. It splits them into
// laxity's own steps and the foreign ones: a step is laxity's only when its
// controller owner reference is the IntermittentQuery its labels name —
// kind, name and UID. Labels anyone can write; an owner reference with the
// query's UID only someone who read the query. A foreign object is never
// counted as launched, merged or holding the pool.
func listAllSteps(ctx context.Context, c client.Reader, opts Options, namespace string, labels client.MatchingLabels) (owned, foreign []stepObject, err error) {
	var queries laxityv1alpha1.IntermittentQueryList
	if err := c.List(ctx, &queries, client.InNamespace(namespace)); err != nil {
		return nil, nil, fmt.Errorf("listing queries: %w", err)
	}
	uids := map[string]types.UID{}
	for i := range queries.Items {
		uids[queries.Items[i].Name] = queries.Items[i].UID
	}
	keep := func(o stepObject) {
		if ownedByQuery(o.object, o.object.GetLabels()[LabelQuery], uids) {
			owned = append(owned, o)
		} else {
			foreign = append(foreign, o)
		}
	}
	if !opts.NoSparkApplications {
		apps := sparkapp.NewList()
		if err := c.List(ctx, apps, client.InNamespace(namespace), labels); err != nil {
			return nil, nil, fmt.Errorf("listing SparkApplications: %w", err)
		}
		for i := range apps.Items {
			keep(stepObject{object: &apps.Items[i], obs: sparkapp.Observe(&apps.Items[i])})
		}
	}
	var records corev1.ConfigMapList
	if err := c.List(ctx, &records, client.InNamespace(namespace), labels, client.HasLabels{LabelStep}); err != nil {
		return nil, nil, fmt.Errorf("listing job-run records: %w", err)
	}
	for i := range records.Items {
		keep(stepObject{object: &records.Items[i], obs: observeJobRun(&records.Items[i]), stuck: records.Items[i].Data[recordStuck]})
	}
	return owned, foreign, nil
}

// ownedByQuery reports whether obj's controller is the IntermittentQuery
// named query, whose UID is uids[query].
func ownedByQuery(obj metav1.Object, query string, uids map[string]types.UID) bool {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || query == "" {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	uid, known := uids[query]
	return err == nil && gv.Group == laxityv1alpha1.GroupVersion.Group && ref.Kind == "IntermittentQuery" &&
		ref.Name == query && known && ref.UID == uid
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
func (r *ElasticScheduleReconciler) launchJobRun(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, q *laxityv1alpha1.IntermittentQuery, app *unstructured.Unstructured, now time.Time) (bool, string, error) {
	runs, err := r.jobRunClient(ctx, es)
	if err != nil {
		return false, "", &backendError{err}
	}
	run, err := emr.JobRunOf(app, clientToken(q, app.GetName()))
	if err != nil {
		return false, "", fmt.Errorf("IntermittentQuery %s: %w", q.Name, err)
	}
	if controllerutil.AddFinalizer(q, jobRunFinalizer) {
		if err := r.Update(ctx, q); err != nil {
			return false, "", fmt.Errorf("adding the job-run finalizer to %s: %w", q.Name, err)
		}
	}
	record, err := jobRunRecord(app, run)
	if err != nil {
		return false, "", err
	}
	if err := controllerutil.SetControllerReference(q, record, r.Scheme()); err != nil {
		return false, "", fmt.Errorf("owning %s: %w", record.Name, err)
	}
	if err := r.Create(ctx, record); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Ours: launched before. Not ours: the name is taken, and
			// StartJobRun is never called for a record laxity did not
			// write.
			squatter, err := r.takenBy(ctx, q, &corev1.ConfigMap{}, record.Namespace, record.Name)
			return false, squatter, err
		}
		return false, "", fmt.Errorf("recording job run %s: %w", record.Name, err)
	}
	if err := r.syncJobRun(ctx, runs, record, now); err != nil {
		return true, "", &backendError{err}
	}
	return true, "", nil
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
		if err := cancelJobRun(ctx, runs, record); err != nil {
			return err
		}
	}
	return nil
}

// cancelJobRun cancels the job run of one record, looked up by its name
// and client token when the record holds no run ID.
func cancelJobRun(ctx context.Context, runs *emr.Client, record *corev1.ConfigMap) error {
	id, found := record.Data[recordJobRunID], true
	if id == "" {
		var run emr.JobRun
		if json.Unmarshal([]byte(record.Data[recordRequest]), &run) != nil {
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

// cancelStuck cancels the steps that have held the pool past their bound
// and makes each a failed attempt, to be retried after the backoff like any
// failure and counted towards the attempt limit. A job run is cancelled
// through EMR on EKS and its record marked CANCELLED at once (EMR on EKS
// takes a while to agree). A SparkApplication is deleted, which stops its
// driver and executors; a deleted object says nothing, so a record in the
// job-run format — same name, labels, annotations and owner, state
// CANCELLED — is written first and stands for the attempt from then on.
// launched is updated to match. cancelled says whether any step was.
func (r *ElasticScheduleReconciler) cancelStuck(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, queries []laxityv1alpha1.IntermittentQuery, launched map[string]launchedSteps, stuck []dispatch.StuckStep, now time.Time, notes *[]note) (bool, error) {
	logger := log.FromContext(ctx)
	var errs []error
	cancelled := false
	for _, s := range stuck {
		l := launched[s.Query]
		o := l.find(s.Kind, s.Index)
		q := queryNamed(queries, s.Query)
		if o == nil || q == nil || o.step.Attempt != s.Attempt {
			continue
		}
		held := now.Sub(s.Since).Round(time.Second)
		why := fmt.Sprintf("%s of IntermittentQuery %s (%s) held the pool for %s, past its bound of %s (modelled %s): cancelled, to be retried as a failed attempt",
			stepTitle(s.Kind, s.Index), s.Query, o.name, held, s.Bound.Round(time.Second), s.Modelled.Round(time.Second))
		if err := r.cancelOne(ctx, es, q, o, why, s.Since, now); err != nil {
			errs = append(errs, fmt.Errorf("cancelling stuck %s: %w", o.name, err))
			continue
		}
		logger.Info("cancelled a stuck step", "query", s.Query, "step", o.name, "held", held, "bound", s.Bound, "modelled", s.Modelled)
		*notes = append(*notes, note{corev1.EventTypeWarning, laxityv1alpha1.StepStuckReason, "Cancel", why})
		ended := now
		o.obs.Phase, o.obs.Ended, o.obs.Message, o.stuck = laxityv1alpha1.StepFailed, &ended, why, why
		cancelled = true
	}
	if len(errs) > 0 {
		return cancelled, &backendError{errors.Join(errs...)}
	}
	return cancelled, nil
}

func (r *ElasticScheduleReconciler) cancelOne(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, q *laxityv1alpha1.IntermittentQuery, o *observedStep, why string, since, now time.Time) error {
	stamp := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	if record, ok := o.object.(*corev1.ConfigMap); ok {
		runs, err := r.jobRunClient(ctx, es)
		if err != nil {
			return err
		}
		if err := cancelJobRun(ctx, runs, record); err != nil {
			return err
		}
		before := record.DeepCopy()
		if record.Data == nil {
			record.Data = map[string]string{}
		}
		record.Data[recordState], record.Data[recordMessage], record.Data[recordStuck] = emr.StateCancelled, why, why
		record.Data[recordFinishedAt] = stamp(now)
		if record.Data[recordCreatedAt] == "" {
			record.Data[recordCreatedAt] = stamp(since)
		}
		return r.Patch(ctx, record, client.MergeFrom(before))
	}
	tombstone := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: o.object.GetName(), Namespace: o.object.GetNamespace(),
			Labels: o.object.GetLabels(), Annotations: o.object.GetAnnotations(),
		},
		Data: map[string]string{
			recordState: emr.StateCancelled, recordMessage: why, recordStuck: why,
			recordCreatedAt: stamp(since), recordFinishedAt: stamp(now),
		},
	}
	if err := controllerutil.SetControllerReference(q, tombstone, r.Scheme()); err != nil {
		return err
	}
	if err := r.Create(ctx, tombstone); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		if squatter, err := r.takenBy(ctx, q, &corev1.ConfigMap{}, tombstone.Namespace, tombstone.Name); err != nil {
			return err
		} else if squatter != "" {
			return fmt.Errorf("the record of the cancelled attempt cannot be written: the name is taken by %s, which laxity does not own", squatter)
		}
	}
	r.cancelled.Store(o.object.GetNamespace()+"/"+o.object.GetName(), true)
	app, ok := o.object.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	if err := r.Delete(ctx, app, client.Preconditions{UID: ptr.To(app.GetUID())}); client.IgnoreNotFound(err) != nil {
		return err
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
