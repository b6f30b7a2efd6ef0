package pool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
)

// terminatingNamespaceError is what the API server answers a create in a
// namespace being deleted.
func terminatingNamespaceError() error {
	err := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "x",
		errors.New("unable to create new content in namespace ns because it is being terminated"))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: corev1.NamespaceTerminatingCause, Message: "namespace ns is being terminated", Field: "metadata.namespace",
	})
	return err
}

func TestNothingToRelease(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "cluster.x-k8s.io", Resource: "machinedeployments"}, "workers")
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false},
		{"the target is not found", notFound, true},
		{"the target is not found, wrapped", fmt.Errorf("spec.nodePool.backend.scale: %w", notFound), true},
		{"the namespace is being deleted", fmt.Errorf("applying: %w", terminatingNamespaceError()), true},
		{"the kind is not served", fmt.Errorf("spec.nodePool.backend.scale: %w (%w)", ErrInvalidBackend, ErrKindNotServed), true},
		{"no match from the RESTMapper", &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "karpenter.sh", Kind: "NodePool"}}, true},
		{"a plain forbidden", apierrors.NewForbidden(schema.GroupResource{Resource: "deployments"}, "x", errors.New("RBAC")), false},
		{"another invalid backend", fmt.Errorf("spec.nodePool.backend.placeholder: %w", ErrInvalidBackend), false},
		{"the API server is unreachable", errors.New("connection refused"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			why, got := NothingToRelease(tt.err)
			if got != tt.want {
				t.Fatalf("NothingToRelease(%v) = %v, want %v", tt.err, got, tt.want)
			}
			if got && why == "" {
				t.Fatal("nothing to release, but no reason given")
			}
		})
	}
}

// requestOnly is a Backend that is no Releaser.
type requestOnly struct {
	err       error
	requested []int32
}

func (r *requestOnly) Request(_ context.Context, n int32) error {
	r.requested = append(r.requested, n)
	return r.err
}
func (r *requestOnly) Requested(context.Context) (int32, error) { return 0, nil }

func TestReleaseOfABackendThatIsNoReleaser(t *testing.T) {
	tests := []struct {
		name        string
		err         error
		wantNothing bool
		wantErr     bool
	}{
		{"released", nil, false, false},
		{"the target is gone", apierrors.NewNotFound(schema.GroupResource{Resource: "nodegroups"}, "ng"), true, false},
		{"the namespace is being deleted", terminatingNamespaceError(), true, false},
		{"a failure", errors.New("throttled"), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &requestOnly{err: tt.err}
			got, err := Release(context.Background(), b)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Release: error %v, want an error: %v", err, tt.wantErr)
			}
			if got.Nothing != tt.wantNothing {
				t.Fatalf("Release: %+v, want Nothing %v", got, tt.wantNothing)
			}
			if len(b.requested) != 1 || b.requested[0] != 0 {
				t.Fatalf("Release asked for %v, want [0]", b.requested)
			}
		})
	}
}

