// Package offlinerun carries a plan out the way laxity's operator does, on a
// simulated cluster whose nodes are slower than the cost model by a seeded
// random amount: the same internal/dispatch decisions (least slack first,
// merges first, waiting for nodes on their way when that pays), the pool
// asked for the plan's executable timeline and never less than lagging work
// needs (dispatch.BehindSchedule), nodes that arrive a provisioning lead
// time after they are asked for. Every batch and merge takes its modelled
// duration times 1 + s, with s drawn from a normal distribution per step —
// BCframework's per-period slowdown of cloud nodes (mean 15%, standard deviation
// 10%). It reports which queries missed their deadline and what the pool
// cost. Like the operator, it does not re-plan for slow steps: re-plans
// follow arrival rates, specs and failures.
//
// Streams may also arrive at rates other than the declared ones the plan
// was made from (Options.Actual), as in the variable-rate runs of docs/experiments.md. Such a stream is
// read, like the operator reads a real source, by polling: it cannot
// forecast when a batch fills up. With Options.Replan the run measures each
// stream's rate over the rate window and re-plans with internal/replan, the
// operator's own re-planning, when it exceeds what the plan supports.
//
// The cluster may also differ from what the plan was made from: its steps
// may follow other cost models than the plan's (Options.TrueCost) and its
// nodes may take longer to arrive than the plan's lead time
// (Options.TrueLead), as when the plan is made from what laxity has
// learned (RunRecurring). With Options.Window the run keeps the operator's
// in-window deadline rule: when the steps run so far are slower than the
// models in force and the work left at that slowdown would make a query
// late (dispatch.UnsafeAt), it re-plans at once with the slowdown applied.
//
// It reads no clock: a run is determined by its plan, workload and seed.
package offlinerun

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/dispatch"
	"github.com/laxity-dev/laxity/internal/learn"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/replan"
	"github.com/laxity-dev/laxity/internal/source"
)

// Noise is the slowdown of each step: a fraction drawn from a normal
// distribution, so that a step takes modelled × (1 + slowdown).
type Noise struct {
	Mean, StdDev float64
}

// BCFramework is the measured slowdown of cloud nodes.
var BCFramework = Noise{Mean: 0.15, StdDev: 0.10}

// Options say how a run departs from the plan.
type Options struct {
	Noise Noise
	Seed  uint64
	// Actual holds, by query, the rates its tuples really arrive at when
	// they differ from the declared ones (offsets from the window start).
	Actual map[string][]planner.RateSegment
	// Poll is how often a stream of Actual is looked at; 15 s, the
	// operator's default, when zero.
	Poll time.Duration
	// Replan, when set, re-plans as the operator does when a measured rate
	// exceeds what the plan in force supports.
	Replan *Replanning
	// TrueCost holds, by query, the cost model the cluster really follows
	// (before Noise) when it is not the workload's; TrueLead is how long a
	// requested node really takes to arrive, the workload's lead time when
	// zero. The plan and dispatch's estimates keep the workload's.
	TrueCost map[string]costmodel.Model
	TrueLead time.Duration
	// Window, when set, keeps the in-window deadline rule.
	Window *WindowControl
	// AskAhead models how the operator gets a window's first nodes: it
	// plans a window before it starts, and asks for the plan's initial
	// nodes the plan's lead time before its first step needs them; they
	// arrive the true lead time after that request (TrueLead), late when
	// that is longer, and their lead times are measured. Otherwise the
	// initial nodes are ready at the origin and not measured. Either way
	// the pool is billed from the origin, as the plan prices it.
	AskAhead bool
}

// WindowControl is the operator's in-window deadline rule.
type WindowControl struct {
	// MinSteps is the fewest finished steps of the window the slowdown is
	// judged from: one step's noise is no trend.
	MinSteps int
}

// Replanning is the operator's rate-driven re-planning.
type Replanning struct {
	Rates replan.Rates
	// Window is the trailing span a rate is measured over (rateWindow).
	Window time.Duration
}

// defaultPoll is the operator's poll interval (laxity manager --poll).
const defaultPoll = 15 * time.Second

