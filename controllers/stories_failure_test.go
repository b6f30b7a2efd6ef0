package controllers

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/pool"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/internal/spec"
	"github.com/laxity-dev/laxity/test/builder"
)

// Stories 4–6: what laxity does when steps fail, when the manager is
// stopped and restarted at random points, and when no plan can meet a
// deadline. They reuse the world of stories_test.go; helpers here carry an
// fs prefix so they do not collide with other stories' helpers.

// fsApps lists the SparkApplications in the world's namespace, of one query
// when query is not empty, sorted by name.
func fsApps(ctx context.Context, w *world, query string) []unstructured.Unstructured {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(sparkapp.GroupVersionKind.GroupVersion().WithKind(sparkapp.GroupVersionKind.Kind + "List"))
	opts := []client.ListOption{client.InNamespace(w.ns)}
	if query != "" {
		opts = append(opts, client.MatchingLabels{LabelQuery: query})
	}
	Expect(k8sClient.List(ctx, list, opts...)).To(Succeed())
	sort.Slice(list.Items, func(a, b int) bool { return list.Items[a].GetName() < list.Items[b].GetName() })
	return list.Items
}

func fsNames(apps []unstructured.Unstructured) []string {
	var out []string
	for i := range apps {
		out = append(out, apps[i].GetName())
	}
	return out
}

func fsQuery(ctx context.Context, w *world, name string) *laxityv1alpha1.IntermittentQuery {
	var q laxityv1alpha1.IntermittentQuery
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &q)).To(Succeed())
	return &q
}

func fsSchedule(ctx context.Context, w *world) *laxityv1alpha1.ElasticSchedule {
	var es laxityv1alpha1.ElasticSchedule
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(w.schedule), &es)).To(Succeed())
	return &es
}

// fsEvents drains the world's fake event recorder into seen and returns it.
func fsEvents(w *world, seen []string) []string {
	rec := w.es.Recorder.(*events.FakeRecorder)
	for {
		select {
		case e := <-rec.Events:
			seen = append(seen, e)
		default:
			return seen
		}
	}
}

func fsCount(evs []string, substrings ...string) int {
	n := 0
	for _, e := range evs {
		all := true
		for _, s := range substrings {
			all = all && strings.Contains(e, s)
		}
		if all {
			n++
		}
	}
	return n
}

// fsLaunch is the world's record of the SparkApplication named name.
func fsLaunch(w *world, name string) launch {
	for _, l := range w.launches {
		if l.name == name {
			return l
		}
	}
	Fail("no launch of " + name)
	return launch{}
}

// fsEnded is a finished SparkApplication's status.terminationTime.
func fsEnded(app *unstructured.Unstructured) time.Time {
	o := sparkapp.Observe(app)
	Expect(o.Ended).NotTo(BeNil(), "%s has not ended", app.GetName())
	return *o.Ended
}

func fsApp(apps []unstructured.Unstructured, name string) *unstructured.Unstructured {
	for i := range apps {
		if apps[i].GetName() == name {
			return &apps[i]
		}
	}
	Fail("no SparkApplication " + name)
	return nil
}

func fsLatest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// fsRunUntil ticks the world from origin, from event to event, until done
// says so or until limit.
func fsRunUntil(ctx context.Context, w *world, limit time.Duration, done func(now time.Time) bool) {
	for t := origin; !t.After(origin.Add(limit)); t = w.next(t) {
		w.tick(ctx, t)
		if done(t) {
			return
		}
	}
}

// fsTilesWindow checks that a query's batches, in index order, tile
// [0, total) exactly once, and returns how many there are.
func fsTilesWindow(apps []unstructured.Unstructured, query string, total int64) int {
	type batch struct {
		index, attempt int
		from, to       int64
		name           string
	}
	var batches []batch
	for i := range apps {
		q, s, err := sparkapp.StepOf(&apps[i])
		Expect(err).NotTo(HaveOccurred())
		if q == query && s.Kind == planner.StepBatch {
			batches = append(batches, batch{s.Index, s.Attempt, s.FromTuple, s.ToTuple, apps[i].GetName()})
		}
	}
	sort.Slice(batches, func(a, b int) bool { return batches[a].index < batches[b].index })
	next := int64(0)
	for i, b := range batches {
		Expect(b.index).To(Equal(i), "%s: batch indices are 0, 1, … with no gap or repeat", query)
		Expect(b.from).To(Equal(next), "%s: %s starts where the previous batch ended", query, b.name)
		next = b.to
	}
	Expect(next).To(Equal(total), "%s: every tuple of the window is in a batch", query)
	return len(batches)
}

// ---------------------------------------------------------------------------
// Story 4: a batch fails twice, then succeeds.

// fsBatchState is one batch as its query's status shows it.
type fsBatchState struct {
	attempt int32
	outcome laxityv1alpha1.StepOutcome
	app     string
	onTrack bool
}

