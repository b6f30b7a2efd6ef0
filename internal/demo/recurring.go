package demo

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/controllers"
	"github.com/laxity-dev/laxity/internal/recurrence"
)

// DefaultWindows is how many windows of each RecurringQuery the demo runs
// unless told otherwise: learning takes the first two, the third shows
// what was learned.
const DefaultWindows = 3

// MaxWindows bounds Options.Windows: as many windows as a RecurringQuery
// can keep in its history.
const MaxWindows = 100

// recurringEpoch is the fixed instant the clock of a workload of
// RecurringQueries only is derived from (see clockStart): any instant
// would do, a fixed one makes every run start at the same simulated time.
var recurringEpoch = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// recurring is one RecurringQuery of the run and the windows it created.
type recurring struct {
	object   *laxityv1alpha1.RecurringQuery
	schedule *recurrence.Schedule
	// windows are the names of the windows the demo runs, oldest first: the
	// first Options.Windows the RecurringQuery created.
	windows []string
	// dropped are the windows created beyond those, which the demo deleted
	// before they started.
	dropped map[string]bool
	// suspended is set once the demo has set spec.suspend.
	suspended bool
	// learned is each window's status.learned.slowdownPercent as read when
	// it was first seen finished (the RecurringQuery's when the window had
	// none).
	learned map[string]string
}

func (rq *recurring) key() string { return rq.object.Namespace + "/" + rq.object.Name }

// owns says whether q is one of rq's windows.
func (rq *recurring) owns(q *laxityv1alpha1.IntermittentQuery) bool {
	return q.Labels[controllers.LabelRecurringQuery] == rq.object.Name && metav1.IsControlledBy(q, rq.object)
}

// prepareRecurring readies a RecurringQuery of the workload for the demo:
// its template's input becomes the synthetic stream, and its history
// limits keep every window the demo runs, so that the report can read them
// all back at the end. It says what it changed.
func prepareRecurring(rq *laxityv1alpha1.RecurringQuery, windows int) []string {
	var changed []string
	if f := simulateInput("spec.template.input", &rq.Spec.Template.Input); f != "" {
		changed = append(changed, "simulates "+f+" with tuples at the declared rate")
	}
	for i := range rq.Spec.Template.Inputs {
		if f := simulateInput(fmt.Sprintf("spec.template.inputs[%d]", i), &rq.Spec.Template.Inputs[i].Input); f != "" {
			changed = append(changed, "simulates "+f+" with tuples at the declared rate")
		}
	}
	keep := int32(windows)
	if ptr.Deref(rq.Spec.SuccessfulWindowsHistoryLimit, 3) < keep || ptr.Deref(rq.Spec.FailedWindowsHistoryLimit, 1) < keep {
		rq.Spec.SuccessfulWindowsHistoryLimit = ptr.To(max(ptr.Deref(rq.Spec.SuccessfulWindowsHistoryLimit, 3), keep))
		rq.Spec.FailedWindowsHistoryLimit = ptr.To(max(ptr.Deref(rq.Spec.FailedWindowsHistoryLimit, 1), keep))
		changed = append(changed, fmt.Sprintf("keeps all %d windows it runs (spec.successfulWindowsHistoryLimit and failedWindowsHistoryLimit at least %d) for the report", windows, windows))
	}
	return changed
}

// clockStart is when the clock of a workload of RecurringQueries only
// starts: a provisioning lead time and a minute before the earliest first
// window that starts at least that long after recurringEpoch, so that the
// first window's nodes can be there when it opens, as the first window's
// of IntermittentQueries are.
func clockStart(recurrings []*recurring, lead time.Duration) time.Time {
	before := lead + time.Minute
	var first time.Time
	for _, rq := range recurrings {
		if s := rq.schedule.Next(recurringEpoch.Add(before)); !s.IsZero() && (first.IsZero() || s.Before(first)) {
			first = s
		}
	}
	if first.IsZero() {
		return recurringEpoch
	}
	return first.Add(-before).Truncate(time.Minute)
}

// lastDeadline is when the last window the demo runs of rq is due, when
// the clock starts at start.
func (rq *recurring) lastDeadline(start time.Time, windows int) time.Time {
	starts := rq.schedule.Starts(start, windows)
	if len(starts) == 0 {
		return start
	}
	return starts[len(starts)-1].Add(rq.object.Spec.WindowLength.Duration + rq.object.Spec.DeadlineAfterWindowEnd.Duration)
}

