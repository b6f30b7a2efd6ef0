package controllers

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/recurrence"
	"github.com/laxity-dev/laxity/internal/spec"
)

// The label and annotation of every window's IntermittentQuery.
const (
	// LabelRecurringQuery names the RecurringQuery a window belongs to.
	LabelRecurringQuery = spec.LabelRecurringQuery
	// AnnotationWindowStart is the window's start, RFC 3339.
	AnnotationWindowStart = spec.AnnotationWindowStart
)

// Event reasons of a RecurringQuery.
const (
	// ReasonWindowCreated: a window's IntermittentQuery was created.
	ReasonWindowCreated = "WindowCreated"
	// ReasonWindowSkipped: windows missed by more than startingDeadline
	// were skipped.
	ReasonWindowSkipped = "WindowSkipped"
	// ReasonWindowsDeleted: finished windows beyond the history limits
	// were deleted.
	ReasonWindowsDeleted = "WindowsDeleted"
)

// RecurringQueryReconciler stamps out one IntermittentQuery per window of
// a RecurringQuery, windowsAhead windows ahead of time, skips the windows
// missed by more than startingDeadline, deletes the finished ones beyond
// the history limits, and reports the recent windows. The decisions are
// internal/recurrence's; this observes and acts.
type RecurringQueryReconciler struct {
	client.Client
	Clock   clock.PassiveClock
	Options Options
	// Recorder records the recurring query's events; nil records none.
	Recorder events.EventRecorder
}

// +kubebuilder:rbac:groups=laxity.dev,resources=recurringqueries,verbs=get;list;watch
// +kubebuilder:rbac:groups=laxity.dev,resources=recurringqueries/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=laxity.dev,resources=intermittentqueries,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=laxity.dev,resources=elasticschedules,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile reads the recurring query and its windows once, decides with
// internal/recurrence, acts, and writes the status once.
func (r *RecurringQueryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var rq laxityv1alpha1.RecurringQuery
	if err := r.Get(ctx, req.NamespacedName, &rq); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !rq.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // its windows go with it, by their owner references
	}
	now := r.Clock.Now()
	before := rq.DeepCopy()
	p, err := r.reconcile(ctx, &rq, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	rq.Status.ObservedGeneration = rq.Generation
	if !equality.Semantic.DeepEqual(before.Status, rq.Status) {
		// The status is the only record of skipped windows and of the last
		// start: a pass that read a stale copy must not write over a newer
		// one (a merge patch replaces the whole list of windows), so the
		// write is conditional on the version read, and a conflict is a
		// pass taken again, its events unsent.
		lock := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
		if err := r.Status().Patch(ctx, &rq, lock); apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: r.Options.realDelay(time.Second)}, nil
		} else if err != nil {
			return ctrl.Result{}, fmt.Errorf("writing the status: %w", err)
		}
	}
	if r.Recorder != nil {
		for _, e := range p.events {
			r.Recorder.Eventf(&rq, nil, e.kind, e.reason, e.action, "%s", e.message)
		}
	}
	if p.wakeAt.IsZero() {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: r.Options.realDelay(max(p.wakeAt.Sub(now), time.Second))}, nil
}

// recurringPass is what one pass did, to report once the status is written.
type recurringPass struct {
	events []note
	wakeAt time.Time
}

func (p *recurringPass) event(kind, reason, action, format string, args ...any) {
	p.events = append(p.events, note{kind: kind, reason: reason, action: action, message: fmt.Sprintf(format, args...)})
}

