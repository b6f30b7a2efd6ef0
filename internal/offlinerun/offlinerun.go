// Package offlinerun carries a plan out the way laxity's operator does, on a
// simulated cluster whose nodes are slower than the cost model by a seeded
// random amount. At every instant anything can change, an Operator (what
// the operator keeps between passes, and its ElasticSchedule reconciler's
// pass) takes the pass decisions (internal/pass) on what the simulated
// cluster shows it: whether the plan in force
// still holds or is re-planned and why (measured rates, what was learned
// from the steps that ran and the nodes that arrived, a query made late by
// slow steps), the pool size to ask for (the plan's executable timeline,
// never less than lagging work needs), the step to launch (least slack
// first, merges first, waiting for nodes on their way when that pays), and
// when to look again. Nodes arrive a provisioning lead time after they are
// asked for. Every batch and merge takes its modelled duration times 1 + s,
// with s drawn from a normal distribution per step (Noise). It reports
// which queries missed their deadline and what the pool cost.
//
// Streams may arrive at rates other than the declared ones the plan was
// made from (Options.Actual), as in the variable-rate runs of
// docs/experiments.md. Such a stream is read, like the operator reads a
// real source, by polling: it cannot forecast when a batch fills up. With
// Options.Replan the run measures each stream's rate over the rate window,
// as the operator does.
//
// The cluster may also differ from what the plan was made from: its steps
// may follow other cost models than the plan's (Options.TrueCost) and its
// nodes may take longer to arrive than the plan's lead time
// (Options.TrueLead). With Options.Learning the run learns from the steps
// and nodes of the window as the operator does when its schedule applies
// what it learns (learn.Window, recorded as a query's status records it;
// learn.LeadTimes), and the pass decisions judge the plan in force against
// it. The controllers' differential test holds the Operator to the
// reconciler's decisions, pass by pass.
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
	"time"

	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/dispatch"
	"github.com/laxity-dev/laxity/internal/learn"
	"github.com/laxity-dev/laxity/internal/pass"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/replan"
	"github.com/laxity-dev/laxity/internal/source"
	"github.com/laxity-dev/laxity/internal/spec"
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
	// Poisson makes every query's arrival units come as a Poisson process
	// at its rates (Actual's, else the declared ones), drawn from Seed,
	// instead of evenly: the counts a rate is measured from vary as a real
	// stream's do. Such a stream is polled.
	Poisson bool
	// Poll is how often a stream of Actual, or a Poisson stream, is looked
	// at; 15 s, the operator's default, when zero.
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
	// Learning, when set, learns from the window's steps and nodes as the
	// operator does; the workload's models and lead time are then those
	// learned before the window (Learning.Priced), which the run's own
	// observations refine.
	Learning *Learning
	// AskAhead models how the operator gets a window's first nodes: it
	// plans a window before it starts, and asks for the plan's initial
	// nodes the plan's lead time before its first step needs them; they
	// arrive the true lead time after that request (TrueLead), late when
	// that is longer, and their lead times are measured. Otherwise the
	// initial nodes are ready at the origin and not measured. Either way
	// the pool is billed from the origin, as the plan prices it.
	AskAhead bool
}

// Learning is what the operator knew before the window, which it learns
// on from: by query, the declared cost model and the observations of
// earlier windows; the declared lead time and the lead times measured
// before; the settings it learns with (learn.Defaults when zero), whose
// Unlearned margin a query plans with until something learned applies.
type Learning struct {
	Declared     map[string]costmodel.Model
	Inherited    map[string][]learn.Observation
	DeclaredLead float64
	Leads        []float64
	Settings     learn.Settings
}

// Priced is w with every query's cost model and margin, and the pool's
// lead time, as plans price them from what l knew and the window's own
// observations (own, by query; its own lead times, ownLeads): the learned
// model where it applies (learn.Window), as a query's status records it
// (spec.AsRecorded), else the declared one with the unlearned margin; the
// learned lead time where it
// is materially longer (learn.PlannedLeadTime), from the newest lead times
// a schedule's status keeps.
func (l *Learning) Priced(w planner.Workload, own map[string][]learn.Observation, ownLeads []float64) planner.Workload {
	return l.priced(w, own, learn.LeadTimes{Measured: leadTimes(slices.Concat(l.Leads, ownLeads))})
}

