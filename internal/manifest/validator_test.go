package manifest

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// nodePoolCRD is Karpenter's NodePool CRD (karpenter.sh/v1), unmodified: a
// real third-party CRD with CEL rules (including transition rules),
// defaults, int-or-string fields, list types and scale and status
// subresources.
const nodePoolCRD = "testdata/karpenter.sh_nodepools.yaml"

var nodePoolValidator = sync.OnceValues(func() (*Validator, error) {
	data, err := os.ReadFile(nodePoolCRD)
	if err != nil {
		return nil, err
	}
	return NewValidator(data)
})

func mustNodePoolValidator(t testing.TB) *Validator {
	t.Helper()
	v, err := nodePoolValidator()
	if err != nil {
		t.Fatalf("NewValidator(%s): %v", nodePoolCRD, err)
	}
	return v
}

func mustYAMLObject(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("unmarshalling test object: %v", err)
	}
	return m
}

const validNodePool = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: spark
  labels: {team: analytics}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
      - {key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ["3"]}
`

func TestValidatorDefaults(t *testing.T) {
	v := mustNodePoolValidator(t)
	in := mustYAMLObject(t, validNodePool)
	before := mustYAMLObject(t, validNodePool)
	out, errs := v.Validate(in)
	if len(errs) > 0 {
		t.Fatalf("Validate: unexpected errors:\n%v", errs.ToAggregate())
	}
	if diff := cmp.Diff(before, in); diff != "" {
		t.Errorf("Validate modified its input (-before +after):\n%s", diff)
	}
	want := mustYAMLObject(t, `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: spark
  labels: {team: analytics}
spec:
  disruption:
    budgets: [{nodes: 10%}]
    consolidateAfter: 0s
    consolidationPolicy: WhenEmptyOrUnderutilized
  template:
    spec:
      expireAfter: 720h
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
      - {key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ["3"]}
