package controllers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/dispatch"
	"github.com/laxity-dev/laxity/internal/emr"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/pool"
	"github.com/laxity-dev/laxity/internal/replan"
	"github.com/laxity-dev/laxity/internal/source"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/internal/spec"
)

// poolFinalizer returns the pool to zero nodes before an ElasticSchedule
// goes away.
const poolFinalizer = "laxity.dev/pool"

// Re-plan reasons, recorded on the plan and counted in metrics.
const (
	ReplanInitial      = "Initial"
	ReplanSpecChanged  = "SpecChanged"
	ReplanRateExceeded = "RateExceeded"
	ReplanRateFellBack = "RateFellBack"
	ReplanStepFailed   = "StepFailed"
	// ReplanNodesLost: ready nodes fell below what the running or due step
	// needs and what the plan expects ready (dispatch.NodesLost); the new
	// plan starts from the nodes really there.
	ReplanNodesLost = "NodesLost"
)

// Defaults of the stuck-step bound (Options.StuckFactor, StuckMinExtra).
// Three times the modelled duration leaves room for the run-to-run spread
// of Spark jobs (stragglers, a slow executor, garbage collection), which is
// well within 3x for the steps cost models are fitted on; two minutes more
// than modelled covers what the cost model does not see in a short step:
// pulling the image, scheduling the driver and executors, JVM start-up.
const (
	DefaultStuckFactor   = 3.0
	DefaultStuckMinExtra = 2 * time.Minute
)

// Options are the run-time settings shared by both reconcilers.
type Options struct {
	// MaxAttempts bounds the tries of one step; Backoff is the wait before
	// the first retry, doubled for each further one.
	MaxAttempts int
	Backoff     time.Duration
	// ResultRoot is where step results go: <root>/<namespace>/<query>/<step>.
	ResultRoot string
	// Poll is how often a schedule with open windows is looked at again when
	// nothing else wakes it (arrivals are not events).
	Poll time.Duration
	// ClockRate is how many seconds pass on the reconcilers' clock per real
	// second: 1 (or 0) on a cluster, more on the demo's scaled clock. The
	// workqueue waits in real time, so requeue delays shrink to match.
	ClockRate float64
	// NoSparkApplications says that the cluster serves no SparkApplication
	// kind (no spark-operator): steps run only as EMR on EKS job runs, and
	// SparkApplications are neither watched nor listed.
	NoSparkApplications bool
	// StuckFactor and StuckMinExtra bound how long a step may stay pending
	// or running: max(StuckFactor × modelled, modelled + StuckMinExtra),
	// its modelled duration carrying the schedule's runtime margin. Past
	// the bound it is cancelled and retried as a failed attempt. Zero means
	// the default (DefaultStuckFactor, DefaultStuckMinExtra); a negative
	// value leaves that term out, and both negative bound nothing.
	StuckFactor   float64
	StuckMinExtra time.Duration
	// ScheduleWorkers and QueryWorkers are how many schedules, and how many
	// queries, are reconciled at once (0 means 1): a schedule whose plan
	// takes long then holds back no other schedule.
	ScheduleWorkers, QueryWorkers int
	// PlanTimeout bounds one plan search in compute time (0 means
	// DefaultPlanTimeout): a workload whose search would run longer gets a
	// condition instead of holding a worker and the manager's memory.
	PlanTimeout time.Duration
	// MaxPlanSteps bounds the batches and merges one plan may hold (0 means
	// planner.DefaultMaxSteps).
	MaxPlanSteps int
}

// DefaultPlanTimeout is Options.PlanTimeout's default: well above the
// search time of every sample and of 10,000 queries over a day, well below
// what would let one tenant's plan stall the others.
const DefaultPlanTimeout = 30 * time.Second

// planTimeout is the time budget of one plan search.
func (o Options) planTimeout() time.Duration {
	if o.PlanTimeout > 0 {
		return o.PlanTimeout
	}
	return DefaultPlanTimeout
}

// errKeptPlan marks a re-plan whose search ran out of its budget while a
// plan was in force: that plan goes on.
var errKeptPlan = errors.New("the plan in force is kept")

// budgetRetry is how long a schedule whose search ran out of its budget
// waits before trying again: the same inputs would run out again.
const budgetRetry = 5 * time.Minute

// stuckRule is the stuck-step bound the options give.
func (o Options) stuckRule() dispatch.StuckRule {
	r := dispatch.StuckRule{Factor: o.StuckFactor, MinExtra: o.StuckMinExtra}
	if r.Factor == 0 {
		r.Factor = DefaultStuckFactor
	}
	if r.MinExtra == 0 {
		r.MinExtra = DefaultStuckMinExtra
	}
	return dispatch.StuckRule{Factor: max(r.Factor, 0), MinExtra: max(r.MinExtra, 0)}
}

// realDelay is the real time to wait for d to pass on the clock.
func (o Options) realDelay(d time.Duration) time.Duration {
	if o.ClockRate <= 1 {
		return d
	}
	return time.Duration(float64(d) / o.ClockRate)
}

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
	// JobRuns opens the EMR on EKS clients of schedules with the
	// emrContainers backend; nil when the manager runs none.
	JobRuns *emr.Clients

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

