package baseline

import (
	"math"

	"github.com/laxity-dev/laxity/internal/planner"
)

// TriggerInterval is the streaming baseline's micro-batch trigger, in
// seconds: a common Spark Structured Streaming processing-time trigger,
// long enough that per-batch overheads do not swamp a small pool.
const TriggerInterval = 30.0

// microBatch is the micro-batch streaming baseline: eager micro-batch
// streaming, which processes tuples as they come instead of waiting for
// batches worth their overhead.
//
// The pool holds streamingPool's size from the origin until the last step
// ends. Triggers fire every TriggerInterval seconds from the origin. At
// each, every query in turn (in the workload's order: streaming knows no
// deadlines) processes the arrival units that are ready and that no
// earlier micro-batch took, one step at a time on the pool; a query with
// nothing new runs nothing. What each query takes is fixed when the
// trigger fires. When a trigger's micro-batches run past the next trigger,
// the next starts as soon as they end, as Spark does, and the triggers
// after it keep their interval. A query's final merge, of all its
// micro-batches' results, runs right after the micro-batch that takes its
// last tuple.
func microBatch(w planner.Workload, curves []arrivalCurve) Result {
	n := streamingPool(w, curves)
	processed := make([]int64, len(w.Queries))
	batches := make([]int, len(w.Queries))
	var steps []planner.Step
	trigger := 0.0
	for open := len(w.Queries); open > 0; {
		now, ran := trigger, false
		for q := range w.Queries {
			c := &curves[q]
			to := c.readyTo(trigger)
			if to == processed[q] {
				continue
			}
			query := w.Queries[q]
			steps = append(steps, planner.Step{
				Query: query.Name, Kind: planner.StepBatch, Index: batches[q],
				FromTuple: processed[q], ToTuple: to, Ready: c.ReadyAt(to),
				Start: now, End: now + query.Cost.BatchSeconds(n, to-processed[q]), Nodes: n,
			})
			now, ran = steps[len(steps)-1].End, true
			processed[q], batches[q] = to, batches[q]+1
			if to == c.Total() {
				steps = append(steps, finalMerge(query, c.Total(), batches[q], now, n))
				now = steps[len(steps)-1].End
				open--
			}
		}
		following := (math.Floor(trigger/TriggerInterval+eps) + 1) * TriggerInterval
		if !ran {
			// Nothing was new: skip the triggers before the next unit.
			next := math.Inf(1)
			for q, c := range curves {
				if processed[q] < c.Total() {
					next = math.Min(next, c.unitReady(processed[q]/c.unit))
				}
			}
			following = math.Max(following, math.Ceil(next/TriggerInterval-eps)*TriggerInterval)
		}
		trigger = math.Max(following, now)
	}
	return heldPool(w, MicroBatchStreaming, n, steps)
}

// streamingPool is the smallest pool size on which one trigger's
// micro-batches of every query, at each query's peak arrival rate, take
// no longer than the trigger interval together: the pool that keeps up
// with the arrivals. When no size does, it is the largest, which falls
// behind.
func streamingPool(w planner.Workload, curves []arrivalCurve) int {
	for _, n := range w.Pool.Sizes {
		seconds := 0.0
		for q, c := range curves {
			seconds += w.Queries[q].Cost.Batch.Seconds(n, c.peakRate*TriggerInterval)
		}
		if seconds <= TriggerInterval {
			return n
		}
	}
	return w.Pool.Sizes[len(w.Pool.Sizes)-1]
}
