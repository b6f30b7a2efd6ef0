package spec

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/test/builder"
)

func lineitemSchedule(sharing laxityv1alpha1.Sharing, scan *laxityv1alpha1.ScanCostModel) *laxityv1alpha1.ElasticSchedule {
	es := builder.AnalyticsSchedule()
	es.Spec.Planning.Sharing = sharing
	es.Spec.Streams = []laxityv1alpha1.Stream{{Name: "lineitem", Scan: scan}}
	return es
}

func onStream(stream string) func(*laxityv1alpha1.IntermittentQuerySpec) {
	return func(s *laxityv1alpha1.IntermittentQuerySpec) { s.Input.Stream = stream }
}

var halfScan = &laxityv1alpha1.ScanCostModel{OverheadSeconds: "20", SerialSecondsPerTuple: "1e-8", ParallelSecondsPerTuple: "1e-5"}

func TestSharingKeyKeepsTenantsAndTemplatesApart(t *testing.T) {
	base := builder.AnalyticsQuery("q1", onStream("lineitem"))
	base.Spec.SparkApplication = &runtime.RawExtension{Raw: []byte(`{"image":"spark:4","sparkConf":{"a":"1","b":"2"}}`)}
	key := SharingKey(&base)
	if !strings.HasPrefix(key, "analytics/lineitem/") {
		t.Fatalf("key %q: want the namespace and the stream first", key)
	}
	change := func(f func(q *laxityv1alpha1.IntermittentQuery)) string {
		q := base.DeepCopy()
		q.Name = "q2"
		f(q)
		return SharingKey(q)
	}
	tests := []struct {
		name string
		f    func(q *laxityv1alpha1.IntermittentQuery)
		same bool
	}{
		{"another query of the same stream and template", func(*laxityv1alpha1.IntermittentQuery) {}, true},
		{"the same template with its keys in another order", func(q *laxityv1alpha1.IntermittentQuery) {
			q.Spec.SparkApplication = &runtime.RawExtension{Raw: []byte(`{"sparkConf":{"b":"2","a":"1"},"image":"spark:4"}`)}
		}, true},
		{"another namespace naming the same stream", func(q *laxityv1alpha1.IntermittentQuery) { q.Namespace = "intruder" }, false},
		{"another image", func(q *laxityv1alpha1.IntermittentQuery) {
			q.Spec.SparkApplication = &runtime.RawExtension{Raw: []byte(`{"image":"evil:1","sparkConf":{"a":"1","b":"2"}}`)}
		}, false},
		{"another service account", func(q *laxityv1alpha1.IntermittentQuery) {
			q.Spec.SparkApplication = &runtime.RawExtension{Raw: []byte(`{"image":"spark:4","sparkConf":{"a":"1","b":"2"},"driver":{"serviceAccount":"x"}}`)}
		}, false},
		{"another input location", func(q *laxityv1alpha1.IntermittentQuery) { q.Spec.Input.Location = "s3a://other/" }, false},
		{"a Kafka Secret", func(q *laxityv1alpha1.IntermittentQuery) {
			q.Spec.Input.Kafka = &laxityv1alpha1.KafkaInput{Brokers: []string{"k:9092"}, Topic: "t", SecretRef: &laxityv1alpha1.SecretReference{Name: "creds"}}
		}, false},
		{"another stream", func(q *laxityv1alpha1.IntermittentQuery) { q.Spec.Input.Stream = "orders" }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := change(tc.f); (got == key) != tc.same {
				t.Errorf("key %q against %q: same = %v, want %v", got, key, got == key, tc.same)
			}
		})
	}
	kafka := func(brokers ...string) string {
		return change(func(q *laxityv1alpha1.IntermittentQuery) {
			q.Spec.Input.Kafka = &laxityv1alpha1.KafkaInput{Brokers: brokers, Topic: "t"}
		})
	}
	if kafka("a:1", "b:2") != kafka("b:2", "a:1") {
		t.Error("the same brokers listed in another order give another key")
	}
	if got := change(func(q *laxityv1alpha1.IntermittentQuery) { q.Spec.Sharing = laxityv1alpha1.SharingNone }); got != "" {
		t.Errorf("a query that opts out has key %q, want none", got)
	}
	if got := change(func(q *laxityv1alpha1.IntermittentQuery) { q.Spec.Input.Stream = "" }); got != "" {
		t.Errorf("a query of no stream has key %q, want none", got)
	}
}

