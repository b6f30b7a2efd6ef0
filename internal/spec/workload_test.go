package spec

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/learn"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/test/builder"
)

var origin = builder.Origin

func TestWorkloadConvertsAndDefaults(t *testing.T) {
	queries := []laxityv1alpha1.IntermittentQuery{
		builder.AnalyticsQuery("q2", func(s *laxityv1alpha1.IntermittentQuerySpec) {
			s.Input = laxityv1alpha1.Input{TotalTuples: ptr.To[int64](7200), AllowedLateness: metav1.Duration{Duration: 30 * time.Second}}
			s.PartialAggregation = &laxityv1alpha1.PartialAggregation{Every: "0.25"}
		}),
		builder.AnalyticsQuery("q1", nil),
	}
	got, err := Workload(builder.AnalyticsSchedule(), queries, origin)
	if err != nil {
		t.Fatal(err)
	}
	want := planner.Workload{
		Name: "tpch", Origin: origin,
		// Objects built in Go get the CRD's defaults: idle nodes the smallest
		// size, a 60 s billing minimum, keep-alive twice the lead time.
		Pool: planner.Pool{Sizes: []int{2, 4, 10}, IdleNodes: 2, PricePerNodeHour: 0.25, BillingMinimum: 60, ProvisioningLeadTime: 300, ReleaseAfterIdle: 600},
		Planning: planner.Planning{
			BatchSizeFactors: []int{1, 2, 4, 8, 16, 32}, BacktrackStep: 1, MaxBatchDuration: 600, Policy: planner.LeastLaxity, Objective: planner.Executable,
		},
		Queries: []planner.Query{
			{
				Name: "q1", WindowStart: 600, WindowEnd: 4200, Deadline: 4800,
				Rates: []planner.RateSegment{{TuplesPerSecond: 9500}}, Granularity: 9500,
				Cost: costmodel.Model{
					Batch: costmodel.Linear{Overhead: 25, Serial: 2e-8, Parallel: 2e-5},
					Merge: costmodel.Linear{Overhead: 8, Serial: 0.05, Parallel: 0.4},
				},
				// Nothing is learned yet: the margin for ordinary cloud variance.
				Margin: learn.DefaultMargin,
			},
			{
				// 7,200 tuples over the hour-long window: 2 per second.
				Name: "q2", WindowStart: 600, WindowEnd: 4200, Deadline: 4800,
				Rates: []planner.RateSegment{{TuplesPerSecond: 2}}, Granularity: 1, AllowedLateness: 30,
				Cost: costmodel.Model{
					Batch: costmodel.Linear{Overhead: 25, Serial: 2e-8, Parallel: 2e-5},
					Merge: costmodel.Linear{Overhead: 8, Serial: 0.05, Parallel: 0.4},
				},
				Margin:       learn.DefaultMargin,
				PartialEvery: 0.25,
			},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("workload (-want +got):\n%s", diff)
	}
}

func TestWorkloadConvertsAQueryOverSeveralInputs(t *testing.T) {
	q := builder.AnalyticsQuery("q12", func(s *laxityv1alpha1.IntermittentQuerySpec) {
		orders, lineitem := builder.JoinInput("orders", "2500"), builder.JoinInput("lineitem", "10000")
		orders.Granularity, lineitem.Granularity = 500, 500
		orders.AllowedLateness = metav1.Duration{Duration: time.Minute}
		lineitem.Profile, lineitem.RatePerSecond = []laxityv1alpha1.RateSegment{
			{After: metav1.Duration{}, RatePerSecond: "10000"}, {After: metav1.Duration{Duration: 30 * time.Minute}, RatePerSecond: "5000"},
		}, ""
		lineitem.LateFraction = "0.05"
		s.Input, s.Inputs = laxityv1alpha1.Input{}, []laxityv1alpha1.JoinInput{orders, lineitem}
	})
	got, err := Workload(builder.AnalyticsSchedule(), []laxityv1alpha1.IntermittentQuery{q}, origin)
	if err != nil {
		t.Fatal(err)
	}
	want := planner.Query{
		Name: "q12", WindowStart: 600, WindowEnd: 4200, Deadline: 4800, Granularity: 500, AllowedLateness: 60,
		Inputs: []planner.Input{
			{Name: "orders", Rates: []planner.RateSegment{{TuplesPerSecond: 2500}}},
			{Name: "lineitem", Rates: []planner.RateSegment{{TuplesPerSecond: 10000}, {Offset: 1800, TuplesPerSecond: 5000}}, LateFraction: 0.05},
		},
		Cost: costmodel.Model{
			Batch: costmodel.Linear{Overhead: 25, Serial: 2e-8, Parallel: 2e-5},
			Merge: costmodel.Linear{Overhead: 8, Serial: 0.05, Parallel: 0.4},
		},
		Margin: learn.DefaultMargin,
	}
	if diff := cmp.Diff(want, got.Queries[0]); diff != "" {
		t.Errorf("query (-want +got):\n%s", diff)
	}
	if _, err := planner.Plan(got); err != nil {
		t.Fatalf("planning the join: %v", err)
	}
}

func TestWorkloadProfileAndSamples(t *testing.T) {
	truth := costmodel.Linear{Overhead: 10, Serial: 2e-7, Parallel: 1.2e-5}
	var samples []laxityv1alpha1.BatchSample
	for _, p := range [][2]int64{{2, 1e6}, {2, 4e6}, {4, 4e6}, {10, 8e6}} {
		samples = append(samples, laxityv1alpha1.BatchSample{
			Nodes: int32(p[0]), Tuples: p[1],
			Seconds: strconv.FormatFloat(truth.Seconds(int(p[0]), float64(p[1])), 'g', -1, 64),
		})
	}
	q := builder.AnalyticsQuery("q", func(s *laxityv1alpha1.IntermittentQuerySpec) {
		s.Input = laxityv1alpha1.Input{Profile: []laxityv1alpha1.RateSegment{
			{After: metav1.Duration{}, RatePerSecond: "100"},
			{After: metav1.Duration{Duration: 30 * time.Minute}, RatePerSecond: "400"},
		}}
		s.CostModel.Batch = laxityv1alpha1.BatchCostModel{Samples: samples}
	})
	got, err := Workload(builder.AnalyticsSchedule(), []laxityv1alpha1.IntermittentQuery{q}, origin)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]planner.RateSegment{{Offset: 0, TuplesPerSecond: 100}, {Offset: 1800, TuplesPerSecond: 400}}, got.Queries[0].Rates); diff != "" {
		t.Errorf("rates (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(truth, got.Queries[0].Cost.Batch, cmpopts.EquateApprox(1e-6, 1e-12)); diff != "" {
		t.Errorf("fitted batch model (-want +got):\n%s", diff)
	}
}

