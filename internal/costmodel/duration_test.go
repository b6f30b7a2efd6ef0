package costmodel

import (
	"math"
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	for _, c := range []struct {
		name    string
		seconds float64
		want    time.Duration
	}{
		{"zero", 0, 0},
		{"one second", 1, time.Second},
		{"fraction", 0.25, 250 * time.Millisecond},
		{"negative", -90, -90 * time.Second},
		{"NaN", math.NaN(), 0},
		{"+Inf", math.Inf(1), math.MaxInt64},
		{"-Inf", math.Inf(-1), math.MinInt64},
		{"huge", 1e300, math.MaxInt64},
		{"huge negative", -1e300, math.MinInt64},
		{"just beyond the range", math.MaxInt64/1e9 + 1, math.MaxInt64},
		{"the largest exact", 9e9, 9e9 * time.Second},
		{"2^63 ns", math.Ldexp(1, 63) / 1e9, math.MaxInt64},
		{"-2^63 ns", -math.Ldexp(1, 63) / 1e9, math.MinInt64},
		{"smallest positive", math.SmallestNonzeroFloat64, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Duration(c.seconds); got != c.want {
				t.Errorf("Duration(%v) = %v (%d ns), want %v (%d ns)", c.seconds, got, int64(got), c.want, int64(c.want))
			}
		})
	}
}

// FuzzDuration: for any float64, the conversion is monotone with the
// seconds, keeps their sign, and is within a nanosecond-rounding of them
// inside the range.
func FuzzDuration(f *testing.F) {
	for _, s := range []float64{0, 1, -1, 0.5, 1e9, 9.3e9, -9.3e9, math.Inf(1), math.NaN(), 1e308} {
		f.Add(s, 1.0)
	}
	f.Fuzz(func(t *testing.T, s, step float64) {
		d := Duration(s)
		switch {
		case math.IsNaN(s):
			if d != 0 {
				t.Fatalf("Duration(NaN) = %v", d)
			}
			return
		case s > 0 && d < 0, s < 0 && d > 0:
			t.Fatalf("Duration(%v) = %v: the sign flipped", s, d)
		}
		if ns := s * 1e9; math.Abs(ns) < 9e18 && math.Abs(float64(d)-ns) > 1+math.Abs(ns)*1e-15 {
			t.Fatalf("Duration(%v) = %d ns, want about %v", s, int64(d), ns)
		}
		if next := s + math.Abs(step); !math.IsNaN(next) && Duration(next) < d {
			t.Fatalf("Duration(%v) = %v < Duration(%v) = %v", next, Duration(next), s, d)
		}
	})
}