`)
	// Integers decode as int64, as on the server.
	if diff := cmp.Diff(normalizeForTest(t, want), out); diff != "" {
		t.Errorf("Validate: defaulted object mismatch (-want +got):\n%s", diff)
	}
}

func normalizeForTest(t testing.TB, m map[string]any) map[string]any {
	t.Helper()
	n, err := normalize(m)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestValidatorNodePool(t *testing.T) {
	v := mustNodePoolValidator(t)
	tests := []struct {
		name string
		// edit changes the valid NodePool.
		edit func(m map[string]any)
		// want are the errors, each "field: substring of the message";
		// none means valid.
		want []string
	}{
		{name: "valid"},
		{
			name: "status dropped like on create",
			edit: func(m map[string]any) { m["status"] = map[string]any{"nodes": "not a number"} },
		},
		{
			name: "namespace cleared for a cluster-scoped resource",
			edit: func(m map[string]any) { meta(m)["namespace"] = "ignored" },
		},
		{
			name: "go ints are accepted",
			edit: func(m map[string]any) { spec(m)["weight"] = 10 },
		},
		{
			name: "openapi maximum",
			edit: func(m map[string]any) { spec(m)["weight"] = 101 },
			want: []string{"spec.weight: should be less than or equal to 100"},
		},
		{
			name: "openapi enum and required, CEL then skipped",
			edit: func(m map[string]any) {
				tspec(m)["requirements"] = []any{map[string]any{"key": "a", "operator": "Foo", "values": []any{"x"}}}
				delete(tspec(m), "nodeClassRef")
			},
			want: []string{
				"spec.template.spec.nodeClassRef: Required value",
				`spec.template.spec.requirements[0].operator: Unsupported value: "Foo"`,
				": some validation rules were not checked",
			},
		},
		{
			name: "openapi pattern",
			edit: func(m map[string]any) { tspec(m)["expireAfter"] = "30 days" },
			want: []string{"spec.template.spec.expireAfter: should match"},
		},
		{
			name: "openapi type",
			edit: func(m map[string]any) { spec(m)["replicas"] = "three" },
			want: []string{
				".spec.replicas: accessor error", // the scale subresource's check
				`spec.replicas: Invalid value: "string"`,
				": some validation rules were not checked",
			},
		},
		{
			name: "CEL rule on a list",
			edit: func(m map[string]any) {
				tspec(m)["requirements"] = []any{map[string]any{"key": "a", "operator": "In", "values": []any{}}}
			},
			want: []string{"spec.template.spec.requirements: Invalid value: requirements with operator 'In' must have a value defined"},
		},
		{
			name: "CEL rules on the spec",
			edit: func(m map[string]any) {
				spec(m)["replicas"] = 3
				spec(m)["weight"] = 5
				spec(m)["limits"] = map[string]any{"cpu": "10"}
			},
			want: []string{
				"spec: Invalid value: only 'limits.nodes' is supported on static NodePools",
				"spec: Invalid value: 'weight' is not supported on static NodePools",
			},
		},
		{
			name: "CEL rule on a string",
			edit: func(m map[string]any) { nodeClassRef(m)["name"] = "" },
			want: []string{`spec.template.spec.nodeClassRef.name: Invalid value: "": name may not be empty`},
		},
		{
			name: "CEL rule on a map",
			edit: func(m map[string]any) {
				spec(m)["template"].(map[string]any)["metadata"] = map[string]any{"labels": map[string]any{"karpenter.sh/x": "y"}}
			},
			want: []string{`spec.template.metadata.labels: Invalid value: label domain "karpenter.sh" is restricted`},
		},
		{
			name: "CEL runtime error is an error, not a panic",
			edit: func(m map[string]any) {
				tspec(m)["requirements"] = []any{map[string]any{"key": "a", "operator": "Gt", "values": []any{"x"}}}
			},
			want: []string{"spec.template.spec.requirements: Invalid value"},
		},
		{
			name: "defaulted list items are validated",
			edit: func(m map[string]any) {
				spec(m)["disruption"] = map[string]any{"budgets": []any{map[string]any{"schedule": "@daily"}}}
			},
			want: []string{"spec.disruption.budgets: Invalid value: 'schedule' must be set with 'duration'"},
		},
		{
			name: "transition rules are not evaluated on create",
			edit: func(m map[string]any) { spec(m)["replicas"] = 0 },
		},
		{
			name: "unknown fields",
			edit: func(m map[string]any) {
				spec(m)["bogus"] = true
				nodeClassRef(m)["extra"] = 1
				tspec(m)["requirements"].([]any)[1].(map[string]any)["typo"] = "x"
				meta(m)["lables"] = map[string]any{}
				m["extra"] = "x"
			},
			want: []string{
				"extra: Forbidden: unknown field",
				"metadata.lables: Forbidden: unknown field",
				"spec.bogus: Forbidden: unknown field",
				"spec.template.spec.nodeClassRef.extra: Forbidden: unknown field",
				"spec.template.spec.requirements[1].typo: Forbidden: unknown field",
			},
		},
		{
			name: "name required",
			edit: func(m map[string]any) { delete(meta(m), "name") },
			want: []string{"metadata.name: Required value", ": some validation rules were not checked"},
		},
		{
			name: "generateName cannot be used offline",
			edit: func(m map[string]any) { delete(meta(m), "name"); meta(m)["generateName"] = "spark-" },
			want: []string{"metadata.name: Required value: name is required (generateName cannot be used offline)", ": some validation rules were not checked"},
		},
		{
			name: "name a DNS subdomain",
			edit: func(m map[string]any) { meta(m)["name"] = "Spark_Pool" },
			want: []string{`metadata.name: Invalid value: "Spark_Pool": a lowercase RFC 1123 subdomain`},
		},
		{
			name: "label values",
			edit: func(m map[string]any) { meta(m)["labels"] = map[string]any{"team": "a b"} },
			want: []string{`metadata.labels: Invalid value: "a b"`},
		},
		{
			name: "metadata not an object",
			edit: func(m map[string]any) { m["metadata"] = "spark" },
			want: []string{"metadata: Invalid value"},
		},
		{
			name: "no metadata",
			edit: func(m map[string]any) { delete(m, "metadata") },
			want: []string{"metadata.name: Required value", ": some validation rules were not checked"},
		},
		{
			name: "wrong kind",
			edit: func(m map[string]any) { m["kind"] = "NodeClaim" },
			want: []string{`kind: Invalid value: "NodeClaim": must be NodePool`},
		},
		{
			name: "unserved version",
			edit: func(m map[string]any) { m["apiVersion"] = "karpenter.sh/v1beta1" },
			want: []string{`apiVersion: Unsupported value: "karpenter.sh/v1beta1": supported values: "karpenter.sh/v1"`},
		},
		{
			name: "wrong group",
			edit: func(m map[string]any) { m["apiVersion"] = "example.com/v1" },
			want: []string{`apiVersion: Invalid value: "example.com/v1": must be karpenter.sh/<version>`},
		},
		{
			name: "not JSON",
			edit: func(m map[string]any) { spec(m)["weight"] = func() {} },
			want: []string{": encoding object as json"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustYAMLObject(t, validNodePool)
			if tt.edit != nil {
				tt.edit(m)
			}
			_, errs := v.Validate(m)
			got := make([]string, len(errs))
			for i, e := range errs {
				got[i] = e.Error()
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Validate: got %d errors, want %d:\n%s", len(got), len(tt.want), strings.Join(got, "\n"))
			}
			for i, w := range tt.want {
				f, msg, _ := strings.Cut(w, ": ")
				if f == "" {
					f = "<nil>"
				}
				if errs[i].Field != f || !strings.Contains(got[i], msg) {
					t.Errorf("Validate: error %d = %q, want field %q and message containing %q", i, got[i], f, msg)
				}
			}
		})
	}
}

func TestValidatorNodePoolReturnsObjectOnErrors(t *testing.T) {
	v := mustNodePoolValidator(t)
	m := mustYAMLObject(t, validNodePool)
	spec(m)["weight"] = 0
	spec(m)["bogus"] = 1
	out, errs := v.Validate(m)
	if len(errs) != 2 {
		t.Fatalf("Validate: got %v, want 2 errors", errs)
	}
	if out == nil {
		t.Fatal("Validate: got no object with the errors")
	}
	if _, ok := out["spec"].(map[string]any)["bogus"]; ok {
		t.Error("Validate: unknown field not pruned")
	}
	if _, ok := out["spec"].(map[string]any)["disruption"]; !ok {
		t.Error("Validate: defaults not applied")
	}
}

func TestValidatorScaleSubresource(t *testing.T) {
	v := mustNodePoolValidator(t)
	m := mustYAMLObject(t, validNodePool)
	spec(m)["replicas"] = int64(1) << 40
	_, errs := v.Validate(m)
	if len(errs) != 1 || errs[0].Field != ".spec.replicas" || errs[0].Type != field.ErrorTypeInvalid {
		t.Fatalf("Validate: got %v, want one invalid .spec.replicas", errs)
	}
}

func TestValidatorConcurrent(t *testing.T) {
	v := mustNodePoolValidator(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			m := mustYAMLObject(t, validNodePool)
			spec(m)["weight"] = 90 + i*3 // 8 of them are > 100
			_, errs := v.Validate(m)
			if wantErr := 90+i*3 > 100; (len(errs) > 0) != wantErr {
				t.Errorf("Validate(weight %d): got %v", 90+i*3, errs)
			}
		})
	}
	wg.Wait()
}

func TestNewValidatorErrors(t *testing.T) {
	crd, err := os.ReadFile(nodePoolCRD)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		crd  string
		want string
	}{
		{name: "not yaml", crd: "a: [", want: "decoding custom resource definition"},
		{name: "not a crd", crd: "apiVersion: v1\nkind: ConfigMap\n", want: "want apiextensions.k8s.io/v1 CustomResourceDefinition"},
		{name: "unknown field", crd: strings.Replace(string(crd), "  scope: Cluster", "  scope: Cluster\n  scoop: x", 1), want: `unknown field "scoop"`},
		{
			name: "CEL rule does not compile",
			crd:  strings.Replace(string(crd), "rule: self != ''", "rule: self !=== ''", 1),
			want: "x-kubernetes-validations[0].rule: Invalid value",
		},
		{
			name: "default does not match the schema",
			crd:  strings.Replace(string(crd), "default: 720h", "default: 30 days", 1),
			want: "should match",
		},
		{
			name: "not structural",
			crd:  strings.Replace(string(crd), "                weight:\n", "                weight:\n                  x-kubernetes-preserve-unknown-fields: false\n                  anyOf: [{type: string}]\n", 1),
			want: "invalid custom resource definition nodepools.karpenter.sh",
		},
		{
			name: "no served version",
			crd:  strings.Replace(string(crd), "served: true", "served: false", 1),
			want: "no served version",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewValidator([]byte(tt.crd))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewValidator: got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestValidatorAccessors(t *testing.T) {
	v := mustNodePoolValidator(t)
	if got := v.GroupKind().String(); got != "NodePool.karpenter.sh" {
		t.Errorf("GroupKind() = %q", got)
	}
	if v.Namespaced() {
		t.Error("Namespaced() = true, want false")
	}
	if diff := cmp.Diff([]string{"v1"}, v.Versions()); diff != "" {
		t.Errorf("Versions() mismatch (-want +got):\n%s", diff)
	}
}

func meta(m map[string]any) map[string]any { return m["metadata"].(map[string]any) }
func spec(m map[string]any) map[string]any { return m["spec"].(map[string]any) }
func tspec(m map[string]any) map[string]any {
	return spec(m)["template"].(map[string]any)["spec"].(map[string]any)
}
func nodeClassRef(m map[string]any) map[string]any {
	return tspec(m)["nodeClassRef"].(map[string]any)
}

func BenchmarkValidateNodePool(b *testing.B) {
	v := mustNodePoolValidator(b)
	m := mustYAMLObject(b, validNodePool)
	for b.Loop() {
		if _, errs := v.Validate(m); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}
