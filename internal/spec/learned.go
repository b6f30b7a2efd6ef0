package spec

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/learn"
	"github.com/laxity-dev/laxity/internal/planner"
)

// Learning is what the schedule does with what it learns:
// spec.planning.learning, Apply when unset.
func Learning(es *laxityv1alpha1.ElasticSchedule) laxityv1alpha1.Learning {
	return cmp.Or(es.Spec.Planning.Learning, laxityv1alpha1.LearningApply)
}

// UnlearnedMargin is the margin a query of es plans with while nothing
// learned of it applies: spec.planning.runtimeMarginPercent when set, else
// learn.DefaultMargin, headroom for the variance of ordinary cloud nodes.
func UnlearnedMargin(es *laxityv1alpha1.ElasticSchedule) float64 {
	if m := es.Spec.Planning.RuntimeMarginPercent; m != nil {
		return float64(*m) / 100
	}
	return learn.DefaultMargin
}

// LearnSettings are what es's queries learn with: learn.Defaults with the
// schedule's unlearned margin as the prices learning is compared with.
func LearnSettings(es *laxityv1alpha1.ElasticSchedule) learn.Settings {
	s := learn.Defaults
	s.Unlearned = UnlearnedMargin(es)
	return s
}

// DeclaredLeadTime is spec.nodePool.provisioningLeadTime, or its default.
func DeclaredLeadTime(es *laxityv1alpha1.ElasticSchedule) time.Duration {
	return costmodel.Duration(durationOr(es.Spec.NodePool.ProvisioningLeadTime, DefaultProvisioningLeadTime))
}

// LeadTime is how long the schedule's pool takes to bring a node, as plans
// assume it: the declared lead time, or the measured one (status.leadTime)
// when the schedule applies what it learns and the measured one is
// materially longer (learn.PlannedLeadTime).
func LeadTime(es *laxityv1alpha1.ElasticSchedule) time.Duration {
	declared := DeclaredLeadTime(es)
	lt := es.Status.LeadTime
	if Learning(es) != laxityv1alpha1.LearningApply || lt == nil || lt.Learned == nil {
		return declared
	}
	return costmodel.Duration(learn.PlannedLeadTime(declared.Seconds(), lt.Learned.Seconds()))
}

// ObserveLeadTime brings the schedule's measured lead time up to date after
// a pass asked the pool for requested nodes and saw ready ones, through the
// measurement the offline run shares (learn.LeadTimes.Observe): a request
// above the ready count starts a measurement, the ready count reaching it
// ends one (an observation), a request withdrawn before it was met is
// dropped. It returns the lead time just observed, zero when none.
func ObserveLeadTime(es *laxityv1alpha1.ElasticSchedule, requested, ready int32, now time.Time) time.Duration {
	if Learning(es) == laxityv1alpha1.LearningOff {
		es.Status.LeadTime = nil
		return 0
	}
	m := leadTimesOf(es.Status.LeadTime)
	observed, measured := m.Observe(int(requested), int(ready), now)
	es.Status.LeadTime = leadTimeStatus(m, DeclaredLeadTime(es))
	if !measured {
		return 0
	}
	return observed
}

// leadTimesOf is the measurement a schedule's status keeps.
func leadTimesOf(lt *laxityv1alpha1.LearnedLeadTime) learn.LeadTimes {
	var m learn.LeadTimes
	if lt == nil {
		return m
	}
	if p := lt.Pending; p != nil {
		m.Pending = &learn.NodeRequest{Nodes: int(p.Nodes), Since: p.Since.Time}
	}
	for _, o := range lt.Observations {
		m.Measured = append(m.Measured, o.Duration)
	}
	return m
}

// leadTimeStatus is the measurement as a schedule's status keeps it, with
// the lead time learned from it; nil when there is nothing to keep.
func leadTimeStatus(m learn.LeadTimes, declared time.Duration) *laxityv1alpha1.LearnedLeadTime {
	if m.Pending == nil && len(m.Measured) == 0 {
		return nil
	}
	lt := &laxityv1alpha1.LearnedLeadTime{}
	if p := m.Pending; p != nil {
		lt.Pending = &laxityv1alpha1.PendingNodeRequest{Nodes: int32(min(p.Nodes, math.MaxInt32)), Since: metav1.Time{Time: p.Since}}
	}
	for _, d := range m.Measured {
		lt.Observations = append(lt.Observations, metav1.Duration{Duration: d})
	}
	if len(m.Measured) > 0 {
		lt.Learned = &metav1.Duration{Duration: m.Learned(declared, learn.Defaults)}
	}
	return lt
}

