package planner

import (
	"fmt"
	"math"
	"slices"

	"github.com/laxity-dev/laxity/internal/costmodel"
)

// layout is how one query's tuples are cut into batches for one batch-size
// factor, and when each batch becomes ready.
type layout struct {
	query    int
	name     string
	deadline float64
	cost     costModel
	total    int64
	size     int64
	// to[i] is the exclusive end tuple of batch i; batch i covers
	// [to[i-1], to[i]).
	to []int64
	// ready[i] is when batch i's last tuple has arrived (the last batch: the
	// window end plus the allowed lateness).
	ready []float64
	// partialEvery is c: a partial merge of c batches follows every c-th
	// batch but the last; 0 disables partial merges.
	partialEvery int
	// carried is Query.Carried: inputs of the final merge that no batch
	// of this layout makes.
	carried int
	// cutAfter are the batches, ascending, after which the result of a
	// slice of a shared stream is kept (see slices.go): a partial merge of
	// the batches since the previous one. Only a layout without
	// partialEvery has them.
	cutAfter []int
	// onNodes is cost on each pool size, by index: what RemainingSeconds
	// is called with. perTuple, partialMerge and finalMerge are its terms
	// that do not change along the layout, so that remaining, which the
	// search calls for every batch of every candidate, adds three products
	// instead of recounting the batches left.
	onNodes                            []costmodel.OnNodes
	perTuple, partialMerge, finalMerge []float64
	// tailMargin is Query.TailMargin; due, by pool size index, is the
	// deadline less that share of the tail (the last batch and the final
	// merge) on that size: when the final merge must end by, the last
	// batch having started with the margin to spare (TailHeadroom).
	tailMargin float64
	due        []float64
}

// costModel caches the coefficients the simulation needs on its hot path.
type costModel struct {
	batchOverhead, batchSerial, batchParallel float64
	mergeOverhead, mergeSerial, mergeParallel float64
}

// model is c in costmodel's form, with the same coefficients.
func (c costModel) model() costmodel.Model {
	return costmodel.Model{
		Batch: costmodel.Linear{Overhead: c.batchOverhead, Serial: c.batchSerial, Parallel: c.batchParallel},
		Merge: costmodel.Linear{Overhead: c.mergeOverhead, Serial: c.mergeSerial, Parallel: c.mergeParallel},
	}
}

func (c costModel) batch(nodes int, tuples int64) float64 {
	return c.batchOverhead + float64(tuples)*(c.batchSerial+c.batchParallel/float64(nodes))
}

func (c costModel) merge(nodes, inputs int) float64 {
	return c.mergeOverhead + float64(inputs)*(c.mergeSerial+c.mergeParallel/float64(nodes))
}

// batches is the number of batches k.
func (l *layout) batches() int { return len(l.to) }

// from is the first tuple of batch i.
func (l *layout) from(i int) int64 {
	if i == 0 {
		return 0
	}
	return l.to[i-1]
}

// partialAfter reports whether a partial merge follows batch i (0-based).
func (l *layout) partialAfter(i int) bool {
	if l.cutAfter != nil {
		_, found := slices.BinarySearch(l.cutAfter, i)
		return found
	}
	return l.partialEvery > 0 && (i+1)%l.partialEvery == 0 && i+1 < len(l.to)
}

// partialInputs is m of the partial merge after batch i: the batches since
// the one before it.
func (l *layout) partialInputs(i int) int {
	if l.cutAfter == nil {
		return l.partialEvery
	}
	at, _ := slices.BinarySearch(l.cutAfter, i)
	if at == 0 {
		return i + 1
	}
	return i - l.cutAfter[at-1]
}

// partialOrdinal is the index of the partial merge after batch i among the
// query's partial merges.
func (l *layout) partialOrdinal(i int) int {
	if l.cutAfter != nil {
		at, _ := slices.BinarySearch(l.cutAfter, i)
		return at
	}
	return (i+1)/l.partialEvery - 1
}

// partials is the number of partial merges of the whole query.
func (l *layout) partials() int {
	if l.cutAfter != nil {
		return len(l.cutAfter)
	}
	if l.partialEvery == 0 {
		return 0
	}
	return (len(l.to) - 1) / l.partialEvery
}

