package sparkapp

import (
	"encoding/json"
	"errors"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/manifest"
	"github.com/laxity-dev/laxity/internal/planner"
)

// minimalSpec is minimalTemplate as Render leaves it for a step with the
// given executor count, arguments after the template's, and sparkConf
// besides the template's.
func minimalSpec(instances int64, args []any, conf map[string]any) map[string]any {
	sparkConf := map[string]any{"spark.ui.enabled": "false"}
	maps.Copy(sparkConf, conf)
	return map[string]any{
		"type":                "Scala",
		"mode":                "cluster",
		"sparkVersion":        "3.5.3",
		"mainClass":           "dev.laxity.examples.Count",
		"mainApplicationFile": "local:///opt/spark/jars/count.jar",
		"arguments":           append([]any{"--table", "orders"}, args...),
		"sparkConf":           sparkConf,
		"driver":              secured(map[string]any{"cores": int64(1), "memory": "1g"}),
		"executor": secured(map[string]any{
			"cores": int64(2), "memory": "4g", "instances": instances,
			"nodeSelector": map[string]any{"zone": "a", "laxity.dev/pool": "tpch"},
		}),
	}
}

// secured is a Spark pod of a template that sets no security context, with
// the Pod Security values rendering sets (SecureDefaults).
func secured(pod map[string]any) map[string]any {
	pod["podSecurityContext"] = map[string]any{"runAsNonRoot": true, "seccompProfile": map[string]any{"type": "RuntimeDefault"}}
	pod["securityContext"] = map[string]any{"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}}}
	return pod
}

// sparkApplication is the SparkApplication of minimalTemplate's query q1 of
// schedule tpch: laxity's labels on it and on its pods, merged with the
// template's pod labels, laxity's winning.
func sparkApplication(name, step string, annotations map[string]any, spec map[string]any) map[string]any {
	labels := func() map[string]any {
		return map[string]any{
			"app.kubernetes.io/managed-by": "laxity",
			"laxity.dev/schedule":          "tpch",
			"laxity.dev/query":             "q1",
			"laxity.dev/step":              step,
		}
	}
	driver := labels()
	driver["team"] = "sales"
	spec["driver"].(map[string]any)["labels"] = driver
	spec["executor"].(map[string]any)["labels"] = labels()
	return map[string]any{
		"apiVersion": "sparkoperator.k8s.io/v1beta2",
		"kind":       "SparkApplication",
		"metadata": map[string]any{
			"name":        name,
			"namespace":   "analytics",
			"labels":      labels(),
			"annotations": annotations,
		},
		"spec": spec,
	}
}

func TestRender(t *testing.T) {
	const (
		b3       = "s3a://results/laxity/analytics/q1/q1-b3"
		b0       = "s3a://results/laxity/analytics/q1/q1-b0"
		b1       = "s3a://results/laxity/analytics/q1/q1-b1"
		p0       = "s3a://results/laxity/analytics/q1/q1-partial-0"
		p1       = "s3a://results/laxity/analytics/q1/q1-partial-1"
		finalLoc = "s3a://results/laxity/analytics/q1/q1-final"
	)
	for _, tc := range []struct {
		name string
		step Step
		loc  Locations
		want map[string]any
	}{{
		name: "batch",
		step: batch(3, 100, 200),
		loc:  locations,
		want: sparkApplication("q1-b3", "batch",
			map[string]any{
				"laxity.dev/batch-index": "3",
				"laxity.dev/from-tuple":  "100",
				"laxity.dev/to-tuple":    "200",
				"laxity.dev/nodes":       "4",
				"laxity.dev/attempt":     "0",
				"laxity.dev/result":      b3,
			},
			minimalSpec(10, // 5 ready nodes × 2 executors per node
				[]any{
					"--laxity-query=q1", "--laxity-step=batch", "--laxity-index=3", "--laxity-attempt=0",
					"--laxity-from-tuple=100", "--laxity-to-tuple=200",
					"--laxity-input=s3a://stream/orders/", "--laxity-output=" + b3,
				},
				map[string]any{
					"spark.laxity.query": "q1", "spark.laxity.step": "batch", "spark.laxity.index": "3",
					"spark.laxity.attempt": "0", "spark.laxity.fromTuple": "100", "spark.laxity.toTuple": "200",
					"spark.laxity.input": "s3a://stream/orders/", "spark.laxity.output": b3,
				})),
	}, {
		name: "batch retry without an input location",
		step: retry(batch(3, 100, 200), 1),
		loc:  Locations{ResultRoot: "s3a://results/laxity"},
		want: sparkApplication("q1-b3-r1", "batch",
			map[string]any{
				"laxity.dev/batch-index": "3",
				"laxity.dev/from-tuple":  "100",
				"laxity.dev/to-tuple":    "200",
				"laxity.dev/nodes":       "4",
				"laxity.dev/attempt":     "1",
				"laxity.dev/result":      b3,
			},
			minimalSpec(10,
				[]any{
					"--laxity-query=q1", "--laxity-step=batch", "--laxity-index=3", "--laxity-attempt=1",
					"--laxity-from-tuple=100", "--laxity-to-tuple=200", "--laxity-output=" + b3,
				},
				map[string]any{
					"spark.laxity.query": "q1", "spark.laxity.step": "batch", "spark.laxity.index": "3",
					"spark.laxity.attempt": "1", "spark.laxity.fromTuple": "100", "spark.laxity.toTuple": "200",
					"spark.laxity.output": b3,
				})),
	}, {
		name: "partial merge retry",
		step: retry(partial(1, b0, b1), 2),
		loc:  locations,
		want: sparkApplication("q1-partial-1-r2", "partial",
			map[string]any{
				"laxity.dev/batch-index": "1",
				"laxity.dev/inputs":      "2",
				"laxity.dev/nodes":       "2",
				"laxity.dev/attempt":     "2",
				"laxity.dev/result":      p1,
			},
			minimalSpec(4,
				[]any{
					"--laxity-query=q1", "--laxity-step=partial", "--laxity-index=1", "--laxity-attempt=2",
					"--laxity-inputs=2", "--laxity-input=" + b0, "--laxity-input=" + b1, "--laxity-output=" + p1,
				},
				map[string]any{
					"spark.laxity.query": "q1", "spark.laxity.step": "partial", "spark.laxity.index": "1",
					"spark.laxity.attempt": "2", "spark.laxity.inputs": "2",
					"spark.laxity.input": b0 + "," + b1, "spark.laxity.output": p1,
				})),
	}, {
		name: "final merge",
		step: final(1, p0, b3),
		loc:  locations,
		want: sparkApplication("q1-final", "final",
			map[string]any{
				"laxity.dev/batch-index": "1",
				"laxity.dev/inputs":      "2",
				"laxity.dev/nodes":       "10",
				"laxity.dev/attempt":     "0",
				"laxity.dev/result":      finalLoc,
			},
			minimalSpec(20,
				[]any{
					"--laxity-query=q1", "--laxity-step=final", "--laxity-index=1", "--laxity-attempt=0",
					"--laxity-inputs=2", "--laxity-input=" + p0, "--laxity-input=" + b3, "--laxity-output=" + finalLoc,
				},
				map[string]any{
					"spark.laxity.query": "q1", "spark.laxity.step": "final", "spark.laxity.index": "1",
					"spark.laxity.attempt": "0", "spark.laxity.inputs": "2",
					"spark.laxity.input": p0 + "," + b3, "spark.laxity.output": finalLoc,
				})),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			q := query(minimalTemplate)
			got, err := Render(q, schedule(), tc.step, tc.loc)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if diff := cmp.Diff(tc.want, got.Object); diff != "" {
				t.Errorf("Render (-want +got):\n%s", diff)
			}
			if string(q.Spec.SparkApplication.Raw) != minimalTemplate {
				t.Errorf("Render changed the query's template to %s", q.Spec.SparkApplication.Raw)
			}
			// Deterministic, and independent of earlier renders.
			again, err := Render(q, schedule(), tc.step, tc.loc)
			if err != nil {
				t.Fatalf("Render again: %v", err)
			}
			first, _ := json.Marshal(got.Object)
			second, _ := json.Marshal(again.Object)
			if string(first) != string(second) {
				t.Errorf("Render is not deterministic:\n%s\n%s", first, second)
			}
			if len(got.GetOwnerReferences()) != 0 {
				t.Errorf("Render set owner references %v; the controller sets them", got.GetOwnerReferences())
			}
		})
	}
}

