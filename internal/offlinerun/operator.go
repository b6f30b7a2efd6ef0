package offlinerun

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/dispatch"
	"github.com/laxity-dev/laxity/internal/learn"
	"github.com/laxity-dev/laxity/internal/pass"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/replan"
)

// Operator is laxity's operator over one schedule without a cluster: what
// it keeps between passes, and the decisions of its ElasticSchedule
// reconciler at each. It keeps the plan in force and what it was made from,
// what was learned before the window (Learning), the provisioning lead time
// being measured and the ready count the last pass saw; what the window's
// own steps teach it reads again at every pass from what the pass observed,
// as the operator reads it from its queries' status. Pass turns one pass's
// Observation into the snapshot the pass decisions take (internal/pass) and
// returns what they decided.
//
// The offline run drives one at every pass over its simulated cluster; the
// controllers' differential test drives one beside the reconciler, on what
// the reconciler reads, and expects the same decisions at every pass.
type Operator struct {
	workload planner.Workload
	rules    pass.Rules
	learning *Learning
	// queries are the queries' windows and deadlines, in the workload's
	// order; a pass fills in what it observed of each.
	queries []pass.Query
	plan    *pass.Plan
	leads   learn.LeadTimes
	// previousReady is the ready count the last pass saw; passed says there
	// was one.
	previousReady int
	passed        bool
	// own are the window's observations the workload was last priced with
	// (priced), nil until it was.
	own    map[string][]learn.Observation
	priced *planner.Workload
}

// OperatorConfig is what an Operator starts from.
type OperatorConfig struct {
	// Workload is the schedule's workload, every time in seconds from its
	// origin, with the models and the lead time plans price it with when
	// nothing is learned; with Learning, those Learning prices it with.
	Workload planner.Workload
	// Rules are the operator's settings the decisions follow.
	Rules pass.Rules
	// Learning, when set, is what the operator learned before the window,
	// which it learns on from (the schedule applies what it learns).
	Learning *Learning
	// Plan is the plan in force when the operator starts, nil when there
	// is none: the first pass then makes one (pass.Initial).
	Plan *pass.Plan
	// Pending is a request for more nodes than were ready made before the
	// first pass, timed from then; nil when none.
	Pending *learn.NodeRequest
}

// NewOperator is an operator that starts from c.
func NewOperator(c OperatorConfig) (*Operator, error) {
	o := &Operator{workload: c.Workload, rules: c.Rules, learning: c.Learning, plan: c.Plan}
	seen := map[string]bool{}
	for _, q := range c.Workload.Queries {
		if seen[q.Name] {
			return nil, fmt.Errorf("offlinerun: query %s is in the workload twice", q.Name)
		}
		seen[q.Name] = true
		origin := c.Workload.Origin
		o.queries = append(o.queries, pass.Query{
			Name: q.Name, WindowStart: at(origin, q.WindowStart), WindowEnd: at(origin, q.WindowEnd), Deadline: at(origin, q.Deadline),
			Closed: at(origin, q.WindowEnd+q.AllowedLateness),
		})
	}
	if c.Pending != nil {
		p := *c.Pending
		o.leads.Pending = &p
	}
	if c.Learning != nil {
		o.leads.Measured = leadTimes(c.Learning.Leads)
	}
	return o, nil
}

// leadTimes are lead times in seconds as the operator keeps them: the
// newest learn.MaxLeadTimes.
func leadTimes(seconds []float64) []time.Duration {
	seconds = newest(seconds, learn.MaxLeadTimes)
	out := make([]time.Duration, len(seconds))
	for i, s := range seconds {
		out[i] = costmodel.Duration(s)
	}
	return out
}

// Observation is what one pass reads of the cluster.
type Observation struct {
	Now time.Time
	// Queries are what the pass read of each query; a query of the
	// workload not among them has launched nothing and seen no tuple.
	Queries []QueryObservation
	// Ready is the ready pool nodes.
	Ready int
}

