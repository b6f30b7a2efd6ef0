package planner

import "testing"

// TestLayoutRemainingIsRemainingSeconds: the search's fast count of the
// work left equals the shared definition to the last bit, for every batch
// still to start of every layout of the exported workloads (with and
// without partial merges), at every batch-size factor, on every pool size.
func TestLayoutRemainingIsRemainingSeconds(t *testing.T) {
	checked := 0
	for _, w := range exportedWorkloads() {
		for _, every := range []float64{0, 0.25} {
			w := w
			w.Queries = append([]Query(nil), w.Queries...)
			for i := range w.Queries {
				w.Queries[i].PartialEvery = every
			}
			p, err := prepare(w)
			if err != nil {
				t.Fatal(err)
			}
			for _, factor := range w.Planning.BatchSizeFactors {
				for _, l := range p.layouts(factor, w.Pool.Sizes) {
					for next := range len(l.to) {
						for size := range w.Pool.Sizes {
							got, want := l.remaining(next, size), RemainingSeconds(l.onNodes[size], l.progress(next))
							if got != want {
								t.Fatalf("%s: %s, factor %d, batch %d, size %d: remaining = %v, RemainingSeconds = %v (layout: %d batches, c %d, total %d, size %d; progress %+v)", w.Name, l.name, factor, next, size, got, want, len(l.to), l.partialEvery, l.total, l.size, l.progress(next))
							}
							checked++
						}
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no layout checked")
	}
	t.Logf("%d counts checked", checked)
}
