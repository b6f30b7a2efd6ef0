package learn

import (
	"math"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"

	"github.com/laxity-dev/laxity/internal/costmodel"
)

// declared is shaped like a query of the sample: 12 s of start-up and
// 1.2e-5 s per tuple spread over the nodes for a batch; 5 s and a little
// per input for a merge.
var declared = costmodel.Model{
	Batch: costmodel.Linear{Overhead: 12, Serial: 4e-7, Parallel: 1.2e-5},
	Merge: costmodel.Linear{Overhead: 5, Serial: 0.02, Parallel: 0.2},
}

// run is observations of n steps of kind on nodes nodes with work work,
// each taking truth's duration times factor(i).
func run(truth costmodel.Model, kind Kind, n, nodes int, work float64, factor func(i int) float64) []Observation {
	var out []Observation
	for i := range n {
		o := Observation{Kind: kind, Work: work, Nodes: nodes}
		o.Seconds = seconds(truth, o) * factor(i)
		out = append(out, o)
	}
	return out
}

// shrunk is a kind's factor when n observations of it all ran at f and
// nothing else ran: f shrunk by the prior weight (1) towards the slowdown
// of all steps, itself f shrunk towards 1.
func shrunk(f float64, n float64) float64 {
	all := math.Pow(f, n/(n+1))
	return math.Exp((n*math.Log(f) + math.Log(all)) / (n + 1))
}

func constant(f float64) func(int) float64 { return func(int) float64 { return f } }

// noisy is 1 + N(mean, sd), seeded.
func noisy(seed uint64, mean, sd float64) func(int) float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	return func(int) float64 { return max(1+mean+sd*rng.NormFloat64(), 0.1) }
}

