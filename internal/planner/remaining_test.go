package planner

import (
	"math"
	"testing"
)

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

// TestLayoutDueKeepsTheTailMargin: a layout's final merge is due its tail
// margin of its last batch and final merge before the deadline, on every
// pool size.
func TestLayoutDueKeepsTheTailMargin(t *testing.T) {
	for _, w := range exportedWorkloads() {
		w = withTailMargin(w, 0.3)
		p, err := prepare(w)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range p.layouts(w.Planning.BatchSizeFactors[0], w.Pool.Sizes) {
			k := len(l.to)
			for size := range w.Pool.Sizes {
				o := l.onNodes[size]
				tail := o.BatchOverhead() + float64(l.to[k-1]-l.from(k-1))*o.BatchPerTuple() + o.MergeSeconds(l.finalInputs())
				if got, want := l.due[size], l.deadline-0.3*tail; math.Abs(got-want) > 1e-9*math.Abs(want) {
					t.Fatalf("%s: %s on size %d: due %v, want %v", w.Name, l.name, size, got, want)
				}
			}
		}
	}
}

func TestTailHeadroom(t *testing.T) {
	for _, c := range []struct {
		name                     string
		start, left, close, want float64
	}{
		{"after the close: all the work left", 120, 10, 100, 5},
		{"across the close: the part after it", 95, 10, 100, 2.5},
		{"done before the close: none", 80, 10, 100, 0},
	} {
		if got := TailHeadroom(0.5, c.start, c.left, c.close); got != c.want {
			t.Errorf("%s: TailHeadroom = %v, want %v", c.name, got, c.want)
		}
	}
}
