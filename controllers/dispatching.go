package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/dispatch"
	"github.com/laxity-dev/laxity/internal/pass"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/source"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/internal/steprun"
)

// dispatch decides the next step on the pool as it stands and launches it,
// if one is due; created is the step it created in this pass, nil when none.
// A query whose template cannot become a step (laxity's rendering or the
// SparkApplication CRD rejects it) is held and marked, with an event, and
// the decision is taken again without it: the schedule's other queries go
// on in the same pass.
func (r *ElasticScheduleReconciler) dispatch(ctx context.Context, v *view, dqs []dispatch.Query, p *passResult) (pass.Actions, *dispatch.Step, error) {
	for held := 0; ; held++ {
		decision, created, err := r.dispatchOnce(ctx, v, dqs, p)
		var rejected *rejectedQuery
		// Each round holds one more query, so it ends; the bound only
		// guards against a decision that would pick a held query.
		if !errors.As(err, &rejected) || held > len(dqs) {
			return decision, created, err
		}
		q := queryNamed(v.queries, rejected.query)
		r.Refusals.reject(q, rejected.err)
		log.FromContext(ctx).Info("holding a query whose template cannot become a step", "query", q.Name, "error", rejected.err.Error())
		p.note(corev1.EventTypeWarning, laxityv1alpha1.InvalidTemplateReason, "Launch",
			fmt.Sprintf("IntermittentQuery %s is not run until its spec changes: %v", q.Name, rejected.err))
		for i := range dqs {
			if dqs[i].Name == q.Name {
				dqs[i].Held = true
			}
		}
	}
}

// dispatchOnce is one decision and launch of dispatch. A launch its
// query's template keeps from happening is a *rejectedQuery.
func (r *ElasticScheduleReconciler) dispatchOnce(ctx context.Context, v *view, dqs []dispatch.Query, p *passResult) (_ pass.Actions, created *dispatch.Step, _ error) {
	es, now := v.es, v.now
	decision := pass.Act(v.snapshot(r.Options), dqs)
	current := decision.Pool
	logger := log.FromContext(ctx)
	if decision.Decision.Launch == nil {
		logger.V(1).Info("nothing to launch", "why", decision.Decision.Why, "readyNodes", current.Ready, "comingNodes", current.Coming, "exhausted", decision.Decision.Exhausted)
		return decision, nil, nil
	}
	l := decision.Decision.Launch
	logger.V(1).Info("dispatch decision", "why", decision.Decision.Why, "query", l.Query, "kind", l.Kind, "index", l.Index, "attempt", l.Attempt, "nodes", l.Nodes, "slack", l.Slack, "members", l.Members)
	// A shared batch is one step of its first member, owned by every
	// member; its input is resolved once, from that member's source.
	q := queryNamed(v.queries, l.Query)
	var members []*laxityv1alpha1.IntermittentQuery
	for _, m := range l.Members {
		members = append(members, queryNamed(v.queries, m))
	}
	if len(members) > 0 {
		q = members[0]
	}
	launched := v.launched[q.Name]
	step := sparkapp.Step{
		Kind: l.Kind, Index: l.Index, Attempt: l.Attempt, NamesTaken: l.NamesTaken,
		FromTuple: l.FromTuple, ToTuple: l.ToTuple, Inputs: l.Inputs,
		Nodes: int32(l.Nodes), ReadyNodes: int32(l.Fills), LaunchedAt: now,
		Members: l.Members, SideBySide: l.SideBySide, Lane: l.Lane,
	}
	step.InputLocations = inputLocations(launched, step)
	if slicer, ok := v.inputs[q.Name].src.(source.Slicer); ok && l.Kind == planner.StepBatch {
		var err error
		if step.Slice, step.ToTuple, err = batchSlice(ctx, slicer, launched, *l, now); err != nil {
			return decision, nil, fmt.Errorf("IntermittentQuery %s: batch %d: %w", q.Name, l.Index, err)
		}
	}
	// A name an object laxity does not own already has is never taken
	// over: that object is left alone and reported, and the step is
	// launched under its next attempt's name (-r<n>), the same step with
	// the same tuple range and input. The attempt number passed over is
	// recorded on the step (NamesTaken) and is not charged as a failure,
	// so squatting neither costs a try nor stops the query; the foreign
	// object is never read as the step, so nothing runs twice or is lost.
	// At most maxNamesTaken names are passed over in one pass.
	handedOver := false
	for taken := 0; ; taken++ {
		app, err := sparkapp.Render(q, es, step, sparkapp.Locations{Input: q.Spec.Input.Location, ResultRoot: r.Options.ResultRoot})
		if templateRejected(err) {
			return decision, nil, &rejectedQuery{query: q.Name, err: err}
		}
		if err != nil {
			return decision, nil, err
		}
		if len(members) > 0 {
			steprun.OwnMembers(app, members)
		}
		if _, gone := r.cancelled.Load(es.Namespace + "/" + app.GetName()); gone {
			// Deleted as stuck; the cache has not shown its record yet.
			logger.Info("holding a launch: the step was cancelled as stuck and its record is not seen yet", "step", app.GetName())
			return decision, nil, nil
		}
		if err := r.holdMembers(ctx, es, members); err != nil {
			return decision, nil, err
		}
		if !handedOver {
			// Failing to, the executors preempt the pods holding the
			// nodes: the step still launches.
			if err := p.keep(r.handOver(ctx, es, int32(l.Nodes), p)); err != nil {
				return decision, nil, err
			}
			handedOver = true
		}
		// A job run whose start failed after its record was written is
		// launched: the next pass starts it.
		made, squatter, err := r.launch(ctx, es, q, app, now)
		if squatter != "" {
			message := fmt.Sprintf("%s of IntermittentQuery %s: the name %s is taken by %s, which laxity does not own; it is left alone, and the step runs as attempt %d instead, not counted as a failure",
				stepTitle(l.Kind, l.Index), q.Name, app.GetName(), squatter, step.Attempt+1)
			logger.Info("step name taken", "query", q.Name, "step", app.GetName(), "takenBy", squatter, "nextAttempt", step.Attempt+1)
			p.note(corev1.EventTypeWarning, laxityv1alpha1.StepNameTakenReason, "Launch", message)
			if taken+1 >= maxNamesTaken {
				return decision, nil, fmt.Errorf("IntermittentQuery %s: %s: %d attempt names in a row are taken by objects laxity does not own", q.Name, stepTitle(l.Kind, l.Index), maxNamesTaken)
			}
			step.Attempt++
			step.NamesTaken++
			continue
		}
		if templateRejected(err) {
			return decision, nil, &rejectedQuery{query: q.Name, err: fmt.Errorf("IntermittentQuery %s/%s: spec.sparkApplication: %w", q.Namespace, q.Name, err)}
		}
		if !made {
			return decision, nil, err
		}
		recordLaunch(es, l.Kind)
		served := l.Query
		if len(l.Members) > 0 {
			served = "shared by " + strings.Join(l.Members, ", ")
		}
		message := fmt.Sprintf("Launched %s on %d nodes (%s %d of %s, tuples [%d, %d), slack %s)",
			app.GetName(), l.Nodes, l.Kind, l.Index, served, step.FromTuple, step.ToTuple, l.Slack.Round(time.Second))
		kind := "Launched"
		if step.Attempt > step.NamesTaken {
			kind = "Retried"
		}
		logger.Info(strings.ToLower(kind), "query", q.Name, "step", app.GetName(), "kind", l.Kind, "index", l.Index, "attempt", step.Attempt,
			"nodes", l.Nodes, "readyNodes", current.Ready, "fromTuple", step.FromTuple, "toTuple", step.ToTuple, "slack", l.Slack.Round(time.Second))
		p.note(corev1.EventTypeNormal, kind, "Launch", message)
		return decision, l, err
	}
}