func concat(parts ...[]Observation) []Observation {
	var out []Observation
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestFitIsRobust is the learner's robustness table: each case gives what
// ran and the factor the learned model must be at against the declared one
// for batches and for merges (within tol), and bounds on the margin.
func TestFitIsRobust(t *testing.T) {
	// A batch of 6 files on 2 nodes; a merge of 12 inputs.
	const tuples, inputs = 57000, 12
	varied := func(factor float64) []Observation {
		var out []Observation
		for i, p := range [][2]float64{{2, 1e5}, {2, 4e5}, {4, 4e5}, {10, 4e5}, {10, 8e5}, {4, 1e6}, {2, 2e5}, {14, 6e5}, {20, 1e6}, {4, 5e4}} {
			o := Observation{Kind: Batch, Work: p[1], Nodes: int(p[0])}
			o.Seconds = seconds(declared, o) * factor * (1 + 0.01*float64(i%3-1))
			out = append(out, o)
		}
		return out
	}
	tests := []struct {
		name                 string
		obs                  []Observation
		batch, merge, tol    float64
		minMargin, maxMargin float64
		// check, when set, is a point whose learned duration must be within
		// tol of truth × batch.
		check *Observation
	}{
		{name: "nothing observed: the declared model, no margin", batch: 1, merge: 1, tol: 1e-12},
		{
			name: "as declared", obs: concat(run(declared, Batch, 30, 2, tuples, constant(1)), run(declared, Merge, 5, 2, inputs, constant(1))),
			batch: 1, merge: 1, tol: 1e-9, maxMargin: 0.03,
		},
		{
			name: "one 10x outlier among normal steps moves nothing",
			obs: concat(run(declared, Batch, 15, 2, tuples, constant(1)), run(declared, Batch, 1, 2, tuples, constant(10)),
				run(declared, Batch, 14, 2, tuples, constant(1))),
			batch: 1, merge: 1, tol: 0.01, maxMargin: 0.05,
		},
		{
			name: "one 10x outlier among noisy steps", obs: concat(run(declared, Batch, 20, 2, tuples, noisy(1, 0.3, 0.05)), run(declared, Batch, 1, 2, tuples, constant(10)),
				run(declared, Batch, 20, 2, tuples, noisy(2, 0.3, 0.05))),
			batch: 1.3, merge: 1.3, tol: 0.03, minMargin: 0.01, maxMargin: 0.15,
		},
		{
			name: "a single observation: learned, with a wide allowance", obs: run(declared, Batch, 1, 2, tuples, constant(1.5)),
			batch: shrunk(1.5, 1), merge: math.Pow(1.5, 0.5), tol: 1e-6, minMargin: 0.1,
		},
		{
			name: "too few samples to fit: the declared model scaled", obs: run(declared, Batch, 3, 2, tuples, constant(2)),
			batch: shrunk(2, 3), merge: math.Pow(2, 0.75), tol: 1e-3, minMargin: 0.05,
		},
		{
			name: "a step on another node count", obs: concat(run(declared, Batch, 20, 2, tuples, constant(1.3)), run(declared, Batch, 1, 20, tuples, constant(1.3))),
			batch: 1.3, merge: 1.3, tol: 0.02, maxMargin: 0.05,
			check: &Observation{Kind: Batch, Work: tuples, Nodes: 20},
		},
		{
			name:  "ten times slower than declared, consistently, is learned",
			obs:   concat(run(declared, Batch, 30, 2, tuples, constant(10)), run(declared, Merge, 10, 2, inputs, constant(10))),
			batch: 10, merge: 10, tol: 0.05, maxMargin: 0.05,
		},
		{
			name:  "ten times faster than declared, consistently, is learned",
			obs:   concat(run(declared, Batch, 30, 2, tuples, constant(0.1)), run(declared, Merge, 10, 2, inputs, constant(0.1))),
			batch: 0.1, merge: 0.1, tol: 0.05, maxMargin: 0.05,
		},
		{
			name: "varied work and nodes: the coefficients are refitted", obs: varied(3),
			batch: 3, merge: math.Pow(3, 10.0/11), tol: 0.05, maxMargin: 0.1,
			check: &Observation{Kind: Batch, Work: 3e5, Nodes: 14},
		},
		{
			name: "noise around a 1.3x slowdown", obs: run(declared, Batch, 60, 2, tuples, noisy(3, 0.3, 0.1)),
			batch: 1.3, merge: 1.3, tol: 0.04, minMargin: 0.01, maxMargin: 0.1,
		},
		{
			name:  "the world changed mid-stream: recent steps win",
			obs:   concat(run(declared, Batch, 60, 2, tuples, constant(1)), run(declared, Batch, 60, 2, tuples, constant(2))),
			batch: 2, merge: 2, tol: 0.03,
		},
		{
			name:  "merges and batches are learned separately",
			obs:   concat(run(declared, Batch, 30, 2, tuples, constant(1)), run(declared, Merge, 30, 2, inputs, constant(3))),
			batch: 1, merge: 3, tol: 0.05,
		},
		{
			name: "bad observations are skipped",
			obs: concat(run(declared, Batch, 10, 2, tuples, constant(1.2)), []Observation{
				{Kind: Batch, Work: tuples, Nodes: 0, Seconds: 1e4}, {Kind: Batch, Work: tuples, Nodes: 2, Seconds: math.NaN()},
				{Kind: Batch, Work: tuples, Nodes: 2, Seconds: math.Inf(1)}, {Kind: Batch, Work: -1, Nodes: 2, Seconds: 1e4},
				{Kind: Merge, Work: 3, Nodes: -4, Seconds: 1e4}, {Kind: Batch, Work: tuples, Nodes: 2, Seconds: 0},
				{Kind: Kind(7), Work: tuples, Nodes: 2, Seconds: 1e4},
			}),
			batch: shrunk(1.2, 10), merge: math.Pow(1.2, 10.0/11), tol: 1e-3,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Fit(declared, tc.obs, Defaults)
			for _, c := range []struct {
				kind Kind
				work float64
				want float64
			}{{Batch, tuples, tc.batch}, {Merge, inputs, tc.merge}} {
				o := Observation{Kind: c.kind, Work: c.work, Nodes: 2}
				if f := seconds(got.Model, o) / seconds(declared, o); math.Abs(f-c.want) > tc.tol*c.want {
					t.Errorf("kind %d: learned %.4f x declared, want %.4f ± %.0f%%", c.kind, f, c.want, 100*tc.tol)
				}
			}
			if tc.check != nil {
				if f := seconds(got.Model, *tc.check) / seconds(declared, *tc.check); math.Abs(f-tc.batch) > tc.tol*tc.batch {
					t.Errorf("on %d nodes: learned %.4f x declared, want %.4f", tc.check.Nodes, f, tc.batch)
				}
			}
			if got.Margin < tc.minMargin || (tc.maxMargin > 0 && got.Margin > tc.maxMargin) {
				t.Errorf("margin %.4f, want within [%.2f, %.2f]", got.Margin, tc.minMargin, tc.maxMargin)
			}
			if len(tc.obs) == 0 && (got.Margin != 0 || got.Slowdown != 1 || got.Model != declared) {
				t.Errorf("nothing observed, learned %+v", got)
			}
		})
	}
}