func TestWorkloadStreams(t *testing.T) {
	queries := func(mutate ...func(*laxityv1alpha1.IntermittentQuerySpec)) []laxityv1alpha1.IntermittentQuery {
		var out []laxityv1alpha1.IntermittentQuery
		for i, m := range mutate {
			out = append(out, builder.AnalyticsQuery(string(rune('a'+i)), m))
		}
		return out
	}
	optOut := func(s *laxityv1alpha1.IntermittentQuerySpec) {
		s.Input.Stream = "lineitem"
		s.Sharing = laxityv1alpha1.SharingNone
	}
	scan := costmodel.Linear{Overhead: 20, Serial: 1e-8, Parallel: 1e-5}
	tests := []struct {
		name        string
		schedule    *laxityv1alpha1.ElasticSchedule
		queries     []laxityv1alpha1.IntermittentQuery
		wantStreams []string // per query; "" for none
		wantShared  bool
		wantScans   []costmodel.Linear
		wantNotes   int
	}{
		{"two queries share", lineitemSchedule("", halfScan), queries(onStream("lineitem"), onStream("lineitem")),
			[]string{"analytics/lineitem/", "analytics/lineitem/"}, true, []costmodel.Linear{scan}, 0},
		{"sharing None plans alone", lineitemSchedule(laxityv1alpha1.SharingNone, halfScan), queries(onStream("lineitem"), onStream("lineitem")),
			[]string{"", ""}, false, nil, 0},
		{"a query opts out", lineitemSchedule(laxityv1alpha1.SharingAuto, halfScan), queries(onStream("lineitem"), optOut),
			[]string{"analytics/lineitem/", ""}, true, []costmodel.Linear{scan}, 0},
		{"a stream without a scan is not shared, and said so", lineitemSchedule("", nil), queries(onStream("lineitem"), onStream("lineitem")),
			[]string{"", ""}, false, nil, 1},
		{"streams declared, none read", lineitemSchedule("", halfScan), queries(nil),
			[]string{""}, false, nil, 0},
		{"queries of one stream and two inputs are kept apart, and said so", lineitemSchedule("", halfScan),
			queries(onStream("lineitem"), onStream("lineitem"), func(s *laxityv1alpha1.IntermittentQuerySpec) {
				s.Input.Stream, s.Input.Location = "lineitem", "s3a://elsewhere/"
			}),
			[]string{"analytics/lineitem/", "analytics/lineitem/", "analytics/lineitem/"}, true, []costmodel.Linear{scan, scan}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := Workload(tc.schedule, tc.queries, origin)
			if err != nil {
				t.Fatal(err)
			}
			for i, q := range w.Queries {
				if !strings.HasPrefix(q.Stream, tc.wantStreams[i]) || (tc.wantStreams[i] == "") != (q.Stream == "") {
					t.Errorf("query %s: stream %q, want %q…", q.Name, q.Stream, tc.wantStreams[i])
				}
			}
			if w.Planning.Sharing != tc.wantShared {
				t.Errorf("Planning.Sharing = %v, want %v", w.Planning.Sharing, tc.wantShared)
			}
			var scans []costmodel.Linear
			for _, s := range w.Streams {
				scans = append(scans, s.Scan)
			}
			if diff := cmp.Diff(tc.wantScans, scans); diff != "" {
				t.Errorf("scans (-want +got):\n%s", diff)
			}
			_, notes, _ := WorkloadNotes(tc.schedule, tc.queries, origin)
			if len(notes) != tc.wantNotes {
				t.Errorf("notes %q, want %d", notes, tc.wantNotes)
			}
			// Listed in another order, the queries are noted alike: the
			// notes are a condition's message, written only when it changes.
			reversed := slices.Clone(tc.queries)
			slices.Reverse(reversed)
			if _, again, _ := WorkloadNotes(tc.schedule, reversed, origin); !slices.Equal(again, notes) {
				t.Errorf("notes %q for the queries listed in reverse, %q in order", again, notes)
			}
		})
	}
}

// TestWorkloadWithoutStreamsIsUnchanged holds a schedule that declares no
// stream to the workload it had before streams existed, so its plans stay
// byte for byte the same.
func TestWorkloadWithoutStreamsIsUnchanged(t *testing.T) {
	q := builder.AnalyticsQuery("q1", nil)
	w, err := Workload(builder.AnalyticsSchedule(), []laxityv1alpha1.IntermittentQuery{q}, origin)
	if err != nil {
		t.Fatal(err)
	}
	if w.Planning.Sharing || w.Streams != nil || w.Queries[0].Stream != "" {
		t.Errorf("sharing %v, streams %v, query stream %q: want none", w.Planning.Sharing, w.Streams, w.Queries[0].Stream)
	}
}