// finalInputs is m of the final merge: the partials plus the batches after
// the last partial, and the results of earlier slices it carries.
func (l *layout) finalInputs() int {
	p := l.partials()
	if n := len(l.cutAfter); n > 0 {
		return p + len(l.to) - 1 - l.cutAfter[n-1] + l.carried
	}
	return p + len(l.to) - p*l.partialEvery + l.carried
}

// remaining is the modelled work, in seconds on pool size index size, of
// batches next..k-1 with their partial merges and the final merge:
// RemainingSeconds(l.onNodes[size], l.progress(next)), to the last bit
// (TestLayoutRemainingIsRemainingSeconds), from the layout's known batch
// count and precomputed terms.
func (l *layout) remaining(next, size int) float64 {
	k := len(l.to)
	work := float64(k-next)*l.onNodes[size].BatchOverhead() + float64(l.total-l.from(next))*l.perTuple[size] + l.finalMerge[size]
	if l.partialEvery > 0 {
		// Partial merges follow batches j (1-based) with next < j < k.
		work += float64((k-1)/l.partialEvery-next/l.partialEvery) * l.partialMerge[size]
	}
	for _, i := range l.cutAfter {
		if i >= next {
			work += l.onNodes[size].MergeSeconds(l.partialInputs(i))
		}
	}
	return work
}

// progress is where the query stands before batch next.
func (l *layout) progress(next int) Progress {
	p := Progress{Total: l.total, From: l.from(next), BatchSize: l.size, Ends: l.to, PartialEvery: l.partialEvery, Batches: next}
	if l.partialEvery > 0 {
		p.Partials = next / l.partialEvery
	}
	return p
}

// precompute readies the layout for remaining on the pool sizes.
func (l *layout) precompute(sizes []int) {
	model := l.cost.model()
	l.onNodes = make([]costmodel.OnNodes, len(sizes))
	l.perTuple, l.partialMerge, l.finalMerge = make([]float64, len(sizes)), make([]float64, len(sizes)), make([]float64, len(sizes))
	l.due = make([]float64, len(sizes))
	// The last batch starts once the window has closed: all its work and
	// the final merge's are after the close.
	last, closed := len(l.to)-1, l.ready[len(l.ready)-1]
	for i, n := range sizes {
		o := model.OnNodes(n)
		l.onNodes[i] = o
		l.perTuple[i], l.partialMerge[i], l.finalMerge[i] = o.BatchPerTuple(), o.MergeSeconds(l.partialEvery), o.MergeSeconds(l.finalInputs())
		l.due[i] = l.deadline
		if l.tailMargin > 0 {
			l.due[i] -= TailHeadroom(l.tailMargin, closed, l.remaining(last, i), closed)
		}
	}
}

