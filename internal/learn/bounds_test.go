package learn

import (
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/laxity-dev/laxity/internal/costmodel"
)

// one is a model that prices every batch and merge at 1 s.
var one = costmodel.Model{Batch: costmodel.Linear{Overhead: 1}, Merge: costmodel.Linear{Overhead: 1}}

func TestCorrect(t *testing.T) {
	steps := func(n int, secs float64) []Observation {
		var out []Observation
		for range n {
			out = append(out, Observation{Kind: Batch, Work: 100, Nodes: 2, Seconds: secs})
		}
		return out
	}
	for _, tc := range []struct {
		name         string
		own          []Observation
		wantFactor   float64
		wantOverhead float64 // of the corrected batch model
		wantSlowdown float64
	}{
		// Two steps modelled at 1 s that ran 130 s: the fit alone is at
		// its bound already, and the correction keeps it there.
		{name: "two absurdly slow steps", own: steps(2, 130), wantFactor: 13, wantOverhead: ModelBound, wantSlowdown: ModelBound},
		{name: "one step corrects nothing", own: steps(1, 130), wantFactor: 1, wantOverhead: ModelBound, wantSlowdown: ModelBound},
		{name: "a faster window corrects nothing", own: steps(3, 0.5), wantFactor: 1},
		{name: "nothing usable", own: []Observation{{Kind: Batch, Nodes: 0, Seconds: 5}, {Kind: Batch, Nodes: 1, Seconds: math.Inf(1)}}, wantFactor: 1},
		// Within the bound the window's ratio to the fit corrects it fully:
		// the model prices the steps as they ran.
		{name: "within the bound it corrects fully", own: steps(2, 3), wantFactor: -1, wantOverhead: 3, wantSlowdown: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fit := Fit(one, tc.own, Defaults)
			got, f := Correct(one, fit, tc.own, Defaults)
			if tc.wantFactor < 0 {
				tc.wantFactor = tc.wantOverhead / fit.Model.Batch.Overhead
				tc.wantSlowdown = fit.Slowdown * tc.wantFactor
			}
			if math.Abs(f-tc.wantFactor) > 1e-9*tc.wantFactor {
				t.Errorf("factor %v, want %v", f, tc.wantFactor)
			}
			wantOverhead, wantSlowdown := tc.wantOverhead, tc.wantSlowdown
			if wantOverhead == 0 {
				wantOverhead, wantSlowdown = fit.Model.Batch.Overhead, fit.Slowdown
			}
			if math.Abs(got.Model.Batch.Overhead-wantOverhead) > 1e-9*wantOverhead {
				t.Errorf("corrected batch overhead %v s, want %v s (fit %v s)", got.Model.Batch.Overhead, wantOverhead, fit.Model.Batch.Overhead)
			}
			if math.Abs(got.Slowdown-wantSlowdown) > 1e-9*wantSlowdown {
				t.Errorf("corrected slowdown %v, want %v", got.Slowdown, wantSlowdown)
			}
			if got.Margin != fit.Margin || got.Batches != fit.Batches || got.Merges != fit.Merges {
				t.Errorf("the correction changed more than the model: %+v from %+v", got, fit)
			}
		})
	}
}

