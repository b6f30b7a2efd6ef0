package source

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/test/builder"
)

// query is an IntermittentQuery over [t0, t0+75m] at 9,500 tuples per second
// in files of 9,500, changed by mutate.
func query(mutate func(q *laxityv1alpha1.IntermittentQuery)) *laxityv1alpha1.IntermittentQuery {
	q := builder.Query("analytics", "q1").Bare().Schedule("tpch").
		Window(t0, 75*time.Minute).Deadline(at(100 * time.Minute)).Rate("9500").Granularity(9500).Obj()
	if mutate != nil {
		mutate(q)
	}
	return q
}

func profile(pairs ...any) []laxityv1alpha1.RateSegment {
	var out []laxityv1alpha1.RateSegment
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, laxityv1alpha1.RateSegment{
			After: metav1.Duration{Duration: pairs[i].(time.Duration)}, RatePerSecond: pairs[i+1].(string),
		})
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func TestFromSpec(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(q *laxityv1alpha1.IntermittentQuery)
		actual []laxityv1alpha1.RateSegment
		total  int64
		probes []probe
	}{
		{
			name: "ratePerSecond", total: 42_750_000,
			probes: []probe{{-time.Second, 0}, {999 * time.Millisecond, 0}, {time.Second, 9500}, {75 * time.Minute, 42_750_000}},
		},
		{
			name: "decimal ratePerSecond",
			mutate: func(q *laxityv1alpha1.IntermittentQuery) {
				q.Spec.Window.End = metav1.NewTime(at(10 * time.Second))
				q.Spec.Input = laxityv1alpha1.Input{RatePerSecond: "0.3"}
			},
			total: 3, probes: []probe{{5 * time.Second, 1}, {10*time.Second - time.Nanosecond, 2}, {10 * time.Second, 3}},
		},
		{
			name: "totalTuples",
			mutate: func(q *laxityv1alpha1.IntermittentQuery) {
				q.Spec.Window.End = metav1.NewTime(at(3 * time.Second))
				q.Spec.Input = laxityv1alpha1.Input{TotalTuples: ptr[int64](1000), Granularity: 1}
			},
			total: 1000, probes: []probe{{time.Second, 333}, {2 * time.Second, 666}, {3 * time.Second, 1000}},
		},
		{
			name: "profile",
			mutate: func(q *laxityv1alpha1.IntermittentQuery) {
				q.Spec.Input.RatePerSecond = ""
				q.Spec.Input.Profile = profile(time.Duration(0), "9500", 50*time.Minute, "19000")
			},
			total: 57_000_000, probes: []probe{{50 * time.Minute, 28_500_000}, {50*time.Minute + time.Second, 28_519_000}},
		},
		{
			name: "unset granularity is 1",
			mutate: func(q *laxityv1alpha1.IntermittentQuery) {
				q.Spec.Input.Granularity = 0
			},
			total: 42_750_000, probes: []probe{{500 * time.Millisecond, 4750}},
		},
		{
			// The planner's conversion reads ratePerSecond first; so does
			// FromSpec (the API allows only one).
			name: "ratePerSecond before profile",
			mutate: func(q *laxityv1alpha1.IntermittentQuery) {
				q.Spec.Input.Profile = profile(time.Duration(0), "1")
			},
			total: 42_750_000,
		},
		{
			name:   "actual profile instead of the declared rate",
			actual: profile(time.Duration(0), "4750", 50*time.Minute, "38000"),
			total:  71_250_000, probes: []probe{{50 * time.Minute, 14_250_000}, {51 * time.Minute, 16_530_000}},
		},
		{
			name:   "actual profile with no tuples",
			actual: profile(time.Duration(0), "0"),
			total:  0, probes: []probe{{time.Hour, 0}},
		},
		{
			name:   "empty actual profile",
			actual: []laxityv1alpha1.RateSegment{},
			total:  42_750_000,
		},
		{
			name: "actual profile from the spec",
			mutate: func(q *laxityv1alpha1.IntermittentQuery) {
				q.Spec.Input.ActualProfile = profile(time.Duration(0), "1000")
			},
			total: 4_500_000,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := query(tc.mutate)
			actual := tc.actual
			if actual == nil {
				actual = q.Spec.Input.ActualProfile
			}
			s, err := FromSpec(q, actual)
			if err != nil {
				t.Fatalf("FromSpec: %v", err)
			}
			if s.Total() != tc.total {
				t.Errorf("Total() = %d, want %d", s.Total(), tc.total)
			}
			for _, p := range tc.probes {
				if got, err := s.Arrived(context.Background(), at(p.at)); err != nil || got != p.want {
					t.Errorf("Arrived(t0%+v) = %d, %v, want %d, nil", p.at, got, err, p.want)
				}
			}
		})
	}
}

