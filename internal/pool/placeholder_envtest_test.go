package pool

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
)

var _ = Describe("placeholder backend", func() {
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

	placeholder := func(priorityClassName string) laxityv1alpha1.PoolBackend {
		return laxityv1alpha1.PoolBackend{Placeholder: &laxityv1alpha1.PlaceholderBackend{
			Resources: resources, PriorityClassName: priorityClassName,
		}}
	}

	deploymentOf := func(es *laxityv1alpha1.ElasticSchedule) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: es.Namespace, Name: es.Name + "-placeholder"}, d)).To(Succeed())
		return d
	}

	priorityClass := func(name string) *schedulingv1.PriorityClass {
		pc := &schedulingv1.PriorityClass{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Name: name}, pc)).To(Succeed())
		return pc
	}

	It("holds n nodes with a Deployment of low-priority pause pods, one per node", func() {
		es := createSchedule(namespace, placeholder(""), nodeSelector)
		b, err := New(opts, es)
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Requested(ctx)).To(BeEquivalentTo(0), "no Deployment yet")

		Expect(b.Request(ctx, 2)).To(Succeed())

		By("creating the PriorityClass")
		pc := priorityClass("laxity-placeholder")
		Expect(pc.Value).To(BeEquivalentTo(-10))
		Expect(pc.GlobalDefault).To(BeFalse())
		Expect(pc.PreemptionPolicy).To(HaveValue(Equal(corev1.PreemptNever)))
		Expect(pc.Description).NotTo(BeEmpty())

		By("creating the Deployment")
		d := deploymentOf(es)
		podLabels := map[string]string{"laxity.dev/schedule": es.Name, "laxity.dev/role": "placeholder"}
		Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
		Expect(d.Spec.Selector.MatchLabels).To(Equal(podLabels))
		Expect(d.Spec.Selector.MatchExpressions).To(BeEmpty())
		Expect(d.OwnerReferences).To(ConsistOf(metav1.OwnerReference{
			APIVersion: "laxity.dev/v1alpha1", Kind: "ElasticSchedule", Name: es.Name, UID: es.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}))
		pod := d.Spec.Template
		Expect(pod.Labels).To(Equal(podLabels))
		Expect(pod.Spec.NodeSelector).To(Equal(nodeSelector))
		Expect(pod.Spec.PriorityClassName).To(Equal("laxity-placeholder"))
		Expect(pod.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution).To(ConsistOf(corev1.PodAffinityTerm{
			LabelSelector: &metav1.LabelSelector{MatchLabels: podLabels},
			TopologyKey:   "kubernetes.io/hostname",
		}))
		Expect(pod.Spec.TerminationGracePeriodSeconds).To(HaveValue(BeEquivalentTo(0)))
		Expect(pod.Spec.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
		Expect(pod.Spec.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))
		Expect(pod.Spec.Containers).To(HaveLen(1))
		c := pod.Spec.Containers[0]
		Expect(c.Image).To(Equal(testImage))
		Expect(c.Resources.Requests).To(Equal(resources))
		Expect(c.Resources.Limits).To(Equal(resources))
		Expect(c.SecurityContext.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
		Expect(b.Requested(ctx)).To(BeEquivalentTo(2))

		By("applying as field manager laxity")
		var managers []string
		for _, mf := range d.ManagedFields {
			managers = append(managers, mf.Manager+"/"+string(mf.Operation))
		}
		Expect(managers).To(ContainElement("laxity/Apply"))

		By("writing nothing when the pool already has the requested size")
		Expect(b.Request(ctx, 2)).To(Succeed())
		Expect(deploymentOf(es).ResourceVersion).To(Equal(d.ResourceVersion))
		Expect(priorityClass("laxity-placeholder").ResourceVersion).To(Equal(pc.ResourceVersion))

		By("scaling down to zero")
		Expect(b.Request(ctx, 0)).To(Succeed())
		Expect(deploymentOf(es).Spec.Replicas).To(HaveValue(BeEquivalentTo(0)))
		Expect(b.Requested(ctx)).To(BeEquivalentTo(0))

		By("taking replicas back from someone who scaled the Deployment by hand")
		d = deploymentOf(es)
		d.Spec.Replicas = ptr.To[int32](5)
		Expect(k8sClient.Update(ctx, d, client.FieldOwner("kubectl-scale"))).To(Succeed())
		Expect(b.Requested(ctx)).To(BeEquivalentTo(5))
		Expect(b.Request(ctx, 1)).To(Succeed())
		Expect(deploymentOf(es).Spec.Replicas).To(HaveValue(BeEquivalentTo(1)))
	})

	It("holds only the nodes laxity's steps leave, and takes them back when the steps end", func() {
		es := createSchedule(namespace, placeholder(""), nodeSelector)
		b, err := New(opts, es)
		Expect(err).NotTo(HaveOccurred())
		Expect(b).To(BeAssignableToTypeOf(&placeholderBackend{}))
		Expect(Request(ctx, b, 4, 0)).To(BeEquivalentTo(0))
		d := deploymentOf(es)
		Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(4)))

		By("freeing a step's two nodes before it launches")
		Expect(HandOver(ctx, b, 4, 2)).To(Succeed())
		d = deploymentOf(es)
		Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
		Expect(d.Annotations).To(HaveKeyWithValue(AnnotationNodesRequested, "4"))
		Expect(d.Annotations).To(HaveKeyWithValue(AnnotationNodesInUse, "2"))
		Expect(b.Requested(ctx)).To(BeEquivalentTo(4), "the pool still holds four nodes")

		By("writing nothing while the step runs")
		Expect(Request(ctx, b, 4, 2)).To(BeEquivalentTo(4))
		Expect(deploymentOf(es).ResourceVersion).To(Equal(d.ResourceVersion))

		By("holding every node again once the step has ended")
		Expect(Request(ctx, b, 4, 0)).To(BeEquivalentTo(4))
		Expect(deploymentOf(es).Spec.Replicas).To(HaveValue(BeEquivalentTo(4)))

		By("holding none while steps use more nodes than are asked for")
		Expect(Request(ctx, b, 2, 3)).To(BeEquivalentTo(4))
		d = deploymentOf(es)
		Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(0)))
		Expect(b.Requested(ctx)).To(BeEquivalentTo(2))

		By("releasing everything")
		_, err = Release(ctx, b)
		Expect(err).NotTo(HaveOccurred())
		Expect(deploymentOf(es).Spec.Replicas).To(HaveValue(BeEquivalentTo(0)))
		Expect(b.Requested(ctx)).To(BeEquivalentTo(0))
	})

	It("updates the pods when the backend's resources or the pool's nodeSelector change", func() {
		es := createSchedule(namespace, placeholder(""), nodeSelector)
		b, err := New(opts, es)
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Request(ctx, 2)).To(Succeed())

		bigger := corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("15"),
			corev1.ResourceMemory: resource.MustParse("60Gi"),
		}
		es.Spec.NodePool.Backend.Placeholder.Resources = bigger
		es.Spec.NodePool.NodeSelector = map[string]string{"laxity.dev/pool": "tpch-large"}
		Expect(k8sClient.Update(ctx, es)).To(Succeed())
		b, err = New(opts, es)
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Request(ctx, 2)).To(Succeed())

		d := deploymentOf(es)
		Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
		Expect(d.Spec.Template.Spec.Containers[0].Resources.Requests).To(Equal(bigger))
		Expect(d.Spec.Template.Spec.Containers[0].Resources.Limits).To(Equal(bigger))
		Expect(d.Spec.Template.Spec.NodeSelector).To(Equal(map[string]string{"laxity.dev/pool": "tpch-large"}))
	})

	It("uses a PriorityClass the backend names and leaves it as it is", func() {
		name := "team-low-" + rand.String(5)
		theirs := &schedulingv1.PriorityClass{
			ObjectMeta:  metav1.ObjectMeta{Name: name},
			Value:       -100,
			Description: "the team's own",
		}
		Expect(k8sClient.Create(ctx, theirs)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, theirs))).To(Succeed()) })

		es := createSchedule(namespace, placeholder(name), nodeSelector)
		b, err := New(opts, es)
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Request(ctx, 1)).To(Succeed())

		Expect(deploymentOf(es).Spec.Template.Spec.PriorityClassName).To(Equal(name))
		after := priorityClass(name)
		Expect(after.ResourceVersion).To(Equal(theirs.ResourceVersion))
		Expect(after.Value).To(BeEquivalentTo(-100))
	})

	It("creates no PriorityClass the backend names: it must exist", func() {
		name := "team-missing-" + rand.String(5)
		es := createSchedule(namespace, placeholder(name), nodeSelector)
		b, err := New(opts, es)
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Request(ctx, 1)).To(MatchError(And(
			HavePrefix("spec.nodePool.backend.placeholder.priorityClassName: PriorityClass "+name+" does not exist"),
			ContainSubstring("laxity creates only its own"))))

		err = k8sClient.Get(ctx, client.ObjectKey{Name: name}, &schedulingv1.PriorityClass{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the PriorityClass was created: %v", err)
		Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: es.Namespace, Name: PlaceholderDeploymentName(es.Name)}, &appsv1.Deployment{}))).To(BeTrue())
	})

	It("rejects a negative count without a write", func() {
		es := createSchedule(namespace, placeholder(""), nodeSelector)
		b, err := New(opts, es)
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Request(ctx, -1)).To(MatchError(HavePrefix("spec.nodePool.backend.placeholder: ")))
		Expect(recorded.writes()).To(BeEmpty())
	})
})