// discover refreshes the queries of every schedule from the cluster: the
// workload's IntermittentQueries and the windows the RecurringQueries
// created so far. Once a RecurringQuery has created the windows the demo
// runs, it is suspended, and windows created beyond them are deleted before
// they start.
func (r *run) discover(ctx context.Context) error {
	for _, s := range r.schedules {
		var list laxityv1alpha1.IntermittentQueryList
		if err := r.reader.List(ctx, &list, client.InNamespace(s.object.Namespace)); err != nil {
			return fmt.Errorf("listing the IntermittentQueries of namespace %s: %w", s.object.Namespace, err)
		}
		slices.SortFunc(list.Items, func(a, b laxityv1alpha1.IntermittentQuery) int { return strings.Compare(a.Name, b.Name) })
		var queries []*laxityv1alpha1.IntermittentQuery
		for _, applied := range s.applied {
			i := slices.IndexFunc(list.Items, func(q laxityv1alpha1.IntermittentQuery) bool { return q.Name == applied.Name })
			if i < 0 {
				// Not in the cache yet: as applied, unfinished.
				queries = append(queries, applied)
				continue
			}
			queries = append(queries, &list.Items[i])
		}
		for _, rq := range s.recurring {
			var windows []*laxityv1alpha1.IntermittentQuery
			for i := range list.Items {
				q := &list.Items[i]
				if rq.owns(q) && !rq.dropped[q.Name] {
					windows = append(windows, q)
				}
			}
			// Names sort as the windows' starts do.
			for len(windows) > r.windows {
				extra := windows[len(windows)-1]
				if err := r.drop(ctx, rq, extra); err != nil {
					return err
				}
				windows = windows[:len(windows)-1]
			}
			rq.windows = rq.windows[:0]
			for _, q := range windows {
				rq.windows = append(rq.windows, q.Name)
				queries = append(queries, q)
				if _, seen := rq.learned[q.Name]; !seen && queryDone(q) {
					if err := r.noteLearned(ctx, rq, q); err != nil {
						return err
					}
				}
			}
			if len(rq.windows) >= r.windows && !rq.suspended {
				if err := r.suspend(ctx, rq); err != nil {
					return err
				}
			}
		}
		s.queries = queries
	}
	return nil
}

// drop deletes a window created beyond those the demo runs.
func (r *run) drop(ctx context.Context, rq *recurring, q *laxityv1alpha1.IntermittentQuery) error {
	if len(q.Status.Batches) > 0 || len(q.Status.Partials) > 0 || q.Status.Final != nil {
		return fmt.Errorf("RecurringQuery %s: window %s, beyond the %d the demo runs, started before the demo could delete it", rq.key(), q.Name, r.windows)
	}
	err := r.client.Delete(ctx, q, client.Preconditions{UID: &q.UID})
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("RecurringQuery %s: deleting window %s, beyond the %d the demo runs: %w", rq.key(), q.Name, r.windows, err)
	}
	rq.dropped[q.Name] = true
	r.demoWrites++
	return nil
}

// suspend sets rq's spec.suspend, so that it creates no more windows.
func (r *run) suspend(ctx context.Context, rq *recurring) error {
	var current laxityv1alpha1.RecurringQuery
	if err := r.client.Get(ctx, client.ObjectKeyFromObject(rq.object), &current); err != nil {
		return fmt.Errorf("RecurringQuery %s: reading it to suspend it: %w", rq.key(), err)
	}
	before := current.DeepCopy()
	current.Spec.Suspend = true
	if err := r.client.Patch(ctx, &current, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("RecurringQuery %s: setting spec.suspend after %d windows: %w", rq.key(), r.windows, err)
	}
	rq.suspended = true
	r.demoWrites++
	return nil
}

// noteLearned records the slowdown learned when window q finished: its
// own, or else the RecurringQuery's.
func (r *run) noteLearned(ctx context.Context, rq *recurring, q *laxityv1alpha1.IntermittentQuery) error {
	if l := q.Status.Learned; l != nil && l.SlowdownPercent != "" {
		rq.learned[q.Name] = string(l.SlowdownPercent)
		return nil
	}
	var current laxityv1alpha1.RecurringQuery
	if err := r.reader.Get(ctx, client.ObjectKeyFromObject(rq.object), &current); err != nil {
		return fmt.Errorf("RecurringQuery %s: %w", rq.key(), err)
	}
	rq.learned[q.Name] = ""
	if l := current.Status.Learned; l != nil {
		rq.learned[q.Name] = string(l.SlowdownPercent)
	}
	return nil
}

// queryDone says whether q has finished, or cannot any more.
func queryDone(q *laxityv1alpha1.IntermittentQuery) bool {
	return meta.IsStatusConditionTrue(q.Status.Conditions, laxityv1alpha1.IntermittentQuerySucceededCondition) ||
		meta.IsStatusConditionTrue(q.Status.Conditions, laxityv1alpha1.IntermittentQueryStalledCondition)
}

// windowOutcome is how a window ended, or where it stands: Succeeded,
// Failed (stalled: a step failed on every attempt), Missed (its deadline
// passed with no result), else Running or Pending.
func windowOutcome(q *laxityv1alpha1.IntermittentQuery) laxityv1alpha1.WindowOutcome {
	switch {
	case meta.IsStatusConditionTrue(q.Status.Conditions, laxityv1alpha1.IntermittentQuerySucceededCondition):
		return laxityv1alpha1.WindowSucceeded
	case meta.IsStatusConditionTrue(q.Status.Conditions, laxityv1alpha1.IntermittentQueryStalledCondition):
		return laxityv1alpha1.WindowFailed
	case meta.IsStatusConditionTrue(q.Status.Conditions, laxityv1alpha1.IntermittentQueryDeadlineMissedCondition):
		return laxityv1alpha1.WindowMissed
	case len(q.Status.Batches) > 0 || len(q.Status.Partials) > 0 || q.Status.Final != nil:
		return laxityv1alpha1.WindowRunning
	}
	return laxityv1alpha1.WindowPending
}
