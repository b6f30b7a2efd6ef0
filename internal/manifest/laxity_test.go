package manifest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/config/crd"
	"github.com/laxity-dev/laxity/config/thirdparty"
)

const (
	samplesDir = "../../config/samples"
	// The API tests' shared tables: the same files the envtest suite sends
	// to a real API server.
	apiValidDir   = "../../test/api/testdata/valid"
	apiInvalidDir = "../../test/api/testdata/invalid"
)

const (
	schedule = `apiVersion: laxity.dev/v1alpha1
kind: ElasticSchedule
metadata: {name: tpch, namespace: analytics}
spec:
  nodePool:
    sizes: [2, 4, 10]
    pricePerNodeHour: "0.25"
    backend:
      scale: {apiVersion: cluster.x-k8s.io/v1beta1, kind: MachineDeployment, name: spark-workers}
`
	query = `apiVersion: laxity.dev/v1alpha1
kind: IntermittentQuery
metadata: {name: q1, namespace: analytics}
spec:
  scheduleName: tpch
  window: {start: "2026-12-01T00:00:00Z", end: "2026-12-01T01:15:00Z"}
  deadline: "2026-12-01T01:40:00Z"
  input:
    ratePerSecond: "9500"
  costModel:
    batch: {overheadSeconds: "25", serialSecondsPerTuple: "2e-8", parallelSecondsPerTuple: "2e-5"}
    merge: {overheadSeconds: "8", serialSecondsPerInput: "0.05", parallelSecondsPerInput: "0.4"}
  sparkApplication: {type: Scala, driver: {cores: 1}}
`
)

func TestEmbeddedCRDs(t *testing.T) {
	for _, name := range []string{crd.ElasticSchedulesFile, crd.IntermittentQueriesFile, crd.RecurringQueriesFile, crd.TenantPoliciesFile} {
		onDisk, err := os.ReadFile(filepath.Join("../../config/crd", name))
		if err != nil {
			t.Fatal(err)
		}
		embedded, err := crd.FS.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(onDisk, embedded) {
			t.Errorf("embedded %s differs from the file", name)
		}
	}
	if got := len(crd.All()); got != 4 {
		t.Fatalf("crd.All(): %d CRDs, want 4", got)
	}
	if !bytes.Equal(crd.ElasticSchedules(), crd.All()[0]) || !bytes.Equal(crd.IntermittentQueries(), crd.All()[1]) || !bytes.Equal(crd.RecurringQueries(), crd.All()[2]) || !bytes.Equal(crd.TenantPolicies(), crd.All()[3]) {
		t.Error("crd.All() is not ordered by file name")
	}
	l, err := NewLaxityLoader()
	if err != nil {
		t.Fatalf("NewLaxityLoader: %v", err)
	}
	for _, kind := range []string{"ElasticSchedule", "IntermittentQuery", "RecurringQuery"} {
		v := l.validators[v1alpha1.GroupVersion.WithKind(kind).GroupKind()]
		if v == nil || !v.Namespaced() || !cmp.Equal(v.Versions(), []string{"v1alpha1"}) {
			t.Errorf("validator for %s: %+v", kind, v)
		}
	}
}

// TestLoadSamples: every sample a user is pointed to must plan.
func TestLoadSamples(t *testing.T) {
	set, err := Load(samplesDir)
	if err != nil {
		t.Fatalf("Load(%s):\n%v", samplesDir, err)
	}
	if len(set.Schedules) == 0 || len(set.Queries) == 0 {
		t.Errorf("Load(%s): %d schedules and %d queries, want some of each", samplesDir, len(set.Schedules), len(set.Queries))
	}
}

// TestLoadAPIValid loads each file the envtest suite creates on a real API
// server.
func TestLoadAPIValid(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(apiValidDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("listing %s: %v (%d files)", apiValidDir, err, len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			set, err := Load(f)
			if err != nil {
				t.Fatalf("Load:\n%v", err)
			}
			if len(set.Schedules)+len(set.Queries)+len(set.Recurring) == 0 {
				t.Error("Load: no objects")
			}
		})
	}
}

