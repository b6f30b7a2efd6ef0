package planner

import (
	"fmt"
	"testing"
)

// BenchmarkSearchTPCH is the full INN × factor search with K = 1 on the
// 13-query sample at 1×, 2× and 4× its rate (the seed's Table 13 setting).
func BenchmarkSearchTPCH(b *testing.B) {
	for _, rate := range []float64{1, 2, 4} {
		w := tpchWorkload(1, rate)
		b.Run(fmt.Sprintf("rate=%gx", rate), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Plan(w); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSearchGenerated1000 plans 1,000 queries spread over 24 hours.
func BenchmarkSearchGenerated1000(b *testing.B) {
	w := generatedWorkload(1000, 1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Plan(w); err != nil {
			b.Fatal(err)
		}
	}
}
