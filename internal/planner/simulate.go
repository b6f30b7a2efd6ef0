package planner

import (
	"cmp"
	"math"
	"slices"
)

// eps absorbs floating-point noise when comparing times.
const eps = 1e-9

// entry is one scheduled batch (qryBatchSch of Algorithm 1) with the merges
// that follow it on the pool: a partial merge when one is due (eq. 7), the
// final merge after the query's last batch.
type entry struct {
	query int // index into sim.layouts
	batch int
	nodes int // pool size index
	ready float64
	start float64
	// batchEnd is when the batch itself ends; end includes the merges.
	batchEnd, end float64
}

// failure ends a run: a chosen batch with negative slack (Algorithm 2, line
// 12) or, when replaying, a final merge after its deadline.
type failure struct {
	query int
	slack float64
	start float64
}

// sim is the state of one candidate's simulation: the schedule so far and,
// for every query, how many of its batches the schedule holds. The state
// before entry i is fully described by entries[:i], so restarting from i
// (Algorithm 1, lines 21–25) undoes the entries after it instead of
// re-simulating the prefix.
type sim struct {
	layouts []layout
	sizes   []int
	policy  Policy
	// readyAt is, by pool size index, when the pool can first have that
	// many nodes (Pool.Now); nil when any size can be there at once.
	readyAt []float64
	// byFirstReady orders queries by the readiness of their first batch, so
	// queries that cannot be chosen yet are skipped without being looked at.
	byFirstReady []int
	entries      []entry
	next         []int
	// The unfinished queries whose first batch was ready by the current
	// simulation time ("joined"; joined is how far byFirstReady has been
	// taken) are in ready when their next batch is ready, keyed by
	// readyKey on pool size index readySize, and in pending otherwise,
	// keyed by the next batch's readiness.
	ready, pending queue
	readySize      int
	joined         int
	// position is each query's index in byFirstReady.
	position []int
	// tolerance bounds the rounding between a ready query's key and its
	// slack: maxAbs is the largest |deadline| plus the largest remaining
	// work of any query.
	maxAbs float64
	// exact is scratch for the queries whose exact keys are compared.
	exact []queued
	// taken is the query choose picked, held out of takenFrom.
	taken     queued
	takenFrom *queue
	// budget ends the run when the search's context does; nil never does.
	budget *budget
	// echo, set during a backtracking walk, is the walk's previous run;
	// noEcho has every run of a walk simulated in full, for the tests that
	// hold the echo to what it replaces.
	echo   *echo
	noEcho bool
	// walk, firstPass and saved are the storage genSchedule and
	// replanSegments reuse from one call to the next (and reset from one
	// simulation to the next): the previous run of a walk, the first
	// pass's schedule and the schedule a re-planned segment replaces.
	walk             echo
	firstPass, saved []entry
	// spans is the storage timeline reuses.
	spans []span
}

// echo is the previous run of a backtracking walk, which failed on the
// walk's pool size: the next run starts earlier on the same size, and once
// it stands where that run stood after one of its entries (the same
// batches done, the last ending at the same instant) it can only go on
// as that run did, to the same failure. Two runs meet so after an idle
// gap: more nodes before a gap end the batches before it sooner, and the
// pool waits for the same next batch. The run then takes the rest of the
// schedule from the echo instead of simulating it again.
type echo struct {
	// entries are the schedule the run failed with, from index base on;
	// the run simulated those from index from on.
	entries    []entry
	base, from int
	fail       failure
	// surplus is, by query, how many more of its batches the new run has
	// scheduled than the schedule of the echo holds at the same index;
	// unequal counts the queries where that is not 0.
	surplus []int
	unequal int
}

// record makes the failed run that restarted at from, whose schedule s
// holds, the echo of the next run of the walk, which restarts at next.
func (e *echo) record(s *sim, from, next int, fail failure) {
	e.entries = append(e.entries[:0], s.entries[next:]...)
	e.base, e.from, e.fail = next, from, fail
	if len(e.surplus) != len(s.layouts) {
		e.surplus = make([]int, len(s.layouts))
	}
	clear(e.surplus)
	e.unequal = 0
}

// count adds n to query q's surplus.
func (e *echo) count(q, n int) {
	before := e.surplus[q]
	e.surplus[q] += n
	switch {
	case before == 0:
		e.unequal++
	case e.surplus[q] == 0:
		e.unequal--
	}
}