// A cluster whose start-up is three times the declared one but whose
// per-tuple cost is as declared is not a uniform slowdown: with varied
// work on several node counts the three coefficients are refitted, and the
// learned model holds for a batch size not observed.
func TestFitLearnsAShape(t *testing.T) {
	truth := declared
	truth.Batch.Overhead *= 3
	var obs []Observation
	for i, p := range [][2]float64{{2, 1e5}, {2, 4e5}, {4, 4e5}, {10, 4e5}, {10, 8e5}, {4, 1e6}, {2, 2e5}, {14, 6e5}, {20, 1e6}, {4, 5e4}, {2, 6e5}, {4, 2e5}} {
		o := Observation{Kind: Batch, Work: p[1], Nodes: int(p[0])}
		o.Seconds = seconds(truth, o) * (1 + 0.01*float64(i%3-1))
		obs = append(obs, o)
	}
	got := Fit(declared, obs, Defaults)
	for _, p := range []Observation{{Kind: Batch, Work: 1e4, Nodes: 2}, {Kind: Batch, Work: 4e6, Nodes: 20}} {
		if f := seconds(got.Model, p) / seconds(truth, p); math.Abs(f-1) > 0.08 {
			t.Errorf("at %g tuples on %d nodes the learned model is %.3f x the truth", p.Work, p.Nodes, f)
		}
	}
	// Noise around the declared shape is not refitted.
	noise := noisy(9, 0.15, 0.1)
	for i := range obs {
		obs[i].Seconds = seconds(declared, obs[i]) * noise(i)
	}
	got = Fit(declared, obs, Defaults)
	ratio := got.Model.Batch.Overhead / declared.Batch.Overhead
	if p := got.Model.Batch.Parallel / declared.Batch.Parallel; math.Abs(p-ratio) > 1e-9 {
		t.Errorf("noise was fitted: overhead %.3f x, parallel %.3f x declared", ratio, p)
	}
}

func TestFitBoundsTheModel(t *testing.T) {
	got := Fit(declared, run(declared, Batch, 40, 2, 57000, constant(100)), Defaults)
	if got.Slowdown > Defaults.Bound || got.Model.Batch.Overhead > Defaults.Bound*declared.Batch.Overhead*(1+1e-9) {
		t.Errorf("100x slower steps learned %+v, beyond the bound %g", got, Defaults.Bound)
	}
}

