package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/dispatch"
	"github.com/laxity-dev/laxity/internal/pool"
	"github.com/laxity-dev/laxity/internal/steprun"
)

// The schedule's steps run through its step runner (internal/steprun),
// which r.Runner picks from the schedule's backend: everything here is the
// same whichever runs them.

// asBackendError makes a runner's backend failure a backend error of the
// pass, which goes on with what it knows.
func asBackendError(err error) error {
	if steprun.IsBackendError(err) {
		return &backendError{err}
	}
	return err
}

// launch creates the step app describes through the schedule's runner. The
// name is deterministic: a launch repeated after a crash finds the step
// already there instead of running it twice, and created is false. An
// object of that name that q does not own (controller owner reference with
// q's UID) is not the step: squatter names it, and nothing is created.
func (r *ElasticScheduleReconciler) launch(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, q *laxityv1alpha1.IntermittentQuery, app *unstructured.Unstructured, now time.Time) (created bool, squatter string, err error) {
	created, squatter, err = r.Runner(es).Launch(ctx, q, app, now)
	return created, squatter, asBackendError(err)
}

// syncSteps brings the schedule's unfinished steps up to date with their
// backend (a job run's state), in place.
func (r *ElasticScheduleReconciler) syncSteps(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, steps []steprun.Step, now time.Time) error {
	return asBackendError(r.Runner(es).Sync(ctx, steps, now))
}

// releaseDeleted lets the queries being deleted go, once their unfinished
// steps are cancelled, and returns the others: the ones to plan. A query
// holds a runner's finalizer only while it has steps outside the cluster,
// such as job runs. A cancellation the backend fails keeps its query (and
// finalizer) for the next pass, as a backend error; the other queries go
// on.
func (r *ElasticScheduleReconciler) releaseDeleted(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, queries []laxityv1alpha1.IntermittentQuery, steps []steprun.Step) ([]laxityv1alpha1.IntermittentQuery, error) {
	var (
		live      []laxityv1alpha1.IntermittentQuery
		cancelErr []error
	)
	runner := r.Runner(es)
	staying := map[string]bool{}
	for i := range queries {
		staying[queries[i].Name] = queries[i].DeletionTimestamp.IsZero()
	}
	for i := range queries {
		q := &queries[i]
		if q.DeletionTimestamp.IsZero() {
			live = append(live, *q)
			continue
		}
		held := steprun.QueryFinalizers(q)
		if len(held) == 0 {
			continue
		}
		if err := runner.CancelUnfinished(ctx, leftToOthers(steps, staying), q.Name); err != nil {
			cancelErr = append(cancelErr, fmt.Errorf("IntermittentQuery %s: cancelling its job runs: %w", q.Name, err))
			continue
		}
		if err := dropFinalizers(ctx, r.Client, q, held...); err != nil {
			return nil, err
		}
	}
	return live, joinBackendErrors(cancelErr)
}

// leftToOthers is steps without the shared batches a query that stays
// still has among its members: deleting one member cancels nothing that
// serves another.
func leftToOthers(steps []steprun.Step, staying map[string]bool) []steprun.Step {
	return slices.DeleteFunc(slices.Clone(steps), func(s steprun.Step) bool {
		return slices.ContainsFunc(steprun.Members(s.Object), func(m string) bool { return staying[m] })
	})
}

// ReasonNothingToRelease is the reason of the event a deleted schedule gets
// when releasing its pool found nothing to release.
const ReasonNothingToRelease = "NothingToRelease"