// follow compares the entry s just scheduled with the echo's at the same
// index; when the two runs stand in the same place, it appends the rest of
// the echo's schedule to s and returns the echo's failure.
func (s *sim) follow() (*failure, bool) {
	e := s.echo
	j := len(s.entries) - 1
	if j-e.base >= len(e.entries) {
		// The run is past where the echo failed: they cannot meet.
		s.echo = nil
		return nil, false
	}
	mine, theirs := s.entries[j], e.entries[j-e.base]
	if mine.query != theirs.query {
		e.count(mine.query, 1)
		e.count(theirs.query, -1)
	}
	// The echo's entries before index from were not simulated on the
	// walk's size, so only a state from which it ran can be taken.
	if e.unequal != 0 || j+1 < e.from || mine.end != theirs.end {
		return nil, false
	}
	rest := e.entries[j+1-e.base:]
	for _, r := range rest {
		s.next[r.query]++
	}
	s.entries = append(s.entries, rest...)
	// Simulated, the run would have gone round once for each of these
	// entries and once more to its failure.
	s.budget.echo(len(rest) + 1)
	fail := e.fail
	return &fail, true
}

// newSim starts a simulation at t = 0 over layouts, which it only reads:
// the candidates of one factor share them.
func newSim(layouts []layout, sizes []int, policy Policy) *sim {
	return newSimInOrder(layouts, firstReadyOrder(layouts), sizes, policy)
}

// readyOrder is the order of the queries of some layouts by the readiness
// of their first batch, then by index (byFirstReady), and each query's
// place in it (position): what every simulation of the layouts shares.
type readyOrder struct {
	byFirstReady, position []int
}

// firstReadyOrder is the readyOrder of layouts.
func firstReadyOrder(layouts []layout) readyOrder {
	o := readyOrder{byFirstReady: make([]int, len(layouts)), position: make([]int, len(layouts))}
	for i := range o.byFirstReady {
		o.byFirstReady[i] = i
	}
	slices.SortFunc(o.byFirstReady, func(a, b int) int {
		return firstReadyCompare(layouts, a, b)
	})
	for i, q := range o.byFirstReady {
		o.position[q] = i
	}
	return o
}

// firstReadyCompare orders queries a and b of layouts by the readiness of
// their first batch, then by index.
func firstReadyCompare(layouts []layout, a, b int) int {
	if c := cmp.Compare(layouts[a].ready[0], layouts[b].ready[0]); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}

// moved is o for layouts in which only query q's first batch may be ready
// at another time than in the layouts of o: q is taken out and put back in
// its place, without sorting the others again. o is not changed.
func (o readyOrder) moved(layouts []layout, q int) readyOrder {
	order := slices.Delete(slices.Clone(o.byFirstReady), o.position[q], o.position[q]+1)
	at, _ := slices.BinarySearchFunc(order, q, func(other, q int) int {
		return firstReadyCompare(layouts, other, q)
	})
	order = slices.Insert(order, at, q)
	next := readyOrder{byFirstReady: order, position: slices.Clone(o.position)}
	for i := min(at, o.position[q]); i <= max(at, o.position[q]); i++ {
		next.position[order[i]] = i
	}
	return next
}

// newSimInOrder is newSim for layouts whose readyOrder is known.
func newSimInOrder(layouts []layout, order readyOrder, sizes []int, policy Policy) *sim {
	return new(sim).reset(layouts, order, sizes, policy)
}

// reset makes s what newSimInOrder makes, in the storage of a simulation
// that is no longer read, and returns it.
func (s *sim) reset(layouts []layout, order readyOrder, sizes []int, policy Policy) *sim {
	old := *s
	*s = sim{
		layouts: layouts, sizes: sizes, policy: policy,
		byFirstReady: order.byFirstReady, position: order.position,
		next:  reuse(old.next, len(layouts)),
		exact: old.exact[:0], ready: queue{old.ready.items[:0]}, pending: queue{old.pending.items[:0]},
		walk:      echo{entries: old.walk.entries[:0], surplus: old.walk.surplus},
		firstPass: old.firstPass[:0], saved: old.saved[:0], spans: old.spans[:0],
	}
	clear(s.next)
	deadline, work := 0.0, 0.0
	for i := range layouts {
		l := &layouts[i]
		deadline = max(deadline, math.Abs(l.deadline))
		if len(l.onNodes) > 0 {
			work = max(work, math.Abs(l.remaining(0, 0)))
		}
	}
	s.maxAbs = deadline + work
	// Every batch becomes one entry: sized once, the schedule is not
	// copied as it grows, which was most of what a search allocated.
	batches := 0
	for i := range layouts {
		batches += len(layouts[i].to)
	}
	s.entries = reuse(old.entries, batches)[:0]
	return s
}

