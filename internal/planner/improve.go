package planner

import (
	"iter"
	"slices"
)

// The grid search gives every query the same batch-size factor and every
// batch of a query the same size. The improvement phase starts from the best
// grid plan (or, when none meets every deadline, from the one that comes
// closest) and reshapes it: one query's batches at a time (two neighbouring
// batches merged, one split in two, a boundary moved by whole units, or the
// query cut anew into one batch more or fewer) or every query's at once
// (each last boundary moved, or each query cut into one batch more or
// fewer). Each shape is planned the way a grid cell is (the least-laxity
// simulation, backtracking to larger sizes, segments after idle gaps
// re-planned from the initial size) and priced by the objective, so every
// plan it returns keeps the model's invariants. A move is kept when it
// makes the plan less late or, once on time, cheaper.

// The improvement phase may simulate improvementShare times as many events
// as the grid search did, and at least minImprovementEvents: the grid's
// own work on large workloads, and on small ones enough to reshape every
// query many times, on a pool capped at each smaller peak and on one free
// to grow. The bound counts work, not time, so the plan is the same on any
// machine; what the phase cannot improve within it, it leaves.
const (
	improvementShare     = 1
	minImprovementEvents = 1 << 18
)

// reserveSeconds is the slack the improvement phase leaves every query, or
// as much as the grid plan it starts from left it when that is less. The
// cheapest reshaping often ends a query exactly at its deadline, and the
// seconds the cost model does not hold (a pod's start, the operator seeing
// a step end and launching the next) would make such a plan late.
const reserveSeconds = 30

// reserveShare caps the reserve at this share of the time from the window's
// end to the deadline: a query given 30 s after its window asks for a plan
// that uses them, and a reserve of all 30 would leave the phase nothing to
// reshape.
const reserveShare = 0.1

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

// improver is the state of one improvement phase.
type improver struct {
	p       *prepared
	factor  int
	initial int
	// sizes is how many of the pool's sizes, from the smallest, the pass
	// may use.
	sizes int
	// reserve is, by query, the slack a reshaped plan must leave it.
	reserve []float64
	// until is the budget's event count the phase stops at.
	until int
	// planned and layouts are the last shape planned and its layouts. A
	// move changes one query's batch ends and shares the others' slices,
	// which nothing writes to, so the next shape reuses the layouts of
	// every query whose ends are the same slice.
	planned shape
	layouts []layout
	order   readyOrder
	// spare holds the layouts of the last trial discarded, when it is
	// also the last planned, and idle simulations no plan holds: storage
	// the next trial reuses, so that a trial of a thousand queries does not
	// allocate its layouts and schedules anew.
	spare     []layout
	spareSims []*sim
}

// discard tells the improver that nothing holds trial t any more: its
// storage is the next trial's.
func (im *improver) discard(t trial) {
	if t.o == nil {
		return
	}
	if s := t.o.sim; len(s.layouts) > 0 && len(im.layouts) > 0 && &s.layouts[0] == &im.layouts[0] {
		im.spare = s.layouts
	}
	im.spareSims = append(im.spareSims, t.o.sim)
}

// newSim is a simulation of ls in order on the pool sizes the pass may
// use, in an idle simulation's storage when there is one.
func (im *improver) newSim(ls []layout, order readyOrder) *sim {
	var s *sim
	if n := len(im.spareSims); n > 0 {
		s, im.spareSims = im.spareSims[n-1], im.spareSims[:n-1]
	} else {
		s = new(sim)
	}
	im.p.resetSim(s, ls, order)
	s.sizes = s.sizes[:im.sizes]
	if s.readyAt != nil {
		s.readyAt = s.readyAt[:im.sizes]
	}
	return s
}

// sameEnds reports whether a and b are the same slice: the same batch ends,
// since no shape's ends are written after it is made.
func sameEnds(a, b []int64) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// spent reports whether the phase has used its share of the work.
func (im *improver) spent() bool { return im.p.budget.events >= im.until }