// TestRenderSample renders every query of the sample workload and checks
// that the template survives except for what Render sets.
func TestRenderSample(t *testing.T) {
	set, err := manifest.Load(filepath.Join("..", "..", "config", "samples", "tpch.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Queries) == 0 {
		t.Fatal("the sample has no queries")
	}
	for _, mq := range set.Queries {
		q := mq.Object
		es := set.Schedule(q.Namespace, q.Spec.ScheduleName).Object
		var template map[string]any
		if err := json.Unmarshal(q.Spec.SparkApplication.Raw, &template); err != nil {
			t.Fatal(err)
		}
		for _, s := range []Step{
			{Kind: planner.StepBatch, Index: 0, FromTuple: 0, ToTuple: 2090000, Nodes: 2, ReadyNodes: 3},
			{Kind: planner.StepFinal, Index: 0, Inputs: 1, InputLocations: []string{"s3a://r/b0"}, Nodes: 20, ReadyNodes: 20},
		} {
			app, err := Render(q, es, s, locations)
			if err != nil {
				t.Fatalf("%s: %v", q.Name, err)
			}
			spec := app.Object["spec"].(map[string]any)
			podLabels := map[string]any{
				"app.kubernetes.io/managed-by": "laxity", "laxity.dev/schedule": "tpch",
				"laxity.dev/query": q.Name, "laxity.dev/step": string(s.Kind),
			}
			driver := spec["driver"].(map[string]any)
			if diff := cmp.Diff(podLabels, driver["labels"]); diff != "" {
				t.Errorf("%s: spec.driver.labels (-want +got):\n%s", q.Name, diff)
			}
			for k, v := range template {
				switch k {
				case "executor", "arguments", "sparkConf":
					continue
				case "driver":
					// As the template's, but for laxity's labels and
					// the Pod Security values it leaves unset.
					v = secured(maps.Clone(v.(map[string]any)))
					v.(map[string]any)["labels"] = podLabels
				}
				got, _ := json.Marshal(spec[k])
				want, _ := json.Marshal(v)
				if string(got) != string(want) {
					t.Errorf("%s: spec.%s = %s, want the template's %s", q.Name, k, got, want)
				}
			}
			executor := spec["executor"].(map[string]any)
			wantExecutor := secured(map[string]any{
				"cores": int64(4), "memory": "12g", "memoryOverhead": "1536m",
				"instances":    int64(s.ReadyNodes), // executorsPerNode: 1
				"nodeSelector": map[string]any{"laxity.dev/pool": "tpch"},
				"labels":       podLabels,
			})
			if diff := cmp.Diff(wantExecutor, executor); diff != "" {
				t.Errorf("%s: spec.executor (-want +got):\n%s", q.Name, diff)
			}
			if _, ok := spec["driver"].(map[string]any)["nodeSelector"]; ok {
				t.Errorf("%s: the driver is pinned to the pool", q.Name)
			}
		}
	}
}

func TestRenderNodeSelectors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		template string
		pool     map[string]string
		// wantDriver and wantExecutor are the node selectors, nil for none;
		// wantTop is the spec-level one.
		wantTop, wantDriver, wantExecutor map[string]any
	}{{
		name:         "none in the template",
		template:     `{"driver": {}, "executor": {}}`,
		pool:         map[string]string{"laxity.dev/pool": "tpch"},
		wantExecutor: map[string]any{"laxity.dev/pool": "tpch"},
	}, {
		name:         "the pool wins on a shared key, other keys are kept",
		template:     `{"driver": {"nodeSelector": {"kind": "driver"}}, "executor": {"nodeSelector": {"laxity.dev/pool": "x", "zone": "a"}}}`,
		pool:         map[string]string{"laxity.dev/pool": "tpch", "disk": "ssd"},
		wantDriver:   map[string]any{"kind": "driver"},
		wantExecutor: map[string]any{"laxity.dev/pool": "tpch", "zone": "a", "disk": "ssd"},
	}, {
		name:         "an empty executor selector",
		template:     `{"driver": {}, "executor": {"nodeSelector": {}}}`,
		pool:         map[string]string{"laxity.dev/pool": "tpch"},
		wantExecutor: map[string]any{"laxity.dev/pool": "tpch"},
	}, {
		name:         "the spec-level selector moves to driver and executor",
		template:     `{"nodeSelector": {"zone": "a", "laxity.dev/pool": "x"}, "driver": {}, "executor": {}}`,
		pool:         map[string]string{"laxity.dev/pool": "tpch"},
		wantDriver:   map[string]any{"zone": "a", "laxity.dev/pool": "x"},
		wantExecutor: map[string]any{"zone": "a", "laxity.dev/pool": "tpch"},
	}, {
		name:         "a null spec-level selector is absent",
		template:     `{"nodeSelector": null, "driver": {}, "executor": {"nodeSelector": {"zone": "a"}}}`,
		pool:         map[string]string{"laxity.dev/pool": "tpch"},
		wantTop:      nil,
		wantExecutor: map[string]any{"zone": "a", "laxity.dev/pool": "tpch"},
	}, {
		name:         "a pool without a selector leaves the template alone",
		template:     `{"nodeSelector": {"zone": "a"}, "driver": {}, "executor": {}}`,
		wantTop:      map[string]any{"zone": "a"},
		wantExecutor: nil,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			es := schedule()
			es.Spec.NodePool.NodeSelector = tc.pool
			app, err := Render(query(withRequired(tc.template)), es, batch(0, 0, 10), locations)
			if err != nil {
				t.Fatal(err)
			}
			spec := app.Object["spec"].(map[string]any)
			selector := func(m map[string]any) map[string]any {
				s, _ := m["nodeSelector"].(map[string]any)
				return s
			}
			if diff := cmp.Diff(tc.wantTop, selector(spec)); diff != "" {
				t.Errorf("spec.nodeSelector (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDriver, selector(spec["driver"].(map[string]any))); diff != "" {
				t.Errorf("spec.driver.nodeSelector (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantExecutor, selector(spec["executor"].(map[string]any))); diff != "" {
				t.Errorf("spec.executor.nodeSelector (-want +got):\n%s", diff)
			}
		})
	}
}

