package planner

import (
	"math"
	"testing"
)

func TestTailHeadroom(t *testing.T) {
	// A window closing at 100 s, due 60 s later.
	q := func(name string, deadline, margin, spread float64) Query {
		return Query{Name: name, WindowEnd: 100, Deadline: deadline, Margin: margin, Spread: spread}
	}
	sigma := TailSigmas / math.Sqrt(2)
	tests := []struct {
		name    string
		queries []Query
		margin  float64
		want    []float64
	}{
		{"nothing measured", []Query{q("a", 160, 0, 0), q("b", 200, 0, 0)}, 0, []float64{0, 0}},
		{"the earliest, without a margin", []Query{q("a", 160, 0, 0.1), q("b", 200, 0, 0.1)}, 0, []float64{sigma * 0.1 * 60, 0}},
		{"the margin covers part", []Query{q("a", 160, 0.1, 0.1), q("b", 200, 0, 0.1)}, 0, []float64{(sigma*0.1 - 0.1) * 60 / 1.1, 0}},
		{"the schedule's margin covers part", []Query{q("a", 160, 0, 0.1)}, 0.1, []float64{(sigma*0.1 - 0.1) * 60 / 1.1}},
		{"the margin covers all", []Query{q("a", 160, 0.25, 0.1)}, 0, []float64{0}},
		{"a later deadline gets none", []Query{q("a", 160, 0, 0), q("b", 200, 0, 0.1)}, 0, []float64{0, 0}},
		{"a tie: both", []Query{q("a", 160, 0, 0.1), q("b", 160, 0, 0.1)}, 0, []float64{sigma * 0.1 * 60, sigma * 0.1 * 60}},
		{"bounded to half the time after the close", []Query{q("a", 160, 0, 1)}, 0, []float64{30}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := TailHeadroom(tc.queries, Planning{RuntimeMargin: tc.margin})
			for i := range tc.want {
				if math.Abs(got[i]-tc.want[i]) > 1e-9 {
					t.Errorf("headroom %v, want %v", got, tc.want)
					break
				}
			}
		})
	}
	late := q("a", 160, 0, 0.1)
	late.AllowedLateness = 20
	if got, want := TailHeadroom([]Query{late}, Planning{})[0], sigma*0.1*40; math.Abs(got-want) > 1e-9 {
		t.Errorf("with 20 s of allowed lateness the tail has 40 s: headroom %v, want %v", got, want)
	}
}

// The earliest deadline's tail gets its headroom in the plan: q1 ends that
// long before its deadline, which the plan reports as given; with more
// headroom than any plan can give, the plan is made without it.
func TestPlanGivesTheEarliestTailItsHeadroom(t *testing.T) {
	// On 2 nodes q1 ends at 51 s, 9 s before its deadline; 0.1 of spread
	// asks for 10.6 s (3σ/√2 of the 50 s after its close).
	w := chain(200, 200)
	bare := mustPlan(t, w)
	w.Queries[0].Spread = 0.1
	d := mustPlan(t, w)
	want := TailHeadroom(w.Queries, w.Planning)[0]
	q1 := d.Queries[0]
	if q1.Name != "q1" || q1.Headroom != want || q1.Deadline != 60 || q1.Finish > q1.Deadline-want+1e-9 || q1.Slack != q1.Deadline-q1.Finish {
		t.Errorf("q1 planned %+v, want it to end %.1f s before its deadline of 60 s", q1, want)
	}
	if bare.Queries[0].Finish <= 60-want {
		t.Fatalf("without headroom q1 ends at %.1f s already: the test shows nothing", bare.Queries[0].Finish)
	}
	for _, q := range d.Queries[1:] {
		if q.Headroom != 0 {
			t.Errorf("%s got headroom %v", q.Name, q.Headroom)
		}
	}

	// Due at 30 s, 20 s after its close: its 40 s of work takes 11 s on
	// the largest size, 8 nodes, so no plan ends it 10 s early (the most
	// headroom it can get), one without headroom ends it in time.
	w.Queries[0].Deadline, w.Queries[0].Spread = 30, 0
	bare = mustPlan(t, w)
	w.Queries[0].Spread = 10
	d = mustPlan(t, w)
	if !bare.Chosen.Feasible || !d.Chosen.Feasible || d.Queries[0].Headroom != 0 || d.Chosen != bare.Chosen {
		t.Errorf("with headroom no plan can give: %+v, q1 %+v; want the plan without it, %+v", d.Chosen, d.Queries[0], bare.Chosen)
	}
}
