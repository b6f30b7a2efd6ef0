package offlinerun

import (
	"context"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/laxity-dev/laxity/internal/planner"
)

// stream is where a query's tuples come from in a run: how many have
// arrived by an instant, and, for a stream that can tell ahead, when a
// number of them will have (ArrivalOf).
type stream interface {
	Arrived(ctx context.Context, now time.Time) (int64, error)
	ArrivalOf(tuples int64) (time.Time, bool)
}

// poisson is a stream whose arrival units come as a Poisson process at
// the rates of its segments: the units counted over any span are a
// Poisson count, as from many independent producers, not the even flow of
// a synthetic source. Nothing tells ahead when a unit will come, so it is
// polled. Units arrive from the window's start until its end.
type poisson struct {
	start       time.Time
	granularity int64
	// arrivals are the units' arrival instants, in seconds from start,
	// ascending.
	arrivals []float64
}

// newPoisson draws the arrivals of one window: within each segment of
// rates (offsets from start, ascending) the gaps between units are
// exponential with mean granularity/rate seconds; the process is
// memoryless, so each segment starts afresh at its offset.
func newPoisson(start time.Time, window float64, granularity int64, rates []planner.RateSegment, rng *rand.Rand) *poisson {
	p := &poisson{start: start, granularity: granularity}
	for i, r := range rates {
		end := window
		if i+1 < len(rates) {
			end = min(rates[i+1].Offset, window)
		}
		perSecond := r.TuplesPerSecond / float64(granularity)
		if !(perSecond > 0) {
			continue
		}
		for t := r.Offset + rng.ExpFloat64()/perSecond; t < end; t += rng.ExpFloat64() / perSecond {
			p.arrivals = append(p.arrivals, t)
		}
	}
	return p
}

// Arrived is the tuples in the units that arrived by now.
func (p *poisson) Arrived(_ context.Context, now time.Time) (int64, error) {
	since := now.Sub(p.start).Seconds()
	units := sort.Search(len(p.arrivals), func(i int) bool { return p.arrivals[i] > since })
	return int64(units) * p.granularity, nil
}

// ArrivalOf is unknown ahead for a Poisson stream.
func (p *poisson) ArrivalOf(int64) (time.Time, bool) { return time.Time{}, false }
