package demo

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestScaledClock(t *testing.T) {
	realStart := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	simStart := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	wall := clocktesting.NewFakePassiveClock(realStart)
	c := newScaledClock(wall, simStart, 75)
	at := func(d time.Duration) { wall.SetTime(realStart.Add(d)) }
	expect := func(what string, want time.Duration) {
		t.Helper()
		if got := c.Now(); !got.Equal(simStart.Add(want)) {
			t.Errorf("%s: %v, want start + %v", what, got.Sub(simStart), want)
		}
	}
	at(time.Minute)
	expect("before it runs", 0)
	c.run()
	at(time.Minute + 2*time.Second)
	expect("2 real seconds after it started", 150*time.Second)
	c.hold()
	at(time.Minute + 5*time.Second)
	expect("held for 3 real seconds", 150*time.Second)
	c.run()
	c.run() // running already: no effect
	at(time.Minute + 6*time.Second)
	expect("1 real second after it went on", 225*time.Second)
	if got := c.Since(simStart); got != 225*time.Second {
		t.Errorf("Since(start) = %v, want 225s", got)
	}
}
