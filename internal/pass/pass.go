// Package pass makes the decisions of one pass over a schedule, for the
// operator's ElasticSchedule reconciler and for the offline run alike, so
// that what the offline studies measure is what the operator does. From what
// a pass observed (a Snapshot) it says whether the plan in force still holds
// and why not (Judge), what a new plan is searched from (Search), and what to
// do under the plan in force (Act): the pool size to ask for, the step to
// launch, and when to look again.
//
// Callers observe, call these, and act: the reconciler reads the cluster
// and writes SparkApplications, the pool and the status; the offline run
// simulates them. The package is pure: no Kubernetes imports, no clock.
package pass

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/dispatch"
	"github.com/laxity-dev/laxity/internal/learn"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/replan"
)

// Re-plan reasons, recorded on the plan and counted in metrics.
const (
	Initial      = "Initial"
	SpecChanged  = "SpecChanged"
	RateExceeded = "RateExceeded"
	RateFellBack = "RateFellBack"
	StepFailed   = "StepFailed"
	// NodesLost: ready nodes fell below what the running or due step needs
	// and what the plan expects ready (dispatch.NodesLost); the new plan
	// starts from the nodes really there.
	NodesLost = "NodesLost"
	// ModelLearned: what was learned from the nodes that arrived (the
	// pool's lead time) differs from what the plan in force assumed by more
	// than learn.DefaultTolerance, or what was learned from the steps that
	// ran (a query's cost model and margin) does, and at the learned prices
	// the work left would make a query late on the nodes the plan asks for.
	ModelLearned = "ModelLearned"
	// RunningSlow: the window's steps ran slower than the plan in force
	// priced them, by less than that tolerance, but enough that at the
	// learned model the work left would make a query late on the most
	// nodes the plan asks for from now on, and not on the largest pool
	// size; the rest is re-planned at once, so that more nodes are asked
	// for a lead time earlier rather than after the deadline is lost.
	RunningSlow = "RunningSlow"
)

// MaterialChange is the move of a query's prices (learn.Change) that
// re-plans whether or not the plan could absorb it. Steps that run as a
// cloud runs them, 15% slower on average give or take 10% (the noise the
// studies in docs/experiments.md draw), move a model fitted to a few of
// them by up to about this much; a larger move says the declared model is
// wrong.
const MaterialChange = 0.25

// MinEvidence is the fewest steps of a query's window that must have run
// before a MaterialChange of its model re-plans on its own: one or two
// draws of a noisy cloud move a model further than that by chance.
const MinEvidence = 3

// ranSteps is how many of the query's steps have succeeded in its window.
func ranSteps(q *dispatch.Query) int {
	n := 0
	for _, b := range q.Batches {
		if b.State == dispatch.Succeeded {
			n++
		}
	}
	for _, p := range q.Partials {
		if p.State == dispatch.Succeeded {
			n++
		}
	}
	if q.Final != nil && q.Final.State == dispatch.Succeeded {
		n++
	}
	return n
}

// Snapshot is what one pass observed of a schedule, each thing once.
type Snapshot struct {
	Now time.Time
	// Workload is the planner's input from Now: the pool, the planning
	// settings and every query that could be converted, its cost model and
	// margin those learned where learning applies.
	Workload planner.Workload
	// Queries are the schedule's live queries; a query missing from
	// Workload has a spec the plan search reports on.
	Queries []Query
	// Plan is the plan in force, nil before the first; Inputs identifies
	// the specs a plan must have been made from to still hold.
	Plan   *Plan
	Inputs string
	// Ready is the ready pool nodes now, PreviousReady what the last pass
	// saw; Lead is the provisioning lead time dispatch expects.
	Ready, PreviousReady int
	Lead                 time.Duration
	Rules                Rules
}

// Query is one live query as a pass sees it.
type Query struct {
	Name string
	// WindowStart is the window's start, which its declared rates are
	// offsets from, and WindowEnd its end; Deadline its deadline; Closed
	// when no more tuples arrive (the window's end plus the allowed
	// lateness).
	WindowStart, WindowEnd, Closed, Deadline time.Time
	// Batches, Partials and Final are its launched steps, the latest
	// attempt of each.
	Batches  []dispatch.Batch
	Partials []dispatch.Attempt
	Final    *dispatch.Attempt
	// Arrived is the tuples arrived by now. ArrivalOf, for a source that
	// can tell, is when the n-th tuple arrives; nil for a polled source.
	Arrived   int64
	ArrivalOf func(tuples int64) (time.Time, bool)
	// Held says the query starts nothing in this pass (its input could not
	// be read, or its executors fit no node).
	Held bool
	// Rate is the arrival rate measured over the rate window, 0 when none
	// was measured.
	Rate float64
}

