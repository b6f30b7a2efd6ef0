package emr_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/laxity-dev/laxity/internal/emr"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/test/builder"
)

// rendered is the SparkApplication laxity renders for batch 3 of
// analytics/q1 on 4 of 5 ready nodes, two executors each, from template.
func rendered(t *testing.T, template string, slice map[string]string) *emr.JobRun {
	t.Helper()
	q := builder.Query("analytics", "q1").Bare().Schedule("tpch").Template(template).Obj()
	es := builder.Schedule("analytics", "tpch").Bare().Sizes(2, 4).ExecutorsPerNode(2).Obj()
	step := sparkapp.Step{Kind: planner.StepBatch, Index: 3, FromTuple: 300, ToTuple: 400, Nodes: 4, ReadyNodes: 5, Slice: slice}
	app, err := sparkapp.Render(q, es, step, sparkapp.Locations{ResultRoot: "s3a://results/"})
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	run, err := emr.JobRunOf(app, "token-1")
	if err != nil {
		t.Fatalf("JobRunOf: %v", err)
	}
	return &run
}

func TestJobRunOf(t *testing.T) {
	run := rendered(t, `{
	  "type": "Scala", "mode": "cluster", "sparkVersion": "3.5.3",
	  "image": "registry.example/spark:3.5.3",
	  "mainClass": "dev.laxity.Count",
	  "mainApplicationFile": "s3://jobs/count.jar",
	  "arguments": ["--table", "orders"],
	  "deps": {"jars": ["s3://jobs/a.jar", "s3://jobs/b.jar"], "pyFiles": ["s3://jobs/x.py"]},
	  "sparkConf": {"spark.ui.enabled": "false", "spark.driver.extraJavaOptions": "-Da=1 -Db=2"},
	  "driver": {"cores": 1, "memory": "1g", "labels": {"team": "sales"}},
	  "executor": {"cores": 2, "memory": "4g", "labels": {"laxity.dev/query": "not-q1"}}
	}`, nil)
	if run.Name != "q1-b3" || run.ClientToken != "token-1" || run.EntryPoint != "s3://jobs/count.jar" {
		t.Errorf("name %q token %q entry point %q", run.Name, run.ClientToken, run.EntryPoint)
	}
	// Executors are the ready nodes times the executors per node, as on a
	// SparkApplication.
	if run.Executors != 10 {
		t.Errorf("executors = %d, want 10", run.Executors)
	}
	if got := run.EntryPointArguments[:2]; !cmp.Equal(got, []string{"--table", "orders"}) {
		t.Errorf("arguments start %q, want the template's", got)
	}
	if !slices.Contains(run.EntryPointArguments, "--laxity-from-tuple=300") || !slices.Contains(run.EntryPointArguments, "--laxity-output=s3a://results/analytics/q1/q1-b3") {
		t.Errorf("arguments %q lack laxity's", run.EntryPointArguments)
	}
	for _, want := range []string{
		"--class dev.laxity.Count",
		"--jars s3://jobs/a.jar,s3://jobs/b.jar",
		"--py-files s3://jobs/x.py",
		"--conf spark.kubernetes.container.image=registry.example/spark:3.5.3",
		"--conf spark.driver.cores=1", "--conf spark.driver.memory=1g",
		"--conf spark.executor.cores=2", "--conf spark.executor.memory=4g",
		"--conf 'spark.driver.extraJavaOptions=-Da=1 -Db=2'",
		"--conf spark.laxity.fromTuple=300",
		"--conf spark.ui.enabled=false",
		// The pods' labels: the template's and laxity's, laxity's winning.
		"--conf spark.kubernetes.driver.label.team=sales",
		"--conf spark.kubernetes.driver.label.app.kubernetes.io/managed-by=laxity",
		"--conf spark.kubernetes.driver.label.laxity.dev/query=q1",
		"--conf spark.kubernetes.executor.label.laxity.dev/query=q1",
		"--conf spark.kubernetes.executor.label.laxity.dev/schedule=tpch",
		"--conf spark.kubernetes.executor.label.laxity.dev/step=batch",
	} {
		if !strings.Contains(run.SparkSubmitParameters, want) {
			t.Errorf("spark-submit parameters %q lack %q", run.SparkSubmitParameters, want)
		}
	}
	if strings.Contains(run.SparkSubmitParameters, "not-q1") {
		t.Errorf("spark-submit parameters %q keep the template's laxity.dev/query label", run.SparkSubmitParameters)
	}
	want := map[string]string{
		"app.kubernetes.io/managed-by": "laxity",
		"laxity.dev/schedule":          "tpch", "laxity.dev/query": "q1", "laxity.dev/step": "batch",
		"laxity.dev/batch-index": "3", "laxity.dev/from-tuple": "300", "laxity.dev/to-tuple": "400",
		"laxity.dev/nodes": "4", "laxity.dev/attempt": "0", "laxity.dev/result": "s3a://results/analytics/q1/q1-b3",
	}
	if diff := cmp.Diff(want, run.Tags); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}
}

