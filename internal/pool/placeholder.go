package pool

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	schedulingv1ac "k8s.io/client-go/applyconfigurations/scheduling/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
)

// Labels of the placeholder pods and their Deployment.
const (
	// LabelSchedule holds the name of the ElasticSchedule an object belongs
	// to.
	LabelSchedule = "laxity.dev/schedule"
	// LabelRole says what a pod does for its schedule.
	LabelRole = "laxity.dev/role"
	// RolePlaceholder is the LabelRole of placeholder pods.
	RolePlaceholder = "placeholder"
	// LabelManagedBy is the standard label naming the tool that manages an
	// object; laxity sets it to FieldOwner.
	LabelManagedBy = "app.kubernetes.io/managed-by"
)

// Placeholder PriorityClass.
const (
	// DefaultPriorityClassName is the PriorityClass of the placeholder pods
	// when the backend names none. laxity creates and owns it.
	DefaultPriorityClassName = "laxity-placeholder"
	// PlaceholderPriority is the value of the PriorityClass laxity creates:
	// below the default priority 0 of ordinary pods, so that any of them,
	// the Spark driver and executors included, preempts a placeholder.
	PlaceholderPriority int32 = -10
	// placeholderPriorityDescription is the PriorityClass's description.
	placeholderPriorityDescription = "laxity placeholder pods: hold nodes of an elastic pool ahead of batches, which preempt them. Never preempts other pods."
)

// Annotations of the placeholder Deployment: what laxity asked of the pool.
// Its replicas are the difference, the nodes no step of laxity's uses.
const (
	// AnnotationNodesRequested is the node count laxity asks of the pool.
	AnnotationNodesRequested = "laxity.dev/nodes-requested"
	// AnnotationNodesInUse is how many of them laxity's running steps use.
	AnnotationNodesInUse = "laxity.dev/nodes-in-use"
	// annotationPodTemplateHash identifies the pod template the Deployment
	// was last applied with.
	annotationPodTemplateHash = "laxity.dev/pod-template-hash"
)

// placeholderField is the field every error of the placeholder backend names.
const placeholderField = "spec.nodePool.backend.placeholder"

// placeholderContainerName is the name of the pause container.
const placeholderContainerName = "pause"

// placeholderUser is the non-root user and group the pause container runs
// as: 65535, the user of the upstream pause image, so that runAsNonRoot holds
// also for images that declare no numeric user.
const placeholderUser int64 = 65535

// PlaceholderDeploymentName is the name of the placeholder Deployment of the
// named ElasticSchedule, in the schedule's namespace.
func PlaceholderDeploymentName(schedule string) string {
	return schedule + "-placeholder"
}

// placeholderBackend holds nodes with a Deployment of low-priority pause
// pods, one per node.
type placeholderBackend struct {
	client client.Client
	// schedule is a copy of the ElasticSchedule, the owner of the
	// Deployment.
	schedule *laxityv1alpha1.ElasticSchedule
	image    string
}

var _ Backend = (*placeholderBackend)(nil)

// newPlaceholderBackend checks that the placeholder objects of the schedule
// can be built.
func newPlaceholderBackend(opts Options, schedule *laxityv1alpha1.ElasticSchedule) (*placeholderBackend, error) {
	spec := schedule.Spec.NodePool.Backend.Placeholder
	switch {
	case opts.PlaceholderImage == "":
		return nil, fmt.Errorf("%s: %w: no placeholder image is configured (the manager's --placeholder-image flag)", placeholderField, ErrInvalidBackend)
	case len(spec.Resources) == 0:
		return nil, fmt.Errorf("%s.resources: %w: name at least one resource, sized to fill a node", placeholderField, ErrInvalidBackend)
	case schedule.UID == "":
		return nil, fmt.Errorf("%s: building the placeholder of ElasticSchedule %s/%s: the schedule has no UID to own the placeholder (read it from the API server)", placeholderField, schedule.Namespace, schedule.Name)
	}
	if errs := validation.IsValidLabelValue(schedule.Name); len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w: the placeholder pods carry the label %s=%s, which is not a valid label value: %s",
			placeholderField, ErrInvalidBackend, LabelSchedule, schedule.Name, strings.Join(errs, "; "))
	}
	return &placeholderBackend{client: opts.Client, schedule: schedule.DeepCopy(), image: opts.PlaceholderImage}, nil
}

// Request implements Backend: it holds n nodes, none of them used by a step.
func (b *placeholderBackend) Request(ctx context.Context, n int32) error {
	_, err := b.Share(ctx, n, 0)
	return err
}

