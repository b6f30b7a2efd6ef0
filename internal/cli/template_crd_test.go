package cli

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/laxity-dev/laxity/config/thirdparty"
)

var update = flag.Bool("update", false, "rewrite sparkapplications.crd.json from config/thirdparty's SparkApplication CRD")

// TestSparkApplicationsCRDIsThirdParty holds the SparkApplication CRD that
// templates are checked against to the one in config/thirdparty, as JSON:
// a refreshed CRD fails here until go test -update writes it again.
func TestSparkApplicationsCRDIsThirdParty(t *testing.T) {
	data, err := thirdparty.Read(thirdparty.SparkApplications)
	if err != nil {
		t.Fatal(err)
	}
	want, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("sparkapplications.crd.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(sparkApplicationsCRD, want) {
		t.Errorf("sparkapplications.crd.json (%d bytes) is not config/thirdparty's %s as JSON (%d bytes): go test ./internal/cli -run %s -update", len(sparkApplicationsCRD), thirdparty.SparkApplications, len(want), t.Name())
	}
}
