package pool

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
)

// CapacityBufferKind is the upstream CapacityBuffer of the cluster
// autoscalers (kubernetes/autoscaler), as Karpenter serves it behind its
// CapacityBuffer feature gate. laxity writes it as an unstructured object,
// so that it depends on no autoscaler's Go module.
var CapacityBufferKind = schema.GroupVersionKind{Group: "autoscaling.x-k8s.io", Version: "v1beta1", Kind: "CapacityBuffer"}

// RoleCapacityBuffer is the LabelRole of the capacityBuffer backend's
// CapacityBuffer and PodTemplate, and of the pods the template describes.
const RoleCapacityBuffer = "capacity-buffer"

// capacityBufferField is the field every error of the capacityBuffer
// backend names.
const capacityBufferField = "spec.nodePool.backend.capacityBuffer"

// bufferContainerName is the name of the buffered pods' one container.
const bufferContainerName = "buffer"

// CapacityBufferName is the name of the CapacityBuffer of the named
// ElasticSchedule, and of the PodTemplate it refers to, in the schedule's
// namespace.
func CapacityBufferName(schedule string) string {
	return schedule + "-capacity-buffer"
}

// capacityBufferBackend holds nodes with a CapacityBuffer: the autoscaler
// keeps room for replicas pods of a PodTemplate, one per node, without
// running them.
type capacityBufferBackend struct {
	client client.Client
	// schedule is a copy of the ElasticSchedule, the owner of the
	// CapacityBuffer and the PodTemplate.
	schedule *laxityv1alpha1.ElasticSchedule
	// image is the buffered pods' image: a pause image, never pulled.
	image string
}

var (
	_ Sharer   = (*capacityBufferBackend)(nil)
	_ Releaser = (*capacityBufferBackend)(nil)
)

// newCapacityBufferBackend checks that the schedule's buffer can be built
// and that the API server serves the CapacityBuffer kind.
func newCapacityBufferBackend(opts Options, schedule *laxityv1alpha1.ElasticSchedule) (*capacityBufferBackend, error) {
	spec := schedule.Spec.NodePool.Backend.CapacityBuffer
	switch {
	case opts.PlaceholderImage == "":
		// The API server wants an image in a PodTemplate, although the
		// buffered pods never run.
		return nil, fmt.Errorf("%s: %w: no placeholder image is configured for the buffered pods' template (the manager's --placeholder-image flag)", capacityBufferField, ErrInvalidBackend)
	case len(spec.Resources) == 0:
		return nil, fmt.Errorf("%s.resources: %w: name at least one resource, sized to fill a node", capacityBufferField, ErrInvalidBackend)
	case schedule.UID == "":
		return nil, fmt.Errorf("%s: building the CapacityBuffer of ElasticSchedule %s/%s: the schedule has no UID to own it (read it from the API server)", capacityBufferField, schedule.Namespace, schedule.Name)
	}
	if errs := validation.IsValidLabelValue(schedule.Name); len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w: the buffered pods carry the label %s=%s, which is not a valid label value: %s",
			capacityBufferField, ErrInvalidBackend, LabelSchedule, schedule.Name, strings.Join(errs, "; "))
	}
	if opts.RESTMapper == nil {
		return nil, fmt.Errorf("%s: no RESTMapper to look the CapacityBuffer kind up with", capacityBufferField)
	}
	// The kind is an add-on's (Karpenter serves it only behind a feature
	// gate): say so before anything is written, and stop retrying until the
	// spec changes.
	_, err := opts.RESTMapper.RESTMapping(CapacityBufferKind.GroupKind(), CapacityBufferKind.Version)
	switch {
	case meta.IsNoMatchError(err):
		return nil, fmt.Errorf("%s: %w (%w): the API server serves no kind %s at apiVersion %s; install the CapacityBuffer CRD of the cluster's autoscaler (for Karpenter, also turn on its CapacityBuffer feature gate): %w",
			capacityBufferField, ErrInvalidBackend, ErrKindNotServed, CapacityBufferKind.Kind, CapacityBufferKind.GroupVersion(), err)
	case err != nil:
		return nil, fmt.Errorf("%s: mapping kind %s of apiVersion %s to a resource: %w", capacityBufferField, CapacityBufferKind.Kind, CapacityBufferKind.GroupVersion(), err)
	}
	return &capacityBufferBackend{client: opts.Client, schedule: schedule.DeepCopy(), image: opts.PlaceholderImage}, nil
}

// Request implements Backend: it holds n nodes, none of them used by a step.
func (b *capacityBufferBackend) Request(ctx context.Context, n int32) error {
	_, err := b.Share(ctx, n, 0)
	return err
}

