package baseline

import (
	"math"
	"sort"

	"github.com/laxity-dev/laxity/internal/planner"
)

// arrivalCurve is the planner's arrival curve of a query cut into its
// arrival units (Query.Granularity): the approaches that do not batch as
// laxity does still process whole units only.
type arrivalCurve struct {
	planner.ArrivalCurve
	unit int64
	// peakRate is the highest arrival rate of the window, tuples per
	// second.
	peakRate float64
}

func newArrivalCurve(q planner.Query) arrivalCurve {
	c := arrivalCurve{ArrivalCurve: planner.NewArrivalCurve(q), unit: q.Granularity}
	for _, seg := range q.Rates {
		c.peakRate = math.Max(c.peakRate, seg.TuplesPerSecond)
	}
	return c
}

// units is the number of arrival units of the window; the last may be
// short.
func (c *arrivalCurve) units() int64 { return (c.Total() + c.unit - 1) / c.unit }

// unitEnd is the exclusive end tuple of unit j.
func (c *arrivalCurve) unitEnd(j int64) int64 { return min((j+1)*c.unit, c.Total()) }

// unitReady is when unit j is ready.
func (c *arrivalCurve) unitReady(j int64) float64 { return c.ReadyAt(c.unitEnd(j)) }

// readyTo is the end tuple of the units ready by t.
func (c *arrivalCurve) readyTo(t float64) int64 {
	n := int64(sort.Search(int(c.units()), func(j int) bool { return c.unitReady(int64(j)) > t+eps }))
	if n == 0 {
		return 0
	}
	return c.unitEnd(n - 1)
}