// Finished says whether the query's final merge has succeeded.
func (q *Query) Finished() bool { return q.Final != nil && q.Final.State == dispatch.Succeeded }

// Plan is the plan in force and what it was made from.
type Plan struct {
	Doc planner.Document
	// Inputs identifies the specs it was made from; Reason why it was made.
	Inputs, Reason string
	// Assumed are the rates the plan assumed, by query (replan.Plan).
	Assumed map[string]float64
	// Models are what it priced its steps with; nil for a plan recorded
	// before they were. Arrivals are the tuples the queries had when it was
	// made; nil for a plan recorded before they were.
	Models   *Models
	Arrivals *Arrivals
}

// Arrivals are the tuples each query had when a plan was made, and when.
// A rate measured since then spans more than the rate window once the plan
// has been in force longer, and tells a smaller lasting change from
// chance: a stream 36% faster than a plan supports can hide in the noise
// of one minute's count, not in that of ten.
type Arrivals struct {
	Made    time.Time        `json:"made"`
	Arrived map[string]int64 `json:"arrived"`
}

// ArrivalsOf is what the snapshot's queries have arrived by now, to record
// with a plan made now.
func ArrivalsOf(s *Snapshot) *Arrivals {
	a := &Arrivals{Made: s.Now, Arrived: make(map[string]int64, len(s.Queries))}
	for i := range s.Queries {
		a.Arrived[s.Queries[i].Name] = s.Queries[i].Arrived
	}
	return a
}

// Models are what a plan priced its steps with: by query, the cost model
// and margin (declared or learned), and the pool's lead time.
type Models struct {
	LeadTimeSeconds float64          `json:"leadTimeSeconds"`
	Queries         map[string]Model `json:"queries"`
}

// Model is one query's cost model and its own margin.
type Model struct {
	Cost   costmodel.Model `json:"cost"`
	Margin float64         `json:"margin,omitempty"`
}

// ModelsOf records what the workload prices its steps with.
func ModelsOf(w planner.Workload) *Models {
	m := &Models{LeadTimeSeconds: w.Pool.ProvisioningLeadTime, Queries: make(map[string]Model, len(w.Queries))}
	for _, q := range w.Queries {
		m.Queries[q.Name] = Model{Cost: q.Cost, Margin: q.Margin}
	}
	return m
}

// Rules are the operator's settings the decisions follow.
type Rules struct {
	// Dispatch are dispatch's settings; its Policy is the spec's, which
	// the plan in force's own order replaces (Settings).
	Dispatch dispatch.Settings
	Stuck    dispatch.StuckRule
	// Rates is how measured rates are judged; RateWindow what they are
	// measured over.
	Rates      replan.Rates
	RateWindow time.Duration
	// Poll is how often a source that cannot tell when its tuples arrive is
	// looked at.
	Poll time.Duration
}

// Settings are dispatch's settings under the plan in force: its order is
// the plan's when the plan has one (only the other order met every
// deadline), else the spec's; its lanes are the plan's.
func (s *Snapshot) Settings() dispatch.Settings {
	out := s.Rules.Dispatch
	if s.Plan != nil && s.Plan.Doc.Chosen.Policy != "" {
		out.Policy = s.Plan.Doc.Chosen.Policy
	}
	if s.Plan != nil {
		out.LaneNodes = s.Plan.Doc.LaneNodes()
	}
	return out
}

// planned is the query named name in the planner's form, false when its
// spec could not be converted.
func (s *Snapshot) planned(name string) (planner.Query, bool) {
	for _, pq := range s.Workload.Queries {
		if pq.Name == name {
			return pq, true
		}
	}
	return planner.Query{}, false
}

// allFinished says whether every query's final merge has succeeded.
func (s *Snapshot) allFinished() bool {
	for i := range s.Queries {
		if !s.Queries[i].Finished() {
			return false
		}
	}
	return true
}

