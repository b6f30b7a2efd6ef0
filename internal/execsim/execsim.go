// Package execsim carries a plan out the way laxity's operator does, on a
// simulated cluster whose nodes are slower than the cost model by a seeded
// random amount: the same internal/dispatch decisions (least slack first,
// merges first, waiting for nodes on their way when that pays), the pool
// asked for the plan's executable timeline and never less than lagging work
// needs (dispatch.BehindSchedule), nodes that arrive a provisioning lead
// time after they are asked for. Every batch and merge takes its modelled
// duration times 1 + s, with s drawn from a normal distribution per step —
// the BCframework seed's per-period slowdown (mean 15%, standard deviation
// 10%). It reports which queries missed their deadline and what the pool
// cost. Like the operator, it does not re-plan for slow steps: re-plans
// follow arrival rates, specs and failures, none of which change here.
//
// It reads no clock: a run is determined by its plan, workload and seed.
package execsim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/laxity-dev/laxity/internal/dispatch"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/source"
)

// Noise is the slowdown of each step: a fraction drawn from a normal
// distribution, so that a step takes modelled × (1 + slowdown).
type Noise struct {
	Mean, StdDev float64
}

// BCFramework is the seed's measured slowdown of cloud nodes.
var BCFramework = Noise{Mean: 0.15, StdDev: 0.10}

// Result is one run.
type Result struct {
	// Missed names the queries whose final merge ended after their
	// deadline, or did not end.
	Missed []string
	// Cost bills the pool as it was asked for; MaxNodes is its largest
	// size.
	Cost     float64
	MaxNodes int
	// Steps is every step as it ran, times in seconds from the origin.
	Steps []planner.Step
}

// maxAttempts is the operator's default; no step fails here, so it only
// matters to dispatch's bookkeeping.
const maxAttempts = 3

// fastest bounds a step's slowdown from below: a draw far in the normal's
// left tail must not make a step take no time.
const fastest = 0.1

