package sparkapp_test

import (
	"path/filepath"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/manifest"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/test/builder"
)

var locations = sparkapp.Locations{Input: "s3a://stream/orders/", ResultRoot: "s3a://results/laxity/"}

// source is a query and its schedule, moved into the suite's namespace.
type source struct {
	q  *v1alpha1.IntermittentQuery
	es *v1alpha1.ElasticSchedule
}

// sample is the first query of the sample workload and its schedule.
func sample() source {
	set, err := manifest.Load(filepath.Join("..", "..", "config", "samples", "tpch.yaml"))
	Expect(err).NotTo(HaveOccurred())
	q := set.Queries[0].Object
	es := set.Schedule(q.Namespace, q.Spec.ScheduleName).Object
	q.Namespace, es.Namespace = namespace, namespace
	return source{q: q, es: es}
}

// inline is a query named name with the given template, on a schedule with
// sizes 2 and 4 and, unless noPool, a pool nodeSelector.
func inline(name, template string, executorsPerNode int32, noPool bool) source {
	schedule := builder.Schedule(namespace, "pool").Bare().Sizes(2, 4).ExecutorsPerNode(executorsPerNode)
	if !noPool {
		schedule.NodeSelector(map[string]string{"laxity.dev/pool": "spark", "node.kubernetes.io/instance-type": "m5.xlarge"})
	}
	q := builder.Query(namespace, name).Bare().Schedule("pool").Template(template).Obj()
	return source{q: q, es: schedule.Obj()}
}

// The smallest template SparkApplication v1beta2 accepts.
const minimalTemplate = `{"type": "Python", "sparkVersion": "3.5.3", "mainApplicationFile": "local:///opt/laxity/count.py", "driver": {}, "executor": {}}`

// A template with the deprecated spec-level nodeSelector (moved to driver
// and executor), its own arguments, sparkConf and restart policy.
const busyTemplate = `{
  "type": "Java", "mode": "cluster", "sparkVersion": "3.5.3",
  "mainClass": "dev.laxity.examples.Merge",
  "mainApplicationFile": "local:///opt/laxity/merge.jar",
  "arguments": ["--format", "parquet"],
  "sparkConf": {"spark.sql.shuffle.partitions": "64", "spark.laxity.query": "stale"},
  "hadoopConf": {"fs.s3a.fast.upload": "true"},
  "nodeSelector": {"topology.kubernetes.io/zone": "eu-west-1a"},
  "restartPolicy": {"type": "OnFailure", "onFailureRetries": 1, "onSubmissionFailureRetries": 2},
  "timeToLiveSeconds": 86400,
  "driver": {"cores": 1, "memory": "1g", "serviceAccount": "spark", "labels": {"team": "analytics"}},
  "executor": {"cores": 4, "memory": "12g", "instances": 1, "deleteOnTermination": false}
}`

