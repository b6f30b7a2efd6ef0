package planner

import (
	"fmt"
	"testing"

	"github.com/laxity-dev/laxity/internal/costmodel"
)

func TestPreemptiveEDFFits(t *testing.T) {
	cases := []struct {
		name string
		jobs []boundJob
		want bool
	}{
		{"nothing", nil, true},
		{"one job in its window", []boundJob{{release: 10, work: 5, deadline: 15}}, true},
		{"one job too long for its window", []boundJob{{release: 10, work: 6, deadline: 15}}, false},
		{"back to back to the second", []boundJob{{0, 5, 5}, {0, 5, 10}}, true},
		{"two that need the same seconds", []boundJob{{0, 5, 6}, {0, 5, 6}}, false},
		// The long job is interrupted for the urgent one released later
		// and resumed: what no non-preemptive order could do, which is
		// why the bound is only a bound.
		{"interrupted for a later urgent job", []boundJob{{0, 10, 20}, {2, 3, 6}}, true},
		{"an idle gap before a release", []boundJob{{0, 1, 1}, {100, 5, 105}}, true},
		{"late by rounding only", []boundJob{{0, 5, 5 - 1e-9}}, true},
		{"late by a millisecond", []boundJob{{0, 5, 5 - 1e-3}}, false},
		{"fits only in deadline order", []boundJob{{0, 4, 4}, {1, 4, 20}, {3, 10, 14}}, true},
		{"one second too many after the first", []boundJob{{0, 4, 4}, {1, 4, 20}, {3, 11, 14}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := preemptiveEDFFits(tc.jobs); got != tc.want {
				t.Errorf("preemptiveEDFFits = %v, want %v", got, tc.want)
			}
		})
	}
}

// manyMerges is n queries over one ten-minute window whose final merges
// alone, one after another, take longer than the time from the window's end
// to the last deadline: no plan exists.
func manyMerges(n int) Workload {
	w := Workload{
		Name: "many-merges",
		Pool: Pool{Sizes: []int{2, 4, 10, 20}, PricePerNodeHour: 1, BillingMinimum: 60, ProvisioningLeadTime: 120},
		Planning: Planning{BatchSizeFactors: []int{1, 2, 4, 8, 16, 32}, BacktrackStep: 1,
			MaxBatchDuration: 1e6, Policy: LeastLaxity},
	}
	for i := range n {
		w.Queries = append(w.Queries, Query{
			Name: fmt.Sprintf("q%04d", i), WindowStart: 300, WindowEnd: 900,
			Deadline: 900 + float64(90+i%7*30), Rates: []RateSegment{{TuplesPerSecond: 5}}, Granularity: 500,
			Cost: costmodel.Model{
				Batch: costmodel.Linear{Overhead: 10, Parallel: 0.004},
				Merge: costmodel.Linear{Overhead: 5, Parallel: 0.5},
			},
		})
	}
	return w
}

func TestProvablyLate(t *testing.T) {
	cases := []struct {
		name string
		w    Workload
		want bool
	}{
		{"the 13 TPC-H queries", tpchWorkload(1, 1), false},
		{"the 13 TPC-H queries at 4x the rate", tpchWorkload(1, 4), false},
		{"1,000 generated queries over a day", generatedWorkload(1000, 1), false},
		{"3 queries whose merges fit", manyMerges(3), false},
		{"400 queries whose merges alone miss", manyMerges(400), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := prepare(tc.w)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.provablyLate(); got != tc.want {
				t.Errorf("provablyLate = %v, want %v", got, tc.want)
			}
		})
	}
}

