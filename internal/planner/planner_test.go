package planner

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/laxity-dev/laxity/internal/costmodel"
)

// approx compares plan numbers computed by different float paths.
var approx = cmpopts.EquateApprox(0, 1e-9)

// pool prices nodes at 3.6 $/node-hour, 0.001 $ per node-second, so costs
// read as node-seconds / 1000.
func pool(sizes ...int) Pool {
	return Pool{Sizes: sizes, IdleNodes: sizes[0], PricePerNodeHour: 3.6}
}

// planning is the published method's search (the grid alone, ranked by the
// instant cost), whose steps these tests follow one by one; the
// improvement phase and the executable objective have tests of their own.
func planning(factors ...int) Planning {
	return Planning{BatchSizeFactors: factors, BacktrackStep: 1, MaxBatchDuration: 1000, Policy: LeastLaxity, Objective: Instant, GridOnly: true}
}

// single is a query whose whole window is one arrival unit, hence one batch
// ready at the window end: rate 10 tuples/s over [start, end].
func single(name string, start, end, deadline, parallelPerTuple float64) Query {
	n := int64((end - start) * 10)
	return Query{
		Name: name, WindowStart: start, WindowEnd: end, Deadline: deadline,
		Rates: []RateSegment{{Offset: 0, TuplesPerSecond: 10}}, Granularity: n,
		Cost: costmodel.Model{
			Batch: costmodel.Linear{Parallel: parallelPerTuple},
			Merge: costmodel.Linear{Overhead: 1},
		},
	}
}

func mustPlan(t *testing.T, w Workload) Document {
	t.Helper()
	d, err := Plan(w)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	return d
}

type stepSummary struct {
	Query      string
	Kind       StepKind
	Index      int
	Start, End float64
	Nodes      int
}

func summarise(steps []Step) []stepSummary {
	var out []stepSummary
	for _, s := range steps {
		out = append(out, stepSummary{s.Query, s.Kind, s.Index, s.Start, s.End, s.Nodes})
	}
	return out
}

func TestOneQuery(t *testing.T) {
	// N = 1000 tuples at 10/s over [0, 100]. BatchTime(2, x) = 1 + 0.01x and
	// 2*BatchTime(2, N) = 22: x = 91 needs 11 batches (21.01 s), x = 84 needs
	// 12 (22.08 s), so 1X = 91: ten batches of 91 and a last one of 90.
	q := Query{
		Name: "q1", WindowEnd: 100, Deadline: 110,
		Rates: []RateSegment{{TuplesPerSecond: 10}}, Granularity: 1,
		Cost: costmodel.Model{
			Batch: costmodel.Linear{Overhead: 1, Parallel: 0.02},
			Merge: costmodel.Linear{Overhead: 2},
		},
	}
	d := mustPlan(t, Workload{Name: "one", Pool: pool(2, 4), Planning: planning(1), Queries: []Query{q}})

	if diff := cmp.Diff(QueryPlan{Name: "q1", BatchSize: 91, Batches: 11, Finish: 103.9, Deadline: 110, Slack: 6.1}, d.Queries[0], approx); diff != "" {
		t.Errorf("query summary (-want +got):\n%s", diff)
	}
	// Batch i is ready when its last tuple arrives, at 9.1(i+1) s, and runs
	// 1.91 s on 2 nodes; the last is ready at the window end.
	for i := 0; i < 10; i++ {
		s := d.Steps[i]
		if want := 9.1 * float64(i+1); !approxEqual(s.Start, want) || !approxEqual(s.End, want+1.91) || s.Nodes != 2 {
			t.Errorf("batch %d = %+v, want start %.2f end %.2f on 2 nodes", i, s, want, want+1.91)
		}
	}
	last := []stepSummary{{"q1", StepBatch, 10, 100, 101.9, 2}, {"q1", StepFinal, 0, 101.9, 103.9, 2}}
	if diff := cmp.Diff(last, summarise(d.Steps[10:]), approx); diff != "" {
		t.Errorf("last batch and final merge (-want +got):\n%s", diff)
	}
	want := Chosen{InitialNodes: 2, BatchSizeFactor: 1, Cost: 0.2078, ExecutableCost: 0.2078, MaxNodes: 2, Feasible: true, Policy: LeastLaxity}
	if diff := cmp.Diff(want, d.Chosen, approx); diff != "" {
		t.Errorf("chosen (-want +got):\n%s", diff)
	}
	// On 4 nodes the same batches run 1.455 s, the last 1.45 s, and the
	// merge 2 s: the 2 idle nodes are held until 103.45 s, and 2 more only
	// while a step runs (10 × 1.455 + 1.45 + 2 s).
	if diff := cmp.Diff([]Candidate{
		{InitialNodes: 2, BatchSizeFactor: 1, Cost: 0.2078, ExecutableCost: 0.2078, MaxNodes: 2, Feasible: true},
		{InitialNodes: 4, BatchSizeFactor: 1, Cost: 0.2429, ExecutableCost: 0.2429, MaxNodes: 4, Feasible: true},
	}, d.Candidates, approx); diff != "" {
		t.Errorf("candidates (-want +got):\n%s", diff)
	}
}

