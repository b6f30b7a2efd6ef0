package experiments

import (
	"testing"

	"github.com/laxity-dev/laxity/internal/learn"
	"github.com/laxity-dev/laxity/internal/planner"
)

// The concurrency study's goals and prose: side by side is never dearer,
// the same plan at 1x, at least 15% cheaper at 2x and 4x with a first
// window's margin and at 4x without, and little cheaper at 2x without.
func TestTheConcurrencyStudysClaimsHold(t *testing.T) {
	base, err := Sample()
	if err != nil {
		t.Fatal(err)
	}
	for _, margin := range []float64{learn.DefaultMargin, 0} {
		for _, rate := range concurrentRates {
			s, err := planSideBySide(base, rate, margin)
			if err != nil {
				t.Fatal(err)
			}
			r := s.ratio()
			switch {
			case !s.lane.Chosen.Feasible || r > 1+1e-9:
				t.Errorf("%gx, margin %g: side by side bills %.3f of one at a time, feasible %v", rate, margin, r, s.lane.Chosen.Feasible)
			case rate == 1 && (r < 1-1e-9 || s.lane.Chosen.Lanes > 1):
				t.Errorf("1x, margin %g: side by side is not the same plan (%.3f, %d lanes)", margin, r, s.lane.Chosen.Lanes)
			case (rate == 4 || rate == 2 && margin > 0) && r > 0.85:
				t.Errorf("%gx, margin %g: side by side bills %.3f, not 15%% less", rate, margin, r)
			case rate == 2 && margin == 0 && (r < 0.9 || s.sequential.Chosen.MaxNodes > 4):
				t.Errorf("2x, no margin: %.3f, at most %d nodes one at a time; the report says lanes save little, from 4 nodes", r, s.sequential.Chosen.MaxNodes)
			}
		}
	}
}

// The join study: every late share plans every deadline met, bills more
// than the sample with q3 over lineitem alone (the join reads a quarter
// more tuples), and more as the late share grows.
func TestTheJoinStudysClaimsHold(t *testing.T) {
	base, err := Sample()
	if err != nil {
		t.Fatal(err)
	}
	alone, err := planner.Plan(base)
	if err != nil {
		t.Fatal(err)
	}
	previous := alone.Chosen.ExecutableCost
	for _, late := range lateShares {
		doc, err := planner.Plan(joinSample(base, late))
		if err != nil {
			t.Fatal(err)
		}
		if !doc.Chosen.Feasible || doc.Chosen.ExecutableCost <= previous {
			t.Errorf("%.0f%% late: feasible %v, bill %.3f, not above %.3f (alone, or fewer late)", 100*late, doc.Chosen.Feasible, doc.Chosen.ExecutableCost, previous)
		}
		previous = doc.Chosen.ExecutableCost
	}
}
