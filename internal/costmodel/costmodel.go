// Package costmodel holds the execution-time model of one query (eq. 1–3 of
// "Elastic Scheduling of Intermittent Query Processing in a Cluster
// Environment"): a batch of t tuples on p nodes takes
//
//	overhead + t * (serial + parallel/p)
//
// seconds, and a merge of m intermediate results follows the same form with m
// in place of t. Coefficients are given directly or fitted by least squares
// from measured samples.
package costmodel

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Linear is Amdahl's law with a per-run overhead: Seconds(p, n) =
// Overhead + n*(Serial + Parallel/p).
type Linear struct {
	// Overhead is the fixed cost of one run, in seconds.
	Overhead float64
	// Serial is the seconds per unit of work that do not parallelise.
	Serial float64
	// Parallel is the seconds per unit of work spread over the nodes.
	Parallel float64
}

// Seconds is the modelled duration of work units processed on nodes nodes.
func (l Linear) Seconds(nodes int, work float64) float64 {
	return l.Overhead + work*l.PerUnit(nodes)
}

// PerUnit is the marginal seconds per unit of work on nodes nodes.
func (l Linear) PerUnit(nodes int) float64 {
	return l.Serial + l.Parallel/float64(nodes)
}

// Validate reports a coefficient that is negative or not finite.
func (l Linear) Validate() error {
	for _, c := range []struct {
		name  string
		value float64
	}{{"overheadSeconds", l.Overhead}, {"serial", l.Serial}, {"parallel", l.Parallel}} {
		if math.IsNaN(c.value) || math.IsInf(c.value, 0) {
			return fmt.Errorf("%s is not a finite number", c.name)
		}
		if c.value < 0 {
			return fmt.Errorf("%s is negative (%g)", c.name, c.value)
		}
	}
	if l.Serial == 0 && l.Parallel == 0 && l.Overhead == 0 {
		return errors.New("every coefficient is zero: a run would take no time")
	}
	return nil
}

// Model is the cost model of one query: its batches and its merges (the
// partial aggregation PAT and the final aggregation FAT).
type Model struct {
	Batch Linear
	Merge Linear
}

// Scaled is the model with every duration multiplied by f: the planner's
// and dispatch's view of a model with a runtime margin of f-1.
func (m Model) Scaled(f float64) Model {
	scale := func(l Linear) Linear {
		return Linear{Overhead: f * l.Overhead, Serial: f * l.Serial, Parallel: f * l.Parallel}
	}
	return Model{Batch: scale(m.Batch), Merge: scale(m.Merge)}
}

// BatchSeconds is the modelled duration of a batch of tuples tuples on
// nodes nodes.
func (m Model) BatchSeconds(nodes int, tuples int64) float64 {
	return m.Batch.Seconds(nodes, float64(tuples))
}

// MergeSeconds is the modelled duration of a merge of inputs results on
// nodes nodes.
func (m Model) MergeSeconds(nodes int, inputs int) float64 {
	return m.Merge.Seconds(nodes, float64(inputs))
}

// OnNodes is the model on one pool size, with the per-unit terms divided
// out once: what a caller that prices much work on the same nodes keeps.
// Its durations equal the model's to the last bit.
type OnNodes struct {
	batchOverhead, batchPerUnit float64
	mergeOverhead, mergePerUnit float64
}

// OnNodes is m on nodes nodes.
func (m Model) OnNodes(nodes int) OnNodes {
	return OnNodes{
		batchOverhead: m.Batch.Overhead, batchPerUnit: m.Batch.PerUnit(nodes),
		mergeOverhead: m.Merge.Overhead, mergePerUnit: m.Merge.PerUnit(nodes),
	}
}

// BatchOverhead is the fixed cost of one batch, in seconds.
func (o OnNodes) BatchOverhead() float64 { return o.batchOverhead }

// BatchPerTuple is the seconds per tuple of a batch.
func (o OnNodes) BatchPerTuple() float64 { return o.batchPerUnit }

// MergeSeconds is the modelled duration of a merge of inputs results.
func (o OnNodes) MergeSeconds(inputs int) float64 {
	return o.mergeOverhead + float64(inputs)*o.mergePerUnit
}

// Sample is one measured run: Work units (tuples for batches, intermediate
// results for merges) on Nodes nodes took Seconds.
type Sample struct {
	Nodes   int
	Work    float64
	Seconds float64
}

// unknowns is the number of coefficients Fit solves for.
const unknowns = 3

