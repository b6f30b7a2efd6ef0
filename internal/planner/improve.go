package planner

import "slices"

// The grid search gives every query the same batch-size factor and every
// batch of a query the same size. The improvement phase starts from the best
// grid plan (or, when none meets every deadline, from the one that comes
// closest) and reshapes one query's batches at a time: two neighbouring
// batches merged, one split in two, a boundary moved by whole units, or the
// query cut anew into one batch more or fewer. Each shape is planned the way
// a grid cell is (the least-laxity simulation, backtracking to larger sizes,
// segments after idle gaps re-planned from the initial size) and priced by
// the objective, so every plan it returns keeps the model's invariants. A
// move is kept when it makes the plan less late or, once on time, cheaper.

// The improvement phase may simulate improvementShare times as many events
// as the grid search did, and at least minImprovementEvents: a small
// multiple of the grid's work on large workloads, and enough on small ones
// to reshape every query many times. The bound counts work, not time, so
// the plan is the same on any machine.
const (
	improvementShare     = 2
	minImprovementEvents = 1 << 16
)

// reserveSeconds is the slack the improvement phase leaves every query, or
// as much as the grid plan it starts from left it when that is less. The
// cheapest reshaping often ends a query exactly at its deadline, and the
// seconds the cost model does not hold (a pod's start, the operator seeing
// a step end and launching the next) would make such a plan late.
const reserveSeconds = 30

// shape is every query's batch ends, in tuples.
type shape [][]int64

// shapeOf is the batch ends of a simulated outcome.
func shapeOf(o *outcome) shape {
	sh := make(shape, len(o.sim.layouts))
	for i := range o.sim.layouts {
		sh[i] = slices.Clone(o.sim.layouts[i].to)
	}
	return sh
}

// trial is a shape planned: the outcome, and how late it is when it meets
// no deadline plan (0 when feasible).
type trial struct {
	o    *outcome
	late float64
}

// better orders trials: less late first, then by the objective.
func (t trial) better(than trial, objective Objective) bool {
	const tolerance = 1e-9
	switch {
	case t.late < than.late-tolerance:
		return true
	case t.late > than.late+tolerance:
		return false
	case t.late > 0:
		return false
	}
	return t.o.better(than.o, objective)
}

// improver is the state of one improvement phase.
type improver struct {
	p       *prepared
	factor  int
	initial int
	// reserve is, by query, the slack a reshaped plan must leave it.
	reserve []float64
	// until is the budget's event count the phase stops at.
	until int
}

// spent reports whether the phase has used its share of the work.
func (im *improver) spent() bool { return im.p.budget.events >= im.until }

// improve returns a reshaped plan that meets every deadline and is better
// than start, or nil when it finds none.
func (p *prepared) improve(start *outcome, initial int) *outcome {
	grid := p.budget.events
	im := &improver{p: p, factor: start.BatchSizeFactor, initial: initial, reserve: make([]float64, len(start.sim.layouts))}
	for q, end := range start.sim.finishes() {
		im.reserve[q] = min(reserveSeconds, max(start.sim.layouts[q].deadline-end, 0))
	}
	im.until = grid + max(improvementShare*grid, minImprovementEvents)
	sh := shapeOf(start)
	cur := im.plan(sh)
	if cur.o == nil {
		return nil
	}
	improved := false
	objective := p.w.Planning.Objective
	// Queries are visited in turn; one whose move helped is tried again,
	// and the phase ends after a whole turn of queries helped none.
	for q, unhelped := 0, 0; unhelped < len(sh) && !im.spent(); {
		helped := false
		for _, ends := range im.moves(q, sh[q]) {
			if im.spent() {
				break
			}
			next := slices.Clone(sh)
			next[q] = ends
			if t := im.plan(next); t.o != nil && t.better(cur, objective) {
				cur, sh, helped, improved = t, next, true, true
				break
			}
		}
		if helped {
			unhelped = 0
			continue
		}
		unhelped++
		q = (q + 1) % len(sh)
	}
	if !improved || cur.late > 0 {
		return nil
	}
	cur.o.Improved = true
	return cur.o
}

