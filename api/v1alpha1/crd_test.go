package v1alpha1_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/laxity-dev/laxity/config/crd"
)

// generatedCRDs are the CRDs make manifests generated from this package.
func generatedCRDs(t *testing.T) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, data := range crd.All() {
		c := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, c); err != nil {
			t.Fatal(err)
		}
		out[c.Spec.Names.Kind] = c
	}
	if len(out) != 4 {
		t.Fatalf("%d CRDs, want ElasticSchedule, IntermittentQuery, RecurringQuery and TenantPolicy", len(out))
	}
	return out
}

// notForReaders is what kubectl explain must not show: references to a
// publication or a design file the reader does not have, its section and
// equation numbers, and its symbols instead of words.
var notForReaders = regexp.MustCompile(`(?i)\bpaper\b|\bseed\b|\bsections? [0-9]|§|\beq\.|\bequations? [0-9(]|\balgorithm [0-9]|\balgorithm\b|design\.md|\bcmax\b|\bcmin\b|[φρλμτ]`)

// TestFieldDescriptionsReadAsDocumentation: every field that kubectl
// explain shows has a description, and none points at material the
// reader does not have.
func TestFieldDescriptionsReadAsDocumentation(t *testing.T) {
	for kind, c := range generatedCRDs(t) {
		for _, v := range c.Spec.Versions {
			var walk func(path string, s *apiextensionsv1.JSONSchemaProps)
			walk = func(path string, s *apiextensionsv1.JSONSchemaProps) {
				if m := notForReaders.FindString(s.Description); m != "" {
					t.Errorf("%s %s: %s: the description says %q, which a reader of kubectl explain cannot follow: %q", kind, v.Name, path, m, s.Description)
				}
				for name, p := range s.Properties {
					field := path + "." + name
					// metadata is the standard ObjectMeta, which the API
					// server documents; the schema keeps only its type.
					if strings.TrimSpace(p.Description) == "" && field != ".metadata" {
						t.Errorf("%s %s: %s has no description", kind, v.Name, strings.TrimPrefix(field, "."))
					}
					walk(field, &p)
				}
				if s.Items != nil && s.Items.Schema != nil {
					walk(path+"[]", s.Items.Schema)
				}
				if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
					walk(path+"{}", s.AdditionalProperties.Schema)
				}
			}
			walk("", v.Schema.OpenAPIV3Schema)
		}
	}
}

// TestNotForReadersCatches checks the pattern on what it must and must not
// flag, so that TestFieldDescriptionsReadAsDocumentation can fail.
func TestNotForReadersCatches(t *testing.T) {
	for _, text := range []string{
		"as in the paper", "the seed's rule", "see section 3.2", "by Eq. 8", "equation (4)", "Algorithm 1 says",
		"see docs/design.md", "capped at Cmax", "the fraction φ",
	} {
		if !notForReaders.MatchString(text) {
			t.Errorf("%q is not caught", text)
		}
	}
	for _, text := range []string{"the seeded random", "a paperless office", "the sectional view", "equals"} {
		if notForReaders.MatchString(text) {
			t.Errorf("%q is caught", text)
		}
	}
}

func TestNamesAndCategory(t *testing.T) {
	// Short names of well-known operators' kinds, which laxity's must not
	// take: kubectl resolves a short name two CRDs share to only one.
	taken := []string{
		"es",                        // Elasticsearch (ECK), ExternalSecret (External Secrets)
		"kb", "apm", "ent", "agent", // ECK
		"ss", "css", "ces", "pushsecret", // External Secrets
		"cq", "lq", "wl", "rf", // Kueue
		"sparkapp", "scheduledsparkapp", // spark-operator
		"wf", "cwf", "wftmpl", "cwftmpl", "cronwf", // Argo Workflows
		"flinkdep", "sessionjob", // Flink operator
		"np", "nc", "ec2nc", // Karpenter, and NetworkPolicy's netpol's neighbours
	}
	want := map[string]string{"ElasticSchedule": "lxes", "IntermittentQuery": "lxiq", "RecurringQuery": "lxrq", "TenantPolicy": "lxtp"}
	for kind, c := range generatedCRDs(t) {
		if got := c.Spec.Names.ShortNames; !slices.Equal(got, []string{want[kind]}) {
			t.Errorf("%s: short names %v, want [%s]", kind, got, want[kind])
		}
		for _, name := range c.Spec.Names.ShortNames {
			if slices.Contains(taken, name) {
				t.Errorf("%s: short name %q is another operator's", kind, name)
			}
		}
		if !slices.Contains(c.Spec.Names.Categories, "laxity") {
			t.Errorf("%s: categories %v lack laxity, which kubectl get laxity lists", kind, c.Spec.Names.Categories)
		}
	}
}

// column is a printer column as the test states it: name, type, JSON path,
// and whether only -o wide shows it.
type column struct {
	Name, Type, Path string
	Wide             bool
}

