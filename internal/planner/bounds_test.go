package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/laxity-dev/laxity/internal/costmodel"
)

// boundsWorkload is one query with every parameter given: the shape the
// fuzz test and the table below vary.
type boundsParams struct {
	rate, window, slack        float64
	granularity                int64
	overhead, serial, par      float64
	mOverhead, mSerial, mPar   float64
	price, lead, billing, idle float64
	cmax                       float64
	largest                    int
	queries                    int
	phi                        float64
}

func (b boundsParams) workload() Workload {
	w := Workload{
		Name:   "bounds",
		Origin: testOrigin,
		Pool: Pool{Sizes: []int{1, max(2, b.largest)}, PricePerNodeHour: b.price,
			BillingMinimum: b.billing, ProvisioningLeadTime: b.lead, ReleaseAfterIdle: b.idle},
		Planning: Planning{BatchSizeFactors: []int{1, 4, 32}, BacktrackStep: 1, MaxBatchDuration: b.cmax, Policy: LeastLaxity},
	}
	if b.largest <= 1 {
		w.Pool.Sizes = w.Pool.Sizes[:1]
	}
	for i := range max(1, b.queries) {
		w.Queries = append(w.Queries, Query{
			Name: fmt.Sprintf("q%d", i), WindowStart: float64(i) * 60, WindowEnd: float64(i)*60 + b.window,
			Deadline: float64(i)*60 + b.window + b.slack, Rates: []RateSegment{{TuplesPerSecond: b.rate}},
			Granularity: b.granularity, PartialEvery: b.phi,
			Cost: costmodel.Model{
				Batch: costmodel.Linear{Overhead: b.overhead, Serial: b.serial, Parallel: b.par},
				Merge: costmodel.Linear{Overhead: b.mOverhead, Serial: b.mSerial, Parallel: b.mPar},
			},
		})
	}
	return w
}

// sampleParams is a small feasible query.
var sampleParams = boundsParams{
	rate: 2000, window: 1800, slack: 600, granularity: 2000,
	overhead: 8, serial: 5e-7, par: 4e-5, mOverhead: 5, mSerial: 0.5, mPar: 1,
	price: 0.4, lead: 180, billing: 60, idle: 240, cmax: 600, largest: 8, queries: 1,
}

// checkBounded plans w within a short budget and fails unless the result is
// an *InvalidError, the budget running out, or a plan of finite numbers
// that encodes to JSON.
func checkBounded(t *testing.T, w Workload) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	doc, err := PlanContext(ctx, w)
	if err != nil {
		var ie *InvalidError
		if !errors.As(err, &ie) && !errors.Is(err, ErrSearchBudget) {
			t.Fatalf("error is neither an *InvalidError nor the search budget: %v", err)
		}
		if errors.As(err, &ie) && (ie.Err == nil || ie.Error() == "") {
			t.Fatalf("an *InvalidError without a message: %#v", ie)
		}
		return err
	}
	if _, err := json.Marshal(doc); err != nil {
		t.Fatalf("the plan does not encode to JSON: %v", err)
	}
	floats := []float64{doc.Chosen.Cost, doc.Chosen.ExecutableCost, doc.MaxSupportedRateFactor}
	if doc.Chosen.Failure != nil {
		floats = append(floats, doc.Chosen.Failure.LateSeconds)
	}
	for _, c := range doc.Candidates {
		floats = append(floats, c.Cost)
	}
	for _, q := range doc.Queries {
		floats = append(floats, q.Finish, q.Deadline, q.Slack)
	}
	for _, s := range doc.Steps {
		floats = append(floats, s.Ready, s.Start, s.End)
	}
	for _, n := range append(append([]NodeLevel{}, doc.Nodes...), doc.Requests...) {
		floats = append(floats, n.At)
	}
	for _, f := range floats {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			t.Fatalf("the plan holds %v", f)
		}
	}
	return nil
}