func approxEqual(a, b float64) bool { return cmp.Equal(a, b, approx) }

func TestLeastLaxityAndEarliestDeadlineChooseDifferently(t *testing.T) {
	// Both single-batch queries are ready at 10 s. q1 (deadline 26) needs
	// 2 + 1 s: slack 13. q2 (deadline 30) needs 11 + 1 s: slack 8. LLF runs
	// q2 first; EDF runs q1 first. Both orders meet the deadlines.
	w := Workload{Name: "two", Pool: pool(2), Planning: planning(1), Queries: []Query{
		single("q1", 0, 10, 26, 0.04),
		single("q2", 0, 10, 30, 0.22),
	}}
	llf := mustPlan(t, w)
	want := []stepSummary{
		{"q2", StepBatch, 0, 10, 21, 2}, {"q2", StepFinal, 0, 21, 22, 2},
		{"q1", StepBatch, 0, 22, 24, 2}, {"q1", StepFinal, 0, 24, 25, 2},
	}
	if diff := cmp.Diff(want, summarise(llf.Steps), approx); diff != "" {
		t.Errorf("LLF steps (-want +got):\n%s", diff)
	}
	w.Planning.Policy = EarliestDeadline
	edf := mustPlan(t, w)
	want = []stepSummary{
		{"q1", StepBatch, 0, 10, 12, 2}, {"q1", StepFinal, 0, 12, 13, 2},
		{"q2", StepBatch, 0, 13, 24, 2}, {"q2", StepFinal, 0, 24, 25, 2},
	}
	if diff := cmp.Diff(want, summarise(edf.Steps), approx); diff != "" {
		t.Errorf("EDF steps (-want +got):\n%s", diff)
	}
}

// chain is three single-batch queries all ready at 10 s, each 40 s on 2
// nodes, 20 s on 4, 10 s on 8, with a 1 s final merge. On 2 nodes LLF runs
// q1 (10–51), q2 (51–92), and q3 cannot meet its deadline.
func chain(q2Deadline, q3Deadline float64) Workload {
	return Workload{Name: "chain", Pool: pool(2, 4, 8), Planning: planning(1), Queries: []Query{
		single("q1", 0, 10, 60, 0.8),
		single("q2", 0, 10, q2Deadline, 0.8),
		single("q3", 0, 10, q3Deadline, 0.8),
	}}
}

func TestBacktrackingGivesTheLastBatchMoreNodesFirst(t *testing.T) {
	// q3 (deadline 96) fails at 92 s. Restarting from the last scheduled
	// batch with the next size puts q2 and q3 on 4 nodes: q2 51–72, q3 72–93.
	d := mustPlan(t, chain(95, 96))
	want := []stepSummary{
		{"q1", StepBatch, 0, 10, 50, 2}, {"q1", StepFinal, 0, 50, 51, 2},
		{"q2", StepBatch, 0, 51, 71, 4}, {"q2", StepFinal, 0, 71, 72, 4},
		{"q3", StepBatch, 0, 72, 92, 4}, {"q3", StepFinal, 0, 92, 93, 4},
	}
	if diff := cmp.Diff(want, summarise(d.Steps), approx); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if d.Chosen.InitialNodes != 2 || d.Chosen.MaxNodes != 4 {
		t.Errorf("chosen = %+v, want initial 2, max 4", d.Chosen)
	}
}

