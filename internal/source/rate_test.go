package source

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// samples builds samples (seconds after t0, arrived) pairs.
func samples(pairs ...[2]float64) []Sample {
	out := make([]Sample, 0, len(pairs))
	for _, p := range pairs {
		out = append(out, Sample{At: at(seconds(p[0])), Arrived: int64(p[1])})
	}
	return out
}

type s = [2]float64

func TestMeasuredRate(t *testing.T) {
	const window = 3 * time.Minute
	tests := []struct {
		name    string
		samples []Sample
		window  time.Duration
		now     float64
		want    float64
		ok      bool
	}{
		{
			name:    "samples at both ends of the window",
			samples: samples(s{0, 0}, s{180, 1800}),
			now:     180, want: 10, ok: true,
		},
		{
			name:    "only the window counts",
			samples: samples(s{0, 0}, s{100, 100000}, s{120, 100000}, s{300, 101800}),
			now:     300, want: 10, ok: true,
		},
		{
			// The count at now − window = 120 s is interpolated between
			// the samples at 100 s (1000) and 140 s (1400): 1200.
			name:    "interpolated at the window start",
			samples: samples(s{100, 1000}, s{140, 1400}, s{300, 3000}),
			now:     300, want: (3000.0 - 1200) / 180, ok: true,
		},
		{
			// The newest sample is 20 s old: the rate over [120, 280].
			name:    "newest sample before now",
			samples: samples(s{120, 0}, s{280, 3200}),
			now:     300, want: 20, ok: true,
		},
		{
			name:    "rate changing inside the window",
			samples: samples(s{0, 0}, s{60, 600}, s{120, 1200}, s{180, 4800}),
			now:     180, want: 4800.0 / 180, ok: true,
		},
		{
			name:    "history covering exactly half the window",
			samples: samples(s{90, 0}, s{180, 900}),
			now:     180, want: 10, ok: true,
		},
		{
			name:    "history covering less than half the window",
			samples: samples(s{91, 0}, s{180, 890}),
			now:     180,
		},
		{
			name:    "stale history",
			samples: samples(s{0, 0}, s{60, 600}, s{89, 890}),
			now:     180,
		},
		{
			name:    "every sample older than the window",
			samples: samples(s{0, 0}, s{10, 100}),
			now:     1000,
		},
		{
			name:    "samples after now are ignored",
			samples: samples(s{0, 0}, s{180, 1800}, s{200, 1000000}),
			now:     180, want: 10, ok: true,
		},
		{
			name:    "unsorted samples",
			samples: samples(s{180, 1800}, s{60, 600}, s{0, 0}),
			now:     180, want: 10, ok: true,
		},
		{
			name:    "no tuples",
			samples: samples(s{0, 500}, s{180, 500}),
			now:     180, want: 0, ok: true,
		},
		{
			name:    "one sample",
			samples: samples(s{180, 1800}),
			now:     180,
		},
		{
			name: "no samples", now: 180,
		},
		{
			name:    "arrivals decreasing inside the window",
			samples: samples(s{0, 0}, s{90, 900}, s{100, 10}, s{180, 800}),
			now:     180,
		},
		{
			name:    "a decrease before the window is harmless",
			samples: samples(s{0, 5000}, s{10, 0}, s{200, 0}, s{380, 1800}),
			now:     380, want: 10, ok: true,
		},
		{
			name:    "zero window",
			samples: samples(s{0, 0}, s{180, 1800}),
			window:  -1, now: 180,
		},
		{
			// Two samples at one instant: the later in the slice counts.
			name:    "samples at one instant",
			samples: samples(s{0, 0}, s{180, 10}, s{180, 1800}),
			now:     180, want: 10, ok: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := window
			if tc.window != 0 {
				w = tc.window
			}
			got, ok := MeasuredRate(tc.samples, w, at(seconds(tc.now)))
			if ok != tc.ok || math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("MeasuredRate() = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestHistory(t *testing.T) {
	t.Run("keeps the newest samples up to its size", func(t *testing.T) {
		h := NewHistory(3, 0)
		for i := range 5 {
			if !h.Record(Sample{At: at(time.Duration(i) * time.Second), Arrived: int64(10 * i)}) {
				t.Fatalf("Record #%d ignored", i)
			}
		}
		want := samples(s{2, 20}, s{3, 30}, s{4, 40})
		if diff := cmp.Diff(want, h.Samples()); diff != "" {
			t.Errorf("Samples() (-want +got):\n%s", diff)
		}
		if h.Len() != 3 {
			t.Errorf("Len() = %d, want 3", h.Len())
		}
	})
	t.Run("thins samples to the spacing, keeping the latest", func(t *testing.T) {
		h := NewHistory(10, 10*time.Second)
		for i := 0; i <= 25; i++ {
			h.Record(Sample{At: at(time.Duration(i) * time.Second), Arrived: int64(i)})
		}
		want := samples(s{0, 0}, s{10, 10}, s{20, 20}, s{25, 25})
		if diff := cmp.Diff(want, h.Samples()); diff != "" {
			t.Errorf("Samples() (-want +got):\n%s", diff)
		}
	})
	t.Run("ignores older samples and replaces one at the same instant", func(t *testing.T) {
		h := NewHistory(4, 0)
		h.Record(Sample{At: at(10 * time.Second), Arrived: 100})
		if h.Record(Sample{At: at(5 * time.Second), Arrived: 50}) {
			t.Error("Record of an older sample = true, want false")
		}
		if !h.Record(Sample{At: at(10 * time.Second), Arrived: 120}) {
			t.Error("Record at the same instant = false, want true")
		}
		if diff := cmp.Diff(samples(s{10, 120}), h.Samples()); diff != "" {
			t.Errorf("Samples() (-want +got):\n%s", diff)
		}
	})
	t.Run("size below two", func(t *testing.T) {
		h := NewHistory(0, -time.Second)
		for i := range 3 {
			h.Record(Sample{At: at(time.Duration(i) * time.Second), Arrived: int64(i)})
		}
		if diff := cmp.Diff(samples(s{1, 1}, s{2, 2}), h.Samples()); diff != "" {
			t.Errorf("Samples() (-want +got):\n%s", diff)
		}
	})
	t.Run("zero value", func(t *testing.T) {
		var h History
		if h.Len() != 0 || len(h.Samples()) != 0 {
			t.Fatalf("zero History has samples")
		}
		for i := range 40 {
			h.Record(Sample{At: at(time.Duration(i) * time.Second), Arrived: int64(i)})
		}
		if got := h.Samples(); len(got) != historyCapacity || got[0].Arrived != 40-historyCapacity {
			t.Errorf("zero History kept %d samples from %d, want %d from %d", len(got), got[0].Arrived, historyCapacity, 40-historyCapacity)
		}
	})
	t.Run("Samples is a copy", func(t *testing.T) {
		h := NewHistory(2, 0)
		h.Record(Sample{At: t0, Arrived: 1})
		h.Samples()[0].Arrived = 99
		if got := h.Samples()[0].Arrived; got != 1 {
			t.Errorf("Samples()[0].Arrived = %d after changing a copy, want 1", got)
		}
	})
	t.Run("measures over frequent samples", func(t *testing.T) {
		// A reconcile every second for 10 minutes at 10 tuples per second:
		// the default history keeps 34 samples and still covers 3 minutes.
		const window = 3 * time.Minute
		h := NewHistoryFor(window)
		for i := 0; i <= 600; i++ {
			h.Record(Sample{At: at(time.Duration(i) * time.Second), Arrived: int64(10 * i)})
		}
		if h.Len() != historyCapacity {
			t.Errorf("Len() = %d, want %d", h.Len(), historyCapacity)
		}
		got, ok := h.MeasuredRate(window, at(600*time.Second))
		if !ok || math.Abs(got-10) > 1e-9 {
			t.Errorf("MeasuredRate() = %v, %v; want 10, true", got, ok)
		}
		first := h.Samples()[0].At
		if span := at(600 * time.Second).Sub(first); span < 2*window {
			t.Errorf("history spans %v, want at least two windows", span)
		}
	})
	t.Run("concurrent use", func(t *testing.T) {
		h := NewHistoryFor(time.Minute)
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 200 {
					h.Record(Sample{At: at(time.Duration(i*4+g) * time.Second), Arrived: int64(i)})
					h.MeasuredRate(time.Minute, at(time.Duration(i*4)*time.Second))
					_ = h.Len()
				}
			})
		}
		wg.Wait()
		if h.Len() == 0 || h.Len() > historyCapacity {
			t.Errorf("Len() = %d", h.Len())
		}
	})
}

