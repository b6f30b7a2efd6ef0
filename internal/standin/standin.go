// Package standin holds stand-ins for what a real cluster provides around
// laxity — a node provisioner and the Spark operator — so that laxity can be
// tested and demonstrated against a real API server without nodes or Spark.
// Everything here is a simulation: nothing it does runs a Spark job or
// provisions a machine. Both stand-ins are driven by explicit Tick calls with
// the (usually fake) time, so that runs are deterministic.
package standin

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/sparkapp"
)

// requestedAt records on a simulated Node when the pool asked for it.
const requestedAt = "simulation.laxity.dev/requested-at"

// Provisioner stands in for cluster-autoscaler or Karpenter: it creates
// Node objects, labelled with a pool's node selector, when the pool asks for
// more nodes, makes them Ready Delay later, and deletes the newest ones when
// the pool asks for fewer.
type Provisioner struct {
	Client client.Client
	Delay  time.Duration
	// Writes counts the Nodes Tick has created, deleted or made Ready, for
	// callers that wait for laxity to react to them.
	Writes int
	// Next is, as of the last Tick, when the next node turns Ready; zero
	// when none is on its way.
	Next time.Time
	// Allocatable, when set, is what every node offers pods once Ready (its
	// capacity too); unset, nodes report no size, as none is needed to run
	// the stand-in's SparkApplications.
	Allocatable corev1.ResourceList
}

// Tick brings the simulated nodes of the pool named pool towards requested
// at now.
func (p *Provisioner) Tick(ctx context.Context, now time.Time, pool string, selector map[string]string, requested int32) error {
	p.Next = time.Time{}
	var list corev1.NodeList
	if err := p.Client.List(ctx, &list, client.MatchingLabels(selector)); err != nil {
		return fmt.Errorf("listing simulated nodes: %w", err)
	}
	nodes := list.Items
	sort.Slice(nodes, func(a, b int) bool { return nodeNumber(&nodes[a]) < nodeNumber(&nodes[b]) })
	for i := len(nodes) - 1; i >= int(requested); i-- {
		if err := p.Client.Delete(ctx, &nodes[i]); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("removing simulated node %s: %w", nodes[i].Name, err)
		}
		p.Writes++
	}
	next := 0
	if n := len(nodes); n > 0 {
		next = nodeNumber(&nodes[n-1]) + 1
	}
	for i := len(nodes); i < int(requested); i++ {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:        fmt.Sprintf("%s-node-%d", pool, next),
			Labels:      selector,
			Annotations: map[string]string{requestedAt: now.UTC().Format(time.RFC3339Nano)},
		}}
		next++
		// A client that reads from a cache may list a node it created a
		// moment ago as missing: its deterministic name makes the second
		// create fail harmlessly.
		if err := p.Client.Create(ctx, node); apierrors.IsAlreadyExists(err) {
			continue
		} else if err != nil {
			return fmt.Errorf("creating simulated node: %w", err)
		}
		p.Writes++
		nodes = append(nodes, *node)
	}
	for i := range nodes[:min(len(nodes), int(requested))] {
		node := &nodes[i]
		asked, err := time.Parse(time.RFC3339Nano, node.Annotations[requestedAt])
		if err != nil || ready(node) {
			continue
		}
		if due := asked.Add(p.Delay); now.Before(due) {
			soonest(&p.Next, due)
			continue
		}
		node.Status.Conditions = []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "SimulatedNodeReady",
			LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now),
		}}
		if p.Allocatable != nil {
			node.Status.Allocatable, node.Status.Capacity = p.Allocatable.DeepCopy(), p.Allocatable.DeepCopy()
		}
		if err := p.Client.Status().Update(ctx, node); apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue // read stale: the next tick sees it as it is
		} else if err != nil {
			return fmt.Errorf("making simulated node %s ready: %w", node.Name, err)
		}
		p.Writes++
	}
	return nil
}

func nodeNumber(n *corev1.Node) int {
	for i := len(n.Name) - 1; i >= 0; i-- {
		if n.Name[i] == '-' {
			v, _ := strconv.Atoi(n.Name[i+1:])
			return v
		}
	}
	return 0
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Spark stands in for the Spark operator: it moves every SparkApplication
// through SUBMITTED → RUNNING → COMPLETED (or FAILED), writing the status
// fields the real operator writes.
type Spark struct {
	Client client.Client
	// Startup is the time from submission to running.
	Startup time.Duration
	// Duration is how long an application runs, usually from the query's
	// cost model.
	Duration func(ctx context.Context, app metav1.Object) (time.Duration, error)
	// Fail reports whether an application fails instead of completing.
	Fail func(app *unstructured.Unstructured) bool
	// Writes counts the state changes Tick has written, for callers that
	// wait for laxity to react to them.
	Writes int
	// Next is, as of the last Tick, when the next application moves on by
	// itself (starts running or ends); zero when none will.
	Next time.Time
}

// soonest keeps the earlier of next and t.
func soonest(next *time.Time, t time.Time) {
	if next.IsZero() || t.Before(*next) {
		*next = t
	}
}

// Tick advances every SparkApplication in namespace to where it is at now.
func (s *Spark) Tick(ctx context.Context, now time.Time, namespace string) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(sparkapp.GroupVersionKind.GroupVersion().WithKind(sparkapp.GroupVersionKind.Kind + "List"))
	s.Next = time.Time{}
	// Finished applications pile up and never change again: read them from
	// a cache without copying, and copy only those that may move.
	if err := s.Client.List(ctx, list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing SparkApplications: %w", err)
	}
	for i := range list.Items {
		state, _, _ := unstructured.NestedString(list.Items[i].Object, "status", "applicationState", "state")
		if state == "COMPLETED" || state == "FAILED" {
			continue
		}
		// An application goes through every state due by now in one Tick
		// (submitted and running at once, with no start-up time), so that
		// Next holds its end from the Tick that submits it.
		app := list.Items[i].DeepCopy()
		for {
			moved, err := s.advance(ctx, app, now)
			if err != nil {
				return err
			}
			if !moved {
				break
			}
		}
	}
	return nil
}

