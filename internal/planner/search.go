package planner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/laxity-dev/laxity/internal/costmodel"
)

// prepared is a validated workload with what every candidate shares.
type prepared struct {
	w        Workload
	arrivals []arrivals
	costs    []costModel
	// unitSize and limit are each query's 1X batch size and Cmax cap.
	unitSize, limit []int64
	// cuts are each query's cutTuples: batch ends the improvement phase
	// keeps.
	cuts [][]int64
	// budget ends the search when the caller's context does.
	budget *budget
	// improvementShare scales the least work the improvement phase may do
	// (minImprovementEvents); zero is 1. A lane of a plan with steps side
	// by side gets its share of the queries, so that the lanes together
	// search about as long as the plan one step at a time.
	improvementShare float64
	// noPlan is set when a bound proves that no plan meets every deadline
	// (provablyLate): neither the reshaping nor the other order is tried.
	noPlan bool
	// readyAt is, by pool size index, when the pool can first have that
	// many nodes (Pool.Now), computed for the first simulation that needs
	// it; simulations only read it.
	readyAt []float64
}

// outcome is one simulated candidate.
type outcome struct {
	Candidate
	// Improved is set on a plan the improvement phase reshaped.
	Improved bool
	sim      *sim
	nodes    []NodeLevel
	requests []NodeLevel
}

// Plan searches every initial pool size × batch-size factor (section 3.3),
// chooses the cheapest candidate that meets every deadline — ties go to
// fewer maximum nodes, then the smaller factor, then the smaller initial
// size — and returns its plan document. A workload no candidate can meet
// still gets a document, with Chosen.Feasible false and the query that is
// late first. Errors report invalid workloads and name the query and field.
func Plan(w Workload) (Document, error) { return PlanContext(context.Background(), w) }

// PlanContext is Plan within ctx: it looks at ctx before every candidate and
// every few thousand simulated events, and when ctx is done gives up with an
// error wrapping ErrSearchBudget (and ctx's error). Until then it is Plan:
// the result does not depend on how long the search takes.
//
// With Planning.Sharing, the queries of a stream that can share batches
// (sharingGroups) are also planned as groups of shared steps, and that plan
// is taken when it meets every deadline and bills less than planning every
// query alone. Without a group to share, the plan is planning them alone.
//
// A query over several inputs is planned as one query of their arrivals
// together, and each of its steps names its range on every input
// (planInputs).
//
// Queries with a TailMargin are planned to keep it; when no plan can, the
// workload is planned again without it, and that plan, which keeps no tail
// headroom (QueryPlan.TailMargin 0), is taken: the headroom is insurance,
// not a deadline.
func PlanContext(ctx context.Context, w Workload) (Document, error) {
	for _, validate := range []func(Workload) error{validateStreams, validateKept, validateInputs} {
		if err := validate(w); err != nil {
			return Document{}, err
		}
	}
	doc, err := planInputs(ctx, w, planShapes)
	if err != nil || doc.Chosen.Feasible || !keepsTail(w) {
		return doc, err
	}
	bare := w
	bare.Queries = slices.Clone(w.Queries)
	for i := range bare.Queries {
		bare.Queries[i].TailMargin = 0
	}
	return planInputs(ctx, bare, planShapes)
}

// keepsTail reports whether a query of w asks its plan for tail headroom.
func keepsTail(w Workload) bool {
	return slices.ContainsFunc(w.Queries, func(q Query) bool { return q.TailMargin > 0 })
}

// planShapes is PlanContext for queries of one input each: planned alone,
// in slices and in shared groups, the cheapest that meets every deadline.
func planShapes(ctx context.Context, w Workload) (Document, error) {
	best, err := planSliced(ctx, w, nil)
	if err != nil {
		return Document{}, err
	}
	if sliding := slidingGroups(w); len(sliding) > 0 {
		sliced, err := planSliced(ctx, w, sliding)
		if err != nil && !shapeRefused(err) {
			return Document{}, err
		}
		if err == nil && cheaper(sliced, best, w.Planning.Objective) {
			best = sliced
		}
	}
	if groups := sharingGroups(w); len(groups) > 0 {
		return planSharing(ctx, w, groups, best)
	}
	return best, nil
}

// shapeRefused reports whether err is the planner refusing a workload it
// made (slices, shared groups): a part too short to hold a tuple, or cut
// into more steps than the work bound allows. The workload as given was
// planned already; that shape is not an option, and the others stand.
func shapeRefused(err error) bool {
	var invalid *InvalidError
	return errors.As(err, &invalid)
}

