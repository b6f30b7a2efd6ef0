package localcluster

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Karpenter's kinds, read and written as unstructured: the Karpenter module
// is not a dependency of laxity.
var (
	// NodePoolKind is Karpenter's NodePool.
	NodePoolKind = schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodePool"}
	// NodeClaimKind is Karpenter's NodeClaim.
	NodeClaimKind = schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodeClaim"}
)

// DefaultInstanceType is a KWOK instance type of Karpenter's KWOK provider:
// 4 CPUs, 8Gi of memory, 64 pods.
const DefaultInstanceType = "c-4x-amd64-linux"

// NewNodePool is a NodePool named name of on-demand KWOK nodes of the given
// instance types (DefaultInstanceType when none) using DefaultNodeClass.
// With replicas it is static (spec.replicas, Karpenter's StaticCapacity):
// Karpenter keeps that many nodes whatever the pods. Without, it is dynamic:
// Karpenter creates nodes for pending pods that select it and removes a node
// 5 seconds after it became empty. Either way Karpenter labels its nodes
// NodePoolLabel=name.
func NewNodePool(name string, replicas *int64, instanceTypes ...string) *unstructured.Unstructured {
	if len(instanceTypes) == 0 {
		instanceTypes = []string{DefaultInstanceType}
	}
	types := make([]any, len(instanceTypes))
	for i, t := range instanceTypes {
		types[i] = t
	}
	spec := map[string]any{
		"template": map[string]any{
			"spec": map[string]any{
				"nodeClassRef": map[string]any{"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": DefaultNodeClass},
				"requirements": []any{
					map[string]any{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": types},
					map[string]any{"key": "karpenter.sh/capacity-type", "operator": "In", "values": []any{"on-demand"}},
				},
				"expireAfter": "Never",
			},
		},
	}
	if replicas != nil {
		spec["replicas"] = *replicas
	} else {
		spec["disruption"] = map[string]any{"consolidationPolicy": "WhenEmpty", "consolidateAfter": "5s"}
	}
	pool := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	pool.SetGroupVersionKind(NodePoolKind)
	pool.SetName(name)
	return pool
}
