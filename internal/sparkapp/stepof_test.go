package sparkapp

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestStepOfRoundTrip(t *testing.T) {
	for _, s := range []Step{
		batch(0, 0, 2090000),
		batch(41, 85690000, 87780000),
		retry(batch(7, 10, 20), 3),
		partial(0, "s3a://r/b0", "s3a://r/b1", "s3a://r/b2"),
		retry(partial(2, "s3a://r/b6"), 1),
		final(3, "s3a://r/p0", "s3a://r/p1", "s3a://r/p2", "s3a://r/b9"),
		retry(final(0, "s3a://r/b0"), 12),
		taken(retry(batch(5, 30, 40), 2), 1),
		launchedAt(retry(partial(1, "s3a://r/b3"), 1), time.Date(2026, 12, 2, 7, 0, 5, 0, time.UTC)),
		inLane(batch(2, 20, 30), 0),
		inLane(retry(final(1, "s3a://r/b0"), 2), 3),
	} {
		app, err := Render(query(minimalTemplate), schedule(), s, locations)
		if err != nil {
			t.Fatal(err)
		}
		q, got, err := StepOf(app)
		if err != nil {
			t.Fatalf("StepOf(%s): %v", app.GetName(), err)
		}
		if q != "q1" {
			t.Errorf("StepOf(%s) query = %q, want q1", app.GetName(), q)
		}
		// Only the spec holds the input locations and the ready nodes.
		want := s
		want.InputLocations, want.ReadyNodes = nil, 0
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("StepOf(%s) (-want +got):\n%s", app.GetName(), diff)
		}
	}
}

func TestStepOfErrors(t *testing.T) {
	valid := func() *unstructured.Unstructured {
		app, err := Render(query(minimalTemplate), schedule(), retry(batch(3, 100, 200), 1), locations)
		if err != nil {
			t.Fatal(err)
		}
		return app
	}
	annotate := func(key, value string) func(*unstructured.Unstructured) {
		return func(app *unstructured.Unstructured) {
			a := app.GetAnnotations()
			if value == "-" {
				delete(a, key)
			} else {
				a[key] = value
			}
			app.SetAnnotations(a)
		}
	}
	label := func(key, value string) func(*unstructured.Unstructured) {
		return func(app *unstructured.Unstructured) {
			l := app.GetLabels()
			if value == "-" {
				delete(l, key)
			} else {
				l[key] = value
			}
			app.SetLabels(l)
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*unstructured.Unstructured)
		want   string
	}{
		{name: "another kind", change: func(app *unstructured.Unstructured) { app.SetKind("ScheduledSparkApplication") }, want: "not a sparkoperator.k8s.io/v1beta2, Kind=SparkApplication"},
		{name: "another version", change: func(app *unstructured.Unstructured) { app.SetAPIVersion("sparkoperator.k8s.io/v1beta1") }, want: "not a sparkoperator.k8s.io/v1beta2"},
		{name: "no query label", change: label(LabelQuery, "-"), want: "label laxity.dev/query is missing"},
		{name: "no step label", change: label(LabelStep, "-"), want: `label laxity.dev/step is "", want batch, partial or final`},
		{name: "bad step label", change: label(LabelStep, "merge"), want: `label laxity.dev/step is "merge"`},
		{name: "no index", change: annotate(AnnotationBatchIndex, "-"), want: "annotation laxity.dev/batch-index is missing"},
		{name: "bad index", change: annotate(AnnotationBatchIndex, "three"), want: `annotation laxity.dev/batch-index is "three", want an integer in [0, 2147483647]`},
		{name: "negative index", change: annotate(AnnotationBatchIndex, "-3"), want: `annotation laxity.dev/batch-index is "-3"`},
		{name: "no nodes", change: annotate(AnnotationNodes, "-"), want: "annotation laxity.dev/nodes is missing"},
		{name: "zero nodes", change: annotate(AnnotationNodes, "0"), want: `annotation laxity.dev/nodes is "0", want an integer in [1, 2147483647]`},
		{name: "bad attempt", change: annotate(AnnotationAttempt, "1.5"), want: `annotation laxity.dev/attempt is "1.5"`},
		{name: "no from", change: annotate(AnnotationFromTuple, "-"), want: "annotation laxity.dev/from-tuple is missing"},
		{name: "no to", change: annotate(AnnotationToTuple, "-"), want: "annotation laxity.dev/to-tuple is missing"},
		{name: "empty range", change: annotate(AnnotationToTuple, "100"), want: "tuple range [100, 100) is empty"},
		{name: "a batch labelled a merge has no inputs", change: label(LabelStep, "final"), want: "annotation laxity.dev/inputs is missing"},
		{name: "several problems", change: func(app *unstructured.Unstructured) {
			annotate(AnnotationBatchIndex, "x")(app)
			annotate(AnnotationNodes, "-")(app)
		}, want: `annotation laxity.dev/batch-index is "x", want an integer in [0, 2147483647]; annotation laxity.dev/nodes is missing`},
		{name: "another step's name", change: func(app *unstructured.Unstructured) { app.SetName("q1-b4-r1") }, want: "its labels and annotations describe step q1-b3-r1, not this object"},
		{name: "no attempt annotation means attempt 0", change: annotate(AnnotationAttempt, "-"), want: "describe step q1-b3, not this object"},
		{name: "query name not a label", change: label(LabelQuery, "Q1"), want: "is not a DNS-1035 label"},
		{name: "more names taken than attempts", change: annotate(AnnotationNamesTaken, "2"), want: "annotation laxity.dev/names-taken is 2, more than the attempt 1"},
		{name: "bad names taken", change: annotate(AnnotationNamesTaken, "-1"), want: `annotation laxity.dev/names-taken is "-1"`},
		{name: "bad lane", change: annotate(AnnotationLane, "left"), want: `annotation laxity.dev/lane is "left"`},
		{name: "negative lane", change: annotate(AnnotationLane, "-2"), want: `annotation laxity.dev/lane is "-2"`},
		{name: "bad launch time", change: annotate(AnnotationLaunchedAt, "yesterday"), want: `annotation laxity.dev/launched-at is "yesterday", want an RFC 3339 time`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := valid()
			tc.change(app)
			_, s, err := StepOf(app)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("StepOf = %+v, %v; want an error containing %q", s, err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "reading the step of SparkApplication analytics/") {
				t.Errorf("StepOf: %q does not name the object", err)
			}
		})
	}
	if _, _, err := StepOf(nil); err == nil {
		t.Error("StepOf(nil) succeeded")
	}
}

func taken(s Step, n int) Step { s.NamesTaken = n; return s }

func launchedAt(s Step, t time.Time) Step { s.LaunchedAt = t; return s }

func inLane(s Step, lane int) Step { s.SideBySide, s.Lane = true, lane; return s }
