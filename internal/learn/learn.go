// Package learn learns a query's cost model, the headroom to plan it with
// and a pool's provisioning lead time from what ran: the measured durations
// of its batches and merges and the measured arrivals of its nodes. The
// declared model is the prior; observations move the model away from it as
// they accumulate, robustly (a single wild measurement moves it little) and
// within bounds (at most Settings.Bound times the declared coefficients).
//
// How a model is learned, per kind of step (batches, and merges, partial and
// final alike):
//
//   - Every observation is judged against the declared model: its ratio
//     observed/declared. Observations that are not usable are skipped: a
//     duration, work or node count that is not a finite number, a node count
//     below 1, a duration of zero or less, work below zero, values beyond
//     the bounds the API puts on cost-model samples, and a step the declared
//     model prices at no time.
//   - Newer observations weigh more: an observation's weight halves every
//     Settings.HalfLife observations that follow it.
//   - The slowdown is a robust location of the weighted ratios: Tukey's
//     biweight M-estimate, started from the weighted median and scaled by
//     the median absolute deviation, so that ratios far from the bulk get no
//     weight at all. It is shrunk towards the prior (1 for all steps; for
//     one kind, the slowdown of all steps) by Settings.PriorWeight
//     pseudo-observations, in log space, and bounded to [1/Bound, Bound].
//   - With enough observations of varied work on at least two node counts
//     (Settings.MinFitSamples), the three coefficients are fitted anew: least
//     squares of the relative error, reweighted by Tukey's biweight of the
//     residuals (costmodel.FitWeighted), every coefficient clamped to
//     [declared/Bound, declared×Bound]. The fit is kept only when it
//     explains the observations clearly better (Settings.FitGain) than the
//     declared model scaled by the slowdown, which is the model otherwise:
//     few samples on one node count, or work that hardly varies, cannot
//     tell the coefficients apart, and a fit of noise around the declared
//     shape extrapolates badly to batch sizes not yet run.
//
// The margin is the headroom to plan with on top of the learned model: the
// Settings.Quantile quantile of the weighted ratios observed/learned, minus
// 1, plus an allowance for how little is known, Settings.Allowance times the
// spread of the ratios over the square root of the observations' effective
// number, where the spread is shrunk towards Settings.PriorSpread as the
// slowdown is towards its prior. With no observation nothing is learned:
// the declared model and no margin.
//
// The package is pure: no Kubernetes imports, no clock, no randomness.
package learn

import (
	"math"
	"sort"

	"github.com/laxity-dev/laxity/internal/costmodel"
)

// Kind is the kind of step an observation measured.
type Kind int

const (
	// Batch is a batch of tuples.
	Batch Kind = iota
	// Merge is a partial or a final merge: both follow the merge model.
	Merge
)

// Observation is one step as it ran.
type Observation struct {
	Kind Kind
	// Work is the tuples of a batch, or the intermediate results a merge
	// combined.
	Work  float64
	Nodes int
	// Seconds is the measured duration, from the step's launch to its end.
	Seconds float64
}

// Settings are the learner's tuning knobs.
type Settings struct {
	// HalfLife is how many later observations halve an observation's
	// weight: how fast the learner forgets a world that has changed.
	HalfLife float64
	// PriorWeight is how many observations the prior counts as, for the
	// slowdown and the spread of the ratios.
	PriorWeight float64
	// Bound limits how far learning moves a coefficient from the declared
	// one, and the slowdown from 1, as a factor either way.
	Bound float64
	// MinFitSamples is the fewest observations of a kind, on at least two
	// node counts and with the largest work at least twice the smallest,
	// before its three coefficients are fitted rather than the declared
	// model scaled.
	MinFitSamples int
	// FitGain is how much better a fit of the three coefficients must
	// explain the observations than the declared model scaled, as the
	// largest ratio of their typical errors, to be kept: a fit that only
	// follows noise extrapolates wildly to batch sizes and node counts
	// that were not observed.
	FitGain float64
	// Quantile is the share of observed/learned ratios the margin covers.
	Quantile float64
	// Allowance is how many standard errors of the ratios the margin adds
	// for how little has been observed.
	Allowance float64
	// TailDeviations is how many standard deviations of the ratios, on
	// top of their median and Allowance, the tail is priced to cover (see
	// TailMargin).
	TailDeviations float64
	// PriorSpread is the spread of the ratios (their standard deviation)
	// assumed before any is observed: cloud nodes are not steady.
	PriorSpread float64
	// MaxMargin bounds the margin.
	MaxMargin float64
	// LeadQuantile is the share of observed provisioning lead times the
	// learned lead time covers.
	LeadQuantile float64
	// Unlearned is the margin a query plans with while nothing learned of
	// it applies (DefaultMargin unless the schedule sets one): what was
	// learned applies when it plans materially otherwise.
	Unlearned float64
}

