package planner

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/laxity-dev/laxity/internal/costmodel"
)

// peakHeap runs f while sampling the bytes of live heap objects every
// millisecond, and returns the largest sample above the heap held before f.
func peakHeap(f func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var (
		peak uint64
		wg   sync.WaitGroup
	)
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(stop)
	wg.Wait()
	return peak - min(peak, base)
}

// monthWorkload is one query over a 30-day window at 18,000 tuples a
// second in units of 2,000, due an hour after the window: 144,000 batches
// at 1X, just inside the work bound, on pools of 2 to 20 nodes with factors
// 1X to 32X.
func monthWorkload() Workload {
	return Workload{
		Name: "month",
		Pool: Pool{Sizes: []int{2, 4, 10, 14, 20}, PricePerNodeHour: 0.4,
			BillingMinimum: 60, ProvisioningLeadTime: 180, ReleaseAfterIdle: 240},
		Planning: Planning{BatchSizeFactors: []int{1, 2, 4, 8, 16, 32}, BacktrackStep: 1, MaxBatchDuration: 600, Policy: LeastLaxity},
		Queries: []Query{{
			Name: "month", WindowEnd: 30 * 86400, Deadline: 30*86400 + 3600,
			Rates: []RateSegment{{TuplesPerSecond: 18000}}, Granularity: 2000,
			Cost: costmodel.Model{
				Batch: costmodel.Linear{Overhead: 10, Serial: 1e-6, Parallel: 6e-5},
				Merge: costmodel.Linear{Overhead: 5, Serial: 0.5, Parallel: 1},
			},
		}},
	}
}

// hardMonthWorkload is harder: six queries over the same 30 days, with
// arrival units of 500 tuples, each due one to six hours after the window.
func hardMonthWorkload() Workload {
	w := monthWorkload()
	w.Name = "hard-month"
	q := w.Queries[0]
	w.Queries = nil
	for i := range 6 {
		q.Name = fmt.Sprintf("month-%d", i)
		q.Rates = []RateSegment{{TuplesPerSecond: 3000}}
		q.Granularity = 500
		q.Deadline = q.WindowEnd + float64(i+1)*3600
		w.Queries = append(w.Queries, q)
	}
	return w
}

// monthHeapLimit is what a 30-day window may hold at its peak, with room
// to spare: the plan of monthWorkload peaked at 4.8 GB while the
// improvement phase made every reshaping of a 4,500-batch query before
// trying the first; made one at a time, it holds tens of megabytes.
const monthHeapLimit = 512 << 20

// TestMonthPeakHeap plans a 30-day window and checks the heap it holds at
// its peak.
func TestMonthPeakHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("plans a 30-day window")
	}
	w := monthWorkload()
	var err error
	peak := peakHeap(func() { _, err = Plan(w) })
	if err != nil {
		t.Fatal(err)
	}
	if peak > monthHeapLimit {
		t.Errorf("planning a 30-day window held %d MiB of heap at its peak, want at most %d MiB", peak>>20, monthHeapLimit>>20)
	}
}

// BenchmarkPlanMonth plans 30-day windows, reporting the peak of the heap
// held (peak-MiB) with the time and allocations.
func BenchmarkPlanMonth(b *testing.B) {
	for _, w := range []Workload{monthWorkload(), hardMonthWorkload()} {
		b.Run(w.Name, func(b *testing.B) {
			b.ReportAllocs()
			var peak uint64
			for b.Loop() {
				var err error
				peak = max(peak, peakHeap(func() { _, err = Plan(w) }))
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
		})
	}
}