// withRequired adds the top-level fields SparkApplication requires to a
// template object, unless it sets them.
func withRequired(template string) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(template), &m); err != nil {
		panic(err)
	}
	for k, v := range map[string]any{"type": "Python", "sparkVersion": "3.5.3", "mainApplicationFile": "local:///job.py"} {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(out)
}

func TestRenderExecutors(t *testing.T) {
	for _, tc := range []struct {
		name             string
		executorsPerNode int32
		ready            int32
		want             int64
	}{
		{name: "one per node by default", executorsPerNode: 0, ready: 4, want: 4},
		{name: "one per node", executorsPerNode: 1, ready: 10, want: 10},
		{name: "three per node", executorsPerNode: 3, ready: 4, want: 12},
		{name: "more ready nodes than planned", executorsPerNode: 2, ready: 7, want: 14},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := schedule()
			es.Spec.NodePool.ExecutorsPerNode = tc.executorsPerNode
			s := batch(0, 0, 10)
			s.ReadyNodes = tc.ready
			app, err := Render(query(minimalTemplate), es, s, locations)
			if err != nil {
				t.Fatal(err)
			}
			got := app.Object["spec"].(map[string]any)["executor"].(map[string]any)["instances"]
			if got != tc.want {
				t.Errorf("executor.instances = %#v, want %d", got, tc.want)
			}
		})
	}
}