// unitBatchSize is the 1X batch size of section 3.1 on the smallest pool size
// s: the smallest whole-unit x with ceil(N/x)*BatchTime(s, x) <=
// 2*BatchTime(s, N), capped at the largest whole-unit x with BatchTime(s, x)
// < Cmax. It also returns that cap.
func unitBatchSize(cost costModel, total, unit int64, smallest int, cmax float64) (x, limit int64, err error) {
	if cost.batch(smallest, unit) >= cmax {
		return 0, 0, fmt.Errorf("one unit of %d tuples takes %.3gs on %d nodes, not below maxBatchDuration %.3gs", unit, cost.batch(smallest, unit), smallest, cmax)
	}
	units := ceilDiv(total, unit)
	// The cap: the largest whole-unit x with BatchTime(s, x) < Cmax; a window
	// that fits one batch is not capped. The check above makes it >= 1 unit.
	limit = units * unit
	if perTuple := cost.batchSerial + cost.batchParallel/float64(smallest); perTuple > 0 {
		if u := math.Ceil((cmax-cost.batchOverhead)/(float64(unit)*perTuple)) - 1; u < float64(units) {
			limit = int64(u) * unit
		}
	}
	budget := 2 * cost.batch(smallest, total)
	// For k batches the smallest whole-unit size is unitCeil(N/k). Every size
	// between two such values needs as many batches as the smaller one, at a
	// higher cost, so these are the only candidates; more batches cannot meet
	// the budget once k*overhead alone exceeds it.
	maxK := units
	if cost.batchOverhead > 0 {
		// Compared as floats: a tiny overhead overflows int64.
		if byOverhead := budget/cost.batchOverhead + 1; byOverhead < float64(maxK) {
			maxK = int64(byOverhead)
		}
	}
	// Every x below xNeeded fails the budget on the per-batch overheads
	// alone (ceil(N/x)*overhead + N*perTuple > budget), so the k that give
	// such sizes are skipped without being tried: x(k) < ceil(N/k)+unit, so
	// every k with N/k + unit + 1 <= xNeeded has one. The margin keeps
	// rounding from skipping a k that would pass.
	if o := cost.batchOverhead; o > 0 {
		perTuple := cost.batchSerial + cost.batchParallel/float64(smallest)
		n := float64(total)
		xNeeded := n * o / (2*o + n*perTuple) * (1 - 1e-6)
		if slack := xNeeded - float64(unit) - 1; slack > 0 {
			if skip := math.Floor(n/slack) + 1; skip < float64(maxK) {
				maxK = int64(skip)
			}
		}
	}
	// The test depends on x alone, so only the largest k of each distinct x
	// is tried: from x, the next larger size comes at k = ceil(N/x) - 1.
	// The search ends long before the cap; it only bounds the loop.
	const maxTries = 1 << 20
	for k, tries := maxK, 0; k >= 1 && tries < maxTries; tries++ {
		x = ceilDiv(ceilDiv(total, k), unit) * unit
		if float64(ceilDiv(total, x))*cost.batch(smallest, x) <= budget {
			break
		}
		k = (total - 1) / x
	}
	return min(max(x, unit), limit), limit, nil
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// batchSize is min(factor*unitSize, limit), without overflowing.
func batchSize(unitSize, limit int64, factor int) int64 {
	if factor < 1 || unitSize > limit/int64(factor) {
		return limit
	}
	return min(unitSize*int64(factor), limit)
}

// newLayout cuts query qi into batches of min(factor*X, cap) tuples.
func newLayout(qi int, q Query, arr arrivals, cost costModel, unitSize, limit int64, factor int) layout {
	size := batchSize(unitSize, limit, factor)
	total := arr.total()
	ends := make([]int64, 0, ceilDiv(total, size)+int64(len(q.Cuts)))
	from := int64(0)
	// A slice's batches end at its end: the next slice's start is cut anew.
	for _, to := range append(cutTuples(q, arr), total) {
		for ; from < to; from = min(from+size, to) {
			ends = append(ends, min(from+size, to))
		}
	}
	l := layoutOf(qi, q, arr, cost, ends)
	// The nominal size, which a window that fits one batch does not fill:
	// dispatch cuts batches of it when the stream runs ahead of the plan.
	l.size = size
	return l
}

// cutTuples are the tuples at q's cuts: where each slice of its window but
// the last ends, ascending, inside the window.
func cutTuples(q Query, arr arrivals) []int64 {
	var out []int64
	for _, at := range q.Cuts {
		k := int64(math.Floor(arr.cumAt(at) + 1e-6))
		if k > 0 && k < arr.total() && (len(out) == 0 || k > out[len(out)-1]) {
			out = append(out, k)
		}
	}
	return out
}

// layoutOf is query qi cut into batches that end at the given tuples,
// ascending, the last one the window's total; ends is kept, not copied. Its
// batch size is the largest batch, in whole units.
func layoutOf(qi int, q Query, arr arrivals, cost costModel, ends []int64) layout {
	l := layout{query: qi, name: q.Name, deadline: q.Deadline, cost: cost, total: arr.total(), to: ends, carried: q.Carried, tailMargin: q.TailMargin}
	unit := max(q.Granularity, 1)
	l.ready = make([]float64, len(ends))
	from := int64(0)
	for i, to := range ends {
		l.ready[i] = arr.readyAt(to)
		l.size = max(l.size, ceilDiv(to-from, unit)*unit)
		from = to
	}
	if q.PartialEvery > 0 {
		l.partialEvery = int(math.Ceil(q.PartialEvery*float64(len(l.to)) - 1e-9))
		l.partialEvery = max(l.partialEvery, 1)
	}
	if len(q.Cuts) > 0 {
		l.cutAfter = []int{}
		cuts := cutTuples(q, arr)
		for i, to := range ends[:len(ends)-1] {
			if _, found := slices.BinarySearch(cuts, to); found {
				l.cutAfter = append(l.cutAfter, i)
			}
		}
	}
	return l
}
