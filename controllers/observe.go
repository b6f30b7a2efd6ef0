package controllers

import (
	"fmt"
	"math"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/dispatch"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/sparkapp"
)

// Labels laxity puts on the objects it creates (DESIGN.md, SparkApplication
// contract).
const (
	LabelSchedule = "laxity.dev/schedule"
	LabelQuery    = "laxity.dev/query"
	LabelStep     = "laxity.dev/step"
)

// observedStep is the latest attempt of one step, read back from its
// SparkApplication.
type observedStep struct {
	step   sparkapp.Step
	obs    sparkapp.Observation
	name   string
	result string
}

// observeSteps reads a query's SparkApplications: for every step, its latest
// attempt. Objects that are not laxity's are ignored.
func observeSteps(query string, apps []unstructured.Unstructured) (batches, partials []observedStep, final *observedStep) {
	latest := map[[2]string]observedStep{}
	for i := range apps {
		app := &apps[i]
		name, step, err := sparkapp.StepOf(app)
		if err != nil || name != query {
			continue
		}
		key := [2]string{string(step.Kind), fmt.Sprint(step.Index)}
		if seen, ok := latest[key]; ok && seen.step.Attempt >= step.Attempt {
			continue
		}
		latest[key] = observedStep{step: step, obs: sparkapp.Observe(app), name: app.GetName(), result: app.GetAnnotations()[sparkapp.AnnotationResult]}
	}
	for _, s := range latest {
		switch s.step.Kind {
		case planner.StepBatch:
			batches = append(batches, s)
		case planner.StepPartial:
			partials = append(partials, s)
		case planner.StepFinal:
			f := s
			final = &f
		}
	}
	byIndex := func(steps []observedStep) {
		sort.Slice(steps, func(a, b int) bool { return steps[a].step.Index < steps[b].step.Index })
	}
	byIndex(batches)
	byIndex(partials)
	return contiguous(batches), contiguous(partials), final
}

// contiguous keeps the steps with indices 0, 1, …: a step whose predecessor
// is missing was not launched by laxity's rules and does not count.
func contiguous(steps []observedStep) []observedStep {
	for i, s := range steps {
		if s.step.Index != i {
			return steps[:i]
		}
	}
	return steps
}

func attemptOf(s observedStep, now time.Time) dispatch.Attempt {
	a := dispatch.Attempt{Number: s.step.Attempt, Nodes: int(s.step.Nodes), Inputs: s.step.Inputs}
	if s.obs.Started != nil {
		a.Started = *s.obs.Started
	}
	switch s.obs.Phase {
	case laxityv1alpha1.StepRunning:
		a.State = dispatch.Running
	case laxityv1alpha1.StepSucceeded:
		a.State = dispatch.Succeeded
	case laxityv1alpha1.StepFailed:
		a.State = dispatch.Failed
	default:
		a.State = dispatch.Pending
	}
	if s.obs.Ended != nil {
		a.Ended = *s.obs.Ended
	} else if a.State == dispatch.Failed {
		a.Ended = now
	}
	return a
}

// withLaunched adds the query's launched steps to its run-time view.
func withLaunched(dq *dispatch.Query, apps []unstructured.Unstructured, now time.Time) {
	batches, partials, final := observeSteps(dq.Name, apps)
	for _, b := range batches {
		dq.Batches = append(dq.Batches, dispatch.Batch{From: b.step.FromTuple, To: b.step.ToTuple, Attempt: attemptOf(b, now)})
	}
	for _, p := range partials {
		dq.Partials = append(dq.Partials, attemptOf(p, now))
	}
	if final != nil {
		a := attemptOf(*final, now)
		dq.Final = &a
	}
}

// dispatchQuery is the run-time view of one query: its plan, its arrivals
// and its launched steps. ok is false when the plan does not cover the query
// yet (it is re-planned first).
func dispatchQuery(q *laxityv1alpha1.IntermittentQuery, pq planner.Query, doc *planner.Document, apps []unstructured.Unstructured, arrived int64, now time.Time) (dispatch.Query, bool) {
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
		Closed:        q.Spec.Window.End.Add(allowedLateness(q)),
		Cost:          pq.Cost,
		BatchSize:     planned.BatchSize,
		ExpectedTotal: doc.PlannedTotal(q.Name),
		Arrived:       arrived,
	}
	if pq.PartialEvery > 0 {
		dq.PartialEvery = max(int(math.Ceil(pq.PartialEvery*float64(planned.Batches)-1e-9)), 1)
	}
	withLaunched(&dq, apps, now)
	return dq, true
}
