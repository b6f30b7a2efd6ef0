package controllers

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/learn"
	"github.com/laxity-dev/laxity/internal/spec"
)

// learnFrom brings what the query learned up to date (status.learned): the
// cost model fitted to its finished steps, and to those of its
// RecurringQuery's earlier windows, with the declared model as the prior;
// the margin sized from their spread; and whether plans use it. Plans use a
// learned model only when the schedule applies what it learns and the model
// differs materially from the declared one, or this window's steps run
// slower than it: a cluster that runs as its model says is planned as
// before.
func (r *IntermittentQueryReconciler) learnFrom(ctx context.Context, q *laxityv1alpha1.IntermittentQuery, es *laxityv1alpha1.ElasticSchedule, now metav1.Time) error {
	defer recordLearned(q)
	// A finished window has learned all it will: what later windows learn
	// is theirs, and its record stays as it was when it ended.
	if f, l := q.Status.Final, q.Status.Learned; f != nil && f.Outcome == laxityv1alpha1.StepSucceeded && l != nil &&
		spec.Learning(es) != laxityv1alpha1.LearningOff && len(l.Observations) == min(len(spec.Observations(q)), laxityv1alpha1.MaxObservations) {
		return nil
	}
	inherited, err := inheritedObservations(ctx, r.Client, q)
	if err != nil {
		return err
	}
	next, changed := learnedModel(q, es, inherited, now)
	if changed && spec.Learning(es) == laxityv1alpha1.LearningObserve && r.Recorder != nil {
		r.Recorder.Eventf(q, nil, corev1.EventTypeNormal, laxityv1alpha1.ModelLearnedReason, "Learn",
			"Learned from the steps that ran (%s); not applied, since spec.planning.learning of ElasticSchedule %s is Observe",
			learnedSummary(next), es.Name)
	}
	q.Status.Learned = next
	return nil
}

// learnedModel is what q has learned, from its own window's finished steps
// and the inherited observations of its RecurringQuery's earlier windows,
// nil when nothing; changed says whether it differs materially from what
// q's status holds. The schedule prices a new window with it before the
// window's own controller has written it, so that the window's first plan
// already knows what the earlier ones learned.
func learnedModel(q *laxityv1alpha1.IntermittentQuery, es *laxityv1alpha1.ElasticSchedule, inherited []laxityv1alpha1.StepObservation, now metav1.Time) (next *laxityv1alpha1.LearnedModel, changed bool) {
	mode := spec.Learning(es)
	previous := q.Status.Learned
	if mode == laxityv1alpha1.LearningOff {
		return nil, previous != nil
	}
	declared, err := spec.CostModel(q)
	if err != nil {
		// The schedule reports the spec's errors.
		return previous, false
	}
	own := spec.Observations(q)
	all := slices.Concat(inherited, own)
	if len(all) == 0 {
		return nil, previous != nil
	}
	l, applies := learn.Window(declared, spec.ToLearn(inherited), spec.ToLearn(own), spec.LearnSettings(es))
	applied := mode == laxityv1alpha1.LearningApply && applies
	observations := spec.ToLearn(all)
	next = spec.LearnedStatus(l, own, applied)
	if previous != nil {
		next.LastChange = previous.LastChange
	}
	if changed = material(previous, l, observations); changed {
		next.LastChange = &now
	}
	return next, changed
}

// material says whether l differs from the previously learned model by more
// than the re-plan tolerance, at the observations' steps.
func material(previous *laxityv1alpha1.LearnedModel, l learn.Learned, at []learn.Observation) bool {
	was, ok := spec.ParseLearned(previous)
	if !ok {
		return true
	}
	return learn.Change(was, l, at) > learn.DefaultTolerance
}

