package spec

import (
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/laxity-dev/laxity/config/crd"
)

// TestDefaultsMatchTheCRDs holds the defaults this package repeats to the
// ones the API server applies, so that an object built in Go plans as the
// same object read from a cluster does.
func TestDefaultsMatchTheCRDs(t *testing.T) {
	for _, tc := range []struct {
		crd  []byte
		path []string
		want time.Duration
	}{
		{crd.ElasticSchedules(), []string{"spec", "nodePool", "billingMinimum"}, DefaultBillingMinimum},
		{crd.ElasticSchedules(), []string{"spec", "nodePool", "provisioningLeadTime"}, DefaultProvisioningLeadTime},
		{crd.ElasticSchedules(), []string{"spec", "planning", "maxBatchDuration"}, DefaultMaxBatchDuration},
		{crd.ElasticSchedules(), []string{"spec", "planning", "rateWindow"}, DefaultRateWindow},
		{crd.IntermittentQueries(), []string{"spec", "input", "objectStore", "settle"}, DefaultObjectStoreSettle},
	} {
		var c apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(tc.crd, &c); err != nil {
			t.Fatal(err)
		}
		schema := c.Spec.Versions[0].Schema.OpenAPIV3Schema
		for _, name := range tc.path {
			next, ok := schema.Properties[name]
			if !ok {
				t.Fatalf("%s: no field %v", c.Name, tc.path)
			}
			schema = &next
		}
		if schema.Default == nil {
			t.Errorf("%s %v: no default in the CRD, want %v", c.Name, tc.path, tc.want)
			continue
		}
		var text string
		if err := yaml.Unmarshal(schema.Default.Raw, &text); err != nil {
			t.Fatalf("%s %v: default %s: %v", c.Name, tc.path, schema.Default.Raw, err)
		}
		if got, err := time.ParseDuration(text); err != nil || got != tc.want {
			t.Errorf("%s %v: the CRD defaults to %q, this package to %v", c.Name, tc.path, text, tc.want)
		}
	}
}
