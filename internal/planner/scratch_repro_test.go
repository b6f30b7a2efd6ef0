package planner

import (
	"testing"
	"time"

	"github.com/laxity-dev/laxity/internal/costmodel"
)

func TestScratchRepro(t *testing.T) {
	w := Workload{
		Name:     "sched",
		Origin:   time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Pool:     Pool{Sizes: []int{2}, IdleNodes: 0, PricePerNodeHour: 1, BillingMinimum: 60},
		Planning: Planning{BatchSizeFactors: []int{1}, BacktrackStep: 1, MaxBatchDuration: 600, Policy: LeastLaxity},
		Queries: []Query{{Name: "q1", WindowStart: 0, WindowEnd: 100, Deadline: 200,
			Rates:       []RateSegment{{Offset: 0, TuplesPerSecond: 1}},
			Granularity: 1,
			Cost: costmodel.Model{
				Batch: costmodel.Linear{Overhead: 1e-25, Parallel: 1e-4},
				Merge: costmodel.Linear{Overhead: 1}}}},
	}
	d, err := guardedPlan(w)
	t.Logf("%v %+v steps=%d", err, d.Chosen, len(d.Steps))
}
