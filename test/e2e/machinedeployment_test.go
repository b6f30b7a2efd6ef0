//go:build e2e

package e2e

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/laxity-dev/laxity/internal/tenancy"
)

// unstructuredMachineDeployment builds and reads a minimal Cluster API
// MachineDeployment, the scale backend's target in the sample.
type unstructuredMachineDeployment struct{}

func (unstructuredMachineDeployment) object(namespace, name string) *unstructured.Unstructured {
	md := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta1",
		"kind":       "MachineDeployment",
		"metadata": map[string]any{"namespace": namespace, "name": name,
			// The cluster's administrator lets the namespace's schedules
			// resize it.
			"annotations": map[string]any{tenancy.AllowedNamespacesAnnotation: namespace}},
		"spec": map[string]any{
			"clusterName": "analytics",
			"replicas":    int64(0),
			"selector":    map[string]any{"matchLabels": map[string]any{"pool": name}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"pool": name}},
				"spec": map[string]any{
					"clusterName": "analytics",
					"bootstrap":   map[string]any{"dataSecretName": "bootstrap"},
					"infrastructureRef": map[string]any{
						"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "DockerMachineTemplate", "name": name,
					},
				},
			},
		},
	}}
	return md
}

func (unstructuredMachineDeployment) replicas(ctx context.Context, c client.Client, namespace, name string) (int64, error) {
	md := &unstructured.Unstructured{}
	md.SetAPIVersion("cluster.x-k8s.io/v1beta1")
	md.SetKind("MachineDeployment")
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, md); err != nil {
		return 0, err
	}
	n, _, err := unstructured.NestedInt64(md.Object, "spec", "replicas")
	return n, err
}