// TestRenderTemplateErrors checks that every template problem is a
// *TemplateError naming the query and the field.
func TestRenderTemplateErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		template string // "" for none; withRequired is applied to objects unless raw
		raw      bool
		want     []string // every error, "<field>: <problem prefix>"
	}{
		{name: "no template", template: "", raw: true, want: []string{"spec.sparkApplication: required"}},
		{name: "null", template: "null", raw: true, want: []string{"spec.sparkApplication: required"}},
		{name: "a list", template: `[1, 2]`, raw: true, want: []string{"spec.sparkApplication: must be an object (a SparkApplication spec), got a list"}},
		{name: "a string", template: `"spec"`, raw: true, want: []string{"spec.sparkApplication: must be an object (a SparkApplication spec), got a string"}},
		{name: "not JSON", template: `{"driver":`, raw: true, want: []string{"spec.sparkApplication: not valid JSON"}},
		{name: "required fields", template: `{}`, raw: true, want: []string{
			"spec.sparkApplication.type: required by SparkApplication v1beta2",
			"spec.sparkApplication.sparkVersion: required",
			"spec.sparkApplication.mainApplicationFile: required",
			"spec.sparkApplication.driver: required",
			"spec.sparkApplication.executor: required",
		}},
		{name: "a whole SparkApplication", template: `{"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication", "metadata": {}, "spec": {}}`, raw: true, want: []string{
			"spec.sparkApplication.apiVersion: not a field of a SparkApplication spec",
			"spec.sparkApplication.kind: not a field",
			"spec.sparkApplication.metadata: not a field",
			"spec.sparkApplication.spec: not a field",
			"spec.sparkApplication.type: required",
			"spec.sparkApplication.sparkVersion: required",
			"spec.sparkApplication.mainApplicationFile: required",
			"spec.sparkApplication.driver: required",
			"spec.sparkApplication.executor: required",
		}},
		{name: "executor not an object", template: `{"driver": {}, "executor": "big"}`, want: []string{"spec.sparkApplication.executor: must be an object, got a string"}},
		{name: "driver a list", template: `{"driver": [], "executor": {}}`, want: []string{"spec.sparkApplication.driver: must be an object, got a list"}},
		{name: "type a number", template: `{"type": 3, "driver": {}, "executor": {}}`, want: []string{"spec.sparkApplication.type: must be a string, got a number"}},
		{name: "executor selector a list", template: `{"driver": {}, "executor": {"nodeSelector": ["a"]}}`, want: []string{"spec.sparkApplication.executor.nodeSelector: must be an object, got a list"}},
		{name: "executor selector value a number", template: `{"driver": {}, "executor": {"nodeSelector": {"a": 1, "b": true}}}`, want: []string{
			"spec.sparkApplication.executor.nodeSelector.a: must be a string, got a number",
			"spec.sparkApplication.executor.nodeSelector.b: must be a string, got a boolean",
		}},
		{name: "driver selector value null", template: `{"driver": {"nodeSelector": {"a": null}}, "executor": {}}`, want: []string{"spec.sparkApplication.driver.nodeSelector.a: must be a string, got null"}},
		{name: "both selector levels", template: `{"nodeSelector": {}, "driver": {"nodeSelector": {"a": "b"}}, "executor": {}}`, want: []string{
			"spec.sparkApplication.nodeSelector: must not be set together with driver.nodeSelector or executor.nodeSelector",
		}},
		{name: "arguments an object", template: `{"driver": {}, "executor": {}, "arguments": {"a": "b"}}`, want: []string{"spec.sparkApplication.arguments: must be a list of strings, got an object"}},
		{name: "an argument a number", template: `{"driver": {}, "executor": {}, "arguments": ["a", 2]}`, want: []string{"spec.sparkApplication.arguments[1]: must be a string, got a number"}},
		{name: "sparkConf a string", template: `{"driver": {}, "executor": {}, "sparkConf": "a=b"}`, want: []string{"spec.sparkApplication.sparkConf: must be an object, got a string"}},
		{name: "sparkConf value a number", template: `{"driver": {}, "executor": {}, "sparkConf": {"spark.a": 1}}`, want: []string{"spec.sparkApplication.sparkConf.spark.a: must be a string, got a number"}},
		{name: "spark.executor.instances", template: `{"driver": {}, "executor": {}, "sparkConf": {"spark.executor.instances": "3"}}`, want: []string{"spec.sparkApplication.sparkConf: must not set spark.executor.instances"}},
		{name: "spark.dynamicAllocation.enabled", template: `{"driver": {}, "executor": {}, "sparkConf": {"spark.dynamicAllocation.enabled": " TRUE"}}`, want: []string{"spec.sparkApplication.sparkConf: must not enable spark.dynamicAllocation"}},
		{name: "executor cores zero", template: `{"driver": {}, "executor": {"cores": 0}}`, want: []string{"spec.sparkApplication.executor.cores: 0 is not a positive whole number"}},
		{name: "driver memory unreadable", template: `{"driver": {"memory": "lots"}, "executor": {"coreRequest": "x"}}`, want: []string{
			"spec.sparkApplication.driver.memory: \"lots\" is not a Spark memory size",
			"spec.sparkApplication.executor.coreRequest: \"x\" is not a positive CPU quantity",
		}},
		{name: "dynamic allocation", template: `{"driver": {}, "executor": {}, "dynamicAllocation": {"enabled": true}}`, want: []string{"spec.sparkApplication.dynamicAllocation.enabled: must not be true"}},
		{name: "dynamic allocation enabled a string", template: `{"driver": {}, "executor": {}, "dynamicAllocation": {"enabled": "yes"}}`, want: []string{"spec.sparkApplication.dynamicAllocation.enabled: must be a boolean, got a string"}},
		{name: "dynamic allocation a list", template: `{"driver": {}, "executor": {}, "dynamicAllocation": []}`, want: []string{"spec.sparkApplication.dynamicAllocation: must be an object, got a list"}},
		{name: "restart policy Always", template: `{"driver": {}, "executor": {}, "restartPolicy": {"type": "Always"}}`, want: []string{"spec.sparkApplication.restartPolicy.type: must not be Always"}},
		{name: "restart policy type a number", template: `{"driver": {}, "executor": {}, "restartPolicy": {"type": 1}}`, want: []string{"spec.sparkApplication.restartPolicy.type: must be a string, got a number"}},
		{name: "driver labels a list", template: `{"driver": {"labels": ["a"]}, "executor": {}}`, want: []string{"spec.sparkApplication.driver.labels: must be an object, got a list"}},
		{name: "an executor label a number", template: `{"driver": {}, "executor": {"labels": {"tier": 1}}}`, want: []string{"spec.sparkApplication.executor.labels.tier: must be a string, got a number"}},
		{name: "restart policy a string", template: `{"driver": {}, "executor": {}, "restartPolicy": "Never"}`, want: []string{"spec.sparkApplication.restartPolicy: must be an object, got a string"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			template := tc.template
			if !tc.raw {
				template = withRequired(template)
			}
			app, err := Render(query(template), schedule(), batch(0, 0, 10), locations)
			if err == nil {
				t.Fatalf("Render = %v, want errors %q", app.Object, tc.want)
			}
			var errs []error
			if joined, ok := err.(interface{ Unwrap() []error }); ok {
				errs = joined.Unwrap()
			} else {
				errs = []error{err}
			}
			if len(errs) != len(tc.want) {
				t.Fatalf("Render: %d errors, want %d:\n%v", len(errs), len(tc.want), err)
			}
			for i, e := range errs {
				var te *TemplateError
				if !errors.As(e, &te) {
					t.Errorf("error %d %q is a %T, want a *TemplateError", i, e, e)
					continue
				}
				prefix := "IntermittentQuery analytics/q1: " + tc.want[i]
				if !strings.HasPrefix(e.Error(), prefix) {
					t.Errorf("error %d = %q, want it to start with %q", i, e, prefix)
				}
			}
		})
	}
}

