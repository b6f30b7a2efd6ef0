package source

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

// t0 is the window start of the tests.
var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// at is the instant d after t0.
func at(d time.Duration) time.Time { return t0.Add(d) }

// seconds is a Duration of s seconds, exact for s with at most 9 decimals.
func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }

type probe struct {
	at   time.Duration
	want int64
}

func TestSyntheticArrived(t *testing.T) {
	const ns = time.Nanosecond
	tests := []struct {
		name        string
		length      time.Duration
		granularity int64
		segments    []Segment
		total       int64
		probes      []probe
	}{
		{
			name: "constant rate", length: 100 * time.Second, granularity: 1,
			segments: []Segment{{PerSecond: 10}}, total: 1000,
			probes: []probe{
				{-100 * 365 * 24 * time.Hour, 0}, {-ns, 0}, {0, 0}, {99 * time.Millisecond, 0},
				{100 * time.Millisecond, 1}, {time.Second, 10}, {seconds(99.95), 999},
				{100*time.Second - ns, 999}, {100 * time.Second, 1000}, {time.Hour, 1000},
				{100 * 365 * 24 * time.Hour, 1000},
			},
		},
		{
			// N = 1000 = 142 units of 7 + 6: the partial unit counts at
			// the window end and not a nanosecond before.
			name: "granularity and the last partial unit", length: 100 * time.Second, granularity: 7,
			segments: []Segment{{PerSecond: 10}}, total: 1000,
			probes: []probe{
				{0, 0}, {700*time.Millisecond - ns, 0}, {700 * time.Millisecond, 7},
				{1400 * time.Millisecond, 14}, {99900 * time.Millisecond, 994},
				{100*time.Second - ns, 994}, {100 * time.Second, 1000}, {101 * time.Second, 1000},
			},
		},
		{
			name: "granularity dividing the total", length: 100 * time.Second, granularity: 250,
			segments: []Segment{{PerSecond: 10}}, total: 1000,
			probes: []probe{{25*time.Second - ns, 0}, {25 * time.Second, 250}, {99 * time.Second, 750}, {100 * time.Second, 1000}},
		},
		{
			name: "pause in the middle", length: 100 * time.Second, granularity: 1,
			segments: []Segment{{0, 10}, {50 * time.Second, 0}, {70 * time.Second, 30}}, total: 1400,
			probes: []probe{
				{50 * time.Second, 500}, {60 * time.Second, 500}, {70 * time.Second, 500},
				{71 * time.Second, 530}, {100*time.Second - ns, 1399}, {100 * time.Second, 1400},
			},
		},
		{
			name: "pause at the start", length: 20 * time.Second, granularity: 1,
			segments: []Segment{{0, 0}, {10 * time.Second, 5}}, total: 50,
			probes: []probe{{5 * time.Second, 0}, {10 * time.Second, 0}, {12 * time.Second, 10}, {20 * time.Second, 50}},
		},
		{
			name: "pause at the end", length: 20 * time.Second, granularity: 4,
			segments: []Segment{{0, 1}, {10 * time.Second, 0}}, total: 10,
			probes: []probe{{8 * time.Second, 8}, {10 * time.Second, 8}, {20*time.Second - ns, 8}, {20 * time.Second, 10}},
		},
		{
			name: "nothing arrives", length: time.Minute, granularity: 3,
			segments: []Segment{{0, 0}, {time.Second, 0}}, total: 0,
			probes: []probe{{-time.Second, 0}, {30 * time.Second, 0}, {time.Minute, 0}, {time.Hour, 0}},
		},
		{
			// In float64 0.7*10 + 0.3*10 is 9.99999999999999944…, whose
			// floor loses a tuple; the rates are the decimals 7/10 and 3/10.
			name: "decimal rates at a segment boundary", length: 20 * time.Second, granularity: 1,
			segments: []Segment{{0, 0.7}, {10 * time.Second, 0.3}}, total: 10,
			probes: []probe{{10*time.Second - ns, 6}, {10 * time.Second, 7}, {20*time.Second - ns, 9}, {20 * time.Second, 10}},
		},
		{
			name: "a unit completes exactly on the nanosecond", length: 10 * time.Second, granularity: 1,
			segments: []Segment{{0, 0.25}}, total: 2,
			probes: []probe{{4*time.Second - ns, 0}, {4 * time.Second, 1}, {8*time.Second - ns, 1}, {8 * time.Second, 2}},
		},
		{
			name: "one tuple per hour over a nanosecond window", length: ns, granularity: 1,
			segments: []Segment{{0, 1.0 / 3600}}, total: 0,
			probes: []probe{{0, 0}, {ns, 0}},
		},
		{
			// The README's example profile: 9,500 tuples per file, twice the rate
			// after 50 minutes.
			name: "design profile", length: 75 * time.Minute, granularity: 9500,
			segments: []Segment{{0, 9500}, {50 * time.Minute, 19000}}, total: 57_000_000,
			probes: []probe{
				{500 * time.Millisecond, 0}, {time.Second, 9500}, {50 * time.Minute, 28_500_000},
				{50*time.Minute + 500*time.Millisecond, 28_509_500}, {75 * time.Minute, 57_000_000},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSynthetic(t0, at(tc.length), tc.granularity, tc.segments)
			if err != nil {
				t.Fatalf("NewSynthetic: %v", err)
			}
			if got := s.Total(); got != tc.total {
				t.Errorf("Total() = %d, want %d", got, tc.total)
			}
			for _, p := range tc.probes {
				got, err := s.Arrived(context.Background(), at(p.at))
				if err != nil || got != p.want {
					t.Errorf("Arrived(t0%+v) = %d, %v, want %d, nil", p.at, got, err, p.want)
				}
			}
		})
	}
}

