package localcluster

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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

// The instance types of Karpenter's KWOK provider: families c, s and m of
// 2, 4 and 8 GiB per CPU, in these CPU counts, of which Karpenter keeps
// kubeReservedCPU and kubeReservedMemory.
var (
	instanceCPUs   = []int64{1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256}
	instanceFamily = []struct {
		name      string
		gibPerCPU int64
	}{{"c", 2}, {"s", 4}, {"m", 8}}
	kubeReservedCPU = resource.MustParse("100m")
	kubeReservedMem = resource.MustParse("10Mi")
)

// InstanceTypeFor is the smallest linux/amd64 instance type of Karpenter's
// KWOK provider whose allocatable CPU and memory hold n pods of requests,
// fewest CPUs first, then least memory.
func InstanceTypeFor(requests corev1.ResourceList, n int64) (string, error) {
	cpu, mem := requests.Cpu().MilliValue()*n, requests.Memory().Value()*n
	for _, cpus := range instanceCPUs {
		for _, f := range instanceFamily {
			if cpus*1000-kubeReservedCPU.MilliValue() >= cpu && cpus*f.gibPerCPU<<30-kubeReservedMem.Value() >= mem {
				return fmt.Sprintf("%s-%dx-amd64-linux", f.name, cpus), nil
			}
		}
	}
	return "", fmt.Errorf("no KWOK instance type holds %d pods of %s CPU and %s memory", n, requests.Cpu(), requests.Memory())
}
