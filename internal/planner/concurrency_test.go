package planner

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestConcurrentTPCHSample plans the sample at 1, 2 and 4 times its rate
// one step at a time and in lanes, with the margin a query plans its first
// window with (learn's default, 25%) and with none (a query learned to
// run as declared). In lanes the plan is never dearer; it is at least 15%
// cheaper at 2× and 4× with the first window's margin, and at 4× without.
func TestConcurrentTPCHSample(t *testing.T) {
	goal := map[[2]float64]float64{
		{0.25, 1}: 1, {0.25, 2}: 0.85, {0.25, 4}: 0.85,
		{0, 1}: 1, {0, 2}: 1, {0, 4}: 0.85,
	}
	for _, margin := range []float64{0.25, 0} {
		for _, rate := range []float64{1, 2, 4} {
			t.Run(fmt.Sprintf("%gx margin %g", rate, margin), func(t *testing.T) {
				w := goldenWorkload(t, "tpch-tpch")
				for i := range w.Queries {
					w.Queries[i].Rates = []RateSegment{{TuplesPerSecond: rate * w.Queries[i].Rates[0].TuplesPerSecond}}
					w.Queries[i].Margin = margin
				}
				seq, err := Plan(w)
				if err != nil {
					t.Fatal(err)
				}
				w.Planning.Concurrent = true
				conc, err := Plan(w)
				if err != nil {
					t.Fatal(err)
				}
				if !conc.Chosen.Feasible {
					t.Fatalf("in lanes a deadline is missed: %+v", conc.Chosen.Failure)
				}
				if margin == 0 {
					// The checker prices steps by the declared models.
					for _, s := range checkInvariants(w, conc) {
						t.Error(s)
					}
				}
				ratio := conc.Chosen.ExecutableCost / seq.Chosen.ExecutableCost
				t.Logf("executable bill %.3f in %d lanes (max %d nodes), %.3f one at a time (max %d): %.3f×", conc.Chosen.ExecutableCost, max(conc.Chosen.Lanes, 1), conc.Chosen.MaxNodes, seq.Chosen.ExecutableCost, seq.Chosen.MaxNodes, ratio)
				if g := goal[[2]float64{margin, rate}]; ratio > g+1e-9 {
					t.Errorf("in lanes the plan bills %.3f× the plan one step at a time, more than %.2f×", ratio, g)
				}
			})
		}
	}
}

// A re-plan made while steps run (PoolNow.Held): one step at a time, the
// plan starts when the last of them ends; in lanes, a lane waits only for
// its own queries' steps, and the other lanes start on the free nodes.
func TestHeldStepsStartOnlyTheirLanes(t *testing.T) {
	w := goldenWorkload(t, "tpch-tpch")
	for i := range w.Queries {
		w.Queries[i].Rates = []RateSegment{{TuplesPerSecond: 4 * w.Queries[i].Rates[0].TuplesPerSecond}}
		w.Queries[i].Margin = 0.25
	}
	const freeAt = 900.0
	held := w.Queries[0].Name
	w.Pool.Now = &PoolNow{Ready: 4, Requested: 4, MoreBy: w.Pool.ProvisioningLeadTime, Held: []HeldStep{{Query: held, Nodes: 2, FreeAt: freeAt}}}
	seq, err := Plan(w)
	if err != nil {
		t.Fatal(err)
	}
	if !seq.Origin.Equal(w.Origin) {
		t.Errorf("one step at a time: origin %v, want the workload's %v", seq.Origin, w.Origin)
	}
	for _, s := range seq.Steps {
		if s.Start < freeAt {
			t.Fatalf("one step at a time: %s %s %d starts at %.1f s, before the held step ends at %.0f s", s.Query, s.Kind, s.Index, s.Start, freeAt)
		}
	}
	w.Planning.Concurrent = true
	conc, err := Plan(w)
	if err != nil {
		t.Fatal(err)
	}
	if conc.Chosen.Lanes < 2 {
		t.Fatalf("the plan runs in %d lanes, want steps side by side", conc.Chosen.Lanes)
	}
	before := 0
	for _, s := range conc.Steps {
		switch {
		case s.Query == held && s.Start < freeAt:
			t.Errorf("in lanes: %s %s %d starts at %.1f s, before its own held step ends at %.0f s", s.Query, s.Kind, s.Index, s.Start, freeAt)
		case s.Start < freeAt:
			before++
		}
	}
	if before == 0 {
		t.Errorf("in lanes no step starts before %.0f s: the lanes without a held step waited for it", freeAt)
	}
	// Until the held step ends, the pool holds its 2 nodes beside the
	// steps the lanes start, and is asked for them.
	for _, s := range conc.Steps {
		if s.Start >= freeAt {
			continue
		}
		running := 2
		for _, o := range conc.Steps {
			if o.Start <= s.Start && o.End > s.Start {
				running += o.Nodes
			}
		}
		if got := levelAt(conc.Nodes, s.Start); got < running {
			t.Errorf("in lanes at %.1f s the node timeline holds %d nodes, the held step and the running steps %d", s.Start, got, running)
		}
	}
	// One step at a time, the plan starts when the held step ends, and
	// until then the pool is asked for the plan's first level.
	if got := seq.Requests[0]; got.At < freeAt || got.Nodes < 2 {
		t.Errorf("one step at a time the requests start at %.1f s with %d nodes, want at %.0f s with at least the held step's 2", got.At, got.Nodes, freeAt)
	}
}

func TestHeldOf(t *testing.T) {
	w := Workload{Queries: []Query{{Name: "a"}, {Name: "b"}, {Name: "c"}}}
	lane := []int{0, 1, 1}
	for _, tc := range []struct {
		name string
		held []HeldStep
		want [][]HeldStep
		own  []int
	}{
		{"nothing held", nil, [][]HeldStep{nil, nil}, []int{0, 0}},
		{"a lane's own step", []HeldStep{{"b", 2, 30}}, [][]HeldStep{nil, {{"b", 2, 30}}}, []int{0, 2}},
		{"ended by now", []HeldStep{{"b", 2, 0}}, [][]HeldStep{nil, nil}, []int{0, 0}},
		{"no lane's query", []HeldStep{{"shared", 2, 30}}, [][]HeldStep{{{"shared", 2, 30}}, {{"shared", 2, 30}}}, []int{0, 0}},
		{"more than the lane's share", []HeldStep{{"a", 2, 10}, {"b", 2, 30}, {"c", 4, 20}}, [][]HeldStep{{{"a", 2, 10}, {"b", 2, 30}, {"c", 4, 20}}, {{"b", 2, 30}, {"c", 4, 20}}}, []int{2, 0}},
	} {
		w.Pool.Now = &PoolNow{Held: tc.held}
		held, own := heldOf(w, lane, 2, 4)
		if diff := cmp.Diff(tc.want, held); diff != "" {
			t.Errorf("%s: held (-want +got):\n%s", tc.name, diff)
		}
		if diff := cmp.Diff(tc.own, own); diff != "" {
			t.Errorf("%s: own (-want +got):\n%s", tc.name, diff)
		}
	}
}
