/*
Copyright 2026 The laxity Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TenantPolicySpec grants the namespaces it selects the use of shared and
// privileged things that laxity reaches with its own identity. Without a
// grant a namespace's schedules and queries can use only what is their
// own: objects in their namespace, their own Secrets, laxity's own
// placeholder priority class and the service accounts the manager allows
// everywhere. Grants add up: a namespace may use what any policy that
// selects it grants. In every list "*" stands for any value.
type TenantPolicySpec struct {
	// namespaceSelector selects the namespaces the policy grants to, by
	// their labels: {} selects every namespace; to name namespaces, match
	// the label kubernetes.io/metadata.name, for example
	// {matchExpressions: [{key: kubernetes.io/metadata.name, operator: In,
	// values: [team-a, team-b]}]}.
	// +required
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`

	// pools are the node pool objects the selected namespaces'
	// ElasticSchedules may resize with the scale backend (a Karpenter
	// NodePool, a Cluster API MachineDeployment or MachinePool). A pool
	// may instead allow namespaces itself, with the annotation
	// laxity.dev/allowed-namespaces: "team-a,team-b" (or "*").
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	Pools []PoolGrant `json:"pools,omitempty"`

	// serviceAccounts are the service accounts, in the query's own
	// namespace, that the SparkApplications laxity creates for the
	// selected namespaces may run as (driver.serviceAccount,
	// executor.serviceAccount and the like). The namespace's "default"
	// service account and those the manager allows everywhere
	// (--allowed-service-accounts) need no grant.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=253
	ServiceAccounts []string `json:"serviceAccounts,omitempty"`

	// allowHostPath lets the selected namespaces' SparkApplication
	// templates mount hostPath volumes. Off by default: a host path gives
	// a pod the node's files.
	// +optional
	AllowHostPath bool `json:"allowHostPath,omitempty"`

	// allowPrivileged lets the selected namespaces' SparkApplication
	// templates run privileged containers, add capabilities, use the
	// host's network, PID or IPC namespace, or name a pod template file or
	// a Spark ConfigMap laxity cannot inspect: it raises the namespaces'
	// Pod Security level to privileged (see podSecurityLevel). Off by
	// default.
	// +optional
	AllowPrivileged bool `json:"allowPrivileged,omitempty"`

	// emr grants EMR on EKS resources to the selected namespaces'
	// ElasticSchedules with the emrContainers backend; each must be
	// granted.
	// +optional
	EMR *EMRGrant `json:"emr,omitempty"`

	// buckets are the object-storage buckets the selected namespaces'
	// queries may read with laxity's own credentials (an objectStore input
	// without a secretRef). A query that reads with its own Secret needs
	// no grant.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	Buckets []string `json:"buckets,omitempty"`

	// priorityClasses are the PriorityClasses the selected namespaces'
	// pods may have: placeholder pods (placeholder.priorityClassName) and
	// the driver and executor pods of their SparkApplications
	// (driver/executor.priorityClassName, batchSchedulerOptions.priorityClassName,
	// a pod template's priorityClassName). The class must exist; laxity
	// creates only its own, laxity-placeholder, whose pods preempt nothing
	// and which needs no grant, and pods that name no class need none.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	PriorityClasses []string `json:"priorityClasses,omitempty"`

	// capacityBuffers grants the capacityBuffer backend: a selected
	// namespace's ElasticSchedule may keep room with a CapacityBuffer only
	// on nodes one of these entries selects, and no more than that entry's
	// ceiling. Without an entry the backend is refused: a buffer names the
	// nodes the cluster's autoscaler provisions for it, and the autoscaler
	// applies no ResourceQuota to buffers.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	CapacityBuffers []CapacityBufferGrant `json:"capacityBuffers,omitempty"`

	// The grants below are what a query's SparkApplication template may ask
	// for beyond the namespace's own (see docs/design.md, "What a template
	// may ask for").

	// schedulers are the schedulers the selected namespaces'
	// SparkApplications may ask to place their pods: spark-operator's
	// batchScheduler (volcano, yunikorn, kube-scheduler), the pods'
	// schedulerName and the spark.kubernetes.scheduler.name settings. The
	// cluster's default scheduler (unset or default-scheduler) needs no
	// grant.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	Schedulers []string `json:"schedulers,omitempty"`

	// schedulerQueues are the batch-scheduler queues the selected
	// namespaces' SparkApplications may submit to
	// (batchSchedulerOptions.queue, the yunikorn.apache.org/queue and
	// scheduling.volcano.sh/queue-name annotations, the queue label).
	// A batch scheduler's queue is shared by the namespaces it serves, so
	// using one is a grant; "*" also allows a Volcano pod group template
	// file, which names a queue laxity cannot read.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	SchedulerQueues []string `json:"schedulerQueues,omitempty"`

	// podSecurityLevel is the Pod Security Standards level
	// (https://kubernetes.io/docs/concepts/security/pod-security-standards/)
	// the selected namespaces' driver and executor pods are held to:
	// restricted (the default, for namespaces no policy raises), baseline
	// (allows, among others, running as root, an Unconfined seccomp profile
	// and NFS or other non-ephemeral volume types) or privileged (allows
	// everything but hostPath volumes). allowPrivileged is the same as
	// privileged; hostPath volumes need allowHostPath at every level.
	// Grants add up: the highest level of the policies selecting a
	// namespace is its level.
	// +optional
	// +kubebuilder:validation:Enum=restricted;baseline;privileged
	PodSecurityLevel string `json:"podSecurityLevel,omitempty"`
}

// CapacityBufferGrant lets the capacityBuffer backend keep room on the nodes
// nodeSelector selects, up to a ceiling.
type CapacityBufferGrant struct {
	// nodeSelector is the node labels a schedule's spec.nodePool.nodeSelector
	// must hold, each with the same value (it may hold more, selecting
	// fewer nodes), for example {"karpenter.sh/nodepool": "team-a"}. {}
	// lets the schedule select any nodes.
	// +required
	// +kubebuilder:validation:MaxProperties=32
	NodeSelector map[string]string `json:"nodeSelector"`

	// maxNodes is the most buffered pods (one per node) a schedule may ask
	// for; its pool sizes are capped to it. Unset means no ceiling of its
	// own (the namespace's ResourceQuota still bounds the buffer).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	MaxNodes *int32 `json:"maxNodes,omitempty"`

	// maxResources bounds the buffered pods' requests all together, for
	// example {"cpu": "64", "memory": "256Gi"}: a schedule may ask for as
	// many nodes as fit in it.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	MaxResources corev1.ResourceList `json:"maxResources,omitempty"`
}

// PoolGrant names node pool objects by API group, kind and name.
type PoolGrant struct {
	// group is the API group of the pool's kind, for example
	// "karpenter.sh" or "cluster.x-k8s.io".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Group string `json:"group"`

	// kind is the pool's kind, for example "NodePool" or
	// "MachineDeployment".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`

	// name is the pool's name, or "*" for every pool of the kind. A
	// namespaced pool (a MachineDeployment) is the one in the
	// ElasticSchedule's own namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// maxNodes is the most nodes laxity writes to the pool for a schedule
	// of the selected namespaces; the schedule's pool sizes are capped to
	// it. Unset means no ceiling. A pool allowed by its own
	// laxity.dev/allowed-namespaces annotation has no ceiling from laxity
	// (the pool's own limits apply).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	MaxNodes *int32 `json:"maxNodes,omitempty"`
}

// EMRGrant lists the EMR on EKS resources granted. A schedule's
// emrContainers backend may name only granted ones.
type EMRGrant struct {
	// virtualClusterIds are the EMR on EKS virtual clusters that may run
	// the namespaces' job runs.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=64
	VirtualClusterIDs []string `json:"virtualClusterIds,omitempty"`

	// executionRoleArns are the IAM roles the namespaces' job runs may
	// assume; laxity passes them with its own AWS identity.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=2048
	ExecutionRoleARNs []string `json:"executionRoleArns,omitempty"`

	// nodegroups are the EKS managed node groups the namespaces' schedules
	// may resize.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Nodegroups []NodegroupGrant `json:"nodegroups,omitempty"`

	// endpoints are the AWS endpoint URLs the namespaces' schedules may
	// set (emrContainers.endpoint), for example a private endpoint. The
	// regional endpoints, used when endpoint is unset, need no grant.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=2048
	Endpoints []string `json:"endpoints,omitempty"`
}

// NodegroupGrant names EKS managed node groups.
type NodegroupGrant struct {
	// clusterName is the EKS cluster that owns the node group.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=100
	ClusterName string `json:"clusterName"`

	// nodegroupName is the node group's name, or "*" for every node group
	// of the cluster.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	NodegroupName string `json:"nodegroupName"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=lxtp,categories=laxity
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Host Path",type=boolean,JSONPath=`.spec.allowHostPath`,priority=1,description="Whether SparkApplication templates of the selected namespaces may mount host paths"
// +kubebuilder:printcolumn:name="Privileged",type=boolean,JSONPath=`.spec.allowPrivileged`,priority=1,description="Whether SparkApplication templates of the selected namespaces may run privileged"

// TenantPolicy is an administrator's grant to the namespaces it selects:
// the shared node pools their ElasticSchedules may resize, the service
// accounts their SparkApplications may run as, hostPath volumes and
// privileged pods, EMR on EKS resources, buckets read with laxity's own
// credentials and placeholder priority classes. laxity does for a
// namespace only what is its own or granted; a schedule or query that
// asks for more is Stalled with reason NotPermitted and a message naming
// the field and the grant it lacks.
type TenantPolicy struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec says which namespaces the policy grants to and what.
	// +required
	Spec TenantPolicySpec `json:"spec"`
}

// +kubebuilder:object:root=true

// TenantPolicyList is a list of TenantPolicies.
type TenantPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitzero"`
	// items are the TenantPolicies.
	Items []TenantPolicy `json:"items"`
}