var _ = Describe("Rendered SparkApplications", func() {
	steps := map[string]sparkapp.Step{
		"first batch": {Kind: planner.StepBatch, Index: 0, FromTuple: 0, ToTuple: 2090000, Nodes: 2, ReadyNodes: 2},
		"batch retry": {Kind: planner.StepBatch, Index: 5, Attempt: 2, FromTuple: 10450000, ToTuple: 12540000, Nodes: 2, ReadyNodes: 3},
		"partial merge": {Kind: planner.StepPartial, Index: 0, Inputs: 3, Nodes: 4, ReadyNodes: 4,
			InputLocations: []string{"s3a://results/laxity/x/q/q-b0", "s3a://results/laxity/x/q/q-b1", "s3a://results/laxity/x/q/q-b2"}},
		"final merge": {Kind: planner.StepFinal, Index: 1, Inputs: 2, Nodes: 2, ReadyNodes: 4,
			InputLocations: []string{"s3a://results/laxity/x/q/q-partial-0", "s3a://results/laxity/x/q/q-b3"}},
	}
	sources := map[string]func() source{
		"the sample's template": sample,
		"a minimal template":    func() source { return inline("minimal", minimalTemplate, 0, false) },
		"a minimal template and a pool without a selector": func() source {
			return inline("unpinned", minimalTemplate, 2, true)
		},
		"a template that uses many fields": func() source { return inline("busy", busyTemplate, 3, false) },
	}

	var entries []TableEntry
	for _, src := range []string{"the sample's template", "a minimal template", "a minimal template and a pool without a selector", "a template that uses many fields"} {
		for _, step := range []string{"first batch", "batch retry", "partial merge", "final merge"} {
			entries = append(entries, Entry(step+" from "+src, sources[src], steps[step]))
		}
	}

	DescribeTable("are accepted by the API server as they were sent",
		func(from func() source, step sparkapp.Step) {
			src := from()
			if step.Nodes != 2 && step.Nodes != 4 {
				Fail("steps must use sizes every source has")
			}
			app, err := sparkapp.Render(src.q, src.es, step, locations)
			Expect(err).NotTo(HaveOccurred())
			sent := app.DeepCopy()

			Expect(k8sClient.Create(ctx, app)).To(Succeed())
			got := sparkapp.New()
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(sent), got)).To(Succeed())

			Expect(got.GetName()).To(Equal(sent.GetName()))
			Expect(got.GetNamespace()).To(Equal(namespace))
			Expect(got.GetLabels()).To(Equal(sent.GetLabels()))
			Expect(got.GetAnnotations()).To(Equal(sent.GetAnnotations()))
			// The whole spec comes back: nothing was pruned or defaulted.
			Expect(cmp.Diff(sent.Object["spec"], got.Object["spec"])).To(BeEmpty())

			query, read, err := sparkapp.StepOf(got)
			Expect(err).NotTo(HaveOccurred())
			Expect(query).To(Equal(src.q.Name))
			want := step
			want.InputLocations, want.ReadyNodes = nil, 0
			if want.Kind != planner.StepBatch {
				want.FromTuple, want.ToTuple = 0, 0
			}
			Expect(read).To(Equal(want))

			Expect(sparkapp.Observe(got)).To(Equal(sparkapp.Observation{Phase: v1alpha1.StepPending}))
		},
		entries,
	)

	It("are judged by a schema that rejects and prunes", func() {
		// Guards the comparisons above: they would catch a rejected or a
		// pruned field.
		src := inline("judged", minimalTemplate, 1, false)
		step := sparkapp.Step{Kind: planner.StepBatch, Index: 0, ToTuple: 10, Nodes: 2, ReadyNodes: 2}
		app, err := sparkapp.Render(src.q, src.es, step, locations)
		Expect(err).NotTo(HaveOccurred())

		invalid := app.DeepCopy()
		Expect(unstructured.SetNestedField(invalid.Object, int64(0), "spec", "executor", "instances")).To(Succeed())
		Expect(apierrors.IsInvalid(k8sClient.Create(ctx, invalid))).To(BeTrue())

		Expect(unstructured.SetNestedField(app.Object, "x", "spec", "executor", "notAField")).To(Succeed())
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		got := sparkapp.New()
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(app), got)).To(Succeed())
		_, found, err := unstructured.NestedFieldNoCopy(got.Object, "spec", "executor", "notAField")
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeFalse())
	})

	It("cannot be created twice for the same step", func() {
		src := inline("twice", minimalTemplate, 1, false)
		step := sparkapp.Step{Kind: planner.StepBatch, Index: 0, ToTuple: 10, Nodes: 2, ReadyNodes: 2}
		for i, want := range []func(error) bool{func(err error) bool { return err == nil }, apierrors.IsAlreadyExists} {
			app, err := sparkapp.Render(src.q, src.es, step, locations)
			Expect(err).NotTo(HaveOccurred())
			err = k8sClient.Create(ctx, app)
			Expect(want(err)).To(BeTrue(), "create %d: %v", i, err)
		}
	})
})

