// Package replan makes a plan while windows are open, from what has been
// observed: the operator's ElasticSchedule controller calls it, and so does
// the execution simulator, so that the evidence shows the operator's own
// re-planning.
//
// The planner plans whole windows: every query's tuples from 0, its batches
// from index 0, its arrivals from the declared rate. A plan made mid-window
// from the specs alone would therefore plan again the batches that already
// ran (all of them ready at once, at the new origin), and, under the
// pessimistic rate model, assume the declared rate for the part of the
// window that has already arrived at a higher one. Both make such a plan
// wrong where it matters: it over-states the work left (up to an infeasible
// plan late in the window) and under-states the window's total (what the
// run-time slack is computed from).
//
// So a query whose window has opened is planned from its observed progress:
// the tuples that arrived but are not in a launched batch yet are ready at
// the new origin, the rest arrive by the rate model from now on, and the
// plan's steps are then numbered on from the steps already launched. The new
// plan's batch size applies from the next batch on, which is what dispatch
// does anyway, since it cuts batches from the end of the last launched one.
//
// The package is pure: no Kubernetes imports, no clock.
package replan

import (
	"context"
	"math"

	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/planner"
)

// Progress is how far a query's launches have got: the tuples and batches
// covered by launched batches (the next batch starts at Tuples, as in
// dispatch), the partial merges launched, and the first tuple of the last
// launched batch.
type Progress struct {
	Tuples   int64
	Batches  int
	Partials int
	LastFrom int64
}

// Observed is what is known of one query at a re-plan.
type Observed struct {
	// Arrived is the tuples arrived by now.
	Arrived int64
	Done    Progress
	// Measured is the arrival rate over the schedule's rate window, in
	// tuples per second; 0 when none was measured (a measured 0 would
	// raise no rate either).
	Measured float64
	// Resolution is the least rate difference the measurement can tell:
	// one arrival unit over the rate window (Resolution).
	Resolution float64
}

// Resolution is the least rate difference a measurement over window
// seconds of arrivals counted in units of granularity tuples can tell. A
// stream at its declared rate measures up to this much above or below it,
// as whole units fall inside or outside the window.
func Resolution(granularity int64, window float64) float64 {
	if window <= 0 {
		return 0
	}
	return float64(max(granularity, 1)) / window
}

// Rates says how re-planning treats rates that differ from the declared
// ones.
type Rates struct {
	// Pessimistic assumes at least the declared total arrives by the window
	// end, and that a faster measured rate holds for the rest of the window;
	// otherwise the declared rates are kept and a stream that was faster has
	// delivered early.
	Pessimistic bool
	// Tolerance is the fraction by which a measured rate may exceed what
	// the plan supports before it is re-planned.
	Tolerance float64
}

// Verdict is how a measured rate compares with the plan in force.
type Verdict int

const (
	// Holds is a rate the plan in force stands for.
	Holds Verdict = iota
	// Exceeds is a stream faster than the plan supports.
	Exceeds
	// FellBack is a stream that has slowed below the faster measured rate
	// the plan assumed instead of the declared one. Such a plan expects tuples
	// that will not come: its batches, sized for them, fill late or not at
	// all, and every query's last batch waits for its window to close.
	FellBack
)

// NoiseSigmas is how many standard deviations of a measurement's noise a
// measured rate must differ by before it counts. A rate is measured at
// every poll, of every query, over windows that overlap: at 3σ (0.13% of
// measurements on either side) a schedule of 13 Poisson streams at their
// declared rates re-planned in most windows, at 5σ in none of 100
// (docs/experiments.md, "Variable input rates"). A lasting change too small
// for one window is told by the count since the plan was made, whose
// noise shrinks as it grows.
const NoiseSigmas = 5

// Noise is the least difference from rate a measurement can tell from
// chance: NoiseSigmas standard deviations of the count of arrival units
// over the rate window of a Poisson stream at rate (σ = √(rate ×
// resolution) in tuples per second, since rate / resolution units arrive
// on average), and never less than one unit over the window (the
// resolution). A stream of 9,500 tuples per second in units of 9,500,
// measured over 3 minutes, counts 180 units give or take 13: 37% of its rate.
func (o Observed) Noise(rate float64) float64 {
	if rate <= 0 || o.Resolution <= 0 {
		return o.Resolution
	}
	return max(o.Resolution, NoiseSigmas*math.Sqrt(rate*o.Resolution))
}