// reuse is xs with length n, in its own storage when that is large enough.
func reuse[T any](xs []T, n int) []T {
	if cap(xs) < n {
		return make([]T, n)
	}
	return xs[:n]
}

// readyKey is the part of a ready query's priority that does not change
// with the simulation time: its slack is deadline - now - remaining work
// (LLF), so it orders by deadline - remaining work up to rounding; EDF
// orders by the deadline itself.
func (s *sim) readyKey(q, size int) float64 {
	l := &s.layouts[q]
	if s.policy == EarliestDeadline {
		return l.deadline
	}
	return l.deadline - l.remaining(s.next[q], size)
}

// enqueue puts joined, unfinished query q in ready or pending at time now.
func (s *sim) enqueue(q int, now float64) {
	l := &s.layouts[q]
	if brt := l.ready[s.next[q]]; brt <= now+eps {
		s.ready.push(s.readyKey(q, s.readySize), q)
	} else {
		s.pending.push(brt, q)
	}
}

// rekey orders ready for pool size index size.
func (s *sim) rekey(size int) {
	if size == s.readySize {
		return
	}
	s.readySize = size
	for i := range s.ready.items {
		s.ready.items[i].key = s.readyKey(s.ready.items[i].query, size)
	}
	s.ready.init()
}

// now is the simulation time after the schedule so far; the simulation
// starts at the origin, t = 0.
func (s *sim) now() float64 {
	if len(s.entries) == 0 {
		return 0
	}
	return s.entries[len(s.entries)-1].end
}

// truncate restores the state before entry i.
func (s *sim) truncate(i int) { s.replace(i, nil) }

// replace swaps the schedule from entry i on for saved, as if it had been
// simulated: the entries after i are undone, saved is applied, and the
// active set is rebuilt once for the result.
func (s *sim) replace(i int, saved []entry) {
	for j := len(s.entries) - 1; j >= i; j-- {
		s.next[s.entries[j].query]--
	}
	for _, e := range saved {
		s.next[e.query]++
	}
	s.entries = append(s.entries[:i], saved...)
	s.rebuildActive()
}

func (s *sim) rebuildActive() {
	now := s.now()
	s.ready.reset()
	s.pending.reset()
	s.joined = 0
	for s.joined < len(s.byFirstReady) && s.layouts[s.byFirstReady[s.joined]].ready[0] <= now+eps {
		if q := s.byFirstReady[s.joined]; s.next[q] < s.layouts[q].batches() {
			if brt := s.layouts[q].ready[s.next[q]]; brt <= now+eps {
				s.ready.items = append(s.ready.items, queued{s.readyKey(q, s.readySize), q})
			} else {
				s.pending.items = append(s.pending.items, queued{brt, q})
			}
		}
		s.joined++
	}
	s.ready.init()
	s.pending.init()
}

// nodePolicy gives the pool size index a step starting at a given time runs
// on: fixed, or from a timeline when at is set.
type nodePolicy struct {
	fixed int
	at    func(start float64) int
}

func (n nodePolicy) size(start float64) int {
	if n.at == nil {
		return n.fixed
	}
	return n.at(start)
}

// candidateKey orders the queries Algorithm 2, line 11 chooses from: ready
// queries by slack (LLF) or deadline (EDF); otherwise by next readiness, then
// slack or deadline. Query order breaks ties so the choice is deterministic.
type candidateKey struct {
	ready    bool
	nextBRT  float64
	priority float64
	query    int
	// start and slack are the batch's start time (eq. 4) and slack (eq. 5).
	start, slack float64
}

// candidate is query q's next batch as Algorithm 2, lines 6–9 see it at
// simulation time now.
func (s *sim) candidate(q int, now float64, nodes nodePolicy) candidateKey {
	l := &s.layouts[q]
	n := s.next[q]
	brt := l.ready[n]
	start := max(now, brt)
	size := nodes.size(start)
	if s.readyAt != nil {
		start = max(start, s.readyAt[size])
	}
	left := l.remaining(n, size)
	slack := l.deadline - start - left
	// The order is least slack first, as dispatch orders; a step is
	// feasible only with the tail margin to spare as well.
	key := candidateKey{ready: brt <= now+eps, nextBRT: brt, priority: slack, query: q, start: start, slack: slack}
	if l.tailMargin > 0 {
		key.slack -= TailHeadroom(l.tailMargin, start, left, l.ready[len(l.ready)-1])
	}
	if s.policy == EarliestDeadline {
		key.priority = l.deadline
	}
	return key
}