func TestClamp(t *testing.T) {
	d := costmodel.Model{Batch: costmodel.Linear{Overhead: 10, Serial: 0, Parallel: 1e-5}, Merge: costmodel.Linear{Overhead: 2, Serial: 0.1, Parallel: 0.5}}
	for _, tc := range []struct {
		name  string
		m     costmodel.Model
		bound float64
		want  costmodel.Model
	}{
		{name: "within", m: d.Scaled(3), bound: 10, want: d.Scaled(3)},
		{name: "above", m: d.Scaled(1e6), bound: 10, want: d.Scaled(10)},
		{name: "below", m: d.Scaled(1e-6), bound: 10, want: d.Scaled(0.1)},
		{name: "infinite", m: d.Scaled(math.Inf(1)), bound: 10, want: costmodel.Model{
			Batch: costmodel.Linear{Overhead: 100, Serial: 0, Parallel: 1e-4}, Merge: costmodel.Linear{Overhead: 20, Serial: 1, Parallel: 5}}},
		{name: "not a number", m: d.Scaled(math.NaN()), bound: 10, want: d},
		{name: "a bound below 1 is the default", m: d.Scaled(50), bound: 0.5, want: d.Scaled(ModelBound)},
		{name: "a bound of NaN is the default", m: d.Scaled(50), bound: math.NaN(), want: d.Scaled(ModelBound)},
		{name: "a declared zero stays zero", m: costmodel.Model{Batch: costmodel.Linear{Overhead: 10, Serial: 5, Parallel: 1e-5}, Merge: d.Merge}, bound: 10, want: d},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Clamp(d, tc.m, tc.bound)
			if !modelsClose(got, tc.want) {
				t.Errorf("Clamp = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func modelsClose(a, b costmodel.Model) bool {
	c := func(x, y float64) bool { return math.Abs(x-y) <= 1e-12*max(math.Abs(x), math.Abs(y)) }
	l := func(x, y costmodel.Linear) bool {
		return c(x.Overhead, y.Overhead) && c(x.Serial, y.Serial) && c(x.Parallel, y.Parallel)
	}
	return l(a.Batch, b.Batch) && l(a.Merge, b.Merge)
}

func TestLeadTimeBounds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		declared float64
		observed []float64
		want     float64
	}{
		{name: "at most LeadTimeBound times the declared", declared: 60, observed: []float64{1e9}, want: 60 * LeadTimeBound},
		{name: "a declared zero is bounded absolutely", declared: 0, observed: []float64{1e12}, want: MaxLeadTimeSeconds},
		{name: "a declared longer than the absolute bound stays", declared: 2 * MaxLeadTimeSeconds, observed: []float64{1}, want: 2 * MaxLeadTimeSeconds},
		{name: "a declared infinity is zero", declared: math.Inf(1), observed: []float64{30}, want: 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LeadTime(tc.declared, tc.observed, Defaults); got != tc.want {
				t.Errorf("LeadTime = %v, want %v", got, tc.want)
			}
		})
	}
}

// absurdSeconds draws durations of every kind a step can report, the
// absurd included: not a number, infinite, negative, zero, far beyond any
// real step.
func absurdSeconds(t *rapid.T, label string) float64 {
	return rapid.OneOf(
		rapid.Float64Range(0.01, 1e5),
		rapid.Float64Range(1e5, 1e300),
		rapid.Float64Range(-1e300, 0),
		rapid.SampledFrom([]float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.SmallestNonzeroFloat64, math.MaxFloat64}),
	).Draw(t, label)
}

func absurdObservations() *rapid.Generator[[]Observation] {
	return rapid.SliceOfN(rapid.Custom(func(t *rapid.T) Observation {
		return Observation{
			Kind:    Kind(rapid.IntRange(-1, 2).Draw(t, "kind")),
			Work:    rapid.OneOf(rapid.Float64Range(0, 1e8), rapid.SampledFrom([]float64{-1, math.NaN(), math.Inf(1), 1e300})).Draw(t, "work"),
			Nodes:   rapid.IntRange(-2, 200_000).Draw(t, "nodes"),
			Seconds: absurdSeconds(t, "seconds"),
		}
	}), 0, 80)
}

