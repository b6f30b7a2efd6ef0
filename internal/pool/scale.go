package pool

import (
	"context"
	"fmt"
	"slices"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/scale"
	ctrl "sigs.k8s.io/controller-runtime"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
)

// scaleField is the field every error of the scale backend names.
const scaleField = "spec.nodePool.backend.scale"

// scaleBackend resizes one object through its /scale subresource. It only
// ever GETs and PUTs /scale, at the apiVersion the reference names: it never
// reads or writes the object itself, so fields other than spec.replicas (and
// whatever the object's own controller derives from it) stay untouched.
type scaleBackend struct {
	scales   scale.ScaleInterface
	resource schema.GroupResource
	name     string
	// target describes the object in messages, for example
	// "MachineDeployment analytics/spark-workers (cluster.x-k8s.io/v1beta1)".
	target string
}

var _ Backend = (*scaleBackend)(nil)

// newScaleBackend resolves the reference to a resource with a /scale
// subresource. The target lives in the schedule's namespace; a cluster-scoped
// kind, such as Karpenter's NodePool, is addressed without one.
func newScaleBackend(opts Options, namespace string, ref *laxityv1alpha1.ScaleBackend) (*scaleBackend, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("%s.apiVersion: %w: %q is not a group/version: %w", scaleField, ErrInvalidBackend, ref.APIVersion, err)
	}
	gvk := gv.WithKind(ref.Kind)
	mapping, err := opts.RESTMapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case meta.IsNoMatchError(err):
		return nil, fmt.Errorf("%s: %w (%w): the API server serves no kind %s at apiVersion %s: %w", scaleField, ErrInvalidBackend, ErrKindNotServed, ref.Kind, ref.APIVersion, err)
	case err != nil:
		return nil, fmt.Errorf("%s: mapping kind %s of apiVersion %s to a resource: %w", scaleField, ref.Kind, ref.APIVersion, err)
	}
	gvr := mapping.Resource

	target := fmt.Sprintf("%s %s/%s (%s)", ref.Kind, namespace, ref.Name, ref.APIVersion)
	if mapping.Scope.Name() == meta.RESTScopeNameRoot {
		namespace = ""
		target = fmt.Sprintf("%s %s (%s)", ref.Kind, ref.Name, ref.APIVersion)
	}

	ok, err := hasScaleSubresource(opts.Discovery, gvr)
	if err != nil {
		return nil, fmt.Errorf("%s: looking up the /scale subresource of %s: %w", scaleField, gvr, err)
	}
	if !ok {
		return nil, fmt.Errorf("%s: %w: kind %s of apiVersion %s has no /scale subresource", scaleField, ErrInvalidBackend, ref.Kind, ref.APIVersion)
	}

	getter := scale.New(opts.ScaleREST, pinnedVersion{mapper: opts.RESTMapper, version: gvr.Version},
		dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(opts.Discovery))
	return &scaleBackend{
		scales:   getter.Scales(namespace),
		resource: gvr.GroupResource(),
		name:     ref.Name,
		target:   target,
	}, nil
}

// hasScaleSubresource says whether discovery lists gvr's /scale subresource.
// When the cached answer says no, it asks the API server once more, since a
// CRD may have been installed or changed since the cache was filled.
func hasScaleSubresource(d discovery.CachedDiscoveryInterface, gvr schema.GroupVersionResource) (bool, error) {
	var err error
	for attempt := range 2 {
		if attempt > 0 {
			d.Invalidate()
		}
		var list *metav1.APIResourceList
		list, err = d.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
		if err == nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool {
			return r.Name == gvr.Resource+"/scale"
		}) {
			return true, nil
		}
	}
	if err != nil {
		return false, err
	}
	return false, nil
}

// pinnedVersion is the scale client's resource mapper. The scale client asks
// its mapper for a group-resource's preferred version and would read and
// write /scale there; pinning the version keeps every request at the
// apiVersion the backend reference names (docs/design.md, "Backends"),
// for example at cluster.x-k8s.io/v1beta1 although v1beta2 is preferred. The
// manager's RESTMapper still answers, so a version that stops being served
// fails instead of silently moving.
type pinnedVersion struct {
	mapper  meta.RESTMapper
	version string
}

// ResourceFor implements scale.PreferredResourceMapper.
func (p pinnedVersion) ResourceFor(resource schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	if resource.Version == "" {
		resource.Version = p.version
	}
	return p.mapper.ResourceFor(resource)
}

// Request implements Backend: it reads the target's scale and writes
// spec.replicas through /scale only if it differs from n. The update carries
// the resourceVersion just read, so a concurrent change of the target fails
// with a conflict instead of being overwritten.
func (b *scaleBackend) Request(ctx context.Context, n int32) error {
	if err := checkCount(n); err != nil {
		return fmt.Errorf("%s: %w", scaleField, err)
	}
	s, err := b.get(ctx)
	if err != nil {
		return err
	}
	if s.Spec.Replicas == n {
		return nil
	}
	from := s.Spec.Replicas
	s.Spec.Replicas = n
	if _, err := b.scales.Update(ctx, b.resource, s, metav1.UpdateOptions{FieldManager: FieldOwner}); err != nil {
		return b.wrap(fmt.Sprintf("updating the scale of %s to %d", b.target, n), err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Requested nodes from the pool", "target", b.target, "from", from, "to", n)
	return nil
}

// Release implements Releaser: it writes spec.replicas 0 through /scale
// when the target holds nodes. A target that does not exist (or whose kind
// is no longer served) has nothing to release; nothing is created.
func (b *scaleBackend) Release(ctx context.Context) (Released, error) {
	s, err := b.scales.Get(ctx, b.resource, b.name, metav1.GetOptions{})
	if err == nil && s.Spec.Replicas != 0 {
		from := s.Spec.Replicas
		s.Spec.Replicas = 0
		if _, err = b.scales.Update(ctx, b.resource, s, metav1.UpdateOptions{FieldManager: FieldOwner}); err == nil {
			ctrl.LoggerFrom(ctx).V(1).Info("Released the pool", "target", b.target, "from", from)
		}
	}
	if err == nil {
		return Released{}, nil
	}
	if why, ok := NothingToRelease(err); ok {
		return releasedNothing("%s: %s", b.target, why), nil
	}
	return Released{}, b.wrap("releasing "+b.target, err)
}

// Requested implements Backend: the target's spec.replicas as its /scale
// reports it.
func (b *scaleBackend) Requested(ctx context.Context) (int32, error) {
	s, err := b.get(ctx)
	if err != nil {
		return 0, err
	}
	return s.Spec.Replicas, nil
}

// get reads the target's /scale.
func (b *scaleBackend) get(ctx context.Context) (*autoscalingv1.Scale, error) {
	s, err := b.scales.Get(ctx, b.resource, b.name, metav1.GetOptions{})
	if err != nil {
		return nil, b.wrap("getting the scale of "+b.target, err)
	}
	return s, nil
}

// wrap adds the field and what was being done to an error of the scale
// client, and says plainly when the target does not exist (the /scale
// subresource was checked by New, so a 404 means the object is missing).
func (b *scaleBackend) wrap(doing string, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s: %s: the target does not exist: %w", scaleField, doing, err)
	}
	return fmt.Errorf("%s: %s: %w", scaleField, doing, err)
}
