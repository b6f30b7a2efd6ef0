package pool

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Nodes is the pool's ready nodes as one pass sees them.
type Nodes struct {
	// Ready counts the nodes matching the pool's nodeSelector whose Ready
	// condition is True.
	Ready int32
	// Allocatable is what each ready node offers pods, in the order listed:
	// whether an executor fits on the pool at all is judged from it.
	Allocatable []corev1.ResourceList
}

// ObserveNodes lists the nodes matching selector, once, and returns the
// ready ones.
func ObserveNodes(ctx context.Context, c client.Reader, selector map[string]string) (Nodes, error) {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes, client.MatchingLabels(selector)); err != nil {
		return Nodes{}, fmt.Errorf("listing nodes: %w", err)
	}
	var out Nodes
	for i := range nodes.Items {
		if nodeReady(&nodes.Items[i]) {
			out.Ready++
			out.Allocatable = append(out.Allocatable, nodes.Items[i].Status.Allocatable)
		}
	}
	return out, nil
}