// The largest sample values Fit accepts, the same the API enforces on
// cost-model samples: beyond them a least-squares fit loses the precision
// to tell the coefficients apart.
const (
	// MaxSampleNodes bounds a sample's node count.
	MaxSampleNodes = 100000
	// MaxSampleWork bounds a sample's work: tuples for a batch, merge inputs
	// for a merge.
	MaxSampleWork = 1e15
	// MaxSampleSeconds bounds a sample's measured duration.
	MaxSampleSeconds = 1e7
)

// Fit finds the Linear model that minimises the squared error over samples,
// a linear regression (linear in work and in 1/nodes). It fails when there
// are fewer samples than unknowns, when the samples cannot tell the
// coefficients apart (for example every sample on the same node count), or
// when the best fit has a negative coefficient, which would make more nodes or
// more work faster.
func Fit(samples []Sample) (Linear, error) {
	return FitWeighted(samples, nil)
}

// FitWeighted is Fit minimising the weighted squared error: sample i counts
// weights[i] times (nil weighs every sample 1). A robust fit reweighs the
// samples and fits again (iteratively reweighted least squares); a fit of
// relative errors weighs each sample by 1/Seconds². A weight that is
// negative or not finite is an error; samples of weight zero do not count
// towards the fewest samples a fit needs.
func FitWeighted(samples []Sample, weights []float64) (Linear, error) {
	if weights != nil && len(weights) != len(samples) {
		return Linear{}, fmt.Errorf("%d weights for %d samples", len(weights), len(samples))
	}
	weight := func(i int) float64 {
		if weights == nil {
			return 1
		}
		return weights[i]
	}
	counted := 0
	for i := range samples {
		w := weight(i)
		if !(w >= 0) || math.IsInf(w, 0) {
			return Linear{}, fmt.Errorf("sample %d: weight must be a finite number of at least 0, got %g", i, w)
		}
		if w > 0 {
			counted++
		}
	}
	if counted < unknowns {
		return Linear{}, fmt.Errorf("%d samples cannot fit %d coefficients (overhead, serial, parallel): give at least %d", counted, unknowns, unknowns)
	}
	a := mat.NewDense(len(samples), unknowns, nil)
	b := mat.NewVecDense(len(samples), nil)
	for i, s := range samples {
		switch {
		case s.Nodes < 1 || s.Nodes > MaxSampleNodes:
			return Linear{}, fmt.Errorf("sample %d: nodes must be between 1 and %d, got %d", i, MaxSampleNodes, s.Nodes)
		case !(s.Work >= 0 && s.Work <= MaxSampleWork):
			return Linear{}, fmt.Errorf("sample %d: work must be a number between 0 and %g, got %g", i, float64(MaxSampleWork), s.Work)
		case !(s.Seconds >= 0 && s.Seconds <= MaxSampleSeconds):
			return Linear{}, fmt.Errorf("sample %d: seconds must be a number between 0 and %g, got %g", i, float64(MaxSampleSeconds), s.Seconds)
		}
		// Scaling a row by the root of its weight weighs its squared error
		// by the weight.
		r := math.Sqrt(weight(i))
		a.Set(i, 0, r)
		a.Set(i, 1, r*s.Work)
		a.Set(i, 2, r*s.Work/float64(s.Nodes))
		b.SetVec(i, r*s.Seconds)
	}
	var qr mat.QR
	qr.Factorize(a)
	if cond := qr.Cond(); math.IsInf(cond, 0) || cond > 1e14 {
		return Linear{}, errors.New("samples do not determine the coefficients: vary both the work and the node count")
	}
	var x mat.VecDense
	if err := qr.SolveVecTo(&x, false, b); err != nil {
		return Linear{}, fmt.Errorf("solving least squares: %w", err)
	}
	fit := Linear{Overhead: clampNoise(x.AtVec(0)), Serial: clampNoise(x.AtVec(1)), Parallel: clampNoise(x.AtVec(2))}
	if err := fit.Validate(); err != nil {
		return Linear{}, fmt.Errorf("best fit %+v: %w", fit, err)
	}
	return fit, nil
}

// clampNoise turns a coefficient that is negative only by floating-point
// round-off (as when the samples fit a zero coefficient exactly) into zero.
func clampNoise(v float64) float64 {
	if v < 0 && v > -1e-12 {
		return 0
	}
	return v
}

// CheckBounds reports a coefficient above limit, naming it as the API does.
func (l Linear) CheckBounds(limit float64) error {
	for _, c := range []struct {
		name  string
		value float64
	}{{"overheadSeconds", l.Overhead}, {"serial", l.Serial}, {"parallel", l.Parallel}} {
		if c.value > limit {
			return fmt.Errorf("%s is %g; at most %g is supported", c.name, c.value, limit)
		}
	}
	return nil
}