// TestLoadAPIInvalid is the offline half of the shared table of invalid
// manifests: each file the envtest suite proves the API server rejects must
// be rejected here, with an error on the field (and with the message) its
// header names.
func TestLoadAPIInvalid(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(apiInvalidDir, "*.yaml"))
	if err != nil || len(files) < 30 {
		t.Fatalf("listing %s: %v (%d files, want at least 30)", apiInvalidDir, err, len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			wantField, wantMessage, err := readInvalidHeader(f)
			if err != nil {
				t.Fatal(err)
			}
			set, err := Load(f)
			if err == nil {
				t.Fatalf("Load: accepted %+v, want an error on %s", set, wantField)
			}
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("Load: error %v is not an ErrorList", err)
			}
			found := false
			for _, e := range list {
				var fe *field.Error
				// A rule on the whole object (such as the one on
				// metadata.name) is reported on the root, its message
				// starting with the field.
				if errors.As(e, &fe) && (fe.Field == wantField || isRoot(fe.Field) && strings.HasPrefix(fe.Detail, wantField+" ")) && strings.Contains(e.Error(), wantMessage) {
					found = true
				}
				if !strings.HasPrefix(e.Error(), f+": document 1: ") {
					t.Errorf("error %q does not name the file and document", e)
				}
			}
			if !found {
				t.Errorf("Load: no error on field %q with message %q in:\n%v", wantField, wantMessage, err)
			}
		})
	}
}

// isRoot reports whether a field.Error's Field is the whole object.
func isRoot(f string) bool { return f == "" || f == "<nil>" }

// readInvalidHeader reads the "# field:" and "# message:" comments that
// start a file of the invalid table.
func readInvalidHeader(path string) (fieldPath, message string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "#") {
			break
		}
		key, value, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "#")), ":")
		switch key {
		case "field":
			fieldPath = strings.TrimSpace(value)
		case "message":
			message = strings.TrimSpace(value)
		}
	}
	if fieldPath == "" {
		return "", "", fmt.Errorf("%s: no `# field:` header", path)
	}
	return fieldPath, message, nil
}

