package baseline

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/planner"
)

// generated is a random workload of one to five queries with windows in
// the first hour, rate profiles, arrival units, allowed lateness, partial
// aggregation and deadlines from comfortable to hopeless, on one of a few
// pools: every baseline meets some and misses some.
func generated(seed uint64) planner.Workload {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	sizes := [][]int{{2, 4, 8}, {1, 3}, {2, 4, 10, 14, 20}}[rng.IntN(3)]
	w := planner.Workload{
		Name: fmt.Sprintf("generated-%d", seed),
		Pool: planner.Pool{
			Sizes: sizes, IdleNodes: rng.IntN(sizes[0] + 1), PricePerNodeHour: 0.25, BillingMinimum: 60,
			ProvisioningLeadTime: float64(rng.IntN(4) * 120), ReleaseAfterIdle: 720,
		},
		Planning: planner.Planning{
			BatchSizeFactors: []int{1, 2, 4, 8}, BacktrackStep: 1, MaxBatchDuration: 600,
			Policy:        []planner.Policy{planner.LeastLaxity, planner.LeastLaxity, planner.EarliestDeadline}[rng.IntN(3)],
			RuntimeMargin: []float64{0, 0, 0.2}[rng.IntN(3)],
		},
	}
	for i := range 1 + rng.IntN(5) {
		start := math.Round(rng.Float64() * 1800)
		length := math.Round(300 + rng.Float64()*2400)
		q := planner.Query{
			Name: fmt.Sprintf("q%d", i), WindowStart: start, WindowEnd: start + length,
			Deadline:    start + length + math.Round(10+rng.Float64()*300),
			Granularity: int64(1 + rng.IntN(5000)),
			Cost: costmodel.Model{
				Batch: costmodel.Linear{Overhead: 2 + rng.Float64()*13, Serial: rng.Float64() * 1e-6, Parallel: 2e-6 + rng.Float64()*2e-5},
				Merge: costmodel.Linear{Overhead: 5, Serial: 0.02, Parallel: 0.2},
			},
		}
		for offset := 0.0; offset < length; offset += math.Round(length/3 + rng.Float64()*length) {
			q.Rates = append(q.Rates, planner.RateSegment{Offset: offset, TuplesPerSecond: math.Round(rng.Float64() * 3000)})
		}
		q.Rates[0].TuplesPerSecond += 100
		if rng.IntN(3) == 0 {
			q.AllowedLateness = 30
		}
		if rng.IntN(3) == 0 {
			q.PartialEvery = 0.25
		}
		w.Queries = append(w.Queries, q)
	}
	return w
}

// workloads are the hand-computed cases and generated ones.
func workloads() []planner.Workload {
	ws := []planner.Workload{
		workload(pool(1, 2), oneQuery(200)),
		workload(pool(1, 2), oneQuery(116)),
		workload(pool(1, 2), uniform("a", 40, 200, 10, 100, 10, 0.01, 5), uniform("b", 40, 58, 10, 100, 10, 0.01, 5)),
	}
	for seed := range uint64(40) {
		ws = append(ws, generated(seed))
	}
	return ws
}

func compare(t *testing.T, w planner.Workload) []Result {
	t.Helper()
	results, err := Compare(w, mustPlan(t, w))
	if err != nil {
		t.Fatal(err)
	}
	return results
}

// TestEveryBaselineRunsEveryTupleOnce checks what any schedule on the
// model must satisfy: one step at a time, each lasting what the cost model
// with the runtime margin says, no batch before its tuples have arrived,
// every tuple in exactly one batch, every merge after the batches it
// merges, every step on nodes the billed timeline holds, and a cost,
// largest pool and deadline outcome that follow from the steps and the
// timeline.
func TestEveryBaselineRunsEveryTupleOnce(t *testing.T) {
	for _, w := range workloads() {
		results := compare(t, w)
		if len(results) != 3+2*len(w.Pool.Sizes) {
			t.Fatalf("%s: %d results, want elastic, fixed and LLF per size, reactive and streaming", w.Name, len(results))
		}
		for _, r := range results {
			t.Run(w.Name+"/"+r.Label(), func(t *testing.T) {
				checkSteps(t, w, r)
				checkTimeline(t, w, r)
				checkOutcome(t, w, r)
			})
		}
	}
}

