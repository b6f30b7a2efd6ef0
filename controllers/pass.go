package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/dispatch"
	"github.com/laxity-dev/laxity/internal/pass"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/pool"
	"github.com/laxity-dev/laxity/internal/source"
	"github.com/laxity-dev/laxity/internal/spec"
	"github.com/laxity-dev/laxity/internal/steprun"
	"github.com/laxity-dev/laxity/internal/tenancy"
)

// view is what one pass over a schedule reads, each thing once: its live
// queries and their planner form, every query's input, the launched steps,
// the ready nodes and the plan in force. The phases of the pass (plan, size
// the pool, dispatch, report) read it; only the plan and the launched steps
// change during a pass, and only through the phases that change them.
type view struct {
	es  *laxityv1alpha1.ElasticSchedule
	now time.Time
	// queries are the schedule's queries not being deleted.
	queries []laxityv1alpha1.IntermittentQuery
	// workload is the planner's input from now; workloadErr says which
	// objects' specs could not be converted. planned holds its queries by
	// name: their cost models, rates and partial-merge fractions do not
	// depend on the origin, so dispatch and the rate checks use them too.
	workload    planner.Workload
	workloadErr error
	// sharingNotes are what the schedule's streams leave unshared and why
	// (spec.WorkloadNotes).
	sharingNotes []string
	planned      map[string]planner.Query
	// inputs is each query's input as read in this pass.
	inputs map[string]input
	// steps are laxity's own steps of the schedule; launched the latest
	// attempt of each step, by query.
	steps    []steprun.Step
	launched map[string]launchedSteps
	// ready is the number of ready pool nodes; previousReady what the last
	// pass saw.
	ready, previousReady int32
	lead                 time.Duration
	// unfit are the queries whose executors no ready node holds: planned,
	// but not launched.
	unfit map[string]bool
	// stored is the plan in force, nil before the first; inputsHash is what
	// the plan must have been made from to still hold.
	stored     *storedPlan
	inputsHash string
}

// input is one query's input as a pass read it.
type input struct {
	// src is the query's source, nil when it could not be read; arrived is
	// then the count its status last reported.
	src     source.Source
	arrived int64
	// rate is the measured arrival rate over the schedule's rate window,
	// when measured is true.
	rate     float64
	measured bool
}

// passResult is what the phases of one pass gather for its end: the events
// to emit and the backend errors that let the pass go on.
type passResult struct {
	notes       []note
	backendErrs []error
	// asked is what the pass asked of the pool, nil until it did.
	asked *poolAsk
	// ceilings bound every write to the pool; overCeiling says how a
	// write was lowered to them, "" when none was.
	ceilings    Ceilings
	overCeiling string
	// capped says how the plan's pool sizes were lowered to the ceiling,
	// "" when they were not.
	capped string
	// overBudget says, for the conditions, that the plan searches of the
	// schedule's specs run out of their time budget and the plan in force
	// is kept; "" when they do not. nextSearch is when the next may start.
	overBudget string
	nextSearch time.Time
}

// poolAsk is what a pass asks of the pool: nodes, busy of which laxity's
// launched steps hold (pool.Request).
type poolAsk struct {
	nodes, busy int32
}

func (p *passResult) note(kind, reason, action, message string) {
	p.notes = append(p.notes, note{kind, reason, action, message})
}

// keep records err when it is a backend error, for the pass to go on, and
// returns any other error.
func (p *passResult) keep(err error) error {
	return keepBackendError(err, &p.backendErrs)
}

// observe reads the schedule's view. Before it reads the queries' inputs
// it brings the job runs up to date and lets the queries being deleted go,
// which may fail with backend errors that p keeps.
//
// ns is what the schedule's namespace is granted, nil when nothing is
// checked: a query that asks for more than its namespace may have, or
// whose template was rejected at launch, is left out of the view, so that
// it is neither planned nor run, and the others go on.
func (r *ElasticScheduleReconciler) observe(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, ns *tenancy.Namespace, p *passResult) (*view, error) {
	v := &view{es: es, now: r.Clock.Now(), lead: spec.LeadTime(es)}
	queries, err := queriesOf(ctx, r.Client, es)
	if err != nil {
		return nil, err
	}
	steps, foreign, err := listAllSteps(ctx, r.Client, r.Options, es.Namespace, client.MatchingLabels{LabelSchedule: es.Name})
	if err != nil {
		return nil, err
	}
	p.notes = append(p.notes, r.reportForeign(ctx, foreign)...)
	if err := p.keep(r.syncSteps(ctx, es, steps, v.now)); err != nil {
		return nil, err
	}
	v.steps = steps
	queries, err = r.releaseDeleted(ctx, es, queries, steps)
	if err := p.keep(err); err != nil {
		return nil, err
	}
	queries = r.admit(ns, queries, p)
	v.queries = queries
	if len(queries) == 0 {
		return v, nil
	}
	v.launched = observeSteps(steps)
	if err := r.priceNewWindows(ctx, es, queries, v.now); err != nil {
		return nil, err
	}
	v.workload, v.sharingNotes, v.workloadErr = spec.WorkloadNotes(es, queries, v.now)
	if v.workloadErr == nil {
		// A query over several inputs runs as one stream of its inputs'
		// arrivals together: its source cuts every batch on each input.
		v.workload, v.workloadErr = planner.OneStream(v.workload)
	}
	v.planned = make(map[string]planner.Query, len(v.workload.Queries))
	for _, pq := range v.workload.Queries {
		v.planned[pq.Name] = pq
	}
	v.inputs = make(map[string]input, len(queries))
	for i := range queries {
		v.inputs[queries[i].Name] = r.readInput(ctx, es, &queries[i], v.now, p)
	}
	if v.stored, err = loadPlan(ctx, r.Client, es); err != nil {
		return nil, err
	}
	// The ready nodes are counted before the plan is judged: nodes that
	// vanished make it a plan for a pool that is not there.
	nodes, err := pool.ObserveNodes(ctx, r.Client, es.Spec.NodePool.NodeSelector)
	if err != nil {
		return nil, fmt.Errorf("counting ready nodes: %w", err)
	}
	v.ready = nodes.Ready
	v.unfit = r.judgeFit(v, nodes, p)
	v.previousReady = ptr.Deref(es.Status.NodesReady, v.ready)
	v.inputsHash = inputsHash(es, queries)
	return v, nil
}

