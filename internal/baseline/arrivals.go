package baseline

import (
	"math"
	"sort"

	"github.com/laxity-dev/laxity/internal/planner"
)

// arrivalCurve is a query's cumulative arrivals A(t) of DESIGN.md, cut into
// arrival units (Query.Granularity), with the planner's readiness rule: a
// unit is ready when its last tuple has arrived, and the last unit no
// earlier than the window end plus the allowed lateness. The planner keeps
// its curve unexported, so this is the same construction; a test holds
// the two to the same batch readiness.
type arrivalCurve struct {
	// at[i] is when rate segment i starts, at[len(rate)] the window end;
	// cum[i] is A(at[i]).
	at, cum, rate []float64
	total, unit   int64
	// closed is the window end plus the allowed lateness.
	closed float64
}

func newArrivalCurve(q planner.Query) arrivalCurve {
	c := arrivalCurve{unit: q.Granularity, closed: q.WindowEnd + q.AllowedLateness}
	for i, seg := range q.Rates {
		c.at = append(c.at, q.WindowStart+seg.Offset)
		c.rate = append(c.rate, seg.TuplesPerSecond)
		if i == 0 {
			c.cum = append(c.cum, 0)
			continue
		}
		c.cum = append(c.cum, c.cum[i-1]+c.rate[i-1]*(c.at[i]-c.at[i-1]))
	}
	last := len(c.rate) - 1
	c.at = append(c.at, q.WindowEnd)
	c.cum = append(c.cum, c.cum[last]+c.rate[last]*(q.WindowEnd-c.at[last]))
	// The epsilon keeps a rate that should give an integer total from
	// losing a tuple to rounding, as the planner's does.
	c.total = int64(math.Floor(c.cum[len(c.cum)-1] + 1e-6))
	return c
}

// timeOf is the earliest time by which k tuples have arrived: A⁻¹(k).
func (c *arrivalCurve) timeOf(k int64) float64 {
	target := float64(k)
	if target <= 0 {
		return c.at[0]
	}
	i := sort.Search(len(c.cum), func(i int) bool { return c.cum[i] >= target-1e-9 })
	if i == 0 {
		return c.at[0]
	}
	if i == len(c.cum) {
		return c.at[len(c.at)-1]
	}
	seg := i - 1
	return math.Min(c.at[seg]+(target-c.cum[seg])/c.rate[seg], c.at[i])
}

// units is the number of arrival units of the window; the last may be
// short.
func (c *arrivalCurve) units() int64 { return (c.total + c.unit - 1) / c.unit }

// unitEnd is the exclusive end tuple of unit j.
func (c *arrivalCurve) unitEnd(j int64) int64 { return min((j+1)*c.unit, c.total) }

// unitReady is when unit j is ready.
func (c *arrivalCurve) unitReady(j int64) float64 {
	end := c.unitEnd(j)
	t := c.timeOf(end)
	if end == c.total {
		t = math.Max(t, c.closed)
	}
	return t
}

// readyTo is the end tuple of the units ready by t.
func (c *arrivalCurve) readyTo(t float64) int64 {
	n := int64(sort.Search(int(c.units()), func(j int) bool { return c.unitReady(int64(j)) > t+eps }))
	if n == 0 {
		return 0
	}
	return c.unitEnd(n - 1)
}

// readyAt is when the tuples before to, a unit boundary, are all ready:
// when the unit holding tuple to-1 is.
func (c *arrivalCurve) readyAt(to int64) float64 { return c.unitReady((to - 1) / c.unit) }

// peakRate is the highest arrival rate of the window, tuples per second.
func (c *arrivalCurve) peakRate() float64 {
	peak := 0.0
	for _, r := range c.rate {
		peak = math.Max(peak, r)
	}
	return peak
}
