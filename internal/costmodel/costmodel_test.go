package costmodel

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestSeconds(t *testing.T) {
	l := Linear{Overhead: 25, Serial: 2e-8, Parallel: 2e-5}
	// 25 + 1e6 * (2e-8 + 2e-5/4) = 25 + 0.02 + 5.
	if got := l.Seconds(4, 1e6); math.Abs(got-30.02) > 1e-9 {
		t.Errorf("Seconds(4, 1e6) = %v, want 30.02", got)
	}
	m := Model{Batch: l, Merge: Linear{Overhead: 8, Serial: 0.05, Parallel: 0.4}}
	if got := m.MergeSeconds(2, 10); math.Abs(got-(8+10*(0.05+0.2))) > 1e-9 {
		t.Errorf("MergeSeconds(2, 10) = %v", got)
	}
	if got := m.BatchSeconds(4, 1e6); got != l.Seconds(4, 1e6) {
		t.Errorf("BatchSeconds = %v, want Seconds", got)
	}
}

// samplesOf measures a known model exactly.
func samplesOf(l Linear, points [][2]float64) []Sample {
	var out []Sample
	for _, p := range points {
		nodes := int(p[0])
		out = append(out, Sample{Nodes: nodes, Work: p[1], Seconds: l.Seconds(nodes, p[1])})
	}
	return out
}

