package planner

import (
	"fmt"
	"math"
)

// The largest values the planner accepts, the same ones the API enforces on
// ElasticSchedule and IntermittentQuery. Inside them every plan holds only
// finite numbers; beyond them (or for a value that is not a number) the
// planner returns an *InvalidError naming the field.
const (
	// MaxRatePerSecond bounds every arrival rate, tuples per second.
	MaxRatePerSecond = 1e12
	// MaxTuples bounds a window's total tuples and the arrival unit
	// (granularity).
	MaxTuples = 1e15
	// MaxCoefficient bounds every cost-model coefficient (seconds, or
	// seconds per tuple or per merge input).
	MaxCoefficient = 1e6
	// MaxPricePerNodeHour bounds the node price.
	MaxPricePerNodeHour = 1e6
	// MaxNodes bounds every pool size and the idle node count.
	MaxNodes = 100000
	// MaxDuration bounds the pool's lead time, billing minimum and idle
	// release, a query's allowed lateness and maxBatchDuration: 30 days, in
	// seconds.
	MaxDuration = 720 * 3600.0
	// MaxWindow bounds a window's length, the time from a window's end to
	// its deadline and every rate profile offset: 366 days, in seconds.
	MaxWindow = 8784 * 3600.0
	// MaxCarried bounds the results of earlier slices one final merge
	// combines: a window a million times its period is not a sliding window
	// anyone runs.
	MaxCarried = 1000000
	// maxCoordinate bounds the absolute value of every window start, end and
	// deadline (seconds from the origin): far beyond any real plan, near
	// enough that sums of them and of the durations above stay exact to a
	// millisecond.
	maxCoordinate = 1e10
)

// DefaultMaxSteps is the work bound Planning.MaxSteps defaults to: the most
// batches and merges the smallest batch-size factor may cut a workload into.
// Measured on one core: 10,000 generated queries (111,000 steps) plan in
// under a second at 97 MB peak; 18,000 (200,000 steps) took 3.9 s and
// 153 MB. Long windows that make the search backtrack take longer at the
// same count; PlanContext bounds their time.
const DefaultMaxSteps = 150000

// maxSteps is the work bound in force for planning.
func (p Planning) maxSteps() int {
	if p.MaxSteps > 0 {
		return p.MaxSteps
	}
	return DefaultMaxSteps
}

// finiteIn reports whether v is a number in [lo, hi].
func finiteIn(v, lo, hi float64) bool { return v >= lo && v <= hi }

// checkDuration reports a duration field outside [0, limit].
func checkDuration(field string, v, limit float64) error {
	if !finiteIn(v, 0, limit) {
		return fmt.Errorf("%s: must be between 0s and %s, got %s", field, human(limit), human(v))
	}
	return nil
}

// human writes seconds as hours when they are many.
func human(seconds float64) string {
	if math.IsNaN(seconds) || math.IsInf(seconds, 0) {
		return fmt.Sprint(seconds)
	}
	if math.Abs(seconds) >= 3600 {
		return fmt.Sprintf("%gh", seconds/3600)
	}
	return fmt.Sprintf("%gs", seconds)
}

// countWords writes a count for a message: 200,000, 4.2 million, and
// 3.16e+19 past the billions.
func countWords(n float64) string {
	switch {
	case n >= 1e12:
		return fmt.Sprintf("%.3g", n)
	case n >= 1e9:
		return fmt.Sprintf("%.3g billion", n/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.3g million", n/1e6)
	}
	s := fmt.Sprintf("%d", int64(n))
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
