/*
Copyright 2026 The laxity Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"time"
)

// The largest values the CRDs accept. The kubebuilder markers on the fields
// repeat these numbers (markers cannot refer to constants); the API tests
// check both agree. Every value inside the bounds plans with finite numbers.
const (
	// MaxRatePerSecond bounds every arrival rate (spec.input.ratePerSecond
	// and each profile segment's), in tuples per second.
	MaxRatePerSecond = 1e12
	// MaxTuples bounds tuple counts: spec.input.totalTuples, granularity,
	// objectStore tuplesPerObject and bytesPerTuple, and a batch sample's
	// tuples.
	MaxTuples int64 = 1_000_000_000_000_000
	// MaxCoefficientSeconds bounds every cost-model coefficient
	// (overheadSeconds and the per-tuple and per-input seconds).
	MaxCoefficientSeconds = 1e6
	// MaxSampleSeconds bounds a cost-model sample's seconds.
	MaxSampleSeconds = 1e7
	// MaxSampleInputs bounds a merge sample's inputs.
	MaxSampleInputs int64 = 1_000_000
	// MaxPricePerNodeHour bounds spec.nodePool.pricePerNodeHour.
	MaxPricePerNodeHour = 1e6
	// MaxNodes bounds node counts: pool sizes, idleNodes, the nodes of a
	// sample, and the other small counts of the planning parameters
	// (batchSizeFactors, backtrackStep).
	MaxNodes int32 = 100_000
	// MaxExecutorsPerNode bounds spec.nodePool.executorsPerNode.
	MaxExecutorsPerNode int32 = 1000
	// MaxDuration bounds the pool's and the planner's durations
	// (provisioningLeadTime, billingMinimum, releaseAfterIdle,
	// maxBatchDuration, rateWindow) and a query's allowedLateness and
	// objectStore settle: 30 days.
	MaxDuration = 720 * time.Hour
	// MaxWindowSpan bounds a query's window length (end - start), its
	// deadline after window.end, and a profile segment's after: 366 days.
	MaxWindowSpan = 8784 * time.Hour
)

// MaxNameLength is the longest name of an ElasticSchedule or an
// IntermittentQuery. Every step of a query runs as a SparkApplication (or
// an EMR on EKS job run) named after the query, and the longest such name is
// <query>-partial-<k>-r<attempt>: with at most 6 digits for a merge ordinal
// (the planner plans fewer than a million batches) and at most 6 for an
// attempt, that is 23 characters after the query's name. SparkApplication
// names must be DNS-1035 labels of at most 63 characters, so a query's name
// has at most 40. A schedule's name is bounded the same way: its plan
// ConfigMap is <schedule>-plan and its placeholder Deployment
// <schedule>-placeholder, and it is the value of the laxity.dev/schedule
// label (at most 63 characters) on every step.
const MaxNameLength = 40

// decimalPattern is the syntax of the API's decimal strings, as in the
// CRDs' rules.
var decimalPattern = regexp.MustCompile(`^[+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$`)

// hugeExponent matches a decimal string whose positive exponent has three or
// more digits: with at most 32 characters, such a number is either zero or
// far above every bound, and it may not even be a finite float64. The CRDs'
// rules reject it before converting the string, so that the conversion
// cannot fail.
var hugeExponent = regexp.MustCompile(`[eE][+]?[0-9]{3,}`)

// ParseDecimal parses one of the API's decimal strings, such as "9500" or
// "2e-8", for the named field, with the checks of the CRDs' rules: their
// syntax, a finite non-negative value, at most limit. Callers that need a
// positive value check for 0 themselves. The error names the field.
func ParseDecimal(field, s string, limit float64) (float64, error) {
	if s == "" {
		return 0, fmt.Errorf("%s: required", field)
	}
	if !decimalPattern.MatchString(s) {
		if v, err := strconv.ParseFloat(s, 64); err == nil && (math.IsNaN(v) || math.IsInf(v, 0) || v < 0) {
			return 0, fmt.Errorf("%s: must be a finite non-negative number, got %q", field, s)
		}
		return 0, fmt.Errorf("%s: %q is not a number: want a non-negative decimal such as 2.5 or 2e-8", field, s)
	}
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case errors.Is(err, strconv.ErrRange) || hugeExponent.MatchString(s):
		return 0, fmt.Errorf("%s: %q is out of range: at most %g", field, s, limit)
	case err != nil:
		return 0, fmt.Errorf("%s: %q is not a number", field, s)
	case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
		return 0, fmt.Errorf("%s: must be a finite non-negative number, got %q", field, s)
	case v > limit:
		return 0, fmt.Errorf("%s: %q is more than %g, the most the API accepts", field, s, limit)
	}
	return v, nil
}
