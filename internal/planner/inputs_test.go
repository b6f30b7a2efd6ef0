package planner

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/laxity-dev/laxity/internal/costmodel"
)

// joinWorkload is the sample with its q3 over two inputs: orders, a
// quarter of the sample's rate, and lineitem at the sample's rate, which
// doubles halfway through the window.
func joinWorkload(tb testing.TB) Workload {
	tb.Helper()
	w := goldenWorkload(tb, "tpch-tpch")
	i := slices.IndexFunc(w.Queries, func(q Query) bool { return q.Name == "tpch-q3" })
	q := &w.Queries[i]
	rate := q.Rates[0].TuplesPerSecond
	half := (q.WindowEnd - q.WindowStart) / 2
	q.Inputs = []Input{
		{Name: "orders", Rates: []RateSegment{{TuplesPerSecond: rate / 4}}},
		{Name: "lineitem", Rates: []RateSegment{{TuplesPerSecond: rate}, {Offset: half, TuplesPerSecond: 2 * rate}}},
	}
	q.Rates = nil
	for i := range w.Queries {
		// The checker prices steps by the declared models.
		w.Queries[i].Margin = 0
	}
	return w
}

// checkAligned holds a plan's steps of queries over several inputs to
// their promise: each input's tuples read once, in order, to its last, by
// the query's batches; every batch's range is the same interval of time on
// each input (to a tuple's time at the input's rate); merges cover what
// their batches do; and every other query is planned as without them.
func checkAligned(t *testing.T, w Workload, d Document) {
	t.Helper()
	for _, q := range w.Queries {
		if len(q.Inputs) == 0 {
			continue
		}
		next := map[string]int64{}
		for _, s := range d.Steps {
			if s.Query != q.Name {
				continue
			}
			if len(s.Ranges) != len(q.Inputs) {
				t.Errorf("query %s: step %s has %d ranges for %d inputs", q.Name, stepName(s), len(s.Ranges), len(q.Inputs))
				continue
			}
			var from, to []float64
			for j, r := range s.Ranges {
				in := q.Inputs[j]
				curve := inputCurve(q, in)
				if r.Input != in.Name {
					t.Errorf("query %s: step %s range %d names %q, want %q", q.Name, stepName(s), j, r.Input, in.Name)
				}
				if s.Kind == StepBatch {
					if r.FromTuple != next[in.Name] {
						t.Errorf("query %s: batch %d reads %s from tuple %d, want %d: every tuple once, in order", q.Name, s.Index, in.Name, r.FromTuple, next[in.Name])
					}
					next[in.Name] = r.ToTuple
					if s.Start < curve.timeOf(r.ToTuple)-1e-6 {
						t.Errorf("query %s: batch %d starts at %.3f, before %s's tuple %d arrives at %.3f", q.Name, s.Index, s.Start, in.Name, r.ToTuple, curve.timeOf(r.ToTuple))
					}
				}
				if r.FromTuple > 0 {
					from = append(from, curve.timeOf(r.FromTuple))
				}
				if r.ToTuple < curve.total() {
					to = append(to, curve.timeOf(r.ToTuple))
				}
			}
			// The instants a tuple's time apart at the slowest input.
			slowest := math.Inf(1)
			for _, in := range q.Inputs {
				for _, r := range in.Rates {
					slowest = min(slowest, r.TuplesPerSecond)
				}
			}
			for _, edges := range [][]float64{from, to} {
				if len(edges) > 1 && slices.Max(edges)-slices.Min(edges) > 1/slowest+1e-6 {
					t.Errorf("query %s: step %s covers different intervals on its inputs: edges at %v", q.Name, stepName(s), edges)
				}
			}
		}
		for _, in := range q.Inputs {
			if total := inputCurve(q, in).total(); next[in.Name] != total {
				t.Errorf("query %s: its batches read %s to tuple %d, want its last, %d", q.Name, in.Name, next[in.Name], total)
			}
		}
	}
}

func TestAJoinQueryReadsAlignedBatches(t *testing.T) {
	w := joinWorkload(t)
	doc, err := Plan(w)
	if err != nil {
		t.Fatal(err)
	}
	if !doc.Chosen.Feasible {
		t.Fatalf("a deadline is missed: %+v", doc.Chosen.Failure)
	}
	checkAligned(t, w, doc)
	// Planned as one query of both inputs' arrivals together, step for
	// step: the ranges are all the join adds.
	together := w
	together.Queries = slices.Clone(w.Queries)
	for i := range together.Queries {
		if q := &together.Queries[i]; len(q.Inputs) > 0 {
			q.Rates, q.Inputs = combinedRates(*q), nil
		}
	}
	plain, err := Plan(together)
	if err != nil {
		t.Fatal(err)
	}
	for i := range doc.Steps {
		s := doc.Steps[i]
		s.Ranges = nil
		if fmt.Sprint(s) != fmt.Sprint(plain.Steps[i]) {
			t.Fatalf("step %d is %+v, planned without inputs %+v", i, s, plain.Steps[i])
		}
	}
	for _, p := range checkInvariants(together, plain) {
		t.Error(p)
	}
}