func TestPrinterColumns(t *testing.T) {
	ready := `.status.conditions[?(@.type=="Ready")]`
	want := map[string][]column{
		"ElasticSchedule": {
			{"Cost", "number", ".status.chosen.cost", false},
			{"Max Nodes", "integer", ".status.chosen.maxNodes", false},
			{"Requested", "integer", ".status.nodesRequested", false},
			{"Ready Nodes", "integer", ".status.nodesReady", false},
			{"Ready", "string", ready + ".status", false},
			{"Age", "date", ".metadata.creationTimestamp", false},
			{"Reason", "string", ready + ".reason", true},
			{"Feasible", "boolean", ".status.chosen.feasible", true},
			{"Executable Cost", "number", ".status.chosen.executableCost", true},
			{"Max Rate", "number", ".status.maxSupportedRateFactor", true},
			{"Lead Time", "string", ".status.leadTime.learned", true},
			{"Planned", "date", ".status.lastPlanTime", true},
		},
		"IntermittentQuery": {
			{"Schedule", "string", ".spec.scheduleName", false},
			{"Deadline", "string", ".spec.deadline", false},
			{"Processed", "integer", ".status.processedTuples", false},
			{"Arrived", "integer", ".status.arrivedTuples", false},
			{"Slack", "number", ".status.slackSeconds", false},
			{"Status", "string", ready + ".reason", false},
			{"Age", "date", ".metadata.creationTimestamp", false},
			{"Batch Size", "integer", ".status.batchSize", true},
			{"Rate", "number", ".status.measuredRatePerSecond", true},
			{"Slowdown %", "number", ".status.learned.slowdownPercent", true},
			{"Margin %", "number", ".status.learned.runtimeMarginPercent", true},
			{"Result", "string", ".status.final.resultLocation", true},
		},
		"TenantPolicy": {
			{"Age", "date", ".metadata.creationTimestamp", false},
			{"Host Path", "boolean", ".spec.allowHostPath", true},
			{"Privileged", "boolean", ".spec.allowPrivileged", true},
		},
		"RecurringQuery": {
			{"Schedule", "string", ".spec.schedule", false},
			{"Suspended", "boolean", ".spec.suspend", false},
			{"Last Outcome", "string", ".status.lastOutcome", false},
			{"Next Window", "string", ".status.nextWindow", false},
			{"Age", "date", ".metadata.creationTimestamp", false},
			{"Time Zone", "string", ".spec.timeZone", true},
			{"Window", "string", ".spec.windowLength", true},
			{"Ahead", "integer", ".spec.windowsAhead", true},
			{"Slowdown %", "number", ".status.learned.slowdownPercent", true},
		},
	}
	for kind, c := range generatedCRDs(t) {
		v := c.Spec.Versions[0]
		var got []column
		for _, col := range v.AdditionalPrinterColumns {
			got = append(got, column{col.Name, col.Type, col.JSONPath, col.Priority == 1})
			if col.Name != "Age" && strings.TrimSpace(col.Description) == "" {
				t.Errorf("%s: column %s has no description", kind, col.Name)
			}
			if col.Priority > 1 {
				t.Errorf("%s: column %s has priority %d; kubectl shows only 0 and, with -o wide, 1", kind, col.Name, col.Priority)
			}
			// The column's type is the type of the field it shows, so
			// that numbers print and sort as numbers.
			if err := checkColumnField(v.Schema.OpenAPIV3Schema, col); err != nil {
				t.Errorf("%s: column %s: %v", kind, col.Name, err)
			}
		}
		if diff := cmp.Diff(want[kind], got); diff != "" {
			t.Errorf("%s: printer columns (-want +got):\n%s", kind, diff)
		}
		wide := 0
		for _, col := range got {
			if col.Wide {
				wide++
			}
		}
		if wide == 0 {
			t.Errorf("%s: -o wide shows nothing more than the default", kind)
		}
	}
}

// filter is a JSONPath filter on a list, such as [?(@.type=="Ready")].
var filter = regexp.MustCompile(`\[\?\([^]]*\)\]`)

// checkColumnField finds the schema of the field col shows and checks that
// its type fits the column's.
func checkColumnField(root *apiextensionsv1.JSONSchemaProps, col apiextensionsv1.CustomResourceColumnDefinition) error {
	if col.JSONPath == ".metadata.creationTimestamp" {
		return nil // ObjectMeta, not in the CRD's schema
	}
	s := root
	path := filter.ReplaceAllString(strings.TrimPrefix(col.JSONPath, "."), "[]")
	for part := range strings.SplitSeq(path, ".") {
		part, list := strings.CutSuffix(part, "[]")
		p, ok := s.Properties[part]
		if !ok {
			return fmt.Errorf("%s: no field %q in the schema", col.JSONPath, part)
		}
		s = &p
		if list {
			if s.Items == nil || s.Items.Schema == nil {
				return fmt.Errorf("%s: %q is not a list", col.JSONPath, part)
			}
			s = s.Items.Schema
		}
	}
	fieldType := s.Type
	if s.Format == "date-time" && col.Type == "date" {
		fieldType = "date"
	}
	if fieldType != col.Type {
		return fmt.Errorf("%s is a %s (format %q), shown as a %s", col.JSONPath, s.Type, s.Format, col.Type)
	}
	return nil
}