// planSequential is PlanContext with every query planned alone and every
// step on the whole pool, one at a time.
func planSequential(ctx context.Context, w Workload) (doc Document, err error) {
	return planSequentialShare(ctx, w, 1)
}

// planSequentialShare is planSequential with the improvement phase's least
// work scaled by share (prepared.improvementShare).
func planSequentialShare(ctx context.Context, w Workload, share float64) (Document, error) {
	return keptOneAtATime(ctx, w, share, func() (Document, error) { return searchSequentialShare(ctx, w, share) })
}

// searchSequentialShare is planSequentialShare without the plans kept.
func searchSequentialShare(ctx context.Context, w Workload, share float64) (doc Document, err error) {
	if now := w.Pool.Now; now != nil && len(now.Held) > 0 {
		// One step at a time, the plan starts when the pool is free.
		by := now.freeAt()
		doc, err := planSequentialShare(ctx, afterHeld(w, by), share)
		return shiftedBack(doc, w.Origin, by), err
	}
	p, err := prepare(w)
	if err != nil {
		return Document{}, err
	}
	p.improvementShare = share
	p.budget = &budget{ctx: ctx}
	defer recoverBudget(&err)
	p.budget.check()
	p.noPlan = p.provablyLate()
	doc = p.plan()
	if doc.Chosen.Feasible || w.Planning.GridOnly || p.noPlan {
		return doc, nil
	}
	// Neither order is best for every workload: steps run one at a time
	// and are not pre-empted, so least laxity first can start a batch
	// that makes a query with an earlier deadline late, and the other way
	// round. When the workload's order misses a deadline, the other is
	// tried, and its plan taken when it meets every deadline; the plan
	// carries the order, which dispatch then follows. The published
	// method (GridOnly) keeps the one order it was given.
	other := *p
	other.w.Planning.Policy = otherPolicy(w.Planning.Policy)
	if alt := other.plan(); alt.Chosen.Feasible {
		return alt, nil
	}
	return doc, nil
}

// otherPolicy is the order that is not policy.
func otherPolicy(policy Policy) Policy {
	if policy == EarliestDeadline {
		return LeastLaxity
	}
	return EarliestDeadline
}

// plan is the search of Plan on a prepared workload.
func (p *prepared) plan() Document {
	w := p.w
	doc := Document{Schedule: w.Name, Origin: w.Origin}
	// Each order's search measures its own grid: the improvement phase's
	// share is of this search's work, not of an earlier order's too.
	searchStart := p.budget.events
	factors := make([]factorLayouts, len(w.Planning.BatchSizeFactors))
	for i, f := range w.Planning.BatchSizeFactors {
		factors[i] = p.factorLayouts(f)
	}
	var feasible []*outcome
	for size := range w.Pool.Sizes {
		for _, f := range factors {
			p.budget.check()
			o := p.candidate(size, f)
			doc.Candidates = append(doc.Candidates, o.Candidate)
			if o.Feasible {
				feasible = append(feasible, o)
			}
		}
	}
	// Costs within rounding of the cheapest tie and go to the other cost.
	// The band is measured from the cheapest, not from one tie to the next,
	// so that a chain of near-ties cannot drift above it.
	cheapest := math.Inf(1)
	for _, o := range feasible {
		cheapest = min(cheapest, o.objectiveCost(w.Planning.Objective))
	}
	var best *outcome
	for _, o := range feasible {
		if o.objectiveCost(w.Planning.Objective) <= cheapest+costTolerance && (best == nil || o.better(best, w.Planning.Objective)) {
			best = o
		}
	}
	var failure *Failure
	start, initial := best, 0
	if best == nil {
		start, best, failure = p.closest(factors)
	} else {
		initial = sizeIndex(w.Pool.Sizes, best.InitialNodes)
	}
	if start != nil && !w.Planning.GridOnly && !p.noPlan {
		// The phase accepts a move that ties on the objective within
		// rounding and wins on the other cost, so a chain of such moves
		// can drift above the cheapest candidate; that plan is not taken.
		grid := p.budget.events - searchStart
		least := minImprovementEvents
		if share := p.improvementShare; share > 0 {
			least = int(share * minImprovementEvents)
		}
		until := p.budget.events + max(improvementShare*grid, least)
		if o := p.improve(start, initial, until); o != nil && (failure != nil || o.better(best, w.Planning.Objective) && o.objectiveCost(w.Planning.Objective) <= cheapest+costTolerance) {
			best, failure = o, nil
		}
	}
	p.fill(&doc, best, failure)
	return doc
}