func TestBounds(t *testing.T) {
	tests := []struct {
		name string
		edit func(*boundsParams)
		// want is a fragment of the *InvalidError, or "" for a plan.
		want string
	}{
		{"sample", func(*boundsParams) {}, ""},
		{"rate at the bound", func(b *boundsParams) { b.rate, b.window, b.granularity = 1e12, 60, 1e6 }, "at most 150,000 steps"},
		{"rate beyond the bound", func(b *boundsParams) { b.rate = 1e18 }, "ratePerSecond: must be a number between 0 and 1e+12"},
		{"rate NaN", func(b *boundsParams) { b.rate = math.NaN() }, "ratePerSecond"},
		{"total beyond 1e15", func(b *boundsParams) { b.rate, b.window = 1e12, 8784*3600 }, "3.16e+19 tuples arrive in the window; at most 1e+15 are supported"},
		{"total near int64", func(b *boundsParams) { b.rate, b.window, b.granularity = 1e12, 9e6, 1e15 }, "tuples arrive in the window"},
		{"window too long", func(b *boundsParams) { b.window = 8785 * 3600 }, "spec.window: lasts 8785h"},
		{"deadline too late", func(b *boundsParams) { b.slack = 8785 * 3600 }, "spec.deadline: is 8785h after"},
		{"granularity beyond", func(b *boundsParams) { b.granularity = 2e15 }, "spec.input.granularity"},
		{"price at the bound", func(b *boundsParams) { b.price = 1e6 }, ""},
		{"price beyond", func(b *boundsParams) { b.price = 1e308 }, "spec.nodePool.pricePerNodeHour: at most 1e+06"},
		{"lead time at the bound", func(b *boundsParams) { b.lead, b.idle, b.billing = 720*3600, 720*3600, 720*3600 }, ""},
		{"lead time beyond", func(b *boundsParams) { b.lead = 721 * 3600 }, "spec.nodePool.provisioningLeadTime: must be between 0s and 720h"},
		{"maxBatchDuration beyond", func(b *boundsParams) { b.cmax = 721 * 3600 }, "spec.planning.maxBatchDuration"},
		{"coefficient beyond", func(b *boundsParams) { b.mSerial = 2e6 }, "spec.costModel.merge: serial is 2e+06"},
		{"coefficients at the bound", func(b *boundsParams) {
			b.overhead, b.serial, b.par, b.mOverhead, b.mSerial, b.mPar = 1e5, 1e6, 1e6, 1e6, 1e6, 1e6
			b.cmax, b.slack, b.granularity, b.rate = 720*3600, 8784*3600, 1, 1.0/1800
		}, ""},
		{"tiny coefficients", func(b *boundsParams) {
			b.overhead, b.serial, b.par, b.mOverhead, b.mSerial, b.mPar = 1e-300, 1e-300, 0, 1e-300, 0, 1e-300
		}, ""},
		{"a year at sample rates", func(b *boundsParams) { b.window = 8784 * 3600 }, "at most 150,000 steps are supported: raise spec.planning.batchSizeFactors"},
		{"pool at the bound", func(b *boundsParams) { b.largest = MaxNodes }, ""},
		{"pool beyond", func(b *boundsParams) { b.largest = MaxNodes + 1 }, "spec.nodePool.sizes: at most 100000"},
		{"many queries together", func(b *boundsParams) { b.queries, b.window, b.rate = 30, 7*86400, 2000 }, "the schedule's 30 queries need"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := sampleParams
			tc.edit(&b)
			err := checkBounded(t, b.workload())
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v, want a plan", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestMaxSteps: the work bound is the operator's to set.
func TestMaxSteps(t *testing.T) {
	w := sampleParams.workload()
	w.Planning.MaxSteps = 10
	var ie *InvalidError
	if _, err := Plan(w); !errors.As(err, &ie) || ie.Query != w.Queries[0].Name || !strings.Contains(err.Error(), "at most 10 steps") {
		t.Fatalf("MaxSteps 10: got %v, want the query named and the bound", err)
	}
	w.Planning.MaxSteps = 1000
	if _, err := Plan(w); err != nil {
		t.Fatalf("MaxSteps 1000: %v", err)
	}
	w.Planning.MaxSteps = -1
	if _, err := Plan(w); !errors.As(err, &ie) {
		t.Fatalf("MaxSteps -1: got %v, want an *InvalidError", err)
	}
}

// FuzzPlanBounds plans one to three queries with every parameter anywhere
// in and beyond the API bounds.
func FuzzPlanBounds(f *testing.F) {
	add := func(b boundsParams) {
		f.Add(b.rate, b.window, b.slack, b.granularity, b.overhead, b.serial, b.par, b.mOverhead, b.mSerial, b.mPar,
			b.price, b.lead, b.billing, b.idle, b.cmax, b.largest, uint8(b.queries), b.phi)
	}
	add(sampleParams)
	extremes := []func(*boundsParams){
		func(b *boundsParams) { b.rate, b.window, b.granularity = 1e12, 1000, 1e15 },
		func(b *boundsParams) { b.rate, b.window, b.granularity = 1e12, 8784*3600, 1e15 },
		func(b *boundsParams) { b.rate, b.window = 1e15/(8784*3600), 8784*3600 },
		func(b *boundsParams) { b.price = 1e6 },
		func(b *boundsParams) { b.lead, b.billing, b.idle = 720*3600, 720*3600, 720*3600 },
		func(b *boundsParams) { b.window, b.slack = 8784*3600, 8784*3600 },
		func(b *boundsParams) { b.overhead, b.serial, b.par = 1e6, 1e6, 1e6 },
		func(b *boundsParams) {
			b.overhead, b.serial, b.par, b.mOverhead, b.mSerial, b.mPar = 1e-300, 1e-300, 1e-300, 1e-300, 1e-300, 1e-300
		},
		func(b *boundsParams) { b.cmax, b.largest, b.queries = 720*3600, MaxNodes, 3 },
		func(b *boundsParams) { b.phi, b.queries = 0.01, 3 },
	}
	for _, e := range extremes {
		b := sampleParams
		e(&b)
		add(b)
	}
	f.Fuzz(func(t *testing.T, rate, window, slack float64, granularity int64, overhead, serial, par, mOverhead, mSerial, mPar,
		price, lead, billing, idle, cmax float64, largest int, queries uint8, phi float64) {
		b := boundsParams{rate, window, slack, granularity, overhead, serial, par, mOverhead, mSerial, mPar,
			price, lead, billing, idle, cmax, largest, int(queries%4) + 1, phi}
		_ = checkBounded(t, b.workload())
	})
}