// Result is one run.
type Result struct {
	// Missed names the queries whose final merge ended after their
	// deadline, or did not end.
	Missed []string
	// Cost bills the pool as it was asked for; MaxNodes is its largest
	// size.
	Cost     float64
	MaxNodes int
	// Steps is every step as it ran, times in seconds from the origin of
	// the plan the run began with, as are the times below.
	Steps []planner.Step
	// Requested is the pool size asked for over time.
	Requested []planner.NodeLevel
	// Replans are the instants the run re-planned at.
	Replans []float64
	// Plans are the plans made, the first one included.
	Plans []*planner.Document
	// Leads are the provisioning lead times of the nodes that arrived
	// during the run (request to ready, seconds), in arrival order; the
	// first plan's initial nodes are among them only with
	// Options.AskAhead.
	Leads []float64
}

// maxAttempts is the operator's default; no step fails here, so it only
// matters to dispatch's bookkeeping.
const maxAttempts = 3

// fastest bounds a step's slowdown from below: a draw far in the normal's
// left tail must not make a step take no time.
const fastest = 0.1

// Run carries doc out for the workload w as o says. w's cost models are the
// true ones, its rates the declared ones; its runtime margin, if any, is the
// one the plan was made with, which dispatch's estimates include too.
func Run(w planner.Workload, doc *planner.Document, o Options) (Result, error) {
	s, err := newSim(w, doc, o)
	if err != nil {
		return Result{}, err
	}
	return s.run()
}

type running struct {
	query int
	kind  planner.StepKind
	index int
	end   time.Time
	step  planner.Step
}

// node is a node asked for: when, and when it is ready.
type node struct{ requested, ready time.Time }

type sim struct {
	w planner.Workload
	o Options
	// doc is the plan in force; origin is the first plan's, which every
	// time in the result is measured from.
	doc    *planner.Document
	origin time.Time
	// lead is how long nodes really take to come; plannedLead what the
	// plan and dispatch expect.
	lead, plannedLead time.Duration
	// truth is, by query, the model the cluster's steps follow.
	truth    []costmodel.Model
	rng      *rand.Rand
	settings dispatch.Settings
	queries  []dispatch.Query
	sources  []*source.Synthetic
	// assumed are the rates the plan in force assumed (replan.Plan).
	assumed map[string]float64
	// nodes are the nodes asked for, oldest first.
	nodes   []node
	running *running
	result  Result
}

// at is the instant seconds after origin, rounded up to the nanosecond, so
// that dispatch, comparing offsets in seconds, sees an event at its time as
// having happened.
func at(origin time.Time, seconds float64) time.Time {
	return origin.Add(time.Duration(math.Ceil(seconds * float64(time.Second))))
}

func newSim(w planner.Workload, doc *planner.Document, o Options) (*sim, error) {
	if doc == nil || len(doc.Requests) == 0 {
		return nil, errors.New("offlinerun: the plan has no node timeline")
	}
	if o.Poll <= 0 {
		o.Poll = defaultPoll
	}
	if o.Replan != nil && o.Replan.Window <= 0 {
		return nil, errors.New("offlinerun: re-planning needs a positive rate window")
	}
	planned := time.Duration(w.Pool.ProvisioningLeadTime * float64(time.Second))
	lead := planned
	if o.TrueLead > 0 {
		lead = o.TrueLead
	}
	s := &sim{
		w: w, o: o, doc: doc, origin: doc.Origin, lead: lead, plannedLead: planned,
		rng:      rand.New(rand.NewPCG(o.Seed, 0x1a57)),
		settings: dispatch.Settings{Sizes: w.Pool.Sizes, Policy: w.Planning.Policy, MaxAttempts: maxAttempts, Backoff: 30 * time.Second},
	}
	for name := range o.Actual {
		if !slices.ContainsFunc(w.Queries, func(q planner.Query) bool { return q.Name == name }) {
			return nil, fmt.Errorf("offlinerun: actual rates for %s, which is not in the workload", name)
		}
	}
	for name := range o.TrueCost {
		if !slices.ContainsFunc(w.Queries, func(q planner.Query) bool { return q.Name == name }) {
			return nil, fmt.Errorf("offlinerun: a true cost model for %s, which is not in the workload", name)
		}
	}
	for _, q := range w.Queries {
		truth, ok := o.TrueCost[q.Name]
		if !ok {
			truth = q.Cost
		}
		s.truth = append(s.truth, truth)
		rates := q.Rates
		if actual, ok := o.Actual[q.Name]; ok {
			rates = actual
		}
		var segments []source.Segment
		for _, r := range rates {
			segments = append(segments, source.Segment{After: time.Duration(r.Offset * float64(time.Second)), PerSecond: r.TuplesPerSecond})
		}
		src, err := source.NewSynthetic(at(s.origin, q.WindowStart), at(s.origin, q.WindowEnd), q.Granularity, segments)
		if err != nil {
			return nil, fmt.Errorf("offlinerun: query %s: %w", q.Name, err)
		}
		// Decisions use the model with the plan's margin, as the operator
		// does; the simulated cluster runs the true one, slowed down.
		dq := dispatch.Query{
			Name: q.Name, Deadline: at(s.origin, q.Deadline), Closed: at(s.origin, q.WindowEnd+q.AllowedLateness),
			Cost: q.Planned(w.Planning),
		}
		if _, polled := o.Actual[q.Name]; !polled {
			dq.ArrivalOf = src.ArrivalOf
		}
		s.queries = append(s.queries, dq)
		s.sources = append(s.sources, src)
	}
	if err := s.follow(doc, nil); err != nil {
		return nil, err
	}
	// The plan takes its first pool as ready by its first step: the
	// operator asks for it a planned lead time ahead.
	first := s.initialRequest()
	for range s.doc.Requests[0].Nodes {
		s.nodes = append(s.nodes, node{requested: first, ready: first.Add(s.lead)})
	}
	if !o.AskAhead {
		for i := range s.nodes {
			s.nodes[i] = node{requested: s.origin, ready: s.origin}
		}
	}
	return s, nil
}