func (a candidateKey) less(b candidateKey) bool {
	if a.ready != b.ready {
		return a.ready
	}
	if !a.ready && a.nextBRT != b.nextBRT {
		return a.nextBRT < b.nextBRT
	}
	if a.priority != b.priority {
		return a.priority < b.priority
	}
	return a.query < b.query
}

// stopRule says when a simulation run gives up.
type stopRule int

const (
	// stopOnNegativeSlack is Algorithm 2: fail when the chosen batch has
	// negative slack.
	stopOnNegativeSlack stopRule = iota
	// stopWhenLate fails as soon as a query's final merge ends after its
	// deadline (replaying a fixed timeline, where slack on the current pool
	// size proves nothing because the pool may grow later).
	stopWhenLate
	// runToEnd never fails: it measures how late an infeasible workload is.
	runToEnd
)

// run is GenBatchSchedule (Algorithm 2): it extends the schedule until every
// query is done or the stop rule ends it, and returns the failure if so.
func (s *sim) run(nodes nodePolicy, stop stopRule) *failure {
	now := s.now()
	for {
		s.budget.tick()
		s.rekey(nodes.size(now))
		for s.joined < len(s.byFirstReady) && s.layouts[s.byFirstReady[s.joined]].ready[0] <= now+eps {
			// A query chosen before it joined may be done already.
			if q := s.byFirstReady[s.joined]; s.next[q] < s.layouts[q].batches() {
				s.enqueue(q, now)
			}
			s.joined++
		}
		for s.pending.len() > 0 && s.pending.top().key <= now+eps {
			s.enqueue(s.pending.pop().query, now)
		}
		best, found := s.choose(now, nodes)
		// choose holds its pick out of the queues until it is scheduled.
		taken := found
		// Not-yet-joined queries can only win when nothing is ready; the
		// earliest of them are all that can.
		if !found || !best.ready {
			for j := s.joined; j < len(s.byFirstReady); j++ {
				q := s.byFirstReady[j]
				if found && s.layouts[q].ready[0] > best.nextBRT {
					break
				}
				if key := s.candidate(q, now, nodes); !found || key.less(best) {
					if taken {
						s.putBack()
						taken = false
					}
					best, found = key, true
				}
			}
		}
		if !found {
			return nil
		}
		if stop == stopOnNegativeSlack && best.slack < -eps {
			if taken {
				s.putBack()
			}
			return &failure{query: best.query, slack: best.slack, start: best.start}
		}
		size := nodes.size(best.start)
		now = s.schedule(best.query, best.start, size)
		if s.echo != nil {
			if fail, met := s.follow(); met {
				return fail
			}
		}
		if q := best.query; s.position[q] < s.joined && s.next[q] < s.layouts[q].batches() {
			s.rekey(nodes.size(now))
			s.enqueue(q, now)
		}
		if l := &s.layouts[best.query]; stop == stopWhenLate && s.next[best.query] == l.batches() && now > l.due[size]+eps {
			return &failure{query: best.query, slack: l.due[size] - now, start: best.start}
		}
	}
}

// choose is the joined query Algorithm 2, line 11 picks at time now: the
// least candidateKey. Ready queries come first; their keys differ from
// their slack only by rounding, so every query within tolerance of the
// least key is compared exactly, as the linear scan did. Otherwise the
// pending queries with the earliest next readiness are compared.
func (s *sim) choose(now float64, nodes nodePolicy) (candidateKey, bool) {
	var from *queue
	var within func(queued) bool
	switch {
	case s.ready.len() > 0:
		from = &s.ready
		limit := s.ready.top().key + 1e-12*(s.maxAbs+math.Abs(now))
		within = func(it queued) bool { return it.key <= limit }
	case s.pending.len() > 0:
		from = &s.pending
		first := s.pending.top().key
		within = func(it queued) bool { return it.key == first }
	default:
		return candidateKey{}, false
	}
	s.exact = s.exact[:0]
	for from.len() > 0 && within(from.top()) {
		s.exact = append(s.exact, from.pop())
	}
	var best candidateKey
	chosen := 0
	for i, it := range s.exact {
		if key := s.candidate(it.query, now, nodes); i == 0 || key.less(best) {
			best, chosen = key, i
		}
	}
	for i, it := range s.exact {
		if i != chosen {
			from.push(it.key, it.query)
		}
	}
	s.taken, s.takenFrom = s.exact[chosen], from
	return best, true
}

