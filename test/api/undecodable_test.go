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
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/controllers"
	"github.com/laxity-dev/laxity/test/builder"
)

// Objects stored before the CRDs bounded their fields (here: stored while the
// CRD's validation is relaxed) may not fit the Go types. One such object must
// not keep the informers from syncing, so that every other object is still
// reconciled, and it reports itself.
var _ = Describe("An object that no longer decodes", Ordered, func() {
	var (
		ns          string
		crdClient   client.Client
		crdScheme   *runtime.Scheme
		badES       = "bad-lead-time"
		badIQ       = "bad-lateness"
		goodES      = []string{"good-a", "good-b"}
		scheduleCRD = "elasticschedules.laxity.dev"
		queryCRD    = "intermittentqueries.laxity.dev"
	)

	// relaxed stores obj while the rules of the named CRD's property (a path
	// of property names) are removed, then restores the CRD and waits until
	// the API server rejects such an object again.
	relaxed := func(crdName string, path []string, obj *unstructured.Unstructured) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(crdClient.Get(ctx, client.ObjectKey{Name: crdName}, crd)).To(Succeed())
		original := crd.DeepCopy()
		crd.Spec.Versions[0].Schema.OpenAPIV3Schema = withoutRules(original.Spec.Versions[0].Schema.OpenAPIV3Schema, path)
		Expect(crdClient.Update(ctx, crd)).To(Succeed())
		Eventually(func() error {
			return k8sClient.Create(ctx, obj.DeepCopy())
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

		restored := &apiextensionsv1.CustomResourceDefinition{}
		Expect(crdClient.Get(ctx, client.ObjectKey{Name: crdName}, restored)).To(Succeed())
		restored.Spec = original.Spec
		Expect(crdClient.Update(ctx, restored)).To(Succeed())
		probe := obj.DeepCopy()
		probe.SetName(obj.GetName() + "-probe")
		Eventually(func() bool {
			err := k8sClient.Create(ctx, probe.DeepCopy(), client.DryRunAll)
			return err != nil && strings.Contains(err.Error(), strings.Join(append([]string{"spec"}, path[1:]...), "."))
		}).WithTimeout(30*time.Second).WithPolling(200*time.Millisecond).Should(BeTrue(), "the restored CRD must reject the object again")
	}

	BeforeAll(func() {
		crdScheme = runtime.NewScheme()
		Expect(apiextensionsv1.AddToScheme(crdScheme)).To(Succeed())
		var err error
		crdClient, err = client.New(testEnv.Config, client.Options{Scheme: crdScheme})
		Expect(err).NotTo(HaveOccurred())

		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "laxity-undecodable-"}}
		Expect(k8sClient.Create(ctx, n)).To(Succeed())
		ns = n.Name

		for _, name := range goodES {
			Expect(k8sClient.Create(ctx, schedule(ns, name, "6m"))).To(Succeed())
		}
		relaxed(scheduleCRD, []string{"spec", "nodePool", "provisioningLeadTime"}, schedule(ns, badES, "3000000h"))
		relaxed(queryCRD, []string{"spec", "input", "allowedLateness"}, query(ns, badIQ, "99999999999999999999ns"))
	})

	It("lets an informer sync and list the other objects, the bad one carrying DecodeError", func() {
		scheme := runtime.NewScheme()
		Expect(laxityv1alpha1.AddToScheme(scheme)).To(Succeed())
		c, err := cache.New(testEnv.Config, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
		Expect(err).NotTo(HaveOccurred())
		cacheCtx, stop := context.WithCancel(ctx)
		DeferCleanup(stop)
		go func() {
			defer GinkgoRecover()
			Expect(c.Start(cacheCtx)).To(Succeed())
		}()
		// Informers for both kinds, each synced within a deadline (GetInformer
		// blocks until then): before tolerant decoding the first LIST failed
		// forever.
		syncCtx, cancelSync := context.WithTimeout(cacheCtx, 30*time.Second)
		defer cancelSync()
		_, err = c.GetInformer(syncCtx, &laxityv1alpha1.ElasticSchedule{})
		Expect(err).NotTo(HaveOccurred(), "the ElasticSchedule informer must sync despite an undecodable object")
		_, err = c.GetInformer(syncCtx, &laxityv1alpha1.IntermittentQuery{})
		Expect(err).NotTo(HaveOccurred(), "the IntermittentQuery informer must sync despite an undecodable object")
		Expect(c.WaitForCacheSync(syncCtx)).To(BeTrue())

		var list laxityv1alpha1.ElasticScheduleList
		Expect(c.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		byName := map[string]*laxityv1alpha1.ElasticSchedule{}
		for i := range list.Items {
			byName[list.Items[i].Name] = &list.Items[i]
		}
		Expect(byName).To(HaveLen(3))
		for _, name := range goodES {
			Expect(byName[name].DecodeError()).NotTo(HaveOccurred())
			Expect(byName[name].Spec.NodePool.ProvisioningLeadTime.Duration).To(Equal(6 * time.Minute))
		}
		Expect(byName[badES].DecodeError()).To(MatchError(ContainSubstring(`spec.nodePool.provisioningLeadTime: cannot be decoded: time: invalid duration "3000000h"`)))

		var queries laxityv1alpha1.IntermittentQueryList
		Expect(c.List(ctx, &queries, client.InNamespace(ns))).To(Succeed())
		Expect(queries.Items).To(HaveLen(1))
		Expect(queries.Items[0].DecodeError()).To(MatchError(ContainSubstring("spec.input.allowedLateness: cannot be decoded")))
		Expect(queries.Items[0].Spec.ScheduleName).To(Equal("good-a"))

		By("the reconcilers reporting the bad objects on themselves, seen through the watch")
		recorder := events.NewFakeRecorder(10)
		esr := &controllers.ElasticScheduleReconciler{Client: k8sClient, Recorder: recorder}
		res, err := esr.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: badES}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res).To(Equal(ctrl.Result{}))
		iqr := &controllers.IntermittentQueryReconciler{Client: k8sClient, Recorder: recorder}
		res, err = iqr.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: badIQ}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res).To(Equal(ctrl.Result{}))

		Eventually(func(g Gomega) {
			var es laxityv1alpha1.ElasticSchedule
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: badES}, &es)).To(Succeed())
			expectUndecodable(g, es.Status.Conditions, "spec.nodePool.provisioningLeadTime", "3000000h")
			var q laxityv1alpha1.IntermittentQuery
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: badIQ}, &q)).To(Succeed())
			expectUndecodable(g, q.Status.Conditions, "spec.input.allowedLateness", "99999999999999999999ns")
		}).WithTimeout(10 * time.Second).Should(Succeed())
		for range 2 {
			var event string
			Eventually(recorder.Events).Should(Receive(&event))
			Expect(event).To(HavePrefix("Warning Undecodable "))
		}

		// Nothing else was done: the stored spec is as it was (the status
		// patch sent no spec), and no finalizer was added.
		stored := &unstructured.Unstructured{}
		stored.SetGroupVersionKind(laxityv1alpha1.GroupVersion.WithKind("ElasticSchedule"))
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: badES}, stored)).To(Succeed())
		lead, _, _ := unstructured.NestedString(stored.Object, "spec", "nodePool", "provisioningLeadTime")
		Expect(lead).To(Equal("3000000h"))
		price, _, _ := unstructured.NestedString(stored.Object, "spec", "nodePool", "pricePerNodeHour")
		Expect(price).To(Equal("0.25"))
		Expect(stored.GetFinalizers()).To(BeEmpty())

		// A second pass writes nothing more and records no new event.
		_, err = esr.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: badES}})
		Expect(err).NotTo(HaveOccurred())
		Consistently(recorder.Events).WithTimeout(300 * time.Millisecond).ShouldNot(Receive())
	})
})

