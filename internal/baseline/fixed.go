package baseline

import (
	"math"

	"github.com/laxity-dev/laxity/internal/planner"
)

// fixed is seed section 9.5.1: laxity's batch-size determination and LLF on
// a pool held at n nodes, the elastic search restricted to initial size n
// with no size to grow to.
//
// Batch sizes are the planner's: 1X on the pool's smallest size and the
// Cmax cap (section 3.1), times each batch-size factor. For every factor
// the planner's GenBatchSchedule (Algorithm 2) runs on n nodes: LLF among
// ready batches, else the lexicographically least (next readiness, slack),
// each batch followed by its partial merge when one is due and by the
// final merge after the query's last batch. Where the planner would give
// up on a negative slack, the run goes on to the end, so that the result
// says which query is late. The cheapest factor that meets every deadline
// wins, ties to the factor listed first; when none does, the least late.
// The pool holds n nodes from the origin until the last step ends.
//
// Planning with n as the only size would be simpler but wrong: the planner
// then determines 1X on n nodes, so the batches of a large pool grow and
// its last batches may miss deadlines that laxity's batches meet.
func fixed(w planner.Workload, curves []arrivalCurve, units []unitSize, n int) Result {
	var best Result
	for i, f := range w.Planning.BatchSizeFactors {
		layouts := make([]batchLayout, len(w.Queries))
		for q := range w.Queries {
			layouts[q] = newBatchLayout(w.Queries[q], &curves[q], units[q], f)
		}
		r := heldPool(w, Fixed, n, genBatchSchedule(layouts, n, w.Planning.Policy))
		if i == 0 || r.cheaperThan(best) {
			best = r
		}
	}
	return best
}

// cheaperThan orders the factors of one pool: deadlines met, then cost
// (to rounding), else the first late query the least late.
func (r Result) cheaperThan(than Result) bool {
	const tolerance = 1e-9
	switch {
	case r.DeadlinesMet != than.DeadlinesMet:
		return r.DeadlinesMet
	case r.DeadlinesMet:
		return r.Cost < than.Cost-tolerance
	default:
		return r.Late.LateSeconds < than.Late.LateSeconds
	}
}

// unitSize is a query's 1X batch size and the Cmax cap on batch sizes.
type unitSize struct{ x, limit int64 }

