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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Learning says what laxity does with what it learns from the steps that
// ran: the cost models fitted from their measured durations, the runtime
// margin sized from how far those durations spread, and the provisioning
// lead time measured from the nodes that arrived.
// +kubebuilder:validation:Enum=Apply;Observe;Off
type Learning string

const (
	// LearningApply plans with what was learned (the default).
	LearningApply Learning = "Apply"
	// LearningObserve learns and reports what it would change, in status
	// and events, without changing any plan.
	LearningObserve Learning = "Observe"
	// LearningOff learns nothing: plans use the declared models, margin and
	// lead time only.
	LearningOff Learning = "Off"
)

// StepKind names the kind of a step: a batch, a partial merge or the final
// merge.
// +kubebuilder:validation:Enum=Batch;Partial;Final
type StepKind string

const (
	// StepKindBatch is a batch of tuples.
	StepKindBatch StepKind = "Batch"
	// StepKindPartial is a partial merge of intermediate results.
	StepKindPartial StepKind = "Partial"
	// StepKindFinal is the final merge.
	StepKindFinal StepKind = "Final"
)

// MaxObservations is the number of recent step observations a learned model
// keeps in status: enough to fit from and to size a margin from, few enough
// that status stays small.
const MaxObservations = 64

// MaxLeadTimeObservations is the number of recent node arrivals a learned
// lead time keeps in status.
const MaxLeadTimeObservations = 32

// LearnedModel is what laxity learned about a query from its finished
// steps: the step durations measured, the cost models fitted to them, and
// the margin sized from their spread.
type LearnedModel struct {
	// costModel is the cost model fitted to the observations, in the units of
	// spec.costModel (its samples are left empty). Until there are enough
	// observations it is the declared model scaled by the observed slowdown.
	// +optional
	CostModel *CostModel `json:"costModel,omitempty"`

	// slowdownPercent is how much longer than the declared cost model the
	// observed steps took, as a robust average over the observations (one
	// that a few outliers do not move), in percent: 30 means 1.3 times as
	// long; negative when faster.
	// +optional
	SlowdownPercent Decimal `json:"slowdownPercent,omitempty"`

	// runtimeMarginPercent is the margin sized from the observations: a high
	// quantile of how much longer than the fitted model a step took, in
	// percent. Plans use it where it is larger than
	// spec.planning.runtimeMarginPercent.
	// +optional
	RuntimeMarginPercent Decimal `json:"runtimeMarginPercent,omitempty"`

	// tailMarginPercent is the share of the query's work after its window
	// closes (its last batch and final merge, priced with
	// runtimeMarginPercent) that plans keep spare before the deadline, in
	// percent. That work runs where no re-plan can make up for a step that
	// runs long, so it is priced for a rarer draw of the same spread. A
	// plan that cannot keep it is made without it.
	// +optional
	TailMarginPercent Decimal `json:"tailMarginPercent,omitempty"`

	// applied says whether plans use this model (spec.planning.learning is
	// Apply) or it is only reported (Observe).
	// +optional
	Applied bool `json:"applied,omitempty"`

	// batchObservations counts the finished batches the model was fitted
	// from.
	// +optional
	BatchObservations int32 `json:"batchObservations,omitempty"`

	// mergeObservations counts the finished merges (partial and final) the
	// model was fitted from.
	// +optional
	MergeObservations int32 `json:"mergeObservations,omitempty"`

	// observations are the most recent finished steps, oldest first, at most
	// 64: what the model is fitted from, kept here so that a restarted
	// manager loses nothing.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Observations []StepObservation `json:"observations,omitempty"`

	// lastChange is when the model last changed by more than the tolerance
	// that makes laxity re-plan.
	// +optional
	LastChange *metav1.Time `json:"lastChange,omitempty"`
}

// StepObservation is one finished step as it ran: what it processed, on how
// many nodes, and how long it took from launch to end. Failed attempts are
// not observations.
type StepObservation struct {
	// kind is the step's kind.
	Kind StepKind `json:"kind"`

	// windowStart is the start of the window the step belongs to.
	WindowStart metav1.Time `json:"windowStart"`

	// index is the step's index among its query's steps of the same kind.
	// +kubebuilder:validation:Minimum=0
	Index int32 `json:"index"`

	// work is the tuples a batch processed or the intermediate results a
	// merge combined.
	// +kubebuilder:validation:Minimum=0
	Work int64 `json:"work"`

	// nodes is the pool size the step ran on.
	// +kubebuilder:validation:Minimum=1
	Nodes int32 `json:"nodes"`

	// seconds is the measured duration, in seconds as a decimal string.
	// +kubebuilder:validation:MaxLength=32
	Seconds string `json:"seconds"`

	// modelledSeconds is the duration the declared cost model gave the step,
	// in seconds as a decimal string.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	ModelledSeconds string `json:"modelledSeconds,omitempty"`
}

// LearnedLeadTime is the provisioning lead time laxity measured from the
// nodes that arrived: from the moment more nodes were requested to the
// moment that many were Ready.
type LearnedLeadTime struct {
	// observations are the most recent measured lead times, oldest first, at
	// most 32.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Observations []metav1.Duration `json:"observations,omitempty"`

	// learned is the lead time plans use when spec.planning.learning is
	// Apply: a high quantile of the observations, never below the declared
	// spec.nodePool.provisioningLeadTime.
	// +optional
	Learned *metav1.Duration `json:"learned,omitempty"`

	// pending is the outstanding request being timed: the node count asked
	// for and when.
	// +optional
	Pending *PendingNodeRequest `json:"pending,omitempty"`
}

// PendingNodeRequest is a request for more nodes not yet met.
type PendingNodeRequest struct {
	// nodes is the node count asked for.
	Nodes int32 `json:"nodes"`
	// since is when the count was first asked for.
	Since metav1.Time `json:"since"`
}