var _ = Describe("A batch that fails twice and then succeeds", Ordered, func() {
	var (
		w      *world
		alpha  []unstructured.Unstructured
		evs    []string
		opts   Options
		failed = map[string]bool{"alpha-b1": true, "alpha-b1-r1": true}
		// history is batch 1 as alpha's status showed it, tick by tick,
		// without repeats.
		history []fsBatchState
	)
	const lead = 2 * time.Minute
	BeforeAll(func(ctx SpecContext) {
		w = newWorld(ctx, "story4-retry", lead)
		opts = w.es.Options
		w.spark.Fail = func(app *unstructured.Unstructured) bool { return failed[app.GetName()] }
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4, 8).LeadTime(lead).SmallBatches().Obj()
		w.create(ctx, w.schedule,
			builder.Query(w.ns, "alpha").Rate("50").Slack(3*time.Minute).Obj(),
			builder.Query(w.ns, "bravo").Rate("40").Slack(4*time.Minute).Obj(),
		)
		fsRunUntil(ctx, w, 30*time.Minute, func(time.Time) bool {
			q := fsQuery(ctx, w, "alpha")
			if len(q.Status.Batches) > 1 {
				b := q.Status.Batches[1]
				s := fsBatchState{attempt: b.Attempt, outcome: b.Outcome, app: b.SparkApplication,
					onTrack: meta.IsStatusConditionTrue(q.Status.Conditions, laxityv1alpha1.IntermittentQueryOnTrackCondition)}
				if n := len(history); n == 0 || history[n-1] != s {
					history = append(history, s)
				}
			}
			return w.settled(ctx)
		})
		w.report(ctx)
		alpha = fsApps(ctx, w, "alpha")
		evs = fsEvents(w, nil)
	})

	It("keeps b1 and b1-r1 for inspection and creates b1-r2 once, all over the same tuple range with increasing attempts", func() {
		var batch1 []unstructured.Unstructured
		for _, app := range alpha {
			if app.GetAnnotations()[sparkapp.AnnotationBatchIndex] == "1" && app.GetLabels()[LabelStep] == "batch" {
				batch1 = append(batch1, app)
			}
		}
		Expect(fsNames(batch1)).To(Equal([]string{"alpha-b1", "alpha-b1-r1", "alpha-b1-r2"}))
		want := []string{"FAILED", "FAILED", "COMPLETED"}
		for i := range batch1 {
			a := batch1[i].GetAnnotations()
			Expect(a[sparkapp.AnnotationAttempt]).To(Equal(strconv.Itoa(i)), batch1[i].GetName())
			Expect(a[sparkapp.AnnotationFromTuple]).To(Equal(batch1[0].GetAnnotations()[sparkapp.AnnotationFromTuple]), batch1[i].GetName())
			Expect(a[sparkapp.AnnotationToTuple]).To(Equal(batch1[0].GetAnnotations()[sparkapp.AnnotationToTuple]), batch1[i].GetName())
			Expect(sparkapp.Observe(&batch1[i]).State).To(Equal(want[i]), batch1[i].GetName())
		}
		// Every other step of the query ran once: no retry suffix elsewhere.
		for _, app := range alpha {
			if !strings.HasPrefix(app.GetName(), "alpha-b1") {
				Expect(app.GetName()).NotTo(ContainSubstring("-r"), "only batch 1 failed")
			}
		}
		fmt.Fprintf(GinkgoWriter, "alpha objects: %v\n", fsNames(alpha))
	})

	It("waits at least the backoff before the first retry and twice it before the second", func(ctx SpecContext) {
		b1, r1, r2 := fsApp(alpha, "alpha-b1"), fsApp(alpha, "alpha-b1-r1"), fsApp(alpha, "alpha-b1-r2")
		wait1 := fsLaunch(w, "alpha-b1-r1").at.Sub(fsEnded(b1))
		wait2 := fsLaunch(w, "alpha-b1-r2").at.Sub(fsEnded(r1))
		fmt.Fprintf(GinkgoWriter, "b1 ended %s, r1 launched after %s; r1 ended %s, r2 launched after %s; r2 ended %s\n",
			fsEnded(b1).Sub(origin), wait1, fsEnded(r1).Sub(origin), wait2, fsEnded(r2).Sub(origin))
		Expect(wait1).To(BeNumerically(">=", opts.Backoff))
		Expect(wait2).To(BeNumerically(">=", 2*opts.Backoff))
		// And no longer than needed: each retry went out as soon as its
		// backoff had passed and the pool was free (another query's step
		// may have taken it during the backoff), within the second to which
		// the world rounds its instants.
		for _, r := range []struct {
			failed, retry string
			backoff       time.Duration
		}{{"alpha-b1", "alpha-b1-r1", opts.Backoff}, {"alpha-b1-r1", "alpha-b1-r2", 2 * opts.Backoff}} {
			ended, launched := fsEnded(fsApp(alpha, r.failed)), fsLaunch(w, r.retry).at
			free := ended.Add(r.backoff)
			for _, l := range w.launches {
				if l.at.After(ended) && l.at.Before(launched) {
					free = fsLatest(free, fsEnded(fsApp(fsApps(ctx, w, l.query), l.name)))
				}
			}
			Expect(launched.Sub(free)).To(BeNumerically("<=", time.Second), "%s waited longer than its backoff and the pool", r.retry)
		}
	})

	It("runs one step at a time; during a backoff only other queries' steps may use the pool", func() {
		// The dispatch rule: one step on the pool at a time, and "whenever the pool is
		// free, among queries whose next batch is ready launch the least
		// slack". A query waiting out a backoff has no ready step, so the
		// pool is free for the others; the failing query itself launches
		// nothing else (not its next batch) until its retry succeeds.
		Expect(w.maxRunning).To(Equal(1))
		windows := [][2]time.Time{
			{fsEnded(fsApp(alpha, "alpha-b1")), fsLaunch(w, "alpha-b1-r1").at},
			{fsEnded(fsApp(alpha, "alpha-b1-r1")), fsLaunch(w, "alpha-b1-r2").at},
		}
		others := 0
		for _, win := range windows {
			for _, l := range w.launches {
				// From the instant the failed attempt ended: the pass that
				// sees it end may launch another query's step at once.
				if !l.at.Before(win[0]) && l.at.Before(win[1]) {
					Expect(l.query).NotTo(Equal("alpha"), "%s launched during alpha's backoff", l.name)
					others++
					fmt.Fprintf(GinkgoWriter, "during a backoff: %s at %s\n", l.name, l.at.Sub(origin))
				}
			}
		}
		fmt.Fprintf(GinkgoWriter, "steps of other queries launched during alpha's backoffs: %d\n", others)
		// bravo's batch 1 was ready during the first backoff and ran in it.
		Expect(others).To(BeNumerically(">=", 1))
		// alpha's batch 2 waits for batch 1 to succeed.
		b2 := fsLaunch(w, "alpha-b2")
		Expect(b2.at).NotTo(BeTemporally("<", fsEnded(fsApp(alpha, "alpha-b1-r2"))))
	})

	It("records batch 1 as attempt 2, Succeeded, and the query finishes on time", func(ctx SpecContext) {
		q := fsQuery(ctx, w, "alpha")
		Expect(len(q.Status.Batches)).To(BeNumerically(">", 2))
		b := q.Status.Batches[1]
		Expect(b.Index).To(Equal(int32(1)))
		Expect(b.Attempt).To(Equal(int32(2)))
		Expect(b.SparkApplication).To(Equal("alpha-b1-r2"))
		Expect(b.Outcome).To(Equal(laxityv1alpha1.StepSucceeded))
		Expect(b.FromTuple).To(Equal(q.Status.Batches[0].ToTuple))
		Expect(b.ToTuple).To(Equal(q.Status.Batches[2].FromTuple))
		Expect(q.Status.ProcessedTuples).To(Equal(ptr.To[int64](50 * 600)))
		Expect(meta.IsStatusConditionTrue(q.Status.Conditions, laxityv1alpha1.IntermittentQuerySucceededCondition)).To(BeTrue())
		Expect(meta.IsStatusConditionTrue(q.Status.Conditions, laxityv1alpha1.IntermittentQueryDeadlineMissedCondition)).To(BeFalse())
		Expect(q.Status.Final.End.Time).NotTo(BeTemporally(">", q.Spec.Deadline.Time))
		bravo := fsQuery(ctx, w, "bravo")
		Expect(meta.IsStatusConditionTrue(bravo.Status.Conditions, laxityv1alpha1.IntermittentQuerySucceededCondition)).To(BeTrue())
		Expect(bravo.Status.Final.End.Time).NotTo(BeTemporally(">", bravo.Spec.Deadline.Time))
		fmt.Fprintf(GinkgoWriter, "alpha final ended %s before its deadline\n", q.Spec.Deadline.Sub(q.Status.Final.End.Time))
	})

	It("showed every attempt in the status as it happened, on track throughout", func() {
		for _, h := range history {
			fmt.Fprintf(GinkgoWriter, "batch 1: attempt %d %s %s onTrack=%v\n", h.attempt, h.app, h.outcome, h.onTrack)
		}
		P, R, F, S := laxityv1alpha1.StepPending, laxityv1alpha1.StepRunning, laxityv1alpha1.StepFailed, laxityv1alpha1.StepSucceeded
		want := []fsBatchState{
			{0, P, "alpha-b1", true}, {0, R, "alpha-b1", true}, {0, F, "alpha-b1", true},
			{1, P, "alpha-b1-r1", true}, {1, R, "alpha-b1-r1", true}, {1, F, "alpha-b1-r1", true},
			{2, P, "alpha-b1-r2", true}, {2, R, "alpha-b1-r2", true}, {2, S, "alpha-b1-r2", true},
		}
		// A failed attempt with a retry to come is no risk to the deadline:
		// the query stays OnTrack while it waits out the backoff.
		Expect(history).To(Equal(want))
	})

	It("says so in events, and a retry that succeeds does not re-plan", func(ctx SpecContext) {
		Expect(fsCount(evs, "Retried", "alpha-b1-r1")).To(Equal(1))
		Expect(fsCount(evs, "Retried", "alpha-b1-r2")).To(Equal(1))
		Expect(fsCount(evs, "Planned")).To(Equal(1), "only the initial plan: %v", evs)
		stored, err := loadPlan(ctx, k8sClient, w.schedule)
		Expect(err).NotTo(HaveOccurred())
		Expect(stored.reason).To(Equal(ReplanInitial))
	})
})

