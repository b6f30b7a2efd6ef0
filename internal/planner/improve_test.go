package planner

import (
	"strings"
	"testing"

	"github.com/laxity-dev/laxity/internal/costmodel"
)

// tail is one query of 100 tuples in units of 10 arriving over [0, 100] on
// a one-node pool: a batch of t tuples takes 10 + 0.1t s, the final merge 1
// s. The 1X size is 50 (two batches of 15 s beat one of 20 s twice over), so
// the grid has two batches of 50, the last one 100–115 s and the merge until
// 116 s, or one batch of 100 until 121 s. A smaller last batch after a
// larger first one ends sooner: 80 tuples 80–98 s, then 20 from 100 to 112
// s and the merge until 113 s.
func tail(deadline float64) Workload {
	q := Query{
		Name: "q", WindowEnd: 100, Deadline: deadline,
		Rates: []RateSegment{{TuplesPerSecond: 1}}, Granularity: 10,
		Cost: costmodel.Model{
			Batch: costmodel.Linear{Overhead: 10, Parallel: 0.1},
			Merge: costmodel.Linear{Overhead: 1},
		},
	}
	planning := Planning{BatchSizeFactors: []int{1, 2}, BacktrackStep: 1, MaxBatchDuration: 1000, Policy: LeastLaxity}
	return Workload{Name: "tail", Pool: pool(1), Planning: planning, Queries: []Query{q}}
}

func TestImprovementMeetsADeadlineTheGridMisses(t *testing.T) {
	w := tail(114)
	grid := w
	grid.Planning.GridOnly = true
	if d := mustPlan(t, grid); d.Chosen.Feasible {
		t.Fatalf("the grid meets the deadline: %+v", d.Chosen)
	}
	d := mustPlan(t, w)
	if !d.Chosen.Feasible || !d.Chosen.Improved {
		t.Fatalf("chosen = %+v, want a reshaped plan that meets the deadline", d.Chosen)
	}
	if errs := checkInvariants(w, d); len(errs) > 0 {
		t.Fatalf("the reshaped plan violates:\n- %s", strings.Join(errs, "\n- "))
	}
	if qp := d.Queries[0]; qp.Finish > 114+1e-9 || qp.Batches < 2 {
		t.Errorf("query = %+v, want at least two batches ending by 114 s", qp)
	}
}

func TestImprovementNeverCostsMoreThanTheGrid(t *testing.T) {
	for _, w := range []Workload{tail(130), tpchWorkload(1, 1), tpchWorkload(1, 2), tpchWorkload(1, 4), generatedWorkload(60, 3)} {
		for _, objective := range []Objective{Executable, Instant} {
			w.Planning.Objective = objective
			grid := w
			grid.Planning.GridOnly = true
			g, d := mustPlan(t, grid), mustPlan(t, w)
			gf, gs := w.Planning.Objective.ranked(g.Chosen.Cost, g.Chosen.ExecutableCost)
			df, _ := w.Planning.Objective.ranked(d.Chosen.Cost, d.Chosen.ExecutableCost)
			if df > gf+1e-9 {
				t.Errorf("%s by %s: improved %.6f, the grid %.6f", w.Name, objective, df, gf)
			}
			if errs := checkInvariants(w, d); len(errs) > 0 {
				t.Errorf("%s by %s violates:\n- %s", w.Name, objective, strings.Join(errs, "\n- "))
			}
			t.Logf("%s by %s: grid %.4f (other %.4f), improved %.4f (%.1f%% less)", w.Name, objective, gf, gs, df, 100*(1-df/gf))
		}
	}
}

