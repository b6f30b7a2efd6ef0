// Package spec turns laxity's API objects into the inputs of its pure
// parts: the planner's workload, the dispatcher's settings and per-query
// view, the re-planner's rate rules and a query's synthetic source. The
// controllers and every offline tool (laxity plan, laxity experiments, the
// demo) translate through it, so that they plan alike. Errors name the
// object and the field. It reads no cluster and keeps no state.
package spec

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/planner"
)

// Defaults the API server applies through the CRD schema. They are repeated
// here only for objects that never went through an API server (built in Go),
// so that both paths plan alike, and for what rewrites objects before they
// reach one (the demo's time compression). defaults_test.go holds them to
// the CRDs.
const (
	DefaultBillingMinimum       = time.Minute
	DefaultProvisioningLeadTime = 6 * time.Minute
	DefaultMaxBatchDuration     = 10 * time.Minute
	DefaultRateWindow           = 3 * time.Minute
	DefaultObjectStoreSettle    = time.Minute
)

var defaultBatchSizeFactors = []int{1, 2, 4, 8, 16, 32}

// Workload turns an ElasticSchedule and the IntermittentQueries that
// reference it into the planner's input, with every time in seconds from
// origin. Queries are planned in name order, so the plan does not depend on
// the order the objects were listed in. Errors name the object and the field.
func Workload(schedule *laxityv1alpha1.ElasticSchedule, queries []laxityv1alpha1.IntermittentQuery, origin time.Time) (planner.Workload, error) {
	w, _, err := WorkloadNotes(schedule, queries, origin)
	return w, err
}

// WorkloadNotes is Workload, with what the schedule's streams leave
// unshared and why (a stream that declares no scan, queries of one stream
// kept apart by their templates or inputs), for the Planned condition and
// laxity plan: said from the same reading of the streams the workload
// takes, in query name order.
func WorkloadNotes(schedule *laxityv1alpha1.ElasticSchedule, queries []laxityv1alpha1.IntermittentQuery, origin time.Time) (planner.Workload, []string, error) {
	w := planner.Workload{Name: schedule.Name, Origin: origin}
	var errs []error
	pool, err := poolOf(schedule.Spec.NodePool)
	if err != nil {
		errs = append(errs, objectError("ElasticSchedule", &schedule.ObjectMeta, err))
	}
	w.Pool = pool
	w.Pool.ProvisioningLeadTime = LeadTime(schedule).Seconds()
	w.Planning = planningOf(schedule.Spec.Planning)

	sorted := slices.Clone(queries)
	slices.SortFunc(sorted, func(a, b laxityv1alpha1.IntermittentQuery) int { return strings.Compare(a.Name, b.Name) })
	for i := range sorted {
		q, err := Query(&sorted[i], origin)
		if err != nil {
			errs = append(errs, objectError("IntermittentQuery", &sorted[i].ObjectMeta, err))
			continue
		}
		WithLearned(schedule, &sorted[i], &q)
		w.Queries = append(w.Queries, q)
	}
	var notes []string
	if len(schedule.Spec.Streams) > 0 {
		var streamErrs []error
		notes, streamErrs = streams(schedule, sorted, &w)
		errs = append(errs, streamErrs...)
	}
	return w, notes, errors.Join(errs...)
}

// ObjectError is a problem with one object's spec, so callers can say where
// the object came from.
type ObjectError struct {
	Kind, Namespace, Name string
	Err                   error
}

func (e *ObjectError) Error() string {
	return fmt.Sprintf("%s %s/%s: %v", e.Kind, e.Namespace, e.Name, e.Err)
}

func (e *ObjectError) Unwrap() error { return e.Err }

func objectError(kind string, meta *metav1.ObjectMeta, err error) error {
	return &ObjectError{Kind: kind, Namespace: meta.Namespace, Name: meta.Name, Err: err}
}

func poolOf(spec laxityv1alpha1.NodePool) (planner.Pool, error) {
	pool := planner.Pool{
		BillingMinimum:       durationOr(spec.BillingMinimum, DefaultBillingMinimum),
		ProvisioningLeadTime: durationOr(spec.ProvisioningLeadTime, DefaultProvisioningLeadTime),
	}
	for _, s := range spec.Sizes {
		pool.Sizes = append(pool.Sizes, int(s))
	}
	if len(pool.Sizes) > 0 {
		pool.IdleNodes = pool.Sizes[0]
	}
	if spec.IdleNodes != nil {
		pool.IdleNodes = int(*spec.IdleNodes)
	}
	pool.ReleaseAfterIdle = 2 * pool.ProvisioningLeadTime
	if spec.ReleaseAfterIdle != nil {
		pool.ReleaseAfterIdle = spec.ReleaseAfterIdle.Seconds()
	}
	price, err := laxityv1alpha1.ParseDecimal("spec.nodePool.pricePerNodeHour", spec.PricePerNodeHour, laxityv1alpha1.MaxPricePerNodeHour)
	pool.PricePerNodeHour = price
	return pool, err
}