// initialRequest is when the operator asked for the first plan's initial
// nodes: the plan's lead time before its first step (AskAhead).
func (s *sim) initialRequest() time.Time {
	if len(s.doc.Steps) == 0 {
		return s.origin.Add(-s.plannedLead)
	}
	first := s.doc.Steps[0].Start
	for _, st := range s.doc.Steps {
		first = min(first, st.Start)
	}
	return at(s.origin, first).Add(-s.plannedLead)
}

// follow makes doc the plan in force, as the operator's dispatch view of
// a new plan does: the batch size, the window's total and the partial
// merges' spacing come from it.
func (s *sim) follow(doc *planner.Document, assumed map[string]float64) error {
	for i, q := range s.w.Queries {
		var planned *planner.QueryPlan
		for j := range doc.Queries {
			if doc.Queries[j].Name == q.Name {
				planned = &doc.Queries[j]
			}
		}
		if planned == nil {
			return fmt.Errorf("offlinerun: query %s is not in the plan", q.Name)
		}
		dq := &s.queries[i]
		dq.BatchSize, dq.ExpectedTotal = planned.BatchSize, doc.PlannedTotal(q.Name)
		dq.BatchEnds = doc.BatchEnds(q.Name)
		if q.PartialEvery > 0 {
			dq.PartialEvery = max(int(math.Ceil(q.PartialEvery*float64(planned.Batches)-1e-9)), 1)
		}
	}
	s.doc, s.assumed = doc, assumed
	s.result.Plans = append(s.result.Plans, doc)
	return nil
}

// horizon is when a run that has not finished is given up: well after the
// last deadline and the plan's last request.
func (s *sim) horizon() time.Time {
	last := at(s.doc.Origin, s.doc.Requests[len(s.doc.Requests)-1].At).Sub(s.origin).Seconds()
	for _, q := range s.w.Queries {
		last = max(last, q.Deadline)
	}
	return at(s.origin, 2*last+3600)
}

func (s *sim) run() (Result, error) {
	now := s.origin
	for steps := 0; ; steps++ {
		if steps > 1_000_000 {
			return Result{}, errors.New("offlinerun: the run does not progress")
		}
		finished := s.finishStep(now)
		for i := range s.queries {
			n, err := s.sources[i].Arrived(context.Background(), now)
			if err != nil {
				return Result{}, err
			}
			s.queries[i].Arrived = n
		}
		if err := s.replanIfStale(now); err != nil {
			return Result{}, err
		}
		if finished {
			if err := s.controlDeadlines(now); err != nil {
				return Result{}, err
			}
		}
		s.resize(now)
		decision := dispatch.Decision{}
		if s.running == nil {
			decision = dispatch.Decide(now, s.settings, s.queries, s.pool(now))
			if decision.Launch != nil {
				s.launch(now, *decision.Launch)
			}
		}
		if s.done(now) || now.After(s.horizon()) {
			break
		}
		now = s.next(now, decision)
	}
	s.close(now)
	return s.result, nil
}

