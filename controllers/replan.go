package controllers

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/laxity-dev/laxity/internal/planner"
)

// Re-planning while windows are open (DESIGN.md, "Run time"). The planner
// plans whole windows: every query's tuples from 0, its batches from index 0,
// its arrivals from the declared rate. A plan made mid-window from the specs
// alone would therefore plan again the batches that already ran (all of them
// ready at once, at the new origin), and, under the pessimistic rate model,
// assume the declared rate for the part of the window that has already
// arrived at a higher one. Both make such a plan wrong where it matters: it
// over-states the work left (up to an infeasible plan late in the window) and
// under-states the window's total (what the run-time slack is computed from).
//
// So a query whose window has opened is planned from its observed progress:
// the tuples that arrived but are not in a launched batch yet are ready at
// the new origin, the rest arrive by the rate model from now on, and the
// plan's steps are then numbered on from the steps already launched. The new
// plan's batch size applies from the next batch on, which is what dispatch
// does anyway, since it cuts batches from the end of the last launched one.

// progress is how far a query's launches have got: the tuples and batches
// covered by launched batches (the next batch starts at tuples, as in
// dispatch), the partial merges launched, and the first tuple of the last
// launched batch.
type progress struct {
	tuples   int64
	batches  int
	partials int
	lastFrom int64
}

func progressOf(query string, apps []unstructured.Unstructured) progress {
	batches, partials, _ := observeSteps(query, apps)
	p := progress{batches: len(batches), partials: len(partials)}
	if n := len(batches); n > 0 {
		p.tuples = batches[n-1].step.ToTuple
		p.lastFrom = batches[n-1].step.FromTuple
	}
	return p
}

// remainingQuery re-bases pq, whose window had opened elapsed seconds before
// arrived and done were observed (now; the plan's origin is now or later,
// see executable), on what is left of it: the arrived tuples that no
// launched batch covers arrive over the window's past, so that they are all
// ready at the origin, and the rest arrive at pq's rates from now on. The
// window, the deadline and the cost model stay; the tuples are numbered from
// the first one not launched.
//
// How many tuples are still to come follows the rate model (seed section
// 5), with declared the window's total at the declared rates: the
// pessimistic model assumes at least that total (a stream that was slower
// catches up by the window end) and more if pq's rates from now on, which
// then hold a faster measured rate, give more; the optimistic model assumes
// at most that total (a stream that was faster has delivered early) and
// fewer if the declared rates from now on give fewer.
//
// A query with nothing left to batch (its window has closed and every tuple
// is launched) keeps its last launched batch in the plan, so that its final
// merge is planned after it: the planner needs a tuple to plan a query, and
// one batch too many is a small over-estimate.
//
// Modelled approximations, all on the side of more work except the first: a
// batch that is running at the re-plan is taken as done (the pool counts as
// free at the origin); for a query without partial aggregation, the final
// merge's inputs from batches launched before the re-plan are charged as
// merge overhead at the smallest pool size, sizes[0].
func remainingQuery(pq planner.Query, elapsed float64, arrived int64, done progress, declared float64, pessimistic bool, smallest int) (planner.Query, progress) {
	span := pq.WindowEnd - pq.WindowStart
	var future []planner.RateSegment
	futureTuples := 0.0
	if elapsed < span {
		future = []planner.RateSegment{{Offset: elapsed, TuplesPerSecond: rateAt(pq.Rates, elapsed)}}
		for _, s := range pq.Rates {
			if s.Offset > elapsed {
				future = append(future, s)
			}
		}
		futureTuples = tuplesBetween(future, elapsed, span)
		want := min(futureTuples, max(declared-float64(arrived), 0))
		if pessimistic {
			want = max(futureTuples, declared-float64(arrived))
		}
		switch {
		case want == futureTuples:
		case futureTuples > 0:
			for i := range future {
				future[i].TuplesPerSecond *= want / futureTuples
			}
		default:
			future = []planner.RateSegment{{Offset: elapsed, TuplesPerSecond: want / (span - elapsed)}}
		}
		futureTuples = want
	}
	if float64(arrived-done.tuples)+futureTuples < 1 && done.batches > 0 {
		done = progress{tuples: done.lastFrom, batches: done.batches - 1, partials: done.partials, lastFrom: done.lastFrom}
	}
	backlog := max(arrived-done.tuples, 0)
	out := pq
	out.Rates = append([]planner.RateSegment{{Offset: 0, TuplesPerSecond: float64(backlog) / min(elapsed, span)}}, future...)
	if pq.PartialEvery == 0 && done.batches > 0 {
		m := pq.Cost.Merge
		out.Cost.Merge.Overhead += float64(done.batches) * m.PerUnit(smallest)
	}
	return out, done
}

// tuplesBetween is the integral of a piecewise-constant rate over [from, to],
// offsets from the window start; the last segment holds until to.
func tuplesBetween(segments []planner.RateSegment, from, to float64) float64 {
	total := 0.0
	for i, s := range segments {
		end := to
		if i+1 < len(segments) {
			end = min(segments[i+1].Offset, to)
		}
		if start := max(s.Offset, from); end > start {
			total += s.TuplesPerSecond * (end - start)
		}
	}
	return total
}

// numberOn renumbers the plan's steps of a query that was planned from its
// progress done (remainingQuery) as steps of the whole query: batch indices
// and tuple ranges continue after the launched ones, merge ordinals after
// the launched partial merges, and the final merge covers the whole window.
func numberOn(doc *planner.Document, query string, done progress, partialAggregation bool) {
	for i := range doc.Steps {
		s := &doc.Steps[i]
		if s.Query != query {
			continue
		}
		switch s.Kind {
		case planner.StepBatch:
			s.Index += done.batches
			s.FromTuple += done.tuples
			s.ToTuple += done.tuples
		case planner.StepPartial:
			s.Index += done.partials
			s.FromTuple += done.tuples
			s.ToTuple += done.tuples
		case planner.StepFinal:
			s.Index += done.partials
			s.ToTuple += done.tuples
			if !partialAggregation {
				s.Inputs += done.batches
			}
		}
	}
	for i := range doc.Queries {
		if doc.Queries[i].Name == query {
			doc.Queries[i].Batches += done.batches
		}
	}
}

// executable reports whether the plan's steps can have the nodes it gives
// them: a step that starts within the provisioning lead time of the origin
// (lead, in seconds) can only have the nodes that are ready now. The planner
// takes its initial pool size as there at the origin, which holds for a plan
// made before the windows open but not for one made while they run: a
// re-plan for a faster stream that starts on more nodes than are ready
// would count on them for a lead time they are not there, fall behind, and
// miss the deadline it promised to meet.
func executable(doc *planner.Document, ready int, lead float64) bool {
	for _, s := range doc.Steps {
		if s.Start < lead && s.Nodes > ready {
			return false
		}
	}
	return true
}