func TestExceedsSupported(t *testing.T) {
	tests := []struct {
		name                         string
		measured, planned, maxFactor float64
		tolerance                    int32
		want                         bool
	}{
		{"below the planned rate", 900, 1000, 1.31, 2, false},
		{"above planned, below supported", 1300, 1000, 1.31, 2, false},
		{"at the supported rate", 1310, 1000, 1.31, 2, false},
		{"within the tolerance", 1336, 1000, 1.31, 2, false},
		{"exactly at the tolerance", 1336.2, 1000, 1.31, 2, false},
		{"beyond the tolerance", 1336.3, 1000, 1.31, 2, true},
		// The variable-rate runs: re-plan when more than 2% above the estimate.
		{"seed: 2% above the estimate", 102, 100, 1, 2, false},
		{"seed: more than 2% above", 102.01, 100, 1, 2, true},
		{"zero tolerance", 100.0001, 100, 1, 0, true},
		{"negative tolerance counts as zero", 100.0001, 100, 1, -50, true},
		{"infeasible plan's factor 0 counts as 1", 101, 100, 0, 2, false},
		{"factor below 1 counts as 1", 103, 100, 0.5, 2, true},
		{"planned pause, tuples arriving", 1, 0, 1.31, 2, true},
		{"planned pause, nothing arriving", 0, 0, 1.31, 2, false},
		{"negative planned counts as 0", 1, -10, 1, 2, true},
		{"NaN measured", math.NaN(), 100, 1, 2, false},
		{"NaN planned", 1e9, math.NaN(), 1, 2, false},
		{"NaN factor", 1e9, 100, math.NaN(), 2, false},
		{"infinite measured", math.Inf(1), 100, 1, 2, true},
		{"largest tolerance", 1000, 100, 1, 1000, false},
		{"beyond the largest tolerance", 1101, 100, 1, 1000, true},
	}
	for _, tc := range tests {
		if got := ExceedsSupported(tc.measured, tc.planned, tc.maxFactor, tc.tolerance); got != tc.want {
			t.Errorf("%s: ExceedsSupported(%v, %v, %v, %d) = %v, want %v",
				tc.name, tc.measured, tc.planned, tc.maxFactor, tc.tolerance, got, tc.want)
		}
	}
}