// holdMembers gives every member of a shared batch but its first (which
// the runner's Launch gives it) the runner's finalizer, when the runner
// has one: the step outlives the cluster's objects (a job run), and
// whichever member is deleted last must cancel it.
func (r *ElasticScheduleReconciler) holdMembers(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, members []*laxityv1alpha1.IntermittentQuery) error {
	finalizer := r.Runner(es).Finalizer()
	if finalizer == "" || len(members) < 2 {
		return nil
	}
	for _, m := range members[1:] {
		if controllerutil.AddFinalizer(m, finalizer) {
			if err := r.Update(ctx, m); err != nil {
				return fmt.Errorf("adding finalizer %s to %s, a member of a shared batch: %w", finalizer, m.Name, err)
			}
		}
	}
	return nil
}

// maxNamesTaken bounds the attempt names passed over in one pass: names
// taken by the dozen are someone's doing, better stopped at and reported.
const maxNamesTaken = 5

// stepTitle names a step for messages: "Batch 3", "Partial merge 1", "The
// final merge".
func stepTitle(kind planner.StepKind, index int) string {
	switch kind {
	case planner.StepBatch:
		return fmt.Sprintf("Batch %d", index)
	case planner.StepPartial:
		return fmt.Sprintf("Partial merge %d", index)
	}
	return "The final merge"
}

// batchSlice is the exact input of batch l of a query whose source slices
// its stream: a retry reads what the failed attempt read, a new batch
// continues from where the batch before it ended, as recorded on that
// batch's SparkApplication. It also returns the batch's tuple range end,
// which follows what the slice holds.
func batchSlice(ctx context.Context, slicer source.Slicer, launched launchedSteps, l dispatch.Step, now time.Time) (map[string]string, int64, error) {
	batches := launched.batches
	if l.Index < len(batches) {
		tried := batches[l.Index].step
		if tried.Slice == nil {
			return nil, 0, fmt.Errorf("its attempt %d records no input slice to retry", tried.Attempt)
		}
		return tried.Slice, tried.ToTuple, nil
	}
	var previous map[string]string
	if l.Index > 0 {
		if previous = batches[l.Index-1].step.Slice; previous == nil {
			return nil, 0, fmt.Errorf("batch %d records no input slice to continue from", l.Index-1)
		}
	}
	slice, taken, err := slicer.Slice(ctx, now, previous, l.ToTuple-l.FromTuple)
	if err != nil {
		return nil, 0, err
	}
	if taken <= 0 {
		return nil, 0, fmt.Errorf("no tuples of [%d, %d) are there to read", l.FromTuple, l.ToTuple)
	}
	return slice, l.FromTuple + taken, nil
}

// inputLocations are the results a merge combines: a partial merge the
// batches since the previous one, the final merge the partials and the
// batches after the last one.
func inputLocations(launched launchedSteps, step sparkapp.Step) []string {
	if step.Kind == planner.StepBatch {
		return nil
	}
	batches, partials := launched.batches, launched.partials
	var out []string
	if step.Kind == planner.StepPartial {
		c := step.Inputs
		for _, b := range batches[min(step.Index*c, len(batches)):min((step.Index+1)*c, len(batches))] {
			out = append(out, b.result)
		}
		return out
	}
	for _, p := range partials {
		out = append(out, p.result)
	}
	covered := 0
	if len(partials) > 0 && len(batches) > 0 {
		covered = len(batches) - (step.Inputs - len(partials))
	}
	for _, b := range batches[min(max(covered, 0), len(batches)):] {
		out = append(out, b.result)
	}
	return out
}