// improve returns a reshaped plan that meets every deadline and is better
// than start, or nil when it finds none.
//
// The executable bill charges every increase of the pool a provisioning
// lead time of nodes held idle, and the grid's cells often grow the pool
// for the batches after the window. So the phase first asks for plans on a
// pool that never grows past a smaller peak: for each pool size from the
// initial one up to below the start's largest, it reshapes the start to
// meet every deadline on at most that size (first less late, then
// cheaper), and keeps the first such plan that costs less than the start.
// Then it reshapes the best plan so far with the pool free to grow as a
// grid cell's does.
func (p *prepared) improve(start *outcome, initial, until int) *outcome {
	sizes := len(p.w.Pool.Sizes)
	im := &improver{p: p, factor: start.BatchSizeFactor, initial: initial, sizes: sizes, reserve: make([]float64, len(start.sim.layouts))}
	finish, due := start.sim.finals()
	for q, end := range finish {
		gap := due[q] - p.w.Queries[q].WindowEnd
		im.reserve[q] = min(reserveSeconds, reserveShare*gap, max(due[q]-end, 0))
		if p.w.Planning.ExactDeadlines {
			im.reserve[q] = 0
		}
	}
	sh := shapeOf(start)
	best := im.plan(sh)
	if best.o == nil || best.late > 0 {
		best = trial{}
	}
	objective := p.w.Planning.Objective
	// Every pass but the last may use an equal share of the work left;
	// one that ends early leaves its share to the others.
	top := sizeIndex(p.w.Pool.Sizes, start.MaxNodes)
	if best.o == nil {
		top = 0
	}
	passes := top - initial + 1
	improved := false
	for peak := initial; peak < top && p.budget.events < until; peak++ {
		share := (until - p.budget.events) / passes
		passes--
		if p.provablyLateOn(peak) {
			continue
		}
		capped := *im
		capped.spare, capped.spareSims = nil, nil
		capped.sizes = peak + 1
		capped.until = p.budget.events + share
		// A capped plan that is late and already costs as much as the
		// best one is seldom made both on time and cheaper: the pass is
		// skipped, and its work left to the others.
		t := capped.plan(sh)
		if t.late > 0 && t.o.objectiveCost(objective) >= best.o.objectiveCost(objective) {
			continue
		}
		t, csh, _ := capped.search(t, sh)
		if t.late == 0 && t.o.better(best.o, objective) {
			best, sh, improved = t, csh, true
			break
		}
	}
	cur := best
	if cur.o == nil {
		cur = im.plan(sh)
	}
	im.until = until
	cur, _, helped := im.search(cur, sh)
	if cur.late > 0 {
		return nil
	}
	im.until = max(until, p.budget.events) + delayEvents
	cur, later := im.delayIncreases(cur)
	if !improved && !helped && !later {
		return nil
	}
	cur.o.Improved = true
	return cur.o
}

// delayEvents bounds the work of delayIncreases, on top of the phase's.
const delayEvents = minImprovementEvents / 4

// delayIncreases runs one step at a time on the next smaller pool size,
// the earliest first, while that lowers the bill and meets every deadline
// with the reserve. The simulation judges a step by the slack it would
// leave if every step after it ran on the same nodes, so it grows the pool
// for the whole rest of a window as soon as the end of the window needs
// more nodes; running the first of those steps on the smaller pool, and
// growing it only for the steps that need it, often meets the same
// deadlines for less. Each try replays the batches in the plan's order
// policy, with the pool size of every step fixed by its place in the
// schedule.
func (im *improver) delayIncreases(cur trial) (trial, bool) {
	improved := false
	for !im.spent() {
		entries := cur.o.sim.entries
		sizes := make([]int, len(entries))
		for i, e := range entries {
			sizes[i] = e.nodes
		}
		helped := false
		for j := 0; j < len(entries) && !im.spent(); j++ {
			if sizes[j] == 0 {
				continue
			}
			sizes[j]--
			t := im.replaySizes(cur.o.sim, sizes)
			sizes[j]++
			if im.helps(t, cur) {
				cur, helped, improved = t, true, true
				break
			}
			if t.o != nil {
				im.spareSims = append(im.spareSims, t.o.sim)
			}
		}
		if !helped {
			break
		}
	}
	return cur, improved
}

// replaySizes schedules the layouts of from with the i-th step on pool size
// index sizes[i] (the last one's for any further step), stopping at the
// first query late; the trial is late when it misses a deadline less its
// reserve.
func (im *improver) replaySizes(from *sim, sizes []int) trial {
	p := im.p
	s := im.newSim(from.layouts, readyOrder{byFirstReady: from.byFirstReady, position: from.position})
	policy := nodePolicy{at: func(float64) int { return sizes[min(len(s.entries), len(sizes)-1)] }}
	if s.run(policy, stopWhenLate) != nil || im.short(s) > 0 {
		im.spareSims = append(im.spareSims, s)
		return trial{}
	}
	first := s.entries[0].nodes
	o := &outcome{Candidate: Candidate{InitialNodes: p.w.Pool.Sizes[first], BatchSizeFactor: im.factor, Feasible: true}, sim: s}
	p.price(o)
	return trial{o: o}
}