// A reshaped plan leaves every query the reserve of slack (30 s, at most a
// tenth of the time from its window's end to its deadline), or as much as
// the grid's plan left it when that is less: the cheapest shape must not
// end a query at its deadline.
func TestImprovementKeepsTheReserve(t *testing.T) {
	for _, w := range []Workload{tail(130), tpchWorkload(1, 1), tpchWorkload(1, 2), tpchWorkload(1, 4), generatedWorkload(60, 3)} {
		grid := w
		grid.Planning.GridOnly = true
		g, d := mustPlan(t, grid), mustPlan(t, w)
		if !d.Chosen.Improved {
			continue
		}
		gridSlack := map[string]float64{}
		for _, q := range g.Queries {
			gridSlack[q.Name] = q.Slack
		}
		gap := map[string]float64{}
		for _, q := range w.Queries {
			gap[q.Name] = q.Deadline - q.WindowEnd
		}
		for _, q := range d.Queries {
			if want := min(reserveSeconds, reserveShare*gap[q.Name], max(gridSlack[q.Name], 0)); q.Slack < want-1e-6 {
				t.Errorf("%s: %s has %.3fs of slack, want at least %.3fs", w.Name, q.Name, q.Slack, want)
			}
		}
	}
}

// A plan made now from a pool with no ready node starts no step before
// nodes asked for now can be there; nodes on their way are used when they
// come.
func TestPlanStartsOnThePoolAsItIs(t *testing.T) {
	w := tail(400)
	w.Queries[0].WindowStart, w.Queries[0].WindowEnd = -200, 10
	for _, tc := range []struct {
		name  string
		now   PoolNow
		start float64
	}{
		{"nothing ready", PoolNow{MoreBy: 60}, 60},
		{"one coming in 20 s", PoolNow{Requested: 1, RequestedBy: 20, MoreBy: 60}, 20},
		{"one ready", PoolNow{Ready: 1, Requested: 1, MoreBy: 60}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := w
			w.Pool.Now = &tc.now
			w.Pool.ProvisioningLeadTime = 60
			d := mustPlan(t, w)
			if first := d.Steps[0]; first.Start < tc.start-1e-9 {
				t.Errorf("first step %+v starts before its node can be there at %gs", first, tc.start)
			}
			if errs := checkInvariants(w, d); len(errs) > 0 {
				t.Errorf("violates:\n- %s", strings.Join(errs, "\n- "))
			}
		})
	}
	bad := w
	bad.Pool.Now = &PoolNow{Ready: -1}
	if _, err := Plan(bad); err == nil || !strings.Contains(err.Error(), "current nodes") {
		t.Errorf("a negative ready count: err = %v, want it named", err)
	}
}

// At twice its rate the sample's best grid cell (4 initial nodes, 8X) grows
// the pool for every batch after a point in the window, though only the
// last ones need the nodes. delayIncreases runs earlier steps one size
// smaller: the plan it returns meets every deadline, bills less, and runs
// no step on more nodes than the cell ran the step at the same place (the
// replay may order the batches differently, the sizes stay by place).
func TestDelayIncreasesRunsStepsOnFewerNodesForLess(t *testing.T) {
	w := tpchWorkload(1, 2)
	p, err := prepare(w)
	if err != nil {
		t.Fatal(err)
	}
	p.budget = &budget{}
	initial := sizeIndex(w.Pool.Sizes, 4)
	start := p.candidate(initial, p.factorLayouts(8))
	if !start.Feasible {
		t.Fatal("the grid cell misses a deadline")
	}
	im := &improver{p: p, factor: 8, initial: initial, sizes: len(w.Pool.Sizes),
		reserve: make([]float64, len(w.Queries)), until: delayEvents}
	got, improved := im.delayIncreases(trial{o: start})
	if !improved || got.late > 0 {
		t.Fatalf("improved %v, late %g s; want a plan on time", improved, got.late)
	}
	if got.o.ExecutableCost >= start.ExecutableCost {
		t.Errorf("executable cost %g, the grid cell's %g", got.o.ExecutableCost, start.ExecutableCost)
	}
	if len(got.o.sim.entries) != len(start.sim.entries) {
		t.Fatalf("%d steps, the cell's %d: the batches changed", len(got.o.sim.entries), len(start.sim.entries))
	}
	smaller := 0
	for i, e := range got.o.sim.entries {
		was := start.sim.entries[i]
		if e.nodes > was.nodes {
			t.Errorf("step %d on size index %d, the cell's %d", i, e.nodes, was.nodes)
		}
		if e.nodes < was.nodes {
			smaller++
		}
	}
	if smaller == 0 {
		t.Error("no step runs on fewer nodes")
	}
}