func (s *sim) pool(now time.Time) dispatch.Pool {
	p := dispatch.Pool{}
	for _, n := range s.nodes {
		if !n.ready.After(now) {
			p.Ready++
		}
	}
	p.Coming, p.ComingBy = dispatch.Coming(s.doc.Origin, s.doc.Requests, s.doc.Nodes, s.plannedLead, now)
	return p
}

// replanIfStale re-plans, as the operator does, when a stream's rate
// measured over the rate window no longer matches the plan in force
// (replan.Compare).
func (s *sim) replanIfStale(now time.Time) error {
	if s.o.Replan == nil {
		return nil
	}
	observed, stale, err := s.observe(now)
	if err != nil || !stale {
		return err
	}
	return s.replanNow(now, s.w, observed)
}

// observe is what the operator knows of every query at now for a re-plan,
// and whether a measured rate no longer matches the plan in force (rates
// are measured only with re-planning for rates on).
func (s *sim) observe(now time.Time) (map[string]replan.Observed, bool, error) {
	observed := map[string]replan.Observed{}
	stale := false
	for i, q := range s.w.Queries {
		dq := &s.queries[i]
		o := replan.Observed{Arrived: dq.Arrived, Done: replan.Progress{Batches: len(dq.Batches), Partials: len(dq.Partials)}}
		if n := len(dq.Batches); n > 0 {
			o.Done.Tuples, o.Done.LastFrom = dq.Batches[n-1].To, dq.Batches[n-1].From
		}
		start, end := at(s.origin, q.WindowStart), at(s.origin, q.WindowEnd)
		if s.o.Replan != nil && now.Sub(start) >= s.o.Replan.Window && now.Before(end) {
			window := s.o.Replan.Window
			earlier, err := s.sources[i].Arrived(context.Background(), now.Add(-window))
			if err != nil {
				return nil, false, err
			}
			o.Measured = float64(dq.Arrived-earlier) / window.Seconds()
			o.Resolution = replan.Resolution(q.Granularity, window.Seconds())
			declared := replan.RateAt(q.Rates, now.Sub(start).Seconds())
			stale = stale || replan.Compare(o, declared, s.assumed[q.Name], s.doc.MaxSupportedRateFactor, s.o.Replan.Rates) != replan.Holds
		}
		observed[q.Name] = o
	}
	return observed, stale, nil
}

// replanNow re-plans the rest of the windows of w (the workload as planned,
// its origin the first plan's) from observed at now and follows the plan.
func (s *sim) replanNow(now time.Time, w planner.Workload, observed map[string]replan.Observed) error {
	var rates replan.Rates
	if s.o.Replan != nil {
		rates = s.o.Replan.Rates
	}
	pool, busy := s.pool(now), dispatch.FreeAt(s.queries, now).Sub(now).Seconds()
	at := replan.WithOrigin(w, now)
	nodes := replan.NodesNow(at, pool.Ready, pool.Coming, pool.ComingBy.Sub(now).Seconds())
	doc, assumed, err := replan.Plan(at, observed, rates, nodes, busy)
	if err != nil {
		return fmt.Errorf("offlinerun: re-planning at %.0fs: %w", now.Sub(s.origin).Seconds(), err)
	}
	s.result.Replans = append(s.result.Replans, now.Sub(s.origin).Seconds())
	return s.follow(&doc, assumed)
}