// The bounds of what is learned, named once: docs/design.md ("Learning")
// documents them.
const (
	// ModelBound is how far, as a factor either way, learning may move a
	// query's model from the declared one: every coefficient of a learned
	// model, the slowdown, and the model as the window's own steps
	// correct it (Correct) stay within [declared/ModelBound,
	// declared×ModelBound]. Defaults.Bound.
	ModelBound = 10
	// MarginBound is the largest margin learning plans with, as a fraction
	// of the learned model's durations: 1 is 100%. Defaults.MaxMargin.
	MarginBound = 1
	// LeadTimeBound is how many times the declared provisioning lead time
	// a learned one may be, at most (it is never below the declared one).
	// It is Defaults.Bound: the same factor as the models'.
	LeadTimeBound = ModelBound
	// MaxLeadTimeSeconds bounds a learned lead time whatever the declared
	// one (a declared lead time of 0 has no multiple to bound it): 30 days,
	// the API's bound on the pool's durations.
	MaxLeadTimeSeconds = 30 * 24 * 3600
	// DefaultMargin is the margin a query plans with before anything
	// learned of it applies, when the schedule sets none: the 85th
	// percentile of the per-step slowdown of ordinary
	// cloud nodes, about 15% on average with a standard deviation of 10%
	// (1.15 + 1.04 × 0.10 ≈ 1.25). Defaults.Unlearned. docs/experiments.md
	// ("Run-time noise") measures it on a first window.
	DefaultMargin = 0.25
	// MinWindowSteps is the fewest of a window's own finished steps whose
	// ratio to the model corrects it within the window (Correct): one step
	// alone may be an outlier.
	MinWindowSteps = 2
)

// Defaults are what the operator and the study learn with. The quantile
// and the tail deviations were set by the study of docs/experiments.md
// ("Learning across windows"): a step inside the window that runs long is
// seen and planned around, so every step is priced for an ordinary draw
// (the 60th percentile), and only the tail, after the window closes, for a
// rare one (two standard deviations over that). A higher quantile or more
// deviations cost more than the plan that knew by over 10% there; fewer
// missed deadlines more often.
var Defaults = Settings{
	HalfLife:       32,
	PriorWeight:    1,
	Bound:          ModelBound,
	MinFitSamples:  8,
	FitGain:        0.25,
	Quantile:       0.6,
	Allowance:      1,
	TailDeviations: 2,
	PriorSpread:    0.1,
	MaxMargin:      MarginBound,
	LeadQuantile:   0.9,
	Unlearned:      DefaultMargin,
}

// DefaultTolerance is the relative change of a planned step duration
// (Change) below which a newly learned model is not worth a new plan.
const DefaultTolerance = 0.05

// Learned is what was learned of one query.
type Learned struct {
	// Model is the fitted model, with no margin in it.
	Model costmodel.Model
	// Slowdown is the robust ratio of observed to declared durations over
	// every step: 1 is as declared.
	Slowdown float64
	// Margin is the fraction to plan with on top of Model:
	// Model.Scaled(1+Margin).
	Margin float64
	// TailMargin is the share of the query's tail (its last batch and
	// final merge, priced with Margin) its plans keep spare before the
	// deadline (planner.Query.TailMargin): with Margin, it covers
	// TailDeviations standard deviations of a step's spread.
	TailMargin float64
	// Batches and Merges count the observations used of each kind.
	Batches, Merges int
}

