package standin

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/tenancy"
)

// ScaleTarget is a stand-in for the object a scale backend resizes, for a
// cluster that has none: a Cluster API MachineDeployment in the schedule's
// namespace or a static Karpenter NodePool (cluster-scoped), at zero
// replicas, whose machines would carry the pool's node selector. Nothing
// reconciles it; the Provisioner plays its controller.
func ScaleTarget(es *laxityv1alpha1.ElasticSchedule) (*unstructured.Unstructured, error) {
	ref := es.Spec.NodePool.Backend.Scale
	if ref == nil {
		return nil, nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("ElasticSchedule %s/%s: spec.nodePool.backend.scale.apiVersion: %w", es.Namespace, es.Name, err)
	}
	labels := map[string]any{}
	for k, v := range es.Spec.NodePool.NodeSelector {
		labels[k] = v
	}
	var obj map[string]any
	switch gv.WithKind(ref.Kind).GroupKind() {
	case schema.GroupKind{Group: "cluster.x-k8s.io", Kind: "MachineDeployment"}:
		obj = map[string]any{
			"metadata": map[string]any{"namespace": es.Namespace, "name": ref.Name},
			"spec": map[string]any{
				"clusterName": "simulated",
				"replicas":    int64(0),
				"selector":    map[string]any{"matchLabels": labels},
				"template": map[string]any{
					"metadata": map[string]any{"labels": labels},
					"spec": map[string]any{
						"clusterName": "simulated",
						"bootstrap":   map[string]any{"dataSecretName": "simulated"},
						"infrastructureRef": map[string]any{
							"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "DockerMachineTemplate", "name": ref.Name,
						},
					},
				},
			},
		}
	case schema.GroupKind{Group: "karpenter.sh", Kind: "NodePool"}:
		obj = map[string]any{
			"metadata": map[string]any{"name": ref.Name},
			"spec": map[string]any{
				"replicas": int64(0),
				"template": map[string]any{
					"metadata": map[string]any{"labels": labels},
					"spec": map[string]any{
						"nodeClassRef": map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "simulated"},
						"requirements": []any{},
					},
				},
			},
		}
	default:
		return nil, fmt.Errorf("ElasticSchedule %s/%s: spec.nodePool.backend.scale: the simulation stands in for a Cluster API MachineDeployment or a Karpenter NodePool, not %s %s; use one of those or the placeholder backend",
			es.Namespace, es.Name, ref.APIVersion, ref.Kind)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(ref.APIVersion)
	u.SetKind(ref.Kind)
	// The simulated pool is the schedule's: it lets the schedule's
	// namespace resize it, as an administrator would.
	u.SetAnnotations(map[string]string{tenancy.AllowedNamespacesAnnotation: es.Namespace})
	return u, nil
}
