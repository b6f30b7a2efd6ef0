package structured

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/laxity-dev/laxity/internal/structured/keypaths"
)

// planList is a plan list as laxity plan -o json prints one, cut short.
const planList = `{"apiVersion":"laxity.dev/v1alpha1","kind":"PlanList","items":[{"apiVersion":"laxity.dev/v1alpha1","kind":"Plan","metadata":{"name":"tight","namespace":"analytics"},"origin":"2026-12-01T00:00:00Z","chosen":{"initialNodes":4,"batchSizeFactor":1,"cost":0.4477777777777778,"executableCost":0.6955555555555556,"maxNodes":4,"feasible":false,"improved":false,"policy":"LeastLaxity","failure":{"query":"too-late","lateSeconds":21}},"candidates":[{"initialNodes":2,"batchSizeFactor":1,"feasible":false}],"queries":[{"name":"too-late","batchSize":20000,"batches":3,"finish":626,"deadline":605,"slack":-21}],"steps":[{"query":"too-late","kind":"batch","index":0,"fromTuple":0,"toTuple":20000,"inputs":0,"ready":200,"start":200,"end":225,"nodes":4}],"nodes":[{"at":0,"nodes":2}],"requests":[{"at":0,"nodes":4}],"maxSupportedRateFactor":0,"searchSeconds":0.000108401}]}`

func TestWrite(t *testing.T) {
	type ordered struct {
		Zebra  string   `json:"zebra"`
		Apple  int      `json:"apple"`
		Mango  *float64 `json:"mango,omitempty"`
		Kiwi   []string `json:"kiwi"`
		Banana any      `json:"banana"`
	}
	half := 0.5
	tests := []struct {
		name, format string
		v            any
		want         string
	}{
		{"json keeps the fields' order", "json", ordered{Zebra: "z", Apple: 1, Kiwi: []string{}},
			"{\n  \"zebra\": \"z\",\n  \"apple\": 1,\n  \"kiwi\": [],\n  \"banana\": null\n}\n"},
		{"yaml keeps the same order; a map is sorted, y (a YAML 1.1 boolean) quoted", "yaml", ordered{Zebra: "z", Apple: 1, Mango: &half, Kiwi: []string{"a", "b"}, Banana: map[string]int{"y": 1, "x": 2}},
			"zebra: z\napple: 1\nmango: 0.5\nkiwi:\n- a\n- b\nbanana:\n  x: 2\n  \"y\": 1\n"},
		{"empty lists and objects stay so", "yaml", map[string]any{"items": []int{}, "metadata": struct{}{}},
			"items: []\nmetadata: {}\n"},
		{"strings a reader would misread are quoted", "yaml",
			[]string{"no", "on", "1.0", "12", "null", "~", "", "true", "2026-12-01T00:00:00Z", "a: b", "- a", "# c", "plain"},
			"- \"no\"\n- \"on\"\n- \"1.0\"\n- \"12\"\n- \"null\"\n- \"~\"\n- \"\"\n- \"true\"\n- \"2026-12-01T00:00:00Z\"\n- 'a: b'\n- '- a'\n- '# c'\n- plain\n"},
		{"numbers keep their JSON text", "yaml", []float64{1, 0.1, 1e21, 1e-7, -0.25},
			"- 1\n- 0.1\n- 1e+21\n- 1e-7\n- -0.25\n"},
		{"a scalar alone", "yaml", "text", "text\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := Write(&out, tc.format, tc.v); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
	if err := Write(&bytes.Buffer{}, "xml", 1); err == nil {
		t.Error("Write accepted format xml")
	}
}

// FuzzYAML: any JSON document laxity could print (Go's encoding of any
// value), with any string as a key and a value, converts to YAML that both
// a YAML 1.1 reader (sigs.k8s.io/yaml, kubectl's) and a YAML 1.2 one read
// back as the same value, with the keys in the same order.
func FuzzYAML(f *testing.F) {
	for _, seed := range []string{
		planList,
		`{"no":"no","yes":"on","n":"1.0","e":"1e5","x":"0x1F","null":"null","tilde":"~","empty":"","t":"2026-12-01","colon":"a: b","dash":"- a","hash":"# c","multi":"a\nb"}`,
		`{"b":[],"a":{},"z":[{"y":1,"x":[1.5,-0.25,1e+21,null,true,false]}]}`,
		`"a string"`, `[]`, `12`,
	} {
		f.Add([]byte(seed), "no")
	}
	f.Add([]byte(`{}`), "- 'x'\t\"y\"")
	f.Fuzz(func(t *testing.T, doc []byte, s string) {
		var v any
		if err := json.Unmarshal(doc, &v); err != nil {
			return
		}
		if m, ok := v.(map[string]any); ok {
			m[s] = s
		}
		data, err := json.Marshal(v)
		if err != nil {
			return
		}
		// What the value is, read as JSON (Go replaced invalid UTF-8).
		var want any
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		out, err := YAML(data)
		if err != nil {
			t.Fatalf("YAML(%s): %v", data, err)
		}
		converted, err := sigsyaml.YAMLToJSON(out)
		if err != nil {
			t.Fatalf("YAML 1.1 reader: %v\n%s", err, out)
		}
		var got any
		if err := json.Unmarshal(converted, &got); err != nil {
			t.Fatalf("YAML 1.1 reader's JSON: %v\n%s", err, converted)
		}
		if !reflect.DeepEqual(want, got) {
			t.Errorf("YAML 1.1 reader read back %v, want %v; YAML:\n%s", got, want, out)
		}
		var node yaml.Node
		if err := yaml.Unmarshal(out, &node); err != nil {
			t.Fatalf("YAML 1.2 reader: %v\n%s", err, out)
		}
		var fromNode any
		if err := node.Decode(&fromNode); err != nil {
			t.Fatalf("YAML 1.2 reader: %v\n%s", err, out)
		}
		normalised, err := json.Marshal(fromNode)
		if err != nil {
			t.Fatalf("YAML 1.2 reader's value %v: %v", fromNode, err)
		}
		var got12 any
		if err := json.Unmarshal(normalised, &got12); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(want, got12) {
			t.Errorf("YAML 1.2 reader read back %v, want %v; YAML:\n%s", got12, want, out)
		}
		jsonKeys, err := keypaths.JSON(data, "\x00")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(jsonKeys, keypaths.Node(&node, "\x00")); diff != "" {
			t.Errorf("keys in document order, JSON (-) against YAML (+):\n%s", diff)
		}
	})
}
