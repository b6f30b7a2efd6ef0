package planner

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// chainOfFour is chain with a fourth query: q1-q4 all ready at 10 s, 40 s a
// batch on 2 nodes, 20 s on 4, 10 s on 8, each with a 1 s final merge. On 2
// nodes q3 ends exactly at its deadline (133 s) and q4 cannot start before
// 133 s; restarting q3 and q4 on 4 nodes still ends q4 at 134 s, half a
// second late, so the restart index has to move back past q3.
func chainOfFour() Workload {
	return Workload{Name: "chain-of-four", Pool: pool(2, 4, 8), Planning: planning(1), Queries: []Query{
		single("q1", 0, 10, 60, 0.8),
		single("q2", 0, 10, 95, 0.8),
		single("q3", 0, 10, 133, 0.8),
		single("q4", 0, 10, 133.5, 0.8),
	}}
}

// TestLargeBacktrackStepFallsBackToOne is eq. 8's second branch: where the
// restart index cannot move back by K without passing the first batch, it
// moves back by one, so a large K meets, on the same pool sizes and at the
// same cost, what K = 1 meets. Each case says what moving straight to the
// next size (the old rule) gave instead.
func TestLargeBacktrackStepFallsBackToOne(t *testing.T) {
	chainOnTwoSizes := chain(92, 92.5)
	chainOnTwoSizes.Pool = pool(2, 4)
	cases := []struct {
		name string
		w    Workload
		k    int
	}{
		// Restarting q2 and q3 on 4 nodes ends q3 at 93 s; the index
		// then has to reach q1. The old rule found no plan from 2 nodes
		// (there is no size above 4) and chose 4 nodes throughout, 0.292.
		{"two sizes, K=10: INN 2 used to be infeasible", chainOnTwoSizes, 10},
		{"two sizes, K=100: INN 2 used to be infeasible", chainOnTwoSizes, 100},
		// The old rule put q2 and q3 on 8 nodes: 0.278 against 0.272.
		{"three sizes, K=10: used to take 8 nodes", chain(92, 92.5), 10},
		// The old rule put q3 and q4 on 8 nodes: 0.360 against 0.354.
		{"four queries, K=3: used to take 8 nodes", chainOfFour(), 3},
		{"four queries, K=100: used to take 8 nodes", chainOfFour(), 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			one := c.w
			one.Planning.BacktrackStep = 1
			want := mustPlan(t, one)
			large := c.w
			large.Planning.BacktrackStep = c.k
			got := mustPlan(t, large)
			if !got.Chosen.Feasible || got.Chosen.InitialNodes != 2 {
				t.Fatalf("K=%d chose %+v, want a plan from 2 nodes", c.k, got.Chosen)
			}
			if diff := cmp.Diff(want.Chosen, got.Chosen, approx); diff != "" {
				t.Errorf("K=%d chosen differs from K=1 (-K=1 +K=%d):\n%s", c.k, c.k, diff)
			}
			if diff := cmp.Diff(summarise(want.Steps), summarise(got.Steps), approx); diff != "" {
				t.Errorf("K=%d steps differ from K=1 (-K=1 +K=%d):\n%s", c.k, c.k, diff)
			}
		})
	}
}

func TestBacktrackStepSkipsRestartPointsWhereItCan(t *testing.T) {
	// With K = 1 the index moves from q3 back to q2: q1 stays on 2 nodes,
	// q2-q4 run on 4.
	w := chainOfFour()
	d := mustPlan(t, w)
	want := []stepSummary{
		{"q1", StepBatch, 0, 10, 50, 2}, {"q1", StepFinal, 0, 50, 51, 2},
		{"q2", StepBatch, 0, 51, 71, 4}, {"q2", StepFinal, 0, 71, 72, 4},
		{"q3", StepBatch, 0, 72, 92, 4}, {"q3", StepFinal, 0, 92, 93, 4},
		{"q4", StepBatch, 0, 93, 113, 4}, {"q4", StepFinal, 0, 113, 114, 4},
	}
	if diff := cmp.Diff(want, summarise(d.Steps), approx); diff != "" {
		t.Errorf("K=1 steps (-want +got):\n%s", diff)
	}
	// With K = 2 the move back by two is possible, from q3 to q1, and
	// skips q2: everything runs on 4 nodes, 2 node-seconds dearer.
	w.Planning.BacktrackStep = 2
	d = mustPlan(t, w)
	want = []stepSummary{
		{"q1", StepBatch, 0, 10, 30, 4}, {"q1", StepFinal, 0, 30, 31, 4},
		{"q2", StepBatch, 0, 31, 51, 4}, {"q2", StepFinal, 0, 51, 52, 4},
		{"q3", StepBatch, 0, 52, 72, 4}, {"q3", StepFinal, 0, 72, 73, 4},
		{"q4", StepBatch, 0, 73, 93, 4}, {"q4", StepFinal, 0, 93, 94, 4},
	}
	if diff := cmp.Diff(want, summarise(d.Steps), approx); diff != "" {
		t.Errorf("K=2 steps (-want +got):\n%s", diff)
	}
	if !approxEqual(d.Chosen.Cost, 0.356) {
		t.Errorf("K=2 cost = %v, want 0.356", d.Chosen.Cost)
	}
}

