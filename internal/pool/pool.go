// Package pool adds and removes the nodes of an ElasticSchedule's executor
// pool and counts the pool's ready nodes (docs/design.md, "Backends").
//
// The ElasticSchedule controller builds a Backend for a schedule with New,
// asks it for a node count with Backend.Request, and observes the pool with
// ReadyNodes. Three backends exist:
//
//   - scale writes spec.replicas of any object with a /scale subresource
//     (Cluster API MachineDeployment or MachinePool, a static Karpenter
//     NodePool) through the /scale subresource only, at exactly the
//     apiVersion the backend reference names, and never rewrites the object.
//   - placeholder runs one low-priority pause pod per wanted node that no
//     step of laxity's uses, pinned to the pool's nodeSelector and spread
//     one per node, so that the cluster autoscaler or Karpenter provisions
//     the nodes ahead of the batches. It is a Sharer: before a step
//     launches, its nodes' placeholders go, and they come back when it
//     ends; an executor that comes first preempts them.
//   - capacityBuffer asks the autoscaler itself to keep the room: a
//     CapacityBuffer (autoscaling.x-k8s.io/v1beta1, which Karpenter serves
//     behind its CapacityBuffer feature gate) of one node-sized pod per
//     wanted node, described by a PodTemplate pinned to the nodeSelector.
//     The autoscaler never runs those pods, so there is nothing to preempt.
//     Like placeholder it is a Sharer: the buffer holds only the nodes no
//     step uses. It is written as an unstructured object, so that laxity
//     depends on no autoscaler's Go module.
//
// Errors name the field of the ElasticSchedule they come from, such as
// spec.nodePool.backend.scale. Errors New returns because the backend cannot
// work as configured wrap ErrInvalidBackend, so that the controller can stop
// retrying until the spec changes.
package pool

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/scale"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
)

// FieldOwner is the field manager of every write this package makes.
const FieldOwner = "laxity"

// ErrInvalidBackend is wrapped by the errors New returns when the backend
// reference cannot work as written (no backend set, a kind the API server
// does not serve at the named apiVersion, a kind without a /scale
// subresource, no placeholder image configured, ...). Retrying without a
// change of the ElasticSchedule or of the manager's flags does not help.
// Transient failures, such as an unreachable API server, do not wrap it.
var ErrInvalidBackend = errors.New("invalid node pool backend")

// Backend adds and removes nodes of one ElasticSchedule's executor pool.
type Backend interface {
	// Request asks the pool to hold n nodes. Idempotent: requesting the
	// current size writes nothing.
	Request(ctx context.Context, n int32) error
	// Requested is the node count currently asked of the pool (what the
	// target object says).
	Requested(ctx context.Context) (int32, error)
}

// Sharer is a Backend that holds its nodes with pods of its own (the
// placeholder backend). It is told how many of the requested nodes
// laxity's steps use and holds only the others. A holder a step's executor
// preempted would otherwise be recreated, left Pending, and an autoscaler
// would add a node for it: one node more per executor, for nothing. Told
// before a launch, it frees the nodes the step is about to take.
type Sharer interface {
	Backend
	// Share asks for n nodes, busy of which laxity's steps use, and returns
	// the node count asked before.
	Share(ctx context.Context, n, busy int32) (from int32, err error)
}

// Request asks b for n nodes, busy of which laxity's steps use, and
// returns the node count asked before. A Sharer holds the n − busy others;
// any other backend is asked for n when that is not already its size.
func Request(ctx context.Context, b Backend, n, busy int32) (from int32, err error) {
	if s, ok := b.(Sharer); ok {
		return s.Share(ctx, n, busy)
	}
	from, err = b.Requested(ctx)
	if err != nil || from == n {
		return from, err
	}
	return from, b.Request(ctx, n)
}

// HandOver tells b that laxity's steps are about to hold busy of its n
// nodes, before a step launches. Only a Sharer holds nodes a step needs and
// frees them; any other backend's nodes are the steps' already, and nothing
// is asked of it.
func HandOver(ctx context.Context, b Backend, n, busy int32) error {
	s, ok := b.(Sharer)
	if !ok {
		return nil
	}
	_, err := s.Share(ctx, n, busy)
	return err
}

