package controllers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/dispatch"
	"github.com/laxity-dev/laxity/internal/pass"
	"github.com/laxity-dev/laxity/internal/pool"
	"github.com/laxity-dev/laxity/internal/spec"
	"github.com/laxity-dev/laxity/internal/steprun"
	"github.com/laxity-dev/laxity/internal/tenancy"
)

// poolFinalizer returns the pool to zero nodes before an ElasticSchedule
// goes away.
const poolFinalizer = "laxity.dev/pool"

// ElasticScheduleReconciler plans a schedule, drives its pool and launches
// its queries' steps, one at a time, in least-laxity order.
type ElasticScheduleReconciler struct {
	client.Client
	Clock    clock.PassiveClock
	Recorder events.EventRecorder
	Options  Options
	// Backend builds the pool backend a schedule names.
	Backend func(ctx context.Context, es *laxityv1alpha1.ElasticSchedule) (pool.Backend, error)
	// Sources gives a query's arrivals.
	Sources *Sources
	// Runner picks the step runner a schedule's backend names
	// (StepRunners).
	Runner func(es *laxityv1alpha1.ElasticSchedule) steprun.Runner
	// Tenancy decides what the schedule's namespace may make laxity do;
	// nil checks nothing (unit tests of the mechanics; Setup always sets
	// it). Refusals keeps, for the IntermittentQuery controller, why a
	// query is not run; nil keeps nothing.
	Tenancy  *Tenancy
	Refusals *Refusals
	// LongSearches runs the plan searches known to be long outside the
	// reconcile workers; nil runs every search in the worker.
	LongSearches *SearchLane
	// searched wakes the schedule whose search the lane ended; nil when
	// there is no lane.
	searched <-chan event.TypedGenericEvent[*laxityv1alpha1.ElasticSchedule]

	// reported holds the UIDs of the foreign objects already reported by an
	// event, so each is reported once per manager run (the queries'
	// conditions keep naming them).
	reported sync.Map
	// cancelled holds namespace/name of the SparkApplications deleted as
	// stuck: a cache that has seen the deletion but not yet the record
	// standing for the attempt must not make dispatch create it again.
	cancelled sync.Map
}

// +kubebuilder:rbac:groups=laxity.dev,resources=elasticschedules,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=laxity.dev,resources=elasticschedules/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=laxity.dev,resources=elasticschedules/finalizers,verbs=update
// +kubebuilder:rbac:groups=laxity.dev,resources=intermittentqueries,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=laxity.dev,resources=intermittentqueries/finalizers,verbs=update
// +kubebuilder:rbac:groups=sparkoperator.k8s.io,resources=sparkapplications,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machinedeployments/scale;machinepools/scale,verbs=get;update
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools/scale,verbs=get;update

// Reconcile is one observe → decide → act pass over a schedule.
func (r *ElasticScheduleReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var es laxityv1alpha1.ElasticSchedule
	if err := r.Get(ctx, req.NamespacedName, &es); err != nil {
		if apierrors.IsNotFound(err) {
			forgetSchedule(req.Namespace, req.Name)
			forgetPlan(req.Namespace, req.Name)
			r.LongSearches.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if err := es.DecodeError(); err != nil {
		return ctrl.Result{}, reportUndecodable(ctx, r.Client, r.Recorder, &es, "ElasticSchedule", es.Status.Conditions, err)
	}
	if !es.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, &es)
	}
	// The finalizer goes on before the first resize, so a pool is never
	// left behind.
	if controllerutil.AddFinalizer(&es, poolFinalizer) {
		if err := r.Update(ctx, &es); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding the pool finalizer: %w", err)
		}
	}
	before := es.DeepCopy()
	result, notes, err := r.reconcile(ctx, &es)
	var backendErr *backendError
	if err != nil && !errors.As(err, &backendErr) {
		return ctrl.Result{}, err
	}
	// A merge patch of what changed: no conflict with a concurrent metadata
	// write, and nothing written when nothing changed.
	if !equality.Semantic.DeepEqual(before.Status, es.Status) {
		if err := r.Status().Patch(ctx, &es, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, fmt.Errorf("writing the status: %w", err)
		}
	}
	recordScheduleStatus(&es)
	for _, n := range notes {
		r.Recorder.Eventf(&es, nil, n.kind, n.reason, n.action, "%s", n.message)
	}
	if backendErr != nil {
		return ctrl.Result{}, backendErr
	}
	result.RequeueAfter = r.Options.realDelay(result.RequeueAfter)
	return result, nil
}