// Observations are the query's finished steps in this window, as learning
// sees them: every batch and merge whose latest attempt succeeded, with its
// work, its nodes and its measured duration. Steps without a recorded start,
// end or node count are left out, and so are shared batches.
func Observations(q *laxityv1alpha1.IntermittentQuery) []laxityv1alpha1.StepObservation {
	var out []laxityv1alpha1.StepObservation
	add := func(kind laxityv1alpha1.StepKind, index int32, work int64, nodes int32, start, end *metav1.Time, outcome laxityv1alpha1.StepOutcome) {
		if outcome != laxityv1alpha1.StepSucceeded || start == nil || end == nil || nodes < 1 || work < 0 || end.Before(start) {
			return
		}
		out = append(out, laxityv1alpha1.StepObservation{
			Kind: kind, WindowStart: q.Spec.Window.Start, Index: index, Work: work, Nodes: nodes,
			Seconds: strconv.FormatFloat(end.Sub(start.Time).Seconds(), 'f', -1, 64),
		})
	}
	for _, b := range q.Status.Batches {
		if len(b.SharedWith) > 0 {
			// A shared batch's seconds are the stream's scan and every
			// member's work together, not what this query costs alone:
			// learning the shared model is not built, so it teaches
			// nothing rather than something wrong.
			continue
		}
		add(laxityv1alpha1.StepKindBatch, b.Index, b.ToTuple-b.FromTuple, b.Nodes, b.Start, b.End, b.Outcome)
	}
	for _, p := range q.Status.Partials {
		add(laxityv1alpha1.StepKindPartial, p.Index, int64(p.Inputs), p.Nodes, p.Start, p.End, p.Outcome)
	}
	if f := q.Status.Final; f != nil {
		add(laxityv1alpha1.StepKindFinal, 0, int64(f.Inputs), f.Nodes, f.Start, f.End, f.Outcome)
	}
	return out
}

// ToLearn is observations in the learner's form, oldest first as given.
// Observations whose fields do not parse are skipped: they come from status,
// which anyone with access may have written.
func ToLearn(observations []laxityv1alpha1.StepObservation) []learn.Observation {
	out := make([]learn.Observation, 0, len(observations))
	for _, o := range observations {
		seconds, err := strconv.ParseFloat(o.Seconds, 64)
		if err != nil || !(seconds >= 0 && seconds <= laxityv1alpha1.MaxSampleSeconds) || o.Nodes < 1 || o.Work < 0 {
			continue
		}
		kind := learn.Merge
		if o.Kind == laxityv1alpha1.StepKindBatch {
			kind = learn.Batch
		}
		out = append(out, learn.Observation{Kind: kind, Work: float64(o.Work), Nodes: int(o.Nodes), Seconds: seconds})
	}
	return out
}

// Learned is the learned model of a query in the planner's terms, when
// plans use it: its cost model and margins. ok is false when the query has
// none that plans use.
func Learned(q *laxityv1alpha1.IntermittentQuery) (l learn.Learned, ok bool) {
	if l := q.Status.Learned; l == nil || !l.Applied {
		return learn.Learned{}, false
	}
	return ParseLearned(q.Status.Learned)
}

// ParseLearned is a learned model's cost model and margins. ok is false
// when it has no cost model or one that does not parse: status is written
// by laxity, but anyone with access may have changed it. A margin that
// does not parse, or is out of range, is 0.
func ParseLearned(l *laxityv1alpha1.LearnedModel) (out learn.Learned, ok bool) {
	if l == nil || l.CostModel == nil {
		return learn.Learned{}, false
	}
	var err error
	if out.Model.Batch, err = batchModel(l.CostModel.Batch); err != nil {
		return learn.Learned{}, false
	}
	if out.Model.Merge, err = mergeModel(l.CostModel.Merge); err != nil {
		return learn.Learned{}, false
	}
	out.Margin, out.TailMargin = percentOf(l.RuntimeMarginPercent), percentOf(l.TailMarginPercent)
	return out, true
}

