package planner

import (
	"encoding/json"
	"testing"
)

// withTailMargin is w with every query asking for tail margin m.
func withTailMargin(w Workload, m float64) Workload {
	w.Queries = append([]Query(nil), w.Queries...)
	for i := range w.Queries {
		w.Queries[i].TailMargin = m
	}
	return w
}

// A plan keeps the tail margin its queries ask for, which leaves every
// query's final merge that share of its last batch and final merge before
// the deadline (checkInvariants); a margin no plan can keep is dropped,
// and the plan is then the one made without it, to the byte.
func TestPlansKeepTheTailMarginOrNone(t *testing.T) {
	w := tpchWorkload(1, 1)
	bare, err := Plan(w)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := Plan(withTailMargin(w, 0.1))
	if err != nil {
		t.Fatal(err)
	}
	if !kept.Chosen.Feasible {
		t.Fatalf("a 10%% tail margin: no plan (%+v)", kept.Chosen.Failure)
	}
	for _, qp := range kept.Queries {
		if qp.TailMargin != 0.1 {
			t.Errorf("%s: the plan keeps a tail margin of %g, want 0.1", qp.Name, qp.TailMargin)
		}
	}
	for _, v := range checkInvariants(withTailMargin(w, 0.1), kept) {
		t.Error(v)
	}
	// The sample's tightest query has 59 s after its window for a tail of
	// some 50 s: ten times that tail cannot be kept.
	dropped, err := Plan(withTailMargin(w, 10))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(withoutSearchTime(bare))
	got, _ := json.Marshal(withoutSearchTime(dropped))
	if string(got) != string(want) {
		t.Errorf("a tail margin no plan keeps: the plan differs from the one made without it")
	}
}

func withoutSearchTime(d Document) Document {
	d.SearchSeconds = 0
	return d
}