// QueryObservation is what one pass read of one query.
type QueryObservation struct {
	Name string
	// Batches, Partials and Final are its launched steps, the latest
	// attempt of each, with their state and times.
	Batches  []dispatch.Batch
	Partials []dispatch.Attempt
	Final    *dispatch.Attempt
	// Arrived is the tuples arrived by now; ArrivalOf, for a source that
	// can tell, when the n-th tuple arrives (nil for a polled source).
	Arrived   int64
	ArrivalOf func(tuples int64) (time.Time, bool)
	// Rate is the arrival rate measured over the rate window, 0 when none
	// was measured.
	Rate float64
	// Held says the query starts nothing in this pass (see pass.Query).
	Held bool
}

// Decisions are what one pass decided.
type Decisions struct {
	// Verdict is whether the plan in force held (Reason "") and why not.
	Verdict pass.Verdict
	// Plan is the plan made in this pass, nil when the plan in force held.
	Plan *pass.Plan
	// Cancel are the steps cancelled as stuck, retried as failed attempts.
	Cancel []dispatch.StuckStep
	// Request is the pool size asked for, Launch the step to launch (nil
	// when none), Next when to look again at the latest (pass.Actions).
	Request int
	Launch  *dispatch.Step
	Next    time.Time
	// Lead is the provisioning lead time measured in this pass, when
	// Measured.
	Lead     time.Duration
	Measured bool
}

// Pass is one pass of the operator over what obs observed: it judges the
// plan in force and re-plans when it no longer holds, cancels stuck steps,
// sizes the pool, picks the step to launch and when to look again, then
// measures the lead time from the request and the ready nodes, in the
// ElasticSchedule reconciler's order. A plan search that fails is an error.
func (o *Operator) Pass(obs Observation) (Decisions, error) {
	snap, err := o.snapshot(obs)
	if err != nil {
		return Decisions{}, err
	}
	verdict, err := pass.Judge(snap)
	if err != nil {
		return Decisions{}, fmt.Errorf("offlinerun: %w", err)
	}
	d := Decisions{Verdict: verdict}
	if verdict.Reason != "" {
		if d.Plan, err = o.replan(snap, verdict.Reason); err != nil {
			return Decisions{}, err
		}
		snap.Plan = d.Plan
	}
	dqs, err := pass.RunTime(snap)
	if err != nil {
		return Decisions{}, fmt.Errorf("offlinerun: %w", err)
	}
	if d.Cancel = pass.Stuck(snap, dqs); len(d.Cancel) > 0 {
		cancelStuck(snap, d.Cancel)
		if dqs, err = pass.RunTime(snap); err != nil {
			return Decisions{}, fmt.Errorf("offlinerun: %w", err)
		}
	}
	acts := pass.Act(snap, dqs)
	d.Request, d.Launch, d.Next = acts.Request, acts.Decision.Launch, acts.Next
	o.previousReady, o.passed = obs.Ready, true
	if d.Lead, d.Measured = o.leads.Observe(acts.Request, obs.Ready, obs.Now); d.Measured {
		// The next pass plans with it, as the operator's next pass reads
		// it from the schedule's status.
		o.priced = nil
	}
	return d, nil
}

// LeadTimes are the lead times measured so far, in seconds, oldest first:
// those learned before the window (Learning.Leads) and the window's own,
// the newest learn.MaxLeadTimes.
func (o *Operator) LeadTimes() []float64 {
	out := make([]float64, len(o.leads.Measured))
	for i, d := range o.leads.Measured {
		out[i] = d.Seconds()
	}
	return out
}

// snapshot is obs as the pass decisions take it: each query's window with
// what obs read of it, the workload from now priced with what was learned,
// the plan in force and the pool.
func (o *Operator) snapshot(obs Observation) (*pass.Snapshot, error) {
	queries := slices.Clone(o.queries)
	own := map[string][]learn.Observation{}
	for _, qo := range obs.Queries {
		i := slices.IndexFunc(queries, func(q pass.Query) bool { return q.Name == qo.Name })
		if i < 0 {
			return nil, fmt.Errorf("offlinerun: observed query %s, which is not in the workload", qo.Name)
		}
		q := &queries[i]
		q.Batches, q.Partials, q.Final = slices.Clone(qo.Batches), slices.Clone(qo.Partials), nil
		if qo.Final != nil {
			f := *qo.Final
			q.Final = &f
		}
		q.Arrived, q.ArrivalOf, q.Rate, q.Held = qo.Arrived, qo.ArrivalOf, qo.Rate, qo.Held
		if learned := observations(q); len(learned) > 0 {
			own[q.Name] = learned
		}
	}
	w := planner.WithOrigin(o.pricedWith(own), obs.Now)
	previous := o.previousReady
	if !o.passed {
		// The operator's first pass takes the ready count it sees as the
		// last one seen: nothing was lost before it looked.
		previous = obs.Ready
	}
	return &pass.Snapshot{
		Now: obs.Now, Workload: w, Queries: queries, Plan: o.plan, Inputs: specs,
		Ready: obs.Ready, PreviousReady: previous, Lead: costmodel.Duration(w.Pool.ProvisioningLeadTime),
		Rules: o.rules,
	}, nil
}