func checkSteps(t *testing.T, w planner.Workload, r Result) {
	t.Helper()
	type progress struct {
		to                        int64
		batches, partials, merged int
		lastBatchEnd              float64
		finals                    int
	}
	byName := map[string]*progress{}
	for _, q := range w.Queries {
		byName[q.Name] = &progress{}
	}
	for i, s := range r.Steps {
		if i > 0 && s.Start < r.Steps[i-1].End-eps {
			t.Errorf("step %d (%s %s %d) starts at %v, before step %d ends at %v", i, s.Query, s.Kind, s.Index, s.Start, i-1, r.Steps[i-1].End)
		}
		if s.Start < s.Ready-eps || s.End < s.Start {
			t.Errorf("step %d (%s %s %d): ready %v, runs %v-%v", i, s.Query, s.Kind, s.Index, s.Ready, s.Start, s.End)
		}
		if s.Start < -eps {
			t.Errorf("step %d starts at %v, before the origin", i, s.Start)
		}
		p := byName[s.Query]
		q := queryNamed(w, s.Query)
		c := newArrivalCurve(q)
		model := q.Cost.Scaled(1 + w.Planning.RuntimeMargin)
		seconds := model.MergeSeconds(s.Nodes, s.Inputs)
		if s.Kind == planner.StepBatch {
			seconds = model.BatchSeconds(s.Nodes, s.ToTuple-s.FromTuple)
		}
		if !cmp.Equal(s.End-s.Start, seconds, cmpopts.EquateApprox(0, 1e-6)) {
			t.Errorf("step %d (%s %s %d) on %d nodes lasts %v, the model says %v", i, s.Query, s.Kind, s.Index, s.Nodes, s.End-s.Start, seconds)
		}
		switch s.Kind {
		case planner.StepBatch:
			if s.Index != p.batches || s.FromTuple != p.to || s.ToTuple <= s.FromTuple || s.ToTuple > c.Total() || p.finals > 0 {
				t.Errorf("batch %+v does not continue %s's batches (%d so far, up to tuple %d)", s, s.Query, p.batches, p.to)
			}
			if s.ToTuple != c.Total() && s.ToTuple%c.unit != 0 {
				t.Errorf("batch %+v ends inside an arrival unit of %d", s, c.unit)
			}
			if arrived := c.ReadyAt(s.ToTuple); s.Ready < arrived-eps {
				t.Errorf("batch %+v is ready at %v, before its last unit arrives at %v", s, s.Ready, arrived)
			}
			p.to, p.batches, p.lastBatchEnd = s.ToTuple, p.batches+1, s.End
		case planner.StepPartial:
			if s.Index != p.partials || s.Inputs < 1 || p.merged+s.Inputs > p.batches || s.Start < p.lastBatchEnd-eps {
				t.Errorf("partial %+v: %d batches, %d merged before", s, p.batches, p.merged)
			}
			p.partials, p.merged = p.partials+1, p.merged+s.Inputs
		case planner.StepFinal:
			if want := p.partials + p.batches - p.merged; s.Inputs != want || s.ToTuple != c.Total() || p.to != c.Total() || s.Start < p.lastBatchEnd-eps {
				t.Errorf("final %+v: want %d inputs over %d tuples after %d batches up to tuple %d", s, want, c.Total(), p.batches, p.to)
			}
			p.finals++
		}
	}
	for _, q := range w.Queries {
		if p := byName[q.Name]; p.finals != 1 || p.to != newArrivalCurve(q).Total() {
			t.Errorf("%s: %d final merges, tuples processed up to %d of %d", q.Name, p.finals, p.to, newArrivalCurve(q).Total())
		}
	}
}

func queryNamed(w planner.Workload, name string) planner.Query {
	for _, q := range w.Queries {
		if q.Name == name {
			return q
		}
	}
	panic("no query " + name)
}

func checkTimeline(t *testing.T, w planner.Workload, r Result) {
	t.Helper()
	levels := r.Timeline
	if len(levels) < 2 || levels[0].At != 0 {
		t.Fatalf("timeline %v does not start at the origin", levels)
	}
	for i := 1; i < len(levels); i++ {
		if levels[i].At <= levels[i-1].At {
			t.Errorf("timeline %v is not ascending", levels)
		}
	}
	if end := r.Steps[len(r.Steps)-1].End; math.Abs(levels[len(levels)-1].At-end) > 1e-6 {
		t.Errorf("timeline ends at %v, the last step at %v", levels[len(levels)-1].At, end)
	}
	level := func(at float64) int {
		n := 0
		for _, p := range levels {
			if p.At > at+eps {
				break
			}
			n = p.Nodes
		}
		return n
	}
	for _, s := range r.Steps {
		if level(s.Start) < s.Nodes {
			t.Errorf("%s %s %d runs on %d nodes at %v, the timeline holds %d", s.Query, s.Kind, s.Index, s.Nodes, s.Start, level(s.Start))
		}
		for _, p := range levels {
			if p.At > s.Start+eps && p.At < s.End-eps && p.Nodes < s.Nodes {
				t.Errorf("%s %s %d runs on %d nodes until %v, the timeline drops to %d at %v", s.Query, s.Kind, s.Index, s.Nodes, s.End, p.Nodes, p.At)
			}
		}
	}
	maxNodes := 0
	for _, p := range levels {
		maxNodes = max(maxNodes, p.Nodes)
	}
	if r.MaxNodes != maxNodes {
		t.Errorf("max nodes %d, the timeline's %d", r.MaxNodes, maxNodes)
	}
	if cost := planner.Cost(levels, w.Pool); !cmp.Equal(cost, r.Cost, approx) {
		t.Errorf("cost %v, the timeline bills %v", r.Cost, cost)
	}
}

