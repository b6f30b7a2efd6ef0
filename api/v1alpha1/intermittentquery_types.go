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

// IntermittentQuerySpec is the desired state of an IntermittentQuery: one
// window of a stream, the deadline for the query's result, how tuples arrive
// and how long processing them takes.
// +kubebuilder:validation:XValidation:rule="self.deadline > self.window.end",message="spec.deadline must be after spec.window.end",fieldPath=".deadline"
// +kubebuilder:validation:XValidation:rule="self.deadline.getFullYear() - self.window.end.getFullYear() <= 1 && self.deadline - self.window.end <= duration('8784h')",message="spec.deadline must be at most 8784h (366 days) after spec.window.end",fieldPath=".deadline"
// +kubebuilder:validation:XValidation:rule="has(self.input) != has(self.inputs)",message="spec must set exactly one of input (a query over one stream) and inputs (a query over several)"
type IntermittentQuerySpec struct {
	// scheduleName is the name of the ElasticSchedule, in the same namespace,
	// whose pool runs this query's batches and merges.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="spec.scheduleName must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter and ending with a letter or digit), as every ElasticSchedule name is"
	ScheduleName string `json:"scheduleName"`

	// window is the period of the stream the query covers: tuples arriving
	// from start until end.
	// +required
	Window Window `json:"window"`

	// deadline is when the query's final result is due, an RFC 3339 instant
	// after window.end such as "2026-12-01T01:40:00Z".
	// +required
	Deadline metav1.Time `json:"deadline"`

	// input describes how tuples arrive: exactly one of ratePerSecond,
	// totalTuples or profile, plus the arrival unit and lateness. Set
	// exactly one of input and inputs.
	// +optional
	Input Input `json:"input,omitzero"`

	// inputs are the streams of a query over several (a join, such as
	// orders with lineitem), each with a name and its own source and rate,
	// instead of input. Every batch covers the same interval of time on
	// each input (aligned batches), so that the tuples of one batch only
	// meet those of the same batch; costModel counts the tuples of all the
	// inputs of a batch together.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=2
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(i, (has(i.granularity) ? i.granularity : 1) == (has(self[0].granularity) ? self[0].granularity : 1))",message="spec.inputs must all have the same granularity: a batch is a whole number of arrival units on every input"
	Inputs []JoinInput `json:"inputs,omitempty"`

	// costModel is how long a batch and a merge take on a given number of
	// nodes, given as coefficients or fitted from measured samples.
	// +required
	CostModel CostModel `json:"costModel"`

	// partialAggregation, when set, merges the batches processed so far into
	// a partial result at regular intervals, so that the final merge has
	// fewer inputs. When unset only the final merge runs.
	// +optional
	PartialAggregation *PartialAggregation `json:"partialAggregation,omitempty"`

	// sparkApplication is the spec of the SparkApplication
	// (sparkoperator.k8s.io/v1beta2) that runs each batch and merge, kept
	// as-is. laxity copies it into every step it launches and sets the step's
	// arguments, executor.instances, labels and annotations. With the
	// emrContainers backend the same spec describes each job run:
	// mainApplicationFile is its entry point, arguments its arguments, and
	// mainClass, deps, image, the driver's and executor's cores and memory
	// and sparkConf its spark-submit parameters.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	SparkApplication *runtime.RawExtension `json:"sparkApplication,omitempty"`

	// sharing is None to keep the query out of shared steps: it then runs
	// every batch alone even when its schedule shares its stream. Defaults
	// to Auto.
	// +optional
	// +kubebuilder:default=Auto
	Sharing Sharing `json:"sharing,omitempty"`
}

// Window is the period of the stream a query covers.
// +kubebuilder:validation:XValidation:rule="self.end > self.start",message="spec.window.end must be after spec.window.start",fieldPath=".end"
// +kubebuilder:validation:XValidation:rule="self.end.getFullYear() - self.start.getFullYear() <= 1 && self.end - self.start <= duration('8784h')",message="spec.window.end must be at most 8784h (366 days) after spec.window.start: a window spans at most 366 days",fieldPath=".end"
type Window struct {
	// start is the RFC 3339 instant the window opens, such as
	// "2026-12-01T00:00:00Z".
	// +required
	Start metav1.Time `json:"start"`

	// end is the RFC 3339 instant the window closes, after start.
	// +required
	End metav1.Time `json:"end"`
}