func TestWorkloadStreamErrorsNameObjectAndField(t *testing.T) {
	tests := []struct {
		name     string
		schedule *laxityv1alpha1.ElasticSchedule
		stream   string
		want     []string
	}{
		{"a stream not declared", lineitemSchedule("", halfScan), "orders",
			[]string{"IntermittentQuery analytics/a", "spec.input.stream", `"orders"`}},
		{"a scan coefficient out of bounds", lineitemSchedule("", &laxityv1alpha1.ScanCostModel{OverheadSeconds: "2e6", SerialSecondsPerTuple: "0", ParallelSecondsPerTuple: "0"}), "lineitem",
			[]string{"ElasticSchedule analytics/tpch", "spec.streams[0].scan.overheadSeconds"}},
		{"a scan that is not a number", lineitemSchedule("", &laxityv1alpha1.ScanCostModel{OverheadSeconds: "1", SerialSecondsPerTuple: "fast", ParallelSecondsPerTuple: "0"}), "lineitem",
			[]string{"ElasticSchedule analytics/tpch", "spec.streams[0].scan.serialSecondsPerTuple"}},
		{"a scan of nothing", lineitemSchedule("", &laxityv1alpha1.ScanCostModel{OverheadSeconds: "0", SerialSecondsPerTuple: "0", ParallelSecondsPerTuple: "0"}), "lineitem",
			[]string{"ElasticSchedule analytics/tpch", "spec.streams[0].scan", "zero"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Workload(tc.schedule, []laxityv1alpha1.IntermittentQuery{builder.AnalyticsQuery("a", onStream(tc.stream))}, origin)
			var oe *ObjectError
			if !errors.As(err, &oe) {
				t.Fatalf("error %v: want an ObjectError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
		})
	}
}

// TestSharedWorkloadPlansSharedSteps holds the translation to what the
// planner shares: two queries of one stream, template and window plan
// their batches as shared steps that name both, and the same queries
// with sharing None plan as they would without streams.
func TestSharedWorkloadPlansSharedSteps(t *testing.T) {
	queries := []laxityv1alpha1.IntermittentQuery{
		builder.AnalyticsQuery("a", onStream("lineitem")),
		builder.AnalyticsQuery("b", onStream("lineitem")),
	}
	shared, err := Workload(lineitemSchedule("", halfScan), queries, origin)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := planner.Plan(shared)
	if err != nil {
		t.Fatal(err)
	}
	batches := 0
	for _, s := range doc.Steps {
		if s.Kind == planner.StepBatch {
			batches++
			if diff := cmp.Diff([]string{"a", "b"}, s.Members); diff != "" {
				t.Errorf("batch %d of %s: members (-want +got):\n%s", s.Index, s.Query, diff)
			}
		}
	}
	if batches == 0 {
		t.Fatal("no batch planned")
	}
	none, err := Workload(lineitemSchedule(laxityv1alpha1.SharingNone, halfScan), queries, origin)
	if err != nil {
		t.Fatal(err)
	}
	plain := []laxityv1alpha1.IntermittentQuery{builder.AnalyticsQuery("a", nil), builder.AnalyticsQuery("b", nil)}
	alone, err := Workload(builder.AnalyticsSchedule(), plain, origin)
	if err != nil {
		t.Fatal(err)
	}
	docNone, _ := planner.Plan(none)
	docAlone, _ := planner.Plan(alone)
	if diff := cmp.Diff(docAlone, docNone); diff != "" {
		t.Errorf("sharing None plans unlike a schedule without streams (-alone +none):\n%s", diff)
	}
}

// FuzzStreamScan holds the scan's parsing to errors that name the field,
// never a panic, and a scan it accepts to one the planner takes.
func FuzzStreamScan(f *testing.F) {
	f.Add("20", "1e-8", "1e-5", "lineitem")
	f.Add("", "", "", "x")
	f.Add("-1", "NaN", "1e400", "")
	f.Add("1e6", "0", "+.5", "a-b")
	f.Fuzz(func(t *testing.T, overhead, serial, parallel, stream string) {
		es := lineitemSchedule("", &laxityv1alpha1.ScanCostModel{OverheadSeconds: overhead, SerialSecondsPerTuple: serial, ParallelSecondsPerTuple: parallel})
		scan, _, err := StreamScan(es, 0)
		if err != nil {
			if !strings.Contains(err.Error(), "spec.streams[0].scan") {
				t.Fatalf("error %q does not name the field", err)
			}
			return
		}
		if err := errors.Join(scan.Validate(), scan.CheckBounds(planner.MaxCoefficient)); err != nil {
			t.Fatalf("accepted scan %+v the planner refuses: %v", scan, err)
		}
		q := builder.AnalyticsQuery("a", onStream(stream))
		_, err = Workload(es, []laxityv1alpha1.IntermittentQuery{q}, origin)
		if stream != "" && stream != "lineitem" && (err == nil || !strings.Contains(err.Error(), "spec.input.stream")) {
			t.Fatalf("stream %q is not declared, error %v", stream, err)
		}
	})
}

// BenchmarkWorkloadNotes1000 is what a pass over a schedule of 1,000
// queries on one stream spends turning them into the planner's workload
// and its sharing notes: every query's template digested once.
func BenchmarkWorkloadNotes1000(b *testing.B) {
	var queries []laxityv1alpha1.IntermittentQuery
	for i := range 1000 {
		queries = append(queries, builder.AnalyticsQuery(fmt.Sprintf("q%04d", i), onStream("lineitem")))
	}
	schedule := lineitemSchedule("", halfScan)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := WorkloadNotes(schedule, queries, origin); err != nil {
			b.Fatal(err)
		}
	}
}
