package source

import (
	"context"
	"encoding/binary"
	"math"
	"slices"
	"testing"
	"time"
)

// FuzzSynthetic builds sources from arbitrary windows, granularities and
// segments (raw float64 bits for the rates, so NaN, infinities, negative
// zero and subnormals come up) and probes them at arbitrary instants:
// NewSynthetic never panics, and every source it accepts reports 0 before
// the window, its total from the window end on, whole units in between, and
// never decreases.
func FuzzSynthetic(f *testing.F) {
	seg := func(afterMillis int32, rate float64) []byte {
		b := binary.LittleEndian.AppendUint32(nil, uint32(afterMillis))
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(rate))
	}
	probes := func(offsets ...time.Duration) []byte {
		var b []byte
		for _, o := range offsets {
			b = binary.LittleEndian.AppendUint64(b, uint64(o))
		}
		return b
	}
	f.Add(int64(1796083200), int64(100*time.Second), int64(7), seg(0, 10), probes(-1, 0, 700*time.Millisecond, 100*time.Second))
	f.Add(int64(0), int64(20*time.Second), int64(1), slices.Concat(seg(0, 0.7), seg(10000, 0.3)), probes(10*time.Second, 20*time.Second-1))
	f.Add(int64(-62135596800), int64(time.Hour), int64(9500), slices.Concat(seg(0, 9500), seg(1800000, 0), seg(600000, 19000)), probes(time.Hour/2, time.Hour))
	f.Add(int64(1796083200), int64(1), int64(1), seg(0, 1e300), probes(0, 1))
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), seg(0, math.SmallestNonzeroFloat64), probes(math.MinInt64, math.MaxInt64))
	f.Add(int64(1796083200), int64(time.Minute), int64(-1), seg(0, math.NaN()), probes(0))
	f.Fuzz(func(t *testing.T, startUnix, lengthNanos, granularity int64, segData, probeData []byte) {
		start := time.Unix(startUnix, 0).UTC()
		end := start.Add(time.Duration(lengthNanos))
		// Offsets are cumulative milliseconds (negative steps make
		// unsorted profiles); at most 16 segments.
		var segments []Segment
		after := time.Duration(0)
		for i := 0; i+12 <= len(segData) && len(segments) < 16; i += 12 {
			step := time.Duration(int32(binary.LittleEndian.Uint32(segData[i:]))) * time.Millisecond
			if len(segments) > 0 {
				after += step
			} else {
				after = step
			}
			segments = append(segments, Segment{After: after, PerSecond: math.Float64frombits(binary.LittleEndian.Uint64(segData[i+4:]))})
		}
		s, err := NewSynthetic(start, end, granularity, segments)
		if err != nil {
			if s != nil {
				t.Fatalf("NewSynthetic returned a source with the error %v", err)
			}
			return
		}
		if s.Total() < 0 {
			t.Fatalf("Total() = %d", s.Total())
		}
		var times []time.Time
		for i := 0; i+8 <= len(probeData) && len(times) < 64; i += 8 {
			times = append(times, start.Add(time.Duration(binary.LittleEndian.Uint64(probeData[i:]))))
		}
		times = append(times, start, end, end.Add(-1), start.Add(-1), end.Add(time.Hour))
		slices.SortFunc(times, time.Time.Compare)
		prev := int64(0)
		for _, now := range times {
			got, err := s.Arrived(context.Background(), now)
			if err != nil {
				t.Fatalf("Arrived(%v): %v", now, err)
			}
			switch {
			case got < prev:
				t.Fatalf("Arrived(%v) = %d after %d: decreased", now, got, prev)
			case now.Before(start) && got != 0:
				t.Fatalf("Arrived(%v) = %d before the window", now, got)
			case !now.Before(end) && got != s.Total():
				t.Fatalf("Arrived(%v) = %d, want the total %d", now, got, s.Total())
			case now.Before(end) && (got%granularity != 0 || got > s.Total()):
				t.Fatalf("Arrived(%v) = %d: not whole units of %d up to %d", now, got, granularity, s.Total())
			}
			prev = got
		}
		_ = s.MeanRate(times[0], times[len(times)-1])
	})
}
