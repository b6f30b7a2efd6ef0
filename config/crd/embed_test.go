package crd

import (
	"bytes"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestJSONIsBases holds the embedded JSON CRDs to bases/: a CRD generated
// anew fails here until `make manifests` writes its JSON again.
func TestJSONIsBases(t *testing.T) {
	yamls, jsons := All(), AllJSON()
	if len(jsons) != len(yamls) {
		t.Fatalf("%d CRDs as JSON, %d as YAML: run make manifests", len(jsons), len(yamls))
	}
	for i, data := range yamls {
		want, err := yaml.YAMLToJSON(data)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(jsons[i], want) {
			t.Errorf("CRD %d of %d as JSON is not its YAML in bases/: run make manifests", i+1, len(yamls))
		}
	}
}