func TestLeadTime(t *testing.T) {
	tests := []struct {
		name     string
		declared float64
		observed []float64
		want     float64
	}{
		{name: "nothing observed", declared: 360, want: 360},
		{name: "as declared", declared: 360, observed: []float64{360, 360, 360}, want: 360},
		{name: "early nodes promise nothing", declared: 360, observed: []float64{100, 120}, want: 360},
		{name: "twice as late", declared: 360, observed: []float64{720, 720, 720, 720}, want: 720},
		{name: "bounded", declared: 10, observed: []float64{1e6}, want: 100},
		{name: "bad values skipped", declared: 360, observed: []float64{math.NaN(), -5, math.Inf(1), 400}, want: 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := LeadTime(tc.declared, tc.observed, Defaults); got != tc.want {
				t.Errorf("LeadTime = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestChange(t *testing.T) {
	a := Learned{Model: declared}
	b := Learned{Model: declared.Scaled(1.1)}
	c := Learned{Model: declared, Margin: 0.02}
	points := []Observation{{Kind: Batch, Work: 57000, Nodes: 2}, {Kind: Merge, Work: 12, Nodes: 4}}
	for _, tc := range []struct {
		name     string
		old, new Learned
		points   []Observation
		want     float64
	}{
		{"same", a, a, nil, 0},
		{"10% slower on the grid", a, b, nil, 0.1},
		{"10% slower at the points", a, b, points, 0.1},
		{"a margin counts", a, c, points, 0.02},
	} {
		if got := Change(tc.old, tc.new, tc.points); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: Change = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := Change(a, c, nil); got <= DefaultTolerance/10 || got > DefaultTolerance {
		t.Errorf("a 2%% margin changes durations by %v", got)
	}
}

func TestWindowSlowdown(t *testing.T) {
	obs := concat(run(declared, Batch, 6, 2, 57000, constant(1.4)), run(declared, Batch, 1, 2, 57000, constant(10)),
		[]Observation{{Kind: Batch, Nodes: 0, Work: 1, Seconds: 1}})
	f, n := WindowSlowdown(declared, obs)
	if math.Abs(f-1.4) > 1e-9 || n != 7 {
		t.Errorf("WindowSlowdown = %v on %d, want 1.4 on 7", f, n)
	}
	if f, n := WindowSlowdown(declared, nil); f != 1 || n != 0 {
		t.Errorf("nothing observed: %v on %d", f, n)
	}
	if got := Slowdown([]float64{1.2, math.NaN(), -1, math.Inf(1), 1.2}); got != 1.2 {
		t.Errorf("Slowdown = %v", got)
	}
}

// modelGen draws a valid model with every coefficient positive.
func modelGen() *rapid.Generator[costmodel.Model] {
	return rapid.Custom(func(t *rapid.T) costmodel.Model {
		l := func(name string) costmodel.Linear {
			return costmodel.Linear{
				Overhead: rapid.Float64Range(0.1, 100).Draw(t, name+"Overhead"),
				Serial:   rapid.Float64Range(1e-9, 1e-5).Draw(t, name+"Serial"),
				Parallel: rapid.Float64Range(1e-8, 1e-4).Draw(t, name+"Parallel"),
			}
		}
		return costmodel.Model{Batch: l("batch"), Merge: l("merge")}
	})
}

func observationsGen() *rapid.Generator[[]Observation] {
	return rapid.SliceOfN(rapid.Custom(func(t *rapid.T) Observation {
		return Observation{
			Kind:    Kind(rapid.IntRange(0, 1).Draw(t, "kind")),
			Work:    rapid.Float64Range(0, 1e8).Draw(t, "work"),
			Nodes:   rapid.IntRange(1, 64).Draw(t, "nodes"),
			Seconds: rapid.Float64Range(0.01, 1e5).Draw(t, "seconds"),
		}
	}), 0, 80)
}

func TestFitProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := modelGen().Draw(t, "declared")
		obs := observationsGen().Draw(t, "obs")
		got := Fit(m, obs, Defaults)
		if again := Fit(m, obs, Defaults); again != got {
			t.Fatalf("Fit is not deterministic: %+v then %+v", got, again)
		}
		if !(got.Margin >= 0) || got.Margin > Defaults.MaxMargin {
			t.Fatalf("margin %v", got.Margin)
		}
		if !(got.TailMargin >= 0) || got.TailMargin > Defaults.MaxMargin {
			t.Fatalf("tail margin %v", got.TailMargin)
		}
		if !(got.Slowdown > 0) || math.IsInf(got.Slowdown, 0) {
			t.Fatalf("slowdown %v", got.Slowdown)
		}
		for _, nodes := range []int{1, 3, 64} {
			for _, work := range []float64{1, 1e4, 1e7} {
				for _, k := range []Kind{Batch, Merge} {
					d := seconds(got.Planned(), Observation{Kind: k, Work: work, Nodes: nodes})
					if !(d > 0) || math.IsInf(d, 0) {
						t.Fatalf("learned %+v gives %v s for kind %d, work %g on %d nodes", got, d, k, work, nodes)
					}
				}
			}
		}
	})
}

// Observations generated exactly from the declared model times c are
// learned as c, whatever the work and the nodes.
func TestFitRecoversAFactor(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := modelGen().Draw(t, "declared")
		c := rapid.Float64Range(0.2, 5).Draw(t, "c")
		obs := observationsGen().Draw(t, "points")
		if len(obs) < 5 {
			return
		}
		for i := range obs {
			obs[i].Seconds = 0
			obs[i].Seconds = seconds(m, obs[i]) * c
		}
		got := Fit(m, obs, Settings{PriorWeight: 0, HalfLife: Defaults.HalfLife, Bound: 10, MinFitSamples: 8, Quantile: 0.85, Allowance: 1, PriorSpread: 0.1, MaxMargin: 1, LeadQuantile: 0.9})
		if math.Abs(got.Slowdown-c) > 0.02*c {
			t.Fatalf("slowdown %v, want %v", got.Slowdown, c)
		}
		for _, o := range obs {
			if f := seconds(got.Model, o) / seconds(m, o); math.Abs(f-c) > 0.02*c {
				t.Fatalf("learned %v x declared at %+v, want %v", f, o, c)
			}
		}
	})
}