// Input describes how a query's tuples arrive. Exactly one of ratePerSecond,
// totalTuples and profile is set: the rate the planner plans for. Where the
// tuples come from is kafka or objectStore when set, and otherwise a synthetic stream at
// that rate (or at actualProfile).
// +kubebuilder:validation:XValidation:rule="(has(self.ratePerSecond) ? 1 : 0) + (has(self.totalTuples) ? 1 : 0) + (has(self.profile) ? 1 : 0) == 1",message="spec.input must set exactly one of ratePerSecond, totalTuples or profile"
// +kubebuilder:validation:XValidation:rule="(has(self.kafka) ? 1 : 0) + (has(self.objectStore) ? 1 : 0) + (has(self.actualProfile) ? 1 : 0) <= 1",message="spec.input may set at most one of kafka, objectStore and actualProfile (which drives the synthetic stream)"
type Input struct {
	// ratePerSecond is a constant arrival rate in tuples per second over the
	// whole window, as a positive decimal string such as "9500".
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$') && !self.matches('[eE][+]?[0-9]{3,}') && double(self) > 0.0 && double(self) <= 1e12",message="spec.input.ratePerSecond must be a positive decimal number of at most 1e12 such as 9500"
	RatePerSecond string `json:"ratePerSecond,omitempty"`

	// totalTuples is the number of tuples arriving over the window, at a
	// uniform rate (at least 1).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000000000
	TotalTuples *int64 `json:"totalTuples,omitempty"`

	// profile is a piecewise-constant arrival rate: each segment holds from
	// its offset after window.start until the next segment's offset (the
	// last one until window.end). The first offset is 0s and offsets
	// strictly increase; at least one segment has a positive rate. For
	// example [{after: 0s, ratePerSecond: "9500"}, {after: 50m,
	// ratePerSecond: "19000"}]. (Rules on the whole list skip entries whose
	// own fields are malformed; those are reported on the entry.)
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !(self[0].after.matches('^[+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$') && !self[0].after.matches('(^|[^.0-9])([0-9]{5,}([.][0-9]*)?h|[0-9]{7,}([.][0-9]*)?m([^s]|$)|[0-9]{9,}([.][0-9]*)?s|[0-9]{12,}([.][0-9]*)?ms|[0-9]{15,}([.][0-9]*)?us|[0-9]{18,}([.][0-9]*)?ns)')) || duration(self[0].after) == duration('0s')",message="spec.input.profile[0].after must be 0s: the profile starts at spec.window.start"
	// +kubebuilder:validation:XValidation:rule="self.all(i, s, i == 0 || !(self[i - 1].after.matches('^[+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$') && !self[i - 1].after.matches('(^|[^.0-9])([0-9]{5,}([.][0-9]*)?h|[0-9]{7,}([.][0-9]*)?m([^s]|$)|[0-9]{9,}([.][0-9]*)?s|[0-9]{12,}([.][0-9]*)?ms|[0-9]{15,}([.][0-9]*)?us|[0-9]{18,}([.][0-9]*)?ns)')) || !(s.after.matches('^[+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$') && !s.after.matches('(^|[^.0-9])([0-9]{5,}([.][0-9]*)?h|[0-9]{7,}([.][0-9]*)?m([^s]|$)|[0-9]{9,}([.][0-9]*)?s|[0-9]{12,}([.][0-9]*)?ms|[0-9]{15,}([.][0-9]*)?us|[0-9]{18,}([.][0-9]*)?ns)')) || duration(self[i - 1].after) < duration(s.after))",message="spec.input.profile offsets (after) must be strictly increasing"
	// +kubebuilder:validation:XValidation:rule="self.exists(s, !(s.ratePerSecond.matches('^[+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$') && !s.ratePerSecond.matches('[eE][+]?[0-9]{3,}')) || double(s.ratePerSecond) > 0.0)",message="spec.input.profile must have at least one segment with a positive ratePerSecond"
	Profile []RateSegment `json:"profile,omitempty"`

	// actualProfile, when set, makes the synthetic input source deliver
	// tuples at this piecewise-constant rate instead of the declared one,
	// while the planner still plans with the declared rate: a way to
	// exercise re-planning when a stream turns busier or quieter than declared.
	// Same shape and offsets rules as profile.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	ActualProfile []RateSegment `json:"actualProfile,omitempty"`

	// kafka reads the query's tuples from a Kafka topic, one record per
	// tuple: the window holds, on every partition, the records from the
	// first one timestamped at or after window.start to the first one at or
	// after window.end. Each batch is an exact offset range per partition,
	// passed to its SparkApplication as Spark's Kafka source options
	// startingOffsets and endingOffsets (annotations
	// laxity.dev/kafka-starting-offsets and laxity.dev/kafka-ending-offsets).
	// +optional
	Kafka *KafkaInput `json:"kafka,omitempty"`

	// objectStore reads the query's tuples from objects in an S3 or
	// S3-compatible bucket: an object belongs to the window when its time
	// (the time its key carries, with keyTimeLayout, or its LastModified)
	// is in it. Each batch is an exact set of objects, passed to its
	// SparkApplication as annotations laxity.dev/objectstore-* (the keys,
	// or the key range and cut; objects that arrived after earlier batches
	// covered their time are listed as late).
	// +optional
	ObjectStore *ObjectStoreInput `json:"objectStore,omitempty"`

	// location is where the query's tuples are read from, as a URI the
	// Spark job understands (for example "s3a://events/orders/"); laxity
	// passes it to every batch with the batch's tuple range.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Location string `json:"location,omitempty"`

	// stream names the entry of the schedule's spec.streams this input is,
	// so that the query may share its batches with the other queries of
	// that stream. Only queries of the same namespace, the same Spark
	// template and the same input (the same Kafka brokers, topic and
	// Secret; the same endpoint, bucket, prefix and Secret) share.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Stream string `json:"stream,omitempty"`

	// granularity is the number of tuples in one arrival unit, for example
	// 9500 tuples per file; batch sizes are whole units. Defaults to 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000000000
	Granularity int64 `json:"granularity,omitempty"`

	// allowedLateness is how long after window.end late tuples still count;
	// the last batch starts no earlier than window.end + allowedLateness. A
	// non-negative Go duration such as "30s". Defaults to 0s.
	// +optional
	// +kubebuilder:default="0s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$') && !self.matches('(^|[^.0-9])([0-9]{5,}([.][0-9]*)?h|[0-9]{7,}([.][0-9]*)?m([^s]|$)|[0-9]{9,}([.][0-9]*)?s|[0-9]{12,}([.][0-9]*)?ms|[0-9]{15,}([.][0-9]*)?us|[0-9]{18,}([.][0-9]*)?ns)') && duration(self) <= duration('720h')",message="spec.input.allowedLateness must be a non-negative duration of at most 720h (30 days) such as 30s"
	AllowedLateness metav1.Duration `json:"allowedLateness,omitzero"`
}

