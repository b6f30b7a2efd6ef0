package dispatch

import (
	"slices"
	"time"

	"github.com/laxity-dev/laxity/internal/planner"
)

// Shared batches.
//
// A shared batch is one step that reads a stream's tuples once for several
// queries (its members) and leaves each member its own result. Each member
// sees it as its own batch of that index, so that everything per query
// (the next batch, merges after it, retries, slack) goes on unchanged; what
// the pool holds is counted once, by the member that accounts for it.

// SharedMembers are the queries launch, a batch about to be launched,
// serves: those of the plan's shared batch of that index (Query.Shared), or
// for a retry those of the attempt that failed, that are among queries,
// not held, and whose own next step is this very batch (same index, tuple
// range and attempt). In name order; nil when fewer than two are, and the
// batch runs alone. A member whose progress differs (added mid-window, a
// retry of its own pending) is left out and runs its batch alone.
func SharedMembers(now time.Time, s Settings, queries []Query, launch Step) []string {
	if launch.Kind != planner.StepBatch {
		return nil
	}
	var lead *Query
	for i := range queries {
		if queries[i].Name == launch.Query {
			lead = &queries[i]
		}
	}
	if lead == nil {
		return nil
	}
	candidates := lead.Shared[launch.Index]
	if launch.Index < len(lead.Batches) {
		candidates = lead.Batches[launch.Index].Members
	}
	if !slices.Contains(candidates, launch.Query) {
		return nil
	}
	var members []string
	for i := range queries {
		q := &queries[i]
		if !slices.Contains(candidates, q.Name) || q.Held {
			continue
		}
		if q.Name == launch.Query {
			members = append(members, q.Name)
			continue
		}
		next, _, _ := q.next(now, s)
		if next != nil && next.Kind == launch.Kind && next.Index == launch.Index && next.FromTuple == launch.FromTuple &&
			next.ToTuple == launch.ToTuple && next.Attempt == launch.Attempt {
			members = append(members, q.Name)
		}
	}
	if len(members) < 2 {
		return nil
	}
	slices.Sort(members)
	return members
}

// holdsPool reports whether attempt a of q holds the pool and is q's to
// count: Pending or Running, and, for a shared batch, q accounts for it.
func (q *Query) holdsPool(a Attempt, queries []Query) bool {
	return (a.State == Pending || a.State == Running) && q.accounts(a, queries)
}

// accounts reports whether q is the member that accounts for attempt a on
// the pool: a step of one query is its own; a shared batch is its first
// member among queries, so that its nodes and its being stuck count once.
func (q *Query) accounts(a Attempt, queries []Query) bool {
	if len(a.Members) == 0 {
		return true
	}
	for _, m := range a.Members {
		if slices.ContainsFunc(queries, func(o Query) bool { return o.Name == m }) {
			return m == q.Name
		}
	}
	return false
}

// attemptSeconds is the modelled duration of attempt a of step on nodes:
// the step's by q's model, and for a shared batch the sum of its members'
// batches alone (of those among queries), which the shared step takes no
// longer than when its scan's start-up is at most theirs together
// (docs/design.md): a bound that never takes a shared batch for stuck, or
// the pool for free, too soon.
func (q *Query) attemptSeconds(a Attempt, step Step, queries []Query) float64 {
	if len(a.Members) == 0 || step.Kind != planner.StepBatch {
		return q.stepSeconds(step, max(a.Nodes, 1))
	}
	total := 0.0
	for i := range queries {
		if slices.Contains(a.Members, queries[i].Name) {
			total += queries[i].stepSeconds(step, max(a.Nodes, 1))
		}
	}
	return max(total, q.stepSeconds(step, max(a.Nodes, 1)))
}