// Planned is the model to plan with: Model with Margin added to every
// duration.
func (l Learned) Planned() costmodel.Model { return l.Model.Scaled(1 + l.Margin) }

// sample is a usable observation with its weight and its ratio to the
// declared model.
type sample struct {
	Observation
	weight, ratio float64
}

// seconds is the duration m models for o.
func seconds(m costmodel.Model, o Observation) float64 {
	if o.Kind == Merge {
		return m.Merge.Seconds(o.Nodes, o.Work)
	}
	return m.Batch.Seconds(o.Nodes, o.Work)
}

// usable reports whether o can be learned from.
func usable(o Observation) bool {
	return o.Nodes >= 1 && o.Nodes <= costmodel.MaxSampleNodes &&
		o.Work >= 0 && o.Work <= costmodel.MaxSampleWork &&
		o.Seconds > 0 && o.Seconds <= costmodel.MaxSampleSeconds &&
		(o.Kind == Batch || o.Kind == Merge)
}

// Fit learns from obs (oldest first); declared is the prior. It never
// fails: what it cannot learn from it skips (see the package comment), and
// with nothing usable it returns the declared model, slowdown 1 and no
// margin.
func Fit(declared costmodel.Model, obs []Observation, s Settings) Learned {
	s = s.sane()
	out := Learned{Model: declared, Slowdown: 1}
	var all []sample
	for i, o := range obs {
		if !usable(o) {
			continue
		}
		modelled := seconds(declared, o)
		if !(modelled > 0) || math.IsInf(modelled, 0) {
			continue
		}
		age := float64(len(obs) - 1 - i)
		all = append(all, sample{Observation: o, weight: math.Exp2(-age / s.HalfLife), ratio: o.Seconds / modelled})
	}
	if len(all) == 0 {
		return out
	}
	out.Slowdown = s.shrink(location(all), effective(all), 1)
	byKind := map[Kind][]sample{}
	for _, x := range all {
		byKind[x.Kind] = append(byKind[x.Kind], x)
	}
	out.Batches, out.Merges = len(byKind[Batch]), len(byKind[Merge])
	if b := byKind[Batch]; len(b) > 0 {
		out.Model.Batch = s.fitKind(declared.Batch, b, out.Slowdown)
	} else {
		out.Model.Batch = scale(declared.Batch, out.Slowdown)
	}
	if m := byKind[Merge]; len(m) > 0 {
		out.Model.Merge = s.fitKind(declared.Merge, m, out.Slowdown)
	} else {
		out.Model.Merge = scale(declared.Merge, out.Slowdown)
	}
	// Every path above keeps within the bound; this is the guarantee.
	out.Model = Clamp(declared, out.Model, s.Bound)
	out.Margin, out.TailMargin = s.margin(out.Model, all)
	return out
}

// Clamp is m with every coefficient within a factor bound of declared's,
// either way: [declared/bound, declared×bound]. Every duration of the
// result is then within that factor of the declared model's, since a
// duration is a sum of coefficients times non-negative work. A bound below
// 1 or not a number is ModelBound; a coefficient that is not a number is
// the declared one.
func Clamp(declared, m costmodel.Model, bound float64) costmodel.Model {
	if !(bound >= 1) || math.IsInf(bound, 0) {
		bound = ModelBound
	}
	c := func(v, d float64) float64 {
		if math.IsNaN(v) {
			return d
		}
		return min(max(v, d/bound), d*bound)
	}
	l := func(m, d costmodel.Linear) costmodel.Linear {
		return costmodel.Linear{Overhead: c(m.Overhead, d.Overhead), Serial: c(m.Serial, d.Serial), Parallel: c(m.Parallel, d.Parallel)}
	}
	return costmodel.Model{Batch: l(m.Batch, declared.Batch), Merge: l(m.Merge, declared.Merge)}
}

