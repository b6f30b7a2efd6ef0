package spec

import (
	"context"
	"fmt"
	"math"
	"time"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/dispatch"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/replan"
	"github.com/laxity-dev/laxity/internal/source"
)

// IdleNodes is the pool size the schedule keeps when nothing is planned.
func IdleNodes(es *laxityv1alpha1.ElasticSchedule) int32 {
	if es.Spec.NodePool.IdleNodes != nil {
		return *es.Spec.NodePool.IdleNodes
	}
	return 0
}

// RateRules is how the schedule treats measured rates other than the
// declared ones: the rate model and the tolerance.
func RateRules(es *laxityv1alpha1.ElasticSchedule) replan.Rates {
	r := replan.Rates{Pessimistic: es.Spec.Planning.RateModel != laxityv1alpha1.RateModelOptimistic}
	if t := es.Spec.Planning.RateTolerancePercent; t != nil {
		r.Tolerance = float64(*t) / 100
	}
	return r
}

// RuntimeMargin is the factor the plan's modelled durations carry:
// 1 + spec.planning.runtimeMarginPercent/100.
func RuntimeMargin(es *laxityv1alpha1.ElasticSchedule) float64 {
	margin := 1.0
	if m := es.Spec.Planning.RuntimeMarginPercent; m != nil {
		margin += float64(*m) / 100
	}
	return margin
}

// DispatchSettings are the dispatcher's settings for the schedule: its
// pool sizes, the order of the plan in force doc (nil when there is none:
// then the spec's policy), with the manager's attempt limit and backoff.
// The plan's order is the spec's unless only the other met every deadline.
func DispatchSettings(es *laxityv1alpha1.ElasticSchedule, doc *planner.Document, maxAttempts int, backoff time.Duration) dispatch.Settings {
	s := dispatch.Settings{Policy: planner.LeastLaxity, MaxAttempts: maxAttempts, Backoff: backoff}
	switch {
	case doc != nil && doc.Chosen.Policy != "":
		s.Policy = doc.Chosen.Policy
	case es.Spec.Planning.Policy == laxityv1alpha1.PolicyEarliestDeadline:
		s.Policy = planner.EarliestDeadline
	}
	for _, size := range es.Spec.NodePool.Sizes {
		s.Sizes = append(s.Sizes, int(size))
	}
	return s
}

// DispatchQuery is the run-time view of one query under the plan doc, with
// arrived tuples in so far and nothing launched yet (the caller adds the
// launched steps). pq is the query as the planner sees it from doc.Origin.
// ok is false when the plan does not cover the query (it is re-planned
// first).
func DispatchQuery(q *laxityv1alpha1.IntermittentQuery, pq planner.Query, doc *planner.Document, arrived int64) (dispatch.Query, bool) {
	var planned *planner.QueryPlan
	for i := range doc.Queries {
		if doc.Queries[i].Name == q.Name {
			planned = &doc.Queries[i]
		}
	}
	if planned == nil {
		return dispatch.Query{}, false
	}
	dq := dispatch.Query{
		Name:          q.Name,
		Deadline:      q.Spec.Deadline.Time,
		Closed:        q.Spec.Window.End.Add(AllowedLateness(q)),
		Cost:          pq.Cost,
		TailMargin:    planned.TailMargin,
		BatchSize:     planned.BatchSize,
		BatchEnds:     doc.BatchEnds(q.Name),
		ExpectedTotal: doc.PlannedTotal(q.Name),
		Arrived:       arrived,
	}
	if pq.PartialEvery > 0 {
		dq.PartialEvery = max(int(math.Ceil(pq.PartialEvery*float64(planned.Batches)-1e-9)), 1)
	}
	return dq, true
}

// SyntheticSource is the source of a query without a real input: arrivals
// follow spec.input, or spec.input.actualProfile when set, by the clock.
// For a query over several inputs, each input's arrivals do, and batches
// cut them all at one instant (source.Joined).
func SyntheticSource(_ context.Context, q *laxityv1alpha1.IntermittentQuery) (source.Source, error) {
	if len(q.Spec.Inputs) == 0 {
		return source.FromSpec(q, q.Spec.Input.ActualProfile)
	}
	return JoinedSource(q, func(in FieldInput) (source.Source, error) {
		return source.FromInput(in.Field, q.Spec.Window, in.Input, in.ActualProfile)
	})
}

// JoinedSource is the source of a query over several inputs, each input's
// own source opened by open. Errors name the input's field.
func JoinedSource(q *laxityv1alpha1.IntermittentQuery, open func(FieldInput) (source.Source, error)) (source.Source, error) {
	inputs := Inputs(q)
	joined := make([]source.JoinedInput, 0, len(inputs))
	for _, in := range inputs {
		src, err := open(in)
		if err != nil {
			return nil, err
		}
		joined = append(joined, source.JoinedInput{Name: in.Name, Source: src, Location: in.Location})
	}
	j, err := source.NewJoined(q.Spec.Window.Start.Time, q.Spec.Window.End.Time, joined)
	if err != nil {
		return nil, fmt.Errorf("spec.inputs: %w", err)
	}
	return j, nil
}