var _ = Describe("ReadyNodes", func() {
	// node creates a Node with labels and, when ready is not empty, a Ready
	// condition with that status, set through the status subresource.
	node := func(labels map[string]string, ready corev1.ConditionStatus) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{GenerateName: "node-", Labels: labels}}
		Expect(k8sClient.Create(ctx, n)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, n))).To(Succeed()) })
		if ready == "" {
			return
		}
		n.Status.Conditions = []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory"},
			{Type: corev1.NodeReady, Status: ready, Reason: "KubeletReady"},
		}
		Expect(k8sClient.Status().Update(ctx, n)).To(Succeed())
	}

	It("counts only the nodes that match the selector and are Ready", func() {
		// Nodes are cluster-scoped: a fresh label value keeps other specs'
		// nodes out of the count.
		pool := "pool-" + rand.String(5)
		inPool := map[string]string{"laxity.dev/pool": pool, "kubernetes.io/os": "linux"}
		node(inPool, corev1.ConditionTrue)
		node(inPool, corev1.ConditionTrue)
		node(inPool, corev1.ConditionFalse)
		node(inPool, corev1.ConditionUnknown)
		node(inPool, "")
		node(map[string]string{"laxity.dev/pool": pool + "-other"}, corev1.ConditionTrue)
		node(map[string]string{"kubernetes.io/os": "linux"}, corev1.ConditionTrue)

		Expect(ReadyNodes(ctx, k8sClient, map[string]string{"laxity.dev/pool": pool})).To(BeEquivalentTo(2))
		Expect(ReadyNodes(ctx, k8sClient, map[string]string{"laxity.dev/pool": pool, "kubernetes.io/os": "linux"})).To(BeEquivalentTo(2))
		Expect(ReadyNodes(ctx, k8sClient, map[string]string{"laxity.dev/pool": pool, "kubernetes.io/os": "windows"})).To(BeEquivalentTo(0))
		Expect(ReadyNodes(ctx, k8sClient, map[string]string{"laxity.dev/pool": "nowhere"})).To(BeEquivalentTo(0))
	})

	It("counts a node once its Ready condition turns True", func() {
		selector := map[string]string{"laxity.dev/pool": "pool-" + rand.String(5)}
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{GenerateName: "node-", Labels: selector}}
		Expect(k8sClient.Create(ctx, n)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, n))).To(Succeed()) })
		Expect(ReadyNodes(ctx, k8sClient, selector)).To(BeEquivalentTo(0))

		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}
		Expect(k8sClient.Status().Update(ctx, n)).To(Succeed())
		Expect(ReadyNodes(ctx, k8sClient, selector)).To(BeEquivalentTo(1))
	})
})