// note is an event to emit once the status is written.
type note struct{ kind, reason, action, message string }

// backendError is a failure of the pool's backend: its target object, or
// AWS for job runs and the node group. The pass goes on with what it knows
// (a job run not heard of keeps holding the pool), shows the error in the
// PoolReady and Ready conditions, and returns it once the status is written,
// to be tried again with backoff.
type backendError struct{ err error }

func (e *backendError) Error() string { return e.err.Error() }

func (e *backendError) Unwrap() error { return e.err }

// reconcile is one pass: observe the schedule's view, judge the plan in
// force and re-plan when it no longer holds, cancel stuck steps, size the
// pool, dispatch the next step, and set the conditions. Backend errors do
// not stop the pass: it goes on with what it knows and returns them joined
// at the end.
func (r *ElasticScheduleReconciler) reconcile(ctx context.Context, es *laxityv1alpha1.ElasticSchedule) (ctrl.Result, []note, error) {
	es.Status.ObservedGeneration = es.Generation
	p := &passResult{}
	ns, refusal, err := r.permitted(ctx, es)
	if err != nil {
		return ctrl.Result{}, nil, err
	}
	if refusal != nil {
		return r.notPermitted(es, refusal, p)
	}
	if ns != nil {
		capped, restore, err := r.withinCeilings(ctx, *ns, es, p)
		if err != nil || capped == nil {
			return r.overCeiling(ctx, es, p, err)
		}
		defer restore()
		p.capped = *capped
	}
	v, err := r.observe(ctx, es, ns, p)
	if err != nil {
		return ctrl.Result{}, p.notes, err
	}
	recordSpend(es, v.ready, v.now)
	if len(v.queries) == 0 {
		return r.idle(ctx, es, p)
	}
	judged, err := r.judge(ctx, v, p)
	if err != nil {
		return ctrl.Result{}, p.notes, err
	}
	if judged.reason == "" {
		// A search the lane made for specs this plan already holds is of
		// no use.
		r.LongSearches.forget(client.ObjectKeyFromObject(es))
	} else {
		retry, done, err := r.replan(ctx, v, judged.reason, p)
		if done || err != nil {
			return ctrl.Result{RequeueAfter: retry}, p.notes, err
		}
	}
	doc := &v.stored.doc
	writePlanStatus(es, doc, v.now)
	es.Status.NodesReady = &v.ready
	dqs, err := r.cancelStuckSteps(ctx, v, p)
	if err != nil {
		return ctrl.Result{}, p.notes, err
	}
	ask := pass.Act(v.snapshot(r.Options), dqs)
	if err := p.keep(r.request(ctx, es, poolAsk{nodes: int32(ask.Request), busy: int32(ask.Busy)}, p)); err != nil {
		return ctrl.Result{}, p.notes, err
	}
	if lead := spec.ObserveLeadTime(es, int32(ask.Request), v.ready, v.now); lead > 0 {
		recordLeadTime(es, lead)
	}
	acted, created, err := r.dispatch(ctx, v, dqs, p)
	if err := p.keep(err); err != nil {
		return ctrl.Result{}, p.notes, err
	}
	backendErr := joinBackendErrors(p.backendErrs)
	// A retry created in this pass ends its stuck step's handling.
	stuck := stuckHandling(v.launched, r.Options.MaxAttempts, created)
	requested := int32(ask.Request)
	if p.asked != nil {
		requested = p.asked.nodes
	}
	setScheduleConditions(es, scheduleState{doc: doc, requested: requested, ready: v.ready, backendErr: backendErr, stuck: stuck, nodesLost: judged.nodesLost,
		due: nodesDue(doc.Origin, doc.Requests, v.lead, v.now), lead: v.lead, capped: p.capped, overCeiling: p.overCeiling, overBudget: p.overBudget,
		sharing: sharingMessage(doc, v.sharingNotes)})
	if backendErr != nil {
		return ctrl.Result{}, p.notes, backendErr
	}
	return ctrl.Result{RequeueAfter: r.requeueAfter(v.now, dispatch.Earliest(acted.Next, p.nextSearch))}, p.notes, nil
}