// controlDeadlines keeps the in-window deadline rule after a step has
// finished: the slowdown of the window's finished steps against the models
// in force (learn.Slowdown of each step's ratio to its query's model),
// and, when dispatch.UnsafeAt names a query at that slowdown, a re-plan at
// once with every model scaled by it. The models in force then include the
// slowdown, so the same steps do not call for another re-plan; a further
// slowdown does. The nodes the rule judges on are the most the plan in
// force asks for from now on: the plan's scaling counts, since the pool
// runs the work left on them at best.
func (s *sim) controlDeadlines(now time.Time) error {
	if s.o.Window == nil {
		return nil
	}
	index := map[string]int{}
	for i, q := range s.w.Queries {
		index[q.Name] = i
	}
	var ratios []float64
	for _, st := range s.result.Steps {
		if r := learn.Ratio(s.queries[index[st.Query]].Cost, StepObservation(st)); r > 0 {
			ratios = append(ratios, r)
		}
	}
	if len(ratios) < max(s.o.Window.MinSteps, 1) {
		return nil
	}
	factor := learn.Slowdown(ratios)
	if len(dispatch.UnsafeAt(now, s.queries, factor, s.mostNodes(now))) == 0 {
		return nil
	}
	w := s.w
	w.Queries = append([]planner.Query(nil), s.w.Queries...)
	for i := range w.Queries {
		w.Queries[i].Cost = w.Queries[i].Cost.Scaled(factor)
		s.queries[i].Cost = w.Queries[i].Planned(w.Planning)
	}
	s.w = w
	observed, _, err := s.observe(now)
	if err != nil {
		return err
	}
	return s.replanNow(now, w, observed)
}

// mostNodes is the largest pool size the plan in force asks for from now
// on, and never less than the smallest size.
func (s *sim) mostNodes(now time.Time) int {
	level := dispatch.RequestAt(s.doc.Origin, s.doc.Requests, now)
	offset := now.Sub(s.doc.Origin).Seconds()
	for _, r := range s.doc.Requests {
		if r.At >= offset {
			level = max(level, r.Nodes)
		}
	}
	sizes := s.w.Pool.Sizes
	if len(sizes) == 0 {
		return max(level, 1)
	}
	best := sizes[0]
	for _, size := range sizes {
		if size <= level {
			best = size
		}
	}
	return best
}

// StepObservation is what the learner sees of a step that ran: its kind,
// its work (the tuples of a batch, the inputs of a merge), its nodes and
// its measured duration.
func StepObservation(st planner.Step) learn.Observation {
	o := learn.Observation{Kind: learn.Merge, Work: float64(st.Inputs), Nodes: st.Nodes, Seconds: st.End - st.Start}
	if st.Kind == planner.StepBatch {
		o.Kind, o.Work = learn.Batch, float64(st.ToTuple-st.FromTuple)
	}
	return o
}

// resize asks for what the operator would: the plan's executable timeline,
// and never less than the step running late needs. New nodes come a lead
// time later; fewer nodes go at once, the newest first.
func (s *sim) resize(now time.Time) {
	wanted := max(dispatch.RequestAt(s.doc.Origin, s.doc.Requests, now), dispatch.BehindSchedule(s.doc, s.queries, maxAttempts, now))
	for len(s.nodes) < wanted {
		s.nodes = append(s.nodes, node{requested: now, ready: now.Add(s.lead)})
	}
	// A node released after it arrived has its lead time measured; one
	// released on its way never arrived.
	s.arrived(s.nodes[wanted:], now)
	s.nodes = s.nodes[:wanted]
	offset := now.Sub(s.origin).Seconds()
	if n := len(s.result.Requested); n == 0 || s.result.Requested[n-1].Nodes != wanted {
		s.result.Requested = append(s.result.Requested, planner.NodeLevel{At: offset, Nodes: wanted})
	}
	s.result.MaxNodes = max(s.result.MaxNodes, wanted)
}

func (s *sim) launch(now time.Time, l dispatch.Step) {
	qi := 0
	for i := range s.queries {
		if s.queries[i].Name == l.Query {
			qi = i
		}
	}
	q := &s.queries[qi]
	truth := s.truth[qi]
	modelled := truth.MergeSeconds(l.Nodes, l.Inputs)
	if l.Kind == planner.StepBatch {
		modelled = truth.BatchSeconds(l.Nodes, l.ToTuple-l.FromTuple)
	}
	slowdown := max(1+s.o.Noise.Mean+s.o.Noise.StdDev*s.rng.NormFloat64(), fastest)
	end := now.Add(time.Duration(modelled * slowdown * float64(time.Second)))
	attempt := dispatch.Attempt{Number: l.Attempt, State: dispatch.Running, Started: now, Nodes: l.Nodes, Inputs: l.Inputs}
	switch l.Kind {
	case planner.StepBatch:
		q.Batches = append(q.Batches, dispatch.Batch{From: l.FromTuple, To: l.ToTuple, Attempt: attempt})
	case planner.StepPartial:
		q.Partials = append(q.Partials, attempt)
	default:
		q.Final = &attempt
	}
	step := planner.Step{
		Query: l.Query, Kind: l.Kind, Index: l.Index, FromTuple: l.FromTuple, ToTuple: l.ToTuple, Inputs: l.Inputs,
		Start: now.Sub(s.origin).Seconds(), End: end.Sub(s.origin).Seconds(), Nodes: l.Nodes,
	}
	s.running = &running{query: qi, kind: l.Kind, index: l.Index, end: end, step: step}
}

