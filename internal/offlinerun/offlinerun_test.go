package offlinerun_test

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/laxity-dev/laxity/internal/experiments"
	"github.com/laxity-dev/laxity/internal/learn"
	"github.com/laxity-dev/laxity/internal/offlinerun"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/replan"
	"github.com/laxity-dev/laxity/internal/source"
)

func samplePlan(t *testing.T, margin float64) (planner.Workload, planner.Document) {
	t.Helper()
	w, err := experiments.Sample()
	if err != nil {
		t.Fatal(err)
	}
	planned := w
	planned.Planning.RuntimeMargin = margin
	doc, err := planner.Plan(planned)
	if err != nil {
		t.Fatal(err)
	}
	return w, doc
}

// unlearnedPlan is the sample as the operator plans its first window, every
// query with the margin it plans with until it is learned, and its plan.
func unlearnedPlan(t *testing.T) (planner.Workload, planner.Document) {
	t.Helper()
	w, err := experiments.Sample()
	if err != nil {
		t.Fatal(err)
	}
	for i := range w.Queries {
		w.Queries[i].Margin = learn.DefaultMargin
	}
	doc, err := planner.Plan(w)
	if err != nil {
		t.Fatal(err)
	}
	return w, doc
}

// Without noise the operator's decisions carry the plan out as planned:
// every step of the plan runs, at its planned start and end, on its planned
// nodes, every deadline is met, and the pool costs what the plan's
// executable timeline costs.
func TestWithoutNoiseThePlanRunsAsPlanned(t *testing.T) {
	w, doc := samplePlan(t, 0)
	got, err := offlinerun.Run(w, &doc, offlinerun.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	expectRanAsPlanned(t, doc, got)
}

// expectRanAsPlanned checks that run carried doc out as planned: no
// deadline missed, every step of the plan and no other, each at its planned
// start and end, on its planned nodes and lane, to its planned tuple, and
// the pool billed what the plan's executable timeline bills.
func expectRanAsPlanned(t *testing.T, doc planner.Document, run offlinerun.Result) {
	t.Helper()
	if len(run.Missed) > 0 {
		t.Errorf("missed %v", run.Missed)
	}
	if len(run.Steps) != len(doc.Steps) {
		t.Fatalf("ran %d steps, the plan has %d", len(run.Steps), len(doc.Steps))
	}
	planned := map[[3]any]planner.Step{}
	for _, s := range doc.Steps {
		planned[[3]any{s.Query, s.Kind, s.Index}] = s
	}
	for _, s := range run.Steps {
		p, ok := planned[[3]any{s.Query, s.Kind, s.Index}]
		if !ok {
			t.Errorf("ran %s %s %d, which the plan does not have", s.Query, s.Kind, s.Index)
			continue
		}
		if math.Abs(s.Start-p.Start) > 0.01 || math.Abs(s.End-p.End) > 0.01 || s.Nodes != p.Nodes || s.ToTuple != p.ToTuple || s.Lane != p.Lane {
			t.Errorf("%s %s %d ran [%.2f, %.2f) on %d in lane %d to tuple %d, planned [%.2f, %.2f) on %d in lane %d to %d",
				s.Query, s.Kind, s.Index, s.Start, s.End, s.Nodes, s.Lane, s.ToTuple, p.Start, p.End, p.Nodes, p.Lane, p.ToTuple)
		}
	}
	if math.Abs(run.Cost-doc.Chosen.ExecutableCost) > 0.01 {
		t.Errorf("cost %.3f, the plan's executable cost %.3f", run.Cost, doc.Chosen.ExecutableCost)
	}
}

// Slow nodes cost deadlines; a margin buys them back; the same seed gives
// the same run.
func TestNoiseAndMargin(t *testing.T) {
	misses := func(margin float64) int {
		w, doc := samplePlan(t, margin)
		w.Planning.RuntimeMargin = margin
		n := 0
		for seed := range uint64(20) {
			r, err := offlinerun.Run(w, &doc, offlinerun.Options{Noise: offlinerun.BCFramework, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Missed) > 0 {
				n++
			}
		}
		return n
	}
	without, with := misses(0), misses(0.4)
	if without == 0 {
		t.Error("15% slower nodes missed no deadline of a plan with 3.6 s of slack")
	}
	if with >= without {
		t.Errorf("a 40%% margin missed in %d of 20 runs, no margin in %d", with, without)
	}
	w, doc := samplePlan(t, 0)
	a, _ := offlinerun.Run(w, &doc, offlinerun.Options{Noise: offlinerun.BCFramework, Seed: 7})
	b, _ := offlinerun.Run(w, &doc, offlinerun.Options{Noise: offlinerun.BCFramework, Seed: 7})
	if a.Cost != b.Cost || len(a.Steps) != len(b.Steps) || !reflect.DeepEqual(a.Steps[len(a.Steps)-1], b.Steps[len(b.Steps)-1]) {
		t.Error("the same seed gave different runs")
	}
}

// A stream faster than declared from 3000 s on: re-planning as the operator
// does, in a first window (every query with its unlearned margin), grows the
// pool and meets every deadline, and what runs still tiles
// every query's actual tuples exactly once, one step at a time; without
// re-planning the plan is never changed.
func TestReplanningFollowsTheMeasuredRate(t *testing.T) {
	w, doc := unlearnedPlan(t)
	actual := map[string][]planner.RateSegment{}
	for _, q := range w.Queries {
		rate := q.Rates[0].TuplesPerSecond
		actual[q.Name] = []planner.RateSegment{{Offset: 0, TuplesPerSecond: rate}, {Offset: 3000, TuplesPerSecond: 1.6 * rate}}
	}
	rules := &offlinerun.Replanning{Rates: replan.Rates{Pessimistic: true, Tolerance: 0.02}, Window: 3 * time.Minute}
	static, err := offlinerun.Run(w, &doc, offlinerun.Options{Actual: actual})
	if err != nil {
		t.Fatal(err)
	}
	if len(static.Replans) != 0 || len(static.Plans) != 1 {
		t.Errorf("without re-planning: %d re-plans, %d plans", len(static.Replans), len(static.Plans))
	}
	got, err := offlinerun.Run(w, &doc, offlinerun.Options{Actual: actual, Replan: rules})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Replans) == 0 || len(got.Plans) != len(got.Replans)+1 {
		t.Fatalf("%d re-plans, %d plans", len(got.Replans), len(got.Plans))
	}
	if len(got.Missed) > 0 {
		t.Errorf("re-planning missed %v", got.Missed)
	}
	if got.MaxNodes <= doc.Chosen.MaxNodes {
		t.Errorf("re-planning asked for at most %d nodes, the plan for %d", got.MaxNodes, doc.Chosen.MaxNodes)
	}
	for i, r := range got.Replans {
		if r < 3000 || (i > 0 && r <= got.Replans[i-1]) {
			t.Errorf("re-plan %d at %.0fs", i, r)
		}
	}
	next := map[string]int64{}
	batches := map[string]int{}
	for i, s := range got.Steps {
		if i > 0 && s.Start < got.Steps[i-1].End {
			t.Errorf("%s %s %d starts at %.1f before the step before it ends at %.1f", s.Query, s.Kind, s.Index, s.Start, got.Steps[i-1].End)
		}
		if s.Kind != planner.StepBatch {
			continue
		}
		if s.FromTuple != next[s.Query] || s.Index != batches[s.Query] {
			t.Errorf("%s batch %d covers [%d, %d); want batch %d from %d", s.Query, s.Index, s.FromTuple, s.ToTuple, batches[s.Query], next[s.Query])
		}
		next[s.Query], batches[s.Query] = s.ToTuple, batches[s.Query]+1
	}
	for _, q := range w.Queries {
		src, err := source.NewSynthetic(doc.Origin.Add(time.Duration(q.WindowStart*float64(time.Second))), doc.Origin.Add(time.Duration(q.WindowEnd*float64(time.Second))), q.Granularity,
			[]source.Segment{{PerSecond: actual[q.Name][0].TuplesPerSecond}, {After: 3000 * time.Second, PerSecond: actual[q.Name][1].TuplesPerSecond}})
		if err != nil {
			t.Fatal(err)
		}
		if next[q.Name] != src.Total() {
			t.Errorf("%s: batches end at tuple %d, %d arrived", q.Name, next[q.Name], src.Total())
		}
	}
}

func TestActualRatesNameTheirQuery(t *testing.T) {
	w, doc := samplePlan(t, 0)
	_, err := offlinerun.Run(w, &doc, offlinerun.Options{Actual: map[string][]planner.RateSegment{"nope": {{TuplesPerSecond: 1}}}})
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("error %v, want one naming the query", err)
	}
}