var _ = Describe("Observing a step", func() {
	const (
		submitted  = "2026-12-01T00:10:00Z"
		terminated = "2026-12-01T00:11:30Z"
	)
	at := func(s string) *time.Time {
		t, err := time.Parse(time.RFC3339, s)
		Expect(err).NotTo(HaveOccurred())
		return &t
	}

	// create renders the first batch of a query named name and writes status
	// through the status subresource, as spark-operator does.
	create := func(name string, status map[string]any) *unstructured.Unstructured {
		src := inline(name, `{"type": "Scala", "sparkVersion": "3.5.3", "mainApplicationFile": "local:///job.jar", "driver": {}, "executor": {}, "restartPolicy": {"type": "OnFailure", "onSubmissionFailureRetries": 1}}`, 1, false)
		app, err := sparkapp.Render(src.q, src.es, sparkapp.Step{Kind: planner.StepBatch, ToTuple: 10, Nodes: 2, ReadyNodes: 2}, locations)
		Expect(err).NotTo(HaveOccurred())
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		app.Object["status"] = status
		Expect(k8sClient.Status().Update(ctx, app)).To(Succeed())
		got := sparkapp.New()
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(app), got)).To(Succeed())
		return got
	}

	DescribeTable("reads what the real status schema holds",
		func(name string, status map[string]any, want sparkapp.Observation) {
			got := create(name, status)
			Expect(sparkapp.Observe(got)).To(Equal(want))
		},
		Entry("completed", "completed", map[string]any{
			"driverInfo":                map[string]any{"podName": "completed-b0-driver"},
			"applicationState":          map[string]any{"state": "COMPLETED"},
			"lastSubmissionAttemptTime": submitted,
			"terminationTime":           terminated,
			"submissionAttempts":        int64(1),
			"executionAttempts":         int64(1),
		}, sparkapp.Observation{Phase: v1alpha1.StepSucceeded, State: "COMPLETED", Started: at(submitted), Ended: at(terminated)}),
		Entry("failed", "failed", map[string]any{
			"driverInfo":                map[string]any{},
			"applicationState":          map[string]any{"state": "FAILED", "errorMessage": "driver container failed with ExitCode: 1, Reason: Error"},
			"lastSubmissionAttemptTime": submitted,
			"terminationTime":           terminated,
		}, sparkapp.Observation{Phase: v1alpha1.StepFailed, State: "FAILED", Message: "driver container failed with ExitCode: 1, Reason: Error", Started: at(submitted), Ended: at(terminated)}),
		Entry("running", "running", map[string]any{
			"driverInfo":                map[string]any{},
			"applicationState":          map[string]any{"state": "RUNNING"},
			"lastSubmissionAttemptTime": submitted,
			"terminationTime":           nil,
		}, sparkapp.Observation{Phase: v1alpha1.StepRunning, State: "RUNNING", Started: at(submitted)}),
		Entry("a submission spark-operator retries", "resubmitted", map[string]any{
			"driverInfo":                map[string]any{},
			"applicationState":          map[string]any{"state": "SUBMISSION_FAILED", "errorMessage": "failed to run spark-submit"},
			"lastSubmissionAttemptTime": submitted,
			"submissionAttempts":        int64(1),
		}, sparkapp.Observation{Phase: v1alpha1.StepPending, State: "SUBMISSION_FAILED", Message: "failed to run spark-submit"}),
		Entry("a submission spark-operator gives up on", "given-up", map[string]any{
			"driverInfo":                map[string]any{},
			"applicationState":          map[string]any{"state": "SUBMISSION_FAILED", "errorMessage": "failed to run spark-submit"},
			"lastSubmissionAttemptTime": submitted,
			"submissionAttempts":        int64(2),
		}, sparkapp.Observation{Phase: v1alpha1.StepFailed, State: "SUBMISSION_FAILED", Message: "failed to run spark-submit", Started: at(submitted), Ended: at(submitted)}),
	)

	It("has no status.submissionTime to read in v1beta2", func() {
		got := create("pruned", map[string]any{
			"driverInfo":       map[string]any{},
			"applicationState": map[string]any{"state": "RUNNING"},
			"submissionTime":   submitted,
		})
		_, found, err := unstructured.NestedFieldNoCopy(got.Object, "status", "submissionTime")
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeFalse(), "the CRD keeps status.submissionTime")
		Expect(sparkapp.Observe(got)).To(Equal(sparkapp.Observation{Phase: v1alpha1.StepRunning, State: "RUNNING"}))
	})
})
