package offlinerun

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/laxity-dev/laxity/internal/planner"
)

// A Poisson stream's counts over disjoint minutes have the mean the rate
// gives and a variance equal to it (a dispersion index near 1, where an
// even stream's is 0), the rate changes where its segments say, and the
// same seed draws the same arrivals.
func TestPoissonStreamCountsArePoisson(t *testing.T) {
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	rates := []planner.RateSegment{{TuplesPerSecond: 500}, {Offset: 36000, TuplesPerSecond: 1500}}
	const granularity, window = 100, 72000 // 5 then 15 units a second, 10 hours each
	p := newPoisson(start, window, granularity, rates, rand.New(rand.NewPCG(7, 0)))
	arrived := func(s float64) int64 {
		n, err := p.Arrived(context.Background(), start.Add(time.Duration(s*float64(time.Second))))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, half := range []struct {
		from, perMinute float64
	}{{0, 300}, {36000, 900}} {
		var sum, squares float64
		const minutes = 600
		for m := range minutes {
			from := half.from + float64(m)*60
			units := float64(arrived(from+60)-arrived(from)) / granularity
			sum += units
			squares += units * units
		}
		mean := sum / minutes
		variance := squares/minutes - mean*mean
		if math.Abs(mean-half.perMinute) > 4*math.Sqrt(half.perMinute/minutes) {
			t.Errorf("from %g s: %.1f units a minute, want %g", half.from, mean, half.perMinute)
		}
		if d := variance / mean; d < 0.85 || d > 1.15 {
			t.Errorf("from %g s: dispersion index %.2f, want about 1", half.from, d)
		}
	}
	if n := arrived(window + 1000); n%granularity != 0 || n != arrived(window) {
		t.Errorf("%d tuples after the window, %d at its end: units arrive within it, whole", n, arrived(window))
	}
	again := newPoisson(start, window, granularity, rates, rand.New(rand.NewPCG(7, 0)))
	if len(again.arrivals) != len(p.arrivals) || again.arrivals[len(again.arrivals)-1] != p.arrivals[len(p.arrivals)-1] {
		t.Error("the same seed drew other arrivals")
	}
	if _, known := p.ArrivalOf(granularity); known {
		t.Error("a Poisson stream told ahead when its tuples arrive")
	}
}