// sizeIndex is the index of nodes in sizes (0 when absent).
func sizeIndex(sizes []int, nodes int) int {
	for i, s := range sizes {
		if s == nodes {
			return i
		}
	}
	return 0
}

// newSim is a simulation of layouts, in their readyOrder, on the
// workload's pool under the search's budget.
func (p *prepared) newSim(ls []layout, order readyOrder) *sim {
	return p.resetSim(new(sim), ls, order)
}

// resetSim is newSim in the storage of s, a simulation no longer read.
func (p *prepared) resetSim(s *sim, ls []layout, order readyOrder) *sim {
	s.reset(ls, order, p.w.Pool.Sizes, p.w.Planning.Policy)
	s.budget = p.budget
	if p.w.Pool.Now != nil {
		if p.readyAt == nil {
			p.readyAt = make([]float64, len(p.w.Pool.Sizes))
			for i, n := range p.w.Pool.Sizes {
				p.readyAt[i] = p.w.Pool.readyAt(n)
			}
		}
		s.readyAt = p.readyAt
	}
	return s
}

// costTolerance is how far apart two costs may be and still tie: rounding,
// not a saving.
const costTolerance = 1e-9

// ranked are a plan's two bills in the order the objective ranks plans
// by: its own first, the other to break ties.
func (objective Objective) ranked(instant, executable float64) (first, second float64) {
	if objective == Instant {
		return instant, executable
	}
	return executable, instant
}

// objectiveCost is the cost the objective ranks plans by.
func (o *outcome) objectiveCost(objective Objective) float64 {
	first, _ := objective.ranked(o.Cost, o.ExecutableCost)
	return first
}

// better orders feasible candidates by the objective's cost, then the other
// cost.
func (o *outcome) better(than *outcome, objective Objective) bool {
	const tolerance = costTolerance
	first, second := objective.ranked(o.Cost, o.ExecutableCost)
	thanFirst, thanSecond := objective.ranked(than.Cost, than.ExecutableCost)
	switch {
	case first < thanFirst-tolerance:
		return true
	case first > thanFirst+tolerance:
		return false
	case second < thanSecond-tolerance:
		return true
	case second > thanSecond+tolerance:
		return false
	case o.MaxNodes != than.MaxNodes:
		return o.MaxNodes < than.MaxNodes
	case o.BatchSizeFactor != than.BatchSizeFactor:
		return o.BatchSizeFactor < than.BatchSizeFactor
	default:
		return o.InitialNodes < than.InitialNodes
	}
}

// factorLayouts is what every candidate of one batch-size factor shares:
// the batches, and whether they fail even with every batch on the largest
// pool size from the start.
type factorLayouts struct {
	factor  int
	layouts []layout
	order   readyOrder
	// hopeless is the paper's "a feasible schedule is not possible even on
	// reaching the maximum number of nodes" (section 3.1), tested once up
	// front: backtracking only ever gives batches sizes up to the largest,
	// so a workload that fails with all of them on it cannot be rescued by
	// moving the restart index one batch at a time, and the O(batches²)
	// walk back through every size would be wasted.
	hopeless bool
}

func (p *prepared) factorLayouts(factor int) factorLayouts {
	ls := p.layouts(factor, p.w.Pool.Sizes)
	order := firstReadyOrder(ls)
	probe := p.newSim(ls, order)
	hopeless := probe.run(nodePolicy{fixed: len(p.w.Pool.Sizes) - 1}, stopOnNegativeSlack) != nil
	return factorLayouts{factor: factor, layouts: ls, order: order, hopeless: hopeless}
}

// layouts cuts every query into the batches of one factor, ready to be
// simulated on the given pool sizes.
func (p *prepared) layouts(factor int, sizes []int) []layout {
	ls := make([]layout, len(p.w.Queries))
	for i, q := range p.w.Queries {
		ls[i] = newLayout(i, q, p.arrivals[i], p.costs[i], p.unitSize[i], p.limit[i], factor)
		ls[i].precompute(sizes)
	}
	return ls
}

// candidate simulates one (initial size, factor) cell: GenSchedule, then the
// segment re-planning and idle release of section 3.2.
func (p *prepared) candidate(initial int, f factorLayouts) *outcome {
	s := p.newSim(f.layouts, f.order)
	o := &outcome{Candidate: Candidate{InitialNodes: p.w.Pool.Sizes[initial], BatchSizeFactor: f.factor}, sim: s}
	if f.hopeless || !s.genSchedule(0, initial, p.w.Planning.BacktrackStep) {
		return o
	}
	s.replanSegments(initial, p.w.Planning.BacktrackStep)
	p.price(o)
	o.Feasible = true
	return o
}