func TestRenderTemplateFromObject(t *testing.T) {
	q := query("")
	q.Spec.SparkApplication = &runtime.RawExtension{Object: nil}
	if _, err := Render(q, schedule(), batch(0, 0, 1), locations); err == nil || !strings.Contains(err.Error(), "spec.sparkApplication: required") {
		t.Errorf("Render with an empty RawExtension: %v, want a required error", err)
	}
}

// TestRenderStepErrors checks the caller's errors: they name the query but
// are not TemplateErrors.
func TestRenderStepErrors(t *testing.T) {
	otherSchedule := schedule()
	otherSchedule.Name = "other"
	otherNamespace := schedule()
	otherNamespace.Namespace = "default"
	longSchedule := schedule()
	longSchedule.Name = strings.Repeat("s", 64)
	longQuery := query(minimalTemplate)
	longQuery.Spec.ScheduleName = longSchedule.Name
	negative := schedule()
	negative.Spec.NodePool.ExecutorsPerNode = -1
	huge := schedule()
	huge.Spec.NodePool.ExecutorsPerNode = 1 << 30
	for _, tc := range []struct {
		name string
		q    *v1alpha1.IntermittentQuery
		es   *v1alpha1.ElasticSchedule
		step Step
		loc  Locations
		want string
	}{
		{name: "no query", es: schedule(), step: batch(0, 0, 1), loc: locations, want: "IntermittentQuery and ElasticSchedule are required"},
		{name: "no schedule", q: query(minimalTemplate), step: batch(0, 0, 1), loc: locations, want: "IntermittentQuery and ElasticSchedule are required"},
		{name: "another schedule", q: query(minimalTemplate), es: otherSchedule, step: batch(0, 0, 1), loc: locations, want: `ElasticSchedule analytics/other is not the query's schedule "tpch"`},
		{name: "another namespace", q: query(minimalTemplate), es: otherNamespace, step: batch(0, 0, 1), loc: locations, want: "ElasticSchedule default/tpch is not the query's schedule"},
		{name: "schedule name too long for a label", q: longQuery, es: longSchedule, step: batch(0, 0, 1), loc: locations, want: "cannot be the value of label laxity.dev/schedule"},
		{name: "nodes not a size", q: query(minimalTemplate), es: schedule(), step: Step{Kind: planner.StepBatch, ToTuple: 1, Nodes: 3, ReadyNodes: 3}, loc: locations, want: "step planned for 3 nodes, which is not one of the pool's sizes [2 4 10]"},
		{name: "fewer ready than planned", q: query(minimalTemplate), es: schedule(), step: Step{Kind: planner.StepBatch, ToTuple: 1, Nodes: 4, ReadyNodes: 3}, loc: locations, want: "step planned for 4 nodes but only 3 are ready"},
		{name: "negative executors per node", q: query(minimalTemplate), es: negative, step: batch(0, 0, 1), loc: locations, want: "spec.nodePool.executorsPerNode -1 is negative"},
		{name: "too many executors", q: query(minimalTemplate), es: huge, step: batch(0, 0, 1), loc: locations, want: "more executors than a SparkApplication holds"},
		{name: "index beyond int32", q: query(minimalTemplate), es: schedule(), step: batch(math.MaxInt32+1, 0, 1), loc: locations, want: "exceed the int32 the status records them in"},
		{name: "empty batch", q: query(minimalTemplate), es: schedule(), step: batch(0, 5, 5), loc: locations, want: "batch tuple range [5, 5) is empty or negative"},
		{name: "negative batch", q: query(minimalTemplate), es: schedule(), step: batch(0, -1, 5), loc: locations, want: "batch tuple range [-1, 5) is empty or negative"},
		{name: "batch with inputs", q: query(minimalTemplate), es: schedule(), step: Step{Kind: planner.StepBatch, ToTuple: 1, Inputs: 1, Nodes: 2, ReadyNodes: 2}, loc: locations, want: "a batch has no merge inputs"},
		{name: "merge without inputs", q: query(minimalTemplate), es: schedule(), step: final(0), loc: locations, want: "a merge needs at least one input, got 0"},
		{name: "merge missing locations", q: query(minimalTemplate), es: schedule(), step: Step{Kind: planner.StepPartial, Inputs: 2, InputLocations: []string{"a"}, Nodes: 2, ReadyNodes: 2}, loc: locations, want: "a merge of 2 inputs needs 2 input locations, got 1"},
		{name: "merge location with a comma", q: query(minimalTemplate), es: schedule(), step: partial(0, "s3a://r/a,b"), loc: locations, want: `merge input location 0 "s3a://r/a,b" is empty or contains a comma`},
		{name: "merge location empty", q: query(minimalTemplate), es: schedule(), step: partial(0, "x", ""), loc: locations, want: `merge input location 1 "" is empty`},
		{name: "unknown kind", q: query(minimalTemplate), es: schedule(), step: Step{Kind: "merge", Nodes: 2, ReadyNodes: 2}, loc: locations, want: `unknown step kind "merge"`},
		{name: "query name too long", q: func() *v1alpha1.IntermittentQuery {
			q := query(minimalTemplate)
			q.Name = strings.Repeat("q", 61)
			return q
		}(), es: schedule(), step: batch(0, 0, 1), loc: locations, want: "more than the 63 spark-operator accepts"},
		{name: "no result root", q: query(minimalTemplate), es: schedule(), step: batch(0, 0, 1), loc: Locations{Input: "x"}, want: "IntermittentQuery analytics/q1: result root is empty"},
		{name: "slice key of the contract", q: query(minimalTemplate), es: schedule(), step: sliced(map[string]string{"from-tuple": "1"}), loc: locations, want: `batch input key "from-tuple"`},
		{name: "slice key not a name", q: query(minimalTemplate), es: schedule(), step: sliced(map[string]string{"Kafka Offsets": "1"}), loc: locations, want: `batch input key "Kafka Offsets"`},
		{name: "slice on a merge", q: query(minimalTemplate), es: schedule(), step: func() Step { s := partial(0, "x"); s.Slice = map[string]string{"k": "v"}; return s }(), loc: locations, want: "a merge reads results, not a slice"},
		{name: "input named output", q: query(minimalTemplate), es: schedule(), step: sliced(map[string]string{"output.from-tuple": "1"}), loc: locations, want: `batch input key "output.from-tuple"`},
		{name: "input key of two dots", q: query(minimalTemplate), es: schedule(), step: sliced(map[string]string{"orders.kafka.topic": "1"}), loc: locations, want: `batch input key "orders.kafka.topic"`},
		{name: "input key ending in a dot", q: query(minimalTemplate), es: schedule(), step: sliced(map[string]string{"orders.": "1"}), loc: locations, want: `batch input key "orders."`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app, err := Render(tc.q, tc.es, tc.step, tc.loc)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				var obj map[string]any
				if app != nil {
					obj = app.Object
				}
				t.Fatalf("Render = %v, %v; want an error containing %q", obj, err, tc.want)
			}
			var te *TemplateError
			if errors.As(err, &te) {
				t.Errorf("Render: %v is a TemplateError; the template is fine", err)
			}
			if tc.q != nil && tc.es != nil && !strings.Contains(err.Error(), "IntermittentQuery") {
				t.Errorf("Render: %v does not name the query", err)
			}
		})
	}
}