func TestBacktrackingMovesBackOneBatchAtATime(t *testing.T) {
	// q2 (deadline 92) just fits on 2 nodes, 51–92; q3 (92.5) then fails.
	// Restarting from the last batch, q2 and q3 on 4 nodes still end q3 at
	// 93. With K = 1 the restart index moves back to q1, and everything from
	// it runs on 4 nodes: q3 ends at 73. (A larger K moves back by one here
	// too, since two back would pass the first batch: backtrack_test.go.)
	d := mustPlan(t, chain(92, 92.5))
	want := []stepSummary{
		{"q1", StepBatch, 0, 10, 30, 4}, {"q1", StepFinal, 0, 30, 31, 4},
		{"q2", StepBatch, 0, 31, 51, 4}, {"q2", StepFinal, 0, 51, 52, 4},
		{"q3", StepBatch, 0, 52, 72, 4}, {"q3", StepFinal, 0, 72, 73, 4},
	}
	if diff := cmp.Diff(want, summarise(d.Steps), approx); diff != "" {
		t.Errorf("K=1 steps (-want +got):\n%s", diff)
	}
	// 2 idle nodes until 10 s, then 4 until 73 s: 20 + 252 node-seconds.
	if !approxEqual(d.Chosen.Cost, 0.272) {
		t.Errorf("K=1 cost = %v, want 0.272", d.Chosen.Cost)
	}
}

func TestPartialAggregation(t *testing.T) {
	// Ten batches of 100 tuples, each ready every 10 s and 1 s long on 2
	// nodes. φ = 0.25 gives a partial merge after every ceil(2.5) = 3
	// batches (after batches 3, 6 and 9, never after the last); the final
	// merge takes the 3 partials and the 1 remaining batch. MergeTime(2, m)
	// = 1 + 0.1m.
	q := Query{
		Name: "q", WindowEnd: 100, Deadline: 110,
		Rates: []RateSegment{{TuplesPerSecond: 10}}, Granularity: 100,
		Cost: costmodel.Model{
			Batch: costmodel.Linear{Parallel: 0.02},
			Merge: costmodel.Linear{Overhead: 1, Parallel: 0.2},
		},
		PartialEvery: 0.25,
	}
	d := mustPlan(t, Workload{Name: "partial", Pool: pool(2), Planning: planning(1), Queries: []Query{q}})
	var merges []Step
	for _, s := range d.Steps {
		if s.Kind != StepBatch {
			merges = append(merges, s)
		}
	}
	want := []Step{
		{Query: "q", Kind: StepPartial, Index: 0, FromTuple: 0, ToTuple: 300, Inputs: 3, Ready: 31, Start: 31, End: 32.3, Nodes: 2},
		{Query: "q", Kind: StepPartial, Index: 1, FromTuple: 300, ToTuple: 600, Inputs: 3, Ready: 61, Start: 61, End: 62.3, Nodes: 2},
		{Query: "q", Kind: StepPartial, Index: 2, FromTuple: 600, ToTuple: 900, Inputs: 3, Ready: 91, Start: 91, End: 92.3, Nodes: 2},
		{Query: "q", Kind: StepFinal, Index: 3, FromTuple: 0, ToTuple: 1000, Inputs: 4, Ready: 101, Start: 101, End: 102.4, Nodes: 2},
	}
	if diff := cmp.Diff(want, merges, approx); diff != "" {
		t.Errorf("merges (-want +got):\n%s", diff)
	}
	if n := len(d.Steps); n != 14 {
		t.Errorf("got %d steps, want 10 batches + 4 merges", n)
	}
}

func TestIdleRelease(t *testing.T) {
	// Two windows 900 s apart, each one batch ready at its end. Until a
	// batch runs, and between q1's final merge (111 s) and q2's batch (1100
	// s), the pool holds idleNodes = 0, inside a window as outside one.
	w := Workload{Name: "idle", Pool: pool(2), Planning: planning(1), Queries: []Query{
		single("q1", 0, 100, 200, 0.02),
		single("q2", 1000, 1100, 1200, 0.02),
	}}
	w.Pool.IdleNodes = 0
	w.Pool.BillingMinimum = 60
	w.Pool.ProvisioningLeadTime = 100
	w.Pool.ReleaseAfterIdle = 200
	d := mustPlan(t, w)
	if diff := cmp.Diff([]NodeLevel{{0, 0}, {100, 2}, {111, 0}, {1100, 2}, {1111, 0}}, d.Nodes, approx); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	// Requests lead the need by 100 s; the 889 s idle period is longer than
	// releaseAfterIdle, so the nodes go. Instantly, each 11 s use is billed
	// the 60 s minimum; as requested, 2 × 111 s twice.
	if diff := cmp.Diff([]NodeLevel{{0, 2}, {111, 0}, {1000, 2}, {1111, 0}}, d.Requests, approx); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if !approxEqual(d.Chosen.Cost, 0.24) || !approxEqual(d.Chosen.ExecutableCost, 0.444) {
		t.Errorf("costs = %v, %v; want 0.24 and 0.444", d.Chosen.Cost, d.Chosen.ExecutableCost)
	}
	// Kept alive for longer than the idle period, the nodes stay.
	w.Pool.ReleaseAfterIdle = 1000
	d = mustPlan(t, w)
	if diff := cmp.Diff([]NodeLevel{{0, 2}, {1111, 0}}, d.Requests, approx); diff != "" {
		t.Errorf("requests with long keep-alive (-want +got):\n%s", diff)
	}
}