func TestReadTyped(t *testing.T) {
	noNamespace := strings.Replace(query, "metadata: {name: q1, namespace: analytics}", "metadata: {name: q2}", 1)
	orphan := strings.Replace(query, "scheduleName: tpch", "scheduleName: nowhere", 1)
	orphan = strings.Replace(orphan, "name: q1", "name: q3", 1)
	set, err := Read(
		File{"b.yaml", []byte(noNamespace + "---\n" + orphan)},
		File{"a.yaml", []byte("# the workload\n" + query + "---\n" + configMap + "---\n" + schedule)},
	)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}

	if len(set.Schedules) != 1 {
		t.Fatalf("Read: %d schedules, want 1", len(set.Schedules))
	}
	es := set.Schedules[0]
	if diff := cmp.Diff(Source{File: "a.yaml", Document: 3, Line: 21}, es.Source); diff != "" {
		t.Errorf("schedule source mismatch (-want +got):\n%s", diff)
	}
	wantPlanning := v1alpha1.Planning{
		BatchSizeFactors:     []int32{1, 2, 4, 8, 16, 32},
		BacktrackStep:        1,
		MaxBatchDuration:     metav1.Duration{Duration: 10 * time.Minute},
		Policy:               "LeastLaxity",
		Objective:            v1alpha1.ObjectiveExecutable,
		Search:               v1alpha1.SearchImprove,
		RateModel:            "Pessimistic",
		RateWindow:           metav1.Duration{Duration: 3 * time.Minute},
		RateTolerancePercent: ptr(int32(2)),
		Learning:             v1alpha1.LearningApply,
		Sharing:              v1alpha1.SharingAuto,
		Concurrency:          v1alpha1.ConcurrencySequential,
	}
	if diff := cmp.Diff(wantPlanning, es.Object.Spec.Planning); diff != "" {
		t.Errorf("schedule planning defaults mismatch (-want +got):\n%s", diff)
	}
	if es.Object.Spec.NodePool.BillingMinimum == nil || es.Object.Spec.NodePool.BillingMinimum.Duration != time.Minute {
		t.Errorf("billingMinimum = %v, want the 60s default", es.Object.Spec.NodePool.BillingMinimum)
	}
	if es.Object.APIVersion != "laxity.dev/v1alpha1" || es.Object.Kind != "ElasticSchedule" {
		t.Errorf("schedule type meta = %+v", es.Object.TypeMeta)
	}

	var got []string
	for _, q := range set.Queries {
		got = append(got, fmt.Sprintf("%s %s/%s", q.Source, q.Object.Namespace, q.Object.Name))
	}
	want := []string{"a.yaml: document 1 analytics/q1", "b.yaml: document 1 default/q2", "b.yaml: document 2 analytics/q3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("queries mismatch (-want +got):\n%s", diff)
	}
	q := set.Queries[0].Object
	if q.Spec.Input.Granularity != 1 || q.Spec.Input.AllowedLateness.Duration != 0 {
		t.Errorf("input defaults: granularity %d, allowedLateness %v", q.Spec.Input.Granularity, q.Spec.Input.AllowedLateness)
	}
	if want := time.Date(2026, 12, 1, 1, 40, 0, 0, time.UTC); !q.Spec.Deadline.Time.Equal(want) {
		t.Errorf("deadline = %v, want %v", q.Spec.Deadline, want)
	}
	if q.Spec.SparkApplication == nil || string(q.Spec.SparkApplication.Raw) != `{"driver":{"cores":1},"type":"Scala"}` {
		t.Errorf("sparkApplication = %v, want it kept as is", q.Spec.SparkApplication)
	}

	if s := set.Schedule("analytics", "tpch"); s == nil || s.Object.Name != "tpch" {
		t.Errorf("Schedule(analytics, tpch) = %v", s)
	}
	if s := set.Schedule("default", "tpch"); s != nil {
		t.Errorf("Schedule(default, tpch) = %v, want nil", s)
	}
	if qs := set.QueriesFor("analytics", "tpch"); len(qs) != 1 || qs[0].Object.Name != "q1" {
		t.Errorf("QueriesFor(analytics, tpch) = %v, want q1", qs)
	}
}