// NotPlannable is the error of a query the plan in force must be judged or
// run with that has no planner form: its spec could not be converted, which
// the caller knows why.
type NotPlannable struct{ Query string }

func (e *NotPlannable) Error() string {
	return fmt.Sprintf("query %s: its spec cannot be planned", e.Query)
}

// RunTime is the run-time view of every query the plan in force covers:
// its plan, its arrivals and its launched steps, priced with the plan's
// margins (planner.Query.Planned), so that dispatch judges slack as the
// plan did. A query the plan does not cover yet is left out (it is
// re-planned first).
func RunTime(s *Snapshot) ([]dispatch.Query, error) {
	if s.Plan == nil {
		return nil, nil
	}
	doc := &s.Plan.Doc
	out := make([]dispatch.Query, 0, len(s.Queries))
	for i := range s.Queries {
		q := &s.Queries[i]
		pq, ok := s.planned(q.Name)
		if !ok {
			return nil, &NotPlannable{Query: q.Name}
		}
		var plan *planner.QueryPlan
		for j := range doc.Queries {
			if doc.Queries[j].Name == q.Name {
				plan = &doc.Queries[j]
			}
		}
		if plan == nil {
			continue
		}
		dq := dispatch.Query{
			Name: q.Name, Deadline: q.Deadline, Closed: q.Closed,
			Cost:       pq.Planned(s.Workload.Planning),
			TailMargin: plan.TailMargin,
			BatchSize:  plan.BatchSize, BatchEnds: doc.BatchEnds(q.Name), ExpectedTotal: doc.PlannedTotal(q.Name),
			Arrived: q.Arrived, ArrivalOf: q.ArrivalOf, Held: q.Held,
			Batches: slices.Clone(q.Batches), Partials: slices.Clone(q.Partials),
			Shared: sharedBatches(doc, q.Name), Lane: doc.LaneOf(q.Name), Planned: plannedSteps(doc, q.Name),
		}
		if q.Final != nil {
			f := *q.Final
			dq.Final = &f
		}
		if pq.PartialEvery > 0 {
			dq.PartialEvery = max(int(math.Ceil(pq.PartialEvery*float64(plan.Batches)-1e-9)), 1)
		}
		out = append(out, dq)
	}
	return out, nil
}

// plannedSteps are the steps of doc that run query, in start order, as
// dispatch weighs them for a plan of lanes.
func plannedSteps(doc *planner.Document, query string) []dispatch.Planned {
	var out []dispatch.Planned
	for _, st := range doc.Steps {
		if st.Query == query || slices.Contains(st.Members, query) {
			out = append(out, dispatch.Planned{Kind: st.Kind, Index: st.Index, Start: doc.Origin.Add(costmodel.Duration(st.Start)), Nodes: st.Nodes})
		}
	}
	return out
}

// Verdict is whether the plan in force holds (Reason "") and, when it does
// not, why.
type Verdict struct {
	Reason string
	// Learned says what was learned, for ModelLearned and RunningSlow.
	Learned *LearnedChange
	// Exhausted names the queries whose step used up its attempts, for
	// StepFailed.
	Exhausted []string
	// Lost says how the ready nodes fell, for NodesLost.
	Lost *Lost
}

// LearnedChange is what moved the plan's prices: the pool's lead time
// (Query ""), or a query's steps by Change (a fraction; see learn.Change).
// For RunningSlow, Unsafe are the queries the work left would make late at
// that slowdown even on Nodes nodes.
type LearnedChange struct {
	Query string
	// PlannedLead and Lead are the lead times the plan assumed and
	// measured, in seconds, for a change of the lead time.
	PlannedLead, Lead float64
	Change            float64
	Unsafe            []string
	Nodes             int
}

// Lost is a fall of the ready nodes below what the run needs.
type Lost struct {
	From, To, Need, Expected int
}