// plan plans a shape as a grid cell is planned, from the phase's initial
// size; when that meets no deadline with the reserve, from every larger
// one, and when none does, it measures how late the shape is, against the
// deadlines less the reserve, on the largest size.
func (im *improver) plan(sh shape) trial {
	p := im.p
	ls := make([]layout, len(sh))
	for i, ends := range sh {
		ls[i] = layoutOf(i, p.w.Queries[i], p.arrivals[i], p.costs[i], ends)
		ls[i].precompute(p.w.Pool.Sizes)
	}
	for initial := im.initial; initial < len(p.w.Pool.Sizes); initial++ {
		s := p.newSim(ls)
		if !s.genSchedule(0, initial, p.w.Planning.BacktrackStep) {
			continue
		}
		s.replanSegments(initial, p.w.Planning.BacktrackStep)
		if im.short(s) > 0 {
			continue
		}
		o := &outcome{Candidate: Candidate{InitialNodes: p.w.Pool.Sizes[initial], BatchSizeFactor: im.factor, Feasible: true}, sim: s}
		p.price(o)
		return trial{o: o}
	}
	largest := len(p.w.Pool.Sizes) - 1
	s := p.newSim(ls)
	s.run(nodePolicy{fixed: largest}, runToEnd)
	o := &outcome{Candidate: Candidate{InitialNodes: p.w.Pool.Sizes[largest], BatchSizeFactor: im.factor}, sim: s}
	p.price(o)
	return trial{o: o, late: max(im.short(s), 1e-6)}
}

// short is how many seconds, summed over the queries, s finishes them past
// their deadlines less their reserves.
func (im *improver) short(s *sim) float64 {
	const tolerance = 1e-9
	late := 0.0
	for q, end := range s.finishes() {
		if over := end - (s.layouts[q].deadline - im.reserve[q]); over > tolerance {
			late += over
		}
	}
	return late
}

// moves are the shapes one move away from query q's batch ends, in the
// order they are tried: merges first (fewer batches, less overhead), then
// splits, then boundaries moved by a unit either way, then the query cut
// anew into one batch fewer or one more.
func (im *improver) moves(q int, ends []int64) [][]int64 {
	p := im.p
	unit := p.w.Queries[q].Granularity
	limit := p.limit[q]
	total := ends[len(ends)-1]
	from := func(i int) int64 {
		if i == 0 {
			return 0
		}
		return ends[i-1]
	}
	var out [][]int64
	// Merge batch i with batch i+1.
	for i := 0; i+1 < len(ends); i++ {
		if ends[i+1]-from(i) <= limit {
			out = append(out, slices.Delete(slices.Clone(ends), i, i+1))
		}
	}
	// Split batch i at a whole unit near its middle.
	for i := range ends {
		units := (ends[i] - from(i)) / unit
		if units < 2 {
			continue
		}
		cut := from(i) + units/2*unit
		out = append(out, slices.Insert(slices.Clone(ends), i, cut))
	}
	// Move the boundary after batch i by one unit either way.
	for i := 0; i+1 < len(ends); i++ {
		for _, d := range []int64{-unit, unit} {
			at := ends[i] + d
			if at <= from(i) || at >= ends[i+1] || at-from(i) > limit || ends[i+1]-at > limit {
				continue
			}
			moved := slices.Clone(ends)
			moved[i] = at
			out = append(out, moved)
		}
	}
	// Cut anew into one batch fewer or one more, of equal whole-unit sizes.
	for _, k := range []int{len(ends) - 1, len(ends) + 1} {
		if cut, ok := evenCut(total, unit, limit, k); ok {
			out = append(out, cut)
		}
	}
	return out
}

// evenCut cuts total tuples into k batches of whole units as equal as they
// can be, the larger ones first, each at most limit tuples.
func evenCut(total, unit, limit int64, k int) ([]int64, bool) {
	units := ceilDiv(total, unit)
	if k < 1 || int64(k) > units {
		return nil, false
	}
	ends := make([]int64, 0, k)
	at := int64(0)
	for i := range k {
		n := units / int64(k)
		if int64(i) < units%int64(k) {
			n++
		}
		size := min(n*unit, total-at)
		if size > limit {
			return nil, false
		}
		at += size
		ends = append(ends, at)
	}
	return ends, true
}
