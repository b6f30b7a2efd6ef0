package planner

import (
	"math"
	"testing"
	"time"
)

// TestOptimumIsExhaustiveEnumeration checks the branch and bound of
// optimum against plain enumeration of every plan on workloads small
// enough to enumerate.
func TestOptimumIsExhaustiveEnumeration(t *testing.T) {
	feasible := 0
	for seed := range uint64(60) {
		w := oracleWorkload(seed, 2, 2, 5)
		wantI, wantE, wantOK := exhaustiveOptimum(w)
		gotI, gotE, gotOK := optimum(w)
		if gotOK != wantOK || gotOK && (math.Abs(gotI-wantI) > 1e-12 || math.Abs(gotE-wantE) > 1e-12) {
			t.Errorf("seed %d: optimum = (%g, %g, %v), enumeration = (%g, %g, %v)", seed, gotI, gotE, gotOK, wantI, wantE, wantOK)
		}
		if wantOK {
			feasible++
		}
	}
	if feasible < 20 || feasible == 60 {
		t.Errorf("%d of 60 workloads feasible: the check needs both kinds", feasible)
	}
}

func TestOracleSpeed(t *testing.T) {
	for seed := range uint64(20) {
		w := oracleWorkload(seed, 3, 4, 16)
		start := time.Now()
		i, e, ok := optimum(w)
		t.Logf("seed %d: %d queries, %v: %g %g %v in %v", seed, len(w.Queries), w.Pool.Sizes, i, e, ok, time.Since(start))
	}
}