// Compare judges a query's measured rate (0: none measured) against the
// plan in force. The plan's maximum supported rate factor is relative to
// the rate the plan assumed: the declared one, or a faster measured one that
// a pessimistic re-plan assumed from its origin on (assumed, 0 if none).
// Comparing with the declared rate alone re-planned on every pass once a
// re-plan had raised the rate. An infeasible plan supports no rate (factor
// 0): re-planning it for rates would only make the same plan again.
//
// A measured rate is a count of arrival units over the rate window, and a
// stream that keeps to its rate counts more or fewer from one pass to the
// next by chance (Noise). A stream exceeds the plan only when it is faster
// than the plan supports, with the tolerance, by more than that noise; it
// falls back only when it is slower than the assumed rate, with the
// tolerance, by more than the noise too. So a stream at its rate, even
// bursty as a Poisson process is, re-plans neither way, and does not move
// the pool; a plan with no headroom beyond its rate is not re-made for a
// unit that happened to fall inside the window.
func Compare(o Observed, declared, assumed, factor float64, r Rates) Verdict {
	planned := max(declared, assumed)
	switch {
	case factor <= 0 || planned <= 0 || o.Measured <= 0:
		return Holds
	case o.Measured > planned*factor*(1+r.Tolerance)+o.Noise(planned*factor):
		return Exceeds
	case assumed > declared && o.Measured+o.Noise(assumed) < assumed*(1-r.Tolerance):
		return FellBack
	}
	return Holds
}

// Plan makes a new plan for w, whose origin is now, from what was observed
// of its queries (by name; a query whose window has not opened needs none).
// It also returns the rates so assumed, by query, which the plan's maximum
// supported rate is relative to (see Compare). w.Planning.RuntimeMargin and
// the rest of the workload are taken as they are.
//
// The plan starts when the steps that hold the pool (pool.Held) are
// expected to end (now when none does), on the pool as it is (pool,
// from now; see planner.PoolNow): a step runs on a size only once that many
// nodes can be there, so the plan is executable as made. Every tuple that
// arrives until the plan's origin is taken as waiting there. With
// Planning.Concurrent, the plan starts now instead: the planner starts a plan one step at a time
// when the last of them ends, and each lane of a plan side by side when
// its own queries' steps end, since the other lanes' nodes are free.
//
// The document's SearchSeconds is left for the caller, who has a clock.
func Plan(w planner.Workload, observed map[string]Observed, r Rates, pool planner.PoolNow) (planner.Document, map[string]float64, error) {
	return PlanContext(context.Background(), w, observed, r, pool)
}

// PlanContext is Plan within ctx, as planner.PlanContext: when ctx ends
// before the search does, the error wraps planner.ErrSearchBudget.
func PlanContext(ctx context.Context, w planner.Workload, observed map[string]Observed, r Rates, pool planner.PoolNow) (planner.Document, map[string]float64, error) {
	ahead := 0.0
	for _, h := range pool.Held {
		ahead = max(ahead, h.FreeAt)
	}
	if w.Planning.Concurrent && len(pool.Held) > 0 && !w.Planning.GridOnly {
		// Side by side, a lane whose queries hold no node starts now, and
		// the others when their own steps end (planner.PoolNow.Held).
		ahead = 0
	} else {
		pool.Held = nil
	}
	pool.RequestedBy = max(pool.RequestedBy-ahead, 0)
	pool.MoreBy = max(pool.MoreBy-ahead, 0)
	w.Pool.Now = &pool
	return planFrom(ctx, w, observed, r, ahead)
}

// NodesNow is the pool as it is now for a plan made now: ready nodes ready,
// requested of them (ready included) expected ready requestedBy seconds from
// now, and more a provisioning lead time from now.
func NodesNow(w planner.Workload, ready, requested int, requestedBy float64) planner.PoolNow {
	lead := w.Pool.ProvisioningLeadTime
	return planner.PoolNow{Ready: ready, Requested: max(requested, ready), RequestedBy: min(max(requestedBy, 0), lead), MoreBy: lead}
}

// planFrom plans with the origin ahead seconds after w's origin (now), from
// arrivals and launches observed at now.
func planFrom(ctx context.Context, w planner.Workload, observed map[string]Observed, r Rates, ahead float64) (planner.Document, map[string]float64, error) {
	if ahead > 0 {
		w = planner.WithOrigin(w, w.Origin.Add(costmodel.Duration(ahead)))
	}
	assumed := map[string]float64{}
	rebased := map[string]Progress{}
	smallest := 1
	if len(w.Pool.Sizes) > 0 {
		smallest = w.Pool.Sizes[0]
	}
	for i := range w.Queries {
		pq := &w.Queries[i]
		elapsed := -pq.WindowStart - ahead // now, from the window start
		if elapsed <= 0 {
			continue
		}
		o := observed[pq.Name]
		declared := TuplesBetween(pq.Rates, 0, pq.WindowEnd-pq.WindowStart)
		if r.Pessimistic && pq.WindowEnd > -ahead {
			// A measured rate within the measurement's noise of the
			// declared one is the declared rate.
			if current := RateAt(pq.Rates, elapsed); o.Measured > current+o.Noise(current) {
				pq.Rates = withRateFrom(pq.Rates, elapsed, o.Measured)
				assumed[pq.Name] = o.Measured
			}
		}
		*pq, rebased[pq.Name] = Remaining(*pq, elapsed, o.Arrived, o.Done, declared, r.Pessimistic, smallest)
	}
	doc, err := planner.PlanContext(ctx, w)
	if err != nil {
		return doc, nil, err
	}
	for _, pq := range w.Queries {
		if done, ok := rebased[pq.Name]; ok {
			NumberOn(&doc, pq.Name, done, pq.PartialEvery > 0)
		}
	}
	return doc, assumed, nil
}