// Correct is l corrected by its window's own finished steps (own, oldest
// first), for a window that runs slower than l's model: the fit weighs the
// declared model and earlier windows, so it follows such a window with a
// lag, and the window's own steps say so at once. When at least
// MinWindowSteps of them are usable and their robust ratio to l's model
// (WindowSlowdown) is above 1, the model is scaled by that ratio, and the
// slowdown with it, both held to s.Bound around declared (Clamp): a
// window whose steps ran a hundred times slower than modelled is planned
// at s.Bound times the declared model, not a hundred. factor is the
// window's ratio as measured (1 when no correction applies), which says
// how much slower than the fit the window runs even where the bound cut
// the correction short.
func Correct(declared costmodel.Model, l Learned, own []Observation, s Settings) (corrected Learned, factor float64) {
	s = s.sane()
	f, n := WindowSlowdown(l.Model, own)
	if n < MinWindowSteps || !(f > 1) {
		return l, 1
	}
	l.Model = Clamp(declared, l.Model.Scaled(f), s.Bound)
	l.Slowdown = min(max(l.Slowdown*f, 1/s.Bound), s.Bound)
	return l, f
}

// sane replaces knobs that would make no sense (zero, negative, not a
// number) with the defaults, so that a caller's typo cannot make Fit
// misbehave.
func (s Settings) sane() Settings {
	d := Defaults
	pos := func(v *float64, def float64) {
		if !(*v > 0) || math.IsInf(*v, 0) {
			*v = def
		}
	}
	pos(&s.HalfLife, d.HalfLife)
	if !(s.PriorWeight >= 0) || math.IsInf(s.PriorWeight, 0) {
		s.PriorWeight = d.PriorWeight
	}
	if !(s.Bound >= 1) || math.IsInf(s.Bound, 0) {
		s.Bound = d.Bound
	}
	if !(s.FitGain > 0) || s.FitGain > 1 {
		s.FitGain = d.FitGain
	}
	if s.MinFitSamples < 3 {
		s.MinFitSamples = d.MinFitSamples
	}
	if !(s.Quantile > 0 && s.Quantile <= 1) {
		s.Quantile = d.Quantile
	}
	if !(s.Allowance >= 0) || math.IsInf(s.Allowance, 0) {
		s.Allowance = d.Allowance
	}
	if !(s.TailDeviations >= 0) || math.IsInf(s.TailDeviations, 0) {
		s.TailDeviations = d.TailDeviations
	}
	if !(s.PriorSpread >= 0) || math.IsInf(s.PriorSpread, 0) {
		s.PriorSpread = d.PriorSpread
	}
	pos(&s.MaxMargin, d.MaxMargin)
	if !(s.LeadQuantile > 0 && s.LeadQuantile <= 1) {
		s.LeadQuantile = d.LeadQuantile
	}
	return s
}

// shrink moves the robust ratio m of n effective observations towards
// prior by PriorWeight pseudo-observations, in log space, within the bound.
func (s Settings) shrink(m, n, prior float64) float64 {
	if !(m > 0) {
		return prior
	}
	v := math.Exp((n*math.Log(m) + s.PriorWeight*math.Log(prior)) / (n + s.PriorWeight))
	return min(max(v, 1/s.Bound), s.Bound)
}

// fitKind learns one kind's Linear model from its samples, with prior the
// slowdown of all steps.
func (s Settings) fitKind(declared costmodel.Linear, xs []sample, prior float64) costmodel.Linear {
	fallback := scale(declared, s.shrink(location(xs), effective(xs), prior))
	if !s.varied(xs) {
		return fallback
	}
	fit, ok := s.robustFit(declared, xs)
	if !ok || misfit(fit, xs) > s.FitGain*misfit(fallback, xs) {
		return fallback
	}
	return fit
}

