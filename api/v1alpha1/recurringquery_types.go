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
	"k8s.io/apimachinery/pkg/runtime"
)

// RecurringQuerySpec is the desired state of a RecurringQuery: when its
// windows start, how long each lasts, when each result is due, and the
// IntermittentQuery every window becomes.
// +kubebuilder:validation:XValidation:rule="!(self.windowLength.matches('^[+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$') && !self.windowLength.matches('(^|[^.0-9])([0-9]{5,}([.][0-9]*)?h|[0-9]{7,}([.][0-9]*)?m([^s]|$)|[0-9]{9,}([.][0-9]*)?s|[0-9]{12,}([.][0-9]*)?ms|[0-9]{15,}([.][0-9]*)?us|[0-9]{18,}([.][0-9]*)?ns)')) || ((!(self.schedule.matches('^@every [+]?(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+$') && !self.schedule.matches('(^|[^.0-9])([0-9]{5,}([.][0-9]*)?h|[0-9]{7,}([.][0-9]*)?m([^s]|$)|[0-9]{9,}([.][0-9]*)?s|[0-9]{12,}([.][0-9]*)?ms|[0-9]{15,}([.][0-9]*)?us|[0-9]{18,}([.][0-9]*)?ns)')) || duration(self.windowLength) <= duration(self.schedule.substring(7))) && (self.schedule != '@hourly' || duration(self.windowLength) <= duration('1h')) && (!(self.schedule == '@daily' || self.schedule == '@midnight') || (has(self.timeZone) ? self.timeZone : 'UTC') != 'UTC' || duration(self.windowLength) <= duration('24h')))",message="spec.windowLength must be at most the interval between two window starts: a window may not overlap the next one",fieldPath=".windowLength"
type RecurringQuerySpec struct {
	// schedule is when windows start, in cron format: five fields (minute,
	// hour, day of month, month, day of week, as in crontab, with ranges,
	// steps, lists and month and day names), or one of the descriptors
	// @yearly (@annually), @monthly, @weekly, @daily (@midnight), @hourly,
	// or "@every <duration>" (at least 1m; starts are whole multiples of the
	// duration since 1970-01-01T00:00:00Z). For example "*/10 * * * *".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('(?i)^((([*]|[0-5]?[0-9](-[0-5]?[0-9])?)(/([1-9][0-9]?))?)(,(([*]|[0-5]?[0-9](-[0-5]?[0-9])?)(/([1-9][0-9]?))?))*)[ ]+((([*]|([01]?[0-9]|2[0-3])(-([01]?[0-9]|2[0-3]))?)(/([1-9][0-9]?))?)(,(([*]|([01]?[0-9]|2[0-3])(-([01]?[0-9]|2[0-3]))?)(/([1-9][0-9]?))?))*)[ ]+((([*]|(0?[1-9]|[12][0-9]|3[01])(-(0?[1-9]|[12][0-9]|3[01]))?)(/([1-9][0-9]?))?)(,(([*]|(0?[1-9]|[12][0-9]|3[01])(-(0?[1-9]|[12][0-9]|3[01]))?)(/([1-9][0-9]?))?))*|[?])[ ]+((([*]|(0?[1-9]|1[0-2]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)(-(0?[1-9]|1[0-2]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))?)(/([1-9][0-9]?))?)(,(([*]|(0?[1-9]|1[0-2]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)(-(0?[1-9]|1[0-2]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))?)(/([1-9][0-9]?))?))*)[ ]+((([*]|(0?[0-6]|sun|mon|tue|wed|thu|fri|sat)(-(0?[0-6]|sun|mon|tue|wed|thu|fri|sat))?)(/([1-9][0-9]?))?)(,(([*]|(0?[0-6]|sun|mon|tue|wed|thu|fri|sat)(-(0?[0-6]|sun|mon|tue|wed|thu|fri|sat))?)(/([1-9][0-9]?))?))*|[?])$') || self.matches('^@(yearly|annually|monthly|weekly|daily|midnight|hourly)$') || (self.matches('^@every [+]?(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+$') && !self.matches('(^|[^.0-9])([0-9]{5,}([.][0-9]*)?h|[0-9]{7,}([.][0-9]*)?m([^s]|$)|[0-9]{9,}([.][0-9]*)?s|[0-9]{12,}([.][0-9]*)?ms|[0-9]{15,}([.][0-9]*)?us|[0-9]{18,}([.][0-9]*)?ns)') && duration(self.substring(7)) >= duration('1m') && duration(self.substring(7)) <= duration('8784h'))",message="spec.schedule must be a cron schedule of five fields (minute hour day-of-month month day-of-week, such as \"*/10 * * * *\"), or @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or \"@every <duration>\" of at least 1m and at most 8784h"
	Schedule string `json:"schedule"`

	// timeZone is the IANA time zone the schedule is read in, such as
	// "Europe/Berlin". Defaults to UTC.
	// +optional
	// +kubebuilder:default="UTC"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z][-A-Za-z0-9_+/]*$') && self != 'Local' && timestamp('2000-01-01T00:00:00Z').getHours(self) >= 0",message="spec.timeZone must be an IANA time zone name such as Europe/Berlin or UTC"
	TimeZone string `json:"timeZone,omitempty"`

	// windowLength is how long each window lasts from its start, a positive
	// Go duration such as "5m", at most the interval between two starts.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$') && !self.matches('(^|[^.0-9])([0-9]{5,}([.][0-9]*)?h|[0-9]{7,}([.][0-9]*)?m([^s]|$)|[0-9]{9,}([.][0-9]*)?s|[0-9]{12,}([.][0-9]*)?ms|[0-9]{15,}([.][0-9]*)?us|[0-9]{18,}([.][0-9]*)?ns)') && duration(self) > duration('0s') && duration(self) <= duration('8784h')",message="spec.windowLength must be a positive duration of at most 8784h (366 days) such as 5m"
	WindowLength metav1.Duration `json:"windowLength"`

	// deadlineAfterWindowEnd is how long after each window's end its result
	// is due, a positive Go duration such as "4m".
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$') && !self.matches('(^|[^.0-9])([0-9]{5,}([.][0-9]*)?h|[0-9]{7,}([.][0-9]*)?m([^s]|$)|[0-9]{9,}([.][0-9]*)?s|[0-9]{12,}([.][0-9]*)?ms|[0-9]{15,}([.][0-9]*)?us|[0-9]{18,}([.][0-9]*)?ns)') && duration(self) > duration('0s') && duration(self) <= duration('8784h')",message="spec.deadlineAfterWindowEnd must be a positive duration of at most 8784h (366 days) such as 4m"
	DeadlineAfterWindowEnd metav1.Duration `json:"deadlineAfterWindowEnd"`

	// windowsAhead is how many upcoming windows exist as IntermittentQueries
	// before they start, so that the schedule plans them, and asks for
	// their nodes, at least a provisioning lead time ahead. Defaults to 2.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=24
	WindowsAhead *int32 `json:"windowsAhead,omitempty"`

	// maxActiveWindows bounds the windows that exist and are not finished
	// (created ahead, running, or waiting for their final merge), as a
	// CronJob's concurrencyPolicy Forbid bounds its Jobs: a window ahead
	// waits to be created until one of them finishes, and a start that
	// passes while none has is skipped (recorded as Skipped), never run
	// later. Unset, it is windowsAhead + 2: the windows ahead, the one
	// running and one still merging after its successor started. At most
	// 50.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	MaxActiveWindows *int32 `json:"maxActiveWindows,omitempty"`

	// suspend, when true, creates no new windows; those that exist run on.
	// When it is set back to false, of the starts missed meanwhile only
	// the most recent runs (if within startingDeadline); the older ones
	// are recorded as Skipped.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// successfulWindowsHistoryLimit is how many finished windows that
	// succeeded are kept as IntermittentQueries; older ones are deleted.
	// Defaults to 3.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	SuccessfulWindowsHistoryLimit *int32 `json:"successfulWindowsHistoryLimit,omitempty"`

	// failedWindowsHistoryLimit is how many finished windows that failed
	// (a step failed on every attempt, or the deadline passed with no
	// result) are kept; older ones are deleted. Defaults to 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	FailedWindowsHistoryLimit *int32 `json:"failedWindowsHistoryLimit,omitempty"`

	// startingDeadline, when set, is how late a window may still be created
	// after its start, a non-negative Go duration such as "2m". After starts
	// were missed (the manager was down, suspend was set, or the schedule
	// could not run windows), only the most recent missed start may run
	// late, and only when missed by at most startingDeadline; every other
	// missed start is skipped and recorded in status, as a CronJob does.
	// When unset, the most recent missed start runs however late.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$') && !self.matches('(^|[^.0-9])([0-9]{5,}([.][0-9]*)?h|[0-9]{7,}([.][0-9]*)?m([^s]|$)|[0-9]{9,}([.][0-9]*)?s|[0-9]{12,}([.][0-9]*)?ms|[0-9]{15,}([.][0-9]*)?us|[0-9]{18,}([.][0-9]*)?ns)') && duration(self) <= duration('8784h')",message="spec.startingDeadline must be a non-negative duration of at most 8784h (366 days) such as 2m"
	StartingDeadline *metav1.Duration `json:"startingDeadline,omitempty"`

	// template is the IntermittentQuery every window becomes, without its
	// window and deadline, which each window sets.
	// +required
	Template RecurringQueryTemplate `json:"template"`
}