// ---------------------------------------------------------------------------
// Story 4, variant: a batch fails on every attempt.

var _ = Describe("A batch that fails on every attempt", Ordered, func() {
	var (
		w        *world
		evs      []string
		deadline time.Time
		planned  []string // reasons of every plan the world saw, in order
		// exhausted is delta's status on the first tick that showed its
		// last attempt failed; idleAt is when the pool was last asked to
		// go back to its idle size.
		exhausted *laxityv1alpha1.IntermittentQuery
		idleAt    time.Time
	)
	const lead = 2 * time.Minute
	BeforeAll(func(ctx SpecContext) {
		w = newWorld(ctx, "story4-exhausted", lead)
		w.spark.Fail = func(app *unstructured.Unstructured) bool { return strings.HasPrefix(app.GetName(), "delta-b1") }
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4, 8).LeadTime(lead).SmallBatches().Obj()
		delta := builder.Query(w.ns, "delta").Rate("50").Slack(3 * time.Minute).Obj()
		deadline = delta.Spec.Deadline.Time
		w.create(ctx, w.schedule, delta, builder.Query(w.ns, "echo").Rate("40").Slack(4*time.Minute).Obj())
		fsRunUntil(ctx, w, 30*time.Minute, func(now time.Time) bool {
			evs = fsEvents(w, evs)
			if n := fsCount(evs, "Planned"); n > len(planned) {
				stored, err := loadPlan(ctx, k8sClient, w.schedule)
				Expect(err).NotTo(HaveOccurred())
				planned = append(planned, stored.reason)
			}
			if d := fsQuery(ctx, w, "delta"); exhausted == nil && len(d.Status.Batches) > 1 &&
				d.Status.Batches[1].Attempt == 2 && d.Status.Batches[1].Outcome == laxityv1alpha1.StepFailed {
				exhausted = d
				fmt.Fprintf(GinkgoWriter, "%s: delta's batch 1 failed its last attempt\n", now.Sub(origin))
			}
			if es := fsSchedule(ctx, w); ptr.Deref(es.Status.NodesRequested, -1) != 0 {
				idleAt = time.Time{}
			} else if idleAt.IsZero() {
				idleAt = now
			}
			// Past delta's deadline, with echo done.
			echo := fsQuery(ctx, w, "echo")
			return now.After(deadline) &&
				meta.IsStatusConditionTrue(echo.Status.Conditions, laxityv1alpha1.IntermittentQuerySucceededCondition)
		})
		w.report(ctx)
		for _, e := range evs {
			fmt.Fprintln(GinkgoWriter, "event:", e)
		}
	})

	It("creates no attempt past MaxAttempts, and nothing more of the query", func(ctx SpecContext) {
		Expect(fsNames(fsApps(ctx, w, "delta"))).To(Equal([]string{"delta-b0", "delta-b1", "delta-b1-r1", "delta-b1-r2"}))
	})

	It("launches no storm: every SparkApplication is a distinct step", func(ctx SpecContext) {
		all := fsApps(ctx, w, "")
		echo := fsApps(ctx, w, "echo")
		batches := fsTilesWindow(echo, "echo", 40*600)
		Expect(echo).To(HaveLen(batches+1), "echo: its batches and its final merge")
		Expect(all).To(HaveLen(len(echo) + 4))
		Expect(w.launches).To(HaveLen(len(all)))
		fmt.Fprintf(GinkgoWriter, "SparkApplications: %d (echo %d)\n", len(all), len(echo))
	})

	It("explains in the query's OnTrack condition which step failed and how often, as soon as it has", func(ctx SpecContext) {
		Expect(exhausted).NotTo(BeNil())
		// The moment the last attempt failed, minutes before the deadline,
		// and at the end, after it.
		for _, q := range []*laxityv1alpha1.IntermittentQuery{exhausted, fsQuery(ctx, w, "delta")} {
			atRisk := meta.FindStatusCondition(q.Status.Conditions, laxityv1alpha1.IntermittentQueryOnTrackCondition)
			Expect(atRisk).NotTo(BeNil())
			fmt.Fprintf(GinkgoWriter, "OnTrack: %s %s %q\n", atRisk.Status, atRisk.Reason, atRisk.Message)
			Expect(atRisk.Status).To(Equal(metav1.ConditionFalse))
			Expect(atRisk.Reason).To(Equal(laxityv1alpha1.StepFailedReason))
			Expect(atRisk.Message).To(ContainSubstring("Batch 1"))
			Expect(atRisk.Message).To(ContainSubstring("3 attempts"))
			Expect(atRisk.Message).To(ContainSubstring("delta-b1-r2"))
			ready := meta.FindStatusCondition(q.Status.Conditions, laxityv1alpha1.IntermittentQueryReadyCondition)
			Expect(ready.Reason).To(Equal(laxityv1alpha1.StepFailedReason))
			Expect(q.Status.Batches[1].Attempt).To(Equal(int32(2)))
			Expect(q.Status.Batches[1].Outcome).To(Equal(laxityv1alpha1.StepFailed))
		}
		Expect(meta.IsStatusConditionTrue(exhausted.Status.Conditions, laxityv1alpha1.IntermittentQueryDeadlineMissedCondition)).To(BeFalse())
		Expect(meta.IsStatusConditionTrue(fsQuery(ctx, w, "delta").Status.Conditions, laxityv1alpha1.IntermittentQueryDeadlineMissedCondition)).To(BeTrue())
	})

	It("re-plans once, with reason StepFailed, not on every tick", func(ctx SpecContext) {
		Expect(planned).To(Equal([]string{ReplanInitial, ReplanStepFailed}))
		Expect(fsCount(evs, "Planned", "(StepFailed)")).To(Equal(1))
		stored, err := loadPlan(ctx, k8sClient, w.schedule)
		Expect(err).NotTo(HaveOccurred())
		Expect(stored.reason).To(Equal(ReplanStepFailed))
	})

	It("lets the other query finish on time and returns the pool to idle", func(ctx SpecContext) {
		echo := fsQuery(ctx, w, "echo")
		Expect(echo.Status.Final.End.Time).NotTo(BeTemporally(">", echo.Spec.Deadline.Time))
		// No node is held for delta, which will run nothing more: the pool
		// goes idle once echo is done, long before delta's deadline.
		Expect(fsSchedule(ctx, w).Status.NodesRequested).To(Equal(ptr.To[int32](0)))
		Expect(idleAt).NotTo(BeZero())
		fmt.Fprintf(GinkgoWriter, "pool idle from %s; echo done at %s; delta's deadline %s\n",
			idleAt.Sub(origin), echo.Status.Final.End.Sub(origin), deadline.Sub(origin))
		Expect(idleAt).To(BeTemporally("<", deadline))
	})
})

