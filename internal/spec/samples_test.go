package spec_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/manifest"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/spec"
)

// update writes the translation of every sample as its pinned workload;
// then plan them with the planner's golden test's -update.
var update = flag.Bool("update", false, "rewrite the samples' pinned workloads in internal/planner/testdata/golden")

// TestSamplesTranslateAsPinned translates every schedule of config/samples
// as the operator and `laxity plan` do (origin: the earliest window start)
// and compares the planner's input, field by field, with the workload pinned
// next to its plan in internal/planner/testdata/golden, which the planner's
// golden test plans. Together they pin every sample's plan from the YAML
// on.
func TestSamplesTranslateAsPinned(t *testing.T) {
	samples, err := filepath.Glob(filepath.Join("..", "..", "config", "samples", "*.yaml"))
	if err != nil || len(samples) == 0 {
		t.Fatalf("no samples found: %v", err)
	}
	golden := filepath.Join("..", "planner", "testdata", "golden")
	for _, path := range samples {
		set, err := manifest.Load(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, s := range set.Schedules {
			name := strings.TrimSuffix(filepath.Base(path), ".yaml") + "-" + s.Object.Name
			t.Run(name, func(t *testing.T) {
				var queries []laxityv1alpha1.IntermittentQuery
				for _, q := range set.QueriesFor(s.Object.Namespace, s.Object.Name) {
					queries = append(queries, *q.Object)
				}
				if len(queries) == 0 {
					t.Skip("no queries")
				}
				origin := queries[0].Spec.Window.Start.Time
				for _, q := range queries {
					if start := q.Spec.Window.Start.Time; start.Before(origin) {
						origin = start
					}
				}
				w, err := spec.Workload(s.Object, queries, origin.UTC())
				if err != nil {
					t.Fatal(err)
				}
				if *update {
					data, err := json.MarshalIndent(w, "", "  ")
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(golden, name+".workload.json"), append(data, '\n'), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				data, err := os.ReadFile(filepath.Join(golden, name+".workload.json"))
				if err != nil {
					t.Fatalf("no pinned workload for %s: %v", name, err)
				}
				var want planner.Workload
				if err := json.Unmarshal(data, &want); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, w); diff != "" {
					t.Errorf("the translation of %s differs from the pinned workload (-pinned +now):\n%s", name, diff)
				}
			})
		}
	}
}
