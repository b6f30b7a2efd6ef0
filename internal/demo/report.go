package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/controllers"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/source"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/internal/spec"
)

// The report gives every time in whole seconds from its origin, as the API
// records them (RFC 3339 in the statuses): rounding some times and not
// others would make a step seem to start before its tuples arrived.

// report is what schedule s ran, read back from the cluster.
func (r *run) report(ctx context.Context, s *schedule) (Report, error) {
	origin := r.start
	if s.firstPlan != nil {
		origin = s.firstPlan.Origin
	}
	origin = origin.Truncate(time.Second)
	out := Report{Schedule: s.object, Plan: s.firstPlan, Replans: max(s.plans-1, 0), Windows: map[string][2]float64{}}
	var es laxityv1alpha1.ElasticSchedule
	if err := r.client.Get(ctx, client.ObjectKeyFromObject(s.object), &es); err != nil {
		return out, err
	}
	out.DeclaredLeadTime, out.ObservedLeadTimes = leadTimes(&es)
	var queries []executedQuery
	objects := map[string]*laxityv1alpha1.IntermittentQuery{}
	for _, applied := range s.queries {
		var q laxityv1alpha1.IntermittentQuery
		if err := r.client.Get(ctx, client.ObjectKeyFromObject(applied), &q); err != nil {
			return out, err
		}
		apps := &unstructured.UnstructuredList{}
		apps.SetGroupVersionKind(sparkapp.GroupVersionKind.GroupVersion().WithKind(sparkapp.GroupVersionKind.Kind + "List"))
		if err := r.client.List(ctx, apps, client.InNamespace(q.Namespace), client.MatchingLabels{controllers.LabelQuery: q.Name}); err != nil {
			return out, err
		}
		src, err := spec.SyntheticSource(ctx, &q)
		if err != nil {
			return out, fmt.Errorf("IntermittentQuery %s/%s: spec.input: %w", q.Namespace, q.Name, err)
		}
		// The demo's sources are synthetic, which can say when tuples arrive.
		forecast, ok := src.(source.Forecaster)
		if !ok {
			return out, fmt.Errorf("IntermittentQuery %s/%s: spec.input: the demo needs a synthetic source", q.Namespace, q.Name)
		}
		eq, err := executedQueryOf(&q, apps.Items, forecast, origin)
		if err != nil {
			return out, err
		}
		queries = append(queries, eq)
		objects[q.Name] = &q
		out.Windows[q.Name] = [2]float64{offset(origin, q.Spec.Window.Start.Time), offset(origin, q.Spec.Window.End.Time)}
	}
	end := offset(origin, r.clock.Now())
	out.Executed = executedDocument(origin, s.firstPlan, queries, end, levelsFrom(origin, s.requested), levelsFrom(origin, s.ready), s.pool)
	for _, q := range queries {
		if !q.finished || q.finish > q.deadline {
			out.Missed = append(out.Missed, q.name)
		}
	}
	for _, rq := range s.recurring {
		for _, name := range rq.windows {
			i := slices.IndexFunc(queries, func(q executedQuery) bool { return q.name == name })
			out.Recurring = append(out.Recurring, windowOf(rq.object.Name, objects[name], queries[i], rq.learned[name], origin, end))
		}
	}
	return out, nil
}

// Window is how one window of a RecurringQuery ran, in the report's
// format: times in whole seconds from its origin.
type Window struct {
	// RecurringQuery and Query name the RecurringQuery and the window's
	// IntermittentQuery.
	RecurringQuery string `json:"recurringQuery"`
	Query          string `json:"query"`
	// Outcome is Succeeded, Failed, Missed, or, when the run ended first,
	// Running or Pending.
	Outcome laxityv1alpha1.WindowOutcome `json:"outcome"`
	// WindowStart and WindowEnd bound the window; Deadline is when its
	// result was due.
	WindowStart float64 `json:"windowStart"`
	WindowEnd   float64 `json:"windowEnd"`
	Deadline    float64 `json:"deadline"`
	// Finish is when its final merge ended, or the run's end when it did
	// not; Met says it ended by the deadline.
	Finish float64 `json:"finish"`
	Met    bool    `json:"met"`
	// LearnedSlowdownPercent is how much slower than the declared cost
	// model laxity had learned the query runs when the window finished
	// (status.learned.slowdownPercent); null when nothing was learned.
	LearnedSlowdownPercent *float64 `json:"learnedSlowdownPercent"`
}

