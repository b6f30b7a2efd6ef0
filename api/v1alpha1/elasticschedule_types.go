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

// ElasticScheduleSpec is the desired state of an ElasticSchedule: the elastic
// node pool that runs the batches of every IntermittentQuery referencing the
// schedule, and the parameters of the search for the cheapest plan that meets
// every deadline.
type ElasticScheduleSpec struct {
	// nodePool describes the elastic executor pool: the node counts the
	// planner may choose from, how nodes are billed and provisioned, and the
	// backend that adds and removes nodes.
	// +required
	NodePool NodePool `json:"nodePool"`

	// planning holds the parameters of the plan search. Every field has a
	// default, so planning may be omitted.
	// +optional
	// +kubebuilder:default={}
	Planning Planning `json:"planning,omitzero"`

	// streams are the inputs the schedule's queries may share, each with
	// what one read of it costs. A query names the stream it reads in
	// spec.input.stream; queries of one stream, one namespace and the same
	// Spark template and input credentials may then run their batches as
	// one shared step that reads the tuples once (spec.planning.sharing).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Streams []Stream `json:"streams,omitempty"`
}

// Stream is an input several queries of a schedule may read.
type Stream struct {
	// name is what queries' spec.input.stream refers to: a DNS-1123 label
	// such as "lineitem".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// scan is how long a step that only reads a batch of the stream takes
	// (its start-up and a read of its tuples, measured for example with a
	// job that counts a batch): what a shared step pays once for all its
	// members. Without a scan nothing is known to be saved, and the
	// stream's queries are planned alone (the Planned condition says so).
	// +optional
	Scan *ScanCostModel `json:"scan,omitempty"`
}

// ScanCostModel is what one read of a stream costs, in the form of a batch
// cost model: overheadSeconds + tuples × (serialSecondsPerTuple +
// parallelSecondsPerTuple / nodes).
type ScanCostModel struct {
	// overheadSeconds is the fixed time of one read in seconds, a
	// non-negative decimal string such as "20".
	// +required
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$') && !self.matches('[eE][+]?[0-9]{3,}') && double(self) <= 1e6",message="spec.streams[].scan.overheadSeconds must be a non-negative decimal number of at most 1e6 such as 20"
	OverheadSeconds string `json:"overheadSeconds"`

	// serialSecondsPerTuple is the read's time per tuple that does not
	// parallelise, in seconds, a non-negative decimal string such as "1e-8".
	// +required
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$') && !self.matches('[eE][+]?[0-9]{3,}') && double(self) <= 1e6",message="spec.streams[].scan.serialSecondsPerTuple must be a non-negative decimal number of at most 1e6 such as 1e-8"
	SerialSecondsPerTuple string `json:"serialSecondsPerTuple"`

	// parallelSecondsPerTuple is the read's time per tuple spread over the
	// nodes, in node-seconds, a non-negative decimal string such as "1e-5".
	// +required
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$') && !self.matches('[eE][+]?[0-9]{3,}') && double(self) <= 1e6",message="spec.streams[].scan.parallelSecondsPerTuple must be a non-negative decimal number of at most 1e6 such as 1e-5"
	ParallelSecondsPerTuple string `json:"parallelSecondsPerTuple"`
}