func TestProjectedTotal(t *testing.T) {
	end := at(time.Hour)
	tests := []struct {
		name     string
		model    string
		arrived  int64
		measured float64
		now      time.Time
		planned  int64
		want     int64
	}{
		// Half the window gone, 1.8M arrived, 1000/s planned (3.6M).
		{"pessimistic, faster: the higher rate continues", Pessimistic, 1_800_000, 2000, at(30 * time.Minute), 3_600_000, 5_400_000},
		{"pessimistic, slower: the total stays", Pessimistic, 900_000, 500, at(30 * time.Minute), 3_600_000, 3_600_000},
		{"pessimistic, as planned", Pessimistic, 1_800_000, 1000, at(30 * time.Minute), 3_600_000, 3_600_000},
		{"optimistic, faster: tuples come early, the total stays", Optimistic, 2_400_000, 2000, at(30 * time.Minute), 3_600_000, 3_600_000},
		{"optimistic, slower: fewer tuples", Optimistic, 900_000, 500, at(30 * time.Minute), 3_600_000, 1_800_000},
		{"optimistic, never below arrived", Optimistic, 4_000_000, 2000, at(30 * time.Minute), 3_600_000, 4_000_000},
		{"pessimistic after the window end", Pessimistic, 3_000_000, 5000, at(2 * time.Hour), 3_600_000, 3_600_000},
		{"pessimistic after the window end, more arrived", Pessimistic, 4_000_000, 5000, at(2 * time.Hour), 3_600_000, 4_000_000},
		{"optimistic after the window end", Optimistic, 3_000_000, 5000, at(2 * time.Hour), 3_600_000, 3_000_000},
		{"before the window", Pessimistic, 0, 2000, at(-time.Hour), 3_600_000, 14_400_000},
		{"fractional tuples are dropped", Pessimistic, 0, 0.3, at(50 * time.Minute), 0, 180},
		{"empty model is pessimistic", "", 1_800_000, 2000, at(30 * time.Minute), 3_600_000, 5_400_000},
		{"unknown model is pessimistic", "Random", 1_800_000, 2000, at(30 * time.Minute), 3_600_000, 5_400_000},
		{"NaN rate counts as 0", Optimistic, 100, math.NaN(), at(30 * time.Minute), 3_600_000, 100},
		{"negative rate counts as 0", Pessimistic, 100, -5, at(30 * time.Minute), 50, 100},
		{"negative arrived counts as 0", Optimistic, -100, 0, at(30 * time.Minute), 3_600_000, 0},
		{"saturates", Pessimistic, math.MaxInt64 - 10, 1e6, at(30 * time.Minute), 0, math.MaxInt64},
		{"infinite rate saturates", Pessimistic, 10, math.Inf(1), at(30 * time.Minute), 0, math.MaxInt64},
		{"saturates by a tuple", Pessimistic, math.MaxInt64 - 1, 2, at(time.Hour - time.Second), 0, math.MaxInt64},
	}
	for _, tc := range tests {
		if got := ProjectedTotal(tc.model, tc.arrived, tc.measured, tc.now, end, tc.planned); got != tc.want {
			t.Errorf("%s: ProjectedTotal() = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestVariableRateRuns replays the paper's variable-rate runs (its Table 8;
// see docs/experiments.md) against a plan made for the declared rate: the controller samples
// the actual source every 10 s, measures over 3 minutes and re-plans once the
// measured rate is more than 2% above the plan's maximum supported rate, the
// planned rate taken over the interval the measurement covers.
func TestVariableRateRuns(t *testing.T) {
	const (
		window    = 3 * time.Minute
		length    = 75 * time.Minute
		declared  = 1000.0 // the 2FR rate the plan was made for
		maxFactor = 1.31
		tolerance = 2
	)
	plan, err := NewSynthetic(t0, at(length), 100, []Segment{{PerSecond: declared}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		actual []Segment
		// replanAt is the first tick at which a re-plan is due, 0 for none.
		replanAt time.Duration
		// The totals the rate models project then, relative to the plan's.
		pessimistic, optimistic int
	}{
		// VR1: slower than planned, then 8 times the planned rate from 50m.
		// The measured rate passes 1336.2 once more than 20.07 s of the 3
		// minutes ran at the higher rate (500(180−x) + 8000x > 1336.2×180).
		// The slow start has not been made up yet, so the pessimistic total
		// stays the planned one and the optimistic one is below it.
		{"VR1", []Segment{{0, 500}, {50 * time.Minute, 8000}}, 50*time.Minute + 30*time.Second, 0, -1},
		// VR2: faster from 25m, beyond the supported rate; the measured
		// rate passes 1336.2 after 100.86 s of 1600/s. The pessimistic total
		// grows; the optimistic one is the planned one.
		{"VR2", []Segment{{0, 1000}, {25 * time.Minute, 1600}}, 25*time.Minute + 110*time.Second, 1, 0},
		// Faster, but within what the plan supports.
		{"within the supported rate", []Segment{{0, 1000}, {25 * time.Minute, 1300}}, 0, 0, 0},
		// Pauses never re-plan.
		{"bursty but slower", []Segment{{0, 2000}, {time.Minute, 0}, {3 * time.Minute, 1000}, {10 * time.Minute, 0}}, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			actual, err := NewSynthetic(t0, at(length), 100, tc.actual)
			if err != nil {
				t.Fatal(err)
			}
			h := NewHistoryFor(window)
			var replanAt time.Duration
			for tick := time.Duration(0); tick <= length; tick += 10 * time.Second {
				now := at(tick)
				arrived, err := actual.Arrived(context.Background(), now)
				if err != nil {
					t.Fatal(err)
				}
				h.Record(Sample{At: now, Arrived: arrived})
				m, ok := h.Measure(window, now)
				if !ok {
					if tick >= window/2 {
						t.Fatalf("no measured rate at %v", tick)
					}
					continue
				}
				if r, _ := h.MeasuredRate(window, now); r != m.PerSecond {
					t.Fatalf("MeasuredRate() = %v, Measure() = %v", r, m.PerSecond)
				}
				planned := plan.MeanRate(m.From, m.To)
				if !ExceedsSupported(m.PerSecond, planned, maxFactor, tolerance) {
					continue
				}
				replanAt = tick
				pessimistic := ProjectedTotal(Pessimistic, arrived, m.PerSecond, now, at(length), plan.Total())
				optimistic := ProjectedTotal(Optimistic, arrived, m.PerSecond, now, at(length), plan.Total())
				if got := cmpInt(pessimistic, plan.Total()); got != tc.pessimistic {
					t.Errorf("pessimistic total %d at %v, planned %d: compares as %d, want %d", pessimistic, tick, plan.Total(), got, tc.pessimistic)
				}
				if got := cmpInt(optimistic, plan.Total()); got != tc.optimistic {
					t.Errorf("optimistic total %d at %v, planned %d: compares as %d, want %d", optimistic, tick, plan.Total(), got, tc.optimistic)
				}
				break
			}
			if replanAt != tc.replanAt {
				t.Errorf("re-plan due at %v, want %v", replanAt, tc.replanAt)
			}
		})
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestMeasureInterval(t *testing.T) {
	const window = 3 * time.Minute
	tests := []struct {
		name     string
		samples  []Sample
		now      float64
		from, to float64
	}{
		{"interpolated start", samples(s{100, 1000}, s{140, 1400}, s{300, 3000}), 300, 120, 300},
		{"history shorter than the window", samples(s{60, 0}, s{150, 900}, s{170, 1100}), 180, 60, 170},
		{"stale newest sample", samples(s{0, 0}, s{160, 1600}), 180, 0, 160},
	}
	for _, tc := range tests {
		m, ok := Measure(tc.samples, window, at(seconds(tc.now)))
		if !ok || !m.From.Equal(at(seconds(tc.from))) || !m.To.Equal(at(seconds(tc.to))) {
			t.Errorf("%s: Measure() = [%v, %v], %v; want [t0+%vs, t0+%vs], true",
				tc.name, m.From.Sub(t0), m.To.Sub(t0), ok, tc.from, tc.to)
		}
	}
	if m, ok := Measure(samples(s{0, 0}), window, at(time.Minute)); ok || m != (Measurement{}) {
		t.Errorf("Measure() of one sample = %+v, %v; want the zero Measurement, false", m, ok)
	}
}
