package planner

import (
	"context"
	"fmt"
	"math"
	"slices"
)

// Queries over several streams (a join of orders and lineitem): every batch
// covers the same interval of time on each of the query's inputs, so that
// the tuples of one batch only meet the tuples of the same batch (aligned
// batches). The query's cost model is in the tuples of all its inputs
// together: a batch of an interval takes overhead + t·(serial + parallel/p)
// for the t tuples its inputs hold in it. So a query over inputs is planned
// as one query whose arrivals are the inputs' together; a batch's end, a
// count of those tuples, is an instant, and each input's range is what it
// holds up to that instant.

// Input is one stream a query over several reads.
type Input struct {
	// Name names the input in the plan's ranges.
	Name string
	// Rates is the input's piecewise-constant arrival rate over the query's
	// window, ascending by Offset, the first at 0.
	Rates []RateSegment
	// LateFraction is the share of the input's tuples that arrive after the
	// batch of their time has been cut: each is joined, in the next batch,
	// against the other inputs' earlier batches, which the planner prices
	// as that batch reading it once more (see lateWork).
	LateFraction float64
}

// InputRange is the tuples [FromTuple, ToTuple) of one input a batch of a
// query over several reads, numbered from the window's start on that input.
type InputRange struct {
	Input     string `json:"input"`
	FromTuple int64  `json:"fromTuple"`
	ToTuple   int64  `json:"toTuple"`
}

// validateInputs reports a query over inputs whose inputs are not each
// named once with a rate profile of their own.
func validateInputs(w Workload) error {
	for _, q := range w.Queries {
		if len(q.Inputs) == 0 {
			continue
		}
		bad := func(format string, args ...any) error {
			return &InvalidError{Schedule: w.Name, Query: q.Name, Err: fmt.Errorf(format, args...)}
		}
		if len(q.Rates) > 0 {
			return bad("spec.inputs: a query over several inputs has the rates of its inputs, not one of its own")
		}
		if q.Stream != "" || q.Carried > 0 {
			return bad("spec.inputs: a query over several inputs shares no stream and no slice with other queries yet")
		}
		seen := map[string]bool{}
		for i, in := range q.Inputs {
			if in.Name == "" || seen[in.Name] {
				return bad("spec.inputs[%d].name: each input needs a name of its own, got %q", i, in.Name)
			}
			seen[in.Name] = true
			if !(in.LateFraction >= 0 && in.LateFraction <= 1) {
				return bad("spec.inputs[%d].lateFraction: must be between 0 and 1, got %g", i, in.LateFraction)
			}
			one := q
			one.Inputs, one.Rates = nil, in.Rates
			if err := validateQuery(one); err != nil {
				return bad("spec.inputs[%d] (%s): %w", i, in.Name, err)
			}
		}
	}
	return nil
}

// combinedRates is the arrival rate of all of q's inputs together: at every
// offset where one input's rate changes, the sum of their rates.
func combinedRates(q Query) []RateSegment {
	var offsets []float64
	for _, in := range q.Inputs {
		for _, r := range in.Rates {
			offsets = append(offsets, r.Offset)
		}
	}
	slices.Sort(offsets)
	offsets = slices.Compact(offsets)
	out := make([]RateSegment, 0, len(offsets))
	for _, at := range offsets {
		sum := 0.0
		for _, in := range q.Inputs {
			sum += rateAt(in.Rates, at)
		}
		out = append(out, RateSegment{Offset: at, TuplesPerSecond: sum})
	}
	return out
}

// lateWork is the share of q's tuples, over all its inputs, that arrive
// late: each is read by one batch more (its own, and the next one's join
// against the earlier batches), so a batch's per-tuple work grows by this
// share. An assumption, documented: a late tuple costs what a tuple costs,
// and meets as many earlier tuples as the batch it arrives in.
func lateWork(q Query) float64 {
	late, all := 0.0, 0.0
	for _, in := range q.Inputs {
		n := float64(inputCurve(q, in).total())
		late += in.LateFraction * n
		all += n
	}
	if all == 0 {
		return 0
	}
	return late / all
}