func TestNewSyntheticErrors(t *testing.T) {
	end := at(time.Minute)
	ok := []Segment{{PerSecond: 1}}
	tests := []struct {
		name        string
		start, end  time.Time
		granularity int64
		segments    []Segment
		want        string
	}{
		{"end equals start", t0, t0, 1, ok, "end: must be after start"},
		{"end before start", t0, at(-time.Second), 1, ok, "end: must be after start"},
		{"window too long", time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), 1, ok, "end: the window must be shorter than"},
		{"zero granularity", t0, end, 0, ok, "granularity: must be at least 1, got 0"},
		{"negative granularity", t0, end, -9500, ok, "granularity: must be at least 1, got -9500"},
		{"no segments", t0, end, 1, nil, "segments: at least one segment is required"},
		{"first offset not zero", t0, end, 1, []Segment{{time.Second, 1}}, "segments[0].After: the first segment must start at 0s"},
		{"negative first offset", t0, end, 1, []Segment{{-time.Second, 1}}, "segments[0].After"},
		{"unsorted", t0, end, 1, []Segment{{0, 1}, {20 * time.Second, 1}, {10 * time.Second, 1}}, "segments[2].After: offsets must strictly increase"},
		{"duplicate offset", t0, end, 1, []Segment{{0, 1}, {5 * time.Second, 1}, {5 * time.Second, 2}}, "segments[2].After: offsets must strictly increase"},
		{"offset at the window end", t0, end, 1, []Segment{{0, 1}, {time.Minute, 1}}, "segments[1].After: must be inside the window"},
		{"negative rate", t0, end, 1, []Segment{{0, 1}, {time.Second, -1}}, "segments[1].PerSecond: must be a finite non-negative number"},
		{"NaN rate", t0, end, 1, []Segment{{0, math.NaN()}}, "segments[0].PerSecond"},
		{"infinite rate", t0, end, 1, []Segment{{0, math.Inf(1)}}, "segments[0].PerSecond"},
		{"total beyond int64", t0, end, 1, []Segment{{0, 1e300}}, "does not fit in an int64"},
		{"total just beyond int64", t0, at(time.Second), 1, []Segment{{0, 9223372036854775808}}, "does not fit in an int64"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSynthetic(tc.start, tc.end, tc.granularity, tc.segments)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewSynthetic() = %v, %v; want an error containing %q", s, err, tc.want)
			}
			if s != nil {
				t.Errorf("NewSynthetic() returned a source with its error")
			}
		})
	}
}