// ---------------------------------------------------------------------------
// Story 5: the manager is stopped and restarted at random points.

// fsCounts counts the SparkApplication creations every incarnation of the
// manager attempted, across restarts, as the API server would see them.
type fsCounts struct{ creates, alreadyExists int }

// errFsCrash is the process dying right after its last request went out.
var errFsCrash = errors.New("simulated crash: the process died after this request")

// fsClient is one manager incarnation's client. It counts SparkApplication
// creations; while visible is set it hides every SparkApplication not in it
// from List (an informer cache that has not yet seen the object the previous
// reconcile created); with crashAfterCreate the first SparkApplication it
// creates is created and then reported as errFsCrash, so that the reconcile
// stops right there, as if the process had died before writing the status.
type fsClient struct {
	client.Client
	counts           *fsCounts
	visible          map[string]bool
	crashAfterCreate bool
}

func (c *fsClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	err := c.Client.Create(ctx, obj, opts...)
	if u, ok := obj.(*unstructured.Unstructured); ok && u.GroupVersionKind() == sparkapp.GroupVersionKind {
		c.counts.creates++
		if apierrors.IsAlreadyExists(err) {
			c.counts.alreadyExists++
		}
		if err == nil && c.crashAfterCreate {
			return errFsCrash
		}
	}
	return err
}

