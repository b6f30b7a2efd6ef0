package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sigsyaml "sigs.k8s.io/yaml"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/structured/keypaths"
)

// listedPlan is an item of plan -o json read back: its kind and metadata,
// and the plan document whose fields follow them.
type listedPlan struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Metadata   scheduleMeta `json:"metadata"`
	planner.Document
}

// plansIn reads plan -o json's output: a PlanList, whatever the number of
// plans.
func plansIn(t *testing.T, out string) []listedPlan {
	t.Helper()
	var list objectList[listedPlan]
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("output is not a JSON list: %v\n%.300s", err, out)
	}
	if list.APIVersion != "laxity.dev/v1alpha1" || list.Kind != "PlanList" || list.Items == nil {
		t.Fatalf("apiVersion %q, kind %q, items %v; want laxity.dev/v1alpha1, PlanList and a list:\n%.300s", list.APIVersion, list.Kind, list.Items, out)
	}
	for i, p := range list.Items {
		if p.APIVersion != "laxity.dev/v1alpha1" || p.Kind != "Plan" || p.Metadata.Name == "" || p.Metadata.Namespace == "" {
			t.Errorf("item %d: apiVersion %q, kind %q, metadata %+v; want laxity.dev/v1alpha1, Plan and the schedule's namespace and name", i, p.APIVersion, p.Kind, p.Metadata)
		}
	}
	return list.Items
}

// onePlanIn is the only plan plan -o json printed.
func onePlanIn(t *testing.T, out string) listedPlan {
	t.Helper()
	plans := plansIn(t, out)
	if len(plans) != 1 {
		t.Fatalf("%d plans, want 1:\n%.300s", len(plans), out)
	}
	return plans[0]
}

// comparisonsIn reads plan --compare -o json's output.
func comparisonsIn(t *testing.T, out string) []comparisonItem {
	t.Helper()
	var list objectList[comparisonItem]
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("output is not a JSON list: %v\n%.300s", err, out)
	}
	if list.APIVersion != "laxity.dev/v1alpha1" || list.Kind != "PlanComparisonList" || list.Items == nil {
		t.Fatalf("apiVersion %q, kind %q, items %v; want laxity.dev/v1alpha1, PlanComparisonList and a list", list.APIVersion, list.Kind, list.Items)
	}
	for i, c := range list.Items {
		if c.APIVersion != "laxity.dev/v1alpha1" || c.Kind != "PlanComparison" || c.Metadata.Name == "" || c.Metadata.Namespace == "" {
			t.Errorf("item %d: apiVersion %q, kind %q, metadata %+v; want laxity.dev/v1alpha1, PlanComparison and the schedule's namespace and name", i, c.APIVersion, c.Kind, c.Metadata)
		}
	}
	return list.Items
}