// checkBounds fails t unless l, learned with the declared model d, is
// within the documented bounds: every coefficient within ModelBound of
// d's, the slowdown within [1/ModelBound, ModelBound], the margin within
// [0, MarginBound].
func checkBounds(t interface{ Fatalf(string, ...any) }, what string, d costmodel.Model, l Learned) {
	in := func(name string, v, dv float64) {
		const eps = 1e-12
		if !(v >= dv/ModelBound*(1-eps) && v <= dv*ModelBound*(1+eps)) {
			t.Fatalf("%s: %s %v outside [%v, %v] around the declared %v", what, name, v, dv/ModelBound, dv*ModelBound, dv)
		}
	}
	for _, k := range []struct {
		name string
		m, d costmodel.Linear
	}{{"batch", l.Model.Batch, d.Batch}, {"merge", l.Model.Merge, d.Merge}} {
		in(k.name+" overhead", k.m.Overhead, k.d.Overhead)
		in(k.name+" serial", k.m.Serial, k.d.Serial)
		in(k.name+" parallel", k.m.Parallel, k.d.Parallel)
	}
	if !(l.Slowdown >= 1/ModelBound*(1-1e-12) && l.Slowdown <= ModelBound*(1+1e-12)) {
		t.Fatalf("%s: slowdown %v outside [1/%d, %d]", what, l.Slowdown, ModelBound, ModelBound)
	}
	if !(l.Margin >= 0 && l.Margin <= MarginBound) {
		t.Fatalf("%s: margin %v outside [0, %d]", what, l.Margin, MarginBound)
	}
}

// For any observations, across windows and within one, the learned model
// stays within [declared/ModelBound, declared×ModelBound], and the lead
// time within [declared, min(LeadTimeBound×declared, MaxLeadTimeSeconds)].
func TestLearnedStaysWithinBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := modelGen().Draw(t, "declared")
		earlier := absurdObservations().Draw(t, "earlier")
		own := absurdObservations().Draw(t, "own")
		fit := Fit(d, append(append([]Observation(nil), earlier...), own...), Defaults)
		checkBounds(t, "fit", d, fit)
		corrected, f := Correct(d, fit, own, Defaults)
		checkBounds(t, "corrected", d, corrected)
		if !(f >= 1) || math.IsInf(f, 0) {
			t.Fatalf("correction factor %v", f)
		}

		declaredLead := rapid.Float64Range(0, 3600).Draw(t, "declaredLead")
		var leads []float64
		for i := range rapid.IntRange(0, 40).Draw(t, "leads") {
			leads = append(leads, absurdSeconds(t, "lead"+string(rune('a'+i%26))))
		}
		lead := LeadTime(declaredLead, leads, Defaults)
		hi := float64(MaxLeadTimeSeconds)
		if declaredLead > 0 {
			hi = min(hi, LeadTimeBound*declaredLead)
		}
		if !(lead >= declaredLead && lead <= hi) {
			t.Fatalf("lead time %v outside [%v, %v]", lead, declaredLead, hi)
		}
	})
}

// FuzzLearnedBounds: whatever the steps reported, the model learned and
// corrected within the window stays within the bound.
func FuzzLearnedBounds(f *testing.F) {
	f.Add(1.0, 130.0, 130.0, 100.0, 2, uint8(2))
	f.Add(1e-3, 1e300, math.Inf(1), math.NaN(), -1, uint8(9))
	f.Add(5.0, 0.0, -7.0, 1e8, 100_000, uint8(40))
	f.Fuzz(func(t *testing.T, overhead, secs, secs2, work float64, nodes int, n uint8) {
		if !(overhead > 0 && overhead <= 1e6) {
			return
		}
		d := costmodel.Model{Batch: costmodel.Linear{Overhead: overhead, Serial: 1e-7, Parallel: 1e-5}, Merge: costmodel.Linear{Overhead: overhead, Serial: 0.01, Parallel: 0.1}}
		var obs []Observation
		for i := range int(n % 64) {
			s := secs
			if i%3 == 1 {
				s = secs2 * float64(i)
			}
			obs = append(obs, Observation{Kind: Kind(i % 2), Work: work, Nodes: nodes + i%4, Seconds: s})
		}
		half := len(obs) / 2
		fit := Fit(d, obs, Defaults)
		checkBounds(t, "fit", d, fit)
		corrected, _ := Correct(d, fit, obs[half:], Defaults)
		checkBounds(t, "corrected", d, corrected)
	})
}
