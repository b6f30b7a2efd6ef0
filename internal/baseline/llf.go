package baseline

import (
	"math"

	"github.com/laxity-dev/laxity/internal/planner"
)

// llfWithoutBatching is the LLF-without-batching baseline on a pool held at n
// nodes: LLF without batch-size determination. Whenever the pool is free,
// among the queries with at least one arrival unit pending it runs the one
// with the least slack on all its pending tuples as one batch. Slack is the
// deadline, less now, less the least work the query has left: this batch, the
// tuples still to arrive as one more batch, and the final merge (the
// dispatcher's slack, with no batch size to cut the rest by). Ties go to the
// query listed first. When the pool is free and nothing is pending it waits
// for the next unit to arrive. A query's final merge, of all its batches
// (partial aggregation off), runs right after the batch that takes its last
// tuple, which is ready only once the window and its allowed lateness have
// closed. Late queries run on to the end, so that the result says by how much
// they miss. Each batch costs at least its overhead, which bounds the number
// of steps by the horizon over it.
func llfWithoutBatching(w planner.Workload, curves []arrivalCurve, n int) Result {
	processed := make([]int64, len(w.Queries))
	batches := make([]int, len(w.Queries))
	var steps []planner.Step
	now := 0.0
	for open := len(w.Queries); open > 0; {
		chosen, chosenTo := -1, int64(0)
		var chosenSlack float64
		next := math.Inf(1)
		for q := range w.Queries {
			c := &curves[q]
			if processed[q] == c.Total() {
				continue
			}
			to := c.readyTo(now)
			if to == processed[q] {
				// Processing stops at unit boundaries: this is the next unit.
				next = math.Min(next, c.unitReady(processed[q]/c.unit))
				continue
			}
			if slack := w.Queries[q].Deadline - now - leastRemaining(w.Queries[q], c, n, processed[q], to, batches[q]); chosen < 0 || slack < chosenSlack {
				chosen, chosenTo, chosenSlack = q, to, slack
			}
		}
		if chosen < 0 {
			now = next
			continue
		}
		q, c := &w.Queries[chosen], &curves[chosen]
		batch := planner.Step{
			Query: q.Name, Kind: planner.StepBatch, Index: batches[chosen],
			FromTuple: processed[chosen], ToTuple: chosenTo, Ready: c.ReadyAt(chosenTo),
			Start: now, End: now + q.Cost.BatchSeconds(n, chosenTo-processed[chosen]), Nodes: n,
		}
		steps = append(steps, batch)
		now = batch.End
		processed[chosen], batches[chosen] = chosenTo, batches[chosen]+1
		if chosenTo == c.Total() {
			steps = append(steps, finalMerge(*q, c.Total(), batches[chosen], now, n))
			now = steps[len(steps)-1].End
			open--
		}
	}
	return heldPool(w, LLFNoBatching, n, steps)
}

// leastRemaining is the least modelled work query q has left on n nodes
// when it processes [from, to) now after done earlier batches: this batch,
// then the work planner.RemainingSeconds counts with no batch size, which
// takes the tuples still to arrive as one more batch and the final merge
// of them all.
func leastRemaining(q planner.Query, c *arrivalCurve, n int, from, to int64, done int) float64 {
	after := planner.Progress{Total: c.Total(), From: to, Batches: done + 1}
	return q.Cost.BatchSeconds(n, to-from) + planner.RemainingSeconds(q.Cost.OnNodes(n), after)
}

// finalMerge is query q's final merge of inputs batch results over its
// total tuples, started at start on n nodes right after its last batch.
func finalMerge(q planner.Query, total int64, inputs int, start float64, n int) planner.Step {
	return planner.Step{
		Query: q.Name, Kind: planner.StepFinal, FromTuple: 0, ToTuple: total, Inputs: inputs,
		Ready: start, Start: start, End: start + q.Cost.MergeSeconds(n, inputs), Nodes: n,
	}
}
