package planner

import "github.com/laxity-dev/laxity/internal/costmodel"

// Progress is how far a query has got through its window, as its remaining
// work is counted from: the next batch is batch number Batches and starts at
// tuple From; Partials partial merges have run or been launched.
type Progress struct {
	// Total is the tuple count the work runs to: the window's total, or
	// what the query is expected to have by its last batch.
	Total int64
	// From is the first tuple no earlier batch covers.
	From int64
	// BatchSize cuts the tuples from From to Total into batches, the last
	// one possibly short.
	BatchSize int64
	// Ends, when set, are the plan's batch ends by batch index (0 where the
	// plan holds none, Document.BatchEnds): the tuples from From to Total
	// are cut at those of them from batch Batches on, and only what is left
	// after the last cut by BatchSize.
	Ends []int64
	// PartialEvery is c: a partial merge of c batch results follows every
	// c-th batch but the last; 0 for no partial merges.
	PartialEvery int
	// Batches and Partials are the batches and partial merges before the
	// next batch.
	Batches, Partials int
}

// RemainingSeconds is the modelled work a query has left at p, in seconds,
// on the pool size cost was made for (costmodel.Model.OnNodes): its batches
// still to run, the partial merges they call for and the final merge of
// every partial and the batch results after the last one. A query's slack
// is its deadline, less now, less this. The planner's simulation and
// dispatch both count slack with it, so that the operator orders queries
// as the plan did.
func RemainingSeconds(cost costmodel.OnNodes, p Progress) float64 {
	rest := max(p.Total-p.From, 0)
	left, tail := int64(0), rest
	if rest > 0 && p.Batches < len(p.Ends) {
		last := p.From
		for _, end := range p.Ends[p.Batches:] {
			if end > last && end < p.Total {
				left++
				last = end
			}
		}
		tail = p.Total - last
	}
	switch {
	case p.BatchSize > 0:
		left += (tail + p.BatchSize - 1) / p.BatchSize
	case tail > 0:
		// No batch size to cut the rest by: it is one batch.
		left++
	}
	batches := p.Batches + int(left)
	partials, partialMerges := p.Partials, 0
	if c := p.PartialEvery; c > 0 {
		// Partial merges follow batches c, 2c, ... before the last (k-th)
		// batch: (k-1)/c of them in all.
		if due := (batches - 1) / c; due > partials {
			partialMerges, partials = due-partials, due
		}
	}
	// The sum is in the order the planner has always added it, so that its
	// plans stay the same to the last bit.
	work := float64(left)*cost.BatchOverhead() + float64(rest)*cost.BatchPerTuple() +
		cost.MergeSeconds(partials+batches-partials*p.PartialEvery)
	if p.PartialEvery > 0 {
		work += float64(partialMerges) * cost.MergeSeconds(p.PartialEvery)
	}
	return work
}

// TailHeadroom is the time a query whose next step starts at start, with
// left seconds of work from then and its window closed (its last batch
// ready) at closed, keeps spare for its tail margin: margin times the part
// of that work that runs after closed, where no re-plan can make up for a
// step that runs long. A plan starts a step only with that much slack to
// spare, and dispatch holds a step that would leave a tighter query less.
func TailHeadroom(margin, start, left, closed float64) float64 {
	return margin * max(0, min(left, start+left-closed))
}