// NodePool describes the elastic executor pool of an ElasticSchedule.
type NodePool struct {
	// sizes is the ascending list of node counts the planner may choose for
	// the pool (at least 1, at most 32 entries, each at least 1, no
	// duplicates), for example [2, 4, 10, 14, 20]. The smallest size runs
	// batches when no deadline needs more.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Minimum=1
	// +kubebuilder:validation:items:Maximum=100000
	// +kubebuilder:validation:XValidation:rule="self.isSorted()",message="spec.nodePool.sizes must be in ascending order"
	// +kubebuilder:validation:XValidation:rule="self.all(x, self.exists_one(y, y == x))",message="spec.nodePool.sizes must not contain duplicates"
	Sizes []int32 `json:"sizes"`

	// idleNodes is the number of nodes the pool shrinks to while no query
	// window is open and no batch is pending. It may be 0 (scale to zero).
	// When unset it defaults to the smallest entry of sizes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	IdleNodes *int32 `json:"idleNodes,omitempty"`

	// pricePerNodeHour is the price of one node for one hour, as a positive
	// decimal string such as "0.25" (currency units are up to you; costs in
	// the status use the same unit). Nodes are billed per second, with a
	// minimum of billingMinimum per acquired node.
	// +required
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$') && !self.matches('[eE][+]?[0-9]{3,}') && double(self) > 0.0 && double(self) <= 1e6",message="spec.nodePool.pricePerNodeHour must be a positive decimal number of at most 1e6 such as 0.25"
	PricePerNodeHour string `json:"pricePerNodeHour"`

	// billingMinimum is the least time billed for every node acquired, as a
	// Go duration such as "60s". 0s means pure per-second billing. Defaults
	// to 60s.
	// +optional
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$') && !self.matches('(^|[^.0-9])([0-9]{5,}([.][0-9]*)?h|[0-9]{7,}([.][0-9]*)?m([^s]|$)|[0-9]{9,}([.][0-9]*)?s|[0-9]{12,}([.][0-9]*)?ms|[0-9]{15,}([.][0-9]*)?us|[0-9]{18,}([.][0-9]*)?ns)') && duration(self) <= duration('720h')",message="spec.nodePool.billingMinimum must be a non-negative duration of at most 720h (30 days) such as 60s"
	BillingMinimum *metav1.Duration `json:"billingMinimum,omitempty"`

	// provisioningLeadTime is how long a requested node takes to become
	// ready, as a Go duration such as "6m". Nodes are requested this long
	// before the plan needs them. Defaults to 6m.
	// +optional
	// +kubebuilder:default="6m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$') && !self.matches('(^|[^.0-9])([0-9]{5,}([.][0-9]*)?h|[0-9]{7,}([.][0-9]*)?m([^s]|$)|[0-9]{9,}([.][0-9]*)?s|[0-9]{12,}([.][0-9]*)?ms|[0-9]{15,}([.][0-9]*)?us|[0-9]{18,}([.][0-9]*)?ns)') && duration(self) <= duration('720h')",message="spec.nodePool.provisioningLeadTime must be a non-negative duration of at most 720h (30 days) such as 6m"
	ProvisioningLeadTime *metav1.Duration `json:"provisioningLeadTime,omitempty"`

	// releaseAfterIdle is the least time nodes would otherwise sit idle for
	// the pool to release them, as a Go duration such as "12m". Shorter idle
	// periods keep the nodes. When unset it is twice provisioningLeadTime.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$') && !self.matches('(^|[^.0-9])([0-9]{5,}([.][0-9]*)?h|[0-9]{7,}([.][0-9]*)?m([^s]|$)|[0-9]{9,}([.][0-9]*)?s|[0-9]{12,}([.][0-9]*)?ms|[0-9]{15,}([.][0-9]*)?us|[0-9]{18,}([.][0-9]*)?ns)') && duration(self) <= duration('720h')",message="spec.nodePool.releaseAfterIdle must be a non-negative duration of at most 720h (30 days) such as 12m"
	ReleaseAfterIdle *metav1.Duration `json:"releaseAfterIdle,omitempty"`

	// executorsPerNode is the number of Spark executors run on each ready
	// node: a step's executor.instances is ready nodes × executorsPerNode.
	// Defaults to 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	ExecutorsPerNode int32 `json:"executorsPerNode,omitempty"`

	// nodeSelector selects the pool's nodes by label, for example
	// {"laxity.dev/pool": "tpch"}. Ready Node objects matching it are the
	// pool's ready nodes; placeholder pods, buffered pods and Spark
	// executors are pinned to it.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// backend is how the pool adds and removes nodes: exactly one of scale,
	// placeholder, capacityBuffer or emrContainers.
	// +required
	Backend PoolBackend `json:"backend"`
}

