package demo

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
)

var (
	workloadStart = time.Date(2026, 12, 1, 5, 56, 0, 0, time.UTC)
	wallStart     = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
)

func minutes(m float64) metav1.Duration {
	return metav1.Duration{Duration: time.Duration(m * float64(time.Minute))}
}

func TestCompressSchedule(t *testing.T) {
	for _, tc := range []struct {
		name   string
		factor float64
		pool   laxityv1alpha1.NodePool
		want   laxityv1alpha1.NodePool
		err    string
	}{
		{
			name: "the sample's pool x10", factor: 10,
			pool: laxityv1alpha1.NodePool{ProvisioningLeadTime: ptr.To(minutes(3)), ReleaseAfterIdle: ptr.To(minutes(4)), BillingMinimum: ptr.To(minutes(1))},
			want: laxityv1alpha1.NodePool{ProvisioningLeadTime: ptr.To(minutes(0.3)), ReleaseAfterIdle: ptr.To(minutes(0.4)), BillingMinimum: ptr.To(minutes(0.1))},
		},
		{
			name: "the defaults, written out compressed", factor: 12,
			want: laxityv1alpha1.NodePool{ProvisioningLeadTime: ptr.To(minutes(0.5)), ReleaseAfterIdle: ptr.To(minutes(1)), BillingMinimum: ptr.To(minutes(1.0 / 12))},
		},
		{
			name: "a lead time too short for Karpenter", factor: 40,
			pool: laxityv1alpha1.NodePool{ProvisioningLeadTime: ptr.To(minutes(3))},
			err:  "ElasticSchedule ns/s: spec.nodePool.provisioningLeadTime: 3m0s compressed 40 times is 4.5s, shorter than the 5s the local cluster needs to provision a node; use a speed of at most 36",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := &laxityv1alpha1.ElasticSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}}
			es.Spec.NodePool = tc.pool
			err := Compression{Factor: tc.factor, From: workloadStart, To: wallStart}.Schedule(es)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := es.Spec.NodePool
			for _, f := range []struct {
				field     string
				got, want *metav1.Duration
			}{
				{"provisioningLeadTime", got.ProvisioningLeadTime, tc.want.ProvisioningLeadTime},
				{"releaseAfterIdle", got.ReleaseAfterIdle, tc.want.ReleaseAfterIdle},
				{"billingMinimum", got.BillingMinimum, tc.want.BillingMinimum},
			} {
				if f.got == nil || f.got.Duration != f.want.Round(time.Millisecond) {
					t.Errorf("%s = %v, want %v", f.field, f.got, f.want)
				}
			}
			if p := es.Spec.Planning; p.MaxBatchDuration.Duration != time.Duration(float64(10*time.Minute)/tc.factor).Round(time.Millisecond) ||
				p.RateWindow.Duration != time.Duration(float64(3*time.Minute)/tc.factor).Round(time.Millisecond) {
				t.Errorf("planning durations %v, %v; want the defaults compressed", p.MaxBatchDuration, p.RateWindow)
			}
		})
	}
}

func sampleQuery() *laxityv1alpha1.IntermittentQuery {
	q := &laxityv1alpha1.IntermittentQuery{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q"}}
	q.Spec.Window = laxityv1alpha1.Window{
		Start: metav1.NewTime(time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)), End: metav1.NewTime(time.Date(2026, 12, 1, 6, 30, 0, 0, time.UTC)),
	}
	q.Spec.Deadline = metav1.NewTime(time.Date(2026, 12, 1, 6, 33, 0, 0, time.UTC))
	q.Spec.Input.Profile = []laxityv1alpha1.RateSegment{{After: minutes(0), RatePerSecond: "2000"}, {After: minutes(20), RatePerSecond: "12000"}}
	q.Spec.Input.AllowedLateness = minutes(0.5)
	q.Spec.CostModel.Batch = laxityv1alpha1.BatchCostModel{OverheadSeconds: "10", SerialSecondsPerTuple: "1e-6", ParallelSecondsPerTuple: "6e-5"}
	q.Spec.CostModel.Merge = laxityv1alpha1.MergeCostModel{Samples: []laxityv1alpha1.MergeSample{{Nodes: 2, Inputs: 4, Seconds: "17.2"}}}
	return q
}