// walkOutcome is what genSchedule leaves: whether it found a schedule, the
// schedule, the events it counted and how many of them it took from an
// echo instead of simulating them.
type walkOutcome struct {
	found          bool
	entries        []entry
	events, echoed int
}

// walkEveryCell runs genSchedule, then the segments' re-planning, on every
// initial size and factor of w, with or without the echo.
func walkEveryCell(t failer, w Workload, noEcho bool) []walkOutcome {
	p, err := prepare(w)
	if err != nil {
		t.Fatalf("%s: %v", w.Name, err)
	}
	var out []walkOutcome
	for _, f := range w.Planning.BatchSizeFactors {
		ls := p.layouts(f, w.Pool.Sizes)
		for initial := range w.Pool.Sizes {
			p.budget = &budget{}
			s := p.newSim(ls, firstReadyOrder(ls))
			s.noEcho = noEcho
			found := s.genSchedule(0, initial, w.Planning.BacktrackStep)
			if found {
				s.replanSegments(initial, w.Planning.BacktrackStep)
			}
			out = append(out, walkOutcome{found: found, entries: s.entries, events: p.budget.events, echoed: p.budget.echoed})
		}
	}
	return out
}

// TestEchoIsTheWalkItSkips holds the echo to the runs it replaces: with
// it, every cell of the grid ends with the same schedule, entry for entry,
// and counts the same events as when every run of every backtracking walk
// is simulated (so the improvement phase's share, and every plan, is the
// same), and on the sample at four times its rate, whose walks cross idle
// gaps, it leaves some of them unsimulated.
func TestEchoIsTheWalkItSkips(t *testing.T) {
	for _, w := range []Workload{tpchWorkload(1, 4), tpch4xFineWorkload(t, 950), tpchWorkload(0.5, 2), generatedWorkload(60, 2), chainOfFour()} {
		with, without := walkEveryCell(t, w, false), walkEveryCell(t, w, true)
		saved := 0
		for i := range with {
			if diff := cmp.Diff(without[i].entries, with[i].entries, cmp.AllowUnexported(entry{})); diff != "" || with[i].found != without[i].found {
				t.Fatalf("%s, cell %d: found %v with the echo, %v without; entries (-without +with):\n%s", w.Name, i, with[i].found, without[i].found, diff)
			}
			if with[i].events != without[i].events {
				t.Fatalf("%s, cell %d: %d events counted with the echo, %d without", w.Name, i, with[i].events, without[i].events)
			}
			saved += with[i].echoed
		}
		if w.Name == "tpch" && saved == 0 {
			t.Errorf("%s: the echo saved no event", w.Name)
		}
	}
}

// TestPropertyEchoIsTheWalkItSkips is TestEchoIsTheWalkItSkips on random
// workloads.
func TestPropertyEchoIsTheWalkItSkips(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		w := workloadGen.Draw(rt, "workload")
		if _, err := prepare(w); err != nil {
			rt.Skip(err)
		}
		with, without := walkEveryCell(rt, w, false), walkEveryCell(rt, w, true)
		for i := range with {
			if diff := cmp.Diff(without[i].entries, with[i].entries, cmp.AllowUnexported(entry{})); diff != "" || with[i].found != without[i].found {
				rt.Fatalf("cell %d: found %v with the echo, %v without; entries (-without +with):\n%s", i, with[i].found, without[i].found, diff)
			}
			if with[i].events != without[i].events {
				rt.Fatalf("cell %d: %d events counted with the echo, %d without", i, with[i].events, without[i].events)
			}
		}
	})
}