// Judge says whether the plan in force still holds: there is one, it was
// made from the same specs, the measured rates are within what it
// supports, what was learned since does not move its prices materially nor
// make a query late, no step has used up its attempts since it was made,
// and the ready nodes did not fall below what the work in progress needs.
// The reasons are judged in that order. A plan whose queries have all
// finished holds: a plan of finished queries would plan work that is done,
// for deadlines that may have passed.
func Judge(s *Snapshot) (Verdict, error) {
	if s.Plan != nil && s.allFinished() {
		return Verdict{}, nil
	}
	if reason := specsOrRates(s); reason != "" {
		return Verdict{Reason: reason}, nil
	}
	dqs, err := RunTime(s)
	if err != nil {
		return Verdict{}, err
	}
	if v := learned(s, dqs); v.Reason != "" {
		return v, nil
	}
	doc := &s.Plan.Doc
	if exhausted := dispatch.Exhausted(s.Now, s.Settings(), dqs); len(exhausted) > 0 && s.Plan.Reason != StepFailed {
		return Verdict{Reason: StepFailed, Exhausted: exhausted}, nil
	}
	need := max(dispatch.Busy(dqs), dispatch.BehindSchedule(doc, dqs, s.Rules.Dispatch.MaxAttempts, s.Now))
	expected := dispatch.ExpectedReady(doc.Origin, doc.Requests, s.Lead, s.Now)
	if dispatch.NodesLost(s.PreviousReady, s.Ready, need, expected) {
		return Verdict{Reason: NodesLost, Lost: &Lost{From: s.PreviousReady, To: s.Ready, Need: need, Expected: expected}}, nil
	}
	return Verdict{}, nil
}

// specsOrRates says why the plan in force no longer holds by its inputs
// and the measured rates, or "".
func specsOrRates(s *Snapshot) string {
	switch {
	case s.Plan == nil:
		return Initial
	case s.Plan.Inputs != s.Inputs:
		return SpecChanged
	}
	for i := range s.Queries {
		q := &s.Queries[i]
		pq, ok := s.planned(q.Name)
		if !ok || q.Finished() {
			continue
		}
		for _, m := range s.measured(q, pq) {
			switch replan.Compare(m.Observed, m.declared, s.Plan.Assumed[q.Name], s.Plan.Doc.MaxSupportedRateFactor, s.Rules.Rates) {
			case replan.Exceeds:
				return RateExceeded
			case replan.FellBack:
				return RateFellBack
			}
		}
	}
	return ""
}

// measurement is a measured rate and the declared rate over the same span.
type measurement struct {
	replan.Observed
	declared float64
}

// measured is what is measured of q's rate: over the rate window (when
// measured), and, once the plan in force has been in force longer than
// that within the window, since it was made, a longer count whose noise
// is smaller.
func (s *Snapshot) measured(q *Query, pq planner.Query) []measurement {
	var out []measurement
	if q.Rate > 0 {
		out = append(out, measurement{s.observedRate(pq, q.Rate), replan.RateAt(pq.Rates, s.Now.Sub(q.WindowStart).Seconds())})
	}
	a := s.Plan.Arrivals
	if a == nil || s.Rules.RateWindow <= 0 || !s.Now.Before(q.WindowEnd) {
		return out
	}
	since := a.Made
	base, known := a.Arrived[q.Name]
	if !since.After(q.WindowStart) {
		// Made before the window opened: nothing had arrived.
		since, base, known = q.WindowStart, 0, true
	}
	span := s.Now.Sub(since)
	if !known || span <= s.Rules.RateWindow {
		return out
	}
	from, to := since.Sub(q.WindowStart).Seconds(), s.Now.Sub(q.WindowStart).Seconds()
	o := replan.Observed{Measured: float64(q.Arrived-base) / span.Seconds(), Resolution: replan.Resolution(pq.Granularity, span.Seconds())}
	return append(out, measurement{o, replan.TuplesBetween(pq.Rates, from, to) / span.Seconds()})
}

// observedRate is a measured rate and what the measurement can tell apart.
func (s *Snapshot) observedRate(pq planner.Query, rate float64) replan.Observed {
	return replan.Observed{Measured: rate, Resolution: replan.Resolution(pq.Granularity, s.Rules.RateWindow.Seconds())}
}