func TestCompressQuery(t *testing.T) {
	for _, tc := range []struct {
		name   string
		factor float64
		change func(*laxityv1alpha1.IntermittentQuery)
		check  func(*testing.T, *laxityv1alpha1.IntermittentQuery)
		err    string
	}{
		{
			name: "the sample x10: times from the wall-clock start, rates up, seconds down", factor: 10,
			check: func(t *testing.T, q *laxityv1alpha1.IntermittentQuery) {
				s := q.Spec
				// 06:00 is 4 minutes after the workload's start: 24 s after the wall clock's.
				if !s.Window.Start.Time.Equal(wallStart.Add(24*time.Second)) || !s.Window.End.Time.Equal(wallStart.Add(204*time.Second)) || !s.Deadline.Time.Equal(wallStart.Add(222*time.Second)) {
					t.Errorf("window %v to %v, deadline %v", s.Window.Start, s.Window.End, s.Deadline)
				}
				p := s.Input.Profile
				if p[0].After.Duration != 0 || p[0].RatePerSecond != "20000" || p[1].After.Duration != 2*time.Minute || p[1].RatePerSecond != "120000" {
					t.Errorf("profile %+v", p)
				}
				if s.Input.AllowedLateness.Duration != 3*time.Second {
					t.Errorf("allowedLateness %v", s.Input.AllowedLateness)
				}
				b := s.CostModel.Batch
				if b.OverheadSeconds != "1" || b.SerialSecondsPerTuple != "1e-07" || b.ParallelSecondsPerTuple != "6e-06" {
					t.Errorf("batch cost model %+v", b)
				}
				if s.CostModel.Merge.Samples[0].Seconds != "1.72" {
					t.Errorf("merge sample %+v", s.CostModel.Merge.Samples[0])
				}
			},
		},
		{
			name: "the same tuples: a constant rate times the factor over a window the factor shorter", factor: 7,
			change: func(q *laxityv1alpha1.IntermittentQuery) {
				q.Spec.Input.Profile = nil
				q.Spec.Input.RatePerSecond = "9500"
			},
			check: func(t *testing.T, q *laxityv1alpha1.IntermittentQuery) {
				if q.Spec.Input.RatePerSecond != "66500" || q.Spec.Window.End.Sub(q.Spec.Window.Start.Time) != (30*time.Minute/7).Round(time.Second) {
					t.Errorf("rate %s over %v", q.Spec.Input.RatePerSecond, q.Spec.Window.End.Sub(q.Spec.Window.Start.Time))
				}
			},
		},
		{
			name: "a join: every input's rate, offsets and lateness", factor: 10,
			change: func(q *laxityv1alpha1.IntermittentQuery) {
				lineitem := laxityv1alpha1.JoinInput{Name: "lineitem", Input: q.Spec.Input}
				q.Spec.Input = laxityv1alpha1.Input{}
				q.Spec.Inputs = []laxityv1alpha1.JoinInput{
					{Name: "orders", Input: laxityv1alpha1.Input{RatePerSecond: "1900", AllowedLateness: metav1.Duration{Duration: time.Minute}}},
					lineitem,
				}
			},
			check: func(t *testing.T, q *laxityv1alpha1.IntermittentQuery) {
				orders, lineitem := q.Spec.Inputs[0].Input, q.Spec.Inputs[1].Input
				if orders.RatePerSecond != "19000" || orders.AllowedLateness.Duration != 6*time.Second {
					t.Errorf("orders %+v", orders)
				}
				if p := lineitem.Profile; p[1].After.Duration != 2*time.Minute || p[1].RatePerSecond != "120000" {
					t.Errorf("lineitem's profile %+v", p)
				}
				if !reflect.ValueOf(q.Spec.Input).IsZero() {
					t.Errorf("the query gained an input of one: %+v", q.Spec.Input)
				}
			},
		},
		{
			name: "an input's rate beyond the API's", factor: 10,
			change: func(q *laxityv1alpha1.IntermittentQuery) {
				q.Spec.Inputs = []laxityv1alpha1.JoinInput{{Name: "orders", Input: laxityv1alpha1.Input{RatePerSecond: "1e12"}}, {Name: "lineitem", Input: q.Spec.Input}}
				q.Spec.Input = laxityv1alpha1.Input{}
			},
			err: "spec.inputs[0].ratePerSecond: 1e12 compressed 10 times",
		},
		{
			name: "a deadline too close to the window's end", factor: 20,
			err: "IntermittentQuery ns/q: spec.deadline: 3m0s after spec.window.end compressed 20 times is 9s, shorter than the 10s the local cluster needs to run the steps after the window; use a speed of at most 18",
		},
		{
			name: "a rate beyond the API's", factor: 10,
			change: func(q *laxityv1alpha1.IntermittentQuery) { q.Spec.Input.Profile[1].RatePerSecond = "2e11" },
			err:    "spec.input.profile[1].ratePerSecond: 2e11 compressed 10 times",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := sampleQuery()
			if tc.change != nil {
				tc.change(q)
			}
			err := Compression{Factor: tc.factor, From: workloadStart, To: wallStart}.Query(q)
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(strings.TrimPrefix(err.Error(), "IntermittentQuery ns/q: "), strings.TrimPrefix(tc.err, "IntermittentQuery ns/q: ")) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, q)
		})
	}
}