// windowOf is window q of recurring query rq as it ran; eq is q's executed
// steps, learned the slowdown noted when it finished, end the run's end.
func windowOf(rq string, q *laxityv1alpha1.IntermittentQuery, eq executedQuery, learned string, origin time.Time, end float64) Window {
	w := Window{
		RecurringQuery: rq, Query: q.Name, Outcome: windowOutcome(q),
		WindowStart: offset(origin, q.Spec.Window.Start.Time), WindowEnd: offset(origin, q.Spec.Window.End.Time),
		Deadline: eq.deadline, Finish: end, Met: eq.finished && eq.finish <= eq.deadline,
	}
	if eq.finished {
		w.Finish = eq.finish
	}
	if v, err := strconv.ParseFloat(learned, 64); err == nil {
		w.LearnedSlowdownPercent = &v
	}
	return w
}

// executedQuery is one query's steps as they ran.
type executedQuery struct {
	name      string
	batchSize int64
	deadline  float64
	steps     []planner.Step
	// finish is when its final merge ended, if it finished.
	finish   float64
	finished bool
}

// offset is t in whole seconds from origin.
func offset(origin, t time.Time) float64 {
	return math.Floor(t.Sub(origin).Seconds())
}

// executedQueryOf reads the steps of q that succeeded from its status, with
// the nodes each ran on from its SparkApplication and, for a batch, when
// its last tuple arrived.
func executedQueryOf(q *laxityv1alpha1.IntermittentQuery, apps []unstructured.Unstructured, src source.Forecaster, origin time.Time) (executedQuery, error) {
	nodes := map[string]int{}
	for i := range apps {
		if _, step, err := sparkapp.StepOf(&apps[i]); err == nil {
			nodes[apps[i].GetName()] = int(step.Nodes)
		}
	}
	eq := executedQuery{name: q.Name, deadline: offset(origin, q.Spec.Deadline.Time)}
	eq.batchSize = q.Status.BatchSize
	var batchEnds []float64
	for _, b := range q.Status.Batches {
		if b.Outcome != laxityv1alpha1.StepSucceeded || b.Start == nil || b.End == nil {
			continue
		}
		arrived, ok := src.ArrivalOf(b.ToTuple)
		if !ok {
			return eq, fmt.Errorf("IntermittentQuery %s/%s: batch %d ran tuples up to %d, more than ever arrive", q.Namespace, q.Name, b.Index, b.ToTuple)
		}
		eq.steps = append(eq.steps, planner.Step{
			Query: q.Name, Kind: planner.StepBatch, Index: int(b.Index), FromTuple: b.FromTuple, ToTuple: b.ToTuple,
			Ready: offset(origin, arrived), Start: offset(origin, b.Start.Time), End: offset(origin, b.End.Time), Nodes: nodes[b.SparkApplication],
		})
		batchEnds = append(batchEnds, offset(origin, b.End.Time))
	}
	covered, lastInput := 0, 0.0
	for _, p := range q.Status.Partials {
		if p.Outcome != laxityv1alpha1.StepSucceeded || p.Start == nil || p.End == nil {
			continue
		}
		first, last := covered, min(covered+int(p.Inputs), len(eq.steps))
		step := planner.Step{
			Query: q.Name, Kind: planner.StepPartial, Index: int(p.Index), Inputs: int(p.Inputs),
			Start: offset(origin, p.Start.Time), End: offset(origin, p.End.Time), Nodes: nodes[p.SparkApplication],
		}
		if first < last {
			step.FromTuple, step.ToTuple = eq.steps[first].FromTuple, eq.steps[last-1].ToTuple
			step.Ready = maxOf(batchEnds[first:last])
		}
		covered = last
		eq.steps = append(eq.steps, step)
	}
	if f := q.Status.Final; f != nil && f.Outcome == laxityv1alpha1.StepSucceeded && f.Start != nil && f.End != nil {
		partials := len(eq.steps) - len(batchEnds)
		for _, s := range eq.steps {
			lastInput = max(lastInput, s.End)
		}
		final := planner.Step{
			Query: q.Name, Kind: planner.StepFinal, Index: partials, Inputs: partials + len(batchEnds) - covered,
			Ready: lastInput, Start: offset(origin, f.Start.Time), End: offset(origin, f.End.Time), Nodes: nodes[f.SparkApplication],
		}
		if len(batchEnds) > 0 {
			final.ToTuple = eq.steps[len(batchEnds)-1].ToTuple
		}
		eq.steps = append(eq.steps, final)
		eq.finish, eq.finished = final.End, true
	}
	return eq, nil
}