// PoolBackend selects how the pool is resized. Exactly one field is set.
// +kubebuilder:validation:XValidation:rule="(has(self.scale) ? 1 : 0) + (has(self.placeholder) ? 1 : 0) + (has(self.capacityBuffer) ? 1 : 0) + (has(self.emrContainers) ? 1 : 0) == 1",message="spec.nodePool.backend must set exactly one of scale, placeholder, capacityBuffer or emrContainers"
type PoolBackend struct {
	// scale resizes any object that has a /scale subresource, such as a
	// Cluster API MachineDeployment or MachinePool, by writing its
	// spec.replicas through the scale subresource only.
	// +optional
	Scale *ScaleBackend `json:"scale,omitempty"`

	// placeholder runs one low-priority pause pod per wanted node, sized to a
	// node and pinned to nodeSelector, so that the cluster autoscaler or
	// Karpenter provisions nodes ahead of the batches, whose executors then
	// preempt the placeholders.
	// +optional
	Placeholder *PlaceholderBackend `json:"placeholder,omitempty"`

	// capacityBuffer asks the cluster's autoscaler for spare nodes through a
	// CapacityBuffer (autoscaling.x-k8s.io/v1beta1) of one node-sized pod
	// per wanted node, pinned to nodeSelector. The autoscaler keeps room
	// for pods that never run, so there is nothing for the executors to
	// preempt. Karpenter serves the kind behind its CapacityBuffer feature
	// gate.
	// +optional
	CapacityBuffer *CapacityBufferBackend `json:"capacityBuffer,omitempty"`

	// emrContainers runs the steps as EMR on EKS job runs on a virtual cluster
	// and resizes an EKS managed node group.
	// +optional
	EMRContainers *EMRContainersBackend `json:"emrContainers,omitempty"`
}

