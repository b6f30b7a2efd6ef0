package planner

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update rewrites the golden workloads and plans of the generated
// workloads, and the plans of the samples. The samples' workloads were
// produced through the API translation the operator uses, which
// internal/spec's tests hold them to, and are never rewritten by this flag.
var update = flag.Bool("update", false, "rewrite testdata/golden: the generated workloads and every plan")

// generatedGolden are the in-package workloads pinned next to the samples:
// larger than any sample, so that a change to the search's selection order
// shows up in them.
func generatedGolden() map[string]Workload {
	edf := generatedWorkload(150, 3)
	edf.Planning.Policy = EarliestDeadline
	partial := generatedWorkload(120, 5)
	for i := range partial.Queries {
		partial.Queries[i].PartialEvery = []float64{0, 0.25, 0.5}[i%3]
	}
	return map[string]Workload{
		"gen-tpch-1x":     tpchWorkload(1, 1),
		"gen-tpch-4x":     tpchWorkload(1, 4),
		"gen-300-llf":     generatedWorkload(300, 1),
		"gen-150-edf":     edf,
		"gen-120-partial": partial,
	}
}

func encodePlan(t *testing.T, doc Document) []byte {
	t.Helper()
	doc.SearchSeconds = 0
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// TestGoldenPlans plans every stored workload (each sample of config/samples
// as the operator translates it, and the generated ones) and compares the
// plan JSON byte for byte with the stored plan.
func TestGoldenPlans(t *testing.T) {
	dir := filepath.Join("testdata", "golden")
	if *update {
		for name, w := range generatedGolden() {
			wj, err := json.MarshalIndent(w, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			doc, err := Plan(w)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name+".workload.json"), append(wj, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name+".plan.json"), encodePlan(t, doc), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.workload.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 9+len(generatedGolden()) {
		t.Fatalf("only %d golden workloads in %s", len(files), dir)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".workload.json")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var w Workload
			if err := json.Unmarshal(raw, &w); err != nil {
				t.Fatal(err)
			}
			doc, err := Plan(w)
			if err != nil {
				t.Fatal(err)
			}
			if *update {
				if err := os.WriteFile(filepath.Join(dir, name+".plan.json"), encodePlan(t, doc), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(filepath.Join(dir, name+".plan.json"))
			if err != nil {
				t.Fatal(err)
			}
			if got := encodePlan(t, doc); !bytes.Equal(got, want) {
				t.Errorf("plan of %s differs from %s.plan.json", name, name)
			}
		})
	}
}
