package baseline

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/planner"
)

// approx compares times and costs computed along different float paths.
var approx = cmpopts.EquateApprox(0, 1e-9)

// pool prices a node at 3600 per hour, 1 per second, so costs read as
// node-seconds. Nodes arrive at once unless a test says otherwise.
func pool(sizes ...int) planner.Pool {
	return planner.Pool{Sizes: sizes, IdleNodes: sizes[0], PricePerNodeHour: 3600, BillingMinimum: 60}
}

func workload(p planner.Pool, queries ...planner.Query) planner.Workload {
	return planner.Workload{
		Name: "test", Pool: p, Queries: queries,
		Planning: planner.Planning{BatchSizeFactors: []int{1}, BacktrackStep: 1, MaxBatchDuration: 1000, Policy: planner.LeastLaxity},
	}
}

// uniform is a query over [0, end] at rate tuples per second in units of
// unit tuples, whose batches cost overhead + parallel/p seconds per tuple
// on p nodes and whose merges a flat merge seconds.
func uniform(name string, end, deadline, rate float64, unit int64, overhead, parallel, merge float64) planner.Query {
	return planner.Query{
		Name: name, WindowEnd: end, Deadline: deadline,
		Rates: []planner.RateSegment{{TuplesPerSecond: rate}}, Granularity: unit,
		Cost: costmodel.Model{
			Batch: costmodel.Linear{Overhead: overhead, Parallel: parallel},
			Merge: costmodel.Linear{Overhead: merge},
		},
	}
}

func batch(q string, index int, from, to int64, ready, start, end float64, nodes int) planner.Step {
	return planner.Step{Query: q, Kind: planner.StepBatch, Index: index, FromTuple: from, ToTuple: to, Ready: ready, Start: start, End: end, Nodes: nodes}
}

func final(q string, total int64, inputs int, start, end float64, nodes int) planner.Step {
	return planner.Step{Query: q, Kind: planner.StepFinal, ToTuple: total, Inputs: inputs, Ready: start, Start: start, End: end, Nodes: nodes}
}

func held(nodes int, end float64) []planner.NodeLevel {
	return []planner.NodeLevel{{At: 0, Nodes: nodes}, {At: end, Nodes: 0}}
}

func curvesOf(w planner.Workload) []arrivalCurve {
	curves := make([]arrivalCurve, len(w.Queries))
	for i, q := range w.Queries {
		curves[i] = newArrivalCurve(q)
	}
	return curves
}

// mustPlan plans w on the grid alone: the baselines cut batches of one size,
// the plan's, and these tests hold them to the plan step for step.
func mustPlan(t *testing.T, w planner.Workload) planner.Document {
	t.Helper()
	w.Planning.GridOnly = true
	plan, err := planner.Plan(w)
	if err != nil {
		t.Fatalf("planning: %v", err)
	}
	return plan
}

// oneQuery is 1,000 tuples at 10/s over [0, 100] in units of 100; a batch
// of x tuples takes 10 + 0.01x/p seconds on p nodes, a merge 5 s.
func oneQuery(deadline float64) planner.Query {
	return uniform("q", 100, deadline, 10, 100, 10, 0.01, 5)
}

func TestElasticIsThePlan(t *testing.T) {
	// With 1 node the smallest size, the 1X batch size is the smallest x
	// with ceil(1000/x)*(10+0.01x) <= 2*(10+10) = 40: two batches of 500
	// (30 s); three of 400 take 42 s. On 1 node: [0,500) is ready at 50
	// and runs 50-65, [500,1000) at 100 runs 100-115, the merge 115-120.
	// Starting on 2 nodes costs 2*117.5, so the plan keeps 1 node: 120
	// node-seconds, the same requested with no lead time.
	w := workload(pool(1, 2), oneQuery(200))
	got := elastic(mustPlan(t, w))
	want := Result{
		Baseline: Elastic, Cost: 120, MaxNodes: 1, DeadlinesMet: true,
		Steps: []planner.Step{
			batch("q", 0, 0, 500, 50, 50, 65, 1),
			batch("q", 1, 500, 1000, 100, 100, 115, 1),
			final("q", 1000, 2, 115, 120, 1),
		},
		Timeline: []planner.NodeLevel{{At: 0, Nodes: 1}, {At: 120, Nodes: 1}},
	}
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("elastic (-want +got):\n%s", diff)
	}
}

