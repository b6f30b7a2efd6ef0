/*
Copyright 2026 The laxity Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

const goodSchedule = `{"apiVersion":"laxity.dev/v1alpha1","kind":"ElasticSchedule",
"metadata":{"name":"tpch","namespace":"analytics","resourceVersion":"7","generation":2},
"spec":{"nodePool":{"sizes":[2,4],"pricePerNodeHour":"0.25","provisioningLeadTime":"6m",
"backend":{"scale":{"apiVersion":"cluster.x-k8s.io/v1beta1","kind":"MachineDeployment","name":"w"}}}},
"status":{"observedGeneration":1,"conditions":[{"type":"Ready","status":"True","reason":"DeadlinesMet","message":"","lastTransitionTime":"2026-12-01T00:00:00Z"}],"nodesReady":3}}`

const goodQuery = `{"apiVersion":"laxity.dev/v1alpha1","kind":"IntermittentQuery",
"metadata":{"name":"q1","namespace":"analytics"},
"spec":{"scheduleName":"tpch","window":{"start":"2026-12-01T00:00:00Z","end":"2026-12-01T01:00:00Z"},
"deadline":"2026-12-01T01:30:00Z","input":{"ratePerSecond":"9500","allowedLateness":"30s"},
"costModel":{"batch":{"overheadSeconds":"25","serialSecondsPerTuple":"2e-8","parallelSecondsPerTuple":"2e-5"},
"merge":{"overheadSeconds":"8","serialSecondsPerInput":"0.05","parallelSecondsPerInput":"0.4"}}},
"status":{"arrivedTuples":12,"batchSize":100}}`

// edit replaces from by to in doc, once.
func edit(t *testing.T, doc, from, to string) string {
	t.Helper()
	if strings.Count(doc, from) != 1 {
		t.Fatalf("%q is not in the document exactly once", from)
	}
	return strings.Replace(doc, from, to, 1)
}

func TestDecodeGoodObjects(t *testing.T) {
	var es ElasticSchedule
	if err := json.Unmarshal([]byte(goodSchedule), &es); err != nil {
		t.Fatal(err)
	}
	if es.DecodeError() != nil || es.Spec.NodePool.ProvisioningLeadTime.Duration != 6*time.Minute || es.Status.NodesReady == nil || *es.Status.NodesReady != 3 {
		t.Errorf("decoded %+v, DecodeError %v", es, es.DecodeError())
	}
	var q IntermittentQuery
	if err := json.Unmarshal([]byte(goodQuery), &q); err != nil {
		t.Fatal(err)
	}
	if q.DecodeError() != nil || q.Spec.Input.AllowedLateness.Duration != 30*time.Second {
		t.Errorf("decoded %+v, DecodeError %v", q, q.DecodeError())
	}
	// A failure recorded by an earlier decode into the same object does not
	// survive a good decode.
	es.Undecodable = &DecodeFailure{Field: "spec", Message: "old"}
	if err := json.Unmarshal([]byte(goodSchedule), &es); err != nil || es.DecodeError() != nil {
		t.Errorf("reused object: %v, DecodeError %v", err, es.DecodeError())
	}
}

func TestDecodeUndecodableSchedule(t *testing.T) {
	for _, tt := range []struct {
		name, old, new string
		field, message string
	}{
		{"duration overflow", `"provisioningLeadTime":"6m"`, `"provisioningLeadTime":"3000000h"`,
			"spec.nodePool.provisioningLeadTime", `time: invalid duration "3000000h"`},
		{"duration syntax", `"provisioningLeadTime":"6m"`, `"provisioningLeadTime":"soon"`,
			"spec.nodePool.provisioningLeadTime", `time: invalid duration "soon"`},
		{"duration wrong type", `"provisioningLeadTime":"6m"`, `"provisioningLeadTime":360`,
			"spec.nodePool.provisioningLeadTime", "number"},
		{"int32 overflow", `"sizes":[2,4]`, `"sizes":[2,3000000000]`,
			"spec.nodePool.sizes[1]", "a JSON number 3000000000 cannot be decoded as int32"},
		{"int32 fraction", `"sizes":[2,4]`, `"sizes":[2.5,4]`,
			"spec.nodePool.sizes[0]", "a JSON number 2.5 cannot be decoded as int32"},
		{"string for a list", `"sizes":[2,4]`, `"sizes":"2,4"`,
			"spec.nodePool.sizes", "a JSON string cannot be decoded as []int32"},
		{"number for a string", `"pricePerNodeHour":"0.25"`, `"pricePerNodeHour":0.25`,
			"spec.nodePool.pricePerNodeHour", "a JSON number cannot be decoded as string"},
		{"list for an object", `"backend":{"scale"`, `"backend":[],"x":{"scale"`,
			"spec.nodePool.backend", "cannot be decoded as v1alpha1.PoolBackend"},
		{"map value", `"pricePerNodeHour":"0.25"`, `"pricePerNodeHour":"0.25","nodeSelector":{"a":"b","pool":7}`,
			`spec.nodePool.nodeSelector["pool"]`, "a JSON number cannot be decoded as string"},
		{"spec not an object", `"spec":{"nodePool"`, `"spec":"none","x":{"nodePool"`,
			"spec", "cannot be decoded as v1alpha1.ElasticScheduleSpec"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var es ElasticSchedule
			if err := json.Unmarshal([]byte(edit(t, goodSchedule, tt.old, tt.new)), &es); err != nil {
				t.Fatalf("Unmarshal: %v, want the failure recorded on the object", err)
			}
			err := es.DecodeError()
			var failure *DecodeFailure
			if !errors.As(err, &failure) {
				t.Fatalf("DecodeError() = %v, want a *DecodeFailure", err)
			}
			if failure.Field != tt.field || !strings.Contains(failure.Message, tt.message) {
				t.Errorf("DecodeError() = %+v, want field %s and a message containing %q", failure, tt.field, tt.message)
			}
			if !strings.HasPrefix(err.Error(), tt.field+": cannot be decoded: ") {
				t.Errorf("Error() = %q, want it to start with the field", err)
			}
			// Metadata and status are kept, the spec is not.
			if es.Name != "tpch" || es.Namespace != "analytics" || es.ResourceVersion != "7" || es.Generation != 2 || es.Kind != "ElasticSchedule" {
				t.Errorf("metadata not kept: %+v %+v", es.TypeMeta, es.ObjectMeta)
			}
			if len(es.Status.Conditions) != 1 || es.Status.NodesReady == nil || *es.Status.NodesReady != 3 {
				t.Errorf("status not kept: %+v", es.Status)
			}
			if es.Spec.NodePool.PricePerNodeHour != "" || es.Spec.NodePool.Sizes != nil {
				t.Errorf("spec kept: %+v", es.Spec)
			}
			// The failure is never encoded.
			data, err := json.Marshal(&es)
			if err != nil || strings.Contains(string(data), "annot be decoded") || strings.Contains(string(data), "ndecodable") {
				t.Errorf("Marshal: %s, %v", data, err)
			}
			// And a deep copy keeps it.
			if cp := es.DeepCopy(); cp.DecodeError() == nil || cp.DecodeError().Error() != err2s(es.DecodeError()) {
				t.Errorf("DeepCopy lost the failure")
			}
		})
	}
}

func err2s(err error) string { return err.Error() }

func TestDecodeUndecodableQuery(t *testing.T) {
	for _, tt := range []struct {
		name, old, new string
		field, message string
	}{
		{"time", `"deadline":"2026-12-01T01:30:00Z"`, `"deadline":"tomorrow"`, "spec.deadline", "tomorrow"},
		{"nested time", `"end":"2026-12-01T01:00:00Z"`, `"end":"2026-13-01T01:00:00Z"`, "spec.window.end", "month out of range"},
		{"lateness overflow", `"allowedLateness":"30s"`, `"allowedLateness":"99999999999h"`, "spec.input.allowedLateness", "invalid duration"},
		{"int64 overflow", `"ratePerSecond":"9500"`, `"totalTuples":99999999999999999999`, "spec.input.totalTuples", "cannot be decoded as int64"},
		{"wrong type in a list", `"ratePerSecond":"9500"`, `"profile":[{"after":"0s","ratePerSecond":"1"},{"after":5,"ratePerSecond":"1"}]`,
			"spec.input.profile[1].after", "number"},
		{"status int32 overflow", `"batchSize":100`, `"batchSize":100,"batches":[{"index":3000000000}]`,
			"status.batches[0].index", "cannot be decoded as int32"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var q IntermittentQuery
			if err := json.Unmarshal([]byte(edit(t, goodQuery, tt.old, tt.new)), &q); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			var failure *DecodeFailure
			if !errors.As(q.DecodeError(), &failure) || failure.Field != tt.field || !strings.Contains(failure.Message, tt.message) {
				t.Fatalf("DecodeError() = %#v, want field %s and a message containing %q", failure, tt.field, tt.message)
			}
			if q.Name != "q1" || q.Spec.ScheduleName != "tpch" {
				t.Errorf("name %q, scheduleName %q: want q1 and tpch kept", q.Name, q.Spec.ScheduleName)
			}
			if !q.Spec.Deadline.IsZero() || q.Spec.Input.RatePerSecond != "" {
				t.Errorf("spec kept: %+v", q.Spec)
			}
			// What decodes of the status is kept, field by field.
			if q.Status.ArrivedTuples == nil || *q.Status.ArrivedTuples != 12 || q.Status.BatchSize != 100 {
				t.Errorf("status not kept: %+v", q.Status)
			}
		})
	}
}

func TestDecodeMalformedMetadataFails(t *testing.T) {
	for _, doc := range []string{
		edit(t, goodSchedule, `"metadata":{"name":"tpch",`, `"metadata":{"name":7,`),
		`[1,2]`,
		`{"metadata":`,
	} {
		var es ElasticSchedule
		if err := json.Unmarshal([]byte(doc), &es); err == nil {
			t.Errorf("Unmarshal(%.40s…): no error, want one: an object without usable metadata cannot be reported", doc)
		}
	}
}

// TestDecodeListWithOneBadItem decodes a LIST response through the codec
// the clients build from the scheme: one undecodable item no longer fails
// the whole list.
func TestDecodeListWithOneBadItem(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	codecs := serializer.NewCodecFactory(scheme)
	bad := edit(t, strings.Replace(goodSchedule, `"name":"tpch"`, `"name":"bad"`, 1), `"provisioningLeadTime":"6m"`, `"provisioningLeadTime":"3000000h"`)
	other := strings.Replace(goodSchedule, `"name":"tpch"`, `"name":"other"`, 1)
	list := `{"apiVersion":"laxity.dev/v1alpha1","kind":"ElasticScheduleList","metadata":{"resourceVersion":"10"},"items":[` +
		goodSchedule + "," + bad + "," + other + `]}`

	for name, decoder := range map[string]runtime.Decoder{
		"universal deserializer": codecs.UniversalDeserializer(),
		"versioned decoder":      codecs.DecoderToVersion(codecs.UniversalDeserializer(), GroupVersion),
	} {
		t.Run(name, func(t *testing.T) {
			obj, gvk, err := decoder.Decode([]byte(list), nil, nil)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			got, ok := obj.(*ElasticScheduleList)
			if !ok {
				t.Fatalf("Decode: got %T (%v), want *ElasticScheduleList", obj, gvk)
			}
			if len(got.Items) != 3 {
				t.Fatalf("Decode: %d items, want 3", len(got.Items))
			}
			for i, want := range []string{"tpch", "bad", "other"} {
				it := got.Items[i]
				if it.Name != want {
					t.Errorf("item %d: name %q, want %q", i, it.Name, want)
				}
				if bad := want == "bad"; bad != (it.DecodeError() != nil) {
					t.Errorf("item %s: DecodeError() = %v", want, it.DecodeError())
				}
				if want != "bad" && it.Spec.NodePool.ProvisioningLeadTime.Duration != 6*time.Minute {
					t.Errorf("item %s: spec not decoded: %+v", want, it.Spec)
				}
			}
			if err := got.Items[1].DecodeError(); err == nil || !strings.Contains(err.Error(), "spec.nodePool.provisioningLeadTime") {
				t.Errorf("bad item: DecodeError() = %v, want it to name spec.nodePool.provisioningLeadTime", err)
			}
		})
	}

	// A single object through the same codec.
	obj, _, err := codecs.UniversalDeserializer().Decode([]byte(bad), nil, nil)
	if err != nil {
		t.Fatalf("Decode(object): %v", err)
	}
	if es := obj.(*ElasticSchedule); es.DecodeError() == nil || es.Name != "bad" {
		t.Errorf("Decode(object): %+v", es)
	}
}