// priced is Priced with the lead times measured so far.
func (l *Learning) priced(w planner.Workload, own map[string][]learn.Observation, leads learn.LeadTimes) planner.Workload {
	settings := l.Settings
	if settings == (learn.Settings{}) {
		settings = learn.Defaults
	}
	w.Queries = slices.Clone(w.Queries)
	for i := range w.Queries {
		q := &w.Queries[i]
		declared, ok := l.Declared[q.Name]
		if !ok {
			continue
		}
		q.Cost, q.Margin, q.TailMargin = declared, settings.Unlearned, 0
		if learned, applies := learn.Window(declared, l.Inherited[q.Name], own[q.Name], settings); applies {
			spec.PriceWith(q, spec.AsRecorded(learned))
		}
	}
	w.Pool.ProvisioningLeadTime = leads.Planned(costmodel.Duration(l.DeclaredLead), settings).Seconds()
	return w
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
	// Replans are the instants the run re-planned at, and Reasons why
	// (internal/pass's reasons), one for each.
	Replans []float64
	Reasons []string
	// Plans are the plans made, the first one included.
	Plans []*planner.Document
	// Leads are the provisioning lead times the operator measured during
	// the run (from a request for more nodes than were ready until that
	// many were, to the second), in order; the request for the first
	// plan's initial nodes is among them only with Options.AskAhead.
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
	// A query over several inputs runs as the operator runs it: one stream
	// of its inputs' arrivals together.
	w, err := planner.OneStream(w)
	if err != nil {
		return Result{}, err
	}
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

// specs stands for the specs every plan of a run is made from: they do not
// change during a run.
const specs = "specs"

// launched are one query's launched steps as the simulated cluster holds
// them, the latest attempt of each.
type launched struct {
	batches  []dispatch.Batch
	partials []dispatch.Attempt
	final    *dispatch.Attempt
}

type sim struct {
	// w is the workload as planned before the run: its origin is the first
	// plan's, which every time in the result is measured from.
	w planner.Workload
	o Options
	// operator makes every pass's decisions; doc is the plan in force.
	operator *Operator
	doc      *planner.Document
	origin   time.Time
	// lead is how long nodes really take to come.
	lead time.Duration
	// truth is, by query, the model the cluster's steps follow.
	truth []costmodel.Model
	rng   *rand.Rand
	// steps and sources are, in the workload's order, each query's launched
	// steps and its tuples; polled says which of them are polled.
	steps   []launched
	sources []stream
	polled  []bool
	// nodes are when the nodes asked for are ready, oldest first.
	nodes []time.Time
	// running are the steps on the pool: one at a time, or one a lane
	// in a plan that runs steps side by side.
	running []running
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
	lead := time.Duration(w.Pool.ProvisioningLeadTime * float64(time.Second))
	if o.TrueLead > 0 {
		lead = o.TrueLead
	}
	s := &sim{w: w, o: o, doc: doc, origin: doc.Origin, lead: lead, rng: rand.New(rand.NewPCG(o.Seed, 0x1a57))}
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
		if !slices.ContainsFunc(doc.Queries, func(p planner.QueryPlan) bool { return p.Name == q.Name }) {
			return nil, fmt.Errorf("offlinerun: query %s is not in the plan", q.Name)
		}
		truth, ok := o.TrueCost[q.Name]
		if !ok {
			truth = q.Cost
		}
		s.truth = append(s.truth, truth)
		rates := q.Rates
		actual, polled := o.Actual[q.Name]
		if polled {
			rates = actual
		}
		if o.Poisson {
			rng := rand.New(rand.NewPCG(o.Seed, uint64(len(s.sources))))
			src := newPoisson(at(s.origin, q.WindowStart), q.WindowEnd-q.WindowStart, q.Granularity, rates, rng)
			s.sources, s.polled = append(s.sources, src), append(s.polled, true)
			continue
		}
		var segments []source.Segment
		for _, r := range rates {
			segments = append(segments, source.Segment{After: time.Duration(r.Offset * float64(time.Second)), PerSecond: r.TuplesPerSecond})
		}
		src, err := source.NewSynthetic(at(s.origin, q.WindowStart), at(s.origin, q.WindowEnd), q.Granularity, segments)
		if err != nil {
			return nil, fmt.Errorf("offlinerun: query %s: %w", q.Name, err)
		}
		s.sources, s.polled = append(s.sources, src), append(s.polled, polled)
	}
	s.steps = make([]launched, len(w.Queries))
	s.result.Plans = append(s.result.Plans, doc)
	config := OperatorConfig{
		Workload: w, Learning: o.Learning,
		Rules: pass.Rules{
			Dispatch: dispatch.Settings{Sizes: w.Pool.Sizes, Policy: w.Planning.Policy, MaxAttempts: maxAttempts, Backoff: 30 * time.Second},
			Poll:     o.Poll,
		},
		// The first plan was made before its windows opened, with
		// nothing arrived.
		Plan: &pass.Plan{Doc: *doc, Inputs: specs, Reason: pass.Initial, Models: pass.ModelsOf(w), Arrivals: &pass.Arrivals{Made: doc.Origin}},
	}
	if o.Replan != nil {
		config.Rules.Rates, config.Rules.RateWindow = o.Replan.Rates, o.Replan.Window
	}
	// The plan takes its first pool as ready by its first step: the
	// operator asks for it a planned lead time ahead (AskAhead), and times
	// that request; nodes that arrived before the run began are timed at
	// its first pass. Otherwise the first pool is ready at the origin.
	s.nodes = make([]time.Time, doc.Requests[0].Nodes)
	if o.AskAhead {
		first := s.initialRequest()
		for i := range s.nodes {
			s.nodes[i] = first.Add(s.lead)
		}
		if n := len(s.nodes); n > 0 {
			config.Pending = &learn.NodeRequest{Nodes: n, Since: first}
		}
	} else {
		for i := range s.nodes {
			s.nodes[i] = s.origin
		}
	}
	var err error
	if s.operator, err = NewOperator(config); err != nil {
		return nil, err
	}
	return s, nil
}

