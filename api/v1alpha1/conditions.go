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

// Condition types of an ElasticSchedule.
const (
	// ElasticSchedulePlannedCondition is True when a plan has been computed for
	// the current spec and the current set of queries referencing the schedule.
	ElasticSchedulePlannedCondition = "Planned"

	// ElasticScheduleFeasibleCondition is True when the plan in force meets
	// every query's deadline, and False when no candidate does.
	ElasticScheduleFeasibleCondition = "Feasible"

	// ElasticSchedulePoolReadyCondition is True when the pool has at least as
	// many ready nodes as the plan requests now.
	ElasticSchedulePoolReadyCondition = "PoolReady"

	// ElasticScheduleReadyCondition summarises the schedule. It is True when
	// the schedule is Planned and Feasible and its pool is ready or scaling
	// up as planned (reason ScalingUp: the missing nodes were requested less
	// than a provisioning lead time ago). It is False, with the reason of
	// what is wrong, when nodes are overdue or lost, the backend fails, a
	// step is stuck, or no plan can be made or meets every deadline.
	ElasticScheduleReadyCondition = "Ready"

	// ElasticScheduleStalledCondition is True, and present only then, when
	// the schedule cannot reach its goal without a change to a spec: the
	// spec cannot be planned, or no plan meets every deadline. It is the
	// abnormal-true condition of the kstatus conventions, which GitOps tools
	// (Flux, Argo CD through kstatus) show as failed/degraded.
	ElasticScheduleStalledCondition = "Stalled"
)

// Condition types of an IntermittentQuery.
const (
	// IntermittentQueryReadyCondition summarises the query; its reason,
	// shown in the Status column of kubectl get, says where it stands at a
	// glance: OnTrack, AtRisk, FinalMergeSucceeded, StepFailed,
	// NoFeasiblePlan, InputUnavailable, or why it cannot run yet.
	IntermittentQueryReadyCondition = "Ready"

	// IntermittentQueryOnTrackCondition is True while the query is expected
	// to finish before its deadline (its slack is not negative), and once it
	// has finished in time. It is False, with the reason, while the query is
	// expected to be late (SlackNegative), after its deadline passed
	// (SlackNegative), when no plan meets its deadline (NoFeasiblePlan),
	// when a step failed on every attempt (StepFailed), and once it finished
	// late. Being at risk is OnTrack False before the deadline.
	IntermittentQueryOnTrackCondition = "OnTrack"

	// IntermittentQueryDeadlineMissedCondition is True once the deadline has
	// passed without a succeeded final merge.
	IntermittentQueryDeadlineMissedCondition = "DeadlineMissed"

	// IntermittentQuerySucceededCondition is True once the query's final merge
	// has succeeded.
	IntermittentQuerySucceededCondition = "Succeeded"

	// IntermittentQueryStalledCondition is True, and present only then, when
	// the query cannot finish in time without a change: its deadline passed
	// unmet, a step failed on every attempt, or no plan meets its deadline
	// (kstatus's abnormal-true condition, see ElasticScheduleStalledCondition).
	IntermittentQueryStalledCondition = "Stalled"
)

