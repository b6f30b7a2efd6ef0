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

package api

import (
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/test/builder"
)

func duration(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }

func instant(s string) metav1.Time {
	t, err := time.Parse(time.RFC3339, s)
	Expect(err).NotTo(HaveOccurred())
	return metav1.NewTime(t)
}

// minimalSchedule and minimalQuery hold only the required fields, as a
// user writing Go would start.
func minimalSchedule(name string) *builder.ScheduleBuilder {
	return builder.Schedule(namespace, name).Bare().Sizes(2, 4, 10).Price("0.25").
		Backend(builder.ScaleBackend("cluster.x-k8s.io/v1beta1", "MachineDeployment", "spark-workers"))
}

func minimalQuery(name string) *builder.QueryBuilder {
	return builder.Query(namespace, name).Bare().Schedule("tpch").
		Window(instant("2026-12-01T00:00:00Z").Time, 75*time.Minute).Deadline(instant("2026-12-01T01:40:00Z").Time).
		Rate("9500").
		CostModel(builder.CostModel(builder.BatchCost("25", "2e-8", "2e-5"), builder.MergeCost("8", "0.05", "0.4")))
}

var _ = Describe("Defaults", func() {
	It("fills in an ElasticSchedule created from Go with only the required fields", func() {
		es := minimalSchedule("defaults").Obj()
		Expect(k8sClient.Create(ctx, es)).To(Succeed())

		got := &laxityv1alpha1.ElasticSchedule{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(es), got)).To(Succeed())

		want := minimalSchedule("defaults").Obj().Spec
		want.NodePool.BillingMinimum = ptr.To(duration(60 * time.Second))
		want.NodePool.ProvisioningLeadTime = ptr.To(duration(6 * time.Minute))
		want.NodePool.ExecutorsPerNode = 1
		want.Planning = laxityv1alpha1.Planning{
			BatchSizeFactors:     []int32{1, 2, 4, 8, 16, 32},
			BacktrackStep:        1,
			MaxBatchDuration:     duration(10 * time.Minute),
			Policy:               laxityv1alpha1.PolicyLeastLaxity,
			Objective:            laxityv1alpha1.ObjectiveExecutable,
			Search:               laxityv1alpha1.SearchImprove,
			RateModel:            laxityv1alpha1.RateModelPessimistic,
			RateWindow:           duration(3 * time.Minute),
			RateTolerancePercent: ptr.To[int32](2),
			Learning:             laxityv1alpha1.LearningApply,
			Sharing:              laxityv1alpha1.SharingAuto,
			Concurrency:          laxityv1alpha1.ConcurrencySequential,
		}
		// idleNodes and releaseAfterIdle default to values derived from other
		// fields, so the API server leaves them unset.
		Expect(cmp.Diff(want, got.Spec)).To(BeEmpty())
	})

	It("keeps explicit zeros where zero differs from the default", func() {
		es := minimalSchedule("zeros").IdleNodes(ptr.To[int32](0)).Obj()
		es.Spec.NodePool.BillingMinimum = ptr.To(duration(0))
		es.Spec.NodePool.ProvisioningLeadTime = ptr.To(duration(0))
		es.Spec.NodePool.ReleaseAfterIdle = ptr.To(duration(0))
		es.Spec.Planning.RateTolerancePercent = ptr.To[int32](0)
		Expect(k8sClient.Create(ctx, es)).To(Succeed())

		got := &laxityv1alpha1.ElasticSchedule{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(es), got)).To(Succeed())
		Expect(got.Spec.NodePool.IdleNodes).To(HaveValue(BeZero()))
		Expect(got.Spec.NodePool.BillingMinimum).To(HaveValue(Equal(duration(0))))
		Expect(got.Spec.NodePool.ProvisioningLeadTime).To(HaveValue(Equal(duration(0))))
		Expect(got.Spec.NodePool.ReleaseAfterIdle).To(HaveValue(Equal(duration(0))))
		Expect(got.Spec.Planning.RateTolerancePercent).To(HaveValue(BeZero()))
	})

	It("fills in an IntermittentQuery's granularity and allowedLateness", func() {
		iq := minimalQuery("defaults").Obj()
		Expect(k8sClient.Create(ctx, iq)).To(Succeed())

		got := &laxityv1alpha1.IntermittentQuery{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(iq), got)).To(Succeed())
		Expect(got.Spec.Input.Granularity).To(Equal(int64(1)))
		Expect(got.Spec.Input.AllowedLateness).To(Equal(duration(0)))

		// A zero Duration reads back the same whether or not it is stored,
		// so look at the stored object.
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(laxityv1alpha1.GroupVersion.WithKind("IntermittentQuery"))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(iq), u)).To(Succeed())
		lateness, found, err := unstructured.NestedString(u.Object, "spec", "input", "allowedLateness")
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeTrue(), "spec.input.allowedLateness must be stored")
		Expect(lateness).To(Equal("0s"))
		granularity, found, err := unstructured.NestedInt64(u.Object, "spec", "input", "granularity")
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeTrue(), "spec.input.granularity must be stored")
		Expect(granularity).To(Equal(int64(1)))
	})
})