func (r *RecurringQueryReconciler) reconcile(ctx context.Context, rq *laxityv1alpha1.RecurringQuery, now time.Time) (*recurringPass, error) {
	p := &recurringPass{}
	// A copy: the conditions below are set in place.
	var prevReady *metav1.Condition
	if c := meta.FindStatusCondition(rq.Status.Conditions, laxityv1alpha1.RecurringQueryReadyCondition); c != nil {
		prevReady = c.DeepCopy()
	}
	children, err := r.windows(ctx, rq)
	if err != nil {
		return nil, err
	}
	schedule, err := recurrence.Validate(recurrence.Spec{
		Schedule: rq.Spec.Schedule, TimeZone: rq.Spec.TimeZone, WindowLength: rq.Spec.WindowLength.Duration,
	})
	if err != nil {
		windowsStatus(rq, children, nil, nil)
		setRecurringStalled(rq, laxityv1alpha1.InvalidSpecReason, err.Error())
		p.warnOnChange(prevReady, rq, "Validate")
		return p, nil
	}
	// Template metadata that got past admission (a CRD installed before
	// its rules, or a rule the API server could not run) would make every
	// window's creation fail: it is reported, naming the field, and no
	// window is created.
	if err := templateMetadataErrors(rq); err != nil {
		windowsStatus(rq, children, nil, nil)
		setRecurringStalled(rq, laxityv1alpha1.InvalidTemplateReason, err.Error())
		p.warnOnChange(prevReady, rq, "Validate")
		return p, nil
	}
	var es laxityv1alpha1.ElasticSchedule
	switch err := r.Get(ctx, client.ObjectKey{Namespace: rq.Namespace, Name: rq.Spec.Template.ScheduleName}, &es); {
	case apierrors.IsNotFound(err):
		// Windows would wait for a schedule that does not exist; create
		// none until it does (its creation wakes the recurring query).
		windowsStatus(rq, children, nil, nil)
		setRecurringStalled(rq, laxityv1alpha1.ScheduleNotFoundReason, fmt.Sprintf(
			"spec.template.scheduleName: ElasticSchedule %q not found in namespace %s", rq.Spec.Template.ScheduleName, rq.Namespace))
		p.warnOnChange(prevReady, rq, "Validate")
		return p, nil
	case err != nil:
		return nil, fmt.Errorf("reading the schedule: %w", err)
	}
	// Windows that could not run are not created: while the schedule is
	// stalled, or a window of the same template is refused.
	scheduleBlock := scheduleBlocking(&es)
	windowBlock := refusedWindow(rq, children)

	windowsAhead := int(ptr.Deref(rq.Spec.WindowsAhead, 2))
	in := recurrence.Input{
		Name: rq.Name, Schedule: schedule, WindowLength: rq.Spec.WindowLength.Duration,
		WindowsAhead: windowsAhead, Suspend: rq.Spec.Suspend,
		MaxActive:       int(ptr.Deref(rq.Spec.MaxActiveWindows, int32(recurrence.DefaultMaxActive(windowsAhead)))),
		Blocked:         scheduleBlock != "" || windowBlock != "",
		SuccessfulLimit: int(ptr.Deref(rq.Spec.SuccessfulWindowsHistoryLimit, 3)),
		FailedLimit:     int(ptr.Deref(rq.Spec.FailedWindowsHistoryLimit, 1)),
		Instances:       instances(rq, children),
		Now:             now,
		// The one part of the status read back, as a CronJob reads its
		// lastScheduleTime: windows the history limits deleted leave no
		// other trace, and must not be created again. Before the first
		// window, windows start after laxity first sees the object.
		Since: now,
	}
	if t := rq.Status.LastScheduleTime; t != nil {
		in.Since = t.Time
	}
	if d := rq.Spec.StartingDeadline; d != nil {
		in.StartingDeadline = &d.Duration
	}
	d, decideErr := recurrence.Decide(in)
	p.wakeAt = d.WakeAt

	taken := map[string]bool{}
	for _, w := range d.Taken {
		taken[w.Name] = true
	}
	var refused error
	for _, w := range d.Create {
		iq, err := renderWindow(rq, w, r.Scheme())
		if err != nil {
			return nil, err
		}
		switch err := r.Create(ctx, iq); {
		case apierrors.IsAlreadyExists(err):
			// Ours from a pass whose status write failed, or someone
			// else's: only the latter is reported.
			var existing laxityv1alpha1.IntermittentQuery
			if err := r.Get(ctx, client.ObjectKeyFromObject(iq), &existing); err != nil {
				return nil, fmt.Errorf("reading window %s: %w", iq.Name, err)
			}
			if !metav1.IsControlledBy(&existing, rq) {
				taken[iq.Name] = true
				continue
			}
			children = append(children, existing)
		case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
			// The API server refuses the window as the template makes it:
			// retrying cannot help until the spec changes.
			refused = fmt.Errorf("spec.template: the API server refused window %s: %w", iq.Name, err)
		case err != nil:
			return nil, fmt.Errorf("creating window %s: %w", iq.Name, err)
		default:
			children = append(children, *iq)
			p.event(corev1.EventTypeNormal, ReasonWindowCreated, "Create", "Created IntermittentQuery %s for the window %s to %s, due %s",
				iq.Name, w.Start.Format(time.RFC3339), w.End.Format(time.RFC3339), iq.Spec.Deadline.UTC().Format(time.RFC3339))
		}
		if refused != nil {
			break
		}
	}
	// Before the history limits delete any window: what the windows
	// learned outlives them.
	learnAcrossWindows(rq, children, spec.Learning(&es), metav1.Time{Time: now})
	var deleted []string
	for _, name := range d.Delete {
		i := slices.IndexFunc(children, func(q laxityv1alpha1.IntermittentQuery) bool { return q.Name == name })
		q := children[i]
		// The UID precondition: never a different object that took the
		// name since the list.
		err := r.Delete(ctx, &q, client.Preconditions{UID: &q.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("deleting window %s: %w", name, err)
		}
		deleted = append(deleted, name)
		children = slices.Delete(children, i, i+1)
	}
	if len(deleted) > 0 {
		p.event(corev1.EventTypeNormal, ReasonWindowsDeleted, "Delete", "Deleted finished windows beyond the history limits: %s", strings.Join(deleted, ", "))
	}
	var skipped []laxityv1alpha1.RecurringWindow
	for _, run := range d.Skipped {
		message := skipMessage(rq, run)
		// One entry and one event for the whole run, however many starts
		// it holds.
		skipped = append(skipped, laxityv1alpha1.RecurringWindow{Start: metav1.NewTime(run.Last), Outcome: laxityv1alpha1.WindowSkipped, Message: message})
		p.event(corev1.EventTypeWarning, ReasonWindowSkipped, "Skip", "%s", message)
	}

	windowsStatus(rq, children, skipped, &es)
	if !d.Since.IsZero() && refused == nil {
		rq.Status.LastScheduleTime = &metav1.Time{Time: d.Since}
	}
	rq.Status.NextWindow = nil
	if !d.Next.IsZero() {
		rq.Status.NextWindow = &metav1.Time{Time: d.Next}
	}

	if se, ok := recurrence.IsSpecError(decideErr); ok {
		setRecurringStalled(rq, laxityv1alpha1.InvalidSpecReason, se.Error())
		p.warnOnChange(prevReady, rq, "Validate")
		return p, nil
	} else if decideErr != nil {
		return nil, decideErr
	}
	switch {
	case refused != nil:
		setRecurringStalled(rq, laxityv1alpha1.InvalidTemplateReason, refused.Error())
		p.warnOnChange(prevReady, rq, "Create")
		return p, nil
	case windowBlock != "":
		setRecurringStalled(rq, laxityv1alpha1.WindowStalledReason, windowBlock)
		p.warnOnChange(prevReady, rq, "Create")
		return p, nil
	}
	meta.RemoveStatusCondition(&rq.Status.Conditions, laxityv1alpha1.RecurringQueryStalledCondition)
	switch {
	case scheduleBlock != "":
		setRecurringReady(rq, metav1.ConditionFalse, laxityv1alpha1.ScheduleStalledReason, scheduleBlock)
		p.warnOnChange(prevReady, rq, "Create")
	case len(taken) > 0:
		names := slices.Sorted(maps.Keys(taken))
		message := fmt.Sprintf("IntermittentQueries not owned by this RecurringQuery hold the names of its windows, which do not run: %s", strings.Join(names, ", "))
		setRecurringReady(rq, metav1.ConditionFalse, laxityv1alpha1.WindowNameTakenReason, message)
		p.event(corev1.EventTypeWarning, laxityv1alpha1.WindowNameTakenReason, "Create", "%s", message)
	case rq.Spec.Suspend:
		setRecurringReady(rq, metav1.ConditionTrue, laxityv1alpha1.SuspendedReason, "Suspended: no new window is created")
	case d.Waiting > 0:
		setRecurringReady(rq, metav1.ConditionTrue, laxityv1alpha1.MaxActiveWindowsReason, fmt.Sprintf(
			"%d window(s) ahead wait: %d windows are unfinished, spec.maxActiveWindows is %d; a window ahead is created when one finishes, or skipped if its start passes first",
			d.Waiting, d.Active, in.MaxActive))
	default:
		message := "The windows ahead exist"
		if rq.Status.NextWindow != nil {
			message += "; the next is created when the one before it starts, at " + d.WakeAt.UTC().Format(time.RFC3339)
		}
		setRecurringReady(rq, metav1.ConditionTrue, laxityv1alpha1.WindowsScheduledReason, message)
	}
	return p, nil
}

// warnOnChange records a Warning event with the Ready condition's reason
// and message when they differ from prev, the condition before the pass:
// once per change, not once per pass.
func (p *recurringPass) warnOnChange(prev *metav1.Condition, rq *laxityv1alpha1.RecurringQuery, action string) {
	now := meta.FindStatusCondition(rq.Status.Conditions, laxityv1alpha1.RecurringQueryReadyCondition)
	if now == nil || (prev != nil && prev.Reason == now.Reason && prev.Message == now.Message) {
		return
	}
	p.event(corev1.EventTypeWarning, now.Reason, action, "%s", now.Message)
}

// skipMessage says which starts a run of skipped ones holds, and why.
func skipMessage(rq *laxityv1alpha1.RecurringQuery, run recurrence.Skip) string {
	count := strconv.Itoa(run.Count)
	if run.AtLeast {
		count = "more than " + count
	}
	span := run.First.UTC().Format(time.RFC3339)
	if !run.Last.Equal(run.First) {
		span = "from " + span + " to " + run.Last.UTC().Format(time.RFC3339)
	} else {
		span = "at " + span
	}
	switch run.Reason {
	case recurrence.SkipMaxActive:
		return fmt.Sprintf("Skipped the window starting %s: spec.maxActiveWindows (%d) windows were unfinished when it was due",
			span, ptr.Deref(rq.Spec.MaxActiveWindows, int32(recurrence.DefaultMaxActive(int(ptr.Deref(rq.Spec.WindowsAhead, 2))))))
	default:
		why := "only the most recent missed start runs late"
		if d := rq.Spec.StartingDeadline; d != nil {
			why += fmt.Sprintf(", and only within spec.startingDeadline (%s)", d.Duration)
		}
		return fmt.Sprintf("Skipped %s window(s) starting %s, missed while suspended, blocked or with the manager down: %s", count, span, why)
	}
}

// scheduleBlocking says why the schedule could not run a window now ("" when
// it could): it is Stalled for a reason other than NoFeasiblePlan. A
// schedule without a plan meeting every deadline still runs its queries,
// and its windows may be what made it infeasible, so it does not block.
func scheduleBlocking(es *laxityv1alpha1.ElasticSchedule) string {
	c := meta.FindStatusCondition(es.Status.Conditions, laxityv1alpha1.ElasticScheduleStalledCondition)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason == laxityv1alpha1.NoFeasiblePlanReason {
		return ""
	}
	return fmt.Sprintf("spec.template.scheduleName: ElasticSchedule %s is Stalled with reason %s, so it could not run a window; no window is created until it can: %s",
		es.Name, c.Reason, c.Message)
}

// refusedWindow says which of the recurring query's unfinished windows is
// Stalled, and why ("" when none is): every window has the same template,
// so the next would be refused as well.
func refusedWindow(rq *laxityv1alpha1.RecurringQuery, children []laxityv1alpha1.IntermittentQuery) string {
	for i := len(children) - 1; i >= 0; i-- {
		q := &children[i]
		if !metav1.IsControlledBy(q, rq) {
			continue
		}
		if _, finished := windowOutcome(q); finished {
			continue
		}
		c := meta.FindStatusCondition(q.Status.Conditions, laxityv1alpha1.IntermittentQueryStalledCondition)
		if c == nil || c.Status != metav1.ConditionTrue {
			continue
		}
		return fmt.Sprintf("spec.template: window %s is Stalled with reason %s, and every window has the same template; no further window is created until it is lifted: %s",
			q.Name, c.Reason, c.Message)
	}
	return ""
}

// templateMetadataErrors checks spec.template.metadata as the API server
// checks an object's labels and annotations, naming the field.
func templateMetadataErrors(rq *laxityv1alpha1.RecurringQuery) error {
	path := field.NewPath("spec", "template", "metadata")
	labels := make(map[string]string, len(rq.Spec.Template.Metadata.Labels))
	for k, v := range rq.Spec.Template.Metadata.Labels {
		labels[k] = string(v)
	}
	errs := metav1validation.ValidateLabels(labels, path.Child("labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(rq.Spec.Template.Metadata.Annotations, path.Child("annotations"))...)
	return errs.ToAggregate()
}

// windows lists the IntermittentQueries that claim to be the recurring
// query's windows: labelled with it, or named like one of its windows.
func (r *RecurringQueryReconciler) windows(ctx context.Context, rq *laxityv1alpha1.RecurringQuery) ([]laxityv1alpha1.IntermittentQuery, error) {
	var list laxityv1alpha1.IntermittentQueryList
	if err := r.List(ctx, &list, client.InNamespace(rq.Namespace)); err != nil {
		return nil, fmt.Errorf("listing intermittent queries: %w", err)
	}
	named := regexp.MustCompile("^" + regexp.QuoteMeta(rq.Name) + "-[0-9]{12}$")
	var out []laxityv1alpha1.IntermittentQuery
	for _, q := range list.Items {
		if q.Labels[LabelRecurringQuery] == rq.Name || named.MatchString(q.Name) {
			out = append(out, q)
		}
	}
	slices.SortFunc(out, func(a, b laxityv1alpha1.IntermittentQuery) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// instances are the windows as internal/recurrence sees them.
func instances(rq *laxityv1alpha1.RecurringQuery, children []laxityv1alpha1.IntermittentQuery) []recurrence.Instance {
	out := make([]recurrence.Instance, 0, len(children))
	for i := range children {
		q := &children[i]
		outcome, finished := windowOutcome(q)
		out = append(out, recurrence.Instance{
			Name: q.Name, Start: windowStartOf(q), Owned: metav1.IsControlledBy(q, rq),
			Finished: finished, Succeeded: outcome == laxityv1alpha1.WindowSucceeded,
		})
	}
	return out
}

// windowStartOf is a window's start: its annotation, else its spec.
func windowStartOf(q *laxityv1alpha1.IntermittentQuery) time.Time {
	if t, err := time.Parse(time.RFC3339, q.Annotations[AnnotationWindowStart]); err == nil {
		return t
	}
	return q.Spec.Window.Start.Time
}

// windowOutcome is where a window's IntermittentQuery stands, read from its
// conditions and steps, and whether it is finished: nothing of it runs any
// more and nothing will.
func windowOutcome(q *laxityv1alpha1.IntermittentQuery) (laxityv1alpha1.WindowOutcome, bool) {
	if meta.IsStatusConditionTrue(q.Status.Conditions, laxityv1alpha1.IntermittentQuerySucceededCondition) {
		return laxityv1alpha1.WindowSucceeded, true
	}
	running := false
	launched := len(q.Status.Batches) > 0 || len(q.Status.Partials) > 0 || q.Status.Final != nil
	active := func(o laxityv1alpha1.StepOutcome) {
		if o == laxityv1alpha1.StepPending || o == laxityv1alpha1.StepRunning {
			running = true
		}
	}
	for _, b := range q.Status.Batches {
		active(b.Outcome)
	}
	for _, p := range q.Status.Partials {
		active(p.Outcome)
	}
	if f := q.Status.Final; f != nil {
		active(f.Outcome)
	}
	stalled := meta.FindStatusCondition(q.Status.Conditions, laxityv1alpha1.IntermittentQueryStalledCondition)
	switch {
	case running:
		return laxityv1alpha1.WindowRunning, false
	case stalled != nil && stalled.Status == metav1.ConditionTrue && stalled.Reason == laxityv1alpha1.StepFailedReason:
		return laxityv1alpha1.WindowFailed, true
	case meta.IsStatusConditionTrue(q.Status.Conditions, laxityv1alpha1.IntermittentQueryDeadlineMissedCondition):
		return laxityv1alpha1.WindowMissed, true
	case launched:
		return laxityv1alpha1.WindowRunning, false
	}
	return laxityv1alpha1.WindowPending, false
}

// windowsStatus computes the status of the recent windows from the
// children (and the windows skipped in this pass or recorded before):
// status.windows, newest first, and status.lastOutcome. es is nil when the
// schedule is unknown; costs are then left out.
func windowsStatus(rq *laxityv1alpha1.RecurringQuery, children []laxityv1alpha1.IntermittentQuery, skipped []laxityv1alpha1.RecurringWindow, es *laxityv1alpha1.ElasticSchedule) {
	price := -1.0
	if es != nil {
		if p, err := strconv.ParseFloat(es.Spec.NodePool.PricePerNodeHour, 64); err == nil {
			price = p
		}
	}
	var windows []laxityv1alpha1.RecurringWindow
	for i := range children {
		q := &children[i]
		if !metav1.IsControlledBy(q, rq) {
			continue
		}
		windows = append(windows, windowStatus(q, price))
	}
	// Skipped windows leave no object behind: the status is their record.
	for _, w := range rq.Status.Windows {
		if w.Outcome == laxityv1alpha1.WindowSkipped {
			windows = append(windows, w)
		}
	}
	windows = append(windows, skipped...)
	slices.SortStableFunc(windows, func(a, b laxityv1alpha1.RecurringWindow) int { return b.Start.Compare(a.Start.Time) })
	windows = slices.CompactFunc(windows, func(a, b laxityv1alpha1.RecurringWindow) bool { return a.Start.Equal(&b.Start) })
	if len(windows) > laxityv1alpha1.MaxRecentWindows {
		windows = windows[:laxityv1alpha1.MaxRecentWindows]
	}
	rq.Status.Windows = windows
	rq.Status.LastOutcome = ""
	for _, w := range windows {
		switch w.Outcome {
		case laxityv1alpha1.WindowSucceeded, laxityv1alpha1.WindowFailed, laxityv1alpha1.WindowMissed, laxityv1alpha1.WindowSkipped:
			rq.Status.LastOutcome = w.Outcome
		}
		if rq.Status.LastOutcome != "" {
			break
		}
	}
}

// windowStatus is one window's entry; price < 0 leaves the cost out.
func windowStatus(q *laxityv1alpha1.IntermittentQuery, price float64) laxityv1alpha1.RecurringWindow {
	outcome, _ := windowOutcome(q)
	deadline := q.Spec.Deadline
	w := laxityv1alpha1.RecurringWindow{
		Start: metav1.NewTime(windowStartOf(q)), Query: q.Name, Outcome: outcome,
		Deadline: &deadline, Batches: int32(len(q.Status.Batches)),
	}
	var steps []recurrence.Step
	add := func(nodes int32, start, end *metav1.Time, o laxityv1alpha1.StepOutcome) {
		if o == laxityv1alpha1.StepSucceeded && start != nil && end != nil {
			steps = append(steps, recurrence.Step{Nodes: nodes, Seconds: end.Sub(start.Time).Seconds()})
		}
	}
	for _, b := range q.Status.Batches {
		add(b.Nodes, b.Start, b.End, b.Outcome)
	}
	for _, p := range q.Status.Partials {
		add(p.Nodes, p.Start, p.End, p.Outcome)
	}
	if f := q.Status.Final; f != nil {
		add(f.Nodes, f.Start, f.End, f.Outcome)
		if f.Outcome == laxityv1alpha1.StepSucceeded {
			w.Finish, w.ResultLocation = f.End, f.ResultLocation
			w.Met = f.End != nil && !f.End.After(deadline.Time)
		}
	}
	if price >= 0 {
		w.ExecutedCost = laxityv1alpha1.NewDecimal(recurrence.ExecutedCost(steps, price), 4)
	}
	return w
}

// renderWindow is the IntermittentQuery of window w (spec.RecurringWindow)
// with the recurring query as its controller owner.
func renderWindow(rq *laxityv1alpha1.RecurringQuery, w recurrence.Window, scheme *runtime.Scheme) (*laxityv1alpha1.IntermittentQuery, error) {
	iq := spec.RecurringWindow(rq, w)
	if err := controllerutil.SetControllerReference(rq, iq, scheme); err != nil {
		return nil, fmt.Errorf("owning window %s: %w", w.Name, err)
	}
	return iq, nil
}

func setRecurringReady(rq *laxityv1alpha1.RecurringQuery, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&rq.Status.Conditions, metav1.Condition{
		Type: laxityv1alpha1.RecurringQueryReadyCondition, Status: status, Reason: reason, Message: message, ObservedGeneration: rq.Generation,
	})
}

// setRecurringStalled marks the spec as one that cannot be honoured:
// Ready False and Stalled True, with the reason and a message naming the
// field.
func setRecurringStalled(rq *laxityv1alpha1.RecurringQuery, reason, message string) {
	setRecurringReady(rq, metav1.ConditionFalse, reason, message)
	meta.SetStatusCondition(&rq.Status.Conditions, metav1.Condition{
		Type: laxityv1alpha1.RecurringQueryStalledCondition, Status: metav1.ConditionTrue, Reason: reason, Message: message, ObservedGeneration: rq.Generation,
	})
}

// scheduleStalledChanged passes a schedule's update that changes its
// Stalled condition: a schedule that stalls stops its recurring queries'
// windows, and one that recovers resumes them.
var scheduleStalledChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		stalled := func(o client.Object) string {
			es, ok := o.(*laxityv1alpha1.ElasticSchedule)
			if !ok {
				return ""
			}
			c := meta.FindStatusCondition(es.Status.Conditions, laxityv1alpha1.ElasticScheduleStalledCondition)
			if c == nil {
				return ""
			}
			return string(c.Status) + "/" + c.Reason
		}
		return stalled(e.ObjectOld) != stalled(e.ObjectNew)
	},
}

// SetupWithManager registers the RecurringQuery controller, woken by the
// recurring query, the windows it owns, and the ElasticSchedule its
// template names (a missing one holds every window back).
func (r *RecurringQueryReconciler) SetupWithManager(mgr ctrl.Manager) error {
	bySchedule := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		var list laxityv1alpha1.RecurringQueryList
		if err := mgr.GetClient().List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, rq := range list.Items {
			if rq.Spec.Template.ScheduleName == o.GetName() {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&rq)})
			}
		}
		return out
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&laxityv1alpha1.RecurringQuery{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&laxityv1alpha1.IntermittentQuery{}).
		Watches(&laxityv1alpha1.ElasticSchedule{}, bySchedule, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, scheduleStalledChanged))).
		Named("recurringquery").
		Complete(r)
}