func (c *fsClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if u, ok := list.(*unstructured.UnstructuredList); ok && c.visible != nil {
		kept := u.Items[:0]
		for _, item := range u.Items {
			if c.visible[item.GetName()] {
				kept = append(kept, item)
			}
		}
		u.Items = kept
	}
	return nil
}

// What happens to the manager at a disruption point. Every point restarts
// the manager; some do more.
type fsDisruption int

const (
	// fsRestart: a fresh process reconciles as usual.
	fsRestart fsDisruption = iota
	// fsDown: the manager is down at the point and for fsDownFor after it;
	// nothing reconciles.
	fsDown
	// fsCrash: from the point on, at the first tick on which the schedule's
	// reconcile launches a step, the process dies right after the create,
	// before it writes any status or emits an event; the queries are not
	// reconciled, and a fresh process takes over on the next tick.
	fsCrash
	// fsDuplicate: from the point on, at the first tick on which the
	// schedule's reconcile launches a step, the schedule is reconciled again
	// in the same tick from a cache that has not seen the new object.
	fsDuplicate
)

// fsDownFor is how long a manager that is down stays down.
const fsDownFor = 5 * time.Second

func (d fsDisruption) String() string {
	return [...]string{"restart", "down", "crash", "duplicate"}[d]
}

// fsRestartManager replaces the world's reconcilers with fresh ones, as a
// restarted process would build them: nothing is carried over in memory but
// the event sink, which stands for the API server.
func fsRestartManager(w *world, counts *fsCounts) *fsClient {
	c := &fsClient{Client: k8sClient, counts: counts}
	opts := w.es.Options
	backend := func(_ context.Context, es *laxityv1alpha1.ElasticSchedule) (pool.Backend, error) {
		return pool.New(poolOptions, es)
	}
	w.es = &ElasticScheduleReconciler{Client: c, Clock: w.clock, Recorder: w.es.Recorder, Options: opts, Backend: backend, Sources: &Sources{}, Runner: StepRunners(c, nil)}
	w.iq = &IntermittentQueryReconciler{Client: c, Clock: w.clock, Options: opts, Sources: &Sources{}, Runner: StepRunners(c, nil)}
	return c
}