func TestNewUniform(t *testing.T) {
	tests := []struct {
		name        string
		length      time.Duration
		granularity int64
		total       int64
		probes      []probe
	}{
		{
			// 1000/3 tuples per second is no float64; the total is exact.
			name: "total not divisible by the window", length: 3 * time.Second, granularity: 1, total: 1000,
			probes: []probe{{-time.Second, 0}, {time.Second, 333}, {1500 * time.Millisecond, 500}, {2 * time.Second, 666}, {3*time.Second - time.Nanosecond, 999}, {3 * time.Second, 1000}},
		},
		{
			name: "granularity", length: 3 * time.Second, granularity: 300, total: 1000,
			probes: []probe{{time.Second, 300}, {2 * time.Second, 600}, {2700*time.Millisecond - time.Nanosecond, 600}, {2700 * time.Millisecond, 900}, {3 * time.Second, 1000}},
		},
		{
			name: "largest total", length: 4500 * time.Second, granularity: 1, total: math.MaxInt64,
			probes: []probe{{2250 * time.Second, math.MaxInt64 / 2}, {4500 * time.Second, math.MaxInt64}},
		},
		{
			name: "zero total", length: time.Hour, granularity: 1, total: 0,
			probes: []probe{{time.Minute, 0}, {time.Hour, 0}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewUniform(t0, at(tc.length), tc.granularity, tc.total)
			if err != nil {
				t.Fatalf("NewUniform: %v", err)
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

	for _, tc := range []struct {
		name        string
		end         time.Time
		granularity int64
		total       int64
		want        string
	}{
		{"negative total", at(time.Hour), 1, -1, "total: must not be negative, got -1"},
		{"empty window", t0, 1, 10, "end: must be after start"},
		{"zero granularity", at(time.Hour), 0, 10, "granularity: must be at least 1"},
	} {
		if s, err := NewUniform(t0, tc.end, tc.granularity, tc.total); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: NewUniform() = %v, %v; want an error containing %q", tc.name, s, err, tc.want)
		}
	}
}

func TestSyntheticMeanRate(t *testing.T) {
	s, err := NewSynthetic(t0, at(100*time.Second), 1000, []Segment{{0, 10}, {50 * time.Second, 0}, {70 * time.Second, 30}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		from, to time.Duration
		want     float64
	}{
		{"first segment", 0, 50 * time.Second, 10},
		{"inside one segment", 10 * time.Second, 11 * time.Second, 10},
		{"across a pause", 40 * time.Second, 60 * time.Second, 5},
		{"inside the pause", 55 * time.Second, 65 * time.Second, 0},
		{"across the window start", -10 * time.Second, 10 * time.Second, 5},
		{"across the window end", 90 * time.Second, 110 * time.Second, 15},
		{"after the window", 200 * time.Second, 300 * time.Second, 0},
		{"whole window", 0, 100 * time.Second, 14},
		{"empty interval", 10 * time.Second, 10 * time.Second, 0},
		{"reversed interval", 20 * time.Second, 10 * time.Second, 0},
	}
	for _, tc := range tests {
		if got := s.MeanRate(at(tc.from), at(tc.to)); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: MeanRate(t0%+v, t0%+v) = %v, want %v", tc.name, tc.from, tc.to, got, tc.want)
		}
	}
}

func TestSyntheticAccessors(t *testing.T) {
	s, err := NewSynthetic(t0, at(time.Hour), 9500, []Segment{{PerSecond: 9500}})
	if err != nil {
		t.Fatal(err)
	}
	start, end := s.Window()
	if !start.Equal(t0) || !end.Equal(at(time.Hour)) || s.Granularity() != 9500 || s.Total() != 9500*3600 {
		t.Errorf("Window() = %v, %v; Granularity() = %d; Total() = %d", start, end, s.Granularity(), s.Total())
	}

	var none *Synthetic
	if n, err := none.Arrived(context.Background(), t0); err == nil || n != 0 {
		t.Errorf("nil Synthetic: Arrived() = %d, %v; want 0 and an error", n, err)
	}
	start, end = none.Window()
	if none.Total() != 0 || none.Granularity() != 0 || none.MeanRate(t0, at(time.Second)) != 0 || !start.IsZero() || !end.IsZero() {
		t.Errorf("nil Synthetic: accessors are not zero")
	}
	// The zero value has an empty window and reports nothing.
	var zero Synthetic
	for _, now := range []time.Time{{}, t0} {
		if n, err := zero.Arrived(context.Background(), now); n != 0 || err != nil {
			t.Errorf("zero Synthetic: Arrived(%v) = %d, %v; want 0, nil", now, n, err)
		}
	}
}

// TestSyntheticConcurrent reads one source from many goroutines; -race checks
// that Arrived and MeanRate do not write shared state.
func TestSyntheticConcurrent(t *testing.T) {
	s, err := NewSynthetic(t0, at(time.Hour), 7, []Segment{{0, 0.3}, {time.Minute, 1234.5}, {30 * time.Minute, 0}})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]int64, 100)
	for i := range want {
		want[i], _ = s.Arrived(context.Background(), at(time.Duration(i)*37*time.Second))
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range want {
				got, _ := s.Arrived(context.Background(), at(time.Duration(i)*37*time.Second))
				_ = s.MeanRate(at(time.Duration(i)*time.Second), at(time.Duration(i)*time.Minute))
				if got != want[i] {
					t.Errorf("concurrent Arrived #%d = %d, want %d", i, got, want[i])
				}
			}
		})
	}
	wg.Wait()
}