// inheritedObservations are the observations of the windows of the query's
// RecurringQuery (its controller owner) that started before the query's,
// none for a standalone query.
func inheritedObservations(ctx context.Context, c client.Reader, q *laxityv1alpha1.IntermittentQuery) ([]laxityv1alpha1.StepObservation, error) {
	owner := metav1.GetControllerOf(q)
	if owner == nil || owner.Kind != "RecurringQuery" || owner.APIVersion != laxityv1alpha1.GroupVersion.String() {
		return nil, nil
	}
	var rq laxityv1alpha1.RecurringQuery
	if err := c.Get(ctx, client.ObjectKey{Namespace: q.Namespace, Name: owner.Name}, &rq); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading RecurringQuery %s: %w", owner.Name, err)
	}
	if rq.UID != owner.UID || rq.Status.Learned == nil {
		return nil, nil
	}
	var out []laxityv1alpha1.StepObservation
	for _, o := range rq.Status.Learned.Observations {
		if o.WindowStart.Before(&q.Spec.Window.Start) {
			out = append(out, o)
		}
	}
	return out, nil
}

// learnAcrossWindows sets what the RecurringQuery learned from its windows
// (status.learned): the observations of its earlier ones, kept, and those
// of its windows still there (the IntermittentQueries it controls, by UID),
// fitted with the template's declared model as
// the prior. Plans use what each window learned (its own status.learned,
// which starts from these observations); this is the record across
// windows, which survives the windows' deletion by the history limits.
func learnAcrossWindows(rq *laxityv1alpha1.RecurringQuery, children []laxityv1alpha1.IntermittentQuery, mode laxityv1alpha1.Learning, now metav1.Time) {
	if mode == laxityv1alpha1.LearningOff {
		rq.Status.Learned = nil
		return
	}
	declared, err := spec.DeclaredCostModel(rq.Spec.Template.CostModel)
	if err != nil {
		return
	}
	type key struct {
		window time.Time
		kind   laxityv1alpha1.StepKind
		index  int32
	}
	seen := map[key]bool{}
	var all []laxityv1alpha1.StepObservation
	add := func(o laxityv1alpha1.StepObservation) {
		k := key{o.WindowStart.UTC(), o.Kind, o.Index}
		if !seen[k] {
			seen[k] = true
			all = append(all, o)
		}
	}
	if rq.Status.Learned != nil {
		for _, o := range rq.Status.Learned.Observations {
			add(o)
		}
	}
	for i := range children {
		q := &children[i]
		// Only the recurring query's own windows teach it: an
		// IntermittentQuery whose controller is this RecurringQuery (its
		// UID, so not one of an object deleted and re-created under the
		// same name), not one that merely carries its label or a window's
		// name, and only what it observed of its own window.
		if !metav1.IsControlledBy(q, rq) || q.Status.Learned == nil {
			continue
		}
		for _, o := range q.Status.Learned.Observations {
			if o.WindowStart.Equal(&q.Spec.Window.Start) {
				add(o)
			}
		}
	}
	if len(all) == 0 {
		return
	}
	kindOrder := map[laxityv1alpha1.StepKind]int{laxityv1alpha1.StepKindBatch: 0, laxityv1alpha1.StepKindPartial: 1, laxityv1alpha1.StepKindFinal: 2}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if !a.WindowStart.Equal(&b.WindowStart) {
			return a.WindowStart.Before(&b.WindowStart)
		}
		if a.Kind != b.Kind {
			return kindOrder[a.Kind] < kindOrder[b.Kind]
		}
		return a.Index < b.Index
	})
	if n := len(all); n > laxityv1alpha1.MaxObservations {
		all = all[n-laxityv1alpha1.MaxObservations:]
	}
	observations := spec.ToLearn(all)
	l := learn.Fit(declared, observations, learn.Defaults)
	previous := rq.Status.Learned
	next := spec.LearnedStatus(l, all, mode == laxityv1alpha1.LearningApply)
	if previous != nil {
		next.LastChange = previous.LastChange
	}
	if material(previous, l, observations) {
		next.LastChange = &now
	}
	rq.Status.Learned = next
}