func TestJobRunOfLeavesLongSlicesOutOfTheTags(t *testing.T) {
	long := strings.Repeat("7", 300)
	run := rendered(t, `{"type": "Scala", "mode": "cluster", "sparkVersion": "3.5.3", "mainApplicationFile": "s3://jobs/count.jar", "driver": {}, "executor": {}}`,
		map[string]string{"kafka-topic": "orders", "kafka-ending-offsets": long})
	if run.Tags["laxity.dev/kafka-topic"] != "orders" {
		t.Errorf("tags %v lack the short slice key", run.Tags)
	}
	if _, ok := run.Tags["laxity.dev/kafka-ending-offsets"]; ok {
		t.Error("a 300-character value went into a tag, which AWS refuses")
	}
	if !slices.Contains(run.EntryPointArguments, "--laxity-kafka-ending-offsets="+long) {
		t.Error("the arguments lack the long slice value")
	}
}

func TestJobRunOfErrors(t *testing.T) {
	const template = `{"type": "Scala", "mode": "cluster", "sparkVersion": "3.5.3", "mainApplicationFile": "s3://j.jar", "driver": {}, "executor": {}, "sparkConf": {"spark.x": "%s"}}`
	for _, tc := range []struct {
		name, value string
		change      func(app *unstructured.Unstructured)
		want        string
	}{
		{"no entry point", "1", func(app *unstructured.Unstructured) {
			unstructured.RemoveNestedField(app.Object, "spec", "mainApplicationFile")
		},
			"spec.sparkApplication.mainApplicationFile: must be set"},
		{"no executor count", "1", func(app *unstructured.Unstructured) {
			unstructured.RemoveNestedField(app.Object, "spec", "executor", "instances")
		},
			"spec.sparkApplication.executor.instances: must be set"},
		{"a value spark-submit cannot carry", "it's", func(*unstructured.Unstructured) {},
			`spec.sparkApplication.sparkConf.spark.x: "spark.x=it's" holds a single quote`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := builder.Query("analytics", "q1").Bare().Schedule("tpch").Template(fmt.Sprintf(template, tc.value)).Obj()
			es := builder.Schedule("analytics", "tpch").Bare().Sizes(2).Obj()
			app, err := sparkapp.Render(q, es, sparkapp.Step{Kind: planner.StepBatch, FromTuple: 0, ToTuple: 10, Nodes: 2, ReadyNodes: 2}, sparkapp.Locations{ResultRoot: "s3a://r/"})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			tc.change(app)
			_, err = emr.JobRunOf(app, "t")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !emr.IsInvalid(err) {
				t.Errorf("JobRunOf error = %v, want an invalid-request error containing %q", err, tc.want)
			}
		})
	}
}