// priceNewWindows gives each window of a RecurringQuery that has learned
// nothing yet (its controller has not reconciled it) what the earlier
// windows learned, in this pass's copy: a new window is then planned with
// it from its first plan, rather than planned with the declared model and
// re-planned a moment later.
func (r *ElasticScheduleReconciler) priceNewWindows(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, queries []laxityv1alpha1.IntermittentQuery, now time.Time) error {
	if spec.Learning(es) == laxityv1alpha1.LearningOff {
		return nil
	}
	for i := range queries {
		q := &queries[i]
		if q.Status.Learned != nil || metav1.GetControllerOf(q) == nil {
			continue
		}
		inherited, err := inheritedObservations(ctx, r.Client, q)
		if err != nil {
			return err
		}
		if len(inherited) > 0 {
			q.Status.Learned, _ = learnedModel(q, es, inherited, metav1.Time{Time: now})
		}
	}
	return nil
}

// readInput reads one query's input and, once its window has been open a
// rate window, the rate its tuples arrived at over that window. A query
// whose input cannot be read starts nothing until it can be read again and
// is planned from what it last reported; the other queries go on.
func (r *ElasticScheduleReconciler) readInput(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, q *laxityv1alpha1.IntermittentQuery, now time.Time, p *passResult) input {
	src, reading := r.Sources.Read(ctx, q, now)
	if reading.Err != nil {
		p.note(corev1.EventTypeWarning, laxityv1alpha1.InputUnavailableReason, "Read", fmt.Sprintf("IntermittentQuery %s: %v", q.Name, reading.Err))
		return input{arrived: ptr.Deref(q.Status.ArrivedTuples, 0)}
	}
	in := input{src: src, arrived: reading.Arrived}
	window := es.Spec.Planning.RateWindow.Duration
	if window > 0 && now.Sub(q.Spec.Window.Start.Time) >= window && now.Before(q.Spec.Window.End.Time) {
		in.rate, in.measured = r.Sources.RateOver(ctx, q, src, now, reading.Arrived, window)
	}
	return in
}

// snapshot is the view as the pass decisions take it (internal/pass): each
// query's window, launched steps and input, the plan in force and the pool.
// A query's input that could not be read holds it (it starts nothing), as
// do executors no ready node holds; a source that can tell when its tuples
// arrive (source.Forecaster) tells dispatch, the others are polled.
func (v *view) snapshot(o Options) *pass.Snapshot {
	es := v.es
	s := &pass.Snapshot{
		Now: v.now, Workload: v.workload, Inputs: v.inputsHash,
		Ready: int(v.ready), PreviousReady: int(v.previousReady), Lead: v.lead,
		Rules:   rulesOf(es, o),
		Queries: make([]pass.Query, 0, len(v.queries)),
	}
	if st := v.stored; st != nil {
		s.Plan = &pass.Plan{Doc: st.doc, Inputs: st.inputs, Reason: st.reason, Assumed: st.rates, Models: st.models, Arrivals: st.arrivals}
	}
	for i := range v.queries {
		q := &v.queries[i]
		in := v.inputs[q.Name]
		var launched dispatch.Query
		withLaunched(&launched, v.launched[q.Name], v.now)
		pq := pass.Query{
			Name: q.Name, WindowStart: q.Spec.Window.Start.Time, WindowEnd: q.Spec.Window.End.Time, Deadline: q.Spec.Deadline.Time,
			Closed:  q.Spec.Window.End.Add(spec.AllowedLateness(q)),
			Batches: launched.Batches, Partials: launched.Partials, Final: launched.Final,
			Arrived: in.arrived, Held: in.src == nil || v.unfit[q.Name],
		}
		if f, forecasts := in.src.(source.Forecaster); forecasts {
			pq.ArrivalOf = f.ArrivalOf
		}
		if in.measured {
			pq.Rate = in.rate
		}
		s.Queries = append(s.Queries, pq)
	}
	return s
}

// rulesOf are the settings the schedule's pass decisions follow: its spec's
// and the manager's.
func rulesOf(es *laxityv1alpha1.ElasticSchedule, o Options) pass.Rules {
	return pass.Rules{
		Dispatch: spec.DispatchSettings(es, nil, o.MaxAttempts, o.Backoff), Stuck: o.stuckRule(),
		Rates: spec.RateRules(es), RateWindow: es.Spec.Planning.RateWindow.Duration, Poll: o.Poll,
	}
}

// runTime is the run-time view of every query the plan in force covers
// (pass.RunTime).
func (v *view) runTime(o Options) ([]dispatch.Query, error) {
	dqs, err := pass.RunTime(v.snapshot(o))
	return dqs, v.notPlannable(err)
}

// query is the live query named name, nil when there is none.
func (v *view) query(name string) *laxityv1alpha1.IntermittentQuery {
	for i := range v.queries {
		if v.queries[i].Name == name {
			return &v.queries[i]
		}
	}
	return nil
}