// TestLateTuplesArePriced: with a share of an input late, each batch of
// the join takes what its tuples take with that share of them read once
// more, and the plan reports the bill from 0 to 10% late on lineitem.
func TestLateTuplesArePriced(t *testing.T) {
	for _, late := range []float64{0, 0.02, 0.05, 0.10} {
		w := joinWorkload(t)
		i := slices.IndexFunc(w.Queries, func(q Query) bool { return len(q.Inputs) > 0 })
		q := &w.Queries[i]
		q.Inputs[1].LateFraction = late
		orders, lineitem := float64(inputCurve(*q, q.Inputs[0]).total()), float64(inputCurve(*q, q.Inputs[1]).total())
		share := late * lineitem / (orders + lineitem)
		if got := lateWork(*q); math.Abs(got-share) > 1e-12 {
			t.Errorf("%.0f%% of lineitem late: %g of the join's tuples late, want %g", 100*late, got, share)
		}
		doc, err := Plan(w)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range doc.Steps {
			if s.Query != q.Name || s.Kind != StepBatch {
				continue
			}
			tuples := float64(s.ToTuple - s.FromTuple)
			want := q.Cost.Batch.Overhead + tuples*(1+share)*(q.Cost.Batch.Serial+q.Cost.Batch.Parallel/float64(s.Nodes))
			if !near(s.End-s.Start, want) {
				t.Errorf("%.0f%% late: batch %d of %g tuples on %d nodes takes %g s, want %g", 100*late, s.Index, tuples, s.Nodes, s.End-s.Start, want)
			}
		}
		t.Logf("%.0f%% of lineitem late: executable bill %.4f, feasible %v", 100*late, doc.Chosen.ExecutableCost, doc.Chosen.Feasible)
	}
}

// TestJoinQueriesAlignProperty plans random queries over two or three
// inputs with random rate profiles beside queries of one, and checks every
// plan's alignment.
func TestJoinQueriesAlignProperty(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 30))
		w := generatedWorkload(2, seed)
		length := 600 + rng.Float64()*3000
		q := Query{
			Name: "join", WindowStart: rng.Float64() * 600, Granularity: int64(1 + rng.IntN(500)),
			Cost: costmodel.Model{
				Batch: costmodel.Linear{Overhead: 2 + rng.Float64()*10, Serial: 1e-7, Parallel: 1e-6 + rng.Float64()*1e-5},
				Merge: costmodel.Linear{Overhead: 2, Serial: 0.01, Parallel: 0.1},
			},
			PartialEvery: []float64{0, 0.5}[rng.IntN(2)],
		}
		q.WindowEnd = q.WindowStart + length
		q.Deadline = q.WindowEnd + 300 + rng.Float64()*1200
		for j := range 2 + rng.IntN(2) {
			in := Input{Name: fmt.Sprintf("in%d", j)}
			for k := range 1 + rng.IntN(3) {
				in.Rates = append(in.Rates, RateSegment{Offset: float64(k) * length / 3, TuplesPerSecond: 10 + rng.Float64()*5000})
			}
			q.Inputs = append(q.Inputs, in)
		}
		w.Queries = append(w.Queries, q)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			doc, err := Plan(w)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(doc.Steps, func(s Step) bool { return len(s.Ranges) > 1 }) {
				t.Fatal("no step of the join names its inputs' ranges")
			}
			checkAligned(t, w, doc)
		})
	}
}

func TestInputsValidation(t *testing.T) {
	base := joinWorkload(t)
	i := slices.IndexFunc(base.Queries, func(q Query) bool { return len(q.Inputs) > 0 })
	tests := []struct {
		name   string
		change func(q *Query)
		want   string
	}{
		{"rates of its own", func(q *Query) { q.Rates = []RateSegment{{TuplesPerSecond: 1}} }, "spec.inputs: a query over several inputs has the rates of its inputs"},
		{"two inputs of one name", func(q *Query) { q.Inputs[1].Name = q.Inputs[0].Name }, "spec.inputs[1].name"},
		{"an input without a name", func(q *Query) { q.Inputs[0].Name = "" }, "spec.inputs[0].name"},
		{"an input without rates", func(q *Query) { q.Inputs[1].Rates = nil }, "spec.inputs[1] (lineitem)"},
		{"a rate out of bounds", func(q *Query) { q.Inputs[0].Rates[0].TuplesPerSecond = math.Inf(1) }, "spec.inputs[0] (orders): spec.input.profile[0].ratePerSecond"},
		{"a stream to share", func(q *Query) { q.Stream = "s" }, "shares no stream"},
		{"a late share above one", func(q *Query) { q.Inputs[0].LateFraction = 1.5 }, "spec.inputs[0].lateFraction"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := base
			w.Queries = slices.Clone(base.Queries)
			q := w.Queries[i]
			q.Inputs = slices.Clone(q.Inputs)
			for j := range q.Inputs {
				q.Inputs[j].Rates = slices.Clone(q.Inputs[j].Rates)
			}
			tt.change(&q)
			w.Queries[i] = q
			w.Streams = []Stream{{Name: "s"}}
			_, err := Plan(w)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), q.Name) {
				t.Errorf("error %v, want one naming %s and saying %q", err, q.Name, tt.want)
			}
		})
	}
}