func TestFromSpecErrors(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(q *laxityv1alpha1.IntermittentQuery)
		actual []laxityv1alpha1.RateSegment
		want   string
	}{
		{"no input", func(q *laxityv1alpha1.IntermittentQuery) { q.Spec.Input = laxityv1alpha1.Input{} }, nil,
			"spec.input: one of ratePerSecond, totalTuples or profile is required"},
		{"rate not a number", func(q *laxityv1alpha1.IntermittentQuery) { q.Spec.Input.RatePerSecond = "fast" }, nil,
			`spec.input.ratePerSecond: "fast" is not a number`},
		{"rate out of range", func(q *laxityv1alpha1.IntermittentQuery) { q.Spec.Input.RatePerSecond = "1e400" }, nil,
			`spec.input.ratePerSecond: "1e400" is out of range`},
		{"negative rate", func(q *laxityv1alpha1.IntermittentQuery) { q.Spec.Input.RatePerSecond = "-5" }, nil,
			`spec.input.ratePerSecond: must be a finite non-negative number, got "-5"`},
		{"NaN rate", func(q *laxityv1alpha1.IntermittentQuery) { q.Spec.Input.RatePerSecond = "NaN" }, nil,
			`spec.input.ratePerSecond: must be a finite non-negative number`},
		{"total beyond int64", func(q *laxityv1alpha1.IntermittentQuery) {
			// The largest rate the API accepts over the longest window.
			q.Spec.Input.RatePerSecond = "1e12"
			q.Spec.Window.End = metav1.NewTime(at(8784 * time.Hour))
		}, nil, "spec.input.ratePerSecond: the window's total"},
		{"rate above the API's bound", func(q *laxityv1alpha1.IntermittentQuery) { q.Spec.Input.RatePerSecond = "1e300" }, nil,
			`spec.input.ratePerSecond: "1e300" is out of range`},
		{"rate not a decimal", func(q *laxityv1alpha1.IntermittentQuery) { q.Spec.Input.RatePerSecond = "NaN" }, nil,
			`spec.input.ratePerSecond: must be a finite non-negative number, got "NaN"`},
		{"negative total", func(q *laxityv1alpha1.IntermittentQuery) {
			q.Spec.Input = laxityv1alpha1.Input{TotalTuples: ptr[int64](-1)}
		}, nil, "spec.input.totalTuples: must not be negative, got -1"},
		{"empty window", func(q *laxityv1alpha1.IntermittentQuery) { q.Spec.Window.End = q.Spec.Window.Start }, nil,
			"spec.window.end: must be after spec.window.start"},
		{"negative granularity", func(q *laxityv1alpha1.IntermittentQuery) { q.Spec.Input.Granularity = -1 }, nil,
			"spec.input.granularity: must be at least 1, got -1"},
		{"profile rate", func(q *laxityv1alpha1.IntermittentQuery) {
			q.Spec.Input = laxityv1alpha1.Input{Profile: profile(time.Duration(0), "1", time.Minute, "")}
		}, nil, "spec.input.profile[1].ratePerSecond: required"},
		{"profile order", func(q *laxityv1alpha1.IntermittentQuery) {
			q.Spec.Input = laxityv1alpha1.Input{Profile: profile(time.Duration(0), "1", time.Minute, "2", time.Minute, "3")}
		}, nil, "spec.input.profile[2].after: offsets must strictly increase"},
		{"profile past the window", func(q *laxityv1alpha1.IntermittentQuery) {
			q.Spec.Input = laxityv1alpha1.Input{Profile: profile(time.Duration(0), "1", 2*time.Hour, "2")}
		}, nil, "spec.input.profile[1].after: must be inside the window"},
		{"actual profile start", nil, profile(time.Minute, "1"),
			"spec.input.actualProfile[0].after: the first segment must start at 0s"},
		{"actual profile rate", nil, profile(time.Duration(0), "-1"),
			`spec.input.actualProfile[0].ratePerSecond: must be a finite non-negative number, got "-1"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := FromSpec(query(tc.mutate), tc.actual)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("FromSpec() = %v, %v; want an error containing %q", s, err, tc.want)
			}
		})
	}
	if s, err := FromSpec(nil, nil); err == nil {
		t.Errorf("FromSpec(nil) = %v, nil; want an error", s)
	}
}

// TestRateModelNames pins the model names to the API's values of
// spec.planning.rateModel.
func TestRateModelNames(t *testing.T) {
	if Pessimistic != string(laxityv1alpha1.RateModelPessimistic) || Optimistic != string(laxityv1alpha1.RateModelOptimistic) {
		t.Errorf("rate models %q, %q; the API has %q, %q", Pessimistic, Optimistic,
			laxityv1alpha1.RateModelPessimistic, laxityv1alpha1.RateModelOptimistic)
	}
}