// Options are what New needs besides the ElasticSchedule: the manager's
// clients and flags. Build them once with NewOptions and share them between
// schedules; every field is safe for concurrent use.
type Options struct {
	// Client reads and writes the placeholder backend's Deployment and
	// PriorityClass, and the capacityBuffer backend's CapacityBuffer and
	// PodTemplate. Its scheme must know apps/v1 and scheduling/v1. With
	// the manager's cached client, Requested reads the Deployment from the
	// cache (the ElasticSchedule controller owns Deployments anyway), a
	// named PriorityClass is looked up through a PriorityClass informer, and
	// CapacityBuffers, read as unstructured objects, through an informer
	// started on the first read (so only where the backend is used).
	Client client.Client

	// RESTMapper maps the scale backend's apiVersion and kind to a resource,
	// and tells whether the CapacityBuffer kind is served (the manager's
	// RESTMapper).
	RESTMapper meta.RESTMapper

	// Discovery tells which resources have a /scale subresource and which
	// Scale kind it serves. It is cached; New invalidates it once when a
	// target seems to have no /scale subresource, in case a CRD has just
	// been installed or changed.
	Discovery discovery.CachedDiscoveryInterface

	// ScaleREST is the REST client the scale backend sends its /scale
	// requests through; see NewOptions for how it is configured.
	ScaleREST rest.Interface

	// PlaceholderImage is the container image of the placeholder pods, for
	// example a pause image (the manager's --placeholder-image flag), and
	// of the capacityBuffer backend's pod template, which the API server
	// wants although the pods never run. This package has no default; New
	// fails for either backend without one.
	PlaceholderImage string
}

// NewOptions builds Options from the manager's REST config, HTTP client,
// client and RESTMapper (mgr.GetConfig(), mgr.GetHTTPClient(),
// mgr.GetClient(), mgr.GetRESTMapper()). A nil httpClient gets one built
// from cfg.
func NewOptions(cfg *rest.Config, httpClient *http.Client, c client.Client, mapper meta.RESTMapper, placeholderImage string) (Options, error) {
	if httpClient == nil {
		var err error
		if httpClient, err = rest.HTTPClientFor(cfg); err != nil {
			return Options{}, fmt.Errorf("building an HTTP client: %w", err)
		}
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		return Options{}, fmt.Errorf("building a discovery client: %w", err)
	}
	scaleREST, err := newScaleRESTClient(cfg, httpClient)
	if err != nil {
		return Options{}, err
	}
	return Options{
		Client:           c,
		RESTMapper:       mapper,
		Discovery:        memory.NewMemCacheClient(dc),
		ScaleREST:        scaleREST,
		PlaceholderImage: placeholderImage,
	}, nil
}

// newScaleRESTClient is the REST client under the scale client, configured
// as scale.NewForConfig would configure it: no default group-version (the
// scale client sets absolute paths) and the scale package's codecs. JSON is
// forced because the scale client encodes its update bodies as JSON, whatever
// content type cfg prefers.
func newScaleRESTClient(cfg *rest.Config, httpClient *http.Client) (rest.Interface, error) {
	sc := rest.CopyConfig(cfg)
	sc.GroupVersion = &schema.GroupVersion{}
	sc.NegotiatedSerializer = scale.NewScaleConverter().Codecs().WithoutConversion()
	sc.ContentType = runtime.ContentTypeJSON
	sc.AcceptContentTypes = runtime.ContentTypeJSON
	// A deprecated target version (the DESIGN sample's v1beta1
	// MachineDeployment) warns on every request; say it once.
	sc.WarningHandler = rest.NewWarningWriter(os.Stderr, rest.WarningWriterOptions{Deduplicate: true})
	if sc.UserAgent == "" {
		sc.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientForConfigAndClient(sc, httpClient)
	if err != nil {
		return nil, fmt.Errorf("building the scale REST client: %w", err)
	}
	return rc, nil
}

// New builds the backend that the schedule's spec.nodePool.backend names.
// The schedule must be the object as read from the API server: the
// placeholder backend makes it the owner of the objects it creates.
//
// New reads only the RESTMapper and the (cached) discovery information; it
// writes nothing. A Backend holds a copy of what it needs from the spec, so
// build a new one when the spec changes.
func New(opts Options, schedule *laxityv1alpha1.ElasticSchedule) (Backend, error) {
	b := schedule.Spec.NodePool.Backend
	switch {
	case b.Scale != nil:
		return newScaleBackend(opts, schedule.Namespace, b.Scale)
	case b.Placeholder != nil:
		return newPlaceholderBackend(opts, schedule)
	case b.CapacityBuffer != nil:
		return newCapacityBufferBackend(opts, schedule)
	case b.EMRContainers != nil:
		return nil, fmt.Errorf("spec.nodePool.backend.emrContainers: the EKS node group is resized through package emr, not this one: %w", errors.ErrUnsupported)
	default:
		return nil, fmt.Errorf("spec.nodePool.backend: %w: none of scale, placeholder, capacityBuffer or emrContainers is set", ErrInvalidBackend)
	}
}

// ReadyNodes counts the Node objects that match selector and whose Ready
// condition is True: the pool's ready nodes (docs/design.md, "Run-time
// invariants"). Cordoned nodes count as long as they are Ready. An empty
// selector matches every node, exactly as an empty nodeSelector does.
func ReadyNodes(ctx context.Context, c client.Reader, selector map[string]string) (int32, error) {
	nodes, err := ObserveNodes(ctx, c, selector)
	return nodes.Ready, err
}

// nodeReady says whether the node's Ready condition is True.
func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// checkCount rejects a negative node count.
func checkCount(n int32) error {
	if n < 0 {
		return fmt.Errorf("requesting %d nodes: the count must not be negative", n)
	}
	return nil
}
