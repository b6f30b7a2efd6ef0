package controllers

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/dispatch"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/internal/spec"
	"github.com/laxity-dev/laxity/internal/steprun"
)

// Labels laxity puts on the objects it creates (docs/design.md, the step
// contract).
const (
	LabelSchedule = steprun.LabelSchedule
	LabelQuery    = steprun.LabelQuery
	LabelStep     = steprun.LabelStep
)

// observedStep is the latest attempt of one step, read back from its
// SparkApplication or job-run record.
type observedStep struct {
	step   sparkapp.Step
	obs    sparkapp.Observation
	name   string
	result string
	// object is the SparkApplication or job-run record read; stuck is why
	// laxity cancelled it as stuck, "" when it did not.
	object metav1.Object
	stuck  string
}

// launchedSteps are one query's launched steps, the latest attempt of each.
type launchedSteps struct {
	batches, partials []observedStep
	final             *observedStep
}

// finished says whether the query's final merge has succeeded: nothing of
// it is left to plan or to run.
func (l launchedSteps) finished() bool {
	return l.final != nil && l.final.obs.Phase == laxityv1alpha1.StepSucceeded
}

// observeSteps reads the launched steps once: by query, for every step, its
// latest attempt. Objects that are not laxity's are ignored.
func observeSteps(objects []steprun.Step) map[string]launchedSteps {
	type key struct {
		query string
		kind  planner.StepKind
		index int
	}
	latest := map[key]observedStep{}
	for _, o := range objects {
		query, step, err := sparkapp.StepOf(o.Object)
		if err != nil {
			continue
		}
		// A shared batch is each member's batch of its index, with the
		// member's own result location, which its merges read.
		queries, results := []string{query}, map[string]string{query: o.Object.GetAnnotations()[sparkapp.AnnotationResult]}
		if len(step.Members) > 0 {
			queries, results = step.Members, step.MemberResults
		}
		for _, query := range queries {
			k := key{query, step.Kind, step.Index}
			// The same attempt twice is a SparkApplication cancelled as
			// stuck and the record that stands for it (cancelStuck): the
			// record, which says it failed, wins.
			if seen, ok := latest[k]; ok && (seen.step.Attempt > step.Attempt || (seen.step.Attempt == step.Attempt && o.Stuck == "")) {
				continue
			}
			latest[k] = observedStep{step: step, obs: o.Obs, name: o.Object.GetName(), result: results[query], object: o.Object, stuck: o.Stuck}
		}
	}
	out := map[string]launchedSteps{}
	for k, s := range latest {
		l := out[k.query]
		switch s.step.Kind {
		case planner.StepBatch:
			l.batches = append(l.batches, s)
		case planner.StepPartial:
			l.partials = append(l.partials, s)
		case planner.StepFinal:
			f := s
			l.final = &f
		}
		out[k.query] = l
	}
	byIndex := func(steps []observedStep) []observedStep {
		sort.Slice(steps, func(a, b int) bool { return steps[a].step.Index < steps[b].step.Index })
		return contiguous(steps)
	}
	for query, l := range out {
		l.batches, l.partials = byIndex(l.batches), byIndex(l.partials)
		out[query] = l
	}
	return out
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
	a := dispatch.Attempt{Number: s.step.Attempt, Nodes: int(s.step.Nodes), Inputs: s.step.Inputs, NamesTaken: s.step.NamesTaken, Launched: s.step.LaunchedAt,
		Members: s.step.Members, SideBySide: s.step.SideBySide, Lane: s.step.Lane}
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
func withLaunched(dq *dispatch.Query, launched launchedSteps, now time.Time) {
	for _, b := range launched.batches {
		dq.Batches = append(dq.Batches, dispatch.Batch{From: b.step.FromTuple, To: b.step.ToTuple, Attempt: attemptOf(b, now)})
	}
	for _, p := range launched.partials {
		dq.Partials = append(dq.Partials, attemptOf(p, now))
	}
	if launched.final != nil {
		a := attemptOf(*launched.final, now)
		dq.Final = &a
	}
}

// dispatchQuery is the run-time view of one query: its plan, its arrivals
// and its launched steps. ok is false when the plan does not cover the query
// yet (it is re-planned first).
func dispatchQuery(q *laxityv1alpha1.IntermittentQuery, pq planner.Query, doc *planner.Document, launched launchedSteps, arrived int64, now time.Time) (dispatch.Query, bool) {
	dq, ok := spec.DispatchQuery(q, pq, doc, arrived)
	if ok {
		withLaunched(&dq, launched, now)
	}
	return dq, ok
}

// find is the latest attempt of the step of kind and index, nil when none
// is launched. The pointer is into l, so changes stay.
func (l launchedSteps) find(kind planner.StepKind, index int) *observedStep {
	switch {
	case kind == planner.StepBatch && index < len(l.batches):
		return &l.batches[index]
	case kind == planner.StepPartial && index < len(l.partials):
		return &l.partials[index]
	case kind == planner.StepFinal:
		return l.final
	}
	return nil
}

func queryNamed(queries []laxityv1alpha1.IntermittentQuery, name string) *laxityv1alpha1.IntermittentQuery {
	for i := range queries {
		if queries[i].Name == name {
			return &queries[i]
		}
	}
	return nil
}

// stuckHandling describes the steps cancelled as stuck whose retry has not
// been launched yet (their latest attempt is the cancelled one) and that
// have tries left, leaving out the one whose retry was just created;
// "" when there are none. The schedule is not Ready meanwhile.
func stuckHandling(launched map[string]launchedSteps, maxAttempts int, retried *dispatch.Step) string {
	var out []string
	for query, l := range launched {
		for _, s := range l.all() {
			if s.stuck == "" || s.obs.Phase != laxityv1alpha1.StepFailed {
				continue
			}
			if retried != nil && retried.Query == query && retried.Kind == s.step.Kind && retried.Index == s.step.Index {
				continue // its retry was created in this pass
			}
			if dispatch.FailedOut(dispatch.Attempt{State: dispatch.Failed, Number: s.step.Attempt, NamesTaken: s.step.NamesTaken}, maxAttempts) {
				continue // reported as failed out by its query
			}
			out = append(out, s.stuck)
		}
	}
	sort.Strings(out)
	// A shared batch is every member's: said once.
	return strings.Join(slices.Compact(out), "; ")
}

// reportForeign reports each foreign object once (by UID) with a Warning
// event naming it, and logs it: an object carrying laxity's labels that its
// query does not own. It is otherwise ignored (see steprun.List); the
// query's ForeignSteps condition keeps naming it.
func (r *ElasticScheduleReconciler) reportForeign(ctx context.Context, foreign []steprun.Step) []note {
	var notes []note
	for _, o := range foreign {
		if _, seen := r.reported.LoadOrStore(o.Object.GetUID(), true); seen {
			continue
		}
		query := o.Object.GetLabels()[LabelQuery]
		log.FromContext(ctx).Info("ignoring a foreign step", "object", o.Describe(), "query", query)
		notes = append(notes, note{corev1.EventTypeWarning, laxityv1alpha1.ForeignStepReason, "Observe",
			fmt.Sprintf("%s carries the labels of a step of IntermittentQuery %s but is not owned by it: ignored, neither run, counted nor merged", o.Describe(), query)})
	}
	return notes
}

// all is every launched step's latest attempt: batches, partials, final.
func (l launchedSteps) all() []observedStep {
	out := append(append([]observedStep{}, l.batches...), l.partials...)
	if l.final != nil {
		out = append(out, *l.final)
	}
	return out
}