// rateAt is the rate in force at offset of a profile.
func rateAt(rates []RateSegment, offset float64) float64 {
	rate := 0.0
	for _, r := range rates {
		if r.Offset <= offset {
			rate = r.TuplesPerSecond
		}
	}
	return rate
}

// inputCurve is the arrival curve of one input of q.
func inputCurve(q Query, in Input) arrivals {
	one := q
	one.Inputs, one.Rates = nil, in.Rates
	return newArrivals(one, 1)
}

// OneStream is w with each query over several inputs as one query of its
// inputs' arrivals together, its batch model priced for the late share of
// its tuples: how the planner plans it. The run time needs nothing else,
// since it cuts every batch's inputs at one instant itself; re-plans and
// rate measurements then work on the one stream. An error names a query
// whose inputs are not valid.
func OneStream(w Workload) (Workload, error) {
	if err := validateInputs(w); err != nil {
		return w, err
	}
	return oneStream(w), nil
}

func oneStream(w Workload) Workload {
	if !slices.ContainsFunc(w.Queries, func(q Query) bool { return len(q.Inputs) > 0 }) {
		return w
	}
	together := w
	together.Queries = slices.Clone(w.Queries)
	for i := range together.Queries {
		if q := &together.Queries[i]; len(q.Inputs) > 0 {
			late := lateWork(*q)
			q.Cost.Batch.Serial *= 1 + late
			q.Cost.Batch.Parallel *= 1 + late
			q.Rates, q.Inputs = combinedRates(*q), nil
		}
	}
	return together
}

// planInputs plans w with each query over several inputs as one query of
// its inputs' arrivals together, and writes each of its batches' ranges per
// input.
func planInputs(ctx context.Context, w Workload, plan func(context.Context, Workload) (Document, error)) (Document, error) {
	if !slices.ContainsFunc(w.Queries, func(q Query) bool { return len(q.Inputs) > 0 }) {
		return plan(ctx, w)
	}
	together := oneStream(w)
	doc, err := plan(ctx, together)
	if err != nil {
		return Document{}, err
	}
	joins := map[string]join{}
	for i, q := range w.Queries {
		if len(q.Inputs) > 0 {
			j := join{q: q, all: newArrivals(together.Queries[i], 1)}
			for _, in := range q.Inputs {
				j.inputs = append(j.inputs, inputCurve(q, in))
			}
			joins[q.Name] = j
		}
	}
	for i, s := range doc.Steps {
		if j, joined := joins[s.Query]; joined {
			doc.Steps[i].Ranges = j.ranges(s)
		}
	}
	return doc, nil
}

// join is a query over several inputs with the arrival curves its ranges
// are read from: all, the inputs' arrivals together, which its steps'
// tuples count, and each input's own.
type join struct {
	q      Query
	all    arrivals
	inputs []arrivals
}

// ranges is each input's range of step s: what each input holds between
// the instants its tuples, counted on all, arrive by. A merge covers the
// same span of time as the batches it merges; the last tuple of all is the
// window's end on every input.
func (j join) ranges(s Step) []InputRange {
	total := j.all.total()
	instant := func(k int64) float64 {
		if k >= total {
			return math.Inf(1)
		}
		return j.all.timeOf(k)
	}
	from, to := instant(s.FromTuple), instant(s.ToTuple)
	ranges := make([]InputRange, len(j.q.Inputs))
	for i, in := range j.q.Inputs {
		curve := j.inputs[i]
		held := func(t float64) int64 {
			if math.IsInf(t, 1) {
				return curve.total()
			}
			return min(int64(math.Floor(curve.cumAt(t)+1e-6)), curve.total())
		}
		lo := held(from)
		if s.FromTuple == 0 {
			lo = 0
		}
		ranges[i] = InputRange{Input: in.Name, FromTuple: lo, ToTuple: held(to)}
	}
	return ranges
}