// Share implements Sharer: it makes sure the placeholder PriorityClass
// exists and applies the placeholder Deployment with one pod for each of the
// n nodes that the busy ones of laxity's steps leave (server-side apply,
// field owner laxity), recording n and busy in its annotations. A
// Deployment that already says so is not written. It returns the node count
// asked before.
//
// Share(0, _) is Release: it creates nothing.
func (b *placeholderBackend) Share(ctx context.Context, n, busy int32) (int32, error) {
	if err := checkCount(n); err != nil {
		return 0, fmt.Errorf("%s: %w", placeholderField, err)
	}
	busy = min(max(busy, 0), n)
	d, err := b.deployment(ctx)
	if err != nil {
		return 0, err
	}
	from := requestedBy(d)
	if n == 0 {
		_, err := b.Release(ctx)
		return from, err
	}
	apply := placeholderDeployment(b.schedule, b.image, n-busy)
	podHash, err := hashOf(apply.Spec.Template)
	if err != nil {
		return from, fmt.Errorf("%s: encoding the placeholder pod template: %w", placeholderField, err)
	}
	annotations := map[string]string{
		AnnotationNodesRequested: strconv.Itoa(int(n)), AnnotationNodesInUse: strconv.Itoa(int(busy)), annotationPodTemplateHash: podHash,
	}
	if d != nil && d.DeletionTimestamp.IsZero() && ptr.Deref(d.Spec.Replicas, -1) == n-busy && hasAnnotations(d.Annotations, annotations) {
		return from, nil
	}
	// New pods need their PriorityClass: ensured whenever pods are added.
	if d == nil || n-busy > ptr.Deref(d.Spec.Replicas, 0) || d.Annotations[annotationPodTemplateHash] != podHash {
		if err := b.ensurePriorityClass(ctx); err != nil {
			return from, err
		}
	}
	apply.WithAnnotations(annotations)
	if err := b.client.Apply(ctx, apply, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return from, fmt.Errorf("%s: applying Deployment %s/%s with %d replicas: %w", placeholderField, *apply.Namespace, *apply.Name, n-busy, err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Applied placeholder Deployment", "Deployment", klog.KRef(*apply.Namespace, *apply.Name), "nodes", n, "inUse", busy, "replicas", n-busy)
	return from, nil
}

// Release implements Releaser: it scales an existing placeholder Deployment
// to zero and creates nothing, neither the Deployment nor the PriorityClass.
// No Deployment, or one already being deleted, means that there is nothing
// to release; so does a write that the API server refuses because the
// namespace is being deleted (the Deployment went away meanwhile, and
// applying it again would have created it).
func (b *placeholderBackend) Release(ctx context.Context) (Released, error) {
	key := client.ObjectKey{Namespace: b.schedule.Namespace, Name: PlaceholderDeploymentName(b.schedule.Name)}
	var d appsv1.Deployment
	switch err := b.client.Get(ctx, key, &d); {
	case apierrors.IsNotFound(err):
		return releasedNothing("there is no placeholder Deployment %s", key), nil
	case err != nil:
		return Released{}, fmt.Errorf("%s: getting Deployment %s: %w", placeholderField, key, err)
	}
	if !d.DeletionTimestamp.IsZero() {
		return releasedNothing("the placeholder Deployment %s is being deleted", key), nil
	}
	if requestedBy(&d) == 0 {
		return Released{}, nil
	}
	apply := placeholderDeployment(b.schedule, b.image, 0).
		WithAnnotations(map[string]string{AnnotationNodesRequested: "0", AnnotationNodesInUse: "0"})
	if err := b.client.Apply(ctx, apply, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return releasedNothing("the placeholder Deployment %s is gone and its namespace is being deleted", key), nil
		}
		return Released{}, fmt.Errorf("%s: applying Deployment %s with 0 replicas: %w", placeholderField, key, err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Released the placeholder Deployment", "Deployment", klog.KRef(key.Namespace, key.Name))
	return Released{}, nil
}

// ensurePriorityClass makes sure the placeholder pods' PriorityClass exists.
// laxity owns DefaultPriorityClassName and applies it. A PriorityClass the
// backend names must exist: PriorityClasses are cluster-wide, so laxity
// never creates one under a name a namespace chose (which namespaces may
// name one is decided before the backend is asked, see internal/tenancy).
func (b *placeholderBackend) ensurePriorityClass(ctx context.Context) error {
	name := b.schedule.Spec.NodePool.Backend.Placeholder.PriorityClassName
	if name == "" {
		var have schedulingv1.PriorityClass
		if err := b.client.Get(ctx, client.ObjectKey{Name: DefaultPriorityClassName}, &have); err == nil && isPlaceholderPriorityClass(&have) {
			return nil
		}
		pc := placeholderPriorityClass(DefaultPriorityClassName)
		if err := b.client.Apply(ctx, pc, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("%s: applying PriorityClass %s: %w", placeholderField, DefaultPriorityClassName, err)
		}
		return nil
	}
	switch err := b.client.Get(ctx, client.ObjectKey{Name: name}, &schedulingv1.PriorityClass{}); {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s.priorityClassName: PriorityClass %s does not exist; laxity creates only its own, %s, used when priorityClassName is unset: %w",
			placeholderField, name, DefaultPriorityClassName, err)
	case err != nil:
		return fmt.Errorf("%s.priorityClassName: getting PriorityClass %s: %w", placeholderField, name, err)
	}
	return nil
}

// Requested implements Backend: the nodes the placeholder Deployment holds,
// its replicas and those laxity's steps use (requestedBy), 0 when there is
// no Deployment yet.
func (b *placeholderBackend) Requested(ctx context.Context) (int32, error) {
	d, err := b.deployment(ctx)
	if err != nil {
		return 0, err
	}
	return requestedBy(d), nil
}

// deployment reads the placeholder Deployment, nil when there is none.
func (b *placeholderBackend) deployment(ctx context.Context) (*appsv1.Deployment, error) {
	var d appsv1.Deployment
	key := client.ObjectKey{Namespace: b.schedule.Namespace, Name: PlaceholderDeploymentName(b.schedule.Name)}
	if err := b.client.Get(ctx, key, &d); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("%s: getting Deployment %s: %w", placeholderField, key, err)
	}
	return &d, nil
}

// requestedBy is the node count a placeholder Deployment holds: its
// replicas and the nodes laxity's steps use in their place (0 for no
// Deployment). Scaled by hand, it holds what its replicas say.
func requestedBy(d *appsv1.Deployment) int32 {
	if d == nil {
		return 0
	}
	return ptr.Deref(d.Spec.Replicas, 0) + nodesInUse(d.Annotations)
}

// isPlaceholderPriorityClass reports whether pc is as laxity applies its
// own placeholder PriorityClass.
func isPlaceholderPriorityClass(pc *schedulingv1.PriorityClass) bool {
	return pc.DeletionTimestamp.IsZero() && pc.Value == PlaceholderPriority && !pc.GlobalDefault &&
		ptr.Deref(pc.PreemptionPolicy, "") == corev1.PreemptNever && pc.Description == placeholderPriorityDescription &&
		pc.Labels[LabelManagedBy] == FieldOwner
}

// placeholderPriorityClass is the PriorityClass of the placeholder pods:
// below every ordinary pod, never preempting anything itself, and never the
// cluster's default.
func placeholderPriorityClass(name string) *schedulingv1ac.PriorityClassApplyConfiguration {
	return schedulingv1ac.PriorityClass(name).
		WithLabels(map[string]string{LabelManagedBy: FieldOwner}).
		WithValue(PlaceholderPriority).
		WithGlobalDefault(false).
		WithPreemptionPolicy(corev1.PreemptNever).
		WithDescription(placeholderPriorityDescription)
}

// placeholderDeployment is the Deployment that holds replicas nodes of the
// schedule's pool: pause pods requesting (and limited to) one node's worth
// of resources, pinned to the pool's nodeSelector, at most one per node
// (required anti-affinity on kubernetes.io/hostname against each other), at
// the placeholder priority, owned by the schedule. The pods do nothing and
// must go at once when preempted: no grace period, no service account token,
// no service links, non-root with every capability dropped.
func placeholderDeployment(schedule *laxityv1alpha1.ElasticSchedule, image string, replicas int32) *appsv1ac.DeploymentApplyConfiguration {
	spec := schedule.Spec.NodePool.Backend.Placeholder
	priorityClass := spec.PriorityClassName
	if priorityClass == "" {
		priorityClass = DefaultPriorityClassName
	}
	podLabels := map[string]string{LabelSchedule: schedule.Name, LabelRole: RolePlaceholder}
	objectLabels := map[string]string{LabelSchedule: schedule.Name, LabelRole: RolePlaceholder, LabelManagedBy: FieldOwner}

	container := corev1ac.Container().
		WithName(placeholderContainerName).
		WithImage(image).
		WithResources(corev1ac.ResourceRequirements().
			WithRequests(spec.Resources.DeepCopy()).
			WithLimits(spec.Resources.DeepCopy())).
		WithSecurityContext(corev1ac.SecurityContext().
			WithAllowPrivilegeEscalation(false).
			WithReadOnlyRootFilesystem(true).
			WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")))

	pod := corev1ac.PodSpec().
		WithPriorityClassName(priorityClass).
		WithNodeSelector(schedule.Spec.NodePool.NodeSelector).
		WithAffinity(corev1ac.Affinity().
			WithPodAntiAffinity(corev1ac.PodAntiAffinity().
				WithRequiredDuringSchedulingIgnoredDuringExecution(corev1ac.PodAffinityTerm().
					WithTopologyKey(corev1.LabelHostname).
					WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(podLabels))))).
		WithTerminationGracePeriodSeconds(0).
		WithAutomountServiceAccountToken(false).
		WithEnableServiceLinks(false).
		WithSecurityContext(corev1ac.PodSecurityContext().
			WithRunAsNonRoot(true).
			WithRunAsUser(placeholderUser).
			WithRunAsGroup(placeholderUser).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
		WithContainers(container)

	return appsv1ac.Deployment(PlaceholderDeploymentName(schedule.Name), schedule.Namespace).
		WithLabels(objectLabels).
		WithOwnerReferences(scheduleOwner(schedule)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(replicas).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(podLabels)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(podLabels).
				WithSpec(pod)))
}