// fsTick is world.tick with a disruption: down skips the reconcilers, and an
// armed crash or duplicate (armed) fires if the schedule launches a step.
// It reports whether the armed disruption fired.
func fsTick(ctx context.Context, w *world, c *fsClient, now time.Time, down bool, armed *fsDisruption) bool {
	es := w.simulate(ctx, now)
	defer w.follow(ctx, now, es)
	defer w.observe(ctx, now)
	if down {
		// It is back, and looks at everything, after a step of the grid
		// the disruptions are drawn on.
		w.wake(now.Add(fsDownFor))
		return false
	}

	key := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(es)}
	fired := false
	before := map[string]bool{}
	for _, name := range fsNames(fsApps(ctx, w, "")) {
		before[name] = true
	}
	creates := c.counts.creates
	c.crashAfterCreate = armed != nil && *armed == fsCrash
	res, err := w.es.Reconcile(ctx, key)
	c.crashAfterCreate = false
	switch {
	case armed != nil && *armed == fsCrash && errors.Is(err, errFsCrash):
		// The fresh process starts with a pass of every object.
		w.wake(now.Add(reactWithin))
		return true
	case armed != nil && *armed == fsDuplicate && c.counts.creates > creates:
		Expect(err).NotTo(HaveOccurred())
		c.visible = before
		res, err = w.es.Reconcile(ctx, key)
		c.visible = nil
		fired = true
	}
	Expect(err).NotTo(HaveOccurred())
	w.requeue(now, res)
	w.reconcileQueries(ctx, now, w.iq)
	return fired
}

var _ = Describe("A manager stopped and restarted at 20 random points", Ordered, func() {
	var (
		w      *world
		counts fsCounts
		points = map[time.Duration]fsDisruption{} // by the time since origin
		fired  = map[fsDisruption]int{}
		rates  = map[string]int64{"alpha": 50, "bravo": 40, "charlie": 30}
	)
	const (
		lead = 2 * time.Minute
		grid = fsDownFor
	)
	BeforeAll(func(ctx SpecContext) {
		w = newWorld(ctx, "story5-restart", lead)
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4, 8).LeadTime(lead).SmallBatches().Obj()
		w.create(ctx, w.schedule,
			builder.Query(w.ns, "alpha").Rate("50").Slack(90*time.Second).Obj(),
			builder.Query(w.ns, "bravo").Rate("40").Slack(3*time.Minute).Obj(),
			builder.Query(w.ns, "charlie").Rate("30").Slack(5*time.Minute).Obj(),
		)
		// 20 distinct instants on a 5 s grid over the first 15 minutes
		// (until the windows close; steps run until about 16), five of each
		// kind of disruption, in a seeded random order; each is a tick.
		rng := rand.New(rand.NewPCG(4, 2026))
		ticks := rng.Perm(180)[:20]
		kinds := []fsDisruption{}
		for _, d := range []fsDisruption{fsRestart, fsDown, fsCrash, fsDuplicate} {
			for range 5 {
				kinds = append(kinds, d)
			}
		}
		rng.Shuffle(len(kinds), func(a, b int) { kinds[a], kinds[b] = kinds[b], kinds[a] })
		for i, n := range ticks {
			points[time.Duration(n)*grid] = kinds[i]
			w.at(origin.Add(time.Duration(n) * grid))
		}
		c := fsRestartManager(w, &counts)
		var armed []fsDisruption // crashes and duplicates waiting for a launch
		for t := origin; !t.After(origin.Add(30 * time.Minute)); t = w.next(t) {
			d, disrupted := points[t.Sub(origin)]
			if disrupted {
				c = fsRestartManager(w, &counts)
				if d == fsCrash || d == fsDuplicate {
					armed = append(armed, d)
				}
				fmt.Fprintf(GinkgoWriter, "%6.0fs: restart (%s)\n", t.Sub(origin).Seconds(), d)
			}
			var head *fsDisruption
			if len(armed) > 0 {
				head = &armed[0]
			}
			if fsTick(ctx, w, c, t, disrupted && d == fsDown, head) {
				fmt.Fprintf(GinkgoWriter, "%6.0fs: %s fired\n", t.Sub(origin).Seconds(), *head)
				fired[*head]++
				if *head == fsCrash {
					c = fsRestartManager(w, &counts)
				}
				armed = armed[1:]
			}
			if w.settled(ctx) {
				break
			}
		}
		Expect(armed).To(BeEmpty(), "every armed disruption fired")
		w.report(ctx)
	})

	It("never creates a SparkApplication twice: one object per step, creation idempotent by name", func(ctx SpecContext) {
		apps := fsApps(ctx, w, "")
		steps := map[string]bool{}
		for i := range apps {
			q, s, err := sparkapp.StepOf(&apps[i])
			Expect(err).NotTo(HaveOccurred())
			Expect(s.Attempt).To(BeZero(), "nothing failed, so %s is no retry", apps[i].GetName())
			key := fmt.Sprintf("%s/%s/%d", q, s.Kind, s.Index)
			Expect(steps).NotTo(HaveKey(key), "%s is a second object for step %s", apps[i].GetName(), key)
			steps[key] = true
		}
		Expect(w.launches).To(HaveLen(len(apps)))
		// Every successful create made one object; each duplicate reconcile
		// tried the step the first one had just launched and found it.
		Expect(counts.creates - counts.alreadyExists).To(Equal(len(apps)))
		Expect(counts.alreadyExists).To(Equal(fired[fsDuplicate]))
		fmt.Fprintf(GinkgoWriter, "SparkApplications %d, creations attempted %d, already there %d\n", len(apps), counts.creates, counts.alreadyExists)
	})

	It("neither loses nor re-processes a tuple range: batches tile each window once, launched in index order", func(ctx SpecContext) {
		apps := fsApps(ctx, w, "")
		for name, rate := range rates {
			fsTilesWindow(apps, name, rate*600)
		}
		index := map[string]int{}
		for _, l := range w.launches {
			if l.step.Kind == planner.StepBatch {
				Expect(l.step.Index).To(Equal(index[l.query]), "launch order of %s", l.query)
				Expect(l.arrived).To(BeNumerically(">=", l.step.ToTuple), "%s launched before its tuples arrived", l.name)
				index[l.query]++
			}
		}
	})

	It("meets every deadline", func(ctx SpecContext) {
		for name := range rates {
			q := fsQuery(ctx, w, name)
			Expect(meta.IsStatusConditionTrue(q.Status.Conditions, laxityv1alpha1.IntermittentQuerySucceededCondition)).To(BeTrue(), name)
			Expect(q.Status.Final.End.Time).NotTo(BeTemporally(">", q.Spec.Deadline.Time), name)
			Expect(*q.Status.ProcessedTuples).To(Equal(rates[name] * 600))
		}
	})

	It("holds the pool with at most one step at any tick", func() {
		Expect(w.maxRunning).To(Equal(1))
	})

	It("was disrupted at 20 points, five of each kind, every crash and duplicate at a launch", func() {
		seen := map[fsDisruption]int{}
		for _, d := range points {
			seen[d]++
		}
		Expect(seen).To(Equal(map[fsDisruption]int{fsRestart: 5, fsDown: 5, fsCrash: 5, fsDuplicate: 5}))
		Expect(fired).To(Equal(map[fsDisruption]int{fsCrash: 5, fsDuplicate: 5}))
	})
})