func TestFixed(t *testing.T) {
	// 1,000 tuples at 10/s over [0, 100] in units of 100; a batch of x
	// tuples takes 10 + 0.04x/p s on p nodes, a merge 5 s. 1X comes from
	// the smallest size, 1 node, for every pool: the smallest x with
	// ceil(1000/x)*(10+0.04x) <= 2*(10+40) = 100 is 200 (five batches, 90
	// s; ten of 100 take 140). Planned with 2 nodes as the smallest size,
	// 1X would be 400 instead (three batches, 54 s <= 2*(10+20); five of
	// 200 take 70). Batches are ready at 20, 40, 60, 80, 100.
	//
	// 1 node, 18 s a batch: 20-38, 40-58, 60-78, 80-98, 100-118, the merge
	// of 5 118-123. 2 nodes, 14 s: 20-34, ..., 100-114, merge 114-119.
	q := func(deadline float64) planner.Query { return uniform("q", 100, deadline, 10, 100, 10, 0.04, 5) }
	batches := func(nodes int, seconds float64) []planner.Step {
		var steps []planner.Step
		for i := range 5 {
			ready := float64(20 * (i + 1))
			steps = append(steps, batch("q", i, int64(200*i), int64(200*(i+1)), ready, ready, ready+seconds, nodes))
		}
		return append(steps, final("q", 1000, 5, 100+seconds, 105+seconds, nodes))
	}
	tests := []struct {
		name     string
		deadline float64
		nodes    int
		want     Result
	}{
		{"1 node meets 200", 200, 1, Result{Cost: 123, DeadlinesMet: true, Steps: batches(1, 18), Timeline: held(1, 123)}},
		{"2 nodes meet 200", 200, 2, Result{Cost: 238, DeadlinesMet: true, Steps: batches(2, 14), Timeline: held(2, 119)}},
		{"1 node misses 120", 120, 1, Result{Cost: 123, Late: &planner.Failure{Query: "q", LateSeconds: 3}, Steps: batches(1, 18), Timeline: held(1, 123)}},
		{"2 nodes meet 120", 120, 2, Result{Cost: 238, DeadlinesMet: true, Steps: batches(2, 14), Timeline: held(2, 119)}},
	}
	for smallest, want := range map[int]int64{1: 200, 2: 400} {
		w := workload(pool(smallest, 4), q(200))
		if got := mustFixed(t, w, 2).Steps[0].ToTuple; got != want {
			t.Errorf("1X with %d nodes the smallest size = %d, want %d", smallest, got, want)
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := workload(pool(1, 2), q(tc.deadline))
			tc.want.Baseline, tc.want.Nodes, tc.want.MaxNodes = Fixed, tc.nodes, tc.nodes
			if diff := cmp.Diff(tc.want, mustFixed(t, w, tc.nodes), approx); diff != "" {
				t.Errorf("fixed %d (-want +got):\n%s", tc.nodes, diff)
			}
		})
	}
}

