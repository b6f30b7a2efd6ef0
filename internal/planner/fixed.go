package planner

import "fmt"

// SimulateFixed runs the plan's batches of one batch-size factor through
// GenBatchSchedule (Algorithm 2) on a pool held at nodes nodes that never
// grows: the fixed-pool baseline, which the baselines compare laxity with.
// The batch sizes are those of Plan (1X on the smallest pool size, times
// factor, capped at Cmax), whatever nodes is, so that only the pool differs
// from laxity's. Unlike the search, the run does not stop at a negative slack
// but goes on until every query is done, so that its steps show which queries
// are late and by how much. Errors report what Plan rejects, and a pool or
// factor below one.
func SimulateFixed(w Workload, nodes, factor int) ([]Step, error) {
	if nodes < 1 || factor < 1 {
		return nil, &InvalidError{Schedule: w.Name, Err: fmt.Errorf("a fixed pool needs at least one node and a factor of at least 1, got %d nodes and %dX", nodes, factor)}
	}
	p, err := prepare(w)
	if err != nil {
		return nil, err
	}
	sizes := []int{nodes}
	s := newSim(p.layouts(factor, sizes), sizes, w.Planning.Policy)
	s.run(nodePolicy{fixed: 0}, runToEnd)
	return s.steps(), nil
}