// initialRequest is when the operator asked for the first plan's initial
// nodes: the plan's lead time before its first step (AskAhead).
func (s *sim) initialRequest() time.Time {
	planned := time.Duration(s.w.Pool.ProvisioningLeadTime * float64(time.Second))
	doc := s.doc
	if len(doc.Steps) == 0 {
		return s.origin.Add(-planned)
	}
	first := doc.Steps[0].Start
	for _, st := range doc.Steps {
		first = min(first, st.Start)
	}
	return at(s.origin, first).Add(-planned)
}

// horizon is when a run that has not finished is given up: well after the
// last deadline and the plan's last request.
func (s *sim) horizon() time.Time {
	doc := s.doc
	last := at(doc.Origin, doc.Requests[len(doc.Requests)-1].At).Sub(s.origin).Seconds()
	for _, q := range s.w.Queries {
		last = max(last, q.Deadline)
	}
	return at(s.origin, 2*last+3600)
}

func (s *sim) run() (Result, error) {
	now := s.origin
	for passes := 0; ; passes++ {
		if passes > 1_000_000 {
			return Result{}, errors.New("offlinerun: the run does not progress")
		}
		s.finishStep(now)
		obs, err := s.observe(now)
		if err != nil {
			return Result{}, err
		}
		d, err := s.operator.Pass(obs)
		if err != nil {
			return Result{}, err
		}
		if d.Plan != nil {
			s.doc = &d.Plan.Doc
			s.result.Replans = append(s.result.Replans, now.Sub(s.origin).Seconds())
			s.result.Reasons = append(s.result.Reasons, d.Plan.Reason)
			s.result.Plans = append(s.result.Plans, s.doc)
		}
		if d.Measured {
			s.result.Leads = append(s.result.Leads, d.Lead.Seconds())
		}
		s.resize(now, d.Request)
		if l := d.Launch; l != nil {
			if err := s.launch(now, *l, obs.Ready); err != nil {
				return Result{}, err
			}
			if s.doc.Chosen.Lanes > 1 {
				// Another lane may launch at the same instant, as the
				// controller's next pass does once it sees this step.
				continue
			}
		}
		if s.done(now) || now.After(s.horizon()) {
			break
		}
		now = s.next(now, d.Next)
	}
	s.close(now)
	return s.result, nil
}