// finalize cancels the schedule's unfinished steps outside the cluster,
// returns the pool to zero nodes and lets the schedule go.
func (r *ElasticScheduleReconciler) finalize(ctx context.Context, es *laxityv1alpha1.ElasticSchedule) error {
	if !controllerutil.ContainsFinalizer(es, poolFinalizer) {
		return nil
	}
	if runner := r.Runner(es); runner.Finalizer() != "" {
		if err := r.cancelAllSteps(ctx, es, runner); err != nil {
			return err
		}
	}
	// Releasing creates nothing, so that a namespace being deleted, which
	// refuses new objects, cannot hold the schedule (and the namespace)
	// forever; a pool whose target is gone, or whose kind is no longer
	// served, has nothing left to release.
	// A pool the namespace may not drive is left exactly as it is:
	// releasing it would scale someone else's pool to zero.
	_, refusal, err := r.permitted(ctx, es)
	if err != nil {
		return fmt.Errorf("releasing the pool: %w", err)
	}
	var released pool.Released
	switch backend, err := r.Backend(ctx, es); {
	case refusal != nil:
		ctrl.LoggerFrom(ctx).Info("Left the pool as it is: the schedule may not drive it", "why", refusal.Error())
		r.Recorder.Eventf(es, nil, corev1.EventTypeWarning, refusalReason(refusal), "Release", "The node pool was left as it is: %s", refusal)
	case err == nil:
		if released, err = pool.Release(ctx, backend); err != nil {
			return fmt.Errorf("releasing the pool: %w", err)
		}
	default:
		why, ok := pool.NothingToRelease(err)
		if !ok {
			return fmt.Errorf("releasing the pool: %w", err)
		}
		released = pool.Released{Nothing: true, Why: why}
	}
	if released.Nothing {
		ctrl.LoggerFrom(ctx).Info("Releasing the pool found nothing to release", "why", released.Why)
		r.Recorder.Eventf(es, nil, corev1.EventTypeNormal, ReasonNothingToRelease, "Release", "Releasing the node pool found nothing to release: %s", released.Why)
	}
	controllerutil.RemoveFinalizer(es, poolFinalizer)
	if err := r.Update(ctx, es); err != nil {
		return err
	}
	forgetSchedule(es.Namespace, es.Name)
	return nil
}

// cancelAllSteps cancels every unfinished step of a schedule being deleted
// and lets its deleted queries go.
func (r *ElasticScheduleReconciler) cancelAllSteps(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, runner steprun.Runner) error {
	steps, err := listSteps(ctx, r.Client, r.Options, es.Namespace, client.MatchingLabels{LabelSchedule: es.Name})
	if err == nil {
		err = runner.CancelUnfinished(ctx, steps, "")
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
			if err := dropFinalizers(ctx, r.Client, &queries[i], runner.Finalizer()); err != nil {
				return err
			}
		}
	}
	return nil
}

// cancelStuck cancels the steps that have held the pool past their bound
// and makes each a failed attempt, to be retried after the backoff like any
// failure and counted towards the attempt limit. The runner cancels the
// attempt (see steprun.Runner.CancelStuck); launched is updated to match.
// cancelled says whether any step was.
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

// cancelOne cancels one stuck attempt. When its object was replaced by a
// record, launches of its name are held until the cache shows the record.
func (r *ElasticScheduleReconciler) cancelOne(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, q *laxityv1alpha1.IntermittentQuery, o *observedStep, why string, since, now time.Time) error {
	replaced, err := r.Runner(es).CancelStuck(ctx, q, o.object, why, since, now)
	if replaced {
		r.cancelled.Store(o.object.GetNamespace()+"/"+o.object.GetName(), true)
	}
	return err
}

// dropFinalizers removes finalizers from q, which may go once the steps
// they held it for are cancelled.
func dropFinalizers(ctx context.Context, c client.Writer, q *laxityv1alpha1.IntermittentQuery, finalizers ...string) error {
	removed := false
	for _, f := range finalizers {
		if f != "" && controllerutil.RemoveFinalizer(q, f) {
			removed = true
		}
	}
	if !removed {
		return nil
	}
	if err := c.Update(ctx, q); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("IntermittentQuery %s: removing the job-run finalizer: %w", q.Name, err)
	}
	return nil
}