func TestFitRecoversTheModel(t *testing.T) {
	grid := [][2]float64{{2, 1e6}, {2, 4e6}, {4, 4e6}, {10, 4e6}, {10, 8e6}}
	tests := []struct {
		name string
		want Linear
	}{
		{"all three terms", Linear{Overhead: 10, Serial: 2e-7, Parallel: 1.2e-5}},
		{"no serial part", Linear{Overhead: 25, Parallel: 2e-5}},
		{"no overhead", Linear{Serial: 1e-6, Parallel: 4e-6}},
	}
	approx := cmpopts.EquateApprox(1e-6, 1e-12)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Fit(samplesOf(tc.want, grid))
			if err != nil {
				t.Fatalf("Fit: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, approx); diff != "" {
				t.Errorf("fit (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFitWithNoiseStaysClose(t *testing.T) {
	truth := Linear{Overhead: 16.5, Serial: 1e-7, Parallel: 2e-5}
	samples := samplesOf(truth, [][2]float64{{2, 1e6}, {2, 2e6}, {4, 2e6}, {4, 4e6}, {10, 4e6}, {10, 8e6}, {20, 8e6}})
	// ±0.2 s of run-to-run variation, alternating in sign.
	for i := range samples {
		samples[i].Seconds += 0.2 * float64(1-2*(i%2))
	}
	got, err := Fit(samples)
	if err != nil {
		t.Fatalf("Fit: %v", err)
	}
	for _, s := range samples {
		if d := math.Abs(got.Seconds(s.Nodes, s.Work) - truth.Seconds(s.Nodes, s.Work)); d > 0.5 {
			t.Errorf("fitted model is %.2f s off at %d nodes, %g tuples", d, s.Nodes, s.Work)
		}
	}
}

func TestFitRejects(t *testing.T) {
	good := samplesOf(Linear{Overhead: 10, Serial: 2e-7, Parallel: 1.2e-5}, [][2]float64{{2, 1e6}, {4, 4e6}, {10, 8e6}})
	tests := []struct {
		name    string
		samples []Sample
		want    string
	}{
		{"too few", good[:2], "2 samples cannot fit 3 coefficients"},
		{"one node count", []Sample{{2, 1e6, 10}, {2, 2e6, 20}, {2, 3e6, 30}}, "vary both the work and the node count"},
		{"negative serial", []Sample{{2, 1e6, 20}, {2, 4e6, 40}, {4, 4e6, 15}, {10, 8e6, 12}}, "negative"},
		{"zero nodes", append([]Sample{{0, 1, 1}}, good...), "sample 0: nodes must be between 1 and 100000"},
		{"too many nodes", append([]Sample{{100001, 1, 1}}, good...), "sample 0: nodes must be between 1 and 100000"},
		{"NaN seconds", append([]Sample{{2, 1, math.NaN()}}, good...), "sample 0: seconds"},
		{"infinite seconds", append([]Sample{{2, 1, math.Inf(1)}}, good...), "sample 0: seconds"},
		{"seconds beyond the bound", append([]Sample{{2, 1, 1.5e7}}, good...), "sample 0: seconds must be a number between 0 and 1e+07"},
		{"negative work", append([]Sample{{2, -1, 1}}, good...), "sample 0: work"},
		{"NaN work", append([]Sample{{2, math.NaN(), 1}}, good...), "sample 0: work"},
		{"work beyond the bound", append([]Sample{{2, 2e15, 1}}, good...), "sample 0: work must be a number between 0 and 1e+15"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Fit(tc.samples)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		l    Linear
		want string
	}{
		{Linear{Overhead: 1}, ""},
		{Linear{}, "every coefficient is zero"},
		{Linear{Overhead: -1, Parallel: 1}, "overheadSeconds is negative"},
		{Linear{Serial: math.Inf(1)}, "serial is not a finite number"},
		{Linear{Parallel: math.NaN()}, "parallel is not a finite number"},
	} {
		err := tc.l.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.l, err, tc.want)
		}
	}
}

func TestCheckBounds(t *testing.T) {
	if err := (Linear{Overhead: 1e6, Serial: 1e6, Parallel: 1e6}).CheckBounds(1e6); err != nil {
		t.Errorf("coefficients at the bound: %v", err)
	}
	err := (Linear{Overhead: 1, Serial: 2e6}).CheckBounds(1e6)
	if err == nil || !strings.Contains(err.Error(), "serial is 2e+06; at most 1e+06") {
		t.Errorf("serial beyond the bound: got %v", err)
	}
}

// FuzzFit: whatever the samples, Fit either fails or returns a model whose
// coefficients are finite and non-negative.
func FuzzFit(f *testing.F) {
	f.Add(2, 1e6, 10.0, 4, 4e6, 20.0, 10, 8e6, 12.0)
	f.Add(1, 1e15, 1e7, 100000, 1e15, 1e7, 1, 0.0, 0.0)
	f.Add(1, 1e15, 1e-9, 100000, 1.0, 1e7, 50000, 5e14, 3.0)
	f.Add(3, 1.0, 1e7, 7, 1e15, 0.0, 100000, 1e-300, 1e7)
	f.Fuzz(func(t *testing.T, n1 int, w1, s1 float64, n2 int, w2, s2 float64, n3 int, w3, s3 float64) {
		fit, err := Fit([]Sample{{n1, w1, s1}, {n2, w2, s2}, {n3, w3, s3}, {n1, w2, s3}})
		if err != nil {
			return
		}
		for _, c := range []float64{fit.Overhead, fit.Serial, fit.Parallel} {
			if !(c >= 0) || math.IsInf(c, 0) {
				t.Fatalf("Fit returned %+v without an error", fit)
			}
		}
	})
}

func TestOnNodesIsTheModel(t *testing.T) {
	m := Model{Batch: Linear{Overhead: 1.3, Serial: 0.0007, Parallel: 0.011}, Merge: Linear{Overhead: 2.1, Serial: 0.3, Parallel: 0.7}}
	for _, nodes := range []int{1, 3, 7, 64} {
		on := m.OnNodes(nodes)
		for _, work := range []int{0, 1, 13, 100000} {
			if got, want := on.BatchOverhead()+float64(work)*on.BatchPerTuple(), m.BatchSeconds(nodes, int64(work)); got != want {
				t.Errorf("batch of %d on %d nodes: %v, the model says %v", work, nodes, got, want)
			}
			if got, want := on.MergeSeconds(work), m.MergeSeconds(nodes, work); got != want {
				t.Errorf("merge of %d on %d nodes: %v, the model says %v", work, nodes, got, want)
			}
		}
	}
}

// A weight of zero takes a sample out of the fit; bad weights are errors.
func TestFitWeighted(t *testing.T) {
	want := Linear{Overhead: 10, Serial: 2e-7, Parallel: 1.2e-5}
	samples := samplesOf(want, [][2]float64{{2, 1e6}, {2, 4e6}, {4, 4e6}, {10, 4e6}, {10, 8e6}})
	samples = append(samples, Sample{Nodes: 2, Work: 1e6, Seconds: 1000})
	weights := []float64{1, 1, 1, 1, 1, 0}
	got, err := FitWeighted(samples, weights)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(1e-6, 1e-12)); diff != "" {
		t.Errorf("fit (-want +got):\n%s", diff)
	}
	if plain, err := Fit(samples); err == nil && cmp.Equal(want, plain, cmpopts.EquateApprox(1e-6, 1e-12)) {
		t.Error("the outlier did not move the unweighted fit: the test proves nothing")
	}
	for _, bad := range [][]float64{{1, 1}, {1, 1, 1, 1, 1, -1}, {1, 1, 1, 1, 1, math.NaN()}, {0, 0, 0, 0, 1, 1}} {
		if _, err := FitWeighted(samples, bad); err == nil {
			t.Errorf("weights %v were accepted", bad)
		}
	}
}
