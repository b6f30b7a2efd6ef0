package pool

import (
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
)

var _ = Describe("capacityBuffer backend", func() {
	var (
		namespace    string
		nodeSelector map[string]string
		resources    corev1.ResourceList
	)

	BeforeEach(func() {
		namespace = newNamespace()
		nodeSelector = map[string]string{"laxity.dev/pool": "tpch"}
		resources = corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("7"),
			corev1.ResourceMemory: resource.MustParse("28Gi"),
		}
		recorded.reset()
	})

	bufferBackend := func() laxityv1alpha1.PoolBackend {
		return laxityv1alpha1.PoolBackend{CapacityBuffer: &laxityv1alpha1.CapacityBufferBackend{Resources: resources}}
	}

	bufferOf := func(es *laxityv1alpha1.ElasticSchedule) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(CapacityBufferKind)
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: es.Namespace, Name: es.Name + "-capacity-buffer"}, u)).To(Succeed())
		return u
	}
	replicasOf := func(u *unstructured.Unstructured) int64 {
		n, found, err := unstructured.NestedInt64(u.Object, "spec", "replicas")
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeTrue(), "spec.replicas is not set")
		return n
	}
	stringAt := func(u *unstructured.Unstructured, fields ...string) string {
		v, _, err := unstructured.NestedString(u.Object, fields...)
		Expect(err).NotTo(HaveOccurred())
		return v
	}
	templateOf := func(es *laxityv1alpha1.ElasticSchedule) *corev1.PodTemplate {
		pt := &corev1.PodTemplate{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: es.Namespace, Name: es.Name + "-capacity-buffer"}, pt)).To(Succeed())
		return pt
	}
	// writesTo are the recorded writes to the named resource.
	writesTo := func(resource string) []string {
		var out []string
		for _, w := range recorded.writes() {
			if strings.Contains(w, "/"+resource+"/") {
				out = append(out, w)
			}
		}
		return out
	}

	It("holds n nodes with a CapacityBuffer of a node-sized PodTemplate, one pod per node", func() {
		es := createSchedule(namespace, bufferBackend(), nodeSelector)
		b, err := New(opts, es)
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Requested(ctx)).To(BeEquivalentTo(0), "no CapacityBuffer yet")

		Expect(b.Request(ctx, 2)).To(Succeed())
		owner := metav1.OwnerReference{
			APIVersion: "laxity.dev/v1alpha1", Kind: "ElasticSchedule", Name: es.Name, UID: es.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}

		By("creating the PodTemplate")
		pt := templateOf(es)
		podLabels := map[string]string{"laxity.dev/schedule": es.Name, "laxity.dev/role": "capacity-buffer"}
		Expect(pt.OwnerReferences).To(ConsistOf(owner))
		Expect(pt.Template.Labels).To(Equal(podLabels))
		Expect(pt.Template.Spec.NodeSelector).To(Equal(nodeSelector))
		Expect(pt.Template.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution).To(ConsistOf(corev1.PodAffinityTerm{
			LabelSelector: &metav1.LabelSelector{MatchLabels: podLabels},
			TopologyKey:   "kubernetes.io/hostname",
		}))
		Expect(pt.Template.Spec.Containers).To(HaveLen(1))
		Expect(pt.Template.Spec.Containers[0].Resources.Requests).To(Equal(resources))
		Expect(pt.Template.Spec.Containers[0].Image).To(Equal(testImage))

		By("creating the CapacityBuffer, which the real CRD accepts")
		cb := bufferOf(es)
		Expect(replicasOf(cb)).To(BeEquivalentTo(2))
		Expect(stringAt(cb, "spec", "podTemplateRef", "name")).To(Equal(pt.Name))
		Expect(stringAt(cb, "spec", "provisioningStrategy")).To(Equal("buffer.x-k8s.io/active-capacity"), "the CRD's default")
		Expect(cb.GetOwnerReferences()).To(ConsistOf(owner))
		Expect(cb.GetAnnotations()).To(HaveKeyWithValue(AnnotationNodesRequested, "2"))
		Expect(cb.GetAnnotations()).To(HaveKeyWithValue(AnnotationNodesInUse, "0"))
		Expect(b.Requested(ctx)).To(BeEquivalentTo(2))
		var managers []string
		for _, mf := range cb.GetManagedFields() {
			managers = append(managers, mf.Manager+"/"+string(mf.Operation))
		}
		Expect(managers).To(ContainElement("laxity/Apply"))

		By("writing nothing when the pool already has the requested size")
		recorded.reset()
		Expect(b.Request(ctx, 2)).To(Succeed())
		Expect(recorded.writes()).To(BeEmpty())

		By("leaving the autoscaler's status alone")
		Expect(unstructured.SetNestedField(cb.Object, int64(2), "status", "replicas")).To(Succeed())
		Expect(unstructured.SetNestedField(cb.Object, "buffer.x-k8s.io/active-capacity", "status", "provisioningStrategy")).To(Succeed())
		Expect(k8sClient.Status().Update(ctx, cb)).To(Succeed())
		Expect(b.Request(ctx, 3)).To(Succeed())
		cb = bufferOf(es)
		Expect(replicasOf(cb)).To(BeEquivalentTo(3))
		status, _, err := unstructured.NestedInt64(cb.Object, "status", "replicas")
		Expect(err).NotTo(HaveOccurred())
		Expect(status).To(BeEquivalentTo(2))
		Expect(writesTo("podtemplates")).To(BeEmpty(), "the template did not change")

		By("scaling down to zero, which the CRD accepts")
		Expect(b.Request(ctx, 0)).To(Succeed())
		Expect(replicasOf(bufferOf(es))).To(BeEquivalentTo(0))
		Expect(b.Requested(ctx)).To(BeEquivalentTo(0))

		By("taking replicas back from someone who changed the buffer by hand")
		cb = bufferOf(es)
		Expect(unstructured.SetNestedField(cb.Object, int64(5), "spec", "replicas")).To(Succeed())
		Expect(k8sClient.Update(ctx, cb, client.FieldOwner("kubectl-edit"))).To(Succeed())
		Expect(b.Requested(ctx)).To(BeEquivalentTo(5))
		Expect(b.Request(ctx, 1)).To(Succeed())
		Expect(replicasOf(bufferOf(es))).To(BeEquivalentTo(1))
	})

	It("holds only the nodes laxity's steps leave, and takes them back when the steps end", func() {
		es := createSchedule(namespace, bufferBackend(), nodeSelector)
		b, err := New(opts, es)
		Expect(err).NotTo(HaveOccurred())
		Expect(b).To(BeAssignableToTypeOf(&capacityBufferBackend{}))
		Expect(Request(ctx, b, 4, 0)).To(BeEquivalentTo(0))
		Expect(replicasOf(bufferOf(es))).To(BeEquivalentTo(4))

		By("freeing a step's two nodes before it launches")
		Expect(HandOver(ctx, b, 4, 2)).To(Succeed())
		cb := bufferOf(es)
		Expect(replicasOf(cb)).To(BeEquivalentTo(2))
		Expect(cb.GetAnnotations()).To(HaveKeyWithValue(AnnotationNodesRequested, "4"))
		Expect(cb.GetAnnotations()).To(HaveKeyWithValue(AnnotationNodesInUse, "2"))
		Expect(b.Requested(ctx)).To(BeEquivalentTo(4), "the pool still holds four nodes")

		By("writing nothing while the step runs")
		recorded.reset()
		Expect(Request(ctx, b, 4, 2)).To(BeEquivalentTo(4))
		Expect(recorded.writes()).To(BeEmpty())

		By("holding every node again once the step has ended")
		Expect(Request(ctx, b, 4, 0)).To(BeEquivalentTo(4))
		Expect(replicasOf(bufferOf(es))).To(BeEquivalentTo(4))

		By("holding none while steps use more nodes than are asked for")
		Expect(Request(ctx, b, 2, 3)).To(BeEquivalentTo(4))
		Expect(replicasOf(bufferOf(es))).To(BeEquivalentTo(0))
		Expect(b.Requested(ctx)).To(BeEquivalentTo(2))

		By("releasing everything")
		released, err := Release(ctx, b)
		Expect(err).NotTo(HaveOccurred())
		Expect(released.Nothing).To(BeFalse())
		Expect(replicasOf(bufferOf(es))).To(BeEquivalentTo(0))
		Expect(b.Requested(ctx)).To(BeEquivalentTo(0))

		By("asking again without writing the unchanged template")
		recorded.reset()
		Expect(Request(ctx, b, 2, 0)).To(BeEquivalentTo(0))
		Expect(writesTo("podtemplates")).To(BeEmpty())
		Expect(writesTo("capacitybuffers")).To(HaveLen(1))
	})

	It("updates the template when the backend's resources or the pool's nodeSelector change", func() {
		es := createSchedule(namespace, bufferBackend(), nodeSelector)
		b, err := New(opts, es)
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Request(ctx, 2)).To(Succeed())

		bigger := corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("15"),
			corev1.ResourceMemory: resource.MustParse("60Gi"),
		}
		es.Spec.NodePool.Backend.CapacityBuffer.Resources = bigger
		es.Spec.NodePool.NodeSelector = map[string]string{"laxity.dev/pool": "tpch-large"}
		Expect(k8sClient.Update(ctx, es)).To(Succeed())
		b, err = New(opts, es)
		Expect(err).NotTo(HaveOccurred())
		recorded.reset()
		Expect(b.Request(ctx, 2)).To(Succeed())
		Expect(writesTo("podtemplates")).To(HaveLen(1))

		pt := templateOf(es)
		Expect(pt.Template.Spec.Containers[0].Resources.Requests).To(Equal(bigger))
		Expect(pt.Template.Spec.NodeSelector).To(Equal(map[string]string{"laxity.dev/pool": "tpch-large"}))
		Expect(replicasOf(bufferOf(es))).To(BeEquivalentTo(2))
	})

	It("creates nothing to release a pool it never held", func() {
		es := createSchedule(namespace, bufferBackend(), nodeSelector)
		b, err := New(opts, es)
		Expect(err).NotTo(HaveOccurred())
		released, err := Release(ctx, b)
		Expect(err).NotTo(HaveOccurred())
		Expect(released.Nothing).To(BeTrue())
		Expect(released.Why).To(ContainSubstring("no CapacityBuffer"))
		Expect(b.Request(ctx, 0)).To(Succeed())
		Expect(recorded.matching(func(method, _ string) bool { return method != http.MethodGet })).To(BeEmpty())
		err = k8sClient.Get(ctx, client.ObjectKey{Namespace: es.Namespace, Name: CapacityBufferName(es.Name)}, &corev1.PodTemplate{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the PodTemplate was created: %v", err)
	})

	It("rejects a negative count without a write", func() {
		es := createSchedule(namespace, bufferBackend(), nodeSelector)
		b, err := New(opts, es)
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Request(ctx, -1)).To(MatchError(HavePrefix("spec.nodePool.backend.capacityBuffer: ")))
		Expect(recorded.writes()).To(BeEmpty())
	})
})