// varied reports whether the samples can tell the three coefficients apart:
// enough of them, on two node counts or more, with varied work.
func (s Settings) varied(xs []sample) bool {
	if len(xs) < s.MinFitSamples {
		return false
	}
	lo, hi := xs[0].Work, xs[0].Work
	nodes := map[int]bool{}
	for _, x := range xs {
		lo, hi = min(lo, x.Work), max(hi, x.Work)
		nodes[x.Nodes] = true
	}
	return len(nodes) >= 2 && hi >= 2*lo && hi > 0
}

// robustFit fits the three coefficients by least squares of the relative
// error, reweighted by Tukey's biweight of the relative residuals, and
// clamps them to the bound around declared.
func (s Settings) robustFit(declared costmodel.Linear, xs []sample) (costmodel.Linear, bool) {
	samples := make([]costmodel.Sample, len(xs))
	for i, x := range xs {
		samples[i] = costmodel.Sample{Nodes: x.Nodes, Work: x.Work, Seconds: x.Seconds}
	}
	robust := make([]float64, len(xs))
	for i := range robust {
		robust[i] = 1
	}
	var fit costmodel.Linear
	for range 20 {
		weights := make([]float64, len(xs))
		for i, x := range xs {
			weights[i] = x.weight * robust[i] / (x.Seconds * x.Seconds)
		}
		next, err := costmodel.FitWeighted(samples, weights)
		if err != nil {
			return costmodel.Linear{}, false
		}
		residuals := make([]float64, len(xs))
		for i, x := range xs {
			residuals[i] = x.Seconds/next.Seconds(x.Nodes, x.Work) - 1
		}
		scale := max(1.4826*median(absAll(residuals)), 0.01)
		for i, r := range residuals {
			robust[i] = biweight(r / scale)
		}
		converged := i3Close(fit, next)
		fit = next
		if converged {
			break
		}
	}
	clamp := func(v, d float64) float64 { return min(max(v, d/s.Bound), d*s.Bound) }
	fit = costmodel.Linear{
		Overhead: clamp(fit.Overhead, declared.Overhead),
		Serial:   clamp(fit.Serial, declared.Serial),
		Parallel: clamp(fit.Parallel, declared.Parallel),
	}
	return fit, fit.Validate() == nil
}

// i3Close reports two fits within a part in a million of each other.
func i3Close(a, b costmodel.Linear) bool {
	c := func(x, y float64) bool { return math.Abs(x-y) <= 1e-6*max(math.Abs(x), math.Abs(y)) }
	return c(a.Overhead, b.Overhead) && c(a.Serial, b.Serial) && c(a.Parallel, b.Parallel)
}

// misfit is the weighted mean absolute log ratio of observed to modelled
// durations, each capped at 1 so that a wild sample counts no more than a
// factor of e: how far the model is off on average. A mean, not a median:
// observations cluster at the batch sizes that ran, and a model through the
// median of the largest cluster would look perfect.
func misfit(l costmodel.Linear, xs []sample) float64 {
	sum, total := 0.0, 0.0
	for _, x := range xs {
		m := l.Seconds(x.Nodes, x.Work)
		if !(m > 0) || math.IsInf(m, 0) {
			return math.Inf(1)
		}
		sum += x.weight * min(math.Abs(math.Log(x.Seconds/m)), 1)
		total += x.weight
	}
	if total == 0 {
		return math.Inf(1)
	}
	return sum / total
}

