package planner

import (
	"math"
	"sort"
)

// arrivals is the cumulative arrival curve A(t) of one query: tuples arrived
// by time t, from a piecewise-constant rate over [start, end].
type arrivals struct {
	// at[i] is the time segment i starts; at[len] is the window end.
	at []float64
	// cum[i] is A(at[i]).
	cum  []float64
	rate []float64
	// closed is the window end plus the allowed lateness: the last batch
	// waits for it, since late tuples may still come until then.
	closed float64
}

func newArrivals(q Query, scale float64) arrivals {
	a := arrivals{closed: q.WindowEnd + q.AllowedLateness}
	for i, seg := range q.Rates {
		a.at = append(a.at, q.WindowStart+seg.Offset)
		a.rate = append(a.rate, seg.TuplesPerSecond*scale)
		if i == 0 {
			a.cum = append(a.cum, 0)
			continue
		}
		a.cum = append(a.cum, a.cum[i-1]+a.rate[i-1]*(a.at[i]-a.at[i-1]))
	}
	last := len(a.rate) - 1
	a.at = append(a.at, q.WindowEnd)
	a.cum = append(a.cum, a.cum[last]+a.rate[last]*(q.WindowEnd-a.at[last]))
	return a
}

// cumAt is A(t), fractional, for t inside the window.
func (a arrivals) cumAt(t float64) float64 {
	i := sort.SearchFloat64s(a.at, t)
	switch {
	case i == 0:
		return 0
	case i >= len(a.at):
		return a.cum[len(a.cum)-1]
	}
	seg := i - 1
	return a.cum[seg] + a.rate[seg]*(t-a.at[seg])
}

// total is N = A(windowEnd), whole tuples. The epsilon keeps a rate that
// should give an integer total from losing a tuple to rounding.
func (a arrivals) total() int64 {
	return int64(math.Floor(a.cum[len(a.cum)-1] + 1e-6))
}

// timeOf is the earliest time by which k tuples have arrived: A^-1(k).
func (a arrivals) timeOf(k int64) float64 {
	target := float64(k)
	if target <= 0 {
		return a.at[0]
	}
	// First boundary whose cumulative count reaches the target.
	i := sort.Search(len(a.cum), func(i int) bool { return a.cum[i] >= target-1e-9 })
	if i == 0 {
		return a.at[0]
	}
	if i == len(a.cum) {
		return a.at[len(a.at)-1]
	}
	// cum[seg] < target <= cum[i], so segment seg has a positive rate.
	seg := i - 1
	t := a.at[seg] + (target-a.cum[seg])/a.rate[seg]
	return math.Min(t, a.at[i])
}

// readyAt is when a batch ending at tuple to may start: when the tuples
// before to have all arrived, and for the last batch no earlier than the
// window and its allowed lateness close.
func (a arrivals) readyAt(to int64) float64 {
	ready := a.timeOf(to)
	if to == a.total() {
		ready = math.Max(ready, a.closed)
	}
	return ready
}

// ArrivalCurve is a query's cumulative arrivals A(t) as the planner models
// them, for the code that simulates other schedulers on the same
// arrivals (internal/baseline): one curve, so that every approach sees the
// same total and the same readiness.
type ArrivalCurve struct{ a arrivals }

// NewArrivalCurve is q's arrival curve at its configured rates.
func NewArrivalCurve(q Query) ArrivalCurve { return ArrivalCurve{newArrivals(q, 1)} }

// Total is N, the whole tuples that arrive in the window.
func (c ArrivalCurve) Total() int64 { return c.a.total() }

// TimeOf is the earliest time by which k tuples have arrived: A^-1(k).
func (c ArrivalCurve) TimeOf(k int64) float64 { return c.a.timeOf(k) }

// ReadyAt is when the tuples before to have all arrived, and, when to is
// Total, the window and its allowed lateness have closed: when a batch
// ending at to is ready, as the plan's batches are.
func (c ArrivalCurve) ReadyAt(to int64) float64 { return c.a.readyAt(to) }