// idle is the pass of a schedule without queries: the pool goes to its
// idle size.
func (r *ElasticScheduleReconciler) idle(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, p *passResult) (ctrl.Result, []note, error) {
	if err := p.keep(r.request(ctx, es, poolAsk{nodes: spec.IdleNodes(es)}, p)); err != nil {
		return ctrl.Result{}, p.notes, err
	}
	backendErr := joinBackendErrors(p.backendErrs)
	setScheduleConditions(es, scheduleState{noQueries: true, backendErr: backendErr})
	return ctrl.Result{}, p.notes, backendErr
}

// cancelStuckSteps cancels the steps past their bound, which become failed
// attempts, retried after the backoff like any failure, and returns the
// queries' run-time view after it.
func (r *ElasticScheduleReconciler) cancelStuckSteps(ctx context.Context, v *view, p *passResult) ([]dispatch.Query, error) {
	dqs, err := v.runTime(r.Options)
	if err != nil {
		return nil, err
	}
	stuck := pass.Stuck(v.snapshot(r.Options), dqs)
	if len(stuck) == 0 {
		return dqs, nil
	}
	cancelled, err := r.cancelStuck(ctx, v.es, v.queries, v.launched, stuck, v.now, &p.notes)
	if err := p.keep(err); err != nil {
		return nil, err
	}
	if !cancelled {
		return dqs, nil
	}
	return v.runTime(r.Options)
}

// keepBackendError adds err to errs when it is a backend error, for the
// pass to go on, and returns any other error.
func keepBackendError(err error, errs *[]error) error {
	var backend *backendError
	if errors.As(err, &backend) {
		*errs = append(*errs, err)
		return nil
	}
	return err
}

// joinBackendErrors is the pass's backend errors as one, nil for none.
func joinBackendErrors(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return &backendError{errors.Join(errs...)}
}

// queriesOf lists the IntermittentQueries that name the schedule.
func queriesOf(ctx context.Context, c client.Reader, es *laxityv1alpha1.ElasticSchedule) ([]laxityv1alpha1.IntermittentQuery, error) {
	var list laxityv1alpha1.IntermittentQueryList
	if err := c.List(ctx, &list, client.InNamespace(es.Namespace)); err != nil {
		return nil, fmt.Errorf("listing queries: %w", err)
	}
	return decodableQueries(ctx, es.Name, list.Items), nil
}

// request asks the pool for ask.nodes nodes, ask.busy of which laxity's
// steps hold.
func (r *ElasticScheduleReconciler) request(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, ask poolAsk, p *passResult) error {
	backend, err := r.Backend(ctx, es)
	if err != nil {
		return &backendError{fmt.Errorf("spec.nodePool.backend: %w", err)}
	}
	n, why := tenancy.Bound(ask.nodes, ask.busy, p.ceilings.Write, p.ceilings.Room)
	if why != "" {
		p.overCeiling = why
	}
	ask.nodes = n
	from, err := pool.Request(ctx, backend, n, ask.busy)
	if err != nil {
		return &backendError{fmt.Errorf("resizing the pool to %d nodes: %w", n, err)}
	}
	p.asked = &ask
	if from != n {
		log.FromContext(ctx).Info("resized the pool", "from", from, "to", n)
		p.note(corev1.EventTypeNormal, "Resized", "Resize", fmt.Sprintf("Requested %d nodes (was %d)", n, from))
	}
	es.Status.NodesRequested = &n
	return nil
}

// handOver frees the nodes a step about to launch takes, on a backend that
// holds them with pods of its own (pool.HandOver), once the pass has asked
// the pool for its size.
func (r *ElasticScheduleReconciler) handOver(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, nodes int32, p *passResult) error {
	if p.asked == nil {
		return nil
	}
	backend, err := r.Backend(ctx, es)
	if err != nil {
		return &backendError{fmt.Errorf("spec.nodePool.backend: %w", err)}
	}
	ask := poolAsk{nodes: p.asked.nodes, busy: p.asked.busy + nodes}
	if err := pool.HandOver(ctx, backend, ask.nodes, ask.busy); err != nil {
		return &backendError{fmt.Errorf("freeing %d of the pool's %d nodes for a step: %w", nodes, ask.nodes, err)}
	}
	p.asked = &ask
	return nil
}

// requeueAfter is when to look again: at next (what the pass decisions
// wait for), and at the latest after the poll interval, since a watch can
// miss a change.
func (r *ElasticScheduleReconciler) requeueAfter(now, next time.Time) time.Duration {
	wake := now.Add(r.Options.Poll)
	if !next.IsZero() && next.Before(wake) {
		wake = next
	}
	return max(wake.Sub(now), time.Second)
}