// margin sizes the headroom from the spread of the ratios observed/learned:
// the margin every step is priced with, and the tail margin on top of it.
//
// The tail is apart because it is where a plan cannot recover. Within a
// window a step that runs long is seen, what it teaches is applied and the
// plan re-made; the query's last batch and final merge run after the
// window has closed, one after the other, and whatever they draw lands on
// the deadline. Two steps average out little of their spread, so the tail
// is priced for a far rarer draw than the quantile every step is priced
// with.
func (s Settings) margin(m costmodel.Model, xs []sample) (margin, tail float64) {
	vs := make([]weighted, 0, len(xs))
	for _, x := range xs {
		modelled := seconds(m, x.Observation)
		if !(modelled > 0) || math.IsInf(modelled, 0) {
			continue
		}
		vs = append(vs, weighted{x.Seconds / modelled, x.weight})
	}
	if len(vs) == 0 {
		return 0, 0
	}
	n := effectiveOf(vs)
	// A robust standard deviation (median absolute deviation), shrunk
	// towards the prior spread: two samples that agree prove little.
	measured := 1.4826 * quantile(deviations(vs), 0.5)
	spread := math.Sqrt((n*measured*measured + s.PriorWeight*s.PriorSpread*s.PriorSpread) / (n + s.PriorWeight))
	allowance := s.Allowance * spread / math.Sqrt(n)
	margin = max(quantile(vs, s.Quantile)-1, 0) + allowance
	if !(margin >= 0) {
		return 0, 0
	}
	margin = min(margin, s.MaxMargin)
	// The tail's deviations are of the spread measured, not shrunk towards
	// the prior: steps that do not spread have no rare draw to cover, and
	// the allowance already stands for how little was seen.
	whole := max(quantile(vs, 0.5)-1, 0) + s.TailDeviations*measured + allowance
	if tail = (1+whole)/(1+margin) - 1; !(tail > 0) {
		return margin, 0
	}
	return margin, min(tail, s.MaxMargin)
}

func scale(l costmodel.Linear, f float64) costmodel.Linear {
	return costmodel.Linear{Overhead: f * l.Overhead, Serial: f * l.Serial, Parallel: f * l.Parallel}
}

// weighted is a value and its weight.
type weighted struct{ v, w float64 }

func ratios(xs []sample) []weighted {
	vs := make([]weighted, len(xs))
	for i, x := range xs {
		vs[i] = weighted{x.ratio, x.weight}
	}
	return vs
}

// effective is the effective number of weighted samples (Kish):
// (Σw)²/Σw².
func effective(xs []sample) float64 { return effectiveOf(ratios(xs)) }

func effectiveOf(vs []weighted) float64 {
	sum, sq := 0.0, 0.0
	for _, v := range vs {
		sum += v.w
		sq += v.w * v.w
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / sq
}

// quantile is the weighted q-quantile of vs: the smallest value whose
// cumulative weight, in ascending order, reaches q of the total. Ties are
// broken by value only, so the result does not depend on vs's order.
func quantile(vs []weighted, q float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	sorted := append([]weighted(nil), vs...)
	sort.Slice(sorted, func(a, b int) bool {
		if sorted[a].v != sorted[b].v {
			return sorted[a].v < sorted[b].v
		}
		return sorted[a].w < sorted[b].w
	})
	total := 0.0
	for _, v := range sorted {
		total += v.w
	}
	acc := 0.0
	for _, v := range sorted {
		acc += v.w
		if acc >= q*total*(1-1e-12) {
			return v.v
		}
	}
	return sorted[len(sorted)-1].v
}

// deviations are the absolute deviations of vs from their weighted median.
func deviations(vs []weighted) []weighted {
	med := quantile(vs, 0.5)
	out := make([]weighted, len(vs))
	for i, v := range vs {
		out[i] = weighted{math.Abs(v.v - med), v.w}
	}
	return out
}

// biweight is Tukey's weight for a residual of u scale units: 0 beyond
// 4.685 (95% efficiency for normal errors).
func biweight(u float64) float64 {
	const c = 4.685
	if math.Abs(u) >= c || math.IsNaN(u) {
		return 0
	}
	t := 1 - (u/c)*(u/c)
	return t * t
}

// location is Tukey's biweight M-estimate of the samples' weighted ratios:
// started from the weighted median, with the median absolute deviation as
// the scale (at least 1% of the median, so that identical ratios and one
// outlier still have a scale).
func location(xs []sample) float64 { return locationOf(ratios(xs)) }

func locationOf(vs []weighted) float64 {
	med := quantile(vs, 0.5)
	scale := max(1.4826*quantile(deviations(vs), 0.5), 0.01*math.Abs(med))
	if !(scale > 0) {
		return med
	}
	loc := med
	for range 50 {
		num, den := 0.0, 0.0
		for _, v := range vs {
			w := v.w * biweight((v.v-loc)/scale)
			num += w * v.v
			den += w
		}
		if den <= 0 {
			return loc
		}
		next := num / den
		if math.Abs(next-loc) <= 1e-12*math.Abs(loc) {
			return next
		}
		loc = next
	}
	return loc
}

func median(xs []float64) float64 {
	vs := make([]weighted, len(xs))
	for i, x := range xs {
		vs[i] = weighted{x, 1}
	}
	return quantile(vs, 0.5)
}

func absAll(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Abs(x)
	}
	return out
}

