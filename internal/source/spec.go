package source

// This is the package's only file that imports the API, and through it
// Kubernetes packages; the rest stays pure.

import (
	"errors"
	"fmt"
	"time"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
)

// FromSpec returns the synthetic source of a query: tuples arrive over
// spec.window at the rate of spec.input, in units of spec.input.granularity
// (unset, 0, means 1, the API's default).
//
// Without an actual profile (actual empty) the rate is the declared one,
// what the planner assumes, read in the same order as the planner's input
// conversion: ratePerSecond, else totalTuples (exactly that many tuples by
// window.end, uniformly), else profile. With an actual profile the tuples
// arrive at that rate instead, to exercise the run-time handling of rate
// changes (re-planning on measured rates; the variable-rate experiments
// VR1 and VR2 of docs/experiments.md): the actual
// profile has the shape of spec.input.profile, with the difference that its
// rates may all be zero. The controllers pass spec.input.actualProfile.
//
// Errors name the spec field (spec.input.profile[1].ratePerSecond: …); the
// caller names the object, as spec.Workload does. Decimal strings are
// parsed like the planner's input (laxityv1alpha1.ParseDecimal), and a rate then
// stands for the shortest decimal that parses to it, as at NewSynthetic, so
// "0.3" is exactly 3/10.
func FromSpec(q *laxityv1alpha1.IntermittentQuery, actual []laxityv1alpha1.RateSegment) (*Synthetic, error) {
	if q == nil {
		return nil, errors.New("source: no IntermittentQuery")
	}
	return FromInput("spec.input", q.Spec.Window, q.Spec.Input, actual)
}

// FromInput is FromSpec for one input of a query, declared at field
// (spec.input, spec.inputs[1]) for a window.
func FromInput(field string, window laxityv1alpha1.Window, in laxityv1alpha1.Input, actual []laxityv1alpha1.RateSegment) (*Synthetic, error) {
	start, end := window.Start.Time, window.End.Time
	granularity := in.Granularity
	if granularity == 0 {
		granularity = 1
	}
	names := fieldNames{
		end: "spec.window.end", start: "spec.window.start", granularity: field + ".granularity",
		after: "after", rate: "ratePerSecond", total: field + ".totalTuples",
	}
	switch {
	case len(actual) > 0:
		names.segments = field + ".actualProfile"
		return profileSource(start, end, granularity, actual, names)
	case in.RatePerSecond != "":
		rateField := field + ".ratePerSecond"
		r, err := decimal(rateField, in.RatePerSecond)
		if err != nil {
			return nil, err
		}
		names.segments = rateField
		return newSynthetic(start, end, granularity, []Segment{{PerSecond: r}}, names)
	case in.TotalTuples != nil:
		names.segments = field + ".totalTuples"
		return newUniform(start, end, granularity, *in.TotalTuples, names)
	case len(in.Profile) > 0:
		names.segments = field + ".profile"
		return profileSource(start, end, granularity, in.Profile, names)
	}
	return nil, errors.New(field + ": one of ratePerSecond, totalTuples or profile is required")
}

func profileSource(start, end time.Time, granularity int64, profile []laxityv1alpha1.RateSegment, names fieldNames) (*Synthetic, error) {
	segments := make([]Segment, 0, len(profile))
	for i, seg := range profile {
		r, err := decimal(fmt.Sprintf("%s[%d].%s", names.segments, i, names.rate), seg.RatePerSecond)
		if err != nil {
			return nil, err
		}
		segments = append(segments, Segment{After: seg.After.Duration, PerSecond: r})
	}
	return newSynthetic(start, end, granularity, segments, names)
}

// decimal parses one of the API's rate strings with the CRDs' checks
// (laxityv1alpha1.ParseDecimal, the one parser of the API's decimals).
func decimal(field, s string) (float64, error) {
	return laxityv1alpha1.ParseDecimal(field, s, laxityv1alpha1.MaxRatePerSecond)
}