func TestWorkloadErrorsNameObjectAndField(t *testing.T) {
	tests := []struct {
		name     string
		schedule func(*laxityv1alpha1.ElasticSchedule)
		query    func(*laxityv1alpha1.IntermittentQuerySpec)
		want     string
	}{
		{"price", func(s *laxityv1alpha1.ElasticSchedule) { s.Spec.NodePool.PricePerNodeHour = "cheap" }, nil,
			`ElasticSchedule analytics/tpch: spec.nodePool.pricePerNodeHour: "cheap" is not a number`},
		{"coefficient", nil, func(s *laxityv1alpha1.IntermittentQuerySpec) { s.CostModel.Merge.ParallelSecondsPerInput = "" },
			"IntermittentQuery analytics/q: spec.costModel.merge.parallelSecondsPerInput: required"},
		{"profile rate", nil, func(s *laxityv1alpha1.IntermittentQuerySpec) {
			s.Input = laxityv1alpha1.Input{Profile: []laxityv1alpha1.RateSegment{{RatePerSecond: "1e999"}}}
		}, `spec.input.profile[0].ratePerSecond: "1e999" is out of range`},
		{"no input", nil, func(s *laxityv1alpha1.IntermittentQuerySpec) { s.Input = laxityv1alpha1.Input{} }, "spec.input: one of"},
		{"bad fit", nil, func(s *laxityv1alpha1.IntermittentQuerySpec) {
			s.CostModel.Batch = laxityv1alpha1.BatchCostModel{Samples: []laxityv1alpha1.BatchSample{
				{Nodes: 2, Tuples: 1e6, Seconds: "20"}, {Nodes: 2, Tuples: 4e6, Seconds: "40"}, {Nodes: 4, Tuples: 4e6, Seconds: "15"}, {Nodes: 10, Tuples: 8e6, Seconds: "12"},
			}}
		}, "IntermittentQuery analytics/q: spec.costModel.batch.samples: best fit"},
		{"input and inputs", nil, func(s *laxityv1alpha1.IntermittentQuerySpec) {
			s.Inputs = []laxityv1alpha1.JoinInput{builder.JoinInput("orders", "1"), builder.JoinInput("lineitem", "4")}
		}, "IntermittentQuery analytics/q: spec.input and spec.inputs: set exactly one"},
		{"an input's rate", nil, func(s *laxityv1alpha1.IntermittentQuerySpec) {
			s.Input = laxityv1alpha1.Input{}
			s.Inputs = []laxityv1alpha1.JoinInput{builder.JoinInput("orders", "1"), builder.JoinInput("lineitem", "fast")}
		}, `IntermittentQuery analytics/q: spec.inputs[1].ratePerSecond: "fast" is not a number`},
		{"an input's late fraction", nil, func(s *laxityv1alpha1.IntermittentQuerySpec) {
			s.Input = laxityv1alpha1.Input{}
			s.Inputs = []laxityv1alpha1.JoinInput{builder.JoinInput("orders", "1"), builder.JoinInput("lineitem", "4")}
			s.Inputs[0].LateFraction = "1.5"
		}, `spec.inputs[0].lateFraction: "1.5" is more than 1`},
		{"partial", nil, func(s *laxityv1alpha1.IntermittentQuerySpec) {
			s.PartialAggregation = &laxityv1alpha1.PartialAggregation{Every: "a quarter"}
		}, "spec.partialAggregation.every"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			es := builder.AnalyticsSchedule()
			if tc.schedule != nil {
				tc.schedule(es)
			}
			_, err := Workload(es, []laxityv1alpha1.IntermittentQuery{builder.AnalyticsQuery("q", tc.query)}, origin)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
