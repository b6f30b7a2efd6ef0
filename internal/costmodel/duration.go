package costmodel

import (
	"math"
	"time"
)

// Duration is s seconds as a time.Duration, saturating instead of
// overflowing: a conversion of a float64 beyond time.Duration's range
// (about ±292 years) is undefined in Go and in practice wraps to a
// negative or arbitrary value, and the seconds converted here come from
// measured steps, fitted models and the users' specs. Beyond the range
// it is the largest (or, below it, the smallest) Duration; NaN is 0.
// Every float64-seconds conversion of the planning and learning path goes
// through it.
func Duration(s float64) time.Duration {
	switch ns := s * float64(time.Second); {
	case math.IsNaN(ns):
		return 0
	// float64(math.MaxInt64) rounds up to 2⁶³, itself out of range.
	case ns >= float64(math.MaxInt64):
		return math.MaxInt64
	case ns <= float64(math.MinInt64):
		return math.MinInt64
	default:
		return time.Duration(ns)
	}
}