// learned says whether what was learned calls for a new plan: the pool's
// lead time moved by more than the tolerance (ModelLearned), or, at the
// learned prices, the work left makes a query late that the plan's own
// prices did not — after a move of a query's prices by more than the
// tolerance (ModelLearned), or by less when more nodes can still save it
// (RunningSlow). dqs are the queries' run-time view, priced with what was
// learned.
func learned(s *Snapshot, dqs []dispatch.Query) Verdict {
	models := s.Plan.Models
	if models == nil {
		return Verdict{}
	}
	if planned, now := models.LeadTimeSeconds, s.Workload.Pool.ProvisioningLeadTime; planned > 0 && math.Abs(now-planned) > planned*learn.DefaultTolerance {
		return Verdict{Reason: ModelLearned, Learned: &LearnedChange{PlannedLead: planned, Lead: now}}
	}
	sizes := s.Workload.Pool.Sizes
	if len(sizes) == 0 {
		return Verdict{}
	}
	nodes, largest := mostNodes(&s.Plan.Doc, sizes, s.Now), sizes[len(sizes)-1]
	plans := make(map[string]*planner.QueryPlan, len(s.Plan.Doc.Queries))
	for i := range s.Plan.Doc.Queries {
		plans[s.Plan.Doc.Queries[i].Name] = &s.Plan.Doc.Queries[i]
	}
	finished := map[string]bool{}
	for i := range s.Queries {
		finished[s.Queries[i].Name] = s.Queries[i].Finished()
	}
	// The steps as the plan in force priced them, and the query whose
	// prices moved most since.
	asPlanned := make([]dispatch.Query, 0, len(dqs))
	moved, change, wrong, wrongBy := "", 0.0, "", 0.0
	for _, dq := range dqs {
		pq, known := s.planned(dq.Name)
		was, planned := models.Queries[dq.Name]
		if known && planned && !finished[dq.Name] {
			points := PricePoints(plans[dq.Name], sizes)
			if c := learn.Change(learn.Learned{Model: was.Cost, Margin: was.Margin}, learn.Learned{Model: pq.Cost, Margin: pq.Margin}, points); c > change {
				moved, change = dq.Name, c
			}
			// The models alone, without the margins sized from a few
			// steps' spread, which move with every draw.
			if m := learn.Change(learn.Learned{Model: was.Cost}, learn.Learned{Model: pq.Cost}, points); m > wrongBy && ranSteps(&dq) >= MinEvidence {
				wrong, wrongBy = dq.Name, m
			}
			dq.Cost = planner.Query{Cost: was.Cost, Margin: was.Margin}.Planned(s.Workload.Planning)
		}
		asPlanned = append(asPlanned, dq)
	}
	// A model that moved beyond MaterialChange once the query's own steps
	// have said so MinEvidence times is no noise: the declared model was
	// wrong, and the plan is re-made with what was learned (its margin
	// too) while there is time to ask for nodes, before lateness shows.
	if wrongBy > MaterialChange {
		return Verdict{Reason: ModelLearned, Learned: &LearnedChange{Query: wrong, Change: wrongBy, Nodes: nodes}}
	}
	// Otherwise the plan absorbs what was learned while, at the learned
	// prices, the work left still meets every deadline it met at its own
	// on the nodes it asks for: noise in the steps' durations moves a
	// fitted model by more than the tolerance often, and re-planning for
	// each move would move the pool for nothing.
	late := lateBy(s.Now, dqs, asPlanned, nodes)
	if len(late) == 0 {
		return Verdict{}
	}
	if change > learn.DefaultTolerance {
		return Verdict{Reason: ModelLearned, Learned: &LearnedChange{Query: moved, Change: change, Unsafe: late, Nodes: nodes}}
	}
	// A smaller move re-plans only for a query more nodes can still save:
	// one late even on the largest size would only have the rest of the
	// window reshuffled around it, for no deadline more.
	lost := lateBy(s.Now, dqs, asPlanned, largest)
	if savable := slices.DeleteFunc(late, func(q string) bool { return slices.Contains(lost, q) }); len(savable) > 0 {
		return Verdict{Reason: RunningSlow, Learned: &LearnedChange{Query: moved, Change: change, Unsafe: savable, Nodes: nodes}}
	}
	return Verdict{}
}

// lateBy is the queries the work left makes late on nodes nodes at the
// learned prices (learned) but not at the plan's (planned).
func lateBy(now time.Time, learned, planned []dispatch.Query, nodes int) []string {
	before := dispatch.LateAt(now, planned, nodes)
	return slices.DeleteFunc(dispatch.LateAt(now, learned, nodes), func(q string) bool { return slices.Contains(before, q) })
}