func checkOutcome(t *testing.T, w planner.Workload, r Result) {
	t.Helper()
	var late *planner.Failure
	for _, q := range w.Queries {
		for _, s := range r.Steps {
			if s.Query == q.Name && s.Kind == planner.StepFinal && s.End > q.Deadline+eps && (late == nil || q.Deadline < queryNamed(w, late.Query).Deadline) {
				late = &planner.Failure{Query: q.Name, LateSeconds: s.End - q.Deadline}
			}
		}
	}
	if diff := cmp.Diff(late, r.Late, approx); diff != "" || r.DeadlinesMet != (late == nil) {
		t.Errorf("deadlines met %v, late %+v; the steps say (-want +got):\n%s", r.DeadlinesMet, r.Late, diff)
	}
}

func TestCompareIsDeterministic(t *testing.T) {
	for seed := range uint64(5) {
		w := generated(seed)
		first := compare(t, w)
		for range 2 {
			if diff := cmp.Diff(first, compare(t, w)); diff != "" {
				t.Fatalf("%s: a second comparison differs (-first +again):\n%s", w.Name, diff)
			}
		}
	}
}

// TestFixedIsThePlannersSearchWithoutGrowth holds the fixed pool to the
// planner: for every pool size n and factor, it meets every deadline
// exactly when the planner's candidate starting at n is feasible without
// growing, and when the chosen plan never grows, the fixed pool of its
// size runs the very same steps.
func TestFixedIsThePlannersSearchWithoutGrowth(t *testing.T) {
	for _, w := range workloads() {
		plan := mustPlan(t, w)
		for _, c := range plan.Candidates {
			steps, err := planner.SimulateFixed(w, c.InitialNodes, c.BatchSizeFactor)
			if err != nil {
				t.Fatalf("%s: %v", w.Name, err)
			}
			r := heldPool(w, Fixed, c.InitialNodes, steps)
			if want := c.Feasible && c.MaxNodes == c.InitialNodes; r.DeadlinesMet != want {
				t.Errorf("%s: %d nodes, %dX: deadlines met %v (late %+v), the planner's candidate %+v", w.Name, c.InitialNodes, c.BatchSizeFactor, r.DeadlinesMet, r.Late, c)
			}
			chosen := plan.Chosen
			if c.InitialNodes == chosen.InitialNodes && c.BatchSizeFactor == chosen.BatchSizeFactor && chosen.Feasible && chosen.MaxNodes == chosen.InitialNodes {
				if diff := cmp.Diff(plan.Steps, r.Steps); diff != "" {
					t.Errorf("%s: the chosen plan on %d nodes, %dX, differs (-plan +fixed):\n%s", w.Name, c.InitialNodes, c.BatchSizeFactor, diff)
				}
			}
		}
	}
}

// TestReactiveSlackCountsThePlansJobs checks that the work the reactive
// autoscaler's slack counts from a plan's progress, with the planner's
// count, is the sum of the plan's jobs still to run, with and without
// partial merges.
func TestReactiveSlackCountsThePlansJobs(t *testing.T) {
	for _, w := range workloads() {
		for _, phi := range []float64{0, 0.25} {
			w.Queries = append([]planner.Query(nil), w.Queries...)
			for i := range w.Queries {
				w.Queries[i].PartialEvery = phi
			}
			m := modelled(w)
			jobs := jobsOf(m.Queries, mustPlan(t, w).Steps)
			for q := range jobs {
				for _, n := range m.Pool.Sizes {
					for next := range jobs[q] {
						sum := 0.0
						for _, j := range jobs[q][next:] {
							sum += j.seconds(m.Queries[q], n)
						}
						got := planner.RemainingSeconds(m.Queries[q].Cost.OnNodes(n), progress(jobs[q], next))
						if math.Abs(got-sum) > 1e-6*max(1, sum) {
							t.Errorf("%s: %s from job %d on %d nodes: counted %v, the jobs sum to %v", w.Name, m.Queries[q].Name, next, n, got, sum)
						}
					}
				}
			}
		}
	}
}