func (r *ElasticScheduleReconciler) reconcile(ctx context.Context, es *laxityv1alpha1.ElasticSchedule) (ctrl.Result, []note, error) {
	now := r.Clock.Now()
	var notes []note
	queries, err := queriesOf(ctx, r.Client, es)
	if err != nil {
		return ctrl.Result{}, nil, err
	}
	es.Status.ObservedGeneration = es.Generation
	steps, foreign, err := listAllSteps(ctx, r.Client, r.Options, es.Namespace, client.MatchingLabels{LabelSchedule: es.Name})
	if err != nil {
		return ctrl.Result{}, nil, err
	}
	notes = append(notes, r.reportForeign(ctx, foreign)...)
	var backendErrs []error
	if err := keepBackendError(r.syncJobRuns(ctx, es, steps, now), &backendErrs); err != nil {
		return ctrl.Result{}, nil, err
	}
	queries, err = r.releaseDeleted(ctx, es, queries, steps)
	if err := keepBackendError(err, &backendErrs); err != nil {
		return ctrl.Result{}, nil, err
	}
	if len(queries) == 0 {
		if err := keepBackendError(r.request(ctx, es, spec.IdleNodes(es), &notes), &backendErrs); err != nil {
			return ctrl.Result{}, nil, err
		}
		backendErr := joinBackendErrors(backendErrs)
		setScheduleConditions(es, scheduleState{noQueries: true, backendErr: backendErr})
		return ctrl.Result{}, notes, backendErr
	}
	launched := observeSteps(steps)
	arrived := map[string]int64{}
	rates := map[string]float64{}
	sources := map[string]source.Source{}
	for i := range queries {
		q := &queries[i]
		src, err := r.Sources.For(ctx, q)
		if err == nil {
			arrived[q.Name], err = src.Arrived(now)
		}
		if err != nil {
			// The other queries go on; this one starts nothing until its
			// input can be read again, and is planned from what it last
			// reported.
			arrived[q.Name] = ptr.Deref(q.Status.ArrivedTuples, 0)
			notes = append(notes, note{corev1.EventTypeWarning, laxityv1alpha1.InputUnavailableReason, "Read", fmt.Sprintf("IntermittentQuery %s: %v", q.Name, err)})
			continue
		}
		sources[q.Name] = src
		window := es.Spec.Planning.RateWindow.Duration
		if window > 0 && now.Sub(q.Spec.Window.Start.Time) >= window && now.Before(q.Spec.Window.End.Time) {
			if rate, ok := r.Sources.RateOver(q, src, now, arrived[q.Name], window); ok {
				rates[q.Name] = rate
			}
		}
	}

	stored, err := loadPlan(ctx, r.Client, es)
	if err != nil {
		return ctrl.Result{}, nil, err
	}
	// The ready nodes are counted before the plan is judged: nodes that
	// vanished make it a plan for a pool that is not there.
	ready, err := pool.ReadyNodes(ctx, r.Client, es.Spec.NodePool.NodeSelector)
	if err != nil {
		return ctrl.Result{}, nil, fmt.Errorf("counting ready nodes: %w", err)
	}
	previousReady := ptr.Deref(es.Status.NodesReady, ready)
	lead := spec.LeadTime(es)
	inputs := inputsHash(es, queries)
	reason := replanReason(es, queries, stored, inputs, rates, now)
	var dqs []dispatch.Query
	if reason == "" {
		if dqs, err = dispatchQueries(queries, &stored.doc, launched, arrived, now); err != nil {
			return ctrl.Result{}, nil, err
		}
		withSources(dqs, sources, es)
		if exhausted := dispatch.Decide(now, spec.DispatchSettings(es, r.Options.MaxAttempts, r.Options.Backoff), dqs, dispatch.Pool{}).Exhausted; len(exhausted) > 0 && stored.reason != ReplanStepFailed {
			reason = ReplanStepFailed
		}
	}
	var nodesLost string // why the pool lost nodes in this pass, for PoolReady
	if reason == "" {
		need := max(dispatch.Holding(dqs), dispatch.BehindSchedule(&stored.doc, dqs, r.Options.MaxAttempts, now))
		expected := dispatch.ExpectedReady(stored.doc.Origin, stored.doc.Requests, lead, now)
		if dispatch.NodesLost(int(previousReady), int(ready), need, expected) {
			reason = ReplanNodesLost
			message := fmt.Sprintf("Ready nodes fell from %d to %d, below the %d the work in progress needs and the %d the plan expects ready now: re-planning from the %d there and requesting the nodes again",
				previousReady, ready, need, expected, ready)
			log.FromContext(ctx).Info("nodes lost", "from", previousReady, "to", ready, "need", need, "expected", expected)
			notes = append(notes, note{corev1.EventTypeWarning, laxityv1alpha1.NodesLostReason, "Replan", message})
			nodesLost = message
		}
	}
	if reason != "" {
		wall := time.Now() // plan_search_seconds is compute time, whatever r.Clock is
		doc, assumed, err := r.plan(ctx, es, queries, launched, arrived, rates, now)
		search := time.Since(wall)
		if err != nil && errors.Is(err, planner.ErrSearchBudget) {
			msg := fmt.Sprintf("the plan search (%s) ran longer than the %s one search may take: raise spec.planning.batchSizeFactors, shorten the windows, or split the queries over several schedules", reason, r.Options.planTimeout())
			log.FromContext(ctx).Info("plan search out of budget", "reason", reason, "budget", r.Options.planTimeout(), "keepingPlan", stored != nil)
			notes = append(notes, note{corev1.EventTypeWarning, laxityv1alpha1.SearchBudgetExceededReason, "Plan", msg})
			if stored == nil {
				setScheduleConditions(es, scheduleState{invalid: errors.New(msg), invalidReason: laxityv1alpha1.SearchBudgetExceededReason})
				return ctrl.Result{RequeueAfter: budgetRetry}, notes, nil
			}
			// The plan in force goes on (its dispatch inputs are made
			// again below); the search is tried again on the next pass
			// that finds a reason to re-plan.
			err = errKeptPlan
		}
		switch {
		case errors.Is(err, errKeptPlan):
		case err != nil:
			setScheduleConditions(es, scheduleState{invalid: err})
			notes = append(notes, note{corev1.EventTypeWarning, laxityv1alpha1.InvalidSpecReason, "Plan", err.Error()})
			return ctrl.Result{}, notes, nil
		default:
			stored = &storedPlan{doc: doc, inputs: inputs, reason: reason, rates: assumed}
			if err := storePlan(ctx, r.Client, es, stored); err != nil {
				return ctrl.Result{}, nil, err
			}
			recordReplan(es, reason, search)
			log.FromContext(ctx).Info("planned", "reason", reason, "feasible", doc.Chosen.Feasible, "cost", doc.Chosen.Cost,
				"initialNodes", doc.Chosen.InitialNodes, "maxNodes", doc.Chosen.MaxNodes, "batchSizeFactor", doc.Chosen.BatchSizeFactor,
				"readyNodes", ready, "searchSeconds", search.Seconds())
			es.Status.LastPlanTime = &metav1.Time{Time: now}
			// A plan that misses a deadline is something to act on: a
			// Warning, which `kubectl get events --field-selector
			// type=Warning` lists.
			kind := corev1.EventTypeNormal
			if !doc.Chosen.Feasible {
				kind = corev1.EventTypeWarning
			}
			notes = append(notes, note{kind, "Planned", "Plan", planMessage(&doc, reason)})
		}
	}
	doc := &stored.doc
	writePlanStatus(es, doc, now)

	es.Status.NodesReady = &ready
	if reason != "" {
		// The new plan may size batches differently.
		if dqs, err = dispatchQueries(queries, doc, launched, arrived, now); err != nil {
			return ctrl.Result{}, nil, err
		}
		withSources(dqs, sources, es)
	}
	// Steps past their bound are cancelled and become failed attempts,
	// retried after the backoff like any failure.
	if stuck := dispatch.Stuck(now, r.Options.stuckRule(), dqs); len(stuck) > 0 {
		cancelled, err := r.cancelStuck(ctx, es, queries, launched, stuck, now, &notes)
		if err := keepBackendError(err, &backendErrs); err != nil {
			return ctrl.Result{}, notes, err
		}
		if cancelled {
			if dqs, err = dispatchQueries(queries, doc, launched, arrived, now); err != nil {
				return ctrl.Result{}, nil, err
			}
			withSources(dqs, sources, es)
		}
	}
	wanted := max(dispatch.RequestAt(doc.Origin, doc.Requests, now), dispatch.BehindSchedule(doc, dqs, r.Options.MaxAttempts, now))
	if err := keepBackendError(r.request(ctx, es, int32(wanted), &notes), &backendErrs); err != nil {
		return ctrl.Result{}, notes, err
	}
	current := dispatch.Pool{Ready: int(ready)}
	current.Coming, current.ComingBy = dispatch.Coming(doc.Origin, doc.Requests, lead, now)
	decision, created, launches, err := r.dispatch(ctx, es, queries, dqs, launched, sources, current, now)
	notes = append(notes, launches...)
	if err := keepBackendError(err, &backendErrs); err != nil {
		return ctrl.Result{}, notes, err
	}
	backendErr := joinBackendErrors(backendErrs)
	// A retry created in this pass ends its stuck step's handling.
	stuck := stuckHandling(launched, r.Options.MaxAttempts, created)
	setScheduleConditions(es, scheduleState{doc: doc, requested: int32(wanted), ready: ready, backendErr: backendErr, stuck: stuck, nodesLost: nodesLost})
	if backendErr != nil {
		return ctrl.Result{}, notes, backendErr
	}
	decision.Recheck = earliestTime(decision.Recheck, dispatch.StuckRecheck(now, r.Options.stuckRule(), dqs))
	return ctrl.Result{RequeueAfter: r.requeueAfter(now, doc, decision)}, notes, nil
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

// replanReason says why the plan in force no longer holds, or "".
func replanReason(es *laxityv1alpha1.ElasticSchedule, queries []laxityv1alpha1.IntermittentQuery, stored *storedPlan, inputs string, rates map[string]float64, now time.Time) string {
	switch {
	case stored == nil:
		return ReplanInitial
	case stored.inputs != inputs:
		return ReplanSpecChanged
	}
	for i := range queries {
		q := &queries[i]
		pq, err := spec.Query(q, q.Spec.Window.Start.Time)
		if err != nil {
			continue // the spec is checked where the plan is made
		}
		declared := replan.RateAt(pq.Rates, now.Sub(q.Spec.Window.Start.Time).Seconds())
		switch replan.Compare(measuredRate(es, pq, rates), declared, stored.rates[q.Name], stored.doc.MaxSupportedRateFactor, spec.RateRules(es)) {
		case replan.Exceeds:
			return ReplanRateExceeded
		case replan.FellBack:
			return ReplanRateFellBack
		}
	}
	return ""
}

// measuredRate is the query's measured rate, if any, and what the
// measurement can tell apart.
func measuredRate(es *laxityv1alpha1.ElasticSchedule, pq planner.Query, rates map[string]float64) replan.Observed {
	return replan.Observed{Measured: rates[pq.Name], Resolution: replan.Resolution(pq.Granularity, es.Spec.Planning.RateWindow.Seconds())}
}

// plan makes a new plan from now (replan.Plan): from the observed progress
// of every query whose window has opened, with the rates the rate model
// assumes, executable on the nodes ready now. It also returns the rates so
// assumed, by query, which the plan's maximum supported rate is relative to.
func (r *ElasticScheduleReconciler) plan(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, queries []laxityv1alpha1.IntermittentQuery, launched map[string]launchedSteps, arrived map[string]int64, rates map[string]float64, now time.Time) (planner.Document, map[string]float64, error) {
	w, err := spec.Workload(es, queries, now)
	if err != nil {
		return planner.Document{}, nil, err
	}
	ready, err := pool.ReadyNodes(ctx, r.Client, es.Spec.NodePool.NodeSelector)
	if err != nil {
		return planner.Document{}, nil, fmt.Errorf("counting ready nodes: %w", err)
	}
	observed := map[string]replan.Observed{}
	holding := make([]dispatch.Query, len(queries))
	for i := range queries {
		name := queries[i].Name
		pq, err := spec.Query(&queries[i], now)
		if err != nil {
			return planner.Document{}, nil, fmt.Errorf("IntermittentQuery %s: %w", name, err)
		}
		o := measuredRate(es, pq, rates)
		o.Arrived, o.Done = arrived[name], progressOf(launched[name])
		observed[name] = o
		holding[i] = dispatch.Query{Name: name, Cost: pq.Cost.Scaled(spec.RuntimeMargin(es))}
		withLaunched(&holding[i], launched[name], now)
	}
	busy := dispatch.FreeAt(holding, now).Sub(now).Seconds()
	w.Planning.MaxSteps = r.Options.MaxPlanSteps
	// The budget is compute time, whatever r.Clock is.
	search, cancel := context.WithTimeout(ctx, r.Options.planTimeout())
	defer cancel()
	started := r.Clock.Now()
	doc, assumed, err := replan.PlanContext(search, w, observed, spec.RateRules(es), int(ready), busy)
	doc.SearchSeconds = r.Clock.Since(started).Seconds()
	return doc, assumed, err
}

// progressOf is how far the query's launched steps have got.
func progressOf(launched launchedSteps) replan.Progress {
	p := replan.Progress{Batches: len(launched.batches), Partials: len(launched.partials)}
	if n := len(launched.batches); n > 0 {
		p.Tuples = launched.batches[n-1].step.ToTuple
		p.LastFrom = launched.batches[n-1].step.FromTuple
	}
	return p
}

func planMessage(doc *planner.Document, reason string) string {
	c := doc.Chosen
	if !c.Feasible {
		return fmt.Sprintf("Re-planned (%s): no plan meets every deadline; %s would be %.0fs late even on %d nodes", reason, c.Failure.Query, c.Failure.LateSeconds, c.InitialNodes)
	}
	return fmt.Sprintf("Re-planned (%s): %d initial nodes, %dX batches, cost %.2f, at most %d nodes", reason, c.InitialNodes, c.BatchSizeFactor, c.Cost, c.MaxNodes)
}

// request asks the pool for n nodes.
func (r *ElasticScheduleReconciler) request(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, n int32, notes *[]note) error {
	backend, err := r.Backend(ctx, es)
	if err != nil {
		return &backendError{fmt.Errorf("spec.nodePool.backend: %w", err)}
	}
	current, err := backend.Requested(ctx)
	if err != nil {
		return &backendError{fmt.Errorf("reading the pool size: %w", err)}
	}
	if current != n {
		if err := backend.Request(ctx, n); err != nil {
			return &backendError{fmt.Errorf("resizing the pool to %d nodes: %w", n, err)}
		}
		log.FromContext(ctx).Info("resized the pool", "from", current, "to", n)
		*notes = append(*notes, note{corev1.EventTypeNormal, "Resized", "Resize", fmt.Sprintf("Requested %d nodes (was %d)", n, current)})
	}
	es.Status.NodesRequested = &n
	return nil
}

// dispatchQueries builds the run-time view of every query the plan covers.
func dispatchQueries(queries []laxityv1alpha1.IntermittentQuery, doc *planner.Document, launched map[string]launchedSteps, arrived map[string]int64, now time.Time) ([]dispatch.Query, error) {
	var out []dispatch.Query
	for i := range queries {
		q := &queries[i]
		pq, err := spec.Query(q, doc.Origin)
		if err != nil {
			return nil, fmt.Errorf("IntermittentQuery %s: %w", q.Name, err)
		}
		if dq, ok := dispatchQuery(q, pq, doc, launched[q.Name], arrived[q.Name], now); ok {
			out = append(out, dq)
		}
	}
	return out, nil
}

// withSources gives dispatch what the queries' sources tell: the instant
// a batch fills up, for the sources that can tell (source.Forecaster; the
// others are polled), and which queries' inputs could not be read this
// pass (held: they start nothing). It also gives dispatch's estimates the
// plan's runtime margin, so that it judges slack as the plan did.
func withSources(dqs []dispatch.Query, sources map[string]source.Source, es *laxityv1alpha1.ElasticSchedule) {
	for i := range dqs {
		src, ok := sources[dqs[i].Name]
		if f, forecasts := src.(source.Forecaster); forecasts {
			dqs[i].ArrivalOf = f.ArrivalOf
		}
		dqs[i].Held = !ok
		dqs[i].Cost = dqs[i].Cost.Scaled(spec.RuntimeMargin(es))
	}
}

// dispatch launches the next step, if one is due; created is the step it
// created in this pass, nil when none.
func (r *ElasticScheduleReconciler) dispatch(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, queries []laxityv1alpha1.IntermittentQuery, dqs []dispatch.Query, launched map[string]launchedSteps, sources map[string]source.Source, current dispatch.Pool, now time.Time) (_ dispatch.Decision, created *dispatch.Step, _ []note, _ error) {
	decision := dispatch.Decide(now, spec.DispatchSettings(es, r.Options.MaxAttempts, r.Options.Backoff), dqs, current)
	logger := log.FromContext(ctx)
	if decision.Launch == nil {
		logger.V(1).Info("nothing to launch", "why", decision.Why, "readyNodes", current.Ready, "exhausted", decision.Exhausted)
		return decision, nil, nil, nil
	}
	l := decision.Launch
	logger.V(1).Info("dispatch decision", "query", l.Query, "kind", l.Kind, "index", l.Index, "attempt", l.Attempt, "nodes", l.Nodes, "slack", l.Slack)
	var q *laxityv1alpha1.IntermittentQuery
	for i := range queries {
		if queries[i].Name == l.Query {
			q = &queries[i]
		}
	}
	step := sparkapp.Step{
		Kind: l.Kind, Index: l.Index, Attempt: l.Attempt, NamesTaken: l.NamesTaken,
		FromTuple: l.FromTuple, ToTuple: l.ToTuple, Inputs: l.Inputs,
		Nodes: int32(l.Nodes), ReadyNodes: int32(current.Ready), LaunchedAt: now,
	}
	step.InputLocations = inputLocations(launched[q.Name], step)
	if slicer, ok := sources[q.Name].(source.Slicer); ok && l.Kind == planner.StepBatch {
		var err error
		if step.Slice, step.ToTuple, err = batchSlice(ctx, slicer, launched[q.Name], *l, now); err != nil {
			return decision, nil, nil, fmt.Errorf("IntermittentQuery %s: batch %d: %w", q.Name, l.Index, err)
		}
	}
	// A name an object laxity does not own already has is never taken
	// over: that object is left alone and reported, and the step is
	// launched under its next attempt's name (-r<n>), the same step with
	// the same tuple range and input. The attempt number passed over is
	// recorded on the step (NamesTaken) and is not charged as a failure,
	// so squatting neither costs a try nor stops the query; the foreign
	// object is never read as the step, so nothing runs twice or is lost.
	// At most maxNamesTaken names are passed over in one pass.
	var notes []note
	for taken := 0; ; taken++ {
		app, err := sparkapp.Render(q, es, step, sparkapp.Locations{Input: q.Spec.Input.Location, ResultRoot: r.Options.ResultRoot})
		if err != nil {
			return decision, nil, notes, err
		}
		if _, gone := r.cancelled.Load(es.Namespace + "/" + app.GetName()); gone {
			// Deleted as stuck; the cache has not shown its record yet.
			logger.Info("holding a launch: the step was cancelled as stuck and its record is not seen yet", "step", app.GetName())
			return decision, nil, notes, nil
		}
		// A job run whose start failed after its record was written is
		// launched: the next pass starts it.
		made, squatter, err := r.launch(ctx, es, q, app, now)
		if squatter != "" {
			message := fmt.Sprintf("%s of IntermittentQuery %s: the name %s is taken by %s, which laxity does not own; it is left alone, and the step runs as attempt %d instead, not counted as a failure",
				stepTitle(l.Kind, l.Index), q.Name, app.GetName(), squatter, step.Attempt+1)
			logger.Info("step name taken", "query", q.Name, "step", app.GetName(), "takenBy", squatter, "nextAttempt", step.Attempt+1)
			notes = append(notes, note{corev1.EventTypeWarning, laxityv1alpha1.StepNameTakenReason, "Launch", message})
			if taken+1 >= maxNamesTaken {
				return decision, nil, notes, fmt.Errorf("IntermittentQuery %s: %s: %d attempt names in a row are taken by objects laxity does not own", q.Name, stepTitle(l.Kind, l.Index), maxNamesTaken)
			}
			step.Attempt++
			step.NamesTaken++
			continue
		}
		if !made {
			return decision, nil, notes, err
		}
		recordLaunch(es, l.Kind)
		message := fmt.Sprintf("Launched %s on %d nodes (%s %d of %s, tuples [%d, %d), slack %s)",
			app.GetName(), l.Nodes, l.Kind, l.Index, l.Query, step.FromTuple, step.ToTuple, l.Slack.Round(time.Second))
		kind := "Launched"
		if step.Attempt > step.NamesTaken {
			kind = "Retried"
		}
		logger.Info(strings.ToLower(kind), "query", q.Name, "step", app.GetName(), "kind", l.Kind, "index", l.Index, "attempt", step.Attempt,
			"nodes", l.Nodes, "readyNodes", current.Ready, "fromTuple", step.FromTuple, "toTuple", step.ToTuple, "slack", l.Slack.Round(time.Second))
		return decision, l, append(notes, note{corev1.EventTypeNormal, kind, "Launch", message}), err
	}
}

// maxNamesTaken bounds the attempt names passed over in one pass: names
// taken by the dozen are someone's doing, better stopped at and reported.
const maxNamesTaken = 5

// stepTitle names a step for messages: "Batch 3", "Partial merge 1", "The
// final merge".
func stepTitle(kind planner.StepKind, index int) string {
	switch kind {
	case planner.StepBatch:
		return fmt.Sprintf("Batch %d", index)
	case planner.StepPartial:
		return fmt.Sprintf("Partial merge %d", index)
	}
	return "The final merge"
}

func earliestTime(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}

// launch creates the step app describes: as app itself, or as a job run
// with the emrContainers backend. The name is deterministic: a launch
// repeated after a crash finds the step already there instead of running it
// twice, and created is false. An object of that name that q does not own
// (controller owner reference with q's UID) is not the step: squatter
// names it, and nothing is created.
func (r *ElasticScheduleReconciler) launch(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, q *laxityv1alpha1.IntermittentQuery, app *unstructured.Unstructured, now time.Time) (created bool, squatter string, err error) {
	if es.Spec.NodePool.Backend.EMRContainers != nil {
		return r.launchJobRun(ctx, es, q, app, now)
	}
	if err := controllerutil.SetControllerReference(q, app, r.Scheme()); err != nil {
		return false, "", fmt.Errorf("owning %s: %w", app.GetName(), err)
	}
	if err := r.Create(ctx, app); err != nil {
		if apierrors.IsAlreadyExists(err) {
			existing := sparkapp.New()
			squatter, err := r.takenBy(ctx, q, existing, app.GetNamespace(), app.GetName())
			return false, squatter, err
		}
		return false, "", fmt.Errorf("launching %s: %w", app.GetName(), err)
	}
	return true, "", nil
}

// takenBy reads the object named name that a create found already there
// into existing and says who has it: "" when it is q's own step (a launch
// made before), else the object's kind, namespace and name.
func (r *ElasticScheduleReconciler) takenBy(ctx context.Context, q *laxityv1alpha1.IntermittentQuery, existing client.Object, namespace, name string) (string, error) {
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, existing); err != nil {
		return "", fmt.Errorf("reading %s, which is already there: %w", name, err)
	}
	if ownedByQuery(existing, q.Name, map[string]types.UID{q.Name: q.UID}) {
		return "", nil
	}
	kind := sparkapp.GroupVersionKind.Kind
	if _, ok := existing.(*corev1.ConfigMap); ok {
		kind = "ConfigMap"
	}
	return fmt.Sprintf("%s %s/%s", kind, namespace, name), nil
}