// arrived records the lead times of the nodes among gone that had arrived
// by now and were asked for during the run.
func (s *sim) arrived(gone []node, now time.Time) {
	for _, n := range gone {
		// Without AskAhead the first plan's initial nodes are ready when
		// asked for, which measures nothing.
		if n.ready.After(n.requested) && !n.ready.After(now) {
			s.result.Leads = append(s.result.Leads, n.ready.Sub(n.requested).Seconds())
		}
	}
}

// finishStep ends the running step if it is due, and reports whether it
// did.
func (s *sim) finishStep(now time.Time) bool {
	r := s.running
	if r == nil || r.end.After(now) {
		return false
	}
	q := &s.queries[r.query]
	switch r.kind {
	case planner.StepBatch:
		q.Batches[r.index].State, q.Batches[r.index].Ended = dispatch.Succeeded, r.end
	case planner.StepPartial:
		q.Partials[r.index].State, q.Partials[r.index].Ended = dispatch.Succeeded, r.end
	default:
		q.Final.State, q.Final.Ended = dispatch.Succeeded, r.end
	}
	s.result.Steps = append(s.result.Steps, r.step)
	s.running = nil
	return true
}

// done is when every final merge has ended and the plan asks for no more
// than it does at its end.
func (s *sim) done(now time.Time) bool {
	for _, q := range s.queries {
		if q.Final == nil || q.Final.State != dispatch.Succeeded {
			return false
		}
	}
	return !at(s.doc.Origin, s.doc.Requests[len(s.doc.Requests)-1].At).After(now)
}

// next is the next instant anything can change: the running step ends, a
// node arrives, the plan's requests change, dispatch's recheck (a batch
// fills up, a window closes, nodes come), or a stream that cannot forecast
// is polled.
func (s *sim) next(now time.Time, d dispatch.Decision) time.Time {
	var candidates []time.Time
	if s.running != nil {
		candidates = append(candidates, s.running.end)
	}
	for _, n := range s.nodes {
		if n.ready.After(now) {
			candidates = append(candidates, n.ready)
		}
	}
	if t := dispatch.NextRequestChange(s.doc.Origin, s.doc.Requests, now); !t.IsZero() {
		// NextRequestChange rounds down; the change is seen from the next
		// nanosecond on.
		candidates = append(candidates, t.Add(time.Nanosecond))
	}
	if !d.Recheck.IsZero() {
		candidates = append(candidates, d.Recheck)
	}
	// A step due by the plan but not started can raise the pool when its
	// start passes.
	for _, st := range s.doc.Steps {
		if t := at(s.doc.Origin, st.Start); t.After(now) {
			candidates = append(candidates, t)
			break
		}
	}
	if s.polled(now) {
		candidates = append(candidates, now.Add(s.o.Poll))
	}
	sort.Slice(candidates, func(a, b int) bool { return candidates[a].Before(candidates[b]) })
	for _, c := range candidates {
		if c.After(now) {
			return c
		}
	}
	return now.Add(time.Second)
}

// polled reports whether a stream that cannot forecast its arrivals may
// still bring tuples after now.
func (s *sim) polled(now time.Time) bool {
	for i, q := range s.w.Queries {
		if s.queries[i].ArrivalOf == nil && now.Before(at(s.origin, q.WindowEnd+q.AllowedLateness)) {
			return true
		}
	}
	return false
}

// close bills the pool and records the misses.
func (s *sim) close(now time.Time) {
	end := now.Sub(s.origin).Seconds()
	s.result.Requested = append(s.result.Requested, planner.NodeLevel{At: end, Nodes: 0})
	s.result.Cost = planner.Cost(s.result.Requested, s.w.Pool)
	s.arrived(s.nodes, now)
	for i, q := range s.queries {
		if q.Final == nil || q.Final.State != dispatch.Succeeded || q.Final.Ended.After(q.Deadline) {
			s.result.Missed = append(s.result.Missed, s.w.Queries[i].Name)
		}
	}
}