var _ = Describe("Round trips", func() {
	It("keeps the SparkApplication template as-is, unknown fields included", func() {
		template := `{"type":"Scala","mode":"cluster","image":"spark:3.5.3",` +
			`"driver":{"cores":1,"memory":"2g","labels":{"team":"analytics"}},` +
			`"executor":{"cores":4,"instances":1},"sparkConf":{"spark.sql.shuffle.partitions":"64"},` +
			`"futureField":{"nested":[1,"two",{"three":3.5}]}}`
		iq := minimalQuery("template").Template(template).Obj()
		Expect(k8sClient.Create(ctx, iq)).To(Succeed())

		got := &laxityv1alpha1.IntermittentQuery{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(iq), got)).To(Succeed())
		Expect(got.Spec.SparkApplication).NotTo(BeNil())
		Expect(got.Spec.SparkApplication.Raw).To(MatchJSON(template))
	})

	It("stores every ElasticSchedule status field through the status subresource", func() {
		es := minimalSchedule("status").Obj()
		Expect(k8sClient.Create(ctx, es)).To(Succeed())

		at := instant("2026-12-01T00:00:00Z")
		status := laxityv1alpha1.ElasticScheduleStatus{
			ObservedGeneration: es.Generation,
			Conditions: []metav1.Condition{{
				Type: laxityv1alpha1.ElasticSchedulePlannedCondition, Status: metav1.ConditionTrue,
				Reason: laxityv1alpha1.PlanFoundReason, Message: "2 queries planned",
				ObservedGeneration: es.Generation, LastTransitionTime: at,
			}},
			Chosen: &laxityv1alpha1.ChosenPlan{
				InitialNodes: 2, BatchSizeFactor: 2, Cost: "0.94", ExecutableCost: "1.01", MaxNodes: 2, Feasible: true,
			},
			Candidates: []laxityv1alpha1.PlanCandidate{
				{InitialNodes: 2, BatchSizeFactor: 1, Cost: "1.19", MaxNodes: 4, Feasible: true},
				{InitialNodes: 4, BatchSizeFactor: 32, Cost: "3.5", MaxNodes: 10, Feasible: false},
			},
			Queries: []laxityv1alpha1.QueryPlan{{
				Name: "q1", BatchSize: 2090000, Batches: 21,
				Finish: instant("2026-12-01T01:23:32Z"), Deadline: instant("2026-12-01T01:25:00Z"), SlackSeconds: "87.5",
			}},
			NodeRequests:           []laxityv1alpha1.NodeRequest{{At: at, Nodes: 2}, {At: instant("2026-12-01T00:30:00Z"), Nodes: 0}},
			NodesRequested:         ptr.To[int32](2),
			NodesReady:             ptr.To[int32](0),
			LastPlanTime:           ptr.To(at),
			SearchSeconds:          "0.012",
			MaxSupportedRateFactor: "1.31",
			PlanOrigin:             ptr.To(at),
		}
		es.Status = *status.DeepCopy()
		Expect(k8sClient.Status().Update(ctx, es)).To(Succeed())

		got := &laxityv1alpha1.ElasticSchedule{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(es), got)).To(Succeed())
		Expect(cmp.Diff(status, got.Status)).To(BeEmpty())
	})

	It("stores every IntermittentQuery status field through the status subresource", func() {
		iq := minimalQuery("status").Obj()
		Expect(k8sClient.Create(ctx, iq)).To(Succeed())

		start, end := instant("2026-12-01T00:04:00Z"), instant("2026-12-01T00:04:51Z")
		status := laxityv1alpha1.IntermittentQueryStatus{
			ObservedGeneration: iq.Generation,
			Conditions: []metav1.Condition{{
				Type: laxityv1alpha1.IntermittentQueryOnTrackCondition, Status: metav1.ConditionTrue,
				Reason: laxityv1alpha1.SlackPositiveReason, Message: "87.5s of slack",
				ObservedGeneration: iq.Generation, LastTransitionTime: start,
			}},
			ArrivedTuples:   ptr.To[int64](4180000),
			ProcessedTuples: ptr.To[int64](0),
			BatchSize:       2090000,
			Batches: []laxityv1alpha1.BatchStatus{
				{Index: 0, FromTuple: 0, ToTuple: 2090000, Nodes: 2, SparkApplication: "status-b0", Start: &start, End: &end,
					Outcome: laxityv1alpha1.StepSucceeded, ResultLocation: "s3://bucket/q1/b0"},
				{Index: 1, FromTuple: 2090000, ToTuple: 4180000, Nodes: 2, SparkApplication: "status-b1-r1", Attempt: 1, Start: &end,
					Outcome: laxityv1alpha1.StepRunning},
			},
			Partials: []laxityv1alpha1.PartialStatus{
				{Index: 0, Inputs: 5, SparkApplication: "status-partial-0", Outcome: laxityv1alpha1.StepPending},
			},
			Final:                 &laxityv1alpha1.FinalStatus{SparkApplication: "status-final", Outcome: laxityv1alpha1.StepFailed, Start: &start, End: &end},
			SlackSeconds:          "-12.25",
			MeasuredRatePerSecond: "9612.5",
		}
		iq.Status = *status.DeepCopy()
		Expect(k8sClient.Status().Update(ctx, iq)).To(Succeed())

		got := &laxityv1alpha1.IntermittentQuery{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(iq), got)).To(Succeed())
		Expect(cmp.Diff(status, got.Status)).To(BeEmpty())
	})

	It("accepts placeholder resources as quantities", func() {
		es := minimalSchedule("placeholder").Backend(builder.PlaceholderBackend(corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("7"),
			corev1.ResourceMemory: resource.MustParse("28Gi"),
		})).Obj()
		Expect(k8sClient.Create(ctx, es)).To(Succeed())

		got := &laxityv1alpha1.ElasticSchedule{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(es), got)).To(Succeed())
		Expect(got.Spec.NodePool.Backend.Placeholder).NotTo(BeNil())
		Expect(got.Spec.NodePool.Backend.Placeholder.Resources.Memory().String()).To(Equal("28Gi"))
	})
})