// price builds a simulated schedule's timelines and costs.
func (p *prepared) price(o *outcome) {
	pool := p.w.Pool
	o.nodes = o.sim.timeline(pool.IdleNodes, pool.BillingMinimum)
	o.requests = RequestTimeline(o.nodes, pool)
	o.Cost = Cost(o.nodes, pool)
	o.ExecutableCost = Cost(o.requests, pool)
	for _, e := range o.sim.entries {
		o.MaxNodes = max(o.MaxNodes, pool.Sizes[e.nodes])
	}
}

// closest handles a workload no candidate can meet: every factor runs to
// completion on the largest pool size. The improvement phase starts from
// the one whose first late query (the late query with the earliest
// deadline) is least late, start; when it cannot make a plan that meets
// every deadline, the plan is the one that makes the fewest queries late,
// then the least late in all, best, and its first late query is reported.
// A re-plan made when a window is already behind takes it, so it must lose
// as few deadlines as it can, not only save the earliest: steps run one at
// a time, and a plan that saves one query by cutting the others' remaining
// tuples into many small batches pays their start-ups in every later
// query's tail.
func (p *prepared) closest(factors []factorLayouts) (start, best *outcome, failure *Failure) {
	largest := len(p.w.Pool.Sizes) - 1
	var startFailure *Failure
	var bestLate int
	var bestSeconds float64
	for _, f := range factors {
		// The slack test says which query fails first when every query
		// finishes in time but only by rounding; the full run says by how
		// much the first late query misses otherwise.
		probe := p.newSim(f.layouts, f.order)
		fail := probe.run(nodePolicy{fixed: largest}, stopOnNegativeSlack)
		s := p.newSim(f.layouts, f.order)
		s.run(nodePolicy{fixed: largest}, runToEnd)
		o := &outcome{Candidate: Candidate{InitialNodes: p.w.Pool.Sizes[largest], BatchSizeFactor: f.factor}, sim: s}
		p.price(o)
		f := s.firstLate()
		if f == nil && fail != nil {
			f = &Failure{Query: s.layouts[fail.query].name, LateSeconds: -fail.slack}
		}
		if f == nil {
			// Feasible on the largest size after all: the initial size
			// search ruled it out only by rounding.
			continue
		}
		if start == nil || f.LateSeconds < startFailure.LateSeconds {
			start, startFailure = o, f
		}
		late, seconds := s.lateness()
		if late == 0 {
			late, seconds = 1, f.LateSeconds
		}
		if best == nil || late < bestLate || late == bestLate && (seconds < bestSeconds || seconds == bestSeconds && f.LateSeconds < failure.LateSeconds) {
			best, failure, bestLate, bestSeconds = o, f, late, seconds
		}
	}
	return start, best, failure
}

// lateness is how many queries finish after their deadline and by how many
// seconds in all.
func (s *sim) lateness() (int, float64) {
	late, seconds := 0, 0.0
	finish, due := s.finals()
	for q, end := range finish {
		if over := end - due[q]; over > eps {
			late++
			seconds += over
		}
	}
	return late, seconds
}

// finals is, for each query, when its final merge ends and when it must
// end by: its deadline less the tail headroom on the nodes the merge runs
// on (layout.due), or the deadline while it has none.
func (s *sim) finals() (finish, due []float64) {
	finish, due = make([]float64, len(s.layouts)), make([]float64, len(s.layouts))
	for q := range s.layouts {
		due[q] = s.layouts[q].deadline
	}
	for _, e := range s.entries {
		if l := &s.layouts[e.query]; e.batch+1 == l.batches() {
			finish[e.query], due[e.query] = e.end, l.due[e.nodes]
		}
	}
	return finish, due
}

// finishes is each query's final-merge end time.
func (s *sim) finishes() []float64 {
	finish := make([]float64, len(s.layouts))
	for _, e := range s.entries {
		if e.batch+1 == s.layouts[e.query].batches() {
			finish[e.query] = e.end
		}
	}
	return finish
}

func (s *sim) firstLate() *Failure {
	var f *Failure
	deadline := math.Inf(1)
	finish, due := s.finals()
	for q, end := range finish {
		l := &s.layouts[q]
		if end > due[q]+eps && l.deadline < deadline {
			f, deadline = &Failure{Query: l.name, LateSeconds: end - due[q]}, l.deadline
		}
	}
	return f
}

