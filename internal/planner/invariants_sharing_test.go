package planner

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/laxity-dev/laxity/internal/costmodel"
)

// sharesWork reports whether d shares work among its queries: a batch that
// serves several, or a window whose batches start after its first tuple
// because an earlier window reads its start.
func sharesWork(d Document) bool {
	for _, s := range d.Steps {
		if len(s.Members) > 0 || s.Kind == StepBatch && s.Index == 0 && s.FromTuple > 0 {
			return true
		}
	}
	return false
}

// checkSharing is checkQueries for a plan that shares work (sharesWork):
//   - every query's batches (its own and the shared ones that name it) read
//     its tuples in order, each once, to its last; where they start after
//     its first, the query reads a stream and other windows of it read
//     that start;
//   - across the windows of one query over one stream, every instant of the
//     stream is read by exactly one batch;
//   - no batch starts before its tuples have arrived, the last not before
//     the window and its allowed lateness close;
//   - each query has one final merge, after all its batches and after every
//     other window's merge that keeps a slice of its window;
//   - a feasible plan has every query done by its deadline, and the
//     summaries say so, in the workload's order.
func checkSharing(v *violations, w Workload, d Document) {
	byName := map[string]Query{}
	for _, q := range w.Queries {
		byName[q.Name] = q
	}
	timeOf := func(q Query, tuple int64) float64 { return NewArrivalCurve(q).TimeOf(tuple) }
	for _, s := range d.Steps {
		if _, ok := byName[s.Query]; !ok {
			v.add("step %s names no query of the workload", stepName(s))
		}
		for _, m := range s.Members {
			if _, ok := byName[m]; !ok {
				v.add("step %s serves %q, no query of the workload", stepName(s), m)
			}
		}
	}
	finals := map[string]Step{}
	for _, q := range w.Queries {
		curve := NewArrivalCurve(q)
		next, lastBatchEnd, count := int64(-1), 0.0, 0
		for _, s := range d.Steps {
			serves := s.Query == q.Name || slices.Contains(s.Members, q.Name)
			switch {
			case !serves:
			case s.Kind == StepBatch:
				if next < 0 && s.FromTuple > 0 && q.Stream == "" {
					v.add("query %s: its first batch %s starts at tuple %d, and it reads no stream another window could have read", q.Name, stepName(s), s.FromTuple)
				}
				if next >= 0 && s.FromTuple != next {
					v.add("query %s: batch %s starts at tuple %d, want %d: every tuple once, in order", q.Name, stepName(s), s.FromTuple, next)
				}
				next, lastBatchEnd = s.ToTuple, s.End
				if ready := curve.ReadyAt(s.ToTuple); s.Start < ready-1e-6 {
					v.add("query %s: batch %s starts at %.3f, before its tuples are there at %.3f", q.Name, stepName(s), s.Start, ready)
				}
			case s.Query != q.Name:
				v.add("query %s: merge %s of another query names it", q.Name, stepName(s))
			default:
				if s.Start < lastBatchEnd-1e-6 {
					v.add("query %s: merge %s starts before its batch ends at %.3f", q.Name, stepName(s), lastBatchEnd)
				}
				if s.Kind == StepFinal {
					count++
					finals[q.Name] = s
				}
			}
		}
		if next != curve.Total() || count != 1 {
			v.add("query %s: batches end at tuple %d of %d, with %d final merges", q.Name, next, curve.Total(), count)
		}
		if f, ok := finals[q.Name]; ok && d.Chosen.Feasible && f.End > q.Deadline+1e-6 {
			v.add("query %s: done at %.3f, after its deadline %.3f, in a feasible plan", q.Name, f.End, q.Deadline)
		}
	}
	// Windows of one query over one stream read each instant once; a
	// window's final merge waits for every slice of it another keeps.
	// Windows planned each alone read their own; only where some window of
	// a query leaves its start to others is the stream read in slices.
	reads := map[slidingKey][]timeSpan{}
	sliced := map[slidingKey]bool{}
	for _, s := range d.Steps {
		q := byName[s.Query]
		if s.Kind == StepBatch && q.Stream != "" && len(s.Members) == 0 && len(q.Rates) == 1 {
			k := slidingKeyOf(q)
			reads[k] = append(reads[k], timeSpan{timeOf(q, s.FromTuple), timeOf(q, s.ToTuple)})
			sliced[k] = sliced[k] || s.Index == 0 && s.FromTuple > 0
		}
	}
	for k, rs := range reads {
		if !sliced[k] {
			continue
		}
		slices.SortFunc(rs, func(a, b timeSpan) int { return cmp.Compare(a.from, b.from) })
		// Between windows that do not overlap, the stream is not read.
		var windows []timeSpan
		for _, q := range w.Queries {
			if q.Stream != "" && len(q.Rates) == 1 && slidingKeyOf(q) == k {
				windows = append(windows, timeSpan{q.WindowStart, q.WindowEnd})
			}
		}
		// A tuple's arrival time, counted from different windows' starts,
		// is exact to a tuple's time at the rate.
		tuple := 1/k.rate + 1e-6
		for i := 1; i < len(rs); i++ {
			gap := rs[i].from - rs[i-1].to
			if gap < -tuple || gap > tuple && coveredBy(windows, rs[i-1].to, rs[i].from) {
				v.add("stream %s: read over [%.3f, %.3f) and again from %.3f: every instant once", k.stream, rs[i-1].from, rs[i-1].to, rs[i].from)
			}
		}
	}
	for _, q := range w.Queries {
		final, ok := finals[q.Name]
		if !ok || q.Stream == "" {
			continue
		}
		for _, s := range d.Steps {
			o := byName[s.Query]
			if s.Query == q.Name || o.Stream == "" || len(s.Members) > 0 {
				continue
			}
			// Instants are exact to a tuple's time at the rate.
			tuple := 0.0
			if len(o.Rates) > 0 && o.Rates[0].TuplesPerSecond > 0 {
				tuple = 1/o.Rates[0].TuplesPerSecond + 1e-6
			}
			var inside bool
			switch s.Kind {
			case StepBatch:
				from, to := timeOf(o, s.FromTuple), timeOf(o, s.ToTuple)
				// A batch that starts where the window ends reads what
				// comes after it. Windows closer than the grain are one
				// window to the planner (slidingGroups), read alone or
				// shared whole, not in slices.
				same := sameInstant(o.WindowStart, q.WindowStart) && sameInstant(o.WindowEnd, q.WindowEnd)
				inside = from >= q.WindowStart-tuple && from < q.WindowEnd-tuple && to <= q.WindowEnd+tuple && !same
			case StepPartial:
				// Another window's partial merge keeps the slice that ends
				// at its last tuple.
				end := timeOf(o, s.ToTuple)
				inside = end > q.WindowStart+tuple && end <= q.WindowEnd+tuple && o.WindowEnd < q.WindowEnd
			case StepFinal:
				// Its final merge keeps the slice that ends its window.
				inside = o.WindowEnd > q.WindowStart && o.WindowEnd < q.WindowEnd
			}
			if inside && slidingKeyOf(o) == slidingKeyOf(q) && s.End > final.Start+1e-6 {
				v.add("window %s: its final merge starts at %.3f, before %s of %s, which it needs, ends at %.3f", q.Name, final.Start, stepName(s), o.Name, s.End)
			}
		}
	}
	if len(d.Queries) != len(w.Queries) {
		v.add("%d query summaries for %d queries", len(d.Queries), len(w.Queries))
		return
	}
	for i, q := range w.Queries {
		qp := d.Queries[i]
		if qp.Name != q.Name {
			v.add("query summary %d is %q, want %q (input order)", i, qp.Name, q.Name)
			continue
		}
		if f, ok := finals[q.Name]; ok && (!near(qp.Finish, f.End) || !near(qp.Deadline, q.Deadline) || !near(qp.Slack, q.Deadline-f.End)) {
			v.add("query %s: summary finish %g, deadline %g, slack %g; its final merge ends at %g, deadline %g", q.Name, qp.Finish, qp.Deadline, qp.Slack, f.End, q.Deadline)
		}
	}
}