func planningOf(spec laxityv1alpha1.Planning) planner.Planning {
	p := planner.Planning{
		BatchSizeFactors: defaultBatchSizeFactors,
		BacktrackStep:    max(int(spec.BacktrackStep), 1),
		MaxBatchDuration: DefaultMaxBatchDuration.Seconds(),
		Policy:           planner.Policy(spec.Policy),
		Objective:        planner.Objective(spec.Objective),
		GridOnly:         spec.Search == laxityv1alpha1.SearchGrid,
		Concurrent:       spec.Concurrency == laxityv1alpha1.ConcurrencyConcurrent,
	}
	if len(spec.BatchSizeFactors) > 0 {
		p.BatchSizeFactors = nil
		for _, f := range spec.BatchSizeFactors {
			p.BatchSizeFactors = append(p.BatchSizeFactors, int(f))
		}
	}
	if spec.MaxBatchDuration.Duration > 0 {
		p.MaxBatchDuration = spec.MaxBatchDuration.Seconds()
	}
	if spec.RuntimeMarginPercent != nil {
		p.RuntimeMargin = float64(*spec.RuntimeMarginPercent) / 100
	}
	if p.Policy == "" {
		p.Policy = planner.LeastLaxity
	}
	if p.Objective == "" {
		p.Objective = planner.Executable
	}
	return p
}

// CostModel is a query's cost model as the planner uses it: the given
// coefficients, or the fit of its samples.
func CostModel(q *laxityv1alpha1.IntermittentQuery) (costmodel.Model, error) {
	pq, err := Query(q, q.Spec.Window.Start.Time)
	return pq.Cost, err
}

// DeclaredCostModel is a spec.costModel as the planner uses it: the given
// coefficients, or the fit of its samples.
func DeclaredCostModel(cm laxityv1alpha1.CostModel) (costmodel.Model, error) {
	var m costmodel.Model
	var err error
	if m.Batch, err = batchModel(cm.Batch); err != nil {
		return m, err
	}
	m.Merge, err = mergeModel(cm.Merge)
	return m, err
}

// Query is one IntermittentQuery as the planner sees it, with every time in
// seconds from origin. Errors name the field; the caller names the object.
func Query(q *laxityv1alpha1.IntermittentQuery, origin time.Time) (planner.Query, error) {
	spec := q.Spec
	out := planner.Query{
		Name:            q.Name,
		WindowStart:     spec.Window.Start.Sub(origin).Seconds(),
		WindowEnd:       spec.Window.End.Sub(origin).Seconds(),
		Deadline:        spec.Deadline.Sub(origin).Seconds(),
		Granularity:     max(spec.Input.Granularity, 1),
		AllowedLateness: AllowedLateness(q).Seconds(),
	}
	window := out.WindowEnd - out.WindowStart
	if len(spec.Inputs) > 0 && !reflect.ValueOf(spec.Input).IsZero() {
		return out, errors.New("spec.input and spec.inputs: set exactly one, input for a query over one stream, inputs for a query over several")
	}
	if len(spec.Inputs) == 0 {
		rates, err := ratesOf("spec.input", spec.Input, window)
		if err != nil {
			return out, err
		}
		out.Rates = rates
	}
	for i, in := range spec.Inputs {
		field := fmt.Sprintf("spec.inputs[%d]", i)
		rates, err := ratesOf(field, in.Input, window)
		if err != nil {
			return out, err
		}
		late := 0.0
		if in.LateFraction != "" {
			if late, err = laxityv1alpha1.ParseDecimal(field+".lateFraction", in.LateFraction, 1); err != nil {
				return out, err
			}
		}
		out.Inputs = append(out.Inputs, planner.Input{Name: in.Name, Rates: rates, LateFraction: late})
		out.Granularity = max(in.Granularity, 1)
	}
	var err error
	if out.Cost, err = DeclaredCostModel(spec.CostModel); err != nil {
		return out, err
	}
	if pa := spec.PartialAggregation; pa != nil {
		if out.PartialEvery, err = laxityv1alpha1.ParseDecimal("spec.partialAggregation.every", pa.Every, 1); err != nil {
			return out, err
		}
	}
	return out, nil
}

// ratesOf is the arrival rate input in declares; field names it
// (spec.input, spec.inputs[1]).
func ratesOf(field string, in laxityv1alpha1.Input, window float64) ([]planner.RateSegment, error) {
	switch {
	case in.RatePerSecond != "":
		r, err := laxityv1alpha1.ParseDecimal(field+".ratePerSecond", in.RatePerSecond, laxityv1alpha1.MaxRatePerSecond)
		return []planner.RateSegment{{TuplesPerSecond: r}}, err
	case in.TotalTuples != nil:
		return []planner.RateSegment{{TuplesPerSecond: float64(*in.TotalTuples) / window}}, nil
	case len(in.Profile) > 0:
		segments := make([]planner.RateSegment, 0, len(in.Profile))
		for i, seg := range in.Profile {
			r, err := laxityv1alpha1.ParseDecimal(fmt.Sprintf("%s.profile[%d].ratePerSecond", field, i), seg.RatePerSecond, laxityv1alpha1.MaxRatePerSecond)
			if err != nil {
				return nil, err
			}
			segments = append(segments, planner.RateSegment{Offset: seg.After.Seconds(), TuplesPerSecond: r})
		}
		return segments, nil
	}
	return nil, errors.New(field + ": one of ratePerSecond, totalTuples or profile is required")
}