// LeadTime learns a provisioning lead time, in seconds, from observed ones
// (oldest first): the LeadQuantile quantile of the observations, newer ones
// weighing more, never below declared (nodes that came early once are no
// promise), at most Bound times it and at most MaxLeadTimeSeconds (unless
// the declared one is longer). Observations that are not finite numbers of
// at least 0 are skipped.
func LeadTime(declared float64, observed []float64, s Settings) float64 {
	s = s.sane()
	if !(declared >= 0) || math.IsInf(declared, 0) {
		declared = 0
	}
	var vs []weighted
	for i, o := range observed {
		if !(o >= 0) || math.IsInf(o, 0) {
			continue
		}
		vs = append(vs, weighted{o, math.Exp2(-float64(len(observed)-1-i) / s.HalfLife)})
	}
	if len(vs) == 0 {
		return declared
	}
	learned := max(quantile(vs, s.LeadQuantile), declared)
	if declared > 0 {
		learned = min(learned, s.Bound*declared)
	}
	return min(learned, max(declared, MaxLeadTimeSeconds))
}

// The grid Change compares models on when it is given no points: batches of
// 10⁴ to 10⁸ tuples and merges of 2 to 100 inputs, on 1 to 64 nodes.
var (
	gridNodes = []int{1, 4, 16, 64}
	gridBatch = []float64{1e4, 1e6, 1e8}
	gridMerge = []float64{2, 10, 100}
)

// Change is the largest relative change of a planned step duration
// (Learned.Planned) from old to next, over points (the work and nodes of
// observations; their durations are not used) or, when there are none,
// over a grid of batches of 10⁴ to 10⁸ tuples and merges of 2 to 100
// inputs on 1 to 64 nodes. Callers re-plan when it exceeds a tolerance
// (DefaultTolerance). Points that are not usable are skipped; a duration
// that is zero in both models is no change.
func Change(old, next Learned, points []Observation) float64 {
	if len(points) == 0 {
		for _, n := range gridNodes {
			for _, w := range gridBatch {
				points = append(points, Observation{Kind: Batch, Work: w, Nodes: n, Seconds: 1})
			}
			for _, w := range gridMerge {
				points = append(points, Observation{Kind: Merge, Work: w, Nodes: n, Seconds: 1})
			}
		}
	}
	a, b := old.Planned(), next.Planned()
	largest := 0.0
	for _, p := range points {
		p.Seconds = 1 // only the work and nodes matter
		if !usable(p) {
			continue
		}
		before, after := seconds(a, p), seconds(b, p)
		if math.IsNaN(before) || math.IsNaN(after) {
			continue
		}
		if before == after {
			continue
		}
		if !(before > 0) || math.IsInf(before, 0) || math.IsInf(after, 0) {
			return math.Inf(1)
		}
		largest = max(largest, math.Abs(after-before)/before)
	}
	return largest
}