// releaseDeleted lets the queries being deleted go, once their unfinished
// job runs are cancelled, and returns the others: the ones to plan. A
// cancellation AWS fails keeps its query (and finalizer) for the next pass,
// as a backend error; the other queries go on.
func (r *ElasticScheduleReconciler) releaseDeleted(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, queries []laxityv1alpha1.IntermittentQuery, steps []stepObject) ([]laxityv1alpha1.IntermittentQuery, error) {
	var (
		live      []laxityv1alpha1.IntermittentQuery
		cancelErr []error
	)
	for i := range queries {
		q := &queries[i]
		if q.DeletionTimestamp.IsZero() {
			live = append(live, *q)
			continue
		}
		if !controllerutil.ContainsFinalizer(q, jobRunFinalizer) {
			continue
		}
		if err := r.cancelJobRuns(ctx, es, steps, q.Name); err != nil {
			cancelErr = append(cancelErr, fmt.Errorf("IntermittentQuery %s: cancelling its job runs: %w", q.Name, err))
			continue
		}
		if err := dropJobRunFinalizer(ctx, r.Client, q); err != nil {
			return nil, err
		}
	}
	return live, joinBackendErrors(cancelErr)
}

// batchSlice is the exact input of batch l of a query whose source slices
// its stream: a retry reads what the failed attempt read, a new batch
// continues from where the batch before it ended, as recorded on that
// batch's SparkApplication. It also returns the batch's tuple range end,
// which follows what the slice holds.
func batchSlice(ctx context.Context, slicer source.Slicer, launched launchedSteps, l dispatch.Step, now time.Time) (map[string]string, int64, error) {
	batches := launched.batches
	if l.Index < len(batches) {
		tried := batches[l.Index].step
		if tried.Slice == nil {
			return nil, 0, fmt.Errorf("its attempt %d records no input slice to retry", tried.Attempt)
		}
		return tried.Slice, tried.ToTuple, nil
	}
	var previous map[string]string
	if l.Index > 0 {
		if previous = batches[l.Index-1].step.Slice; previous == nil {
			return nil, 0, fmt.Errorf("batch %d records no input slice to continue from", l.Index-1)
		}
	}
	slice, taken, err := slicer.Slice(ctx, now, previous, l.ToTuple-l.FromTuple)
	if err != nil {
		return nil, 0, err
	}
	if taken <= 0 {
		return nil, 0, fmt.Errorf("no tuples of [%d, %d) are there to read", l.FromTuple, l.ToTuple)
	}
	return slice, l.FromTuple + taken, nil
}