// ready is the nodes ready at now.
func (s *sim) ready(now time.Time) int {
	n := 0
	for _, ready := range s.nodes {
		if !ready.After(now) {
			n++
		}
	}
	return n
}

// observe is what the operator's pass reads at now: every query's launched
// steps, its arrivals and, with rates measured (Options.Replan), its rate
// over the rate window; and the ready nodes.
func (s *sim) observe(now time.Time) (Observation, error) {
	obs := Observation{Now: now, Ready: s.ready(now), Queries: make([]QueryObservation, 0, len(s.w.Queries))}
	for i, q := range s.w.Queries {
		n, err := s.sources[i].Arrived(context.Background(), now)
		if err != nil {
			return Observation{}, err
		}
		l := &s.steps[i]
		qo := QueryObservation{Name: q.Name, Batches: l.batches, Partials: l.partials, Final: l.final, Arrived: n}
		if !s.polled[i] {
			qo.ArrivalOf = s.sources[i].ArrivalOf
		}
		start, end := at(s.origin, q.WindowStart), at(s.origin, q.WindowEnd)
		if s.o.Replan != nil && now.Sub(start) >= s.o.Replan.Window && now.Before(end) {
			window := s.o.Replan.Window
			earlier, err := s.sources[i].Arrived(context.Background(), now.Add(-window))
			if err != nil {
				return Observation{}, err
			}
			qo.Rate = float64(n-earlier) / window.Seconds()
		}
		obs.Queries = append(obs.Queries, qo)
	}
	return obs, nil
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

// resize asks the pool for wanted nodes. New nodes come a lead time
// later; fewer nodes go at once, the newest first.
func (s *sim) resize(now time.Time, wanted int) {
	for len(s.nodes) < wanted {
		s.nodes = append(s.nodes, now.Add(s.lead))
	}
	s.nodes = s.nodes[:wanted]
	offset := now.Sub(s.origin).Seconds()
	if n := len(s.result.Requested); n == 0 || s.result.Requested[n-1].Nodes != wanted {
		s.result.Requested = append(s.result.Requested, planner.NodeLevel{At: offset, Nodes: wanted})
	}
	s.result.MaxNodes = max(s.result.MaxNodes, wanted)
}

// launch starts step l on the pool, of which the pass saw ready nodes; a
// step that needs nodes another step holds, or a second step of a query at
// once, is dispatch's error.
func (s *sim) launch(now time.Time, l dispatch.Step, ready int) error {
	qi := slices.IndexFunc(s.w.Queries, func(q planner.Query) bool { return q.Name == l.Query })
	held := 0
	for _, r := range s.running {
		if r.query == qi {
			return fmt.Errorf("offlinerun: at %s dispatch launched %s %d of query %s while its %s %d runs", now.Sub(s.origin), l.Kind, l.Index, l.Query, r.kind, r.index)
		}
		held += r.step.Nodes
	}
	if held+l.Nodes > ready {
		return fmt.Errorf("offlinerun: at %s dispatch launched %s %d of query %s on %d nodes, with %d of %d ready held by running steps", now.Sub(s.origin), l.Kind, l.Index, l.Query, l.Nodes, held, ready)
	}
	q := &s.steps[qi]
	truth := s.truth[qi]
	modelled := truth.MergeSeconds(l.Nodes, l.Inputs)
	if l.Kind == planner.StepBatch {
		modelled = truth.BatchSeconds(l.Nodes, l.ToTuple-l.FromTuple)
	}
	slowdown := max(1+s.o.Noise.Mean+s.o.Noise.StdDev*s.rng.NormFloat64(), fastest)
	end := now.Add(time.Duration(modelled * slowdown * float64(time.Second)))
	attempt := dispatch.Attempt{Number: l.Attempt, State: dispatch.Running, Started: now, Launched: now, Nodes: l.Nodes, Inputs: l.Inputs, SideBySide: l.SideBySide, Lane: l.Lane}
	switch l.Kind {
	case planner.StepBatch:
		q.batches = append(q.batches, dispatch.Batch{From: l.FromTuple, To: l.ToTuple, Attempt: attempt})
	case planner.StepPartial:
		q.partials = append(q.partials, attempt)
	default:
		q.final = &attempt
	}
	step := planner.Step{
		Query: l.Query, Kind: l.Kind, Index: l.Index, FromTuple: l.FromTuple, ToTuple: l.ToTuple, Inputs: l.Inputs,
		Start: now.Sub(s.origin).Seconds(), End: end.Sub(s.origin).Seconds(), Nodes: l.Nodes, Lane: l.Lane,
	}
	s.running = append(s.running, running{query: qi, kind: l.Kind, index: l.Index, end: end, step: step})
	return nil
}

// finishStep ends the running steps that are due, in the order they end:
// the operator's next pass observes them, and learns from them.
func (s *sim) finishStep(now time.Time) {
	slices.SortStableFunc(s.running, func(a, b running) int { return a.end.Compare(b.end) })
	s.running = slices.DeleteFunc(s.running, func(r running) bool {
		if r.end.After(now) {
			return false
		}
		q := &s.steps[r.query]
		var a *dispatch.Attempt
		switch r.kind {
		case planner.StepBatch:
			a = &q.batches[r.index].Attempt
		case planner.StepPartial:
			a = &q.partials[r.index]
		default:
			a = q.final
		}
		a.State, a.Ended = dispatch.Succeeded, r.end
		s.result.Steps = append(s.result.Steps, r.step)
		return true
	})
}

// finished says whether the query's final merge has succeeded.
func (l *launched) finished() bool { return l.final != nil && l.final.State == dispatch.Succeeded }

// done is when every final merge has ended and the plan asks for no more
// than it does at its end.
func (s *sim) done(now time.Time) bool {
	for i := range s.steps {
		if !s.steps[i].finished() {
			return false
		}
	}
	doc := s.doc
	return !at(doc.Origin, doc.Requests[len(doc.Requests)-1].At).After(now)
}

// next is the next instant anything can change: what the pass decisions
// wait for (next: a batch fills up, a window closes, the pool's requests
// change, a planned step is due, a polled stream is looked at), a running
// step ends, or a node arrives.
func (s *sim) next(now, next time.Time) time.Time {
	for _, r := range s.running {
		next = dispatch.Earliest(next, r.end)
	}
	for _, ready := range s.nodes {
		if ready.After(now) {
			next = dispatch.Earliest(next, ready)
		}
	}
	if !next.After(now) {
		return now.Add(time.Second)
	}
	return next
}

// close bills the pool and records the misses.
func (s *sim) close(now time.Time) {
	end := now.Sub(s.origin).Seconds()
	s.result.Requested = append(s.result.Requested, planner.NodeLevel{At: end, Nodes: 0})
	s.result.Cost = planner.Cost(s.result.Requested, s.w.Pool)
	for i, q := range s.w.Queries {
		l := &s.steps[i]
		if !l.finished() || l.final.Ended.After(at(s.origin, q.Deadline)) {
			s.result.Missed = append(s.result.Missed, q.Name)
		}
	}
}
