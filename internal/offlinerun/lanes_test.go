package offlinerun_test

import (
	"cmp"
	"slices"
	"testing"

	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/experiments"
	"github.com/laxity-dev/laxity/internal/learn"
	"github.com/laxity-dev/laxity/internal/offlinerun"
	"github.com/laxity-dev/laxity/internal/planner"
)

// sampleAt is the sample at rate times its rates, every query planned with
// margin, steps side by side when concurrent, and its plan.
func sampleAt(t *testing.T, rate, margin float64, concurrent bool) (planner.Workload, planner.Document) {
	t.Helper()
	w, err := experiments.Sample()
	if err != nil {
		t.Fatal(err)
	}
	for i := range w.Queries {
		q := &w.Queries[i]
		q.Rates = []planner.RateSegment{{TuplesPerSecond: rate * q.Rates[0].TuplesPerSecond}}
		q.Margin = margin
	}
	w.Planning.Concurrent = concurrent
	doc, err := planner.Plan(w)
	if err != nil {
		t.Fatal(err)
	}
	return w, doc
}

// checkSideBySide holds an executed run to what steps side by side keep:
// a query's steps one at a time, in order, and, at every instant a step
// starts, the nodes of the steps running then no more than the pool was
// asked for a lead time before (and is asked for now).
func checkSideBySide(t *testing.T, w planner.Workload, r offlinerun.Result) {
	t.Helper()
	steps := slices.Clone(r.Steps)
	slices.SortStableFunc(steps, func(a, b planner.Step) int { return cmp.Compare(a.Start, b.Start) })
	last := map[string]float64{}
	for _, s := range steps {
		if end, ok := last[s.Query]; ok && s.Start < end-1e-6 {
			t.Errorf("%s %s %d starts at %.1f, before the query's step before it ends at %.1f", s.Query, s.Kind, s.Index, s.Start, end)
		}
		last[s.Query] = s.End
		held := 0
		for _, o := range steps {
			if o.Start <= s.Start+1e-9 && o.End > s.Start+1e-9 {
				held += o.Nodes
			}
		}
		asked := min(levelAt(r.Requested, s.Start), levelAt(r.Requested, s.Start-w.Pool.ProvisioningLeadTime))
		if held > asked {
			t.Errorf("at %.1f the running steps hold %d nodes; the pool was asked for %d", s.Start, held, asked)
		}
	}
}

// levelAt is the level of timeline ls at t: the last point at or before t,
// the first before it (the nodes a run starts with are ready).
func levelAt(ls []planner.NodeLevel, t float64) int {
	level := ls[0].Nodes
	for _, l := range ls {
		if l.At > t+1e-9 {
			break
		}
		level = l.Nodes
	}
	return level
}

// A plan of lanes runs as planned when steps take their modelled time:
// the operator's decisions start every step of it at its planned start, on
// its planned nodes, beside the other lanes' steps, meet every deadline and
// bill what the plan's executable timeline bills.
func TestLanesRunAsPlanned(t *testing.T) {
	w, doc := sampleAt(t, 4, 0, true)
	if doc.Chosen.Lanes < 2 {
		t.Fatalf("the sample at 4x plans %d lanes, want steps side by side", doc.Chosen.Lanes)
	}
	got, err := offlinerun.Run(w, &doc, offlinerun.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	expectRanAsPlanned(t, doc, got)
	overlapping := 0
	for _, s := range got.Steps {
		for _, o := range got.Steps {
			if o.Lane != s.Lane && o.Start < s.End && s.Start < o.End {
				overlapping++
				break
			}
		}
	}
	if overlapping == 0 {
		t.Error("no two steps ran side by side")
	}
	checkSideBySide(t, w, got)
}

// On slow, varying nodes (the first window's margin, steps 15% slower on
// average, learning as the operator does), a plan of lanes run by the
// operator, re-planning as it does, bills at least 10% less than the plan
// one step at a time at 2x and 4x the sample's rates, and misses at most
// 1.5% of the queries' deadlines (measured: 7 and 0 of 520 here, where one
// step at a time misses none, which is why steps side by side are not the
// default); every run keeps each query one step at a time and the pool's
// nodes: the running steps never hold more than the pool was asked for.
func TestLanesOnNoisyNodes(t *testing.T) {
	const runs = 40
	for _, rate := range []float64{2, 4} {
		var bill [2]float64
		var missed [2]int
		queries := 0
		for k, concurrent := range []bool{false, true} {
			w, doc := sampleAt(t, rate, learn.DefaultMargin, concurrent)
			queries = runs * len(w.Queries)
			learning := &offlinerun.Learning{Declared: map[string]costmodel.Model{}, DeclaredLead: w.Pool.ProvisioningLeadTime}
			for _, q := range w.Queries {
				learning.Declared[q.Name] = q.Cost
			}
			for seed := range uint64(runs) {
				r, err := offlinerun.Run(w, &doc, offlinerun.Options{Noise: offlinerun.BCFramework, Seed: seed, Learning: learning})
				if err != nil {
					t.Fatal(err)
				}
				bill[k] += r.Cost
				missed[k] += len(r.Missed)
				if concurrent {
					checkSideBySide(t, w, r)
				}
			}
		}
		t.Logf("%gx: bill per run one at a time %.3f, side by side %.3f (%.3f); deadlines missed of %d: %d and %d",
			rate, bill[0]/runs, bill[1]/runs, bill[1]/bill[0], queries, missed[0], missed[1])
		// Over 120 runs side by side misses 0.6% of the deadlines at 2x and
		// 0.45% at 4x (9 and 7 of 1,560); 40 runs draw a count within a
		// few of that.
		if float64(missed[1]) > 0.015*float64(queries) {
			t.Errorf("%gx: side by side missed %d of %d deadlines, want at most 1.5%%", rate, missed[1], queries)
		}
		if bill[1] > 0.9*bill[0] {
			t.Errorf("%gx: side by side billed %.3f per run, one at a time %.3f: want at least 10%% less", rate, bill[1]/runs, bill[0]/runs)
		}
	}
}
