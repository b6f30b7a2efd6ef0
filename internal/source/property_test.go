package source

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// drawnProfile is a window length, a profile with 1–6 segments (zero rates,
// fractions, decimals and large rates) and a granularity.
type drawnProfile struct {
	length      time.Duration
	segments    []Segment
	granularity int64
}

func drawProfile(t *rapid.T) drawnProfile {
	// Mostly lengths from a second to 30 days, log-uniform; sometimes a few
	// nanoseconds.
	var length time.Duration
	if rapid.IntRange(0, 9).Draw(t, "tiny") == 0 {
		length = time.Duration(rapid.Int64Range(1, 10).Draw(t, "length"))
	} else {
		length = time.Duration(math.Exp(rapid.Float64Range(math.Log(float64(time.Second)), math.Log(float64(30*24*time.Hour))).Draw(t, "logLength")))
	}
	n := rapid.IntRange(1, 6).Draw(t, "segments")
	offsets := []time.Duration{0}
	if cuts := min(int64(n-1), int64(length)-1); cuts > 0 {
		at := rapid.SliceOfNDistinct(rapid.Int64Range(1, int64(length)-1), int(cuts), int(cuts), rapid.ID[int64]).Draw(t, "cuts")
		slices.Sort(at)
		for _, c := range at {
			offsets = append(offsets, time.Duration(c))
		}
	}
	rate := rapid.OneOf(
		rapid.Just(0.0),
		rapid.Float64Range(0, 1),
		rapid.Map(rapid.IntRange(0, 100000), func(k int) float64 { return float64(k) / 10 }),
		rapid.Map(rapid.Float64Range(0, math.Log(1e6)), math.Exp),
	)
	p := drawnProfile{
		length: length,
		granularity: rapid.OneOf(
			rapid.Int64Range(1, 10),
			rapid.Map(rapid.Float64Range(0, math.Log(20000)), func(x float64) int64 { return int64(math.Exp(x)) }),
		).Draw(t, "granularity"),
	}
	for _, o := range offsets {
		p.segments = append(p.segments, Segment{After: o, PerSecond: rate.Draw(t, "rate")})
	}
	return p
}

// reference is A(t0 + e) in float64, for comparison.
func (p drawnProfile) reference(e time.Duration) float64 {
	e = min(max(e, 0), p.length)
	sum := 0.0
	for i, s := range p.segments {
		until := p.length
		if i+1 < len(p.segments) {
			until = p.segments[i+1].After
		}
		if e <= s.After {
			break
		}
		sum += s.PerSecond * (min(e, until) - s.After).Seconds()
	}
	return sum
}

// TestSyntheticProperties checks, over random profiles and times, that
// Arrived never decreases, is 0 before the window and the total from its end
// on, counts whole units inside it, and agrees with a float64 evaluation of
// A(t) up to rounding.
func TestSyntheticProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawProfile(t)
		s, err := NewSynthetic(t0, at(p.length), p.granularity, p.segments)
		if err != nil {
			t.Fatalf("NewSynthetic: %v", err)
		}
		tol := func(x float64) float64 { return 1e-9*math.Abs(x) + 1e-6 }
		if ref := p.reference(p.length); math.Abs(float64(s.Total())-math.Floor(ref)) > 1+tol(ref) {
			t.Fatalf("Total() = %d, float64 A(end) = %v", s.Total(), ref)
		}
		offsets := rapid.SliceOfN(rapid.Int64Range(-int64(p.length)/2-1, int64(p.length)+int64(p.length)/2+1), 1, 40).Draw(t, "times")
		offsets = append(offsets, 0, int64(p.length), int64(p.length)-1)
		slices.Sort(offsets)
		prev := int64(0)
		for _, o := range offsets {
			e := time.Duration(o)
			got, err := s.Arrived(context.Background(), at(e))
			if err != nil {
				t.Fatalf("Arrived: %v", err)
			}
			switch {
			case got < prev:
				t.Fatalf("Arrived(t0%+v) = %d after %d: decreased", e, got, prev)
			case e < 0 && got != 0:
				t.Fatalf("Arrived(t0%+v) = %d before the window", e, got)
			case e >= p.length && got != s.Total():
				t.Fatalf("Arrived(t0%+v) = %d at or after the window end, want the total %d", e, got, s.Total())
			case e < p.length && (got%p.granularity != 0 || got > s.Total()):
				t.Fatalf("Arrived(t0%+v) = %d: not whole units of %d up to %d", e, got, p.granularity, s.Total())
			}
			if e >= 0 && e < p.length {
				ref := p.reference(e)
				if float64(got) > ref+tol(ref) || float64(got) <= ref-float64(p.granularity)-tol(ref) {
					t.Fatalf("Arrived(t0%+v) = %d, float64 A = %v, granularity %d", e, got, ref, p.granularity)
				}
			}
			prev = got
		}
	})
}

