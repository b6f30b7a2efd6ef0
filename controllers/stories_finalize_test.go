package controllers

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/pool"
	"github.com/laxity-dev/laxity/test/builder"
)

// Finalizers that always finish: a schedule deleted in a namespace that is
// being deleted, or after the object its pool resizes is gone, goes away.
// envtest runs no namespace controller, so a deleted namespace stays
// Terminating and refuses new objects: exactly the state in which the
// namespace controller waits for laxity's finalizer.

// terminateNamespace deletes ns and waits until the API server refuses new
// objects in it.
func terminateNamespace(ctx context.Context, ns string) {
	Expect(k8sClient.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	Eventually(func() bool {
		err := k8sClient.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: ns}})
		return apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
	}).WithContext(ctx).Should(BeTrue(), "namespace %s still takes new objects", ns)
}

// deleteAndFinalize deletes the world's schedule and reconciles it as the
// delete event would; the finalizer must go and the schedule with it.
func deleteAndFinalize(ctx context.Context, w *world) []string {
	key := client.ObjectKeyFromObject(w.schedule)
	Expect(k8sClient.Delete(ctx, w.schedule)).To(Succeed())
	_, err := w.es.Reconcile(ctx, ctrl.Request{NamespacedName: key})
	Expect(err).NotTo(HaveOccurred(), "the finalizer did not finish")
	var es laxityv1alpha1.ElasticSchedule
	err = k8sClient.Get(ctx, key, &es)
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the schedule is still there, finalizers %v", es.Finalizers)
	return fsEvents(w, nil)
}

// placeholderDeployment is the world's placeholder Deployment, nil when
// there is none.
func placeholderDeploymentOf(ctx context.Context, w *world) *appsv1.Deployment {
	var d appsv1.Deployment
	err := k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: pool.PlaceholderDeploymentName("pool")}, &d)
	if apierrors.IsNotFound(err) {
		return nil
	}
	Expect(err).NotTo(HaveOccurred())
	return &d
}

var _ = Describe("Story: deleting a schedule always finishes", func() {
	It("lets a schedule go whose namespace is being deleted before its pool held anything", func(ctx SpecContext) {
		w := newWorld(ctx, "fin-ns-empty", 2*time.Minute)
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4).LeadTime(2 * time.Minute).Obj()
		w.create(ctx, append([]client.Object{w.schedule}, threeQueries(w.ns)...)...)
		w.tick(ctx, origin)
		Expect(fsSchedule(ctx, w).Finalizers).To(ContainElement(poolFinalizer))
		Expect(placeholderDeploymentOf(ctx, w)).To(BeNil(), "the story needs a pool that holds nothing yet")

		terminateNamespace(ctx, w.ns)
		evs := deleteAndFinalize(ctx, w)
		Expect(placeholderDeploymentOf(ctx, w)).To(BeNil(), "releasing created the placeholder Deployment")
		Expect(fsCount(evs, ReasonNothingToRelease, "no placeholder Deployment")).To(Equal(1), "events %v", evs)
	})

	It("returns the nodes and lets a schedule go whose namespace is being deleted mid-window", func(ctx SpecContext) {
		w := newWorld(ctx, "fin-ns-window", 2*time.Minute)
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4).LeadTime(2 * time.Minute).SmallBatches().Obj()
		w.create(ctx, append([]client.Object{w.schedule}, threeQueries(w.ns)...)...)
		// Inside the window, on the first pass at which the pool holds
		// nodes: between batches the plan may let it go back to idle.
		var d *appsv1.Deployment
		for t := origin; d == nil || *d.Spec.Replicas == 0 || t.Before(windowStart); t = t.Add(10 * time.Second) {
			Expect(t.Before(windowStart.Add(10*time.Minute))).To(BeTrue(), "the pool held nothing in the window")
			w.tick(ctx, t)
			d = placeholderDeploymentOf(ctx, w)
		}

		terminateNamespace(ctx, w.ns)
		evs := deleteAndFinalize(ctx, w)
		Expect(*placeholderDeploymentOf(ctx, w).Spec.Replicas).To(BeEquivalentTo(0), "the nodes were not returned")
		Expect(fsCount(evs, ReasonNothingToRelease)).To(BeZero(), "events %v", evs)
	})

	It("lets a schedule go whose scale target was deleted first, also in a namespace being deleted", func(ctx SpecContext) {
		w := newWorld(ctx, "fin-target-gone", 2*time.Minute)
		md := decodeManifest(backendStoryMachineDeployment, w.ns)
		Expect(k8sClient.Create(ctx, md)).To(Succeed())
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4).LeadTime(2 * time.Minute).Obj()
		w.schedule.Spec.NodePool.Backend = scaleRef(md)
		w.create(ctx, append([]client.Object{w.schedule}, threeQueries(w.ns)...)...)
		for t := origin; !t.After(windowStart.Add(time.Minute)); t = t.Add(10 * time.Second) {
			w.tick(ctx, t)
		}
		Expect(k8sClient.Delete(ctx, md)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(md), &unstructured.Unstructured{Object: md.Object}))
		}).WithContext(ctx).Should(BeTrue())
		terminateNamespace(ctx, w.ns)

		evs := deleteAndFinalize(ctx, w)
		Expect(fsCount(evs, ReasonNothingToRelease, "MachineDeployment "+w.ns+"/spark-workers", "does not exist")).To(Equal(1), "events %v", evs)
	})

	It("lets a schedule go whose scale target's kind is not served", func(ctx SpecContext) {
		w := newWorld(ctx, "fin-kind-gone", 2*time.Minute)
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4).LeadTime(2 * time.Minute).Obj()
		w.schedule.Spec.NodePool.Backend = laxityv1alpha1.PoolBackend{Scale: &laxityv1alpha1.ScaleBackend{
			APIVersion: "example.com/v1", Kind: "Widget", Name: "pool",
		}}
		w.create(ctx, w.schedule)
		// The first pass adds the finalizer and fails on the backend.
		_, _ = w.es.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w.schedule)})
		Expect(fsSchedule(ctx, w).Finalizers).To(ContainElement(poolFinalizer))

		evs := deleteAndFinalize(ctx, w)
		Expect(fsCount(evs, ReasonNothingToRelease, "not served")).To(Equal(1), "events %v", evs)
	})
})