func FuzzFit(f *testing.F) {
	f.Add(1.0, 57000.0, 2, 30.0, 2.0, 12.0, 4, 8.0, uint8(3))
	f.Add(math.NaN(), -1.0, 0, math.Inf(1), 0.0, 0.0, -3, -1.0, uint8(0))
	f.Fuzz(func(t *testing.T, scale, work float64, nodes int, secs, scale2, work2 float64, nodes2 int, secs2 float64, n uint8) {
		var obs []Observation
		for i := range int(n % 40) {
			if i%2 == 0 {
				obs = append(obs, Observation{Kind: Batch, Work: work * float64(i+1), Nodes: nodes + i%3, Seconds: secs * scale})
			} else {
				obs = append(obs, Observation{Kind: Kind(i % 3), Work: work2, Nodes: nodes2, Seconds: secs2 * scale2 * float64(i)})
			}
		}
		got := Fit(declared, obs, Defaults)
		if !(got.Margin >= 0) || !(got.Slowdown > 0) || math.IsInf(got.Slowdown, 0) {
			t.Fatalf("learned %+v", got)
		}
		if err := got.Model.Batch.Validate(); err != nil {
			t.Fatalf("learned batch model %+v: %v", got.Model.Batch, err)
		}
		if err := got.Model.Merge.Validate(); err != nil {
			t.Fatalf("learned merge model %+v: %v", got.Model.Merge, err)
		}
		_ = Change(Learned{Model: declared}, got, obs)
		_ = LeadTime(scale, []float64{secs, secs2}, Defaults)
		_, _ = WindowSlowdown(got.Model, obs)
	})
}

func BenchmarkFit(b *testing.B) {
	obs := concat(run(declared, Batch, 56, 2, 57000, noisy(1, 0.15, 0.1)), run(declared, Batch, 4, 4, 114000, noisy(2, 0.15, 0.1)),
		run(declared, Merge, 4, 2, 12, noisy(3, 0.15, 0.1)))
	b.ReportAllocs()
	for b.Loop() {
		Fit(declared, obs, Defaults)
	}
}

// Whether what a window learned replaces the declared model with the
// unlearned margin: within a first window only when its steps say
// something the declared model does not, by more than the tolerance; once
// earlier windows left enough observations, always, even where the learned
// model and margin price steps as the unlearned margin does.
func TestWindowApplies(t *testing.T) {
	s := Defaults
	s.Unlearned = DefaultMargin
	spread := func(i int) float64 { return []float64{1.05, 1.25}[i%2] }
	tests := []struct {
		name           string
		inherited, own []Observation
		want           bool
	}{
		{"two steps as modelled", nil, run(declared, Batch, 2, 2, 57000, constant(1)), false},
		{"steps 40% slower", nil, run(declared, Batch, 3, 2, 57000, constant(1.4)), true},
		{"earlier windows as modelled", run(declared, Batch, 12, 2, 57000, constant(1)), nil, true},
		{"earlier windows 15% slower, spread by 10%", run(declared, Batch, 24, 2, 57000, spread), run(declared, Batch, 2, 2, 57000, spread), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, applies := Window(declared, tt.inherited, tt.own, s)
			if applies != tt.want {
				t.Errorf("applies = %v, want %v (learned %+v)", applies, tt.want, l)
			}
		})
	}
}

// TestTailMargin: the tail is priced for TailDeviations standard deviations
// of the steps' spread, over the margin every step has, so it grows with
// the spread and with TailDeviations and is none without either.
func TestTailMargin(t *testing.T) {
	steps := func(f func(int) float64) []Observation {
		return concat(run(declared, Batch, 60, 4, 1e6, f), run(declared, Merge, 20, 4, 10, f))
	}
	calm, noisy10, noisy20 := steps(constant(1.15)), steps(noisy(1, 0.15, 0.1)), steps(noisy(1, 0.15, 0.2))
	without := Defaults
	without.TailDeviations = 0
	for _, c := range []struct {
		name     string
		obs      []Observation
		s        Settings
		min, max float64
	}{
		// Steps that do not spread have no rare draw to cover: the prior
		// spread (10%) is the margins' allowance, not the tail's.
		{"no spread", calm, Defaults, 0, 1e-9},
		// A 10% spread (1.15 ± 0.1, about 8.7% of the learned model): the
		// margin covers about the 70th percentile, the tail two standard
		// deviations, some 11% more of it.
		{"a 10% spread", noisy10, Defaults, 0.06, 0.16},
		{"a 20% spread", noisy20, Defaults, 0.12, 0.35},
		{"no tail deviations", noisy10, without, 0, 0},
	} {
		l := Fit(declared, c.obs, c.s)
		if !(l.TailMargin >= c.min && l.TailMargin <= c.max) {
			t.Errorf("%s: tail margin %.4f (margin %.4f), want within [%g, %g]", c.name, l.TailMargin, l.Margin, c.min, c.max)
		}
	}
}