// TestMeasuredRateProperty samples a constant-rate source at random
// intervals and checks that the measured rate is the source's up to a tuple
// at each end of the interval.
func TestMeasuredRateProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rate := rapid.Float64Range(0, 1e5).Draw(t, "rate")
		window := time.Duration(rapid.Int64Range(int64(time.Second), int64(time.Hour)).Draw(t, "window"))
		every := time.Duration(rapid.Int64Range(int64(time.Millisecond), int64(window/2)).Draw(t, "every"))
		// The source outlasts the samples (at most 400 × window/2).
		s, err := NewSynthetic(t0, at(1000*window), 1, []Segment{{PerSecond: rate}})
		if err != nil {
			t.Fatal(err)
		}
		h := NewHistoryFor(window)
		ticks := rapid.IntRange(1, 400).Draw(t, "ticks")
		var now time.Time
		for i := range ticks {
			now = at(time.Duration(i) * every)
			n, _ := s.Arrived(context.Background(), now)
			h.Record(Sample{At: now, Arrived: n})
		}
		m, ok := h.Measure(window, now)
		span := m.To.Sub(m.From)
		covered := 2*min(now.Sub(t0), window) >= window
		if ok != covered {
			t.Fatalf("Measure() ok = %v after %v of samples, window %v", ok, now.Sub(t0), window)
		}
		if !ok {
			return
		}
		if span > window || 2*span < window {
			t.Fatalf("Measure() covers %v of a window of %v", span, window)
		}
		if bound := 2/span.Seconds() + 1e-9*rate; math.Abs(m.PerSecond-rate) > bound {
			t.Fatalf("Measure() = %v over %v, want %v ± %v", m.PerSecond, span, rate, bound)
		}
	})
}

// TestHistoryProperty records random samples, some out of order, and checks
// the history's invariants: bounded, ascending, the latest accepted sample
// newest, the others at least the spacing apart.
func TestHistoryProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		size := rapid.IntRange(-1, 20).Draw(t, "size")
		spacing := time.Duration(rapid.Int64Range(-5, 50).Draw(t, "spacing"))
		h := NewHistory(size, spacing)
		var last Sample
		accepted := 0
		clock := time.Duration(0)
		for i := range rapid.IntRange(0, 200).Draw(t, "records") {
			step := time.Duration(rapid.Int64Range(-20, 30).Draw(t, "step"))
			sample := Sample{At: at(clock + step), Arrived: int64(i)}
			if step >= 0 {
				clock += step
			}
			if h.Record(sample) {
				last = sample
				accepted++
			} else if accepted == 0 || !sample.At.Before(last.At) {
				t.Fatalf("Record(%v) ignored, newest %v", sample.At.Sub(t0), last.At.Sub(t0))
			}
			got := h.Samples()
			if len(got) != h.Len() || len(got) > max(size, 2) || len(got) != min(accepted, len(got)) {
				t.Fatalf("%d samples, Len() = %d, size %d, %d accepted", len(got), h.Len(), size, accepted)
			}
			if len(got) > 0 && got[len(got)-1] != last {
				t.Fatalf("newest sample %+v, want %+v", got[len(got)-1], last)
			}
			for j := 1; j < len(got); j++ {
				gap := got[j].At.Sub(got[j-1].At)
				if gap <= 0 || (j < len(got)-1 && gap < spacing) {
					t.Fatalf("samples %d and %d are %v apart (spacing %v)", j-1, j, gap, spacing)
				}
			}
		}
	})
}
