package controllers

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/laxity-dev/laxity/test/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A source that reports only what has arrived by now is measured from the
// counts it gave before: from the latest one at least a window old.
func TestRateOverCountsSeenBefore(t *testing.T) {
	q := builder.Query("ns", "q").Rate("10").Slack(time.Minute).Obj()
	s := &Sources{}
	src := &recordingSlicer{}
	const window = 180 * time.Second
	for _, tc := range []struct {
		at       float64
		arrived  int64
		want     float64
		measured bool
	}{
		{at: 0, arrived: 100},
		{at: 60, arrived: 160},
		{at: 180, arrived: 400, want: 300.0 / 180, measured: true},
		{at: 200, arrived: 450, want: 350.0 / 200, measured: true},
		{at: 250, arrived: 500, want: 340.0 / 190, measured: true}, // from the count at 60
	} {
		got, ok := s.RateOver(q, src, origin.Add(time.Duration(tc.at*float64(time.Second))), tc.arrived, window)
		if ok != tc.measured || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("at %gs: RateOver = %v, %v; want %v, %v", tc.at, got, ok, tc.want, tc.measured)
		}
	}
	// Forgetting the query forgets its counts: a new window must pass.
	s.Forget(client.ObjectKeyFromObject(q))
	if _, ok := s.RateOver(q, src, origin.Add(time.Hour), 900, window); ok {
		t.Error("a rate right after Forget")
	}
}

// A source that follows the clock says what had arrived a window ago.
func TestRateOverAsksAClockedSource(t *testing.T) {
	q := builder.Query("ns", "q").Rate("10").Slack(time.Minute).Obj() // 10 tuples/s in units of 500
	src, err := SyntheticSource(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	now := q.Spec.Window.Start.Add(5 * time.Minute)
	arrived, err := src.Arrived(now)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := (&Sources{}).RateOver(q, src, now, arrived, 3*time.Minute)
	if !ok || math.Abs(got-10) > 500.0/180 {
		t.Errorf("RateOver = %v, %v; want about 10 a second", got, ok)
	}
}