// search is the local search of one pass from shape sh, planned as cur:
// queries are visited in turn, then all of them at once; one whose move
// helped is tried again, and the pass ends after a whole turn helped none
// or when its share of the work is spent. It returns the best trial, its
// shape, and whether any move helped.
func (im *improver) search(cur trial, sh shape) (trial, shape, bool) {
	improved := false
	slots := len(sh) + 1
	for q, unhelped := len(sh), 0; unhelped < slots && !im.spent(); {
		helped := false
		// The moves are made one at a time, as they are tried: on a long
		// window every one of them is a copy of thousands of batch ends,
		// and the first that helps ends the turn.
		var cands iter.Seq[shape]
		if q == len(sh) {
			cands = im.globalMoves(sh)
		} else {
			cands = func(yield func(shape) bool) {
				for ends := range im.moves(q, sh[q]) {
					next := slices.Clone(sh)
					next[q] = ends
					if !yield(next) {
						return
					}
				}
			}
		}
		for next := range cands {
			if im.spent() {
				break
			}
			t := im.plan(next)
			if im.helps(t, cur) {
				cur, sh, helped, improved = t, next, true, true
				break
			}
			im.discard(t)
		}
		if helped {
			unhelped = 0
			continue
		}
		unhelped++
		q = (q + 1) % slots
	}
	return cur, sh, improved
}

// helps reports whether trial t is worth moving to from cur: less late by
// more than a millisecond, or on time and cheaper by the objective by more
// than gainTolerance of its cost (or as cheap and cheaper by the other
// cost by as much). A move that gains less is not taken: a long chain of
// such moves, each nudging a boundary, would spend the phase's work on
// nothing a bill shows.
func (im *improver) helps(t, cur trial) bool {
	const lateTolerance = 1e-3
	switch {
	case t.o == nil:
		return false
	case t.late < cur.late-lateTolerance:
		return true
	case t.late > 0 || cur.late > 0:
		return false
	}
	first, second := t.o.ExecutableCost, t.o.Cost
	curFirst, curSecond := cur.o.ExecutableCost, cur.o.Cost
	if im.p.w.Planning.Objective == Instant {
		first, second, curFirst, curSecond = second, first, curSecond, curFirst
	}
	switch {
	case first < curFirst*(1-gainTolerance):
		return true
	case first > curFirst+costTolerance:
		return false
	}
	return second < curSecond*(1-gainTolerance)
}

// gainTolerance is the least relative saving a reshaping move must make.
const gainTolerance = 1e-4

// plan plans a shape as a grid cell is planned, from the phase's initial
// size; when that meets no deadline with the reserve, from every larger
// one the pass allows, and when none does, it measures how late the shape
// is, against the deadlines less the reserve, on the largest of them.
func (im *improver) plan(sh shape) trial {
	p := im.p
	// The layouts of the last trial discarded are written over: each
	// query's of the last shape planned is read before its own is.
	ls := reuse(im.spare, len(sh))
	im.spare = nil
	// moved is the one query whose first batch is ready at another time
	// than in the last shape planned, if only one is: the others keep
	// their order.
	const none = -1
	first := len(im.planned) != len(sh)
	moved, many := none, first
	for i, ends := range sh {
		if !first && sameEnds(im.planned[i], ends) {
			ls[i] = im.layouts[i]
			continue
		}
		l := layoutOf(i, p.w.Queries[i], p.arrivals[i], p.costs[i], ends)
		l.precompute(p.w.Pool.Sizes)
		if !first && l.ready[0] != im.layouts[i].ready[0] {
			many = many || moved != none
			moved = i
		}
		ls[i] = l
	}
	switch {
	case many:
		im.order = firstReadyOrder(ls)
	case moved != none:
		im.order = im.order.moved(ls, moved)
	}
	im.planned, im.layouts = sh, ls
	for initial := im.initial; initial < im.sizes; initial++ {
		s := im.newSim(ls, im.order)
		if !s.genSchedule(0, initial, p.w.Planning.BacktrackStep) {
			im.spareSims = append(im.spareSims, s)
			continue
		}
		s.replanSegments(initial, p.w.Planning.BacktrackStep)
		if im.short(s) > 0 {
			im.spareSims = append(im.spareSims, s)
			continue
		}
		o := &outcome{Candidate: Candidate{InitialNodes: p.w.Pool.Sizes[initial], BatchSizeFactor: im.factor, Feasible: true}, sim: s}
		p.price(o)
		return trial{o: o}
	}
	largest := im.sizes - 1
	s := im.newSim(ls, im.order)
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
	finish, due := s.finals()
	for q, end := range finish {
		if over := end - (due[q] - im.reserve[q]); over > tolerance {
			late += over
		}
	}
	return late
}