// inputLocations are the results a merge combines: a partial merge the
// batches since the previous one, the final merge the partials and the
// batches after the last one.
func inputLocations(launched launchedSteps, step sparkapp.Step) []string {
	if step.Kind == planner.StepBatch {
		return nil
	}
	batches, partials := launched.batches, launched.partials
	var out []string
	if step.Kind == planner.StepPartial {
		c := step.Inputs
		for _, b := range batches[min(step.Index*c, len(batches)):min((step.Index+1)*c, len(batches))] {
			out = append(out, b.result)
		}
		return out
	}
	for _, p := range partials {
		out = append(out, p.result)
	}
	covered := 0
	if len(partials) > 0 && len(batches) > 0 {
		covered = len(batches) - (step.Inputs - len(partials))
	}
	for _, b := range batches[min(max(covered, 0), len(batches)):] {
		out = append(out, b.result)
	}
	return out
}

// requeueAfter is when to look again: a retry's backoff or a window's close,
// the next change of the requested pool size, or the poll interval while
// tuples may arrive.
func (r *ElasticScheduleReconciler) requeueAfter(now time.Time, doc *planner.Document, d dispatch.Decision) time.Duration {
	next := now.Add(r.Options.Poll)
	if t := dispatch.NextRequestChange(doc.Origin, doc.Requests, now); !t.IsZero() && t.Before(next) {
		next = t
	}
	if !d.Recheck.IsZero() && d.Recheck.Before(next) {
		next = d.Recheck
	}
	return max(next.Sub(now), time.Second)
}