func maxOf(values []float64) float64 {
	m := math.Inf(-1)
	for _, v := range values {
		m = max(m, v)
	}
	return m
}

// levelsFrom is a sampled timeline in whole seconds from origin; what was
// sampled before origin is its level at 0.
func levelsFrom(origin time.Time, levels []level) []planner.NodeLevel {
	var out []planner.NodeLevel
	for _, l := range levels {
		at := max(offset(origin, l.at), 0)
		if n := len(out); n > 0 && out[n-1].At == at {
			out[n-1].Nodes = l.nodes
			continue
		}
		out = append(out, planner.NodeLevel{At: at, Nodes: l.nodes})
	}
	return out
}

// executedDocument is what ran in the plan document's format: the steps
// that succeeded, the sampled ready (nodes) and requested (requests)
// timelines and what they cost, and how each query finished against its
// deadline; a query that did not finish is given the run's end as its
// finish. The candidates, the batch-size choice and the maximum supported
// rate are those of the first plan.
func executedDocument(origin time.Time, plan *planner.Document, queries []executedQuery, end float64, requested, ready []planner.NodeLevel, p planner.Pool) planner.Document {
	// Every field of the document is present, lists empty rather than null.
	doc := planner.Document{
		Origin: origin, Nodes: append([]planner.NodeLevel{}, ready...), Requests: append([]planner.NodeLevel{}, requested...),
		Candidates: []planner.Candidate{}, Queries: []planner.QueryPlan{}, Steps: []planner.Step{},
	}
	if plan != nil {
		doc.Candidates = plan.Candidates
		doc.Chosen.InitialNodes, doc.Chosen.BatchSizeFactor = plan.Chosen.InitialNodes, plan.Chosen.BatchSizeFactor
		doc.MaxSupportedRateFactor, doc.SearchSeconds = plan.MaxSupportedRateFactor, plan.SearchSeconds
	}
	doc.Chosen.Cost, doc.Chosen.ExecutableCost = planner.Cost(ready, p), planner.Cost(requested, p)
	for _, l := range ready {
		doc.Chosen.MaxNodes = max(doc.Chosen.MaxNodes, l.Nodes)
	}
	doc.Chosen.Feasible = true
	for _, q := range queries {
		batches := 0
		for _, s := range q.steps {
			if s.Kind == planner.StepBatch {
				batches++
			}
		}
		finish := q.finish
		if !q.finished {
			finish = end
		}
		doc.Queries = append(doc.Queries, planner.QueryPlan{
			Name: q.name, BatchSize: q.batchSize, Batches: batches, Finish: finish, Deadline: q.deadline, Slack: q.deadline - finish,
		})
		doc.Steps = append(doc.Steps, q.steps...)
		if (!q.finished || finish > q.deadline) && doc.Chosen.Feasible {
			doc.Chosen.Feasible = false
			doc.Chosen.Failure = &planner.Failure{Query: q.name, LateSeconds: max(finish-q.deadline, 0)}
		}
	}
	sort.SliceStable(doc.Steps, func(a, b int) bool { return doc.Steps[a].Start < doc.Steps[b].Start })
	return doc
}

// MarshalDocument is the report as --report writes it: what ran in the
// plan document's format, with the windows the schedule's RecurringQueries
// ran (an empty list when it has none, as every list of the document is)
// and what it ran on (ranOn).
func (r Report) MarshalDocument() ([]byte, error) {
	doc := struct {
		planner.Document
		Windows []Window `json:"windows"`
		RanOn   string   `json:"ranOn"`
	}{r.Executed, r.Recurring, r.RanOn}
	if doc.Windows == nil {
		doc.Windows = []Window{}
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}
