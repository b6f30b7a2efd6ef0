package builder

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
)

// DefaultTemplate is the SparkApplication template of Query: a Scala job,
// one 1-core driver and 2-core executors.
const DefaultTemplate = `{"type":"Scala","mode":"cluster","image":"spark:3.5.3","sparkVersion":"3.5.3","mainClass":"dev.laxity.Batch","mainApplicationFile":"local:///opt/job.jar","driver":{"cores":1,"memory":"1g"},"executor":{"cores":2,"memory":"4g"}}`

// QueryBuilder builds an IntermittentQuery.
type QueryBuilder struct {
	iq laxityv1alpha1.IntermittentQuery
	// slack, when set, places the deadline that long after the window's
	// end, wherever the window ends up.
	slack *time.Duration
}

// Query is an IntermittentQuery ns/name of schedule "pool" over a
// 10-minute window opening 5 minutes after Origin, due 3 minutes after the
// window's end, at 50 tuples/s in units of 500, whose batches take 10 s
// plus 4 ms per tuple spread over the nodes and whose merges take 5 s plus
// 0.5 s per input spread over the nodes, with DefaultTemplate.
func Query(ns, name string) *QueryBuilder {
	b := &QueryBuilder{
		iq: laxityv1alpha1.IntermittentQuery{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: laxityv1alpha1.IntermittentQuerySpec{
				ScheduleName:     "pool",
				Input:            laxityv1alpha1.Input{RatePerSecond: "50", Granularity: 500},
				CostModel:        CostModel(BatchCost("10", "0", "0.004"), MergeCost("5", "0", "0.5")),
				SparkApplication: &runtime.RawExtension{Raw: []byte(DefaultTemplate)},
			},
		},
	}
	return b.Window(Origin.Add(5*time.Minute), 10*time.Minute).Slack(3 * time.Minute)
}

// Bare drops every default: the spec holds only what later calls set.
func (b *QueryBuilder) Bare() *QueryBuilder {
	b.iq.Spec = laxityv1alpha1.IntermittentQuerySpec{}
	b.slack = nil
	return b
}

// UID sets the UID, as if the query was read from the API server.
func (b *QueryBuilder) UID(uid string) *QueryBuilder {
	b.iq.UID = types.UID(uid)
	return b
}

// Schedule sets the ElasticSchedule the query runs on.
func (b *QueryBuilder) Schedule(name string) *QueryBuilder {
	b.iq.Spec.ScheduleName = name
	return b
}

// Window sets the window: length from start.
func (b *QueryBuilder) Window(start time.Time, length time.Duration) *QueryBuilder {
	b.iq.Spec.Window = laxityv1alpha1.Window{Start: metav1.NewTime(start), End: metav1.NewTime(start.Add(length))}
	return b
}

// Slack sets the deadline d after the window's end.
func (b *QueryBuilder) Slack(d time.Duration) *QueryBuilder {
	b.slack = &d
	return b
}

// Deadline sets the deadline to an instant.
func (b *QueryBuilder) Deadline(t time.Time) *QueryBuilder {
	b.iq.Spec.Deadline = metav1.NewTime(t)
	b.slack = nil
	return b
}

// Rate sets the declared arrival rate in tuples per second ("" for none).
func (b *QueryBuilder) Rate(perSecond string) *QueryBuilder {
	b.iq.Spec.Input.RatePerSecond = perSecond
	return b
}

// Total sets how many tuples arrive over the window.
func (b *QueryBuilder) Total(tuples int64) *QueryBuilder {
	b.iq.Spec.Input.TotalTuples = ptr.To(tuples)
	return b
}

// Profile sets the declared rate profile.
func (b *QueryBuilder) Profile(segments ...laxityv1alpha1.RateSegment) *QueryBuilder {
	b.iq.Spec.Input.Profile = segments
	return b
}

// Granularity sets the unit tuples arrive in (0 for the API server's
// default).
func (b *QueryBuilder) Granularity(tuples int64) *QueryBuilder {
	b.iq.Spec.Input.Granularity = tuples
	return b
}

// Input replaces the whole input.
func (b *QueryBuilder) Input(input laxityv1alpha1.Input) *QueryBuilder {
	b.iq.Spec.Input = input
	return b
}

// Inputs makes the query one over several inputs (a join), replacing its
// one input.
func (b *QueryBuilder) Inputs(inputs ...laxityv1alpha1.JoinInput) *QueryBuilder {
	b.iq.Spec.Input = laxityv1alpha1.Input{}
	b.iq.Spec.Inputs = inputs
	return b
}

// JoinInput is an input named name of a query over several, at a constant
// rate.
func JoinInput(name, perSecond string) laxityv1alpha1.JoinInput {
	return laxityv1alpha1.JoinInput{Name: name, Input: laxityv1alpha1.Input{RatePerSecond: perSecond, Granularity: 1}}
}

// CostModel sets how long batches and merges take.
func (b *QueryBuilder) CostModel(model laxityv1alpha1.CostModel) *QueryBuilder {
	b.iq.Spec.CostModel = model
	return b
}

// Template sets the SparkApplication template (JSON); "" leaves the query
// without one.
func (b *QueryBuilder) Template(json string) *QueryBuilder {
	if json == "" {
		b.iq.Spec.SparkApplication = nil
	} else {
		b.iq.Spec.SparkApplication = &runtime.RawExtension{Raw: []byte(json)}
	}
	return b
}

// Obj is the query built; every call returns a new copy.
func (b *QueryBuilder) Obj() *laxityv1alpha1.IntermittentQuery {
	iq := b.iq.DeepCopy()
	if b.slack != nil {
		iq.Spec.Deadline = metav1.NewTime(iq.Spec.Window.End.Add(*b.slack))
	}
	return iq
}

// CostModel is a cost model of batch and merge.
func CostModel(batch laxityv1alpha1.BatchCostModel, merge laxityv1alpha1.MergeCostModel) laxityv1alpha1.CostModel {
	return laxityv1alpha1.CostModel{Batch: batch, Merge: merge}
}

// BatchCost is a batch cost model: overhead seconds, plus seconds per
// tuple serially and spread over the nodes.
func BatchCost(overhead, serialPerTuple, parallelPerTuple string) laxityv1alpha1.BatchCostModel {
	return laxityv1alpha1.BatchCostModel{OverheadSeconds: overhead, SerialSecondsPerTuple: serialPerTuple, ParallelSecondsPerTuple: parallelPerTuple}
}

// MergeCost is a merge cost model: overhead seconds, plus seconds per
// input serially and spread over the nodes.
func MergeCost(overhead, serialPerInput, parallelPerInput string) laxityv1alpha1.MergeCostModel {
	return laxityv1alpha1.MergeCostModel{OverheadSeconds: overhead, SerialSecondsPerInput: serialPerInput, ParallelSecondsPerInput: parallelPerInput}
}