func TestCostBillsLastAcquiredFirstWithAMinimum(t *testing.T) {
	// 2 nodes from 0, 3 more at 10. At 20 the two released are from the
	// later lot (10 s held, billed 60 each); at 100 the last of that lot
	// (90 s) and the first two (100 s each) go: 120 + 90 + 200 node-seconds.
	levels := []NodeLevel{{0, 2}, {10, 5}, {20, 3}, {100, 0}}
	got := Cost(levels, Pool{PricePerNodeHour: 3.6, BillingMinimum: 60})
	if !approxEqual(got, 0.41) {
		t.Errorf("cost = %v, want 0.41", got)
	}
}

func TestRequestsKeepNodesThroughShortIdlePeriods(t *testing.T) {
	levels := []NodeLevel{{0, 10}, {100, 2}, {200, 6}, {300, 2}, {1000, 2}}
	tests := []struct {
		name       string
		lead, keep float64
		want       []NodeLevel
	}{
		{"instantaneous", 0, 0, levels[:4:4]},
		{"lead only", 50, 0, []NodeLevel{{0, 10}, {100, 2}, {150, 6}, {300, 2}}},
		// The 4 nodes above 6 idle for ever; the 4 between 2 and 6 idle only
		// 100 s (less than the 150 s keep) before they are needed again.
		{"keep", 0, 150, []NodeLevel{{0, 10}, {100, 6}, {300, 2}}},
		{"lead and keep", 50, 150, []NodeLevel{{0, 10}, {100, 6}, {300, 2}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := slices.Concat(tc.want, []NodeLevel{{1000, 2}})
			if diff := cmp.Diff(want, requests(levels, tc.lead, tc.keep)); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnitBatchSize(t *testing.T) {
	tests := []struct {
		name           string
		cost           costModel
		total, unit    int64
		cmax           float64
		wantX, wantCap int64
		wantErr        string
	}{
		{name: "hand computed", cost: costModel{batchOverhead: 1, batchParallel: 0.02}, total: 1000, unit: 1, cmax: 1000, wantX: 91, wantCap: 1000},
		{name: "whole units", cost: costModel{batchOverhead: 1, batchParallel: 0.02}, total: 1000, unit: 50, cmax: 1000, wantX: 100, wantCap: 1000},
		// BatchTime(2, x) = 1 + 0.01x < 1.5 caps x at 49 tuples.
		{name: "capped by Cmax", cost: costModel{batchOverhead: 1, batchParallel: 0.02}, total: 1000, unit: 1, cmax: 1.5, wantX: 49, wantCap: 49},
		{name: "no overhead", cost: costModel{batchParallel: 0.02}, total: 1000, unit: 10, cmax: 1000, wantX: 10, wantCap: 1000},
		{name: "one unit too long", cost: costModel{batchOverhead: 5}, total: 1000, unit: 1, cmax: 5, wantErr: "not below maxBatchDuration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x, limit, err := unitBatchSize(tc.cost, tc.total, tc.unit, 2, tc.cmax)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || x != tc.wantX || limit != tc.wantCap {
				t.Errorf("got (%d, %d, %v), want (%d, %d)", x, limit, err, tc.wantX, tc.wantCap)
			}
		})
	}
}

func TestArrivalsFollowTheProfile(t *testing.T) {
	// 10/s for 50 s, nothing for 20 s, then 30/s until 100: 500 + 0 + 900.
	q := Query{WindowStart: 100, WindowEnd: 200, Rates: []RateSegment{{0, 10}, {50, 0}, {70, 30}}}
	a := newArrivals(q, 1)
	if got := a.total(); got != 1400 {
		t.Errorf("total = %d, want 1400", got)
	}
	for _, tc := range []struct {
		k    int64
		want float64
	}{{0, 100}, {100, 110}, {500, 150}, {501, 170 + 1.0/30}, {1400, 200}} {
		if got := a.timeOf(tc.k); !approxEqual(got, tc.want) {
			t.Errorf("timeOf(%d) = %v, want %v", tc.k, got, tc.want)
		}
	}
	if got := newArrivals(q, 2).total(); got != 2800 {
		t.Errorf("doubled total = %d, want 2800", got)
	}
}

func TestInfeasibleWorkloadReportsTheLateQuery(t *testing.T) {
	// Even on 8 nodes the third query ends at 10 + 3*11 = 43 s, 3 s after
	// the common deadline; with equal slack, query order runs q3 last.
	w := chain(40, 40)
	w.Queries[0].Deadline = 40
	d := mustPlan(t, w)
	if d.Chosen.Feasible || d.Chosen.Failure == nil {
		t.Fatalf("chosen = %+v, want infeasible with a failure", d.Chosen)
	}
	if got := *d.Chosen.Failure; got.Query != "q3" || !approxEqual(got.LateSeconds, 3) {
		t.Errorf("failure = %+v, want q3 late by 3 s", got)
	}
	if d.Chosen.InitialNodes != 8 || len(d.Steps) != 6 || d.MaxSupportedRateFactor != 0 {
		t.Errorf("document = %+v, want the 8-node run with its 6 steps and no supported rate", d.Chosen)
	}
	for _, c := range d.Candidates {
		if c.Feasible {
			t.Errorf("candidate %+v is feasible", c)
		}
	}
}

func TestMaxSupportedRateFactor(t *testing.T) {
	// One query: 100 s window at 10/s in one unit of 1000 tuples, 0.01 s per
	// tuple on 2 nodes plus a 1 s merge, deadline 121. At rate ρ in [11, 12)
	// the fixed 1000-tuple batches are ready every 100/ρ s and take 10 s, so
	// they run back to back from 100/ρ: eleven full ones, then the last
	// 1000ρ - 11000 tuples, then the merge, ending at 100/ρ + 10ρ + 1. That
	// is 120.917 s at ρ = 11.09 and 121.009 s at 11.10.
	q := single("q", 0, 100, 121, 0.02)
	w := Workload{Name: "rate", Pool: pool(2), Planning: planning(1), Queries: []Query{q}}
	d := mustPlan(t, w)
	if d.MaxSupportedRateFactor != 11.09 {
		t.Errorf("maxSupportedRateFactor = %v, want 11.09", d.MaxSupportedRateFactor)
	}
}

func TestPlanIsDeterministic(t *testing.T) {
	w := chain(92, 92.5)
	first, err := json.Marshal(mustPlan(t, w))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		again, _ := json.Marshal(mustPlan(t, w))
		if string(again) != string(first) {
			t.Fatalf("plan %d differs:\n%s\n%s", i, first, again)
		}
	}
}

func TestInvalidWorkloadsNameTheField(t *testing.T) {
	valid := func() Workload { return chain(95, 96) }
	tests := []struct {
		name   string
		mutate func(*Workload)
		want   string
	}{
		{"no queries", func(w *Workload) { w.Queries = nil }, `schedule "chain": no queries`},
		{"unsorted sizes", func(w *Workload) { w.Pool.Sizes = []int{4, 2} }, "spec.nodePool.sizes"},
		{"zero price", func(w *Workload) { w.Pool.PricePerNodeHour = 0 }, "spec.nodePool.pricePerNodeHour"},
		{"factor below one", func(w *Workload) { w.Planning.BatchSizeFactors = []int{0} }, "spec.planning.batchSizeFactors"},
		{"backtrack step", func(w *Workload) { w.Planning.BacktrackStep = 0 }, "spec.planning.backtrackStep"},
		{"policy", func(w *Workload) { w.Planning.Policy = "Random" }, "spec.planning.policy"},
		{"duplicate query", func(w *Workload) { w.Queries[1].Name = "q1" }, `query "q1" appears twice`},
		{"window", func(w *Workload) { w.Queries[1].WindowEnd = 0 }, `query "q2": spec.window.end`},
		{"deadline", func(w *Workload) { w.Queries[1].Deadline = 5 }, `query "q2": spec.deadline`},
		{"negative coefficient", func(w *Workload) { w.Queries[2].Cost.Batch.Serial = -1 }, `query "q3": spec.costModel.batch`},
		{"batch longer than Cmax", func(w *Workload) { w.Planning.MaxBatchDuration = 10 }, `query "q1": spec.costModel.batch: one unit`},
		{"profile order", func(w *Workload) {
			w.Queries[0].Rates = []RateSegment{{0, 1}, {5, 1}, {5, 2}}
		}, `query "q1": spec.input.profile[2].after`},
		{"no tuples", func(w *Workload) { w.Queries[0].Rates[0].TuplesPerSecond = 0 }, `query "q1": spec.input: no tuples`},
		{"partial every", func(w *Workload) { w.Queries[0].PartialEvery = 1.5 }, `query "q1": spec.partialAggregation.every`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := valid()
			tc.mutate(&w)
			_, err := Plan(w)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestSegmentAfterAnIdleGapIsReplannedFromTheInitialSize(t *testing.T) {
	// q1 cannot meet its deadline on 2 nodes (10 + 41 > 40), so GenSchedule
	// restarts on 4 nodes and runs everything after on 4, q2 included. q2's
	// batch follows an idle gap (31 s to 200 s), so section 3.2 re-plans it
	// from the initial 2 nodes, where it still meets its deadline (20 s on 2
	// nodes, then the 1 s merge).
	w := Workload{Name: "segments", Pool: pool(2, 4), Planning: planning(1), Queries: []Query{
		single("q1", 0, 10, 40, 0.8),
		single("q2", 100, 200, 300, 0.04),
	}}
	w.Pool.IdleNodes = 0
	d := mustPlan(t, w)
	want := []stepSummary{
		{"q1", StepBatch, 0, 10, 30, 4}, {"q1", StepFinal, 0, 30, 31, 4},
		{"q2", StepBatch, 0, 200, 220, 2}, {"q2", StepFinal, 0, 220, 221, 2},
	}
	if diff := cmp.Diff(want, summarise(d.Steps), approx); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	// Whenever no step runs the pool holds idleNodes, 0.
	if diff := cmp.Diff([]NodeLevel{{0, 0}, {10, 4}, {31, 0}, {200, 2}, {221, 0}}, d.Nodes, approx); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	// 4×21 + 2×21 node-seconds.
	if !approxEqual(d.Chosen.Cost, 0.126) {
		t.Errorf("cost = %v, want 0.126", d.Chosen.Cost)
	}
}

// A runtime margin lengthens every modelled duration by its fraction: the
// one batch of 100 tuples at 0.1 s/tuple on 2 nodes takes 5 s, 6 s with 20%,
// and its merge 1 s, 1.2 s. A margin that leaves no time is infeasible.
func TestRuntimeMarginLengthensEveryStep(t *testing.T) {
	for _, tc := range []struct {
		margin       float64
		batch, merge float64
		feasible     bool
	}{
		{margin: 0, batch: 5, merge: 1, feasible: true},
		{margin: 0.2, batch: 6, merge: 1.2, feasible: true},
		{margin: 1, batch: 10, merge: 2, feasible: false},
	} {
		w := Workload{Pool: pool(2), Planning: planning(1), Queries: []Query{single("q", 0, 10, 18, 0.1)}}
		w.Planning.RuntimeMargin = tc.margin
		doc := mustPlan(t, w)
		if doc.Chosen.Feasible != tc.feasible {
			t.Errorf("margin %g: feasible %v, want %v", tc.margin, doc.Chosen.Feasible, tc.feasible)
		}
		got := summarise(doc.Steps)
		want := []stepSummary{
			{Query: "q", Kind: StepBatch, Start: 10, End: 10 + tc.batch, Nodes: 2},
			{Query: "q", Kind: StepFinal, Start: 10 + tc.batch, End: 10 + tc.batch + tc.merge, Nodes: 2},
		}
		if diff := cmp.Diff(want, got, approx); diff != "" {
			t.Errorf("margin %g: steps (-want +got):\n%s", tc.margin, diff)
		}
	}
	for _, bad := range []float64{-0.1, 11, math.NaN()} {
		w := Workload{Pool: pool(2), Planning: planning(1), Queries: []Query{single("q", 0, 10, 18, 0.1)}}
		w.Planning.RuntimeMargin = bad
		if _, err := Plan(w); err == nil || !strings.Contains(err.Error(), "runtimeMarginPercent") {
			t.Errorf("margin %g: error %v, want one naming spec.planning.runtimeMarginPercent", bad, err)
		}
	}
}
