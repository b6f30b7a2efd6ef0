package planner

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/laxity-dev/laxity/internal/costmodel"
)

// tpchQuery is one query of the TPC-H-shaped sample in config/samples/tpch:
// its batch coefficients (overhead s, serial and parallel s/tuple).
type tpchQuery struct {
	name                       string
	overhead, serial, parallel float64
}

// tpchQueries mirrors config/samples/tpch (keep them in step): nine
// TPC-H-like and four custom queries over one stream.
var tpchQueries = []tpchQuery{
	{"tpch-q1", 12, 4e-7, 1.2e-5},
	{"tpch-q3", 14, 5e-7, 1.4e-5},
	{"tpch-q4", 10, 3e-7, 0.9e-5},
	{"tpch-q5", 16, 6e-7, 1.6e-5},
	{"tpch-q6", 8, 2e-7, 0.6e-5},
	{"tpch-q7", 15, 5e-7, 1.5e-5},
	{"tpch-q8", 15, 5e-7, 1.5e-5},
	{"tpch-q10", 13, 4e-7, 1.3e-5},
	{"tpch-q12", 11, 3e-7, 1.0e-5},
	{"cq1", 6, 1e-7, 0.3e-5},
	{"cq2", 9, 2e-7, 0.7e-5},
	{"cq3", 9, 2e-7, 0.7e-5},
	{"cq4", 7, 1e-7, 0.4e-5},
}

// tpchWorkload is the sample at deadline scale d (1 = 1D: each query's
// deadline leaves it, after the window end and after the queries before
// it, the time of one batch of the whole window on 20 nodes plus its merge)
// and rate factor r.
func tpchWorkload(d, r float64) Workload {
	w := Workload{
		Name: "tpch",
		Pool: Pool{Sizes: []int{2, 4, 10, 14, 20}, IdleNodes: 1, PricePerNodeHour: 0.25,
			BillingMinimum: 60, ProvisioningLeadTime: 360, ReleaseAfterIdle: 720},
		Planning: Planning{BatchSizeFactors: []int{1, 2, 4, 8, 16, 32}, BacktrackStep: 1, MaxBatchDuration: 600, Policy: LeastLaxity},
	}
	const window, rate = 4500.0, 9500.0
	stagger := 0.0
	for _, tq := range tpchQueries {
		cost := costmodel.Model{
			Batch: costmodel.Linear{Overhead: tq.overhead, Serial: tq.serial, Parallel: tq.parallel},
			Merge: costmodel.Linear{Overhead: 5, Serial: 0.02, Parallel: 0.2},
		}
		stagger += cost.BatchSeconds(20, int64(window*rate)) + cost.MergeSeconds(20, 1)
		w.Queries = append(w.Queries, Query{
			Name: tq.name, WindowEnd: window, Deadline: window + float64(int(d*stagger)),
			Rates: []RateSegment{{TuplesPerSecond: rate * r}}, Granularity: 9500, Cost: cost,
		})
	}
	return w
}

// tpch4xFineWorkload is the sample as the operator reads it
// (config/samples/tpch.yaml, the golden tpch-tpch workload) at four times
// its rate, with the stream's tuples arriving in units of unit tuples
// instead of files of 9,500: the grid plans it as it does the sample, and
// the reshaping has finer places to cut.
func tpch4xFineWorkload(tb testing.TB, unit int64) Workload {
	tb.Helper()
	w := goldenWorkload(tb, "tpch-tpch")
	for i := range w.Queries {
		q := &w.Queries[i]
		q.Rates = []RateSegment{{TuplesPerSecond: 4 * q.Rates[0].TuplesPerSecond}}
		q.Granularity = unit
	}
	return w
}

// generatedWorkload is n queries with windows of 20 minutes to 3 hours over
// 24 hours, most of them opening in business hours (08:00–18:00), with
// deadlines 10–60 minutes after their windows: at the daytime peak the
// smallest pool cannot keep up, so plans must scale.
func generatedWorkload(n int, seed uint64) Workload {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	w := Workload{
		Name: "generated",
		Pool: Pool{Sizes: []int{2, 4, 10, 14, 20}, IdleNodes: 0, PricePerNodeHour: 0.25,
			BillingMinimum: 60, ProvisioningLeadTime: 360, ReleaseAfterIdle: 720},
		Planning: Planning{BatchSizeFactors: []int{1, 2, 4, 8, 16, 32}, BacktrackStep: 1, MaxBatchDuration: 600, Policy: LeastLaxity},
	}
	for i := 0; i < n; i++ {
		length := 1200 + rng.Float64()*9600
		start := rng.Float64() * (86400 - length)
		if rng.Float64() < 0.6 {
			start = 8*3600 + rng.Float64()*(10*3600-length)
		}
		w.Queries = append(w.Queries, Query{
			Name: fmt.Sprintf("q%04d", i), WindowStart: start, WindowEnd: start + length,
			Deadline:    start + length + 600 + rng.Float64()*3000,
			Rates:       []RateSegment{{TuplesPerSecond: 500 + rng.Float64()*4500}},
			Granularity: 1000,
			Cost: costmodel.Model{
				Batch: costmodel.Linear{Overhead: 2 + rng.Float64()*8, Serial: 1e-7, Parallel: 2e-6 + rng.Float64()*6e-6},
				Merge: costmodel.Linear{Overhead: 3, Serial: 0.01, Parallel: 0.1},
			},
		})
	}
	return w
}

// goldenWorkload reads a stored workload of testdata/golden.
func goldenWorkload(tb testing.TB, name string) Workload {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "golden", name+".workload.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var w Workload
	if err := json.Unmarshal(raw, &w); err != nil {
		tb.Fatal(err)
	}
	return w
}

// stretchedWorkload is w with every window lasting seconds at the same rates:
// the rate profile's offsets and the time between the window end and the
// deadline stretch in proportion.
func stretchedWorkload(w Workload, seconds float64) Workload {
	out := w
	out.Queries = make([]Query, len(w.Queries))
	for i, q := range w.Queries {
		f := seconds / (q.WindowEnd - q.WindowStart)
		q.Rates = append([]RateSegment(nil), q.Rates...)
		for j := range q.Rates {
			q.Rates[j].Offset *= f
		}
		slack := q.Deadline - q.WindowEnd
		q.WindowEnd = q.WindowStart + seconds
		q.Deadline = q.WindowEnd + slack*f
		out.Queries[i] = q
	}
	return out
}