// ArrivalOf is the exact inverse of Arrived: Arrived reaches the count at
// the instant it gives and not a nanosecond before, for every unit of
// windows with uniform rates, profiles, zero-rate segments and a partial
// last unit.
func TestArrivalOfInvertsArrived(t *testing.T) {
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	sources := map[string]*Synthetic{}
	var err error
	if sources["uniform"], err = NewUniform(start, start.Add(time.Hour), 1000, 9_500_000); err != nil {
		t.Fatal(err)
	}
	if sources["profile with a pause"], err = NewSynthetic(start, start.Add(90*time.Minute), 250, []Segment{
		{After: 0, PerSecond: 333.3},
		{After: 20 * time.Minute, PerSecond: 0},
		{After: 40 * time.Minute, PerSecond: 7000},
	}); err != nil {
		t.Fatal(err)
	}
	if sources["partial last unit"], err = NewUniform(start, start.Add(time.Minute), 7, 1000); err != nil {
		t.Fatal(err)
	}
	for name, s := range sources {
		g := s.Granularity()
		for _, n := range []int64{0, 1, g - 1, g, g + 1, s.Total() / 3, s.Total()/2 + 1, s.Total() - 1, s.Total()} {
			at, ok := s.ArrivalOf(n)
			if !ok {
				t.Fatalf("%s: ArrivalOf(%d) = never, below the total %d", name, n, s.Total())
			}
			if got, _ := s.Arrived(context.Background(), at); got < n {
				t.Errorf("%s: ArrivalOf(%d) = %v, but Arrived there is %d", name, n, at.Sub(start), got)
			}
			if before, _ := s.Arrived(context.Background(), at.Add(-time.Nanosecond)); n > 0 && before >= n {
				t.Errorf("%s: ArrivalOf(%d) = %v, but Arrived a nanosecond earlier is already %d", name, n, at.Sub(start), before)
			}
		}
		if _, ok := s.ArrivalOf(s.Total() + 1); ok {
			t.Errorf("%s: ArrivalOf(total+1) should never come", name)
		}
	}
}