// Condition reasons. Reasons are CamelCase and shared by both kinds where
// they mean the same thing.
const (
	// PlanFoundReason surfaces when the planner produced a plan for the
	// current spec and queries.
	PlanFoundReason = "PlanFound"

	// NoFeasiblePlanReason surfaces when no candidate pool size and batch-size
	// factor meets every deadline; the least late plan is kept in status.
	NoFeasiblePlanReason = "NoFeasiblePlan"

	// DeadlinesMetReason surfaces when the plan in force meets every
	// query's deadline.
	DeadlinesMetReason = "DeadlinesMet"

	// NoQueriesReason surfaces when no IntermittentQuery references the
	// schedule, so there is nothing to plan.
	NoQueriesReason = "NoQueries"

	// InvalidSpecReason surfaces when a spec passes API validation but cannot
	// be planned, for example a cost model whose samples fit a negative
	// coefficient; the message names the field.
	InvalidSpecReason = "InvalidSpec"

	// WaitingForNodesReason surfaces when fewer nodes are ready than the plan
	// requests now.
	WaitingForNodesReason = "WaitingForNodes"

	// NodesReadyReason surfaces when at least as many nodes are ready as the
	// plan requests now.
	NodesReadyReason = "NodesReady"

	// ScalingUpReason surfaces, with Ready True, while fewer nodes are ready
	// than requested but every missing node was requested less than a
	// provisioning lead time ago: the pool is scaling up as planned.
	ScalingUpReason = "ScalingUp"

	// NodesOverdueReason surfaces, with PoolReady and Ready False, when
	// nodes the plan asked for more than a provisioning lead time (and a
	// 30-second grace) ago are still not ready.
	NodesOverdueReason = "NodesOverdue"

	// BackendErrorReason surfaces when the pool backend failed to request or
	// report nodes; the message holds the backend's error.
	BackendErrorReason = "BackendError"

	// InputUnavailableReason surfaces when a query's input cannot be read,
	// for example a Kafka broker that does not answer or a Secret that is
	// missing; the message names the field and holds the error. Nothing of
	// the query starts until its input can be read again.
	InputUnavailableReason = "InputUnavailable"

	// ScheduleNotFoundReason surfaces when the ElasticSchedule named by
	// spec.scheduleName does not exist.
	ScheduleNotFoundReason = "ScheduleNotFound"

	// WaitingForPlanReason surfaces when the query's schedule has not yet
	// planned it.
	WaitingForPlanReason = "WaitingForPlan"

	// SlackPositiveReason surfaces when the query is expected to finish before
	// its deadline (slack ≥ 0).
	SlackPositiveReason = "SlackPositive"

	// SlackNegativeReason surfaces when the query is expected to finish after
	// its deadline (slack < 0).
	SlackNegativeReason = "SlackNegative"

	// OnTrackReason is the reason of a query's Ready condition while it is
	// expected to finish before its deadline.
	OnTrackReason = "OnTrack"

	// AtRiskReason is the reason of a query's Ready condition while it is
	// expected to finish after its deadline, or its deadline has passed,
	// with no result yet.
	AtRiskReason = "AtRisk"

	// DeadlinePassedReason surfaces when the deadline has passed before the
	// final merge succeeded.
	DeadlinePassedReason = "DeadlinePassed"

	// StepFailedReason surfaces when a batch or merge SparkApplication failed;
	// the message names it.
	StepFailedReason = "StepFailed"

	// FinalMergeSucceededReason surfaces when the query's final merge has
	// succeeded and its result is available.
	FinalMergeSucceededReason = "FinalMergeSucceeded"

	// ForeignStepReason surfaces when an object carries laxity's labels for
	// a query's step but is not owned by the query (its controller owner
	// reference is not the IntermittentQuery, by name and UID); the message
	// names it. laxity ignores it: it is never counted, merged or waited for.
	ForeignStepReason = "ForeignStep"

	// StepNameTakenReason surfaces when the name of a step laxity was about
	// to launch is taken by an object the query does not own; the message
	// names it. The object is left alone and the step runs under its next
	// attempt's name, which is not counted as a failure.
	StepNameTakenReason = "StepNameTaken"

	// StepStuckReason surfaces when a step stayed pending or running well
	// past its modelled duration; the message names it. laxity cancels it
	// and retries it as a failed attempt.
	StepStuckReason = "StepStuck"

	// NodesLostReason surfaces when ready nodes the work in progress needs
	// vanished; laxity re-plans from the nodes still there and requests the
	// rest again.
	NodesLostReason = "NodesLost"

	// SearchBudgetExceededReason surfaces when the plan search ran longer
	// than the manager allows one search (its --plan-timeout); the message
	// says what to change. A schedule that already has a plan keeps it.
	SearchBudgetExceededReason = "SearchBudgetExceeded"

	// NotPermittedReason surfaces, with Stalled True, when a schedule or
	// query asks laxity for something its namespace is not granted: a
	// shared node pool whose laxity.dev/allowed-namespaces annotation does
	// not list the namespace and no TenantPolicy grants, a service account
	// not allowed, a hostPath volume or privileged pod, an EMR on EKS
	// resource, a bucket read with laxity's credentials or a placeholder
	// PriorityClass not granted. The message names the field and the grant
	// that is missing. Nothing of it runs, and no pool is resized, until
	// the grant is made or the spec changed.
	NotPermittedReason = "NotPermitted"

	// PoolNotFoundReason surfaces, with Stalled True, when the pool object
	// a schedule's scale backend names does not exist (or its kind is not
	// served). Nothing is resized until it exists.
	PoolNotFoundReason = "PoolNotFound"

	// PoolInUseReason surfaces, with Stalled True, when another schedule,
	// created earlier and permitted to drive it, resolves to the same pool
	// object (scale target or EKS node group). The message names that
	// schedule. The refused schedule writes nothing to the pool, and its
	// deletion leaves the pool alone; when the holder is deleted, it takes
	// the pool over.
	PoolInUseReason = "PoolInUse"

	// OverCeilingReason surfaces when a grant's ceiling, or the namespace's
	// ResourceQuota for a CapacityBuffer, bounds the pool below what the
	// schedule asks: with Stalled True when no pool size fits under it,
	// with PoolReady and Ready False when a write was lowered to it. The
	// message names the field and the ceiling.
	OverCeilingReason = "OverCeiling"

	// InvalidTemplateReason surfaces, with Stalled True on the query, when
	// the query's spec.sparkApplication template cannot become a step:
	// laxity's rendering or the SparkApplication CRD rejected it. The
	// message names the field. The schedule's other queries go on. On a
	// RecurringQuery, its spec.template.metadata (labels, annotations)
	// cannot be a window's metadata; no window is created.
	InvalidTemplateReason = "InvalidTemplate"

	// ExecutorDoesNotFitReason surfaces, with Stalled True on the query,
	// while no ready node of the pool can hold the query's executors: the
	// template asks for more CPU or memory per executor (or the schedule
	// for more executors per node) than the pool's nodes have allocatable,
	// so they would stay Pending. The message names the field to change
	// and the node size. The query is held, the schedule's other queries
	// go on, and it runs once nodes that hold it are ready or the field is
	// changed.
	ExecutorDoesNotFitReason = "ExecutorDoesNotFit"

	// ModelLearnedReason is the reason of the event that says what laxity
	// learned from the steps that ran or the nodes that arrived changed
	// materially: a cost model, a margin or the pool's lead time.
	ModelLearnedReason = "ModelLearned"
)

