package dispatch

import (
	"sort"
	"time"
)

// UnsafeAt is the in-window deadline rule: the queries that the work left
// would make late if every step from now on took factor times what the
// queries' cost models say (factor: the slowdown of the steps the window
// has run so far against those models, learn.WindowSlowdown), on nodes
// nodes. The caller re-plans at once, with the slowdown applied, when any
// is named.
//
// The pool runs one step at a time, so a query's deadline must hold the
// work of every query due no later than it, not only its own: taken in
// deadline order (earliest deadline first, the order that meets every
// deadline whenever any order does), a query is unsafe when the step that
// holds the pool, then the remaining work of the queries due up to it
// (Query.SlackNow's count: the batches to the window's expected total, the
// partial merges and the final merge), end after its deadline. Done queries
// take no time. A factor of 1 or less names no query: steps that keep to
// the model leave the plan's promise standing, and what else can make a
// window late (rates, failures, lost nodes) has rules of its own. The
// result is sorted by deadline, then name.
func UnsafeAt(now time.Time, queries []Query, factor float64, nodes int) []string {
	if !(factor > 1) || nodes < 1 {
		return nil
	}
	scaled := make([]Query, len(queries))
	for i, q := range queries {
		q.Cost = q.Cost.Scaled(factor)
		scaled[i] = q
	}
	return LateAt(now, scaled, nodes)
}

// LateAt is the queries the work left would make late if every step from
// now on took what the queries' cost models say, on nodes nodes, taken in
// deadline order as UnsafeAt does. The result is sorted by deadline, then
// name.
func LateAt(now time.Time, queries []Query, nodes int) []string {
	if nodes < 1 {
		return nil
	}
	order := make([]int, len(queries))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		qa, qb := &queries[order[a]], &queries[order[b]]
		if !qa.Deadline.Equal(qb.Deadline) {
			return qa.Deadline.Before(qb.Deadline)
		}
		return qa.Name < qb.Name
	})
	busy := FreeAt(queries, now).Sub(now)
	var late []string
	for _, i := range order {
		q := &queries[i]
		if q.Final != nil && q.Final.State == Succeeded {
			continue
		}
		// SlackNow is the deadline less now less the query's own work left.
		busy += q.Deadline.Sub(now) - q.SlackNow(now, nodes)
		if now.Add(busy).After(q.Deadline) {
			late = append(late, q.Name)
		}
	}
	return late
}