// unitBatchSize is the planner's 1X batch size of section 3.1 on the
// smallest pool size s: the smallest whole-unit x with ceil(N/x) *
// BatchTime(s, x) <= 2 * BatchTime(s, N), capped at the largest whole-unit
// x with BatchTime(s, x) < Cmax. The planner rejects a workload whose one
// unit takes Cmax or longer; here the cap is at least one unit regardless.
func unitBatchSize(q planner.Query, c *arrivalCurve, smallest int, cmax float64) unitSize {
	total, unit := c.total, c.unit
	units := ceilDiv(total, unit)
	limit := units * unit
	if perTuple := q.Cost.Batch.PerUnit(smallest); perTuple > 0 {
		if u := math.Ceil((cmax-q.Cost.Batch.Overhead)/(float64(unit)*perTuple)) - 1; u < float64(units) {
			limit = max(int64(u), 1) * unit
		}
	}
	budget := 2 * q.Cost.BatchSeconds(smallest, total)
	// For k batches the smallest whole-unit size is unitCeil(N/k); more
	// batches cannot meet the budget once their overheads alone exceed it.
	maxK := units
	if overhead := q.Cost.Batch.Overhead; overhead > 0 {
		if byOverhead := budget/overhead + 1; byOverhead < float64(maxK) {
			maxK = int64(byOverhead)
		}
	}
	var x int64
	for k := maxK; k >= 1; k-- {
		x = ceilDiv(ceilDiv(total, k), unit) * unit
		if float64(ceilDiv(total, x))*q.Cost.BatchSeconds(smallest, x) <= budget {
			break
		}
	}
	return unitSize{x: min(max(x, unit), limit), limit: limit}
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// batchLayout is one query's batches for one batch-size factor, cut and
// timed as the planner cuts them: batches of min(factor*X, cap) tuples,
// each ready when its last unit is.
type batchLayout struct {
	query planner.Query
	total int64
	// to[i] is the exclusive end tuple of batch i; ready[i] when it is
	// ready.
	to    []int64
	ready []float64
	// partialEvery is c of section 6: a partial merge of c batches follows
	// every c-th batch but the last; 0 for none.
	partialEvery int
}

func newBatchLayout(q planner.Query, c *arrivalCurve, unit unitSize, factor int) batchLayout {
	size := unit.x * int64(factor)
	if size > unit.limit || size/int64(factor) != unit.x {
		size = unit.limit
	}
	l := batchLayout{query: q, total: c.total}
	for from := int64(0); from < c.total; from += size {
		to := min(from+size, c.total)
		l.to = append(l.to, to)
		l.ready = append(l.ready, c.readyAt(to))
	}
	if q.PartialEvery > 0 {
		l.partialEvery = max(int(math.Ceil(q.PartialEvery*float64(len(l.to))-1e-9)), 1)
	}
	return l
}

func (l *batchLayout) from(i int) int64 {
	if i == 0 {
		return 0
	}
	return l.to[i-1]
}

func (l *batchLayout) partialAfter(i int) bool {
	return l.partialEvery > 0 && (i+1)%l.partialEvery == 0 && i+1 < len(l.to)
}

func (l *batchLayout) partials() int {
	if l.partialEvery == 0 {
		return 0
	}
	return (len(l.to) - 1) / l.partialEvery
}

// finalInputs is m of the final merge: the partials and the batches after
// the last one.
func (l *batchLayout) finalInputs() int {
	p := l.partials()
	return p + len(l.to) - p*l.partialEvery
}

// remaining is eq. 5's sum on n nodes: batches next.. with their partial
// merges and the final merge, in the planner's closed form, so that slack
// ties break as the planner's do.
func (l *batchLayout) remaining(next, n int) float64 {
	k, cost := len(l.to), l.query.Cost
	work := float64(k-next)*cost.Batch.Overhead + float64(l.total-l.from(next))*cost.Batch.PerUnit(n) + cost.MergeSeconds(n, l.finalInputs())
	if l.partialEvery > 0 {
		work += float64((k-1)/l.partialEvery-next/l.partialEvery) * cost.MergeSeconds(n, l.partialEvery)
	}
	return work
}

// place runs batch i from start on n nodes with the merges that follow it,
// as the planner's steps.
func (l *batchLayout) place(i int, start float64, n int) []planner.Step {
	name, cost := l.query.Name, l.query.Cost
	batchEnd := start + cost.BatchSeconds(n, l.to[i]-l.from(i))
	steps := []planner.Step{{
		Query: name, Kind: planner.StepBatch, Index: i, FromTuple: l.from(i), ToTuple: l.to[i],
		Ready: l.ready[i], Start: start, End: batchEnd, Nodes: n,
	}}
	at := batchEnd
	if l.partialAfter(i) {
		end := at + cost.MergeSeconds(n, l.partialEvery)
		steps = append(steps, planner.Step{
			Query: name, Kind: planner.StepPartial, Index: (i+1)/l.partialEvery - 1,
			FromTuple: l.from(i + 1 - l.partialEvery), ToTuple: l.to[i], Inputs: l.partialEvery,
			Ready: at, Start: at, End: end, Nodes: n,
		})
		at = end
	}
	if i+1 == len(l.to) {
		steps = append(steps, planner.Step{
			Query: name, Kind: planner.StepFinal, Index: l.partials(), FromTuple: 0, ToTuple: l.total,
			Inputs: l.finalInputs(), Ready: at, Start: at, End: at + cost.MergeSeconds(n, l.finalInputs()), Nodes: n,
		})
	}
	return steps
}

// genBatchSchedule is the planner's Algorithm 2 on n nodes, run to the end:
// whenever the pool is free, the ready batch with the least slack (or,
// under EarliestDeadline, the earliest deadline) runs; when none is ready,
// the one ready soonest, then by slack or deadline. Ties go to the query
// listed first.
func genBatchSchedule(layouts []batchLayout, n int, policy planner.Policy) []planner.Step {
	next := make([]int, len(layouts))
	var steps []planner.Step
	now := 0.0
	for open := len(layouts); open > 0; {
		var best batchKey
		found := false
		for q := range layouts {
			l := &layouts[q]
			if next[q] == len(l.to) {
				continue
			}
			ready := l.ready[next[q]]
			start := math.Max(now, ready)
			key := batchKey{ready: ready <= now+eps, nextReady: ready, query: q, start: start}
			key.priority = l.query.Deadline - start - l.remaining(next[q], n)
			if policy == planner.EarliestDeadline {
				key.priority = l.query.Deadline
			}
			if !found || key.less(best) {
				best, found = key, true
			}
		}
		placed := layouts[best.query].place(next[best.query], best.start, n)
		steps = append(steps, placed...)
		now = placed[len(placed)-1].End
		if next[best.query]++; next[best.query] == len(layouts[best.query].to) {
			open--
		}
	}
	return steps
}

// batchKey orders the queries Algorithm 2, line 11 chooses from, as the
// planner's candidateKey does.
type batchKey struct {
	ready     bool
	nextReady float64
	priority  float64
	query     int
	start     float64
}

func (a batchKey) less(b batchKey) bool {
	if a.ready != b.ready {
		return a.ready
	}
	if !a.ready && a.nextReady != b.nextReady {
		return a.nextReady < b.nextReady
	}
	if a.priority != b.priority {
		return a.priority < b.priority
	}
	return a.query < b.query
}