// ---------------------------------------------------------------------------
// Story 6: an infeasible workload.

var _ = Describe("A workload no pool size can finish in time", Ordered, func() {
	var (
		w   *world
		doc planner.Document
		evs []string
		// tight's status on the first tick the schedule had planned it, and
		// its OnTrack condition when it first turned False (at risk).
		firstPlanned *laxityv1alpha1.IntermittentQuery
		atRisk       *metav1.Condition
		atRiskFrom   time.Time
	)
	const lead = 2 * time.Minute
	BeforeAll(func(ctx SpecContext) {
		w = newWorld(ctx, "story6-infeasible", lead)
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4).LeadTime(lead).Obj()
		// tight's last batch cannot start before its window closes and
		// takes at least its 10 s overhead, then the 5 s merge: a 5 s
		// deadline is out of reach on any pool.
		w.create(ctx, w.schedule,
			builder.Query(w.ns, "tight").Rate("50").Slack(5*time.Second).Obj(),
			builder.Query(w.ns, "loose").Rate("40").Slack(4*time.Minute).Obj(),
		)
		fsRunUntil(ctx, w, 30*time.Minute, func(now time.Time) bool {
			q := fsQuery(ctx, w, "tight")
			c := meta.FindStatusCondition(q.Status.Conditions, laxityv1alpha1.IntermittentQueryOnTrackCondition)
			if planned := meta.FindStatusCondition(q.Status.Conditions, laxityv1alpha1.IntermittentQueryReadyCondition); firstPlanned == nil &&
				planned != nil && planned.Reason != laxityv1alpha1.WaitingForPlanReason {
				firstPlanned = q
			}
			if atRisk == nil && c != nil && c.Status == metav1.ConditionFalse {
				atRisk, atRiskFrom = c, now
			}
			return w.settled(ctx)
		})
		w.report(ctx)
		evs = fsEvents(w, nil)
		stored, err := loadPlan(ctx, k8sClient, w.schedule)
		Expect(err).NotTo(HaveOccurred())
		Expect(stored).NotTo(BeNil())
		doc = stored.doc
	})

	It("keeps the infeasible plan document, naming the query and how late", func() {
		Expect(doc.Chosen.Feasible).To(BeFalse())
		Expect(doc.Chosen.Failure).NotTo(BeNil())
		Expect(doc.Chosen.Failure.Query).To(Equal("tight"))
		Expect(doc.Chosen.Failure.LateSeconds).To(BeNumerically(">", 0))
		Expect(doc.Chosen.InitialNodes).To(Equal(4), "the failure is measured on the largest pool size")
		fmt.Fprintf(GinkgoWriter, "plan: %+v failure %+v\n", doc.Chosen, *doc.Chosen.Failure)
	})

	It("sets Feasible=False with the query and the seconds late", func(ctx SpecContext) {
		es := fsSchedule(ctx, w)
		c := meta.FindStatusCondition(es.Status.Conditions, laxityv1alpha1.ElasticScheduleFeasibleCondition)
		Expect(c).NotTo(BeNil())
		Expect(c.Status).To(Equal(metav1.ConditionFalse))
		Expect(c.Reason).To(Equal(laxityv1alpha1.NoFeasiblePlanReason))
		Expect(c.Message).To(ContainSubstring("tight"))
		Expect(c.Message).To(ContainSubstring(fmt.Sprintf("%.0fs late", doc.Chosen.Failure.LateSeconds)))
		Expect(es.Status.Chosen.Feasible).To(BeFalse())
		Expect(meta.IsStatusConditionTrue(es.Status.Conditions, laxityv1alpha1.ElasticScheduleReadyCondition)).To(BeFalse())
		fmt.Fprintf(GinkgoWriter, "Feasible: %s %q\n", c.Reason, c.Message)
	})

	It("records a warning event that names the query", func() {
		for _, e := range evs {
			if strings.Contains(e, "Planned") {
				fmt.Fprintln(GinkgoWriter, "event:", e)
			}
		}
		Expect(fsCount(evs, corev1.EventTypeWarning, "Planned", "tight", "late")).To(Equal(1), "%v", evs)
	})

	It("still runs every step once, in least-laxity order, with no launch storm", func(ctx SpecContext) {
		apps := fsApps(ctx, w, "")
		for i := range apps {
			_, s, err := sparkapp.StepOf(&apps[i])
			Expect(err).NotTo(HaveOccurred())
			Expect(s.Attempt).To(BeZero())
		}
		tb := fsTilesWindow(apps, "tight", 50*600)
		lb := fsTilesWindow(apps, "loose", 40*600)
		Expect(apps).To(HaveLen(tb + lb + 2))
		Expect(w.launches).To(HaveLen(len(apps)))
		Expect(w.maxRunning).To(Equal(1))
		fmt.Fprintf(GinkgoWriter, "SparkApplications %d: tight %d batches, loose %d batches, 2 final merges\n", len(apps), tb, lb)
	})

	It("plans once: an infeasible plan is not re-made on every pass", func() {
		Expect(fsCount(evs, "Planned")).To(Equal(1), "%v", evs)
	})

	It("runs the work in least-laxity order: no loose batch while a tight batch was waiting", func(ctx SpecContext) {
		// tight is the query that cannot make it; its slack is the least
		// throughout, so whenever its next batch has arrived it goes first.
		// Merges go before any batch (dispatch), so only batches compare.
		src, err := spec.SyntheticSource(ctx, fsQuery(ctx, w, "tight"))
		Expect(err).NotTo(HaveOccurred())
		var tight []launch
		for _, l := range w.launches {
			if l.query == "tight" && l.step.Kind == planner.StepBatch {
				tight = append(tight, l)
			}
		}
		for _, l := range w.launches {
			if l.query != "loose" || l.step.Kind != planner.StepBatch {
				continue
			}
			for _, t := range tight {
				if t.at.After(l.at) {
					arrived, err := src.Arrived(context.Background(), l.at)
					Expect(err).NotTo(HaveOccurred())
					Expect(arrived).To(BeNumerically("<", t.step.ToTuple),
						"%s launched at %s while %s's tuples had all arrived", l.name, l.at.Sub(origin), t.name)
					break
				}
			}
		}
		for _, e := range evs {
			if strings.Contains(e, "Launched") {
				fmt.Fprintln(GinkgoWriter, "event:", e)
			}
		}
	})

	It("shows the infeasible query at risk (OnTrack False) from the first plan on, not on track until the deadline", func() {
		Expect(firstPlanned).NotTo(BeNil())
		Expect(atRisk).NotTo(BeNil())
		fmt.Fprintf(GinkgoWriter, "tight at risk from %s: %s %q\n", atRiskFrom.Sub(origin), atRisk.Reason, atRisk.Message)
		Expect(meta.IsStatusConditionFalse(firstPlanned.Status.Conditions, laxityv1alpha1.IntermittentQueryOnTrackCondition)).To(BeTrue(),
			"%+v", firstPlanned.Status.Conditions)
		Expect(meta.FindStatusCondition(firstPlanned.Status.Conditions, laxityv1alpha1.IntermittentQueryReadyCondition).Reason).To(Equal(laxityv1alpha1.NoFeasiblePlanReason))
		Expect(atRiskFrom).To(BeTemporally("<", windowStart), "at risk before its window even opened")
		Expect(atRisk.Reason).To(Equal(laxityv1alpha1.NoFeasiblePlanReason))
		Expect(atRisk.Message).To(ContainSubstring(fmt.Sprintf("%.0fs", doc.Chosen.Failure.LateSeconds)))
	})

	It("ends with the infeasible query's DeadlineMissed=True", func(ctx SpecContext) {
		tight := fsQuery(ctx, w, "tight")
		Expect(meta.IsStatusConditionTrue(tight.Status.Conditions, laxityv1alpha1.IntermittentQueryDeadlineMissedCondition)).To(BeTrue())
		Expect(meta.IsStatusConditionTrue(tight.Status.Conditions, laxityv1alpha1.IntermittentQuerySucceededCondition)).To(BeTrue(), "it still finishes, late")
		late := tight.Status.Final.End.Sub(tight.Spec.Deadline.Time)
		loose := fsQuery(ctx, w, "loose")
		fmt.Fprintf(GinkgoWriter, "tight finished %s late (plan said %.1fs); loose finished %s before its deadline\n",
			late, doc.Chosen.Failure.LateSeconds, loose.Spec.Deadline.Sub(loose.Status.Final.End.Time))
		Expect(meta.IsStatusConditionTrue(loose.Status.Conditions, laxityv1alpha1.IntermittentQueryDeadlineMissedCondition)).To(BeFalse())
	})
})
