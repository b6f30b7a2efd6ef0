package planner

import (
	"fmt"
	"testing"
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
