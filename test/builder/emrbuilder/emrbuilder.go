// Package emrbuilder makes EMR on EKS pool backends for builder.Schedule.
// It is apart from package builder because the EMR client depends on the
// SparkApplication renderer, whose own tests use builder.
package emrbuilder

import (
	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/emr"
)

// Backend runs the batches as EMR on EKS job runs and sizes the pool
// through the EKS node group cfg names.
func Backend(cfg emr.Config) laxityv1alpha1.PoolBackend {
	return laxityv1alpha1.PoolBackend{EMRContainers: &laxityv1alpha1.EMRContainersBackend{
		VirtualClusterID: cfg.VirtualClusterID, ExecutionRoleARN: cfg.ExecutionRoleARN, ReleaseLabel: cfg.ReleaseLabel,
		Region: cfg.Region, NodegroupName: cfg.NodegroupName, ClusterName: cfg.ClusterName, Endpoint: cfg.Endpoint,
	}}
}

// Grant grants every EMR on EKS resource cfg names: its virtual cluster,
// execution role, node group and endpoint.
func Grant(cfg emr.Config) *laxityv1alpha1.EMRGrant {
	g := &laxityv1alpha1.EMRGrant{
		VirtualClusterIDs: []string{cfg.VirtualClusterID}, ExecutionRoleARNs: []string{cfg.ExecutionRoleARN},
		Nodegroups: []laxityv1alpha1.NodegroupGrant{{ClusterName: cfg.ClusterName, NodegroupName: cfg.NodegroupName}},
	}
	if cfg.Endpoint != "" {
		g.Endpoints = []string{cfg.Endpoint}
	}
	return g
}
