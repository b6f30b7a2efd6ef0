package planner

import (
	"fmt"
	"testing"
)

// BenchmarkSearchBacktrackStep is the full search on the 13-query sample
// at 2× and 4× its rate with the backtrack steps of Tables 11-13: a larger
// K tries fewer restart points, falling back to steps of one only near the
// first batch and idle gaps.
func BenchmarkSearchBacktrackStep(b *testing.B) {
	for _, rate := range []float64{2, 4} {
		for _, k := range []int{1, 10, 100} {
			w := tpchWorkload(1, rate)
			w.Planning.BacktrackStep = k
			b.Run(fmt.Sprintf("rate=%gx/K=%d", rate, k), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Plan(w); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