var _ = Describe("releasing a pool", func() {
	var namespace string

	BeforeEach(func() {
		namespace = newNamespace()
		recorded.reset()
	})

	// placeholder names a PriorityClass of the spec's own, so that the
	// specs, in any order, see only the classes they created.
	var placeholder laxityv1alpha1.PoolBackend
	BeforeEach(func() {
		placeholder = laxityv1alpha1.PoolBackend{Placeholder: &laxityv1alpha1.PlaceholderBackend{
			Resources:         corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			PriorityClassName: "laxity-release-" + namespace,
		}}
	})

	// priorityClass creates the spec's PriorityClass, which the backend
	// needs (it creates none it is given the name of) to apply its
	// Deployment.
	priorityClass := func() {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: placeholder.Placeholder.PriorityClassName}, Value: -10}
		Expect(k8sClient.Create(ctx, pc)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, pc))).To(Succeed()) })
	}

	// terminate deletes the namespace. envtest runs no namespace controller,
	// so it stays Terminating and refuses new objects, as a namespace does
	// while its content is being deleted.
	terminate := func(namespace string) {
		Expect(k8sClient.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
		Eventually(func(g Gomega) {
			var ns corev1.Namespace
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Name: namespace}, &ns)).To(Succeed())
			g.Expect(ns.Status.Phase).To(Equal(corev1.NamespaceTerminating))
		}).Should(Succeed())
		// The API server's admission reads namespaces from its informer:
		// wait until it refuses creates.
		Eventually(func() bool {
			err := k8sClient.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: namespace}})
			return apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
		}).Should(BeTrue())
	}

	Context("with the placeholder backend", func() {
		It("creates nothing when there is no Deployment, not even the PriorityClass", func() {
			es := createSchedule(namespace, placeholder, nil)
			b, err := New(opts, es)
			Expect(err).NotTo(HaveOccurred())
			recorded.reset()

			got, err := Release(ctx, b)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.Nothing).To(BeTrue())
			Expect(got.Why).To(ContainSubstring(es.Name + "-placeholder"))
			Expect(b.Request(ctx, 0)).To(Succeed())
			Expect(recorded.writes()).To(BeEmpty())
			err = k8sClient.Get(ctx, client.ObjectKey{Name: placeholder.Placeholder.PriorityClassName}, &schedulingv1.PriorityClass{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the PriorityClass was created: %v", err)
		})

		It("scales an existing Deployment to zero, then writes nothing", func() {
			priorityClass()
			es := createSchedule(namespace, placeholder, nil)
			b, err := New(opts, es)
			Expect(err).NotTo(HaveOccurred())
			Expect(b.Request(ctx, 2)).To(Succeed())

			got, err := Release(ctx, b)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.Nothing).To(BeFalse())
			Expect(b.Requested(ctx)).To(BeEquivalentTo(0))

			recorded.reset()
			got, err = Release(ctx, b)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.Nothing).To(BeFalse(), "a Deployment at zero is released, not missing")
			Expect(recorded.writes()).To(BeEmpty())
		})

		It("releases in a namespace being deleted", func() {
			priorityClass()
			es := createSchedule(namespace, placeholder, nil)
			b, err := New(opts, es)
			Expect(err).NotTo(HaveOccurred())
			Expect(b.Request(ctx, 2)).To(Succeed())
			terminate(namespace)

			By("scaling the existing Deployment down: an update, which the namespace still takes")
			got, err := Release(ctx, b)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.Nothing).To(BeFalse())
			Expect(b.Requested(ctx)).To(BeEquivalentTo(0))

			By("finding nothing once the Deployment is gone")
			var d appsv1.Deployment
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: PlaceholderDeploymentName(es.Name)}, &d)).To(Succeed())
			Expect(k8sClient.Delete(ctx, &d)).To(Succeed())
			recorded.reset()
			got, err = Release(ctx, b)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.Nothing).To(BeTrue())
			Expect(recorded.writes()).To(BeEmpty())
		})

		It("counts a create the terminating namespace refuses as released", func() {
			es := createSchedule(namespace, placeholder, nil)
			terminate(namespace)
			// A Get that still sees a Deployment which is already gone (a
			// stale cache): applying it would create it again.
			c := staleDeployments{opts.Client}
			o := opts
			o.Client = c
			b, err := New(o, es)
			Expect(err).NotTo(HaveOccurred())
			recorded.reset()
			got, err := Release(ctx, b)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.Nothing).To(BeTrue())
			Expect(got.Why).To(ContainSubstring("being deleted"))
			err = k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: PlaceholderDeploymentName(es.Name)}, &appsv1.Deployment{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Deployment was created: %v", err)
		})
	})

	Context("with the scale backend", func() {
		It("finds nothing to release when the target does not exist, and writes nothing", func() {
			md := decode(fmt.Sprintf(machineDeployments["v1beta2"], "gone-"+rand.String(5)))
			b, err := New(opts, createSchedule(namespace, scaleBackendFor(md), nil))
			Expect(err).NotTo(HaveOccurred())
			recorded.reset()
			got, err := Release(ctx, b)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.Nothing).To(BeTrue())
			Expect(got.Why).To(ContainSubstring("MachineDeployment " + namespace + "/" + md.GetName()))
			Expect(recorded.writes()).To(BeEmpty())
		})

		It("scales an existing target to zero, also in a namespace being deleted", func() {
			md := decode(fmt.Sprintf(machineDeployments["v1beta2"], "workers-"+rand.String(5)))
			md.SetNamespace(namespace)
			Expect(k8sClient.Create(ctx, md)).To(Succeed())
			b, err := New(opts, createSchedule(namespace, scaleBackendFor(md), nil))
			Expect(err).NotTo(HaveOccurred())
			Expect(b.Request(ctx, 3)).To(Succeed())
			terminate(namespace)

			got, err := Release(ctx, b)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.Nothing).To(BeFalse())
			Expect(replicas(get(md))).To(BeEquivalentTo(0))
		})

		It("says a kind that is not served has nothing to release", func() {
			es := createSchedule(namespace, laxityv1alpha1.PoolBackend{Scale: &laxityv1alpha1.ScaleBackend{
				APIVersion: "example.com/v1", Kind: "Widget", Name: "target",
			}}, nil)
			_, err := New(opts, es)
			Expect(errors.Is(err, ErrInvalidBackend)).To(BeTrue())
			Expect(errors.Is(err, ErrKindNotServed)).To(BeTrue())
			_, nothing := NothingToRelease(err)
			Expect(nothing).To(BeTrue())
		})
	})
})

// staleDeployments is a client whose Get still sees a Deployment with two
// replicas that is already gone, as a stale cache would.
type staleDeployments struct{ client.Client }

func (c staleDeployments) Get(ctx context.Context, key client.ObjectKey, obj client.Object, o ...client.GetOption) error {
	if d, ok := obj.(*appsv1.Deployment); ok {
		d.Name, d.Namespace, d.Spec.Replicas = key.Name, key.Namespace, ptr.To[int32](2)
		return nil
	}
	return c.Client.Get(ctx, key, obj, o...)
}

// sized is a Backend of a given size that is no Sharer.
type sized struct {
	requestOnly
	size int32
}

func (s *sized) Requested(context.Context) (int32, error) { return s.size, nil }

func TestRequestOfABackendThatIsNoSharer(t *testing.T) {
	for _, tc := range []struct {
		name      string
		size      int32
		n, busy   int32
		wantAsked []int32
	}{
		{name: "at the size already: nothing asked", size: 4, n: 4, busy: 2},
		{name: "another size: asked for all n nodes, busy ones included", size: 2, n: 4, busy: 2, wantAsked: []int32{4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &sized{size: tc.size}
			from, err := Request(context.Background(), b, tc.n, tc.busy)
			if err != nil || from != tc.size {
				t.Fatalf("Request = %d, %v; want %d, nil", from, err, tc.size)
			}
			if !slices.Equal(b.requested, tc.wantAsked) {
				t.Errorf("asked %v, want %v", b.requested, tc.wantAsked)
			}
			if err := HandOver(context.Background(), b, tc.n, tc.busy+1); err != nil || len(b.requested) != len(tc.wantAsked) {
				t.Errorf("HandOver asked %v (%v); a backend that is no Sharer is asked nothing", b.requested, err)
			}
		})
	}
}