func sliced(slice map[string]string) Step {
	s := batch(3, 100, 200)
	s.Slice = slice
	return s
}

// A batch's slice goes into its annotations, arguments (in key order) and
// Spark settings, and SliceOf reads it back.
func TestRenderSlice(t *testing.T) {
	slice := map[string]string{"kafka-topic": "events", "kafka-starting-offsets": `{"events":{"0":5}}`, "kafka-ending-offsets": `{"events":{"0":9}}`}
	app, err := Render(query(minimalTemplate), schedule(), sliced(slice), locations)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(slice, SliceOf(app)); diff != "" {
		t.Errorf("SliceOf (-want +got):\n%s", diff)
	}
	args, _, _ := unstructured.NestedStringSlice(app.Object, "spec", "arguments")
	want := []string{`--laxity-kafka-ending-offsets={"events":{"0":9}}`, `--laxity-kafka-starting-offsets={"events":{"0":5}}`, "--laxity-kafka-topic=events"}
	if got := args[len(args)-4 : len(args)-1]; !slices.Equal(got, want) {
		t.Errorf("arguments end with %q, want %q before the output", got, want)
	}
	conf, _, _ := unstructured.NestedStringMap(app.Object, "spec", "sparkConf")
	if conf["spark.laxity.kafka-topic"] != "events" {
		t.Errorf("sparkConf %v lacks spark.laxity.kafka-topic", conf)
	}
	plain, err := Render(query(minimalTemplate), schedule(), batch(3, 100, 200), locations)
	if err != nil {
		t.Fatal(err)
	}
	if got := SliceOf(plain); got != nil {
		t.Errorf("SliceOf a batch without a slice = %v, want nil", got)
	}
}