// JoinInput is one of the streams a query over several reads: an input
// with a name.
// +kubebuilder:validation:XValidation:rule="!has(self.stream)",message="spec.inputs[].stream: the inputs of a query over several are not shared with other queries' batches yet",fieldPath=".stream"
// +kubebuilder:validation:XValidation:rule="!has(self.objectStore)",message="spec.inputs[].objectStore: a query over several inputs reads Kafka topics or synthetic streams; object storage cannot be cut at one instant with them yet",fieldPath=".objectStore"
type JoinInput struct {
	// name names the input in every step's contract: a batch passes each
	// input's range as spark.laxity.<name>.<key> (the argument
	// --laxity-<name>.<key>, the annotation laxity.dev/<name>.<key>), for
	// example spark.laxity.orders.from-tuple.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self != 'output'",message="spec.inputs[].name must not be output, which laxity's contract uses (spark.laxity.output.<query> is a shared batch's result for a query)"
	Name string `json:"name"`

	Input `json:",inline"`

	// lateFraction is the share of this input's tuples expected to arrive
	// after the batch of their time has been cut, a decimal from 0 to 1
	// such as "0.05": each is joined, in the next batch, against the other
	// inputs' earlier batches, and the planner prices that as one more
	// read of the tuple. Defaults to 0.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$') && !self.matches('[eE][+]?[0-9]{3,}') && double(self) <= 1.0",message="spec.inputs[].lateFraction must be a decimal number from 0 to 1 such as 0.05"
	LateFraction string `json:"lateFraction,omitempty"`
}