// fill writes the chosen outcome into the document.
func (p *prepared) fill(doc *Document, o *outcome, failure *Failure) {
	doc.Chosen = Chosen{
		InitialNodes: o.InitialNodes, BatchSizeFactor: o.BatchSizeFactor,
		Cost: o.Cost, ExecutableCost: o.ExecutableCost,
		MaxNodes: o.MaxNodes, Feasible: failure == nil, Improved: o.Improved, Policy: p.w.Planning.Policy, Failure: failure,
	}
	finish := o.sim.finishes()
	for q, l := range o.sim.layouts {
		doc.Queries = append(doc.Queries, QueryPlan{
			Name: l.name, BatchSize: l.size, Batches: l.batches(),
			Finish: finish[q], Deadline: l.deadline, Slack: l.deadline - finish[q], TailMargin: l.tailMargin,
		})
	}
	doc.Steps = o.sim.steps()
	doc.Nodes = o.nodes
	doc.Requests = o.requests
	if failure == nil {
		doc.MaxSupportedRateFactor = p.maxRateFactor(o)
	}
}

// maxRateFactor is section 5's maximum supported rate: the largest factor ρ
// (to 1%) by which every query's rate can grow — the window's total growing
// with it, as in the pessimistic model — while the plan's node timeline and
// batch sizes, held fixed, still finish every query by its deadline. The
// replay runs the same policy with each step on the nodes the timeline holds
// when it starts (at least the initial size). The plan itself shows ρ = 1
// works; the search doubles the step until a factor fails, then bisects,
// assuming more arrivals never make the schedule easier.
func (p *prepared) maxRateFactor(o *outcome) float64 {
	initial := 0
	for i, size := range p.w.Pool.Sizes {
		if size == o.InitialNodes {
			initial = i
		}
	}
	const maxPercent = 100 * 100
	holds := func(percent int) bool {
		p.budget.check()
		return p.replay(o, initial, float64(percent)/100)
	}
	good, bad := 100, 0
	for step := 1; bad == 0; step *= 2 {
		next := good + step
		if next > maxPercent {
			return maxPercent / 100
		}
		if holds(next) {
			good = next
		} else {
			bad = next
		}
	}
	for bad-good > 1 {
		mid := (good + bad) / 2
		if holds(mid) {
			good = mid
		} else {
			bad = mid
		}
	}
	return float64(good) / 100
}

// replay runs the chosen plan's batch sizes on its node timeline with every
// rate multiplied by rho.
//
// A factor whose batches would exceed the work bound counts as not held, so
// that the search for ρ stays within the bound the plan itself met.
func (p *prepared) replay(o *outcome, initial int, rho float64) bool {
	ls := make([]layout, len(p.w.Queries))
	arrs := make([]arrivals, len(p.w.Queries))
	work := 0.0
	for i, q := range p.w.Queries {
		arrs[i] = newArrivals(q, rho)
		work += float64(ceilDiv(arrs[i].total(), o.sim.layouts[i].size)) + 1
	}
	if work > float64(p.w.Planning.maxSteps()) {
		return false
	}
	for i, q := range p.w.Queries {
		planned := &o.sim.layouts[i]
		arr := arrs[i]
		ls[i] = layoutOf(i, q, arr, p.costs[i], recut(planned, arr.total()))
		if planned.partialEvery > 0 {
			ls[i].partialEvery = planned.partialEvery
		}
		if planned.cutAfter != nil {
			// Slices end where they were planned to, at the batches they
			// ended after.
			last := len(ls[i].to) - 1
			ls[i].cutAfter = slices.DeleteFunc(slices.Clone(planned.cutAfter), func(c int) bool { return c >= last })
		}
		ls[i].precompute(p.w.Pool.Sizes)
	}
	sizes := p.w.Pool.Sizes
	levels := o.nodes
	nodesAt := func(t float64) int {
		// The level in force at t, on the plan's own pool sizes.
		i := searchLevels(levels, t)
		level := max(levels[i].Nodes, sizes[initial])
		idx := initial
		for idx+1 < len(sizes) && sizes[idx+1] <= level {
			idx++
		}
		return idx
	}
	s := p.newSim(ls, firstReadyOrder(ls))
	return s.run(nodePolicy{at: nodesAt}, stopWhenLate) == nil
}