// RecurringQueryTemplate is an IntermittentQuery's spec without its window
// and deadline, and the labels and annotations its objects get.
// +kubebuilder:validation:XValidation:rule="has(self.input) != has(self.inputs)",message="spec.template must set exactly one of input (a query over one stream) and inputs (a query over several)"
type RecurringQueryTemplate struct {
	// metadata holds the labels and annotations every window's
	// IntermittentQuery gets, besides laxity's own.
	// +optional
	Metadata TemplateMetadata `json:"metadata,omitzero"`

	// scheduleName is the name of the ElasticSchedule, in the same namespace,
	// whose pool runs every window's batches and merges.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="spec.template.scheduleName must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter and ending with a letter or digit), as every ElasticSchedule name is"
	ScheduleName string `json:"scheduleName"`

	// input describes how each window's tuples arrive, as an
	// IntermittentQuery's spec.input; a profile's offsets count from each
	// window's start. Set exactly one of input and inputs.
	// +optional
	Input Input `json:"input,omitzero"`

	// inputs are the streams of a query over several, as an
	// IntermittentQuery's spec.inputs.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=2
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(i, (has(i.granularity) ? i.granularity : 1) == (has(self[0].granularity) ? self[0].granularity : 1))",message="spec.template.inputs must all have the same granularity: a batch is a whole number of arrival units on every input"
	Inputs []JoinInput `json:"inputs,omitempty"`

	// costModel is how long a batch and a merge take, as an
	// IntermittentQuery's spec.costModel.
	// +required
	CostModel CostModel `json:"costModel"`

	// partialAggregation is as an IntermittentQuery's spec.partialAggregation.
	// +optional
	PartialAggregation *PartialAggregation `json:"partialAggregation,omitempty"`

	// sparkApplication is the SparkApplication spec every step of every
	// window runs with, as an IntermittentQuery's spec.sparkApplication.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	SparkApplication *runtime.RawExtension `json:"sparkApplication,omitempty"`

	// sharing is as an IntermittentQuery's spec.sharing.
	// +optional
	// +kubebuilder:default=Auto
	Sharing Sharing `json:"sharing,omitempty"`
}

