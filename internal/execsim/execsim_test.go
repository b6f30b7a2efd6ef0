package execsim_test

import (
	"math"
	"testing"

	"github.com/laxity-dev/laxity/internal/execsim"
	"github.com/laxity-dev/laxity/internal/experiments"
	"github.com/laxity-dev/laxity/internal/planner"
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

// Without noise the operator's decisions carry the plan out as planned:
// every step of the plan runs, at its planned start and end, on its planned
// nodes, every deadline is met, and the pool costs what the plan's
// executable timeline costs.
func TestWithoutNoiseThePlanRunsAsPlanned(t *testing.T) {
	w, doc := samplePlan(t, 0)
	got, err := execsim.Run(w, &doc, execsim.Noise{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Missed) > 0 {
		t.Errorf("missed %v", got.Missed)
	}
	if len(got.Steps) != len(doc.Steps) {
		t.Fatalf("ran %d steps, the plan has %d", len(got.Steps), len(doc.Steps))
	}
	planned := map[[3]any]planner.Step{}
	for _, s := range doc.Steps {
		planned[[3]any{s.Query, s.Kind, s.Index}] = s
	}
	for _, s := range got.Steps {
		p, ok := planned[[3]any{s.Query, s.Kind, s.Index}]
		if !ok {
			t.Errorf("ran %s %s %d, which the plan does not have", s.Query, s.Kind, s.Index)
			continue
		}
		if math.Abs(s.Start-p.Start) > 0.01 || math.Abs(s.End-p.End) > 0.01 || s.Nodes != p.Nodes || s.ToTuple != p.ToTuple {
			t.Errorf("%s %s %d ran [%.2f, %.2f) on %d to tuple %d, planned [%.2f, %.2f) on %d to %d",
				s.Query, s.Kind, s.Index, s.Start, s.End, s.Nodes, s.ToTuple, p.Start, p.End, p.Nodes, p.ToTuple)
		}
	}
	if math.Abs(got.Cost-doc.Chosen.ExecutableCost) > 0.01 {
		t.Errorf("cost %.3f, the plan's executable cost %.3f", got.Cost, doc.Chosen.ExecutableCost)
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
			r, err := execsim.Run(w, &doc, execsim.BCFramework, seed)
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
	a, _ := execsim.Run(w, &doc, execsim.BCFramework, 7)
	b, _ := execsim.Run(w, &doc, execsim.BCFramework, 7)
	if a.Cost != b.Cost || len(a.Steps) != len(b.Steps) || a.Steps[len(a.Steps)-1] != b.Steps[len(b.Steps)-1] {
		t.Error("the same seed gave different runs")
	}
}