// moves are the shapes one move away from query q's batch ends, in the
// order they are tried: merges first (fewer batches, less overhead), then
// splits, then boundaries moved either way (by half a batch, a quarter, ...,
// down to one unit), then the query cut anew into one batch fewer or one
// more.
func (im *improver) moves(q int, ends []int64) iter.Seq[[]int64] {
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
	// Each move is a new slice, made when it is asked for: a shape's ends
	// are never written after it is made (sameEnds). A move that takes a
	// batch end off a slice's end is not one.
	return func(yieldAny func([]int64) bool) {
		yield := func(ends []int64) bool { return !p.keepsCuts(q, ends) || yieldAny(ends) }
		// Merge batch i with batch i+1.
		for i := 0; i+1 < len(ends); i++ {
			if ends[i+1]-from(i) <= limit && !yield(slices.Delete(slices.Clone(ends), i, i+1)) {
				return
			}
		}
		// Split batch i at a whole unit near its middle.
		for i := range ends {
			units := (ends[i] - from(i)) / unit
			if units < 2 {
				continue
			}
			cut := from(i) + units/2*unit
			if !yield(slices.Insert(slices.Clone(ends), i, cut)) {
				return
			}
		}
		// Move the boundary after batch i either way, by the powers of two
		// of units below the larger neighbour's.
		for i := 0; i+1 < len(ends); i++ {
			for _, d := range halvings(max(ends[i]-from(i), ends[i+1]-ends[i]) / unit) {
				for _, sign := range []int64{-1, 1} {
					if moved, ok := movedBoundary(ends, i, ends[i]+sign*d*unit, limit); ok && !yield(moved) {
						return
					}
				}
			}
		}
		// Cut anew into one batch fewer or one more, of equal whole-unit
		// sizes.
		for _, k := range []int{len(ends) - 1, len(ends) + 1} {
			if cut, ok := evenCut(total, unit, limit, k); ok && !yield(cut) {
				return
			}
		}
	}
}

// keepsCuts reports whether ends ends a batch at each of query q's slice
// ends (cutTuples).
func (p *prepared) keepsCuts(q int, ends []int64) bool {
	for _, c := range p.cuts[q] {
		if _, found := slices.BinarySearch(ends, c); !found {
			return false
		}
	}
	return true
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

// halvings are the powers of two below span, the largest first: how far a
// boundary is moved, in units, so that it does not creep a unit at a time.
func halvings(span int64) []int64 {
	var steps []int64
	for d := int64(1); d < span; d *= 2 {
		steps = append(steps, d)
	}
	slices.Reverse(steps)
	return steps
}

// movedBoundary is ends with the boundary after batch i moved to at, when
// both batches it separates keep at least one tuple and at most limit.
func movedBoundary(ends []int64, i int, at, limit int64) ([]int64, bool) {
	from := int64(0)
	if i > 0 {
		from = ends[i-1]
	}
	if at <= from || at >= ends[i+1] || at-from > limit || ends[i+1]-at > limit {
		return nil, false
	}
	moved := slices.Clone(ends)
	moved[i] = at
	return moved, true
}

// globalMoves are the shapes one move away from sh that change every query
// at once: every query's last boundary moved later (a smaller last batch,
// so less runs after the window) or earlier by the same number of units,
// and every query cut anew into one batch more or one fewer.
func (im *improver) globalMoves(sh shape) iter.Seq[shape] {
	p := im.p
	span := int64(0)
	for q, ends := range sh {
		if n := len(ends); n > 1 {
			from := int64(0)
			if n > 2 {
				from = ends[n-3]
			}
			span = max(span, (ends[n-1]-from)/p.w.Queries[q].Granularity)
		}
	}
	return func(yield func(shape) bool) {
		for _, d := range halvings(span) {
			for _, sign := range []int64{1, -1} {
				next := make(shape, len(sh))
				changed := false
				for q, ends := range sh {
					next[q] = ends
					n := len(ends)
					if n < 2 {
						continue
					}
					if moved, ok := movedBoundary(ends, n-2, ends[n-2]+sign*d*p.w.Queries[q].Granularity, p.limit[q]); ok && p.keepsCuts(q, moved) {
						next[q], changed = moved, true
					}
				}
				if changed && !yield(next) {
					return
				}
			}
		}
		for _, more := range []int{1, -1} {
			next := make(shape, len(sh))
			changed := false
			for q, ends := range sh {
				next[q] = ends
				unit := p.w.Queries[q].Granularity
				if cut, ok := evenCut(ends[len(ends)-1], unit, p.limit[q], len(ends)+more); ok && p.keepsCuts(q, cut) {
					next[q], changed = cut, true
				}
			}
			if changed && !yield(next) {
				return
			}
		}
	}
}