// Remaining re-bases pq, whose window had opened elapsed seconds before
// arrived and done were observed (now; the plan's origin is now or later,
// see Executable), on what is left of it: the arrived tuples that no
// launched batch covers arrive over the window's past, so that they are all
// ready at the origin, and the rest arrive at pq's rates from now on. The
// window, the deadline and the cost model stay; the tuples are numbered from
// the first one not launched.
//
// How many tuples are still to come follows the rate model (Rates), with
// declared the window's total at the declared rates: the pessimistic model
// assumes at least that total (a stream that was slower catches up by the
// window end) and more if pq's rates from now on, which then hold a faster
// measured rate, give more; the optimistic model assumes at most that total
// (a stream that was faster has delivered early) and fewer if the declared
// rates from now on give fewer.
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
// merge overhead at the smallest pool size.
func Remaining(pq planner.Query, elapsed float64, arrived int64, done Progress, declared float64, pessimistic bool, smallest int) (planner.Query, Progress) {
	span := pq.WindowEnd - pq.WindowStart
	var future []planner.RateSegment
	futureTuples := 0.0
	if elapsed < span {
		future = []planner.RateSegment{{Offset: elapsed, TuplesPerSecond: RateAt(pq.Rates, elapsed)}}
		for _, s := range pq.Rates {
			if s.Offset > elapsed {
				future = append(future, s)
			}
		}
		futureTuples = TuplesBetween(future, elapsed, span)
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
	if float64(arrived-done.Tuples)+futureTuples < 1 && done.Batches > 0 {
		done = Progress{Tuples: done.LastFrom, Batches: done.Batches - 1, Partials: done.Partials, LastFrom: done.LastFrom}
	}
	backlog := max(arrived-done.Tuples, 0)
	out := pq
	out.Rates = append([]planner.RateSegment{{Offset: 0, TuplesPerSecond: float64(backlog) / min(elapsed, span)}}, future...)
	if pq.PartialEvery == 0 && done.Batches > 0 {
		m := pq.Cost.Merge
		out.Cost.Merge.Overhead += float64(done.Batches) * m.PerUnit(smallest)
	}
	return out, done
}

// TuplesBetween is the integral of a piecewise-constant rate over [from,
// to], offsets from the window start; the last segment holds until to.
func TuplesBetween(segments []planner.RateSegment, from, to float64) float64 {
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

// RateAt is the rate of segments at offset seconds after the window start.
func RateAt(segments []planner.RateSegment, offset float64) float64 {
	rate := 0.0
	for _, s := range segments {
		if s.Offset <= offset {
			rate = s.TuplesPerSecond
		}
	}
	return rate
}

// withRateFrom replaces the rate from offset on.
func withRateFrom(segments []planner.RateSegment, offset, rate float64) []planner.RateSegment {
	var out []planner.RateSegment
	for _, s := range segments {
		if s.Offset < offset {
			out = append(out, s)
		}
	}
	return append(out, planner.RateSegment{Offset: offset, TuplesPerSecond: rate})
}

// NumberOn renumbers the plan's steps of a query that was planned from its
// progress done (Remaining) as steps of the whole query: batch indices and
// tuple ranges continue after the launched ones, merge ordinals after the
// launched partial merges, and the final merge covers the whole window.
func NumberOn(doc *planner.Document, query string, done Progress, partialAggregation bool) {
	for i := range doc.Steps {
		s := &doc.Steps[i]
		if s.Query != query {
			continue
		}
		switch s.Kind {
		case planner.StepBatch:
			s.Index += done.Batches
			s.FromTuple += done.Tuples
			s.ToTuple += done.Tuples
		case planner.StepPartial:
			s.Index += done.Partials
			s.FromTuple += done.Tuples
			s.ToTuple += done.Tuples
		case planner.StepFinal:
			s.Index += done.Partials
			s.ToTuple += done.Tuples
			if !partialAggregation {
				s.Inputs += done.Batches
			}
		}
	}
	for i := range doc.Queries {
		if doc.Queries[i].Name == query {
			doc.Queries[i].Batches += done.Batches
		}
	}
}