// twoRecurringOnlySchedules is the recurring sample twice, in two
// namespaces: without --origin neither is planned.
func twoRecurringOnlySchedules(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(samplesDir, "recurring.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	other := strings.ReplaceAll(string(raw), "namespace: analytics", "namespace: finance")
	if other == string(raw) {
		t.Fatal("the recurring sample is no longer in namespace analytics")
	}
	path := filepath.Join(t.TempDir(), "two.yaml")
	if err := os.WriteFile(path, []byte(string(raw)+"\n---\n"+other), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// -o json and -o yaml print a list for no, one and several schedules, each
// item naming its schedule, in the order planned.
func TestPlanListShape(t *testing.T) {
	none := twoRecurringOnlySchedules(t)
	tests := []struct {
		name string
		args []string
		want []scheduleMeta
	}{
		{"no schedule planned", []string{"-f", none}, []scheduleMeta{}},
		{"one schedule", []string{"-f", filepath.Join(samplesDir, "tpch.yaml")}, []scheduleMeta{{Name: "tpch", Namespace: "analytics"}}},
		{"one of several, chosen", []string{"-f", samplesDir, "--schedule", "observability/events"}, []scheduleMeta{{Name: "events", Namespace: "observability"}}},
		{"several schedules", []string{"-f", filepath.Join(samplesDir, "tpch.yaml"), "-f", filepath.Join(samplesDir, "three-queries.yaml")},
			// In the order of their files' names, as planned.
			[]scheduleMeta{{Name: "events", Namespace: "observability"}, {Name: "tpch", Namespace: "analytics"}}},
	}
	for _, tc := range tests {
		for _, compare := range []bool{false, true} {
			args := append([]string{"plan"}, tc.args...)
			if compare {
				args = append(args, "--compare")
			}
			t.Run(fmt.Sprintf("%s, compare %v", tc.name, compare), func(t *testing.T) {
				code, asJSON, errOut := run(t, append(args, "-o", "json")...)
				if code != exitOK {
					t.Fatalf("exit %d, stderr:\n%s", code, errOut)
				}
				got := []scheduleMeta{}
				if compare {
					for _, c := range comparisonsIn(t, asJSON) {
						got = append(got, c.Metadata)
					}
				} else {
					for _, p := range plansIn(t, asJSON) {
						got = append(got, p.Metadata)
					}
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("schedules (-want +got):\n%s", diff)
				}
				code, asYAML, errOut := run(t, append(args, "-o", "yaml")...)
				if code != exitOK {
					t.Fatalf("-o yaml: exit %d, stderr:\n%s", code, errOut)
				}
				converted, err := sigsyaml.YAMLToJSON([]byte(asYAML))
				if err != nil {
					t.Fatalf("-o yaml does not parse: %v\n%.300s", err, asYAML)
				}
				if strip := stripSearchSeconds; !compare {
					if strip(t, string(converted)) != strip(t, asJSON) {
						t.Errorf("-o yaml and -o json differ")
					}
				} else if compactJSON(t, string(converted)) != compactJSON(t, asJSON) {
					t.Errorf("-o yaml and -o json differ")
				}
			})
		}
	}
}

// Every object of -o yaml has its keys in the order -o json has them.
func TestStructuredOutputKeyOrder(t *testing.T) {
	tpch := filepath.Join(samplesDir, "tpch.yaml")
	for _, args := range [][]string{
		{"plan", "-f", tpch},
		{"plan", "-f", "testdata/infeasible.yaml"},
		{"plan", "-f", tpch, "--compare"},
		{"plan", "-f", twoRecurringOnlySchedules(t)},
		{"version"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, asJSON, _ := run(t, append(args, "-o", "json")...)
			_, asYAML, _ := run(t, append(args, "-o", "yaml")...)
			jsonKeys, yamlKeys := jsonKeyOrder(t, asJSON), yamlKeyOrder(t, asYAML)
			if len(jsonKeys) == 0 {
				t.Fatalf("no keys in -o json:\n%.300s", asJSON)
			}
			if diff := cmp.Diff(jsonKeys, yamlKeys); diff != "" {
				t.Errorf("keys of -o json (-) and -o yaml (+) in document order differ:\n%s", diff)
			}
		})
	}
	// The list's own keys come as kubectl's object keys do: apiVersion and
	// kind first.
	_, asJSON, _ := run(t, "plan", "-f", tpch, "-o", "json")
	keys := jsonKeyOrder(t, asJSON)
	if want := []string{"apiVersion", "kind", "items", "items.apiVersion", "items.kind", "items.metadata", "items.metadata.name", "items.metadata.namespace", "items.origin"}; !slices.Equal(keys[:len(want)], want) {
		t.Errorf("keys begin %v, want %v", keys[:len(want)], want)
	}
}

// jsonKeyOrder is every key of doc, as its dotted path, in the order the
// text has them.
func jsonKeyOrder(t *testing.T, doc string) []string {
	t.Helper()
	keys, err := keypaths.JSON([]byte(doc), ".")
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// yamlKeyOrder is jsonKeyOrder for YAML.
func yamlKeyOrder(t *testing.T, doc string) []string {
	t.Helper()
	keys, err := keypaths.YAML([]byte(doc), ".")
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// An infeasible candidate has no cost, executable cost or largest pool:
// the search never priced it. A feasible one has all three.
func TestPlanInfeasibleCandidatesPrintNoCost(t *testing.T) {
	for _, file := range []string{"testdata/infeasible.yaml", filepath.Join(samplesDir, "tpch.yaml")} {
		for _, format := range []string{"json", "yaml"} {
			_, out, errOut := run(t, "plan", "-f", file, "-o", format)
			data := []byte(out)
			if format == "yaml" {
				var err error
				if data, err = sigsyaml.YAMLToJSON(data); err != nil {
					t.Fatalf("%s -o yaml: %v", file, err)
				}
			}
			var list struct {
				Items []struct {
					Candidates []map[string]any `json:"candidates"`
				} `json:"items"`
			}
			if err := json.Unmarshal(data, &list); err != nil || len(list.Items) != 1 {
				t.Fatalf("%s -o %s: not a list of one plan (%v); stderr:\n%s", file, format, err, errOut)
			}
			feasible := 0
			for i, c := range list.Items[0].Candidates {
				priced := 0
				for _, k := range []string{"cost", "executableCost", "maxNodes"} {
					if _, ok := c[k]; ok {
						priced++
					}
				}
				switch {
				case c["feasible"] == true && priced != 3:
					t.Errorf("%s -o %s: feasible candidate %d lacks a price: %v", file, format, i, c)
				case c["feasible"] == false && priced != 0:
					t.Errorf("%s -o %s: infeasible candidate %d has a price: %v", file, format, i, c)
				}
				if c["feasible"] == true {
					feasible++
				}
			}
			if wantSome := file != "testdata/infeasible.yaml"; (feasible > 0) != wantSome {
				t.Errorf("%s -o %s: %d feasible candidates", file, format, feasible)
			}
		}
	}
}

// A plan item has every field of the plan document, in the document's
// order, after its apiVersion, kind and metadata: the document gains a
// field, and plan -o json prints it or this fails.
func TestPlanItemHasEveryDocumentField(t *testing.T) {
	doc := everyFieldDocument()
	es := &laxityv1alpha1.ElasticSchedule{}
	es.Name, es.Namespace = "tpch", "analytics"
	asDocument, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	asItem, err := json.Marshal(newPlanItem(es, doc, alternatives{}))
	if err != nil {
		t.Fatal(err)
	}
	itemKeys := jsonKeyOrder(t, string(asItem))
	wantKeys := append([]string{"apiVersion", "kind", "metadata", "metadata.name", "metadata.namespace"}, jsonKeyOrder(t, string(asDocument))...)
	if diff := cmp.Diff(wantKeys, itemKeys); diff != "" {
		t.Errorf("keys of the plan item against the plan document's (-want +got):\n%s", diff)
	}
	// And the same values: the item is the document plus its name.
	var fromItem listedPlan
	if err := json.Unmarshal(asItem, &fromItem); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(doc, fromItem.Document); diff != "" {
		t.Errorf("the document read back from its item (-want +got):\n%s", diff)
	}
}

// everyFieldDocument is a plan document with every field set.
func everyFieldDocument() planner.Document {
	return planner.Document{
		Origin:                 time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Chosen:                 planner.Chosen{InitialNodes: 2, BatchSizeFactor: 4, Cost: 1.5, ExecutableCost: 1.75, MaxNodes: 4, Feasible: true, Policy: planner.Policy("LeastLaxity"), Failure: &planner.Failure{Query: "q", LateSeconds: 3}},
		Candidates:             []planner.Candidate{{InitialNodes: 2, BatchSizeFactor: 4, Cost: 1.5, ExecutableCost: 1.75, MaxNodes: 4, Feasible: true}},
		Queries:                []planner.QueryPlan{{Name: "q", BatchSize: 10, Batches: 2, Finish: 30, Deadline: 40, Slack: 10}},
		Steps:                  []planner.Step{{Query: "q", Kind: planner.StepBatch, ToTuple: 10, Start: 1, End: 2, Nodes: 2}},
		Nodes:                  []planner.NodeLevel{{At: 0, Nodes: 2}},
		Requests:               []planner.NodeLevel{{At: 0, Nodes: 2}},
		MaxSupportedRateFactor: 1.25,
		SearchSeconds:          0.5,
	}
}