// mostNodes is the largest pool size the plan asks for from now on, and
// never less than the smallest size: the pool the work left runs on at
// best without a new plan. Judging a slowdown on it, rather than on the
// largest size, re-plans while more nodes can still be asked for in time.
func mostNodes(doc *planner.Document, sizes []int, now time.Time) int {
	level := dispatch.RequestAt(doc.Origin, doc.Requests, now)
	offset := now.Sub(doc.Origin).Seconds()
	for _, r := range doc.Requests {
		if r.At >= offset {
			level = max(level, r.Nodes)
		}
	}
	best := sizes[0]
	for _, size := range sizes {
		if size <= level {
			best = size
		}
	}
	return best
}

// PricePoints are the steps a change of a query's cost model is measured
// on: a batch of the planned size and a final merge of the planned batches,
// on every pool size; none when the plan does not cover the query.
func PricePoints(plan *planner.QueryPlan, sizes []int) []learn.Observation {
	if plan == nil {
		return nil
	}
	out := make([]learn.Observation, 0, 2*len(sizes))
	for _, n := range sizes {
		out = append(out,
			learn.Observation{Kind: learn.Batch, Work: float64(plan.BatchSize), Nodes: n},
			learn.Observation{Kind: learn.Merge, Work: float64(max(plan.Batches, 1)), Nodes: n})
	}
	return out
}

// SearchInput is what a plan search made at a pass starts from
// (replan.Plan): the workload of the unfinished queries, what was observed
// of each, and the pool as it is now with the launched steps that hold it
// and when each is expected to end (Nodes.Held).
type SearchInput struct {
	Workload planner.Workload
	Observed map[string]replan.Observed
	Nodes    planner.PoolNow
}

// Search is what a plan search made now starts from: the observed progress
// of every query whose window has opened, with the measured rates; the
// queries not finished (planning a finished one again would re-run its last
// batch and merge for a deadline that may have passed); and the pool as it
// is, the ready nodes and those the plan in force asked for and expects,
// so that the plan is executable as made.
func Search(s *Snapshot) SearchInput {
	observed := make(map[string]replan.Observed, len(s.Queries))
	holding := make([]dispatch.Query, 0, len(s.Queries))
	finished := map[string]bool{}
	for i := range s.Queries {
		q := &s.Queries[i]
		pq, _ := s.planned(q.Name)
		o := s.observedRate(pq, q.Rate)
		if s.Plan != nil {
			// The faster of the measurements: the window's follows a
			// rise sooner, the one since the plan tells a lasting one
			// more surely.
			for _, m := range s.measured(q, pq) {
				if m.Measured > o.Measured {
					o = m.Observed
				}
			}
		}
		o.Arrived, o.Done = q.Arrived, progressOf(q)
		observed[q.Name] = o
		dq := dispatch.Query{Name: q.Name, Cost: pq.Planned(s.Workload.Planning), Batches: q.Batches, Partials: q.Partials, Final: q.Final}
		holding = append(holding, dq)
		finished[q.Name] = q.Finished()
	}
	w := s.Workload
	w.Queries = slices.DeleteFunc(slices.Clone(w.Queries), func(pq planner.Query) bool { return finished[pq.Name] })
	nodes := s.nodesNow()
	nodes.Held = dispatch.Held(holding, s.Now)
	return SearchInput{Workload: w, Observed: observed, Nodes: nodes}
}

// nodesNow is the pool as it is now, for a plan made now: the ready nodes,
// and those the plan in force has asked for and expects.
func (s *Snapshot) nodesNow() planner.PoolNow {
	requested, by := s.Ready, 0.0
	if s.Plan != nil {
		coming, comingBy := dispatch.Coming(s.Plan.Doc.Origin, s.Plan.Doc.Requests, s.Plan.Doc.Nodes, s.Lead, s.Now)
		requested, by = max(coming, requested), comingBy.Sub(s.Now).Seconds()
	}
	return replan.NodesNow(s.Workload, s.Ready, requested, by)
}

// progressOf is how far the query's launched steps have got.
func progressOf(q *Query) replan.Progress {
	p := replan.Progress{Batches: len(q.Batches), Partials: len(q.Partials)}
	if n := len(q.Batches); n > 0 {
		p.Tuples, p.LastFrom = q.Batches[n-1].To, q.Batches[n-1].From
	}
	return p
}