// WindowSlowdown is the robust ratio of observed to modelled durations of
// the steps just run (obs) against model, the model in force, for the
// in-window deadline rule (dispatch.UnsafeAt), and the number of usable
// observations it rests on. Every step weighs the same; the estimate is
// Tukey's biweight location, robust to a single wild step. With no usable
// observation it is 1 on 0.
func WindowSlowdown(model costmodel.Model, obs []Observation) (float64, int) {
	var vs []weighted
	for _, o := range obs {
		if !usable(o) {
			continue
		}
		m := seconds(model, o)
		if !(m > 0) || math.IsInf(m, 0) {
			continue
		}
		vs = append(vs, weighted{o.Seconds / m, 1})
	}
	return Slowdown(vs2ratios(vs)), len(vs)
}

func vs2ratios(vs []weighted) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = v.v
	}
	return out
}

// Slowdown is the robust location of ratios of observed to modelled
// durations (Tukey's biweight, as WindowSlowdown): what a caller that pools
// the ratios of several queries, each against its own model, combines them
// with. Ratios that are not finite and positive are skipped; 1 when none is
// left.
func Slowdown(ratios []float64) float64 {
	var vs []weighted
	for _, r := range ratios {
		if r > 0 && !math.IsInf(r, 0) {
			vs = append(vs, weighted{r, 1})
		}
	}
	if len(vs) == 0 {
		return 1
	}
	return locationOf(vs)
}

// Ratio is o's observed duration over the one model gives it; 0 when o is
// not usable or the model prices it at no time.
func Ratio(model costmodel.Model, o Observation) float64 {
	if !usable(o) {
		return 0
	}
	m := seconds(model, o)
	if !(m > 0) || math.IsInf(m, 0) {
		return 0
	}
	return o.Seconds / m
}

// minEvidence is the fewest observations whose spread alone (with a
// slowdown within the tolerance) may change plans.
const minEvidence = 3

// Window is what a query has learned during its window: its cost model
// fitted to the observations its earlier windows left (inherited) and its
// own window's finished steps (own), with the declared model as the prior;
// then corrected by the own steps when they run slower than the fit
// (Correct), within the learner's bound. applies says whether plans should
// use it rather than the declared model with the unlearned margin
// (s.Unlearned). Once earlier windows left enough observations, always: the
// learned margin, sized from the query's own spread, is what the unlearned
// one stands in for, and keeping the stand-in where the two price steps
// alike kept a 25% margin on queries whose steps spread by 10% (and their
// windows at 1.2 times the cost of the plan that knew). Before that, only
// once the steps say something the declared model does not — a slowdown
// beyond the tolerance, or enough observations for their spread to count —
// and the learned prices differ from those by more than the tolerance: one
// or two steps that ran as modelled leave the plans as they were. The
// operator's query controller and the offline run both learn through it.
func Window(declared costmodel.Model, inherited, own []Observation, s Settings) (l Learned, applies bool) {
	all := append(append(make([]Observation, 0, len(inherited)+len(own)), inherited...), own...)
	l = Fit(declared, all, s)
	l, f := Correct(declared, l, own, s)
	slower := f > 1+DefaultTolerance
	evidence := slower || len(all) >= minEvidence || math.Abs(l.Slowdown-1) > DefaultTolerance
	if len(inherited) >= minEvidence {
		return l, true
	}
	return l, evidence && Change(Learned{Model: declared, Margin: s.Unlearned}, l, all) > DefaultTolerance
}

// leadTimeResolution is the least difference from the declared lead time,
// in seconds, that plans act on: a node's arrival is seen on the next
// pass, so a measured lead time can be a few seconds long without the pool
// being slow.
const leadTimeResolution = 30

// PlannedLeadTime is the lead time plans assume, in seconds: the declared
// one, or the learned one when it is materially longer, by more than the
// tolerance and more than leadTimeResolution. A pool that delivers a little
// late against its declared lead time keeps being planned as declared.
func PlannedLeadTime(declared, learned float64) float64 {
	if learned > declared*(1+DefaultTolerance) && learned-declared > leadTimeResolution {
		return learned
	}
	return declared
}