func expectUndecodable(g Gomega, conditions []metav1.Condition, fieldPath, value string) {
	ready := meta.FindStatusCondition(conditions, laxityv1alpha1.ElasticScheduleReadyCondition)
	g.Expect(ready).NotTo(BeNil())
	g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(ready.Reason).To(Equal(laxityv1alpha1.UndecodableReason))
	g.Expect(ready.Message).To(And(ContainSubstring(fieldPath), ContainSubstring(value)))
	stalled := meta.FindStatusCondition(conditions, laxityv1alpha1.ElasticScheduleStalledCondition)
	g.Expect(stalled).NotTo(BeNil())
	g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(stalled.Reason).To(Equal(laxityv1alpha1.UndecodableReason))
}

// withoutRules returns a copy of schema with the x-kubernetes-validations of
// the property at path removed.
func withoutRules(schema *apiextensionsv1.JSONSchemaProps, path []string) *apiextensionsv1.JSONSchemaProps {
	out := schema.DeepCopy()
	if len(path) == 0 {
		out.XValidations = nil
		return out
	}
	child := out.Properties[path[0]]
	out.Properties[path[0]] = *withoutRules(&child, path[1:])
	return out
}

// schedule is an ElasticSchedule with its provisioningLeadTime written as
// lead, which need not be a valid duration.
func schedule(ns, name, lead string) *unstructured.Unstructured {
	es := builder.Schedule(ns, name).Bare().Sizes(2, 4).Price("0.25").
		Backend(builder.ScaleBackend("cluster.x-k8s.io/v1beta1", "MachineDeployment", "w")).Obj()
	return withField(es, "ElasticSchedule", lead, "spec", "nodePool", "provisioningLeadTime")
}

// query is an IntermittentQuery with its allowedLateness written as
// lateness, which need not be a valid duration.
func query(ns, name, lateness string) *unstructured.Unstructured {
	iq := builder.Query(ns, name).Bare().Schedule("good-a").
		Window(builder.Origin, 75*time.Minute).Slack(25 * time.Minute).Rate("9500").
		CostModel(builder.CostModel(builder.BatchCost("25", "2e-8", "2e-5"), builder.MergeCost("8", "0.05", "0.4"))).Obj()
	return withField(iq, "IntermittentQuery", lateness, "spec", "input", "allowedLateness")
}

// withField is obj, a laxity object of kind, as unstructured with the
// string field at path set to value, without the empty status and creation
// timestamp of a typed object.
func withField(obj runtime.Object, kind, value string, path ...string) *unstructured.Unstructured {
	GinkgoHelper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	Expect(err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(laxityv1alpha1.GroupVersion.WithKind(kind))
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	Expect(unstructured.SetNestedField(u.Object, value, path...)).To(Succeed())
	return u
}