// KafkaInput is a Kafka topic a query reads.
type KafkaInput struct {
	// brokers are the bootstrap brokers as host:port.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=261
	// +kubebuilder:validation:items:Pattern=`^[^:\s]+:[0-9]{1,5}$`
	Brokers []string `json:"brokers"`

	// topic is the topic's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=249
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9._-]+$`
	Topic string `json:"topic"`

	// secretRef names a Secret in the query's namespace with the client's
	// TLS and SASL settings: ca.crt (PEM; enables TLS), tls.crt and tls.key
	// (a client certificate), sasl.mechanism (PLAIN, SCRAM-SHA-256 or
	// SCRAM-SHA-512), sasl.username and sasl.password. Without it the
	// connection is plaintext and unauthenticated.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
}

// ObjectStoreInput is a bucket prefix a query reads.
// +kubebuilder:validation:XValidation:rule="(has(self.tuplesPerObject) ? 1 : 0) + (has(self.bytesPerTuple) ? 1 : 0) == 1",message="spec.input.objectStore must set exactly one of tuplesPerObject and bytesPerTuple"
type ObjectStoreInput struct {
	// endpoint is the URL of an S3-compatible API, for example
	// "https://minio.storage.svc:9000"; unset for AWS S3.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://`
	Endpoint string `json:"endpoint,omitempty"`

	// region is the bucket's region; unset, the AWS default chain decides.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Region string `json:"region,omitempty"`

	// bucket is the bucket's name.
	// +required
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9.-]*[a-z0-9]$`
	Bucket string `json:"bucket"`

	// prefix is the key prefix the stream's objects are written under, for
	// example "clicks/".
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Prefix string `json:"prefix,omitempty"`

	// pathStyle addresses the bucket in the URL path instead of the host
	// name, as most S3-compatible stores need.
	// +optional
	PathStyle bool `json:"pathStyle,omitempty"`

	// secretRef names a Secret in the query's namespace with the keys
	// accessKeyID and secretAccessKey, and optionally sessionToken; unset,
	// the AWS default chain (IRSA in a cluster) provides credentials.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`

	// tuplesPerObject is the number of tuples in every object.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000000000
	TuplesPerObject *int64 `json:"tuplesPerObject,omitempty"`

	// bytesPerTuple estimates an object's tuples from its size, rounded up.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000000000
	BytesPerTuple *int64 `json:"bytesPerTuple,omitempty"`

	// keyTimeLayout, when set, is the Go time layout of the instant every
	// key carries right after the prefix, for example
	// "2006/01/02/15-04-05"; an object's time is then that instant instead
	// of its LastModified, and objects that arrive after earlier batches
	// covered their time are late.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	KeyTimeLayout string `json:"keyTimeLayout,omitempty"`

	// settle is how long after its LastModified an object counts: longer
	// than the longest upload, since S3 dates an object from the start of
	// its upload. The window's last batch waits at least this long after
	// window.end (or allowedLateness, if longer). A Go duration; defaults
	// to 1m.
	// +optional
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$') && !self.matches('(^|[^.0-9])([0-9]{5,}([.][0-9]*)?h|[0-9]{7,}([.][0-9]*)?m([^s]|$)|[0-9]{9,}([.][0-9]*)?s|[0-9]{12,}([.][0-9]*)?ms|[0-9]{15,}([.][0-9]*)?us|[0-9]{18,}([.][0-9]*)?ns)') && duration(self) <= duration('720h')",message="spec.input.objectStore.settle must be a non-negative duration of at most 720h (30 days) such as 1m"
	Settle metav1.Duration `json:"settle,omitzero"`
}