// Share implements Sharer: it applies the PodTemplate of one buffered pod
// and a CapacityBuffer of one such pod for each of the n nodes that the busy
// ones of laxity's steps leave (server-side apply, field owner laxity),
// recording n and busy in the CapacityBuffer's annotations. A CapacityBuffer
// that already says so is not written, and the PodTemplate is written only
// when it changes. It returns the node count asked before.
//
// Share(0, _) is Release: it creates nothing.
func (b *capacityBufferBackend) Share(ctx context.Context, n, busy int32) (int32, error) {
	if err := checkCount(n); err != nil {
		return 0, fmt.Errorf("%s: %w", capacityBufferField, err)
	}
	busy = min(max(busy, 0), n)
	cb, err := b.buffer(ctx)
	if err != nil {
		return 0, err
	}
	from := bufferRequested(cb)
	if n == 0 {
		_, err := b.Release(ctx)
		return from, err
	}
	template := bufferPodTemplate(b.schedule, b.image)
	hash, err := hashOf(template.Template)
	if err != nil {
		return from, fmt.Errorf("%s: encoding the buffered pods' template: %w", capacityBufferField, err)
	}
	annotations := map[string]string{
		AnnotationNodesRequested: strconv.Itoa(int(n)), AnnotationNodesInUse: strconv.Itoa(int(busy)), annotationPodTemplateHash: hash,
	}
	if bufferHolds(cb, n-busy, annotations, CapacityBufferName(b.schedule.Name)) {
		return from, nil
	}
	// The template hash on the buffer says which template was last applied:
	// the template is written again only when it changed. (A PodTemplate
	// deleted by hand comes back with the next change; meanwhile the
	// autoscaler reports it missing on the buffer.)
	if cb == nil || cb.GetAnnotations()[annotationPodTemplateHash] != hash {
		if err := b.client.Apply(ctx, template, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			return from, fmt.Errorf("%s: applying PodTemplate %s/%s: %w", capacityBufferField, *template.Namespace, *template.Name, err)
		}
	}
	apply := capacityBuffer(b.schedule, n-busy, annotations)
	if err := b.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(apply), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return from, fmt.Errorf("%s: applying CapacityBuffer %s/%s with %d replicas: %w", capacityBufferField, apply.GetNamespace(), apply.GetName(), n-busy, err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Applied CapacityBuffer", "CapacityBuffer", klog.KObj(apply), "nodes", n, "inUse", busy, "replicas", n-busy)
	return from, nil
}

// Release implements Releaser: it sets an existing CapacityBuffer's
// replicas to zero and creates nothing. No CapacityBuffer, one being
// deleted, or a write the API server refuses because the namespace is
// being deleted means that there is nothing to release.
func (b *capacityBufferBackend) Release(ctx context.Context) (Released, error) {
	cb, err := b.buffer(ctx)
	key := client.ObjectKey{Namespace: b.schedule.Namespace, Name: CapacityBufferName(b.schedule.Name)}
	switch {
	case err != nil:
		return Released{}, err
	case cb == nil:
		return releasedNothing("there is no CapacityBuffer %s", key), nil
	case cb.GetDeletionTimestamp() != nil:
		return releasedNothing("the CapacityBuffer %s is being deleted", key), nil
	case bufferRequested(cb) == 0:
		return Released{}, nil
	}
	// The template is not touched: the hash of the one applied last stays.
	annotations := map[string]string{AnnotationNodesRequested: "0", AnnotationNodesInUse: "0"}
	if hash, ok := cb.GetAnnotations()[annotationPodTemplateHash]; ok {
		annotations[annotationPodTemplateHash] = hash
	}
	apply := capacityBuffer(b.schedule, 0, annotations)
	if err := b.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(apply), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return releasedNothing("the CapacityBuffer %s is gone and its namespace is being deleted", key), nil
		}
		return Released{}, fmt.Errorf("%s: applying CapacityBuffer %s with 0 replicas: %w", capacityBufferField, key, err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Released the CapacityBuffer", "CapacityBuffer", klog.KRef(key.Namespace, key.Name))
	return Released{}, nil
}

// Requested implements Backend: the nodes the CapacityBuffer holds, its
// replicas and those laxity's steps use (bufferRequested), 0 when there is
// no CapacityBuffer yet.
func (b *capacityBufferBackend) Requested(ctx context.Context) (int32, error) {
	cb, err := b.buffer(ctx)
	if err != nil {
		return 0, err
	}
	return bufferRequested(cb), nil
}

// buffer reads the schedule's CapacityBuffer, nil when there is none.
func (b *capacityBufferBackend) buffer(ctx context.Context) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(CapacityBufferKind)
	key := client.ObjectKey{Namespace: b.schedule.Namespace, Name: CapacityBufferName(b.schedule.Name)}
	if err := b.client.Get(ctx, key, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("%s: getting CapacityBuffer %s: %w", capacityBufferField, key, err)
	}
	return u, nil
}

