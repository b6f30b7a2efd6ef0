package planner

import (
	"errors"
	"fmt"
	"math"
)

// prepared is a validated workload with what every candidate shares.
type prepared struct {
	w        Workload
	arrivals []arrivals
	costs    []costModel
	// unitSize and limit are each query's 1X batch size and Cmax cap.
	unitSize, limit []int64
	windowStart     []float64
}

// outcome is one simulated candidate.
type outcome struct {
	Candidate
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
func Plan(w Workload) (Document, error) {
	p, err := prepare(w)
	if err != nil {
		return Document{}, err
	}
	doc := Document{Schedule: w.Name, Origin: w.Origin}
	factors := make([]factorLayouts, len(w.Planning.BatchSizeFactors))
	for i, f := range w.Planning.BatchSizeFactors {
		factors[i] = p.factorLayouts(f)
	}
	var best *outcome
	for size := range w.Pool.Sizes {
		for _, f := range factors {
			o := p.candidate(size, f)
			doc.Candidates = append(doc.Candidates, o.Candidate)
			if o.Feasible && (best == nil || o.better(best)) {
				best = o
			}
		}
	}
	var failure *Failure
	if best == nil {
		best, failure = p.closest(factors)
	}
	p.fill(&doc, best, failure)
	return doc, nil
}

// better orders feasible candidates.
func (o *outcome) better(than *outcome) bool {
	const tolerance = 1e-9
	switch {
	case o.Cost < than.Cost-tolerance:
		return true
	case o.Cost > than.Cost+tolerance:
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
	// hopeless is the seed's "a feasible schedule is not possible even on
	// reaching the maximum number of nodes" (section 3.1), tested once up
	// front: backtracking only ever gives batches sizes up to the largest,
	// so a workload that fails with all of them on it cannot be rescued by
	// moving the restart index one batch at a time, and the O(batches²)
	// walk back through every size would be wasted.
	hopeless bool
}

func (p *prepared) factorLayouts(factor int) factorLayouts {
	ls := p.layouts(factor, p.w.Pool.Sizes)
	probe := newSim(ls, p.w.Pool.Sizes, p.w.Planning.Policy)
	hopeless := probe.run(nodePolicy{fixed: len(p.w.Pool.Sizes) - 1}, stopOnNegativeSlack) != nil
	return factorLayouts{factor: factor, layouts: ls, hopeless: hopeless}
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
	s := newSim(f.layouts, p.w.Pool.Sizes, p.w.Planning.Policy)
	o := &outcome{Candidate: Candidate{InitialNodes: p.w.Pool.Sizes[initial], BatchSizeFactor: f.factor}, sim: s}
	if f.hopeless || !s.genSchedule(0, initial, p.w.Planning.BacktrackStep) {
		return o
	}
	s.replanSegments(initial, p.w.Planning.BacktrackStep)
	p.price(o, initial)
	o.Feasible = true
	return o
}

// price builds a simulated schedule's timelines and costs.
func (p *prepared) price(o *outcome, initial int) {
	pool := p.w.Pool
	o.nodes = o.sim.timeline(initial, pool.IdleNodes, pool.BillingMinimum, o.sim.busyIntervals(p.windowStart))
	o.requests = requests(o.nodes, pool.ProvisioningLeadTime, pool.ReleaseAfterIdle)
	o.Cost = Cost(o.nodes, pool)
	for _, e := range o.sim.entries {
		o.MaxNodes = max(o.MaxNodes, pool.Sizes[e.nodes])
	}
}

// closest handles a workload no candidate can meet: every factor runs to
// completion on the largest pool size, and the one whose first late query
// (the late query with the earliest deadline) is least late is reported.
func (p *prepared) closest(factors []factorLayouts) (*outcome, *Failure) {
	largest := len(p.w.Pool.Sizes) - 1
	var best *outcome
	var bestFailure *Failure
	for _, f := range factors {
		// The slack test says which query fails first when every query
		// finishes in time but only by rounding; the full run says by how
		// much the first late query misses otherwise.
		probe := newSim(f.layouts, p.w.Pool.Sizes, p.w.Planning.Policy)
		fail := probe.run(nodePolicy{fixed: largest}, stopOnNegativeSlack)
		s := newSim(f.layouts, p.w.Pool.Sizes, p.w.Planning.Policy)
		s.run(nodePolicy{fixed: largest}, runToEnd)
		o := &outcome{Candidate: Candidate{InitialNodes: p.w.Pool.Sizes[largest], BatchSizeFactor: f.factor}, sim: s}
		p.price(o, largest)
		f := s.firstLate()
		if f == nil && fail != nil {
			f = &Failure{Query: s.layouts[fail.query].name, LateSeconds: -fail.slack}
		}
		if f == nil {
			// Feasible on the largest size after all: the initial size
			// search ruled it out only by rounding.
			continue
		}
		if best == nil || f.LateSeconds < bestFailure.LateSeconds {
			best, bestFailure = o, f
		}
	}
	return best, bestFailure
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
	for q, end := range s.finishes() {
		l := &s.layouts[q]
		if end > l.deadline+eps && l.deadline < deadline {
			f, deadline = &Failure{Query: l.name, LateSeconds: end - l.deadline}, l.deadline
		}
	}
	return f
}

// fill writes the chosen outcome into the document.
func (p *prepared) fill(doc *Document, o *outcome, failure *Failure) {
	doc.Chosen = Chosen{
		InitialNodes: o.InitialNodes, BatchSizeFactor: o.BatchSizeFactor,
		Cost: o.Cost, ExecutableCost: Cost(o.requests, p.w.Pool),
		MaxNodes: o.MaxNodes, Feasible: failure == nil, Failure: failure,
	}
	finish := o.sim.finishes()
	for q, l := range o.sim.layouts {
		doc.Queries = append(doc.Queries, QueryPlan{
			Name: l.name, BatchSize: l.size, Batches: l.batches(),
			Finish: finish[q], Deadline: l.deadline, Slack: l.deadline - finish[q],
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
	holds := func(percent int) bool { return p.replay(o, initial, float64(percent)/100) }
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
func (p *prepared) replay(o *outcome, initial int, rho float64) bool {
	ls := make([]layout, len(p.w.Queries))
	for i, q := range p.w.Queries {
		planned := &o.sim.layouts[i]
		arr := newArrivals(q, rho)
		ls[i] = newLayout(i, q, arr, p.costs[i], planned.size, planned.size, 1)
		if planned.partialEvery > 0 {
			ls[i].partialEvery = planned.partialEvery
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
	s := newSim(ls, sizes, p.w.Planning.Policy)
	return s.run(nodePolicy{at: nodesAt}, stopWhenLate) == nil
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
		m := q.Cost.Scaled(1 + w.Planning.RuntimeMargin)
		cost := costModel{
			batchOverhead: m.Batch.Overhead, batchSerial: m.Batch.Serial, batchParallel: m.Batch.Parallel,
			mergeOverhead: m.Merge.Overhead, mergeSerial: m.Merge.Serial, mergeParallel: m.Merge.Parallel,
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
		p.windowStart = append(p.windowStart, q.WindowStart)
	}
	return p, nil
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
	}
	switch {
	case pool.IdleNodes < 0:
		return fmt.Errorf("spec.nodePool.idleNodes: must not be negative, got %d", pool.IdleNodes)
	case !(pool.PricePerNodeHour > 0) || math.IsInf(pool.PricePerNodeHour, 0):
		return fmt.Errorf("spec.nodePool.pricePerNodeHour: must be a positive number, got %g", pool.PricePerNodeHour)
	case pool.BillingMinimum < 0 || pool.ProvisioningLeadTime < 0 || pool.ReleaseAfterIdle < 0:
		return errors.New("spec.nodePool: billingMinimum, provisioningLeadTime and releaseAfterIdle must not be negative")
	case len(planning.BatchSizeFactors) == 0:
		return errors.New("spec.planning.batchSizeFactors: at least one factor is required")
	case planning.BacktrackStep < 1:
		return fmt.Errorf("spec.planning.backtrackStep: must be at least 1, got %d", planning.BacktrackStep)
	case !(planning.MaxBatchDuration > 0):
		return fmt.Errorf("spec.planning.maxBatchDuration: must be positive, got %gs", planning.MaxBatchDuration)
	case planning.Policy != LeastLaxity && planning.Policy != EarliestDeadline:
		return fmt.Errorf("spec.planning.policy: must be %s or %s, got %q", LeastLaxity, EarliestDeadline, planning.Policy)
	}
	for _, f := range planning.BatchSizeFactors {
		if f < 1 {
			return fmt.Errorf("spec.planning.batchSizeFactors: every factor must be at least 1, got %v", planning.BatchSizeFactors)
		}
	}
	return nil
}

func validateQuery(q Query) error {
	switch {
	case !(q.WindowEnd > q.WindowStart):
		return errors.New("spec.window.end: must be after spec.window.start")
	case !(q.Deadline > q.WindowEnd):
		return errors.New("spec.deadline: must be after spec.window.end")
	case q.Granularity < 1:
		return fmt.Errorf("spec.input.granularity: must be at least 1, got %d", q.Granularity)
	case q.AllowedLateness < 0:
		return errors.New("spec.input.allowedLateness: must not be negative")
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
		if !(r.TuplesPerSecond >= 0) || math.IsInf(r.TuplesPerSecond, 0) {
			return fmt.Errorf("spec.input.profile[%d].ratePerSecond: must be a non-negative number", i)
		}
	}
	if err := q.Cost.Batch.Validate(); err != nil {
		return fmt.Errorf("spec.costModel.batch: %w", err)
	}
	if err := q.Cost.Merge.Validate(); err != nil {
		return fmt.Errorf("spec.costModel.merge: %w", err)
	}
	return nil
}