func TestCompressionBackToWorkloadTime(t *testing.T) {
	c := Compression{Factor: 10, From: workloadStart, To: wallStart}
	if got := c.WorkloadInstant(c.Instant(workloadStart.Add(37 * time.Minute))); !got.Equal(workloadStart.Add(37 * time.Minute)) {
		t.Errorf("a workload instant there and back is %v", got)
	}
	if got := c.WorkloadSeconds(18); got != 180 {
		t.Errorf("18 wall-clock seconds are %g workload seconds, want 180", got)
	}
}

// The summary measures the workload in workload time and its run in wall
// time: a 75-minute workload at 15 times runs 5 minutes, never the span
// from the workload's origin to a compressed (wall-clock) deadline.
func TestCompressionSummary(t *testing.T) {
	for _, tc := range []struct {
		name   string
		factor float64
		span   time.Duration
		want   string
	}{
		{"75 minutes at 15 times", 15, 75 * time.Minute,
			"The workload runs 15 times faster on the wall clock: its 1h15m0s, from 2026-12-01T05:56:00Z to its last deadline at 2026-12-01T07:11:00Z, take 5m0s, from 12:00:00 to 12:05:00."},
		{"an hour at 7 times, to the second", 7, time.Hour,
			"The workload runs 7 times faster on the wall clock: its 1h0m0s, from 2026-12-01T05:56:00Z to its last deadline at 2026-12-01T06:56:00Z, take 8m34s, from 12:00:00 to 12:08:34."},
		{"the TPC-H sample at 12 times", 12, 82*time.Minute + 59*time.Second,
			"The workload runs 12 times faster on the wall clock: its 1h22m59s, from 2026-12-01T05:56:00Z to its last deadline at 2026-12-01T07:18:59Z, take 6m55s, from 12:00:00 to 12:06:55."},
		{"real time", 1, 90 * time.Second,
			"The workload runs 1 times faster on the wall clock: its 1m30s, from 2026-12-01T05:56:00Z to its last deadline at 2026-12-01T05:57:30Z, take 1m30s, from 12:00:00 to 12:01:30."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Compression{Factor: tc.factor, From: workloadStart, To: wallStart}
			if got := c.Summary(workloadStart.Add(tc.span)); got != tc.want {
				t.Errorf("Summary:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}