// percentOf is a margin in percent as a fraction; 0 when it does not parse
// or is not between 0 and 1000%.
func percentOf(d laxityv1alpha1.Decimal) float64 {
	percent, err := d.Float64()
	if err != nil || !(percent >= 0 && percent <= 1000) {
		return 0
	}
	return percent / 100
}

// AsRecorded is what plans price a query with once l is recorded in its
// status (LearnedStatus) and read back (Learned): the coefficients within
// what the API holds and the margins to a tenth of a percent. The offline
// run learns through it, so that it plans with the numbers the operator's
// plans are made from, to the bit.
func AsRecorded(l learn.Learned) learn.Learned {
	recorded, ok := ParseLearned(LearnedStatus(l, nil, true))
	if !ok {
		return l
	}
	return recorded
}

// PriceWith makes pq plan with what was learned of it: l's model and
// margins. A query over several inputs then prices no late share on top:
// the model is fitted to what its batches took, late tuples and all.
func PriceWith(pq *planner.Query, l learn.Learned) {
	pq.Cost, pq.Margin, pq.TailMargin = l.Model, l.Margin, l.TailMargin
	if len(pq.Inputs) > 0 {
		pq.Inputs = slices.Clone(pq.Inputs)
		for i := range pq.Inputs {
			pq.Inputs[i].LateFraction = 0
		}
	}
}

// WithLearned makes pq, the planner's form of q, plan with what was learned
// about q when the schedule applies it: the fitted cost model and the
// margins sized from the observations; until then with the declared model
// and the unlearned margin (UnlearnedMargin), and no tail margin.
func WithLearned(es *laxityv1alpha1.ElasticSchedule, q *laxityv1alpha1.IntermittentQuery, pq *planner.Query) {
	pq.Margin = UnlearnedMargin(es)
	if Learning(es) != laxityv1alpha1.LearningApply {
		return
	}
	if l, ok := Learned(q); ok {
		PriceWith(pq, l)
	}
}

// LearnedStatus is the status form of what was learned: the fitted model,
// the slowdown and the margin, and the observations kept.
func LearnedStatus(l learn.Learned, kept []laxityv1alpha1.StepObservation, applied bool) *laxityv1alpha1.LearnedModel {
	if n := len(kept); n > laxityv1alpha1.MaxObservations {
		kept = kept[n-laxityv1alpha1.MaxObservations:]
	}
	return &laxityv1alpha1.LearnedModel{
		CostModel: &laxityv1alpha1.CostModel{
			Batch: laxityv1alpha1.BatchCostModel{
				OverheadSeconds:         decimal(l.Model.Batch.Overhead),
				SerialSecondsPerTuple:   decimal(l.Model.Batch.Serial),
				ParallelSecondsPerTuple: decimal(l.Model.Batch.Parallel),
			},
			Merge: laxityv1alpha1.MergeCostModel{
				OverheadSeconds:         decimal(l.Model.Merge.Overhead),
				SerialSecondsPerInput:   decimal(l.Model.Merge.Serial),
				ParallelSecondsPerInput: decimal(l.Model.Merge.Parallel),
			},
		},
		SlowdownPercent:      laxityv1alpha1.NewDecimal((l.Slowdown-1)*100, 1),
		RuntimeMarginPercent: laxityv1alpha1.NewDecimal(l.Margin*100, 1),
		TailMarginPercent:    laxityv1alpha1.NewDecimal(l.TailMargin*100, 1),
		Applied:              applied,
		BatchObservations:    int32(l.Batches),
		MergeObservations:    int32(l.Merges),
		Observations:         kept,
	}
}

// decimal formats a coefficient so that it parses back to the same float.
// Coefficients are capped at what the API accepts.
func decimal(v float64) string {
	return strconv.FormatFloat(min(v, laxityv1alpha1.MaxCoefficientSeconds), 'g', -1, 64)
}
