package controllers

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/spec"
	"github.com/laxity-dev/laxity/internal/steprun"
)

// IntermittentQueryReconciler keeps a query's status: arrivals, every step
// with its outcome and result, the slack, and the conditions. It launches
// nothing; the query's ElasticSchedule does.
type IntermittentQueryReconciler struct {
	client.Client
	Clock   clock.PassiveClock
	Options Options
	Sources *Sources
	// Runner picks the step runner a schedule's backend names
	// (StepRunners).
	Runner func(es *laxityv1alpha1.ElasticSchedule) steprun.Runner
	// Recorder records the query's events; nil records none.
	Recorder events.EventRecorder
	// Refusals says why the schedule does not run a query (see Tenancy);
	// nil says nothing.
	Refusals *Refusals
	// Woken, when set, wakes the controller for a query whose refusal the
	// schedule's pass changed (Refusals.Wake's other end).
	Woken <-chan event.TypedGenericEvent[*laxityv1alpha1.IntermittentQuery]
}

// +kubebuilder:rbac:groups=laxity.dev,resources=intermittentqueries,verbs=get;list;watch
// +kubebuilder:rbac:groups=laxity.dev,resources=intermittentqueries/status,verbs=get;update;patch

// Reconcile rebuilds the query's status from the world.
func (r *IntermittentQueryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var q laxityv1alpha1.IntermittentQuery
	if err := r.Get(ctx, req.NamespacedName, &q); err != nil {
		if apierrors.IsNotFound(err) {
			forgetQuery(req.Namespace, req.Name)
			r.Sources.Forget(req.NamespacedName)
			r.Refusals.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if err := q.DecodeError(); err != nil {
		return ctrl.Result{}, reportUndecodable(ctx, r.Client, r.Recorder, &q, "IntermittentQuery", q.Status.Conditions, err)
	}
	if !q.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.release(ctx, &q)
	}
	now := r.Clock.Now()
	before := q.DeepCopy()
	requeue, err := r.reconcile(ctx, &q, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	// A merge patch of what changed: no conflict with a concurrent write,
	// and nothing written when nothing changed.
	if !equality.Semantic.DeepEqual(before.Status, q.Status) {
		after := q.Status.DeepCopy()
		if err := r.Status().Patch(ctx, &q, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, fmt.Errorf("writing the status: %w", err)
		}
		// Counted and announced only once the write has succeeded; see
		// recordQueryTransitions.
		recordQueryTransitions(&q, &before.Status, after)
		for _, n := range announceQueryEvents(&q, &before.Status, after) {
			if r.Recorder != nil {
				r.Recorder.Eventf(&q, nil, n.kind, n.reason, n.action, "%s", n.message)
			}
		}
	}
	return ctrl.Result{RequeueAfter: r.Options.realDelay(requeue)}, nil
}

// release lets a deleted query go when no schedule is left to cancel its
// steps outside the cluster (job runs): its ElasticSchedule does that while
// its runner needs the query's finalizer, and cancels them all when it is
// deleted itself.
func (r *IntermittentQueryReconciler) release(ctx context.Context, q *laxityv1alpha1.IntermittentQuery) error {
	held := steprun.QueryFinalizers(q)
	if len(held) == 0 {
		return nil
	}
	var es laxityv1alpha1.ElasticSchedule
	err := r.Get(ctx, client.ObjectKey{Namespace: q.Namespace, Name: q.Spec.ScheduleName}, &es)
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("reading the schedule: %w", err)
	}
	if err == nil {
		// The schedule's runner drops its own finalizer once it has
		// cancelled the query's steps.
		kept := r.Runner(&es).Finalizer()
		held = slices.DeleteFunc(held, func(f string) bool { return f == kept })
	}
	return dropFinalizers(ctx, r.Client, q, held...)
}

func (r *IntermittentQueryReconciler) reconcile(ctx context.Context, q *laxityv1alpha1.IntermittentQuery, now time.Time) (time.Duration, error) {
	q.Status.ObservedGeneration = q.Generation
	// The query's input is read by its schedule's pass (Sources.Read), once
	// for both controllers; this reports the latest reading. An input that
	// could not be read leaves the last count in place and shows in the
	// conditions; the schedule starts nothing of the query meanwhile.
	arrived := ptr.Deref(q.Status.ArrivedTuples, 0)
	var inputErr error
	if reading, ok := r.Sources.Latest(q); ok {
		if inputErr = reading.Err; inputErr == nil {
			arrived = reading.Arrived
			if reading.Late != nil {
				q.Status.LateTuples = ptr.To(*reading.Late)
				recordLateTuples(q, *reading.Late)
			}
		}
	}
	q.Status.ArrivedTuples = &arrived

	// By schedule, not by query: a shared batch carries the label of its
	// first member only, and is every member's.
	steps, foreign, err := listAllSteps(ctx, r.Client, r.Options, q.Namespace, client.MatchingLabels{LabelSchedule: q.Spec.ScheduleName})
	if err != nil {
		return 0, err
	}
	foreign = slices.DeleteFunc(foreign, func(s steprun.Step) bool { return s.Object.GetLabels()[LabelQuery] != q.Name })
	launched := observeSteps(steps)[q.Name]
	writeSteps(q, launched.batches, launched.partials, launched.final)
	setForeignCondition(q, foreign, launched)

	var es laxityv1alpha1.ElasticSchedule
	err = r.Get(ctx, client.ObjectKey{Namespace: q.Namespace, Name: q.Spec.ScheduleName}, &es)
	if err != nil {
		if client.IgnoreNotFound(err) != nil {
			return 0, fmt.Errorf("reading the schedule: %w", err)
		}
		setQueryConditions(q, queryState{now: now, noSchedule: true})
		return r.Options.Poll, nil
	}
	if err := r.learnFrom(ctx, q, &es, metav1.Time{Time: now}); err != nil {
		return 0, err
	}
	stored, err := loadPlan(ctx, r.Client, &es)
	if err != nil {
		return 0, err
	}
	state := queryState{now: now, failedOut: failedOutTaken(q, r.Options.MaxAttempts, namesTaken(launched)), inputErr: inputErr}
	state.refusedReason, _, state.refused = r.Refusals.Refusal(q)
	if stored != nil {
		pq, err := spec.Query(q, stored.doc.Origin)
		if err != nil {
			return 0, err
		}
		spec.WithLearned(&es, q, &pq)
		if dq, ok := dispatchQuery(q, pq, &stored.doc, launched, arrived, now); ok {
			q.Status.BatchSize = dq.BatchSize
			slack := dq.SlackNow(now, max(stored.doc.Chosen.MaxNodes, int(es.Spec.NodePool.Sizes[0])))
			state.slack = &slack
			recordQuerySlack(q, slack)
			state.planned = true
			state.plannedLate = plannedLate(&stored.doc, q.Name)
		}
	}
	// A finished query is left out of later plans; its conditions come from
	// its final merge.
	state.planned = state.planned || launched.finished()
	setQueryConditions(q, state)
	if q.Status.Final != nil && q.Status.Final.Outcome == laxityv1alpha1.StepSucceeded {
		return 0, nil
	}
	return r.Options.Poll, nil
}
