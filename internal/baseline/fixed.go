package baseline

import (
	"fmt"

	"github.com/laxity-dev/laxity/internal/planner"
)

// fixed is the fixed-pool baseline: laxity's batch-size determination and LLF
// on a pool held at n nodes. For every batch-size factor the planner
// simulates its own batches on n nodes without growing the pool
// (planner.SimulateFixed); the cheapest factor that meets every deadline
// wins, ties to the factor listed first; when none does, the least late. The
// pool holds n nodes from the origin until the last step ends.
//
// w is the workload as configured, not modelled: the planner applies the
// runtime margin itself.
func fixed(w planner.Workload, n int) (Result, error) {
	var best Result
	for i, f := range w.Planning.BatchSizeFactors {
		steps, err := planner.SimulateFixed(w, n, f)
		if err != nil {
			return Result{}, fmt.Errorf("the fixed pool of %d nodes: %w", n, err)
		}
		r := heldPool(w, Fixed, n, steps)
		if i == 0 || r.cheaperThan(best) {
			best = r
		}
	}
	return best, nil
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