// bufferReplicas is a CapacityBuffer's spec.replicas, 0 when unset or not
// a number.
func bufferReplicas(cb *unstructured.Unstructured) int32 {
	n, found, err := unstructured.NestedInt64(cb.Object, "spec", "replicas")
	if !found || err != nil || n < 0 {
		return 0
	}
	return int32(min(n, int64(1<<31-1)))
}

// bufferRequested is the node count a CapacityBuffer holds: its replicas
// and the nodes laxity's steps use in their place (0 for no buffer).
// Changed by hand, it holds what its replicas say.
func bufferRequested(cb *unstructured.Unstructured) int32 {
	if cb == nil {
		return 0
	}
	return bufferReplicas(cb) + nodesInUse(cb.GetAnnotations())
}

// bufferHolds says whether cb, not being deleted, already has replicas,
// the annotations and the reference to the PodTemplate named template.
func bufferHolds(cb *unstructured.Unstructured, replicas int32, annotations map[string]string, template string) bool {
	if cb == nil || cb.GetDeletionTimestamp() != nil {
		return false
	}
	if _, found, _ := unstructured.NestedInt64(cb.Object, "spec", "replicas"); !found || bufferReplicas(cb) != replicas {
		return false
	}
	if ref, _, _ := unstructured.NestedString(cb.Object, "spec", "podTemplateRef", "name"); ref != template {
		return false
	}
	return hasAnnotations(cb.GetAnnotations(), annotations)
}

// bufferLabels are the labels of the buffered pods and those of the
// CapacityBuffer and its PodTemplate.
func bufferLabels(schedule *laxityv1alpha1.ElasticSchedule) (pod, object map[string]string) {
	pod = map[string]string{LabelSchedule: schedule.Name, LabelRole: RoleCapacityBuffer}
	object = map[string]string{LabelSchedule: schedule.Name, LabelRole: RoleCapacityBuffer, LabelManagedBy: FieldOwner}
	return pod, object
}

// bufferPodTemplate is the PodTemplate of one buffered pod: requesting one
// node's worth of resources, pinned to the pool's nodeSelector and at most
// one per node (required anti-affinity on kubernetes.io/hostname against
// each other), owned by the schedule. The autoscaler never runs it, so it
// has no limits, security settings or priority, only what decides where it
// would fit, and the image the API server requires of a template.
func bufferPodTemplate(schedule *laxityv1alpha1.ElasticSchedule, image string) *corev1ac.PodTemplateApplyConfiguration {
	podLabels, objectLabels := bufferLabels(schedule)
	pod := corev1ac.PodSpec().
		WithNodeSelector(schedule.Spec.NodePool.NodeSelector).
		WithAffinity(corev1ac.Affinity().
			WithPodAntiAffinity(corev1ac.PodAntiAffinity().
				WithRequiredDuringSchedulingIgnoredDuringExecution(corev1ac.PodAffinityTerm().
					WithTopologyKey(corev1.LabelHostname).
					WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(podLabels))))).
		WithContainers(corev1ac.Container().
			WithName(bufferContainerName).
			WithImage(image).
			WithResources(corev1ac.ResourceRequirements().
				WithRequests(schedule.Spec.NodePool.Backend.CapacityBuffer.Resources.DeepCopy())))
	return corev1ac.PodTemplate(CapacityBufferName(schedule.Name), schedule.Namespace).
		WithLabels(objectLabels).
		WithOwnerReferences(scheduleOwner(schedule)).
		WithTemplate(corev1ac.PodTemplateSpec().
			WithLabels(podLabels).
			WithSpec(pod))
}

// capacityBuffer is the CapacityBuffer that holds replicas nodes of the
// schedule's pool: replicas pods of the schedule's PodTemplate, with
// annotations, owned by the schedule. It sets only what laxity decides;
// the provisioning strategy is left to the API server's default (active
// capacity) and the status to the autoscaler.
func capacityBuffer(schedule *laxityv1alpha1.ElasticSchedule, replicas int32, annotations map[string]string) *unstructured.Unstructured {
	_, objectLabels := bufferLabels(schedule)
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"podTemplateRef": map[string]any{"name": CapacityBufferName(schedule.Name)},
			// Always present, 0 included: the CRD asks a buffer that refers
			// to a PodTemplate for replicas or limits.
			"replicas": int64(replicas),
		},
	}}
	u.SetGroupVersionKind(CapacityBufferKind)
	u.SetName(CapacityBufferName(schedule.Name))
	u.SetNamespace(schedule.Namespace)
	u.SetLabels(objectLabels)
	u.SetAnnotations(annotations)
	u.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(schedule, laxityv1alpha1.GroupVersion.WithKind("ElasticSchedule"))})
	return u
}