// Run carries doc out for the workload w with the noise of seed. w's cost
// models are the true ones; its runtime margin, if any, is the one the plan
// was made with, which dispatch's estimates include too.
func Run(w planner.Workload, doc *planner.Document, noise Noise, seed uint64) (Result, error) {
	s, err := newSim(w, doc, noise, seed)
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

type sim struct {
	w        planner.Workload
	doc      *planner.Document
	origin   time.Time
	lead     time.Duration
	rng      *rand.Rand
	noise    Noise
	settings dispatch.Settings
	queries  []dispatch.Query
	sources  []*source.Synthetic
	// nodes are the ready times of the nodes asked for, oldest first.
	nodes     []time.Time
	requested []planner.NodeLevel
	running   *running
	result    Result
}

// at is the instant seconds after origin, rounded up to the nanosecond, so
// that dispatch, comparing offsets in seconds, sees an event at its time as
// having happened.
func at(origin time.Time, seconds float64) time.Time {
	return origin.Add(time.Duration(math.Ceil(seconds * float64(time.Second))))
}

func newSim(w planner.Workload, doc *planner.Document, noise Noise, seed uint64) (*sim, error) {
	if doc == nil || len(doc.Requests) == 0 {
		return nil, errors.New("execsim: the plan has no node timeline")
	}
	s := &sim{
		w: w, doc: doc, origin: doc.Origin, lead: time.Duration(w.Pool.ProvisioningLeadTime * float64(time.Second)),
		rng: rand.New(rand.NewPCG(seed, 0x1a57)), noise: noise,
		settings: dispatch.Settings{Sizes: w.Pool.Sizes, Policy: w.Planning.Policy, MaxAttempts: maxAttempts, Backoff: 30 * time.Second},
	}
	for _, q := range w.Queries {
		var planned *planner.QueryPlan
		for i := range doc.Queries {
			if doc.Queries[i].Name == q.Name {
				planned = &doc.Queries[i]
			}
		}
		if planned == nil {
			return nil, fmt.Errorf("execsim: query %s is not in the plan", q.Name)
		}
		var segments []source.Segment
		for _, r := range q.Rates {
			segments = append(segments, source.Segment{After: time.Duration(r.Offset * float64(time.Second)), PerSecond: r.TuplesPerSecond})
		}
		src, err := source.NewSynthetic(at(s.origin, q.WindowStart), at(s.origin, q.WindowEnd), q.Granularity, segments)
		if err != nil {
			return nil, fmt.Errorf("execsim: query %s: %w", q.Name, err)
		}
		// Decisions use the model with the plan's margin, as the operator
		// does; the simulated cluster runs the true one, slowed down.
		dq := dispatch.Query{
			Name: q.Name, Deadline: at(s.origin, q.Deadline), Closed: at(s.origin, q.WindowEnd+q.AllowedLateness),
			Cost: q.Cost.Scaled(1 + w.Planning.RuntimeMargin), BatchSize: planned.BatchSize, ExpectedTotal: src.Total(), ArrivalOf: src.ArrivalOf,
		}
		if q.PartialEvery > 0 {
			dq.PartialEvery = max(int(math.Ceil(q.PartialEvery*float64(planned.Batches)-1e-9)), 1)
		}
		s.queries = append(s.queries, dq)
		s.sources = append(s.sources, src)
	}
	// The plan takes its first pool as ready at its origin (the operator
	// asks for it a lead time ahead).
	for range s.doc.Requests[0].Nodes {
		s.nodes = append(s.nodes, s.origin)
	}
	return s, nil
}

// horizon is when a run that has not finished is given up: well after the
// last deadline and the plan's last request.
func (s *sim) horizon() time.Time {
	last := s.doc.Requests[len(s.doc.Requests)-1].At
	for _, q := range s.w.Queries {
		last = max(last, q.Deadline)
	}
	return at(s.origin, 2*last+3600)
}

func (s *sim) run() (Result, error) {
	now, limit := s.origin, s.horizon()
	for steps := 0; ; steps++ {
		if steps > 1_000_000 {
			return Result{}, errors.New("execsim: the run does not progress")
		}
		s.finishStep(now)
		for i := range s.queries {
			n, err := s.sources[i].Arrived(now)
			if err != nil {
				return Result{}, err
			}
			s.queries[i].Arrived = n
		}
		s.resize(now)
		decision := dispatch.Decision{}
		if s.running == nil {
			decision = dispatch.Decide(now, s.settings, s.queries, s.pool(now))
			if decision.Launch != nil {
				s.launch(now, *decision.Launch)
			}
		}
		if s.done(now) || now.After(limit) {
			break
		}
		now = s.next(now, decision)
	}
	s.close(now)
	return s.result, nil
}

func (s *sim) pool(now time.Time) dispatch.Pool {
	p := dispatch.Pool{}
	for _, ready := range s.nodes {
		if !ready.After(now) {
			p.Ready++
		}
	}
	p.Coming, p.ComingBy = dispatch.Coming(s.origin, s.doc.Requests, s.lead, now)
	return p
}

// resize asks for what the operator would: the plan's executable timeline,
// and never less than the step running late needs. New nodes come a lead
// time later; fewer nodes go at once, the newest first.
func (s *sim) resize(now time.Time) {
	wanted := max(dispatch.RequestAt(s.origin, s.doc.Requests, now), dispatch.BehindSchedule(s.doc, s.queries, maxAttempts, now))
	for len(s.nodes) < wanted {
		s.nodes = append(s.nodes, now.Add(s.lead))
	}
	s.nodes = s.nodes[:wanted]
	offset := now.Sub(s.origin).Seconds()
	if n := len(s.requested); n == 0 || s.requested[n-1].Nodes != wanted {
		s.requested = append(s.requested, planner.NodeLevel{At: offset, Nodes: wanted})
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
	truth := s.w.Queries[qi].Cost
	modelled := truth.MergeSeconds(l.Nodes, l.Inputs)
	if l.Kind == planner.StepBatch {
		modelled = truth.BatchSeconds(l.Nodes, l.ToTuple-l.FromTuple)
	}
	slowdown := max(1+s.noise.Mean+s.noise.StdDev*s.rng.NormFloat64(), fastest)
	end := now.Add(time.Duration(modelled * slowdown * float64(time.Second)))
	attempt := dispatch.Attempt{Number: l.Attempt, State: dispatch.Running}
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

func (s *sim) finishStep(now time.Time) {
	r := s.running
	if r == nil || r.end.After(now) {
		return
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
}

// done is when every final merge has ended and the plan asks for no more
// than it does at its end.
func (s *sim) done(now time.Time) bool {
	for _, q := range s.queries {
		if q.Final == nil || q.Final.State != dispatch.Succeeded {
			return false
		}
	}
	return !at(s.origin, s.doc.Requests[len(s.doc.Requests)-1].At).After(now)
}

// next is the next instant anything can change: the running step ends, a
// node arrives, the plan's requests change, or dispatch's recheck (a batch
// fills up, a window closes, nodes come).
func (s *sim) next(now time.Time, d dispatch.Decision) time.Time {
	var candidates []time.Time
	if s.running != nil {
		candidates = append(candidates, s.running.end)
	}
	for _, ready := range s.nodes {
		if ready.After(now) {
			candidates = append(candidates, ready)
		}
	}
	if t := dispatch.NextRequestChange(s.origin, s.doc.Requests, now); !t.IsZero() {
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
		if t := at(s.origin, st.Start); t.After(now) {
			candidates = append(candidates, t)
			break
		}
	}
	sort.Slice(candidates, func(a, b int) bool { return candidates[a].Before(candidates[b]) })
	for _, c := range candidates {
		if c.After(now) {
			return c
		}
	}
	return now.Add(time.Second)
}

// close bills the pool and records the misses.
func (s *sim) close(now time.Time) {
	end := now.Sub(s.origin).Seconds()
	s.requested = append(s.requested, planner.NodeLevel{At: end, Nodes: 0})
	s.result.Cost = planner.Cost(s.requested, s.w.Pool)
	for i, q := range s.queries {
		if q.Final == nil || q.Final.State != dispatch.Succeeded || q.Final.Ended.After(q.Deadline) {
			s.result.Missed = append(s.result.Missed, s.w.Queries[i].Name)
		}
	}
}
