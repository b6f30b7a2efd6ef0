// Package thirdparty embeds the unmodified CustomResourceDefinitions of the
// systems laxity drives (README.md says where each comes from), so that
// tests and `laxity demo` install their real schemas.
package thirdparty

import (
	"embed"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// Files of the CRDs in FS.
const (
	SparkApplications  = "sparkoperator.k8s.io_sparkapplications.yaml"
	MachineDeployments = "cluster.x-k8s.io_machinedeployments.yaml"
	NodePools          = "karpenter.sh_nodepools.yaml"
	CapacityBuffers    = "autoscaling.x-k8s.io_capacitybuffers.yaml"
)

//go:embed *.yaml
var fsys embed.FS

// CRDs decodes the named CRDs, unmodified except for conversion: a local API
// server serves no conversion webhook, so a CRD that declares one gets
// strategy None (every version then reads and writes the same stored
// fields). The files here declare none today (Cluster API adds its webhook
// with kustomize); this keeps them usable if they are refreshed from a
// release bundle that has it.
func CRDs(files ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		data, err := fsys.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", f, err)
		}
		if crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter {
			crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// Read is the named CRD file as it is.
func Read(name string) ([]byte, error) { return fsys.ReadFile(name) }