func batchModel(m laxityv1alpha1.BatchCostModel) (costmodel.Linear, error) {
	const field = "spec.costModel.batch"
	if len(m.Samples) > 0 {
		return fit(field, len(m.Samples), func(i int) (int32, int64, string) {
			return m.Samples[i].Nodes, m.Samples[i].Tuples, m.Samples[i].Seconds
		})
	}
	return coefficients(field, m.OverheadSeconds, m.SerialSecondsPerTuple, m.ParallelSecondsPerTuple,
		"serialSecondsPerTuple", "parallelSecondsPerTuple")
}

func mergeModel(m laxityv1alpha1.MergeCostModel) (costmodel.Linear, error) {
	const field = "spec.costModel.merge"
	if len(m.Samples) > 0 {
		return fit(field, len(m.Samples), func(i int) (int32, int64, string) {
			return m.Samples[i].Nodes, m.Samples[i].Inputs, m.Samples[i].Seconds
		})
	}
	return coefficients(field, m.OverheadSeconds, m.SerialSecondsPerInput, m.ParallelSecondsPerInput,
		"serialSecondsPerInput", "parallelSecondsPerInput")
}

// fit fits a cost model part to its n measured samples; sample(i) gives the
// nodes, the work (tuples or inputs) and the seconds of sample i.
func fit(field string, n int, sample func(i int) (nodes int32, work int64, seconds string)) (costmodel.Linear, error) {
	samples := make([]costmodel.Sample, 0, n)
	for i := range n {
		nodes, work, s := sample(i)
		seconds, err := laxityv1alpha1.ParseDecimal(fmt.Sprintf("%s.samples[%d].seconds", field, i), s, laxityv1alpha1.MaxSampleSeconds)
		if err != nil {
			return costmodel.Linear{}, err
		}
		samples = append(samples, costmodel.Sample{Nodes: int(nodes), Work: float64(work), Seconds: seconds})
	}
	l, err := costmodel.Fit(samples)
	if err != nil {
		return l, fmt.Errorf("%s.samples: %w", field, err)
	}
	return l, nil
}

func coefficients(field, overhead, serial, parallel, serialName, parallelName string) (costmodel.Linear, error) {
	var l costmodel.Linear
	var err error
	if l.Overhead, err = laxityv1alpha1.ParseDecimal(field+".overheadSeconds", overhead, laxityv1alpha1.MaxCoefficientSeconds); err != nil {
		return l, err
	}
	if l.Serial, err = laxityv1alpha1.ParseDecimal(field+"."+serialName, serial, laxityv1alpha1.MaxCoefficientSeconds); err != nil {
		return l, err
	}
	if l.Parallel, err = laxityv1alpha1.ParseDecimal(field+"."+parallelName, parallel, laxityv1alpha1.MaxCoefficientSeconds); err != nil {
		return l, err
	}
	if err := l.Validate(); err != nil {
		return l, fmt.Errorf("%s: %w", field, err)
	}
	return l, nil
}

func durationOr(d *metav1.Duration, fallback time.Duration) float64 {
	if d == nil {
		return fallback.Seconds()
	}
	return d.Seconds()
}

// AllowedLateness is how long after window.end the query's last batch
// waits: spec.input.allowedLateness, and for object storage at least the
// settle time, before which the window's last objects do not count.
func AllowedLateness(q *laxityv1alpha1.IntermittentQuery) time.Duration {
	var lateness time.Duration
	for _, in := range Inputs(q) {
		lateness = max(lateness, in.AllowedLateness.Duration)
		if os := in.ObjectStore; os != nil {
			lateness = max(lateness, os.Settle.Duration)
		}
	}
	return lateness
}

// FieldInput is one of a query's inputs and the field that declares it.
type FieldInput struct {
	// Field is spec.input or spec.inputs[i].
	Field string
	laxityv1alpha1.JoinInput
}

// Inputs are q's inputs: spec.inputs for a query over several, and
// spec.input, unnamed, for a query over one.
func Inputs(q *laxityv1alpha1.IntermittentQuery) []FieldInput {
	if len(q.Spec.Inputs) == 0 {
		return []FieldInput{{Field: "spec.input", JoinInput: laxityv1alpha1.JoinInput{Input: q.Spec.Input}}}
	}
	out := make([]FieldInput, len(q.Spec.Inputs))
	for i, in := range q.Spec.Inputs {
		out[i] = FieldInput{Field: fmt.Sprintf("spec.inputs[%d]", i), JoinInput: in}
	}
	return out
}