// ReasonNothingToRelease is the reason of the event a deleted schedule gets
// when releasing its pool found nothing to release.
const ReasonNothingToRelease = "NothingToRelease"

// finalize returns the pool to zero nodes and lets the schedule go.
func (r *ElasticScheduleReconciler) finalize(ctx context.Context, es *laxityv1alpha1.ElasticSchedule) error {
	if !controllerutil.ContainsFinalizer(es, poolFinalizer) {
		return nil
	}
	if es.Spec.NodePool.Backend.EMRContainers != nil {
		if err := r.cancelAllJobRuns(ctx, es); err != nil {
			return err
		}
	}
	// Releasing creates nothing, so that a namespace being deleted, which
	// refuses new objects, cannot hold the schedule (and the namespace)
	// forever; a pool whose target is gone, or whose kind is no longer
	// served, has nothing left to release.
	var released pool.Released
	backend, err := r.Backend(ctx, es)
	if err == nil {
		released, err = pool.Release(ctx, backend)
	} else if why, ok := pool.NothingToRelease(err); ok {
		released, err = pool.Released{Nothing: true, Why: why}, nil
	}
	if err != nil {
		return fmt.Errorf("releasing the pool: %w", err)
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

// writePlanStatus copies the plan in force into the status.
func writePlanStatus(es *laxityv1alpha1.ElasticSchedule, doc *planner.Document, now time.Time) {
	c := doc.Chosen
	es.Status.Chosen = &laxityv1alpha1.ChosenPlan{
		InitialNodes: int32(c.InitialNodes), BatchSizeFactor: int32(c.BatchSizeFactor),
		Cost: money(c.Cost), ExecutableCost: money(c.ExecutableCost), MaxNodes: int32(c.MaxNodes), Feasible: c.Feasible,
	}
	es.Status.Candidates = nil
	for _, cand := range doc.Candidates {
		es.Status.Candidates = append(es.Status.Candidates, laxityv1alpha1.PlanCandidate{
			InitialNodes: int32(cand.InitialNodes), BatchSizeFactor: int32(cand.BatchSizeFactor),
			Cost: money(cand.Cost), MaxNodes: int32(cand.MaxNodes), Feasible: cand.Feasible,
		})
	}
	es.Status.Queries = nil
	for _, q := range doc.Queries {
		es.Status.Queries = append(es.Status.Queries, laxityv1alpha1.QueryPlan{
			Name: q.Name, BatchSize: q.BatchSize, Batches: int32(q.Batches),
			Finish: wholeSeconds(at(doc.Origin, q.Finish)), Deadline: wholeSeconds(at(doc.Origin, q.Deadline)),
			SlackSeconds: strconv.FormatFloat(math.Round(q.Slack*10)/10, 'f', -1, 64),
		})
	}
	es.Status.NodeRequests = nil
	for _, p := range doc.Requests {
		if t := at(doc.Origin, p.At); !t.Before(now) {
			es.Status.NodeRequests = append(es.Status.NodeRequests, laxityv1alpha1.NodeRequest{At: wholeSeconds(t), Nodes: int32(p.Nodes)})
		}
	}
	es.Status.SearchSeconds = strconv.FormatFloat(doc.SearchSeconds, 'f', 3, 64)
	es.Status.MaxSupportedRateFactor = strconv.FormatFloat(doc.MaxSupportedRateFactor, 'f', 2, 64)
	origin := wholeSeconds(doc.Origin)
	es.Status.PlanOrigin = &origin
}

// wholeSeconds is t as the status can hold it: metav1.Time is serialized to
// the second, so a finer instant read back from the API server never equals
// the one just computed, and the status would be written on every pass.
func wholeSeconds(t time.Time) metav1.Time {
	return metav1.NewTime(t.Truncate(time.Second))
}

func money(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }

// at is the instant seconds after origin, to the millisecond.
func at(origin time.Time, seconds float64) time.Time {
	return origin.Add(time.Duration(math.Round(seconds*1000)) * time.Millisecond)
}

// scheduleState is what the schedule's conditions are computed from.
type scheduleState struct {
	noQueries bool
	// invalid is why no plan could be made; invalidReason its condition
	// reason ("" means InvalidSpec).
	invalid          error
	invalidReason    string
	doc              *planner.Document
	requested, ready int32
	// backendErr is the pass's backend failure, if any.
	backendErr error
	// stuck describes the steps cancelled as stuck and waiting for their
	// retry, "" when there are none.
	stuck string
	// nodesLost says how the ready nodes fell in this pass (NodesLost),
	// "" when they did not.
	nodesLost string
}

// setScheduleConditions computes Planned, Feasible, PoolReady, Ready and
// Stalled.
func setScheduleConditions(es *laxityv1alpha1.ElasticSchedule, s scheduleState) {
	set := func(t string, status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&es.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: es.Generation})
	}
	stalled := func(reason, message string) {
		if reason == "" {
			meta.RemoveStatusCondition(&es.Status.Conditions, laxityv1alpha1.ElasticScheduleStalledCondition)
			return
		}
		set(laxityv1alpha1.ElasticScheduleStalledCondition, metav1.ConditionTrue, reason, message)
	}
	switch {
	case s.noQueries:
		set(laxityv1alpha1.ElasticSchedulePlannedCondition, metav1.ConditionFalse, laxityv1alpha1.NoQueriesReason, "No IntermittentQuery names this schedule")
		if s.backendErr != nil {
			set(laxityv1alpha1.ElasticSchedulePoolReadyCondition, metav1.ConditionFalse, laxityv1alpha1.BackendErrorReason, s.backendErr.Error())
			set(laxityv1alpha1.ElasticScheduleReadyCondition, metav1.ConditionFalse, laxityv1alpha1.BackendErrorReason, s.backendErr.Error())
		} else {
			meta.RemoveStatusCondition(&es.Status.Conditions, laxityv1alpha1.ElasticSchedulePoolReadyCondition)
			set(laxityv1alpha1.ElasticScheduleReadyCondition, metav1.ConditionTrue, laxityv1alpha1.NoQueriesReason, "Nothing to run; the pool is at its idle size")
		}
		stalled("", "")
		return
	case s.invalid != nil:
		reason := s.invalidReason
		if reason == "" {
			reason = laxityv1alpha1.InvalidSpecReason
		}
		set(laxityv1alpha1.ElasticSchedulePlannedCondition, metav1.ConditionFalse, reason, s.invalid.Error())
		set(laxityv1alpha1.ElasticScheduleReadyCondition, metav1.ConditionFalse, reason, s.invalid.Error())
		stalled(reason, s.invalid.Error())
		return
	}
	c := s.doc.Chosen
	set(laxityv1alpha1.ElasticSchedulePlannedCondition, metav1.ConditionTrue, laxityv1alpha1.PlanFoundReason,
		fmt.Sprintf("%d initial nodes, %dX batches, cost %.2f", c.InitialNodes, c.BatchSizeFactor, c.Cost))
	poolReady := fmt.Sprintf("%d of %d requested nodes ready", s.ready, s.requested)
	// Nodes lost stay the reason the pool is not ready until it is again:
	// the condition keeps saying so on the passes that wait for them.
	waiting, waitingMessage := laxityv1alpha1.WaitingForNodesReason, poolReady
	if prev := meta.FindStatusCondition(es.Status.Conditions, laxityv1alpha1.ElasticSchedulePoolReadyCondition); s.nodesLost != "" {
		waiting, waitingMessage = laxityv1alpha1.NodesLostReason, s.nodesLost+"; "+poolReady
	} else if prev != nil && prev.Status == metav1.ConditionFalse && prev.Reason == laxityv1alpha1.NodesLostReason {
		waiting, waitingMessage = laxityv1alpha1.NodesLostReason, "Ready nodes were lost and are requested again: "+poolReady
	}
	switch {
	case s.backendErr != nil:
		set(laxityv1alpha1.ElasticSchedulePoolReadyCondition, metav1.ConditionFalse, laxityv1alpha1.BackendErrorReason, s.backendErr.Error())
	case s.ready >= s.requested:
		set(laxityv1alpha1.ElasticSchedulePoolReadyCondition, metav1.ConditionTrue, laxityv1alpha1.NodesReadyReason, poolReady)
	default:
		set(laxityv1alpha1.ElasticSchedulePoolReadyCondition, metav1.ConditionFalse, waiting, waitingMessage)
	}
	if !c.Feasible {
		infeasible := fmt.Sprintf("%s would be %.0fs late even on %d nodes", c.Failure.Query, c.Failure.LateSeconds, c.InitialNodes)
		set(laxityv1alpha1.ElasticScheduleFeasibleCondition, metav1.ConditionFalse, laxityv1alpha1.NoFeasiblePlanReason, infeasible)
		set(laxityv1alpha1.ElasticScheduleReadyCondition, metav1.ConditionFalse, laxityv1alpha1.NoFeasiblePlanReason, "No plan meets every deadline")
		stalled(laxityv1alpha1.NoFeasiblePlanReason, "No plan meets every deadline: "+infeasible)
		return
	}
	set(laxityv1alpha1.ElasticScheduleFeasibleCondition, metav1.ConditionTrue, laxityv1alpha1.DeadlinesMetReason, "The plan meets every deadline")
	stalled("", "")
	switch {
	case s.backendErr != nil:
		set(laxityv1alpha1.ElasticScheduleReadyCondition, metav1.ConditionFalse, laxityv1alpha1.BackendErrorReason, s.backendErr.Error())
	case s.stuck != "":
		set(laxityv1alpha1.ElasticScheduleReadyCondition, metav1.ConditionFalse, laxityv1alpha1.StepStuckReason, s.stuck)
	case s.ready >= s.requested:
		set(laxityv1alpha1.ElasticScheduleReadyCondition, metav1.ConditionTrue, laxityv1alpha1.DeadlinesMetReason, "Planned and running")
	default:
		set(laxityv1alpha1.ElasticScheduleReadyCondition, metav1.ConditionFalse, waiting, waitingMessage)
	}
}