// TemplateMetadata is the labels and annotations of a templated object.
// The API server checks them as it checks any object's metadata, so that a
// window's IntermittentQuery is never refused for them later.
type TemplateMetadata struct {
	// labels are added to every window's IntermittentQuery. Keys are
	// qualified names (an optional DNS subdomain prefix and "/", then at
	// most 63 letters, digits, '-', '_' or '.', starting and ending with a
	// letter or digit); values are at most 63 such characters, or empty.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="spec.template.metadata.labels: every key must be a qualified name: an optional DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit",reason=FieldValueInvalid
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.labelValue().validate(self[k]).hasValue())",message="spec.template.metadata.labels: every value must be empty or at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit",reason=FieldValueInvalid
	Labels map[string]LabelValue `json:"labels,omitempty"`

	// annotations are added to every window's IntermittentQuery. Keys are
	// qualified names, as label keys are.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="spec.template.metadata.annotations: every key must be a qualified name: an optional DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit",reason=FieldValueInvalid
	Annotations map[string]string `json:"annotations,omitempty"`
}

// LabelValue is the value of a label: at most 63 characters, so that the
// API server can check every value of a template's labels at admission.
// +kubebuilder:validation:MaxLength=63
type LabelValue string

// WindowOutcome is where one window of a RecurringQuery stands.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Missed;Failed;Skipped
type WindowOutcome string

const (
	// WindowPending is a window whose IntermittentQuery exists but has not
	// launched a step yet.
	WindowPending WindowOutcome = "Pending"
	// WindowRunning is a window with a step launched and no result yet.
	WindowRunning WindowOutcome = "Running"
	// WindowSucceeded is a window whose final merge succeeded (see met for
	// whether in time).
	WindowSucceeded WindowOutcome = "Succeeded"
	// WindowMissed is a window whose deadline passed with no result and
	// nothing left running.
	WindowMissed WindowOutcome = "Missed"
	// WindowFailed is a window one of whose steps failed on every attempt.
	WindowFailed WindowOutcome = "Failed"
	// WindowSkipped is a window never created: its start was missed by more
	// than spec.startingDeadline.
	WindowSkipped WindowOutcome = "Skipped"
)