// SecretReference names a Secret in the referrer's namespace.
type SecretReference struct {
	// name is the Secret's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// RateSegment is one piece of a piecewise-constant arrival rate.
type RateSegment struct {
	// after is the segment's start as an offset from window.start, a Go
	// duration such as "50m"; the first segment's is 0s.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$') && !self.matches('(^|[^.0-9])([0-9]{5,}([.][0-9]*)?h|[0-9]{7,}([.][0-9]*)?m([^s]|$)|[0-9]{9,}([.][0-9]*)?s|[0-9]{12,}([.][0-9]*)?ms|[0-9]{15,}([.][0-9]*)?us|[0-9]{18,}([.][0-9]*)?ns)') && duration(self) <= duration('8784h')",message="spec.input.profile[].after must be a non-negative duration of at most 8784h (366 days) such as 50m"
	After metav1.Duration `json:"after"`

	// ratePerSecond is the arrival rate during the segment in tuples per
	// second, a non-negative decimal string such as "19000" ("0" for a pause
	// in the stream).
	// +required
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$') && !self.matches('[eE][+]?[0-9]{3,}') && double(self) <= 1e12",message="spec.input.profile[].ratePerSecond must be a non-negative decimal number of at most 1e12 such as 19000"
	RatePerSecond string `json:"ratePerSecond"`
}

// CostModel is a query's execution-time model, linear in the tuples or
// inputs and in the inverse of the node count: with p
// nodes a batch of t tuples takes
// overheadSeconds + t × (serialSecondsPerTuple + parallelSecondsPerTuple / p)
// seconds, and a merge of m intermediate results
// overheadSeconds + m × (serialSecondsPerInput + parallelSecondsPerInput / p).
type CostModel struct {
	// batch models the processing of one batch of tuples.
	// +required
	Batch BatchCostModel `json:"batch"`

	// merge models one merge (partial or final aggregation) of intermediate
	// results.
	// +required
	Merge MergeCostModel `json:"merge"`
}

// BatchCostModel gives the batch coefficients directly, or measured samples to
// fit them from by least squares: all three coefficients, or samples, never
// both.
// +kubebuilder:validation:XValidation:rule="!(has(self.samples) && (has(self.overheadSeconds) || has(self.serialSecondsPerTuple) || has(self.parallelSecondsPerTuple)))",message="spec.costModel.batch must set either its three coefficients or samples, not both"
// +kubebuilder:validation:XValidation:rule="has(self.samples) || (has(self.overheadSeconds) && has(self.serialSecondsPerTuple) && has(self.parallelSecondsPerTuple))",message="spec.costModel.batch must set all of overheadSeconds, serialSecondsPerTuple and parallelSecondsPerTuple, or samples"
type BatchCostModel struct {
	// overheadSeconds is the fixed time of one batch in seconds, a
	// non-negative decimal string such as "25".
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$') && !self.matches('[eE][+]?[0-9]{3,}') && double(self) <= 1e6",message="spec.costModel.batch.overheadSeconds must be a non-negative decimal number of at most 1e6 such as 25"
	OverheadSeconds string `json:"overheadSeconds,omitempty"`

	// serialSecondsPerTuple is the time per tuple that does not parallelise,
	// in seconds, a non-negative decimal string such as "2e-8".
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$') && !self.matches('[eE][+]?[0-9]{3,}') && double(self) <= 1e6",message="spec.costModel.batch.serialSecondsPerTuple must be a non-negative decimal number of at most 1e6 such as 2e-8"
	SerialSecondsPerTuple string `json:"serialSecondsPerTuple,omitempty"`

	// parallelSecondsPerTuple is the time per tuple spread over the nodes, in
	// node-seconds, a non-negative decimal string such as "2e-5".
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$') && !self.matches('[eE][+]?[0-9]{3,}') && double(self) <= 1e6",message="spec.costModel.batch.parallelSecondsPerTuple must be a non-negative decimal number of at most 1e6 such as 2e-5"
	ParallelSecondsPerTuple string `json:"parallelSecondsPerTuple,omitempty"`

	// samples are measured batch runs to fit the three coefficients from (at
	// least 3), for example {nodes: 4, tuples: 2375000, seconds: "37.9"}.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=3
	// +kubebuilder:validation:MaxItems=64
	Samples []BatchSample `json:"samples,omitempty"`
}

// BatchSample is one measured batch run.
type BatchSample struct {
	// nodes is the number of pool nodes the batch ran on (at least 1).
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	Nodes int32 `json:"nodes"`

	// tuples is the number of tuples the batch processed (at least 1).
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000000000
	Tuples int64 `json:"tuples"`

	// seconds is how long the batch took, a non-negative decimal string such
	// as "37.9".
	// +required
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$') && !self.matches('[eE][+]?[0-9]{3,}') && double(self) <= 1e7",message="spec.costModel.batch.samples[].seconds must be a non-negative decimal number of at most 1e7 such as 37.9"
	Seconds string `json:"seconds"`
}

// MergeCostModel gives the merge coefficients directly, or measured samples to
// fit them from by least squares: all three coefficients, or samples, never
// both.
// +kubebuilder:validation:XValidation:rule="!(has(self.samples) && (has(self.overheadSeconds) || has(self.serialSecondsPerInput) || has(self.parallelSecondsPerInput)))",message="spec.costModel.merge must set either its three coefficients or samples, not both"
// +kubebuilder:validation:XValidation:rule="has(self.samples) || (has(self.overheadSeconds) && has(self.serialSecondsPerInput) && has(self.parallelSecondsPerInput))",message="spec.costModel.merge must set all of overheadSeconds, serialSecondsPerInput and parallelSecondsPerInput, or samples"
type MergeCostModel struct {
	// overheadSeconds is the fixed time of one merge in seconds, a
	// non-negative decimal string such as "8".
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$') && !self.matches('[eE][+]?[0-9]{3,}') && double(self) <= 1e6",message="spec.costModel.merge.overheadSeconds must be a non-negative decimal number of at most 1e6 such as 8"
	OverheadSeconds string `json:"overheadSeconds,omitempty"`

	// serialSecondsPerInput is the time per merged intermediate result that
	// does not parallelise, in seconds, a non-negative decimal string such as
	// "0.05".
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$') && !self.matches('[eE][+]?[0-9]{3,}') && double(self) <= 1e6",message="spec.costModel.merge.serialSecondsPerInput must be a non-negative decimal number of at most 1e6 such as 0.05"
	SerialSecondsPerInput string `json:"serialSecondsPerInput,omitempty"`

	// parallelSecondsPerInput is the time per merged intermediate result
	// spread over the nodes, in node-seconds, a non-negative decimal string
	// such as "0.4".
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$') && !self.matches('[eE][+]?[0-9]{3,}') && double(self) <= 1e6",message="spec.costModel.merge.parallelSecondsPerInput must be a non-negative decimal number of at most 1e6 such as 0.4"
	ParallelSecondsPerInput string `json:"parallelSecondsPerInput,omitempty"`

	// samples are measured merge runs to fit the three coefficients from (at
	// least 3), for example {nodes: 2, inputs: 21, seconds: "17.2"}.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=3
	// +kubebuilder:validation:MaxItems=64
	Samples []MergeSample `json:"samples,omitempty"`
}

// MergeSample is one measured merge run.
type MergeSample struct {
	// nodes is the number of pool nodes the merge ran on (at least 1).
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	Nodes int32 `json:"nodes"`

	// inputs is the number of intermediate results the merge combined (at
	// least 1).
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	Inputs int64 `json:"inputs"`

	// seconds is how long the merge took, a non-negative decimal string such
	// as "17.2".
	// +required
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$') && !self.matches('[eE][+]?[0-9]{3,}') && double(self) <= 1e7",message="spec.costModel.merge.samples[].seconds must be a non-negative decimal number of at most 1e7 such as 17.2"
	Seconds string `json:"seconds"`
}

// PartialAggregation configures partial merges: merges of the batches'
// intermediate results during the window, which leave the final merge fewer
// inputs after it closes.
type PartialAggregation struct {
	// every is the fraction of a query's batches after which a partial
	// merge runs: with every = f, one runs after each ceil(f × batches)
	// batches. A decimal string in (0, 1], such as "0.25" for a partial
	// merge after every quarter of the batches.
	// +required
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$') && !self.matches('[eE][+]?[0-9]{3,}') && double(self) > 0.0 && double(self) <= 1.0",message="spec.partialAggregation.every must be a decimal number in (0, 1] such as 0.25"
	Every string `json:"every"`
}

// StepOutcome is the state of one step (batch or merge) of a query.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed
type StepOutcome string

const (
	// StepPending means the step's SparkApplication (or job run) exists but
	// has not started running.
	StepPending StepOutcome = "Pending"
	// StepRunning means the step's SparkApplication (or job run) is running.
	StepRunning StepOutcome = "Running"
	// StepSucceeded means the step's SparkApplication (or job run) completed.
	StepSucceeded StepOutcome = "Succeeded"
	// StepFailed means the step's SparkApplication (or job run) failed.
	StepFailed StepOutcome = "Failed"
)

// IntermittentQueryStatus is the observed progress of an IntermittentQuery.
// The controller rebuilds it from the world on every pass.
type IntermittentQueryStatus struct {
	// observedGeneration is the metadata.generation of the spec the status
	// was last computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions are the query's conditions: Ready, OnTrack, DeadlineMissed
	// and Succeeded, and Stalled and ForeignSteps while they hold. The Ready
	// condition's reason is the query's state at a glance (shown by kubectl
	// get).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// arrivedTuples is the number of tuples that have arrived so far. Unset
	// until the controller has observed the query.
	// +optional
	ArrivedTuples *int64 `json:"arrivedTuples,omitempty"`

	// lateTuples is the number of the window's tuples that arrived after
	// the window's batches were cut where they arrived, so that no batch
	// reads them: Kafka records timestamped inside the window but written
	// on their partition after its first record at or after window.end.
	// Counted from when the window ends until the query finishes; unset for
	// inputs that cannot have any (synthetic ones; object storage lists its
	// late files on the batch that reads them).
	// +optional
	LateTuples *int64 `json:"lateTuples,omitempty"`

	// processedTuples is the number of tuples whose batches have succeeded.
	// Unset until the controller has observed the query.
	// +optional
	ProcessedTuples *int64 `json:"processedTuples,omitempty"`

	// batchSize is the planned number of tuples per batch (the last batch
	// takes what is left).
	// +optional
	BatchSize int64 `json:"batchSize,omitempty"`

	// batches are the batches launched so far, in index order.
	// +optional
	// +listType=atomic
	Batches []BatchStatus `json:"batches,omitempty"`

	// partials are the partial merges launched so far, in order.
	// +optional
	// +listType=atomic
	Partials []PartialStatus `json:"partials,omitempty"`

	// final is the final merge, once launched.
	// +optional
	Final *FinalStatus `json:"final,omitempty"`

	// slackSeconds is the current slack, in seconds: how much later than
	// planned the query could finish and still meet its deadline; negative
	// when it is expected to be late.
	// +optional
	SlackSeconds Decimal `json:"slackSeconds,omitempty"`

	// measuredRatePerSecond is the arrival rate measured over the schedule's
	// rateWindow, in tuples per second.
	// +optional
	MeasuredRatePerSecond Decimal `json:"measuredRatePerSecond,omitempty"`

	// learned is what laxity learned from the query's finished steps (and,
	// for a window of a RecurringQuery, from its earlier windows): the
	// fitted cost model and the runtime margin the plan uses.
	// +optional
	Learned *LearnedModel `json:"learned,omitempty"`
}

// BatchStatus is one launched batch.
type BatchStatus struct {
	// index is the batch's index, from 0.
	// +optional
	Index int32 `json:"index"`

	// fromTuple is the first tuple of the batch (inclusive).
	// +optional
	FromTuple int64 `json:"fromTuple"`

	// toTuple is the end of the batch's tuple range (exclusive).
	// +optional
	ToTuple int64 `json:"toTuple,omitempty"`

	// nodes is the pool size the batch was launched for.
	// +optional
	Nodes int32 `json:"nodes,omitempty"`

	// sparkApplication is the name of the batch's SparkApplication, or of
	// its EMR on EKS job run, such as "q1-b3" (or "q1-b3-r1" for a retry).
	// +optional
	SparkApplication string `json:"sparkApplication,omitempty"`

	// attempt counts the retries of the batch: 0 for the first run.
	// +optional
	Attempt int32 `json:"attempt,omitempty"`

	// start is when the batch started running.
	// +optional
	Start *metav1.Time `json:"start,omitempty"`

	// end is when the batch finished.
	// +optional
	End *metav1.Time `json:"end,omitempty"`

	// outcome is Pending, Running, Succeeded or Failed.
	// +optional
	Outcome StepOutcome `json:"outcome,omitempty"`

	// resultLocation is where the batch wrote its partial result.
	// +optional
	ResultLocation string `json:"resultLocation,omitempty"`

	// sharedWith lists the queries the batch was run for in one shared
	// step (sparkApplication), this query among them, when it read the
	// stream once for several queries; absent for a batch of this query
	// alone.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=253
	SharedWith []string `json:"sharedWith,omitempty"`
	// message says why the step failed: the SparkApplication's
	// status.applicationState.errorMessage, or the EMR on EKS job run's
	// failure reason and state details (AWS's message when AWS refused to
	// start it). Set only when the step failed.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`
}

// PartialStatus is one launched partial merge.
type PartialStatus struct {
	// index is the partial merge's ordinal, from 0.
	// +optional
	Index int32 `json:"index"`

	// inputs is the number of intermediate results the merge combines.
	// +optional
	Inputs int32 `json:"inputs,omitempty"`

	// nodes is the pool size the merge was launched on.
	// +optional
	Nodes int32 `json:"nodes,omitempty"`

	// sparkApplication is the name of the merge's SparkApplication, or of
	// its EMR on EKS job run, such as "q1-partial-0".
	// +optional
	SparkApplication string `json:"sparkApplication,omitempty"`

	// attempt counts the retries of the merge: 0 for the first run.
	// +optional
	Attempt int32 `json:"attempt,omitempty"`

	// start is when the merge started running.
	// +optional
	Start *metav1.Time `json:"start,omitempty"`

	// end is when the merge finished.
	// +optional
	End *metav1.Time `json:"end,omitempty"`

	// outcome is Pending, Running, Succeeded or Failed.
	// +optional
	Outcome StepOutcome `json:"outcome,omitempty"`

	// resultLocation is where the merge wrote its result.
	// +optional
	ResultLocation string `json:"resultLocation,omitempty"`
	// message says why the step failed: the SparkApplication's
	// status.applicationState.errorMessage, or the EMR on EKS job run's
	// failure reason and state details (AWS's message when AWS refused to
	// start it). Set only when the step failed.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`
}

// FinalStatus is the final merge of a query.
type FinalStatus struct {
	// inputs is the number of intermediate results the merge combines.
	// +optional
	Inputs int32 `json:"inputs,omitempty"`

	// nodes is the pool size the merge was launched on.
	// +optional
	Nodes int32 `json:"nodes,omitempty"`

	// sparkApplication is the name of the final merge's SparkApplication,
	// or of its EMR on EKS job run, such as "q1-final".
	// +optional
	SparkApplication string `json:"sparkApplication,omitempty"`

	// attempt counts the retries of the final merge: 0 for the first run.
	// +optional
	Attempt int32 `json:"attempt,omitempty"`

	// start is when the final merge started running.
	// +optional
	Start *metav1.Time `json:"start,omitempty"`

	// end is when the final merge finished.
	// +optional
	End *metav1.Time `json:"end,omitempty"`

	// outcome is Pending, Running, Succeeded or Failed.
	// +optional
	Outcome StepOutcome `json:"outcome,omitempty"`

	// resultLocation is where the query's result was written.
	// +optional
	ResultLocation string `json:"resultLocation,omitempty"`
	// message says why the step failed: the SparkApplication's
	// status.applicationState.errorMessage, or the EMR on EKS job run's
	// failure reason and state details (AWS's message when AWS refused to
	// start it). Set only when the step failed.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 40 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label of at most 40 characters (lower-case letters, digits and '-', starting with a letter and ending with a letter or digit): the names laxity derives from it, such as the SparkApplication <name>-partial-<k>-r<attempt>, must be DNS-1035 labels of at most 63 characters"
// +kubebuilder:resource:shortName=lxiq,categories=laxity
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.scheduleName`,description="ElasticSchedule whose pool runs the query"
// +kubebuilder:printcolumn:name="Deadline",type=string,format=date-time,JSONPath=`.spec.deadline`,description="When the final result is due"
// +kubebuilder:printcolumn:name="Processed",type=integer,JSONPath=`.status.processedTuples`,description="Tuples processed by succeeded batches"
// +kubebuilder:printcolumn:name="Arrived",type=integer,JSONPath=`.status.arrivedTuples`,description="Tuples arrived so far"
// +kubebuilder:printcolumn:name="Slack",type=number,JSONPath=`.status.slackSeconds`,description="Seconds the query could still fall behind its plan and meet its deadline; negative when expected to be late"
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="The query's state at a glance: the reason of its Ready condition"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Batch Size",type=integer,JSONPath=`.status.batchSize`,priority=1,description="Planned tuples per batch"
// +kubebuilder:printcolumn:name="Rate",type=number,JSONPath=`.status.measuredRatePerSecond`,priority=1,description="Arrival rate measured over the schedule's rateWindow, in tuples per second"
// +kubebuilder:printcolumn:name="Slowdown %",type=number,JSONPath=`.status.learned.slowdownPercent`,priority=1,description="How much longer than its declared cost model the query's steps ran, in percent"
// +kubebuilder:printcolumn:name="Margin %",type=number,JSONPath=`.status.learned.runtimeMarginPercent`,priority=1,description="Runtime margin sized from the steps that ran, in percent"
// +kubebuilder:printcolumn:name="Result",type=string,JSONPath=`.status.final.resultLocation`,priority=1,description="Where the final merge wrote the query's result"

// IntermittentQuery is a recurring analytical query over one window of a
// stream, processed intermittently: tuples are processed in batches as they
// arrive, each batch keeps a partial aggregate, and the partials are merged
// once the window has closed, before the deadline.
type IntermittentQuery struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec is the query's window, deadline, input and cost model.
	// +required
	Spec IntermittentQuerySpec `json:"spec"`

	// status is the query's observed progress.
	// +optional
	Status IntermittentQueryStatus `json:"status,omitzero"`

	// Undecodable is set, by decoding, when the stored object does not fit
	// the Go types (see DecodeError); the spec is then empty. It is never
	// encoded.
	Undecodable *DecodeFailure `json:"-"`
}

// +kubebuilder:object:root=true

// IntermittentQueryList is a list of IntermittentQueries.
type IntermittentQueryList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitzero"`
	// items are the IntermittentQueries.
	Items []IntermittentQuery `json:"items"`
}