// timeSpan is [from, to) in seconds from the origin.
type timeSpan struct{ from, to float64 }

// coveredBy reports whether [from, to] lies inside one of windows.
func coveredBy(windows []timeSpan, from, to float64) bool {
	for _, w := range windows {
		if w.from <= from+1e-9 && to <= w.to+1e-9 {
			return true
		}
	}
	return false
}

// requireSharing fails t with every violation checkSharing finds.
func requireSharing(t *testing.T, w Workload, d Document) {
	t.Helper()
	var v violations
	checkSharing(&v, w, d)
	for _, s := range v.result() {
		t.Error(s)
	}
	if math.IsNaN(d.Chosen.ExecutableCost) {
		t.Error("the executable bill is not a number")
	}
}

// TestSharedPlansKeepTheInvariants plans random workloads whose queries
// share a stream, some with the same window and some sliding, with sharing
// on, and holds every plan that meets its deadlines to the whole property
// checker.
func TestSharedPlansKeepTheInvariants(t *testing.T) {
	shared := 0
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 2727))
		period := 300 + rng.Float64()*600
		w := slidingWorkload(t, 2+rng.IntN(5), period, period*float64(2+rng.IntN(4)), 300+rng.Float64()*900, 2000+rng.Float64()*20000)
		w.Pool.IdleNodes = rng.IntN(2)
		w.Planning.Policy = []Policy{LeastLaxity, EarliestDeadline}[rng.IntN(2)]
		for i := range w.Queries {
			// The checker prices steps by the declared models.
			w.Queries[i].Margin = 0
		}
		w.Streams[0].Scan = costmodel.Linear{Overhead: 4, Serial: 1e-7, Parallel: rng.Float64() * 4e-6}
		// Queries with the first window's window and arrivals share its
		// batches, or slice with it.
		for i := range rng.IntN(4) {
			q := w.Queries[0]
			q.Name = fmt.Sprintf("same-window-%d", i)
			q.Deadline += rng.Float64() * 600
			q.Cost.Batch.Parallel *= 0.5 + rng.Float64()
			w.Queries = append(w.Queries, q)
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			doc, err := Plan(w)
			if err != nil {
				t.Fatal(err)
			}
			if !doc.Chosen.Feasible {
				t.Skipf("no plan meets every deadline: %+v", doc.Chosen.Failure)
			}
			if sharesWork(doc) {
				shared++
			}
			for _, s := range checkInvariants(w, doc) {
				t.Error(s)
			}
		})
	}
	if shared < 10 {
		t.Errorf("only %d of 40 plans share work: the test checks too few shared plans", shared)
	}
}
