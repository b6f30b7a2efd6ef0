package sparkapp

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/laxity-dev/laxity/internal/manifest"
)

// FuzzRender feeds arbitrary bytes to Render as the query's template. Render
// must never panic; an error must name the query; a rendered object must be
// a valid unstructured object (DeepCopy panics on any value JSON cannot
// hold), deterministic, carry the contract, and leave the template alone.
func FuzzRender(f *testing.F) {
	f.Add([]byte(minimalTemplate))
	f.Add([]byte(withRequired(`{"nodeSelector": {"zone": "a"}, "driver": {}, "executor": {}}`)))
	f.Add([]byte(withRequired(`{"driver": {"nodeSelector": {}}, "executor": {"nodeSelector": {"laxity.dev/pool": "x"}}, "arguments": [], "sparkConf": {}}`)))
	f.Add([]byte(withRequired(`{"driver": {}, "executor": {"instances": "many"}, "restartPolicy": {"type": "OnFailure"}, "dynamicAllocation": {"enabled": false}}`)))
	for _, seed := range []string{
		``, `null`, `{}`, `[]`, `"x"`, `1`, `1e400`, `true`, `{"driver":`,
		`{"executor": 1}`, `{"executor": {"nodeSelector": [1]}}`, `{"arguments": [{}]}`,
		`{"sparkConf": {"spark.laxity.x": 1}}`, `{"kind": "SparkApplication"}`,
		`{"type": "Java", "sparkVersion": "3", "mainApplicationFile": "f", "driver": {}, "executor": {}, "instances": 1e20}`,
	} {
		f.Add([]byte(seed))
	}
	if set, err := manifest.Load(filepath.Join("..", "..", "config", "samples", "tpch.yaml")); err == nil {
		f.Add(set.Queries[0].Object.Spec.SparkApplication.Raw)
	} else if !errors.Is(err, os.ErrNotExist) {
		f.Fatal(err)
	}

	steps := []Step{
		batch(2, 10, 20),
		retry(partial(1, "s3a://r/b0", "s3a://r/b1"), 1),
		final(2, "s3a://r/p0"),
	}
	f.Fuzz(func(t *testing.T, template []byte) {
		q := query("")
		if len(template) > 0 {
			q.Spec.SparkApplication = &runtime.RawExtension{Raw: bytes.Clone(template)}
		}
		for _, s := range steps {
			app, err := Render(q, schedule(), s, locations)
			if err != nil {
				if !strings.Contains(err.Error(), "IntermittentQuery analytics/q1") {
					t.Fatalf("Render: %v does not name the query", err)
				}
				var te *TemplateError
				if !errors.As(err, &te) {
					t.Fatalf("Render: %v is not a TemplateError, yet the step is valid", err)
				}
				continue
			}
			if q.Spec.SparkApplication != nil && !bytes.Equal(q.Spec.SparkApplication.Raw, template) {
				t.Fatalf("Render changed the template")
			}
			copied := app.DeepCopy()
			first, err := json.Marshal(copied.Object)
			if err != nil {
				t.Fatalf("marshalling the rendered object: %v", err)
			}
			again, err := Render(q, schedule(), s, locations)
			if err != nil {
				t.Fatalf("Render again: %v", err)
			}
			second, _ := json.Marshal(again.Object)
			if !bytes.Equal(first, second) {
				t.Fatalf("Render is not deterministic:\n%s\n%s", first, second)
			}
			name, _ := Name("q1", s)
			if app.GetName() != name || app.GetNamespace() != "analytics" || app.GetLabels()[LabelQuery] != "q1" {
				t.Fatalf("rendered metadata %v", app.Object["metadata"])
			}
			if got := app.Object["spec"].(map[string]any)["executor"].(map[string]any)["instances"]; got != int64(s.ReadyNodes)*2 {
				t.Fatalf("executor.instances = %#v", got)
			}
			if _, got, err := StepOf(app); err != nil || got.Index != s.Index || got.Kind != s.Kind || got.Attempt != s.Attempt {
				t.Fatalf("StepOf = %+v, %v", got, err)
			}
		}
	})
}