// Stuck is the launched steps that have held the pool past their bound
// (Rules.Stuck), to be cancelled and retried like any failure, on the
// queries' run-time view dqs (RunTime).
func Stuck(s *Snapshot, dqs []dispatch.Query) []dispatch.StuckStep {
	return dispatch.Stuck(s.Now, s.Rules.Stuck, dqs)
}

// Actions are what to do under the plan in force.
type Actions struct {
	// Request is the pool size to ask for: the plan's executable timeline,
	// and never less than the work running late needs; Busy of them are
	// held by launched steps.
	Request, Busy int
	// Pool is the pool as dispatch saw it.
	Pool dispatch.Pool
	// Decision is the step to launch, if any, and when to decide again.
	Decision dispatch.Decision
	// Next is when to look again at the latest: the decision's recheck, a
	// step passing its stuck bound, the plan's next change of the pool size
	// or its next step's start (which can raise the pool when the work
	// lags), or a poll while a source that cannot tell its arrivals may
	// bring tuples.
	Next time.Time
}

// Act decides under the plan in force, on the queries' run-time view dqs
// (RunTime, after any stuck step was cancelled).
func Act(s *Snapshot, dqs []dispatch.Query) Actions {
	doc := &s.Plan.Doc
	a := Actions{Busy: dispatch.Busy(dqs), Pool: dispatch.Pool{Ready: s.Ready}}
	a.Pool.Coming, a.Pool.ComingBy = dispatch.Coming(doc.Origin, doc.Requests, doc.Nodes, s.Lead, s.Now)
	a.Pool.ExpectedBy = func(t time.Time) int { return dispatch.ExpectedReady(doc.Origin, doc.Requests, s.Lead, t) }
	a.Decision = dispatch.Decide(s.Now, s.Settings(), dqs, a.Pool)
	// Never fewer than the steps running and the one launched now hold:
	// steps side by side that run late hold more than the plan's timeline
	// has left for them.
	held := a.Busy
	if l := a.Decision.Launch; l != nil {
		l.Members = dispatch.SharedMembers(s.Now, s.Settings(), dqs, *l)
		held += l.Nodes
	}
	a.Request = max(dispatch.RequestAt(doc.Origin, doc.Requests, s.Now), dispatch.BehindSchedule(doc, dqs, s.Rules.Dispatch.MaxAttempts, s.Now), held)
	next := dispatch.Earliest(a.Decision.Recheck, dispatch.StuckRecheck(s.Now, s.Rules.Stuck, dqs))
	if t := dispatch.NextRequestChange(doc.Origin, doc.Requests, s.Now); !t.IsZero() {
		// NextRequestChange rounds down; the change is seen from the next
		// nanosecond on.
		next = dispatch.Earliest(next, t.Add(time.Nanosecond))
	}
	for _, st := range doc.Steps {
		if t := at(doc.Origin, st.Start); t.After(s.Now) {
			next = dispatch.Earliest(next, t)
			break
		}
	}
	if s.Rules.Poll > 0 && polled(s) {
		next = dispatch.Earliest(next, s.Now.Add(s.Rules.Poll))
	}
	a.Next = next
	return a
}

// sharedBatches are the plan's shared batches of query by batch index,
// with the queries each serves; nil when none.
func sharedBatches(doc *planner.Document, query string) map[int][]string {
	var out map[int][]string
	for _, st := range doc.Steps {
		if st.Kind != planner.StepBatch || st.Index < 0 || !slices.Contains(st.Members, query) {
			continue
		}
		if out == nil {
			out = map[int][]string{}
		}
		out[st.Index] = st.Members
	}
	return out
}

// polled reports whether a query whose source cannot tell its arrivals may
// still bring tuples.
func polled(s *Snapshot) bool {
	for i := range s.Queries {
		if q := &s.Queries[i]; q.ArrivalOf == nil && s.Now.Before(q.Closed) {
			return true
		}
	}
	return false
}

// at is the instant seconds after origin, rounded up to the nanosecond, so
// that an event at its time is seen as having happened.
func at(origin time.Time, seconds float64) time.Time {
	return origin.Add(time.Duration(math.Ceil(seconds * float64(time.Second))))
}