// A workload the bound proves late gets the closest grid plan at once: no
// reshaping and no search in the other order, which could not find a plan.
func TestProvablyLateWorkloadSkipsTheReshaping(t *testing.T) {
	w := manyMerges(400)
	p, err := prepare(w)
	if err != nil {
		t.Fatal(err)
	}
	p.budget = &budget{}
	p.noPlan = p.provablyLate()
	doc := p.plan()
	if doc.Chosen.Feasible || doc.Chosen.Improved {
		t.Errorf("chosen plan: feasible %v, improved %v; want neither", doc.Chosen.Feasible, doc.Chosen.Improved)
	}
	if p.budget.events > minImprovementEvents/8 {
		t.Errorf("the search simulated %d events, more than the grid's few thousand", p.budget.events)
	}
	if doc.Chosen.Failure == nil {
		t.Error("no failure reported for a workload without a plan")
	}
}

func BenchmarkProvablyLate(b *testing.B) {
	for _, n := range []int{400, 10000} {
		b.Run(fmt.Sprintf("queries=%d", n), func(b *testing.B) {
			p, err := prepare(manyMerges(n))
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				p.provablyLate()
			}
		})
	}
}

// BenchmarkSearchProvablyLate is the whole search on a workload without a
// plan, which the bound lets end after the grid.
func BenchmarkSearchProvablyLate(b *testing.B) {
	w := manyMerges(400)
	for b.Loop() {
		if _, err := Plan(w); err != nil {
			b.Fatal(err)
		}
	}
}

// On a pool capped at a smaller size the bound proves more workloads late:
// the sample at 4x its rate cannot be met on 2 or 4 nodes, and is on 10.
// Every plan the planner makes grows past each size the bound rules out.
func TestProvablyLateOnASmallerPool(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		late []bool // by pool size 2, 4, 10, 14, 20
	}{
		{1, []bool{false, false, false, false, false}},
		{2, []bool{true, false, false, false, false}},
		{4, []bool{true, true, false, false, false}},
	} {
		w := tpchWorkload(1, tc.rate)
		p, err := prepare(w)
		if err != nil {
			t.Fatal(err)
		}
		doc := mustPlan(t, w)
		for size, want := range tc.late {
			got := p.provablyLateOn(size)
			if got != want {
				t.Errorf("rate %gx, %d nodes: provablyLateOn = %v, want %v", tc.rate, w.Pool.Sizes[size], got, want)
			}
			if got && doc.Chosen.Feasible && doc.Chosen.MaxNodes <= w.Pool.Sizes[size] {
				t.Errorf("rate %gx: a plan on at most %d nodes meets every deadline, on a size the bound rules out (%d)", tc.rate, doc.Chosen.MaxNodes, w.Pool.Sizes[size])
			}
		}
	}
}

// The side-by-side bound is weaker than the one for one step at a time:
// merges that cannot run one after another in time may run side by side
// on parts of the pool; and it is still a bound.
func TestProvablyLateSideBySide(t *testing.T) {
	cases := []struct {
		name                   string
		w                      Workload
		sequential, sideBySide bool
	}{
		{"the 13 TPC-H queries at 4x the rate", tpchWorkload(1, 4), false, false},
		{"3 queries whose merges fit", manyMerges(3), false, false},
		{"40 queries whose merges fit only side by side", manyMerges(40), true, false},
		{"4,000 queries whose merges miss even side by side", manyMerges(4000), true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.w.Planning.Concurrent = true
			p, err := prepare(tc.w)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.provablyLate(); got != tc.sequential {
				t.Errorf("provablyLate = %v, want %v", got, tc.sequential)
			}
			if got := p.provablyLateSideBySide(); got != tc.sideBySide {
				t.Errorf("provablyLateSideBySide = %v, want %v", got, tc.sideBySide)
			}
		})
	}
	// What the first bound rules out, lanes plan.
	w := manyMerges(40)
	w.Planning.Concurrent = true
	doc, err := Plan(w)
	if err != nil {
		t.Fatal(err)
	}
	if !doc.Chosen.Feasible || doc.Chosen.Lanes < 2 {
		t.Errorf("40 queries whose merges fit only side by side: feasible %v in %d lanes, want a plan side by side", doc.Chosen.Feasible, doc.Chosen.Lanes)
	}
}