// recut is a planned layout's batches over a different total: its cut
// points below the total as planned, and the tuples after the last of them
// cut into batches of the layout's batch size, as dispatch cuts them when
// more tuples come than the plan expected.
func recut(planned *layout, total int64) []int64 {
	ends := make([]int64, 0, len(planned.to))
	for _, to := range planned.to[:len(planned.to)-1] {
		if to >= total {
			break
		}
		ends = append(ends, to)
	}
	from := int64(0)
	if n := len(ends); n > 0 {
		from = ends[n-1]
	}
	for from < total {
		from = min(from+planned.size, total)
		ends = append(ends, from)
	}
	return ends
}

// searchLevels is the index of the timeline point in force at t.
func searchLevels(levels []NodeLevel, t float64) int {
	lo, hi := 0, len(levels)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if levels[mid].At <= t+eps {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// InvalidError is a workload the planner cannot plan. Query names the query
// at fault, or is empty when the schedule is; the message names the field.
type InvalidError struct {
	Schedule, Query string
	Err             error
}

func (e *InvalidError) Error() string {
	if e.Query == "" {
		return fmt.Sprintf("schedule %q: %v", e.Schedule, e.Err)
	}
	return fmt.Sprintf("query %q: %v", e.Query, e.Err)
}

func (e *InvalidError) Unwrap() error { return e.Err }

// prepare validates the workload and computes each query's arrivals, cost
// model and 1X batch size.
func prepare(w Workload) (*prepared, error) {
	if err := validatePool(w); err != nil {
		return nil, &InvalidError{Schedule: w.Name, Err: err}
	}
	if len(w.Queries) == 0 {
		return nil, &InvalidError{Schedule: w.Name, Err: errors.New("no queries to plan")}
	}
	if margin := w.Planning.RuntimeMargin; !(margin >= 0 && margin <= 10) {
		return nil, &InvalidError{Schedule: w.Name, Err: fmt.Errorf("spec.planning.runtimeMarginPercent: %g%% is not between 0 and 1000", 100*margin)}
	}
	p := &prepared{w: w}
	seen := map[string]bool{}
	for _, q := range w.Queries {
		if seen[q.Name] {
			return nil, &InvalidError{Schedule: w.Name, Err: fmt.Errorf("query %q appears twice", q.Name)}
		}
		seen[q.Name] = true
		if err := validateQuery(q); err != nil {
			return nil, &InvalidError{Schedule: w.Name, Query: q.Name, Err: err}
		}
		arr := newArrivals(q, 1)
		// The margin scales every coefficient, and so every duration.
		m := q.Planned(w.Planning)
		cost := costModel{
			batchOverhead: m.Batch.Overhead, batchSerial: m.Batch.Serial, batchParallel: m.Batch.Parallel,
			mergeOverhead: m.Merge.Overhead, mergeSerial: m.Merge.Serial, mergeParallel: m.Merge.Parallel,
		}
		if n := arr.cum[len(arr.cum)-1]; n > MaxTuples {
			return nil, &InvalidError{Schedule: w.Name, Query: q.Name, Err: fmt.Errorf(
				"spec.input: %s tuples arrive in the window; at most %s are supported: lower spec.input.ratePerSecond or spec.input.totalTuples, or shorten spec.window",
				countWords(n), countWords(MaxTuples))}
		}
		total := arr.total()
		if total < 1 {
			return nil, &InvalidError{Schedule: w.Name, Query: q.Name, Err: errors.New("spec.input: no tuples arrive in the window")}
		}
		x, limit, err := unitBatchSize(cost, total, q.Granularity, w.Pool.Sizes[0], w.Planning.MaxBatchDuration)
		if err != nil {
			return nil, &InvalidError{Schedule: w.Name, Query: q.Name, Err: fmt.Errorf("spec.costModel.batch: %w", err)}
		}
		p.arrivals = append(p.arrivals, arr)
		p.costs = append(p.costs, cost)
		p.unitSize = append(p.unitSize, x)
		p.limit = append(p.limit, limit)
		p.cuts = append(p.cuts, cutTuples(q, arr))
	}
	if err := p.checkWork(); err != nil {
		return nil, err
	}
	return p, nil
}

// stepsAt is how many steps (batches and merges) query i is cut into at
// factor, and how many of them are batches, computed without cutting it.
func (p *prepared) stepsAt(i int, total int64, factor int) (steps, batches float64) {
	size := batchSize(p.unitSize[i], p.limit[i], factor)
	k := ceilDiv(total, size) + int64(len(p.w.Queries[i].Cuts))
	steps = float64(k) + 1 + float64(len(p.w.Queries[i].Cuts))
	if phi := p.w.Queries[i].PartialEvery; phi > 0 {
		every := max(int64(math.Ceil(phi*float64(k)-1e-9)), 1)
		steps += float64((k - 1) / every)
	}
	return steps, float64(k)
}

// checkWork is the work bound: the smallest batch-size factor cuts the most
// steps, and every candidate simulates them, so their total decides the
// time and memory of the search.
func (p *prepared) checkWork() error {
	factor := p.w.Planning.BatchSizeFactors[0]
	for _, f := range p.w.Planning.BatchSizeFactors {
		factor = min(factor, f)
	}
	limit := float64(p.w.Planning.maxSteps())
	total, largest, largestSteps := 0.0, 0, 0.0
	for i := range p.w.Queries {
		steps, batches := p.stepsAt(i, p.arrivals[i].total(), factor)
		total += steps
		if steps > largestSteps {
			largest, largestSteps = i, steps
		}
		if steps > limit {
			return &InvalidError{Schedule: p.w.Name, Query: p.w.Queries[i].Name, Err: fmt.Errorf(
				"this window needs %s batches at %dX (%s steps with the merges); at most %s steps are supported: raise spec.planning.batchSizeFactors, shorten spec.window, or lower spec.input.ratePerSecond",
				countWords(batches), factor, countWords(steps), countWords(limit))}
		}
	}
	if total > limit {
		return &InvalidError{Schedule: p.w.Name, Query: p.w.Queries[largest].Name, Err: fmt.Errorf(
			"the schedule's %d queries need %s steps (batches and merges) together at %dX, this one %s; at most %s are supported: raise spec.planning.batchSizeFactors, shorten spec.window, or lower spec.input.ratePerSecond of the largest queries",
			len(p.w.Queries), countWords(total), factor, countWords(largestSteps), countWords(limit))}
	}
	return nil
}

func validatePool(w Workload) error {
	pool, planning := w.Pool, w.Planning
	if len(pool.Sizes) == 0 {
		return errors.New("spec.nodePool.sizes: at least one size is required")
	}
	for i, s := range pool.Sizes {
		if s < 1 || i > 0 && s <= pool.Sizes[i-1] {
			return fmt.Errorf("spec.nodePool.sizes: must be positive and strictly ascending, got %v", pool.Sizes)
		}
		if s > MaxNodes {
			return fmt.Errorf("spec.nodePool.sizes: at most %d nodes are supported, got %d", MaxNodes, s)
		}
	}
	for _, d := range []struct {
		field string
		value float64
	}{
		{"spec.nodePool.billingMinimum", pool.BillingMinimum},
		{"spec.nodePool.provisioningLeadTime", pool.ProvisioningLeadTime},
		{"spec.nodePool.releaseAfterIdle", pool.ReleaseAfterIdle},
	} {
		if err := checkDuration(d.field, d.value, MaxDuration); err != nil {
			return err
		}
	}
	if now := pool.Now; now != nil {
		switch {
		case now.Ready < 0 || now.Ready > MaxNodes || now.Requested < 0 || now.Requested > MaxNodes:
			return fmt.Errorf("the pool's current nodes: %d ready and %d requested, want 0 to %d", now.Ready, now.Requested, MaxNodes)
		case !finiteIn(now.RequestedBy, 0, MaxDuration) || !finiteIn(now.MoreBy, 0, MaxDuration):
			return fmt.Errorf("the pool's nodes are expected %s (requested) and %s (more) after the plan's origin, want 0s to %s", human(now.RequestedBy), human(now.MoreBy), human(MaxDuration))
		}
	}
	switch {
	case pool.IdleNodes < 0 || pool.IdleNodes > MaxNodes:
		return fmt.Errorf("spec.nodePool.idleNodes: must be between 0 and %d, got %d", MaxNodes, pool.IdleNodes)
	case !(pool.PricePerNodeHour > 0) || math.IsInf(pool.PricePerNodeHour, 0):
		return fmt.Errorf("spec.nodePool.pricePerNodeHour: must be a positive number, got %g", pool.PricePerNodeHour)
	case pool.PricePerNodeHour > MaxPricePerNodeHour:
		return fmt.Errorf("spec.nodePool.pricePerNodeHour: at most %g is supported, got %g", float64(MaxPricePerNodeHour), pool.PricePerNodeHour)
	case planning.MaxSteps < 0:
		return fmt.Errorf("planning work bound (maxSteps): must not be negative, got %d", planning.MaxSteps)
	case len(planning.BatchSizeFactors) == 0:
		return errors.New("spec.planning.batchSizeFactors: at least one factor is required")
	case planning.BacktrackStep < 1:
		return fmt.Errorf("spec.planning.backtrackStep: must be at least 1, got %d", planning.BacktrackStep)
	case !(planning.MaxBatchDuration > 0 && planning.MaxBatchDuration <= MaxDuration):
		return fmt.Errorf("spec.planning.maxBatchDuration: must be positive and at most %s, got %s", human(MaxDuration), human(planning.MaxBatchDuration))
	case planning.Policy != LeastLaxity && planning.Policy != EarliestDeadline:
		return fmt.Errorf("spec.planning.policy: must be %s or %s, got %q", LeastLaxity, EarliestDeadline, planning.Policy)
	case planning.Objective != "" && planning.Objective != Executable && planning.Objective != Instant:
		return fmt.Errorf("spec.planning.objective: must be %s or %s, got %q", Executable, Instant, planning.Objective)
	}
	for _, f := range planning.BatchSizeFactors {
		if f < 1 {
			return fmt.Errorf("spec.planning.batchSizeFactors: every factor must be at least 1, got %v", planning.BatchSizeFactors)
		}
	}
	return nil
}

func validateQuery(q Query) error {
	for _, c := range []struct {
		field string
		value float64
	}{{"spec.window.start", q.WindowStart}, {"spec.window.end", q.WindowEnd}, {"spec.deadline", q.Deadline}} {
		if !finiteIn(c.value, -maxCoordinate, maxCoordinate) {
			return fmt.Errorf("%s: %s from the plan origin is out of range", c.field, human(c.value))
		}
	}
	switch {
	case !(q.Margin >= 0 && q.Margin <= 10):
		return fmt.Errorf("the learned runtime margin %g%% is not between 0 and 1000", 100*q.Margin)
	case !(q.TailMargin >= 0 && q.TailMargin <= 10):
		return fmt.Errorf("the learned tail margin %g%% is not between 0 and 1000", 100*q.TailMargin)
	case !(q.WindowEnd > q.WindowStart):
		return errors.New("spec.window.end: must be after spec.window.start")
	case !(q.Deadline > q.WindowEnd):
		return errors.New("spec.deadline: must be after spec.window.end")
	case q.WindowEnd-q.WindowStart > MaxWindow:
		return fmt.Errorf("spec.window: lasts %s; at most %s (366 days) is supported", human(q.WindowEnd-q.WindowStart), human(MaxWindow))
	case q.Deadline-q.WindowEnd > MaxWindow:
		return fmt.Errorf("spec.deadline: is %s after spec.window.end; at most %s (366 days) is supported", human(q.Deadline-q.WindowEnd), human(MaxWindow))
	case q.Granularity < 1 || q.Granularity > MaxTuples:
		return fmt.Errorf("spec.input.granularity: must be between 1 and %g, got %d", float64(MaxTuples), q.Granularity)
	case !finiteIn(q.AllowedLateness, 0, MaxDuration):
		return fmt.Errorf("spec.input.allowedLateness: must be between 0s and %s, got %s", human(MaxDuration), human(q.AllowedLateness))
	case !(q.PartialEvery >= 0 && q.PartialEvery <= 1):
		return fmt.Errorf("spec.partialAggregation.every: must be in (0, 1], got %g", q.PartialEvery)
	case len(q.Rates) == 0:
		return errors.New("spec.input: a rate, total or profile is required")
	case q.Rates[0].Offset != 0:
		return errors.New("spec.input.profile[0].after: the first segment must start at 0s")
	}
	for i, r := range q.Rates {
		if i > 0 && !(r.Offset > q.Rates[i-1].Offset) {
			return fmt.Errorf("spec.input.profile[%d].after: offsets must increase", i)
		}
		if r.Offset >= q.WindowEnd-q.WindowStart {
			return fmt.Errorf("spec.input.profile[%d].after: must be inside the window", i)
		}
		if !finiteIn(r.TuplesPerSecond, 0, MaxRatePerSecond) {
			return fmt.Errorf("spec.input.profile[%d].ratePerSecond: must be a number between 0 and %g, got %g", i, float64(MaxRatePerSecond), r.TuplesPerSecond)
		}
	}
	for _, part := range []struct {
		field string
		model costmodel.Linear
	}{{"spec.costModel.batch", q.Cost.Batch}, {"spec.costModel.merge", q.Cost.Merge}} {
		if err := part.model.Validate(); err != nil {
			return fmt.Errorf("%s: %w", part.field, err)
		}
		if err := part.model.CheckBounds(MaxCoefficient); err != nil {
			return fmt.Errorf("%s: %w", part.field, err)
		}
	}
	return nil
}