func TestLLFWithoutBatching(t *testing.T) {
	// a and b: 400 tuples each at 10/s over [0, 40] in units of 100, one
	// unit ready every 10 s. A batch of x tuples takes 10 + 0.01x/p s on p
	// nodes, a merge 5 s. b's deadline is earlier, so its slack is always
	// the smaller one (e.g. on 1 node at 21: a has [0,200) pending, slack
	// 200-21-(12+12+5) = 150; b has [100,200), 100-21-(11+12+5) = 51):
	// b runs every unit as it comes, a runs once, on all of its tuples.
	//
	// 1 node, 11 s per unit: b 10-21, 21-32, 32-43, 43-54 and its merge of
	// 4 to 59; then a's 400 tuples 59-73 and its merge to 78.
	// 2 nodes, 10.5 s per unit: b 10-20.5; at 20.5 two units are ready,
	// b takes its second 20.5-31, its third 31-41.5, its fourth (ready at
	// 40) 41.5-52, merge 52-57; a 57-69, merge 69-74.
	a := func(deadline float64) planner.Query { return uniform("a", 40, deadline, 10, 100, 10, 0.01, 5) }
	b := func(deadline float64) planner.Query { return uniform("b", 40, deadline, 10, 100, 10, 0.01, 5) }
	oneNode := []planner.Step{
		batch("b", 0, 0, 100, 10, 10, 21, 1),
		batch("b", 1, 100, 200, 20, 21, 32, 1),
		batch("b", 2, 200, 300, 30, 32, 43, 1),
		batch("b", 3, 300, 400, 40, 43, 54, 1),
		final("b", 400, 4, 54, 59, 1),
		batch("a", 0, 0, 400, 40, 59, 73, 1),
		final("a", 400, 1, 73, 78, 1),
	}
	twoNodes := []planner.Step{
		batch("b", 0, 0, 100, 10, 10, 20.5, 2),
		batch("b", 1, 100, 200, 20, 20.5, 31, 2),
		batch("b", 2, 200, 300, 30, 31, 41.5, 2),
		batch("b", 3, 300, 400, 40, 41.5, 52, 2),
		final("b", 400, 4, 52, 57, 2),
		batch("a", 0, 0, 400, 40, 57, 69, 2),
		final("a", 400, 1, 69, 74, 2),
	}
	tests := []struct {
		name      string
		bDeadline float64
		nodes     int
		want      Result
	}{
		{"1 node", 100, 1, Result{Cost: 78, DeadlinesMet: true, Steps: oneNode, Timeline: held(1, 78)}},
		{"2 nodes", 100, 2, Result{Cost: 148, DeadlinesMet: true, Steps: twoNodes, Timeline: held(2, 74)}},
		{"1 node, b late", 58, 1, Result{Cost: 78, Late: &planner.Failure{Query: "b", LateSeconds: 1}, Steps: oneNode, Timeline: held(1, 78)}},
		{"2 nodes, b in time", 58, 2, Result{Cost: 148, DeadlinesMet: true, Steps: twoNodes, Timeline: held(2, 74)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := workload(pool(1, 2), a(200), b(tc.bDeadline))
			got := llfWithoutBatching(w, curvesOf(w), tc.nodes)
			tc.want.Baseline, tc.want.Nodes, tc.want.MaxNodes = LLFNoBatching, tc.nodes, tc.nodes
			if diff := cmp.Diff(tc.want, got, approx); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestReactive(t *testing.T) {
	// q: 4,000 tuples at 10/s over [0, 400], which the plan below cuts into
	// four batches of 1,000 ready at 100, 200, 300, 400. c: one batch of
	// 100 tuples ready at 1500. A batch of x tuples takes 10 + 0.1x/p s on
	// p nodes (110 s for 1,000 on 1 node, 60 s on 2), a merge 10 s. Sizes
	// 1 and 2; nodes arrive 60 s after their request; looks every 60 s.
	//
	//   100  q0 runs on 1 node, 100-210.
	//   120  busy 20/60 of the last minute: no change.
	//   210  q1 runs 210-320.
	//   300  busy all minute; q2 (ready at 300) is 110 s queued > 60 s:
	//        ask for 2 nodes, due at 360.
	//   320  q2 runs on the 1 node that is ready, 320-430.
	//   360  the nodes arrive; nothing is queued.
	//   420  q3 is 60 + 10 = 70 s queued on 2 nodes, but 2 is the largest.
	//   430  q3 runs on 2 nodes 430-490, q's merge of 4 490-500.
	//   540  busy 20/60: no change. 600-900: idle with nothing queued at
	//        every look; at 900 the cool-down has passed: back to 1 node.
	//   1500 c (30 s queued, below 60 s) runs 1500-1520, its merge to 1530.
	//
	// Billed: 1 node 0-1530 and 1 node 300-900: 2,130 node-seconds.
	w := workload(pool(1, 2),
		uniform("q", 400, 1000, 10, 100, 10, 0.1, 10),
		uniform("c", 1500, 2000, 100.0/1500, 100, 10, 0.1, 10))
	w.Pool.ProvisioningLeadTime = 60
	plan := planner.Document{Steps: []planner.Step{
		batch("q", 0, 0, 1000, 100, 0, 0, 0),
		batch("q", 1, 1000, 2000, 200, 0, 0, 0),
		batch("q", 2, 2000, 3000, 300, 0, 0, 0),
		batch("q", 3, 3000, 4000, 400, 0, 0, 0),
		final("q", 4000, 4, 0, 0, 0),
		batch("c", 0, 0, 100, 1500, 0, 0, 0),
		final("c", 100, 1, 0, 0, 0),
	}}
	want := Result{
		Baseline: ReactiveAutoscaler, Cost: 2130, MaxNodes: 2, DeadlinesMet: true,
		Steps: []planner.Step{
			batch("q", 0, 0, 1000, 100, 100, 210, 1),
			batch("q", 1, 1000, 2000, 200, 210, 320, 1),
			batch("q", 2, 2000, 3000, 300, 320, 430, 1),
			batch("q", 3, 3000, 4000, 400, 430, 490, 2),
			final("q", 4000, 4, 490, 500, 2),
			batch("c", 0, 0, 100, 1500, 1500, 1520, 1),
			final("c", 100, 1, 1520, 1530, 1),
		},
		Timeline: []planner.NodeLevel{{At: 0, Nodes: 1}, {At: 300, Nodes: 2}, {At: 900, Nodes: 1}, {At: 1530, Nodes: 0}},
	}
	if diff := cmp.Diff(want, reactive(w, plan), approx); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestMicroBatch(t *testing.T) {
	// 1,000 tuples at 10/s over [0, 100] in units of 10 (one a second). A
	// micro-batch of x tuples takes 5 + 0.1x/p s on p nodes, a merge 5 s.
	// At the peak a trigger brings 300 tuples: 35 s on 1 node, more than
	// the 30 s interval; 20 s on 2.
	q := func(deadline float64) planner.Query { return uniform("q", 100, deadline, 10, 10, 5, 0.1, 5) }
	tests := []struct {
		name     string
		sizes    []int
		deadline float64
		want     Result
	}{{
		// 2 nodes keep up. Nothing has arrived at 0; at 30 [0,300) runs
		// 30-50, at 60 [300,600) 60-80, at 90 [600,900) 90-110, at 120
		// the rest 120-130 and the merge of 4 130-135.
		name: "keeps up", sizes: []int{1, 2, 4}, deadline: 200,
		want: Result{Nodes: 2, MaxNodes: 2, Cost: 270, DeadlinesMet: true, Steps: []planner.Step{
			batch("q", 0, 0, 300, 30, 30, 50, 2),
			batch("q", 1, 300, 600, 60, 60, 80, 2),
			batch("q", 2, 600, 900, 90, 90, 110, 2),
			batch("q", 3, 900, 1000, 100, 120, 130, 2),
			final("q", 1000, 4, 130, 135, 2),
		}, Timeline: held(2, 135)},
	}, {
		// 1 node, the only size, falls behind: [0,300) 30-65; the next
		// trigger starts at once, [300,650) 65-105; again, the rest
		// [650,1000) 105-145, the merge of 3 145-150: 10 s late.
		name: "falls behind", sizes: []int{1}, deadline: 140,
		want: Result{Nodes: 1, MaxNodes: 1, Cost: 150, Late: &planner.Failure{Query: "q", LateSeconds: 10}, Steps: []planner.Step{
			batch("q", 0, 0, 300, 30, 30, 65, 1),
			batch("q", 1, 300, 650, 65, 65, 105, 1),
			batch("q", 2, 650, 1000, 100, 105, 145, 1),
			final("q", 1000, 3, 145, 150, 1),
		}, Timeline: held(1, 150)},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := workload(pool(tc.sizes...), q(tc.deadline))
			tc.want.Baseline = MicroBatchStreaming
			if diff := cmp.Diff(tc.want, microBatch(w, curvesOf(w)), approx); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestLabel(t *testing.T) {
	for want, r := range map[string]Result{
		"elastic":               {Baseline: Elastic},
		"fixed 4":               {Baseline: Fixed, Nodes: 4},
		"llf-no-batching 10":    {Baseline: LLFNoBatching, Nodes: 10},
		"reactive-autoscaler":   {Baseline: ReactiveAutoscaler},
		"micro-batch-streaming": {Baseline: MicroBatchStreaming, Nodes: 20},
	} {
		if got := r.Label(); got != want {
			t.Errorf("Label() = %q, want %q", got, want)
		}
	}
}

func mustFixed(t *testing.T, w planner.Workload, nodes int) Result {
	t.Helper()
	r, err := fixed(w, nodes)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