// putBack returns the query choose took to its queue: it was not
// scheduled after all.
func (s *sim) putBack() { s.takenFrom.push(s.taken.key, s.taken.query) }

// schedule appends query q's next batch starting at start on size index
// nodes, with the merges that follow it, and returns the new simulation time.
func (s *sim) schedule(q int, start float64, nodes int) float64 {
	l := &s.layouts[q]
	n := s.next[q]
	p := s.sizes[nodes]
	e := entry{query: q, batch: n, nodes: nodes, ready: l.ready[n], start: start}
	e.batchEnd = start + l.cost.batch(p, l.to[n]-l.from(n))
	e.end = e.batchEnd
	if l.partialAfter(n) {
		e.end += l.cost.merge(p, l.partialInputs(n))
	}
	if n+1 == l.batches() {
		e.end += l.cost.merge(p, l.finalInputs())
	}
	s.entries = append(s.entries, e)
	s.next[q]++
	return e.end
}

// genSchedule is GenSchedule (Algorithm 1) for the schedule from entry floor
// on; entries before floor are fixed. On failure it moves the restart index
// back and simulates the batches from there on the next larger size, as
// eq. 8 does: back by the backtrack step K while that stays at or after
// floor without crossing an idle gap (more nodes earlier cannot help past a
// gap), otherwise back by one under the same conditions, so a large K skips
// restart points far from floor and a gap but still tries those near them.
// When not even one step back is possible, it restarts from the last
// scheduled batch with the next larger size, and — once that size is more
// than one step above the initial one — resets the batches before the
// restart index to the initial size, reusing the first pass's entries for
// them. It reports whether a schedule was found; on failure the schedule is
// left as the last attempt.
func (s *sim) genSchedule(floor, initial, step int) bool {
	size := initial
	restart := floor
	passed := false // whether firstPass holds this call's first pass
	// walking is whether s.walk is the walk's previous run on size.
	walking := false
	for {
		s.budget.tick()
		s.truncate(restart)
		if walking {
			s.echo = &s.walk
		}
		fail := s.run(nodePolicy{fixed: size}, stopOnNegativeSlack)
		s.echo = nil
		if fail == nil {
			return true
		}
		if !passed {
			s.firstPass, passed = append(s.firstPass[:0], s.entries[floor:]...), true
		}
		if back, ok := s.backtrack(restart, floor, step, fail.start); ok {
			s.walk.record(s, restart, back, *fail)
			walking = !s.noEcho
			restart = back
			continue
		}
		walking = false
		size++
		if size == len(s.sizes) {
			return false
		}
		restart = max(len(s.entries)-1, floor)
		if size > initial+1 {
			restart = min(restart, floor+len(s.firstPass))
			s.replace(floor, s.firstPass[:restart-floor])
		}
	}
}

// backtrack is eq. 8: the restart index after a failed run that restarted
// at index restart, moved back by step when that is possible and by one
// otherwise. A move is possible when it stays at or after floor and crosses
// no idle gap; ok is false when neither move is.
func (s *sim) backtrack(restart, floor, step int, failStart float64) (index int, ok bool) {
	if to := restart - step; step > 1 && to >= floor && !s.gapBetween(to, restart, failStart) {
		return to, true
	}
	if to := restart - 1; to >= floor && !s.gapBetween(to, restart, failStart) {
		return to, true
	}
	return 0, false
}

// gapBetween reports an idle gap before any entry in (from, to]; entry
// len(entries) is the failed selection, starting at failStart.
func (s *sim) gapBetween(from, to int, failStart float64) bool {
	for j := from + 1; j <= to; j++ {
		start := failStart
		if j < len(s.entries) {
			start = s.entries[j].start
		} else if j > len(s.entries) {
			break
		}
		if start > s.entries[j-1].end+eps {
			return true
		}
	}
	return false
}

// replanSegments is the optimisation of section 3.2: every segment that
// follows an idle gap and starts above the initial size is re-planned from
// the initial size; a re-plan that finds no schedule keeps the original.
func (s *sim) replanSegments(initial, step int) {
	for j := 1; j < len(s.entries); j++ {
		s.budget.tick()
		e := s.entries[j]
		if e.nodes <= initial || e.start <= s.entries[j-1].end+eps {
			continue
		}
		s.saved = append(s.saved[:0], s.entries[j:]...)
		if !s.genSchedule(j, initial, step) {
			s.replace(j, s.saved)
		}
	}
}