// advance moves app one state on if it is due by now, and reports whether
// it did, in which case it may move on again.
func (s *Spark) advance(ctx context.Context, app *unstructured.Unstructured, now time.Time) (bool, error) {
	state, _, _ := unstructured.NestedString(app.Object, "status", "applicationState", "state")
	stamp := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	parse := func(field string) time.Time {
		v, _, _ := unstructured.NestedString(app.Object, "status", field)
		t, _ := time.Parse(time.RFC3339, v)
		return t
	}
	switch state {
	case "":
		setState(app, "SUBMITTED", "")
		_ = unstructured.SetNestedField(app.Object, stamp(now), "status", "lastSubmissionAttemptTime")
		// The CRD requires driverInfo; the real operator fills in the pod.
		_ = unstructured.SetNestedField(app.Object, app.GetName()+"-driver", "status", "driverInfo", "podName")
	case "SUBMITTED":
		if running := parse("lastSubmissionAttemptTime").Add(s.Startup); now.Before(running) {
			soonest(&s.Next, running)
			return false, nil
		}
		setState(app, "RUNNING", "")
	case "RUNNING":
		d, err := s.Duration(ctx, app)
		if err != nil {
			return false, err
		}
		end := parse("lastSubmissionAttemptTime").Add(s.Startup + d)
		if now.Before(end) {
			soonest(&s.Next, end)
			return false, nil
		}
		if s.Fail != nil && s.Fail(app) {
			setState(app, "FAILED", "simulated failure")
		} else {
			setState(app, "COMPLETED", "")
		}
		_ = unstructured.SetNestedField(app.Object, stamp(end), "status", "terminationTime")
	default:
		return false, nil
	}
	err := s.Client.Status().Update(ctx, app)
	switch {
	case err == nil:
		s.Writes++
		return true, nil
	case !apierrors.IsConflict(err):
		return false, fmt.Errorf("advancing simulated SparkApplication %s: %w", app.GetName(), err)
	}
	return false, nil // read stale: the next Tick sees it as it is
}

// ModelledDuration is a Spark.Duration that runs each step for exactly its
// query's cost model (as costModel reads it from the query) on the step's
// nodes.
func ModelledDuration(c client.Reader, costModel func(*laxityv1alpha1.IntermittentQuery) (costmodel.Model, error)) func(ctx context.Context, app metav1.Object) (time.Duration, error) {
	return func(ctx context.Context, app metav1.Object) (time.Duration, error) {
		query, step, err := sparkapp.StepOf(app)
		if err != nil {
			return 0, err
		}
		var q laxityv1alpha1.IntermittentQuery
		if err := c.Get(ctx, client.ObjectKey{Namespace: app.GetNamespace(), Name: query}, &q); err != nil {
			return 0, err
		}
		model, err := costModel(&q)
		if err != nil {
			return 0, err
		}
		seconds := model.MergeSeconds(int(step.Nodes), step.Inputs)
		if step.Kind == planner.StepBatch {
			seconds = model.BatchSeconds(int(step.Nodes), step.ToTuple-step.FromTuple)
		}
		return time.Duration(seconds * float64(time.Second)), nil
	}
}

func setState(app *unstructured.Unstructured, state, message string) {
	_ = unstructured.SetNestedField(app.Object, state, "status", "applicationState", "state")
	if message != "" {
		_ = unstructured.SetNestedField(app.Object, message, "status", "applicationState", "errorMessage")
	}
}

// Slower is a cluster slower than its cost model: duration's applications
// take 1+slowdown times as long, and each also 1+s times as long with s
// drawn from a normal distribution of the given mean and standard deviation
// (fractions; 0, 0 for none). The draw is seeded by the application's
// namespace and name, so a stand-in restarted mid-run draws the same; an
// application never takes less than a tenth of its modelled time.
func Slower(duration func(ctx context.Context, app metav1.Object) (time.Duration, error), slowdown, mean, sd float64) func(ctx context.Context, app metav1.Object) (time.Duration, error) {
	return func(ctx context.Context, app metav1.Object) (time.Duration, error) {
		d, err := duration(ctx, app)
		if err != nil {
			return 0, err
		}
		factor := 1 + slowdown
		if mean != 0 || sd != 0 {
			h := fnv.New64a()
			_, _ = h.Write([]byte(app.GetNamespace() + "/" + app.GetName()))
			rng := rand.New(rand.NewPCG(h.Sum64(), 0x5eed))
			factor *= 1 + mean + sd*rng.NormFloat64()
		}
		return time.Duration(float64(d) * max(factor, 0.1)), nil
	}
}