// pricedWith is the workload as plans price it with the window's own
// observations (own, by query) and the lead times measured: with what was
// learned, when the operator learns.
func (o *Operator) pricedWith(own map[string][]learn.Observation) planner.Workload {
	if o.learning == nil {
		return o.workload
	}
	if o.priced == nil || !maps.EqualFunc(o.own, own, slices.Equal) {
		w := o.learning.priced(o.workload, own, o.leads)
		o.own, o.priced = own, &w
	}
	return *o.priced
}

// replan makes a new plan at the snapshot's instant, as the operator's
// pass does (pass.Search, replan.Plan), and makes it the plan in force.
func (o *Operator) replan(snap *pass.Snapshot, reason string) (*pass.Plan, error) {
	in := pass.Search(snap)
	doc, assumed, err := replan.Plan(in.Workload, in.Observed, o.rules.Rates, in.Nodes)
	if err != nil {
		return nil, fmt.Errorf("offlinerun: re-planning (%s) at %s: %w", reason, snap.Now.Format(time.RFC3339), err)
	}
	o.plan = &pass.Plan{Doc: doc, Inputs: specs, Reason: reason, Assumed: assumed, Models: pass.ModelsOf(snap.Workload), Arrivals: pass.ArrivalsOf(snap)}
	return o.plan, nil
}

// cancelStuck has the stuck steps' attempts failed at the snapshot's
// instant, as the operator reads them once it has cancelled them.
func cancelStuck(s *pass.Snapshot, stuck []dispatch.StuckStep) {
	for _, st := range stuck {
		i := slices.IndexFunc(s.Queries, func(q pass.Query) bool { return q.Name == st.Query })
		if i < 0 {
			continue
		}
		q := &s.Queries[i]
		var a *dispatch.Attempt
		switch {
		case st.Kind == planner.StepBatch && st.Index < len(q.Batches):
			a = &q.Batches[st.Index].Attempt
		case st.Kind == planner.StepPartial && st.Index < len(q.Partials):
			a = &q.Partials[st.Index]
		case st.Kind == planner.StepFinal:
			a = q.Final
		}
		if a != nil && a.Number == st.Attempt {
			a.State, a.Ended = dispatch.Failed, s.Now
		}
	}
}

// observations are q's finished steps as learning sees them, in the order
// a query's status lists them: its batches, its partial merges and its
// final merge whose latest attempt succeeded, with a start, an end and a
// node, from start to end.
func observations(q *pass.Query) []learn.Observation {
	var out []learn.Observation
	add := func(kind learn.Kind, work float64, a *dispatch.Attempt) {
		if a.State != dispatch.Succeeded || a.Started.IsZero() || a.Ended.IsZero() || a.Nodes < 1 || work < 0 || a.Ended.Before(a.Started) {
			return
		}
		seconds := a.Ended.Sub(a.Started).Seconds()
		if seconds > costmodel.MaxSampleSeconds {
			return
		}
		out = append(out, learn.Observation{Kind: kind, Work: work, Nodes: a.Nodes, Seconds: seconds})
	}
	for i := range q.Batches {
		b := &q.Batches[i]
		add(learn.Batch, float64(b.To-b.From), &b.Attempt)
	}
	for i := range q.Partials {
		add(learn.Merge, float64(q.Partials[i].Inputs), &q.Partials[i])
	}
	if q.Final != nil {
		add(learn.Merge, float64(q.Final.Inputs), q.Final)
	}
	return out
}