// UndecodableReason surfaces, with Ready False and Stalled True, when the
// stored object does not fit laxity's types, for example a duration beyond
// what Go can hold in an object stored before the CRD bounded it; the
// message names the field and quotes the decoding error. laxity does
// nothing else with the object until the field is corrected.
const UndecodableReason = "Undecodable"

// Condition types of a RecurringQuery.
const (
	// RecurringQueryReadyCondition is True while the windows ahead exist
	// (or the query is suspended); its reason says which.
	RecurringQueryReadyCondition = "Ready"

	// RecurringQueryStalledCondition is True, and present only then, when
	// the spec cannot be honoured without a change: a schedule that does
	// not parse or never starts a window, an unknown time zone, windows
	// that overlap the next, an ElasticSchedule that does not exist,
	// template metadata the API server refuses, or a template its windows
	// are refused for. The message names the field.
	RecurringQueryStalledCondition = "Stalled"
)

// Condition reasons of a RecurringQuery.
const (
	// WindowsScheduledReason surfaces when every window up to windowsAhead
	// starts ahead exists as an IntermittentQuery.
	WindowsScheduledReason = "WindowsScheduled"

	// SuspendedReason surfaces while spec.suspend is true: no window is
	// created; those that exist run on.
	SuspendedReason = "Suspended"

	// WindowNameTakenReason surfaces when an IntermittentQuery the
	// RecurringQuery does not own holds the name of one of its windows;
	// the object is left alone and that window does not run.
	WindowNameTakenReason = "WindowNameTaken"

	// ScheduleStalledReason surfaces, with Ready False, while the
	// ElasticSchedule the template names is Stalled for a reason other
	// than NoFeasiblePlan (NotPermitted, InvalidSpec, ...): it could not
	// run a window, so none is created until it can.
	ScheduleStalledReason = "ScheduleStalled"

	// WindowStalledReason surfaces, with Stalled True, while one of the
	// RecurringQuery's unfinished windows is Stalled (its template is not
	// permitted, or is invalid): every window has the same template, so no
	// further window is created until the refusal is lifted.
	WindowStalledReason = "WindowStalled"

	// MaxActiveWindowsReason surfaces, with Ready True, while windows
	// ahead wait for one of spec.maxActiveWindows unfinished windows to
	// finish.
	MaxActiveWindowsReason = "MaxActiveWindows"
)