func TestReadErrors(t *testing.T) {
	badDeadline := strings.Replace(query, `deadline: "2026-12-01T01:40:00Z"`, `deadline: "2026-12-01T01:00:00Z"`, 1)
	tests := []struct {
		name  string
		files []File
		want  []string
	}{
		{
			name:  "the example of the design",
			files: []File{{"config/samples/bad.yaml", []byte(schedule + "---\n" + badDeadline)}},
			want:  []string{`config/samples/bad.yaml: document 2: IntermittentQuery analytics/q1: spec.deadline: Invalid value: spec.deadline must be after spec.window.end`},
		},
		{
			name: "every error of every file",
			files: []File{
				{"b.yaml", []byte(strings.Replace(schedule, "sizes: [2, 4, 10]", "sizes: [4, 2]\n    sizez: [1]", 1))},
				{"a.yaml", []byte(strings.Replace(badDeadline, "metadata: {name: q1, namespace: analytics}", "metadata: {name: q1}", 1) + "---\nkind: Foo\napiVersion: laxity.dev/v1alpha1\n---\n  bad: [yaml\n")},
			},
			want: []string{
				`a.yaml: document 1: IntermittentQuery default/q1: spec.deadline: Invalid value: spec.deadline must be after spec.window.end`,
				`a.yaml: document 2: kind: Unsupported value: "Foo": supported values: "ElasticSchedule", "IntermittentQuery", "RecurringQuery", "TenantPolicy"`,
				`a.yaml: document 3: line 18: invalid yaml: did not find expected ',' or ']'`,
				`b.yaml: document 1: ElasticSchedule analytics/tpch: spec.nodePool.sizes: Invalid value: spec.nodePool.sizes must be in ascending order`,
				`b.yaml: document 1: ElasticSchedule analytics/tpch: spec.nodePool.sizez: Forbidden: unknown field`,
			},
		},
		{
			name: "duplicates across files",
			files: []File{
				{"two.yaml", []byte(query)},
				{"one.yaml", []byte(schedule + "---\n" + query)},
			},
			want: []string{`two.yaml: document 1: IntermittentQuery analytics/q1: duplicate object: already defined in one.yaml: document 2`},
		},
		{
			name: "same name, different kinds or namespaces",
			files: []File{{"ok.yaml", []byte(schedule + "---\n" +
				strings.Replace(schedule, "namespace: analytics", "namespace: default", 1) + "---\n" +
				strings.Replace(query, "name: q1", "name: tpch", 1))}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(tt.files...)
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Read: errors mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeStrict(t *testing.T) {
	strictES := func() any {
		return &strictObject[v1alpha1.ElasticScheduleSpec, v1alpha1.ElasticScheduleStatus]{}
	}
	es := &v1alpha1.ElasticSchedule{}
	err := decodeStrict(map[string]any{"spec": map[string]any{"nodePool": map[string]any{"sizez": []any{}}}}, es, strictES())
	if err == nil || !strings.Contains(err.Error(), `unknown field "spec.nodePool.sizez"`) {
		t.Errorf("decodeStrict: got %v, want an unknown field error", err)
	}
	err = decodeStrict(map[string]any{"spec": map[string]any{"nodePool": map[string]any{"sizes": "x"}}}, es, strictES())
	if err == nil || !strings.HasPrefix(err.Error(), "spec.nodePool.sizes: cannot be decoded") {
		t.Errorf("decodeStrict: got %v, want a type error on spec.nodePool.sizes", err)
	}
}

// TestNewSetUndecodable: a value that passes the CRD (as one stored before
// its bounds did) but does not fit the Go types is an error naming the
// object and the field, not a panic or a silently empty spec.
func TestNewSetUndecodable(t *testing.T) {
	for _, tt := range []struct {
		name, kind, field string
		content           map[string]any
	}{
		{"duration overflow", "ElasticSchedule", "spec.nodePool.provisioningLeadTime", map[string]any{
			"spec": map[string]any{"nodePool": map[string]any{"provisioningLeadTime": "3000000h"}},
		}},
		{"int32 overflow", "ElasticSchedule", "spec.nodePool.sizes[1]", map[string]any{
			"spec": map[string]any{"nodePool": map[string]any{"sizes": []any{int64(2), int64(3000000000)}}},
		}},
		{"settle overflow", "IntermittentQuery", "spec.input.objectStore.settle", map[string]any{
			"spec": map[string]any{"input": map[string]any{"objectStore": map[string]any{"settle": "9999999999h"}}},
		}},
		{"time", "IntermittentQuery", "spec.deadline", map[string]any{
			"spec": map[string]any{"deadline": "tomorrow"},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			content := tt.content
			content["apiVersion"] = "laxity.dev/v1alpha1"
			content["kind"] = tt.kind
			content["metadata"] = map[string]any{"name": "bad", "namespace": "analytics"}
			gvk := v1alpha1.GroupVersion.WithKind(tt.kind)
			_, err := newSet([]Object{{Source: Source{File: "bad.yaml", Document: 1}, GroupVersionKind: gvk, Namespace: "analytics", Name: "bad", Content: content}})
			if err == nil {
				t.Fatal("newSet: accepted an undecodable object")
			}
			if msg := err.Error(); !strings.Contains(msg, tt.field+": cannot be decoded") || !strings.Contains(msg, "analytics/bad") {
				t.Errorf("newSet: %v, want an error naming analytics/bad and %s", err, tt.field)
			}
		})
	}
}

// manyDocuments returns n valid documents, half schedules, half queries.
func manyDocuments(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		if i > 0 {
			b.WriteString("---\n")
		}
		if i%2 == 0 {
			b.WriteString(strings.Replace(schedule, "name: tpch", fmt.Sprintf("name: s%d", i), 1))
		} else {
			b.WriteString(strings.Replace(query, "name: q1", fmt.Sprintf("name: q%d", i), 1))
		}
	}
	return b.Bytes()
}

// TestReadThousandDocuments keeps loading fast: the validators are built
// once and objects validated in parallel.
func TestReadThousandDocuments(t *testing.T) {
	if _, err := laxityLoader(); err != nil {
		t.Fatal(err)
	}
	data := manyDocuments(1000)
	start := time.Now()
	set, err := Read(File{"many.yaml", data})
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Schedules) != 500 || len(set.Queries) != 500 {
		t.Fatalf("Read: %d schedules, %d queries", len(set.Schedules), len(set.Queries))
	}
	t.Logf("read 1,000 documents in %v", elapsed)
	if limit := 5 * time.Second; !raceEnabled && !testing.Short() && elapsed > limit {
		t.Errorf("read 1,000 documents in %v, want under %v", elapsed, limit)
	}
}

func BenchmarkReadThousandDocuments(b *testing.B) {
	data := manyDocuments(1000)
	if _, err := laxityLoader(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Read(File{"many.yaml", data}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNewLaxityLoader(b *testing.B) {
	for b.Loop() {
		if _, err := NewLaxityLoader(); err != nil {
			b.Fatal(err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestEmbeddedCRDsAreValid holds the CRDs NewEmbeddedValidator reads to the
// API server's create-time checks (structural schema, defaults, CEL rules
// and their cost), which it leaves out to start fast: laxity's own and the
// SparkApplication CRD that `laxity plan` checks templates against.
func TestEmbeddedCRDsAreValid(t *testing.T) {
	spark, err := thirdparty.Read(thirdparty.SparkApplications)
	if err != nil {
		t.Fatal(err)
	}
	for _, data := range append(crd.All(), spark) {
		if _, err := NewValidator(data); err != nil {
			t.Error(err)
		}
	}
}

// TestEmbeddedValidatorValidatesAsNewValidator: built on first use, an
// embedded validator finds what NewValidator's finds, and reports its
// versions before it has built them.
func TestEmbeddedValidatorValidatesAsNewValidator(t *testing.T) {
	eager, err := NewValidator(crd.ElasticSchedules())
	if err != nil {
		t.Fatal(err)
	}
	lazy, err := NewEmbeddedValidator(crd.ElasticSchedules())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := lazy.Versions(), eager.Versions(); !slices.Equal(got, want) {
		t.Errorf("versions %v, want %v", got, want)
	}
	for _, obj := range []map[string]any{
		{"apiVersion": "laxity.dev/v1alpha1", "kind": "ElasticSchedule", "metadata": map[string]any{"name": "a", "namespace": "n"},
			"spec": map[string]any{"nodePool": map[string]any{"sizes": []any{int64(0)}}}},
		{"apiVersion": "laxity.dev/v2", "kind": "ElasticSchedule", "metadata": map[string]any{"name": "a", "namespace": "n"}},
	} {
		_, want := eager.Validate(obj)
		_, got := lazy.Validate(obj)
		if len(want) == 0 || got.ToAggregate().Error() != want.ToAggregate().Error() {
			t.Errorf("embedded validator: %v\nNewValidator: %v", got, want)
		}
	}
}