// A batch of a query over several inputs carries each input's keys under
// the input's name and a dot, in every form, and SliceOf reads them back.
func TestRenderSliceOfSeveralInputs(t *testing.T) {
	slice := map[string]string{
		"interval-end":      "2026-12-01T00:06:15Z",
		"orders.from-tuple": "0", "orders.to-tuple": "25", "orders.kafka-topic": "orders",
		"lineitem.from-tuple": "0", "lineitem.to-tuple": "75", "lineitem.input": "s3a://tpch/lineitem/",
	}
	app, err := Render(query(minimalTemplate), schedule(), sliced(slice), locations)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(slice, SliceOf(app)); diff != "" {
		t.Errorf("SliceOf (-want +got):\n%s", diff)
	}
	if got := app.GetAnnotations()["laxity.dev/orders.kafka-topic"]; got != "orders" {
		t.Errorf("annotation laxity.dev/orders.kafka-topic = %q, want orders", got)
	}
	args, _, _ := unstructured.NestedStringSlice(app.Object, "spec", "arguments")
	if !slices.Contains(args, "--laxity-lineitem.input=s3a://tpch/lineitem/") {
		t.Errorf("arguments %q lack --laxity-lineitem.input", args)
	}
	conf, _, _ := unstructured.NestedStringMap(app.Object, "spec", "sparkConf")
	if conf["spark.laxity.orders.to-tuple"] != "25" || conf["spark.laxity.interval-end"] != "2026-12-01T00:06:15Z" {
		t.Errorf("sparkConf %v lacks the inputs' settings", conf)
	}
}

func TestNewAndNewList(t *testing.T) {
	if got := New().GetObjectKind().GroupVersionKind(); got != GroupVersionKind {
		t.Errorf("New() is a %v", got)
	}
	if got := NewList().GroupVersionKind().Kind; got != "SparkApplicationList" {
		t.Errorf("NewList() is a %v", got)
	}
}
