package demo

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// scaledClock runs rate times faster than real time while it runs: the
// demo plays hours of a workload in minutes. It is what the reconcilers and
// the simulated cluster read. It stands still until it is started and
// whenever it is held: the demo holds it while laxity reacts to what the
// simulated cluster did, and while a reconcile that laxity's own timer
// started finishes, because a reconcile that takes 50 ms of real time
// would take seconds of simulated time at the demo's speed, where on a
// cluster it is nothing next to batches of minutes.
type scaledClock struct {
	real  clock.PassiveClock
	start time.Time // simulated time when first started
	rate  float64

	mu      sync.RWMutex
	ran     time.Duration // real time run before since
	running bool
	since   time.Time // real time of the last start
}

func newScaledClock(wall clock.PassiveClock, start time.Time, rate float64) *scaledClock {
	return &scaledClock{real: wall, start: start, rate: rate}
}

// run starts the clock, or lets it go on after hold.
func (c *scaledClock) run() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.running {
		c.running, c.since = true, c.real.Now()
	}
}

// hold stops the clock until run.
func (c *scaledClock) hold() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		c.ran += c.real.Since(c.since)
		c.running = false
	}
}

// Now is the simulated time.
func (c *scaledClock) Now() time.Time {
	c.mu.RLock()
	defer c.mu.RUnlock()
	ran := c.ran
	if c.running {
		ran += c.real.Since(c.since)
	}
	return c.start.Add(time.Duration(float64(ran) * c.rate))
}

// Since is the simulated time since t.
func (c *scaledClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