// MaxRecentWindows is the number of windows status.windows keeps.
const MaxRecentWindows = 20

// RecurringWindow is one window of a RecurringQuery.
type RecurringWindow struct {
	// start is when the window opened.
	// +required
	Start metav1.Time `json:"start"`

	// query is the name of the window's IntermittentQuery ("" when the
	// window was skipped).
	// +optional
	Query string `json:"query,omitempty"`

	// outcome is Pending, Running, Succeeded, Missed, Failed or Skipped.
	// +required
	Outcome WindowOutcome `json:"outcome"`

	// finish is when the window's final merge ended.
	// +optional
	Finish *metav1.Time `json:"finish,omitempty"`

	// deadline is when the window's result was due.
	// +optional
	Deadline *metav1.Time `json:"deadline,omitempty"`

	// met is true when the final merge succeeded by the deadline.
	// +optional
	Met bool `json:"met,omitempty"`

	// executedCost is the window's share of the pool's bill: the
	// node-seconds of its succeeded steps (each step's nodes × its end -
	// start) × the schedule's pricePerNodeHour / 3600. Idle nodes, billing
	// minimums and failed attempts are not in it.
	// +optional
	ExecutedCost Decimal `json:"executedCost,omitempty"`

	// batches is the number of batches launched.
	// +optional
	Batches int32 `json:"batches,omitempty"`

	// resultLocation is where the final merge wrote the window's result.
	// +optional
	ResultLocation string `json:"resultLocation,omitempty"`

	// message says why a window was skipped.
	// +optional
	Message string `json:"message,omitempty"`
}

// RecurringQueryStatus is the observed state of a RecurringQuery.
type RecurringQueryStatus struct {
	// observedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// windows are the most recent windows (at most 20), newest first.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	Windows []RecurringWindow `json:"windows,omitempty"`

	// lastOutcome is the outcome of the newest finished window.
	// +optional
	LastOutcome WindowOutcome `json:"lastOutcome,omitempty"`

	// nextWindow is when the next window not created yet starts.
	// +optional
	NextWindow *metav1.Time `json:"nextWindow,omitempty"`

	// lastScheduleTime is the start of the newest window laxity created or
	// skipped: windows up to it are never created again.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// learned is what laxity learned from the windows that ran.
	// +optional
	Learned *LearnedModel `json:"learned,omitempty"`

	// conditions are Ready and, when the spec cannot be honoured, Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 27 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label of at most 27 characters (lower-case letters, digits and '-', starting with a letter and ending with a letter or digit): every window's IntermittentQuery is named <name>-<yyyymmddhhmm>, which must be a DNS-1035 label of at most 40 characters"
// +kubebuilder:resource:shortName=lxrq,categories=laxity
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`,description="When windows start: five cron fields, a macro such as @hourly, or @every <duration>"
// +kubebuilder:printcolumn:name="Suspended",type=boolean,JSONPath=`.spec.suspend`,description="Whether creating new windows is suspended"
// +kubebuilder:printcolumn:name="Last Outcome",type=string,JSONPath=`.status.lastOutcome`,description="Outcome of the newest finished window"
// +kubebuilder:printcolumn:name="Next Window",type=string,format=date-time,JSONPath=`.status.nextWindow`,description="Start of the next window not created yet"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Time Zone",type=string,JSONPath=`.spec.timeZone`,priority=1,description="Time zone the schedule is read in"
// +kubebuilder:printcolumn:name="Window",type=string,JSONPath=`.spec.windowLength`,priority=1,description="How long each window lasts"
// +kubebuilder:printcolumn:name="Ahead",type=integer,JSONPath=`.spec.windowsAhead`,priority=1,description="Windows kept created ahead of their start"
// +kubebuilder:printcolumn:name="Slowdown %",type=number,JSONPath=`.status.learned.slowdownPercent`,priority=1,description="How much longer than its declared cost model the query ran, in percent, learned from the windows that ran"

// RecurringQuery is a query that runs on every window of a schedule: it
// creates one IntermittentQuery per window, ahead of the window's start,
// the way a CronJob creates Jobs.
type RecurringQuery struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec is when windows start and the query each window runs.
	// +required
	Spec RecurringQuerySpec `json:"spec"`

	// status is the recent windows and what comes next.
	// +optional
	Status RecurringQueryStatus `json:"status,omitzero"`
}

// +kubebuilder:object:root=true

// RecurringQueryList is a list of RecurringQueries.
type RecurringQueryList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitzero"`
	// items are the RecurringQueries.
	Items []RecurringQuery `json:"items"`
}