// ScaleBackend names an object, in the ElasticSchedule's namespace, that has
// a /scale subresource.
type ScaleBackend struct {
	// apiVersion is the group/version of the target, for example
	// "cluster.x-k8s.io/v1beta1". The scale subresource is written at this
	// version.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	APIVersion string `json:"apiVersion"`

	// kind is the kind of the target, for example "MachineDeployment".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`

	// name is the name of the target.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// PlaceholderBackend describes the pause pods that hold capacity for the pool.
type PlaceholderBackend struct {
	// resources are the resource requests of one placeholder pod, sized to
	// fill one node, for example {"cpu": "7", "memory": "28Gi"}.
	// +required
	// +kubebuilder:validation:MinProperties=1
	Resources corev1.ResourceList `json:"resources"`

	// priorityClassName is the PriorityClass of the placeholder pods. It
	// should have a lower priority than the Spark pods, so that they preempt
	// the placeholders. When unset the pods get the cluster's default
	// priority.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// CapacityBufferBackend describes the pods a CapacityBuffer keeps room for,
// one per wanted node.
type CapacityBufferBackend struct {
	// resources are the resource requests of one buffered pod, sized to
	// fill one node like an executor, for example {"cpu": "7", "memory":
	// "28Gi"}. The pods are never run: the autoscaler only keeps room for
	// them.
	// +required
	// +kubebuilder:validation:MinProperties=1
	Resources corev1.ResourceList `json:"resources"`
}

// EMRContainersBackend describes an EMR on EKS virtual cluster and the EKS
// managed node group that backs it.
type EMRContainersBackend struct {
	// virtualClusterId is the ID of the EMR on EKS virtual cluster that runs
	// the steps.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	VirtualClusterID string `json:"virtualClusterId"`

	// executionRoleArn is the ARN of the IAM role the job runs assume.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	ExecutionRoleARN string `json:"executionRoleArn"`

	// releaseLabel is the EMR release of the job runs, for example
	// "emr-7.5.0-latest".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	ReleaseLabel string `json:"releaseLabel"`

	// region is the AWS region of the virtual cluster and the node group, for
	// example "eu-west-1".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Region string `json:"region"`

	// nodegroupName is the name of the EKS managed node group resized to the
	// planned node count.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	NodegroupName string `json:"nodegroupName"`

	// clusterName is the name of the EKS cluster that owns the node group.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=100
	ClusterName string `json:"clusterName"`

	// endpoint overrides the AWS API endpoint URL for both EMR containers and
	// EKS, for example to point tests at a local fake. When unset the
	// regional endpoints are used.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Endpoint string `json:"endpoint,omitempty"`
}

// PlanningPolicy chooses which ready batch runs next.
// +kubebuilder:validation:Enum=LeastLaxity;EarliestDeadline
type PlanningPolicy string

const (
	// PolicyLeastLaxity runs the ready batch of the query with the least
	// slack first (LLF).
	PolicyLeastLaxity PlanningPolicy = "LeastLaxity"
	// PolicyEarliestDeadline runs the ready batch of the query with the
	// earliest deadline first (EDF).
	PolicyEarliestDeadline PlanningPolicy = "EarliestDeadline"
)

// PlanningObjective is the bill plans are ranked by.
// +kubebuilder:validation:Enum=Executable;Instant
type PlanningObjective string

const (
	// ObjectiveExecutable ranks plans by what the pool really bills: nodes
	// requested a provisioning lead time before they are needed, kept
	// through idle periods shorter than releaseAfterIdle, each billed at
	// least the billing minimum.
	ObjectiveExecutable PlanningObjective = "Executable"
	// ObjectiveInstant ranks plans by the cost of nodes that arrive and
	// leave the moment they are needed, ignoring the lead time and the
	// keep-alive: the ranking of the published method laxity's search
	// comes from.
	ObjectiveInstant PlanningObjective = "Instant"
)

// PlanningSearch says how far the plan search goes.
// +kubebuilder:validation:Enum=Improve;Grid
type PlanningSearch string

const (
	// SearchImprove takes the best grid cell and reshapes it: batches of
	// different sizes per query and per batch, boundaries moved by whole
	// arrival units, queries cut into more or fewer batches, each shape
	// planned and priced anew; it keeps a shape only when it is cheaper by
	// the objective and still meets every deadline.
	SearchImprove PlanningSearch = "Improve"
	// SearchGrid keeps to the grid: every initial pool size × every batch
	// size factor, each query's batches of one size. It is faster and
	// reproduces the published method's plans.
	SearchGrid PlanningSearch = "Grid"
)

// RateModel says how measured arrival rates feed back into planning.
// +kubebuilder:validation:Enum=Pessimistic;Optimistic
type RateModel string

const (
	// RateModelPessimistic re-plans when a query's measured rate exceeds what
	// the plan supports by more than rateTolerancePercent, assuming the
	// higher rate persists to the end of the window.
	RateModelPessimistic RateModel = "Pessimistic"
	// RateModelOptimistic keeps the plan's rates and re-plans only when the
	// spec or the set of queries changes.
	RateModelOptimistic RateModel = "Optimistic"
)

// Sharing says whether queries of one stream may share their batches.
// +kubebuilder:validation:Enum=Auto;None
type Sharing string

const (
	// SharingAuto shares a stream's batches among its queries wherever that
	// lowers the bill with every deadline met.
	SharingAuto Sharing = "Auto"
	// SharingNone plans and runs every query alone.
	SharingNone Sharing = "None"
)

// Concurrency says whether steps may run side by side on parts of the pool.
// +kubebuilder:validation:Enum=Sequential;Concurrent
type Concurrency string

const (
	// ConcurrencySequential runs one step at a time on the whole pool.
	ConcurrencySequential Concurrency = "Sequential"
	// ConcurrencyConcurrent also plans the queries in lanes, parts of the
	// pool whose steps run side by side, and takes that plan when it is
	// cheaper with every deadline met.
	ConcurrencyConcurrent Concurrency = "Concurrent"
)

// Planning holds the parameters of the plan search. Every field has a default.
type Planning struct {
	// batchSizeFactors are the multiples of each query's base batch size
	// the search tries (each at least 1). The base batch size (1X) is the
	// smallest batch for which processing the whole window in batches of
	// that size, on the smallest pool size, takes at most twice as long as
	// one batch of all its tuples: larger batches spend less on each batch's
	// fixed overhead, smaller ones start sooner. Defaults to
	// [1, 2, 4, 8, 16, 32].
	// +optional
	// +listType=atomic
	// +kubebuilder:default={1,2,4,8,16,32}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Minimum=1
	// +kubebuilder:validation:items:Maximum=100000
	BatchSizeFactors []int32 `json:"batchSizeFactors,omitempty"`

	// backtrackStep is how many scheduled batches a failed simulation moves
	// back at a time before retrying them on the next larger pool size: 1
	// finds the cheapest plans, larger values search faster. Defaults to 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	BacktrackStep int32 `json:"backtrackStep,omitempty"`

	// maxBatchDuration caps the batch size: no batch may be modelled, by its
	// query's cost model, to take this long or longer on the smallest pool
	// size, as a positive Go duration such as "10m". Defaults to 10m.
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$') && !self.matches('(^|[^.0-9])([0-9]{5,}([.][0-9]*)?h|[0-9]{7,}([.][0-9]*)?m([^s]|$)|[0-9]{9,}([.][0-9]*)?s|[0-9]{12,}([.][0-9]*)?ms|[0-9]{15,}([.][0-9]*)?us|[0-9]{18,}([.][0-9]*)?ns)') && duration(self) > duration('0s') && duration(self) <= duration('720h')",message="spec.planning.maxBatchDuration must be a positive duration of at most 720h (30 days) such as 10m"
	MaxBatchDuration metav1.Duration `json:"maxBatchDuration,omitzero"`

	// policy chooses among ready batches: LeastLaxity (the query with the
	// least slack first) or EarliestDeadline. Defaults to LeastLaxity.
	// When no plan in this order meets every deadline and one in the other
	// does, that plan is taken and its order followed (status.chosen.policy).
	// +optional
	// +kubebuilder:default=LeastLaxity
	Policy PlanningPolicy `json:"policy,omitempty"`

	// objective is the bill plans are ranked by: Executable (what the pool
	// really bills, with the provisioning lead time, the keep-alive and the
	// billing minimum) or Instant (nodes that come and go the moment they
	// are needed). Defaults to Executable.
	// +optional
	// +kubebuilder:default=Executable
	Objective PlanningObjective `json:"objective,omitempty"`

	// search says how far the plan search goes: Improve (the best cell of
	// the initial size × batch size factor grid, then reshaped batch by
	// batch while that lowers the bill) or Grid (the grid alone, each
	// query's batches of one size). Defaults to Improve.
	// +optional
	// +kubebuilder:default=Improve
	Search PlanningSearch `json:"search,omitempty"`

	// rateModel says how measured arrival rates trigger re-planning:
	// Pessimistic (re-plan when a query's measured rate exceeds the plan's
	// maximum supported rate by more than rateTolerancePercent) or Optimistic
	// (keep the planned rates). Defaults to Pessimistic.
	// +optional
	// +kubebuilder:default=Pessimistic
	RateModel RateModel `json:"rateModel,omitempty"`

	// rateWindow is the trailing period over which a query's arrival rate is
	// measured, as a positive Go duration such as "3m". Defaults to 3m.
	// +optional
	// +kubebuilder:default="3m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$') && !self.matches('(^|[^.0-9])([0-9]{5,}([.][0-9]*)?h|[0-9]{7,}([.][0-9]*)?m([^s]|$)|[0-9]{9,}([.][0-9]*)?s|[0-9]{12,}([.][0-9]*)?ms|[0-9]{15,}([.][0-9]*)?us|[0-9]{18,}([.][0-9]*)?ns)') && duration(self) > duration('0s') && duration(self) <= duration('720h')",message="spec.planning.rateWindow must be a positive duration of at most 720h (30 days) such as 3m"
	RateWindow metav1.Duration `json:"rateWindow,omitzero"`

	// rateTolerancePercent is by how many percent a measured rate may exceed
	// the plan's maximum supported rate before the schedule re-plans. 0
	// re-plans on any excess. Defaults to 2.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	RateTolerancePercent *int32 `json:"rateTolerancePercent,omitempty"`

	// runtimeMarginPercent is added to every modelled batch and merge
	// duration when planning: headroom for the run-to-run variation of
	// cloud nodes, whose slowdown is commonly modelled as 15% on average
	// (standard deviation 10%) from one period to the next. Unset, a query
	// plans with 25% until what laxity learned from its own steps applies,
	// then with the margin sized from how far they spread. Set, it is the
	// margin of a query not yet learned and the least margin of a learned
	// one; 0 plans with the cost model as it is. docs/experiments.md
	// measures how the margin trades missed deadlines for cost.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=200
	RuntimeMarginPercent *int32 `json:"runtimeMarginPercent,omitempty"`

	// learning says what laxity does with what it learns from the steps that
	// ran and the nodes that arrived: Apply (the default) plans with the cost
	// models fitted to the measured step durations, a runtime margin sized
	// from their spread (never below runtimeMarginPercent) and the measured
	// provisioning lead time (never below the declared one), and re-plans
	// when they change materially; Observe reports them in status and
	// events without changing plans; Off learns nothing.
	// +optional
	// +kubebuilder:default=Apply
	Learning Learning `json:"learning,omitempty"`

	// sharing says whether the queries of one stream (spec.streams) may run
	// their batches as shared steps that read the tuples once: Auto (the
	// default) shares wherever that lowers the bill with every deadline
	// met; None plans and runs every query alone.
	// +optional
	// +kubebuilder:default=Auto
	Sharing Sharing `json:"sharing,omitempty"`

	// concurrency says whether steps may run side by side. A step on p
	// nodes takes overhead + tuples·(serial + parallel/p) seconds, so the
	// more nodes, the more of the bill goes to start-up and serial work;
	// when the work needs a large pool, several steps on parts of it cost
	// less than one at a time on all of it. Sequential runs one step at a
	// time on the whole pool; Concurrent also plans the queries in 2 to 4
	// lanes, each with its share of the pool's largest size, one step of
	// each lane running at a time, and takes that plan only when it is
	// cheaper with every deadline met (status.chosen.lanes). A step
	// side by side gets executors for its own nodes only, and waits until
	// that many are free. Defaults to Sequential.
	// +optional
	// +kubebuilder:default=Sequential
	Concurrency Concurrency `json:"concurrency,omitempty"`
}

// ElasticScheduleStatus is the observed state of an ElasticSchedule: the
// chosen plan, the node requests it implies and the state of the pool. The
// controller rebuilds it from the world on every pass.
type ElasticScheduleStatus struct {
	// observedGeneration is the metadata.generation of the spec the status
	// was last computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions are the schedule's conditions: Planned, Feasible, PoolReady
	// and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// chosen summarises the plan in force: the cheapest feasible candidate,
	// or the least bad one when none is feasible.
	// +optional
	Chosen *ChosenPlan `json:"chosen,omitempty"`

	// candidates lists every (initialNodes, batchSizeFactor) pair the search
	// simulated, with its cost and peak node count.
	// +optional
	// +listType=atomic
	Candidates []PlanCandidate `json:"candidates,omitempty"`

	// queries summarises the plan of each IntermittentQuery referencing the
	// schedule.
	// +optional
	// +listType=atomic
	Queries []QueryPlan `json:"queries,omitempty"`

	// nodeRequests is the executable node timeline still ahead: at each
	// instant the pool is asked for that many nodes (increases already moved
	// earlier by provisioningLeadTime).
	// +optional
	// +listType=atomic
	NodeRequests []NodeRequest `json:"nodeRequests,omitempty"`

	// nodesRequested is the node count currently requested from the backend.
	// Unset until the controller has requested nodes.
	// +optional
	NodesRequested *int32 `json:"nodesRequested,omitempty"`

	// nodesReady is the number of ready Node objects matching nodeSelector.
	// Unset until the controller has observed the pool.
	// +optional
	NodesReady *int32 `json:"nodesReady,omitempty"`

	// lastPlanTime is when the plan in force was computed.
	// +optional
	LastPlanTime *metav1.Time `json:"lastPlanTime,omitempty"`

	// searchSeconds is how long the plan search took, in seconds, such as
	// 0.012.
	// +optional
	SearchSeconds Decimal `json:"searchSeconds,omitempty"`

	// maxSupportedRateFactor is the largest factor, such as 1.31, by which
	// every query's arrival rate can grow while the plan in force still
	// meets every deadline: the schedule re-plans when a measured rate
	// exceeds it.
	// +optional
	MaxSupportedRateFactor Decimal `json:"maxSupportedRateFactor,omitempty"`

	// planOrigin is the instant from which the plan measures time: the
	// plan's times are offsets from it.
	// +optional
	PlanOrigin *metav1.Time `json:"planOrigin,omitempty"`

	// leadTime is the provisioning lead time measured from the nodes that
	// arrived, and the one plans use.
	// +optional
	LeadTime *LearnedLeadTime `json:"leadTime,omitempty"`

	// searchBudget is set while the schedule's plan searches run out of the
	// time the manager gives one search (its --plan-timeout): which specs
	// they were made from, how many ran out in a row and when the next one
	// may start. A spec change is tried at once; a plan found clears it.
	// Unset when the last search finished within the budget.
	// +optional
	SearchBudget *SearchBudgetStatus `json:"searchBudget,omitempty"`
}

// SearchBudgetStatus is what the plan searches that ran out of their time
// budget leave behind, so that a restarted manager backs off as the last
// one did.
type SearchBudgetStatus struct {
	// inputs identifies the specs (the schedule's and its queries') the
	// searches that ran out were made from: a hash, as in the plan
	// ConfigMap's laxity.dev/plan-inputs annotation.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Inputs string `json:"inputs,omitempty"`

	// exceeded is how many searches of those specs in a row ran out of the
	// budget; each one doubles the wait before the next, up to a cap.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Exceeded int32 `json:"exceeded,omitempty"`

	// budgetSeconds is the time one search was allowed, in seconds.
	// +optional
	BudgetSeconds Decimal `json:"budgetSeconds,omitempty"`

	// lastExceededTime is when the last search ran out of the budget.
	// +optional
	LastExceededTime *metav1.Time `json:"lastExceededTime,omitempty"`

	// nextSearchTime is when a search of the same specs may start again;
	// a change of them is searched at once.
	// +optional
	NextSearchTime *metav1.Time `json:"nextSearchTime,omitempty"`
}

// ChosenPlan summarises the plan in force.
type ChosenPlan struct {
	// initialNodes is the pool size the plan starts batches on.
	// +optional
	InitialNodes int32 `json:"initialNodes,omitempty"`

	// batchSizeFactor is the multiple of each query's base batch size
	// (see spec.planning.batchSizeFactors) the plan uses.
	// +optional
	BatchSizeFactor int32 `json:"batchSizeFactor,omitempty"`

	// cost is the simulated cost of the plan, as if nodes came and went
	// the moment the plan needs them, in the currency of pricePerNodeHour,
	// such as 0.94.
	// +optional
	Cost Decimal `json:"cost,omitempty"`

	// executableCost is the cost of the node timeline the operator actually
	// requests (nodes asked for provisioningLeadTime ahead and released only
	// after releaseAfterIdle), such as 1.01.
	// +optional
	ExecutableCost Decimal `json:"executableCost,omitempty"`

	// maxNodes is the largest node count the plan uses.
	// +optional
	MaxNodes int32 `json:"maxNodes,omitempty"`

	// feasible is true when the plan meets every query's deadline.
	// +optional
	Feasible bool `json:"feasible"`

	// policy is the order in which the plan, and the operator after it,
	// run ready batches: spec.planning.policy, or the other order when
	// only that one meets every deadline.
	// +optional
	Policy PlanningPolicy `json:"policy,omitempty"`

	// lanes is how many parts of the pool the plan runs steps side by side
	// on (spec.planning.concurrency); absent when steps run one at a time.
	// +optional
	Lanes int32 `json:"lanes,omitempty"`
}

// PlanCandidate is one simulated (initialNodes, batchSizeFactor) pair.
type PlanCandidate struct {
	// initialNodes is the pool size the candidate starts batches on.
	// +optional
	InitialNodes int32 `json:"initialNodes,omitempty"`

	// batchSizeFactor is the multiple of each query's base batch size (see
	// spec.planning.batchSizeFactors) the candidate uses.
	// +optional
	BatchSizeFactor int32 `json:"batchSizeFactor,omitempty"`

	// cost is the candidate's simulated cost, in the currency of
	// pricePerNodeHour.
	// +optional
	Cost Decimal `json:"cost,omitempty"`

	// maxNodes is the largest node count the candidate uses.
	// +optional
	MaxNodes int32 `json:"maxNodes,omitempty"`

	// feasible is true when the candidate meets every deadline.
	// +optional
	Feasible bool `json:"feasible"`
}

// QueryPlan is the plan of one IntermittentQuery.
type QueryPlan struct {
	// name is the IntermittentQuery's name.
	// +optional
	Name string `json:"name,omitempty"`

	// batchSize is the planned number of tuples per batch (the last batch
	// takes what is left).
	// +optional
	BatchSize int64 `json:"batchSize,omitempty"`

	// batches is the planned number of batches.
	// +optional
	Batches int32 `json:"batches,omitempty"`

	// finish is when the query's final merge is planned to end.
	// +optional
	Finish metav1.Time `json:"finish,omitzero"`

	// deadline is the query's deadline.
	// +optional
	Deadline metav1.Time `json:"deadline,omitzero"`

	// slackSeconds is deadline minus finish, in seconds; negative when the
	// query would be late by that much.
	// +optional
	SlackSeconds Decimal `json:"slackSeconds,omitempty"`
}

// NodeRequest is one step of the executable node timeline.
type NodeRequest struct {
	// at is when the pool is asked for nodes.
	// +optional
	At metav1.Time `json:"at,omitzero"`

	// nodes is the node count requested from then on.
	// +optional
	Nodes int32 `json:"nodes"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 40 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label of at most 40 characters (lower-case letters, digits and '-', starting with a letter and ending with a letter or digit): the names laxity derives from it, such as <name>-plan and <name>-placeholder, must be DNS-1035 labels of at most 63 characters"
// +kubebuilder:resource:shortName=lxes,categories=laxity
// +kubebuilder:printcolumn:name="Cost",type=number,JSONPath=`.status.chosen.cost`,description="Simulated cost of the chosen plan, in the currency of spec.nodePool.pricePerNodeHour"
// +kubebuilder:printcolumn:name="Max Nodes",type=integer,JSONPath=`.status.chosen.maxNodes`,description="Largest node count the chosen plan uses"
// +kubebuilder:printcolumn:name="Requested",type=integer,JSONPath=`.status.nodesRequested`,description="Nodes currently requested from the pool's backend"
// +kubebuilder:printcolumn:name="Ready Nodes",type=integer,JSONPath=`.status.nodesReady`,description="Ready nodes matching spec.nodePool.nodeSelector"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Whether the schedule is planned, feasible and its pool as large as requested"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1,description="Why the schedule is or is not Ready"
// +kubebuilder:printcolumn:name="Feasible",type=boolean,JSONPath=`.status.chosen.feasible`,priority=1,description="Whether the chosen plan meets every query's deadline"
// +kubebuilder:printcolumn:name="Executable Cost",type=number,JSONPath=`.status.chosen.executableCost`,priority=1,description="Cost of the node timeline actually requested: nodes asked for a provisioning lead time ahead and released only after releaseAfterIdle"
// +kubebuilder:printcolumn:name="Max Rate",type=number,JSONPath=`.status.maxSupportedRateFactor`,priority=1,description="Largest factor by which every query's arrival rate can grow while the plan still meets every deadline"
// +kubebuilder:printcolumn:name="Lead Time",type=string,JSONPath=`.status.leadTime.learned`,priority=1,description="Provisioning lead time measured from the nodes that arrived"
// +kubebuilder:printcolumn:name="Planned",type=date,JSONPath=`.status.lastPlanTime`,priority=1,description="When the plan in force was computed"

// ElasticSchedule is an elastic node pool shared by the IntermittentQueries
// that reference it, together with the plan (batch sizes and a node-count
// timeline) that meets every query's deadline at the lowest cost.
type ElasticSchedule struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec is the desired pool and the planning parameters.
	// +required
	Spec ElasticScheduleSpec `json:"spec"`

	// status is the chosen plan and the observed state of the pool.
	// +optional
	Status ElasticScheduleStatus `json:"status,omitzero"`

	// Undecodable is set, by decoding, when the stored object does not fit
	// the Go types (see DecodeError); the spec is then empty. It is never
	// encoded.
	Undecodable *DecodeFailure `json:"-"`
}

// +kubebuilder:object:root=true

// ElasticScheduleList is a list of ElasticSchedules.
type ElasticScheduleList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitzero"`
	// items are the ElasticSchedules.
	Items []ElasticSchedule `json:"items"`
}
