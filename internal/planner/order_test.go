package planner

import (
	"context"
	"testing"
)

// planInOrder is the search of Plan in the workload's own order alone,
// without trying the other.
func planInOrder(t *testing.T, w Workload) Document {
	t.Helper()
	p, err := prepare(w)
	if err != nil {
		t.Fatal(err)
	}
	p.budget = &budget{ctx: context.Background()}
	return p.plan()
}

// TestPlanTakesTheOtherOrderWhenOnlyItMeetsEveryDeadline: tiny workloads
// (from the exact solver's generator) that no least-laxity plan meets and
// an earliest-deadline plan does. The plan is the latter's, carries its
// order for dispatch, and keeps every invariant.
func TestPlanTakesTheOtherOrderWhenOnlyItMeetsEveryDeadline(t *testing.T) {
	for _, seed := range []uint64{69, 648} {
		w := oracleWorkload(seed, 3, 4, oracleMaxUnits)
		if w.Planning.Policy != LeastLaxity {
			t.Fatalf("seed %d: the generator's policy is %s", seed, w.Planning.Policy)
		}
		if alone := planInOrder(t, w); alone.Chosen.Feasible || alone.Chosen.Policy != LeastLaxity {
			t.Fatalf("seed %d: least laxity alone: feasible %v in order %s; the case needs a workload it cannot meet", seed, alone.Chosen.Feasible, alone.Chosen.Policy)
		}
		doc, err := Plan(w)
		if err != nil {
			t.Fatal(err)
		}
		if !doc.Chosen.Feasible || doc.Chosen.Policy != EarliestDeadline {
			t.Errorf("seed %d: plan feasible %v in order %s, want a feasible plan in order %s", seed, doc.Chosen.Feasible, doc.Chosen.Policy, EarliestDeadline)
		}
		if v := checkInvariants(w, doc); len(v) > 0 {
			t.Errorf("seed %d: %v", seed, v)
		}
		// The published method keeps its one order.
		grid := w
		grid.Planning.GridOnly = true
		if g, err := Plan(grid); err != nil || g.Chosen.Policy != LeastLaxity {
			t.Errorf("seed %d: grid-only plan in order %s (%v), want %s", seed, g.Chosen.Policy, err, LeastLaxity)
		}
	}
}

// TestPlanKeepsItsOrderWhenBothMiss: a workload no order can meet keeps
// the workload's order and names the query late first in it.
func TestPlanKeepsItsOrderWhenBothMiss(t *testing.T) {
	w := oracleWorkload(69, 3, 4, oracleMaxUnits)
	for i := range w.Queries {
		w.Queries[i].Deadline = w.Queries[i].WindowEnd + 1
	}
	doc, err := Plan(w)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Chosen.Feasible || doc.Chosen.Policy != LeastLaxity || doc.Chosen.Failure == nil {
		t.Errorf("chosen %+v, want an infeasible plan in order %s with its failure", doc.Chosen, LeastLaxity)
	}
}

// An infeasible workload's plan loses as few deadlines as any batch-size
// factor does on the largest pool size: a re-plan made when a window is
// already behind takes it. Property over tiny workloads whose deadlines are
// tightened until no plan meets them; each factor alone is planned the
// same way for comparison.
func TestAnInfeasiblePlanLosesTheFewestDeadlines(t *testing.T) {
	late := func(doc Document) int {
		n := 0
		for _, q := range doc.Queries {
			if q.Slack < -eps {
				n++
			}
		}
		return n
	}
	checked := 0
	for seed := uint64(0); seed < 60; seed++ {
		w := oracleWorkload(seed, 3, 4, oracleMaxUnits)
		w.Planning.GridOnly = true
		for i := range w.Queries {
			q := &w.Queries[i]
			q.Deadline = q.WindowEnd + 0.3*(q.Deadline-q.WindowEnd)
		}
		doc, err := Plan(w)
		if err != nil {
			t.Fatal(err)
		}
		if doc.Chosen.Feasible {
			continue
		}
		checked++
		for _, f := range w.Planning.BatchSizeFactors {
			alone := w
			alone.Planning.BatchSizeFactors = []int{f}
			one, err := Plan(alone)
			if err != nil {
				t.Fatal(err)
			}
			if one.Chosen.Feasible {
				t.Fatalf("seed %d: factor %d alone meets every deadline where all factors together do not", seed, f)
			}
			if late(one) < late(doc) {
				t.Errorf("seed %d: factor %d leaves %d queries late, the plan (factor %d) %d", seed, f, late(one), doc.Chosen.BatchSizeFactor, late(doc))
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d infeasible workloads checked", checked)
	}
}
