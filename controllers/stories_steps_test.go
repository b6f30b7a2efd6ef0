package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/pool"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/internal/steprun"
	"github.com/laxity-dev/laxity/test/builder"
)

// Stories of steps that are not what they seem: forged SparkApplications,
// names taken before laxity launches, a step that never leaves SUBMITTED,
// and a pool whose nodes vanish under a running step. They reuse the world
// of stories_test.go and the fs helpers of stories_failure_test.go; their
// own helpers carry an ss prefix.

// ssTick is one tick of the world, with what the schedule's Ready and
// PoolReady conditions said after it.
type ssTick struct {
	at               time.Time
	ready, poolReady metav1.Condition
}

// ssRun ticks the world from origin, from event to event, calling feed
// before each tick, until it has settled or limit, and returns the
// schedule's conditions tick by tick and the events emitted.
func ssRun(ctx context.Context, w *world, limit time.Duration, feed func(ctx context.Context, now time.Time)) ([]ssTick, []string) {
	var ticks []ssTick
	var evs []string
	for t := origin; !t.After(origin.Add(limit)); t = w.next(t) {
		w.clock.SetTime(t)
		feed(ctx, t)
		w.tick(ctx, t)
		evs = fsEvents(w, evs)
		es := fsSchedule(ctx, w)
		tick := ssTick{at: t}
		if c := meta.FindStatusCondition(es.Status.Conditions, laxityv1alpha1.ElasticScheduleReadyCondition); c != nil {
			tick.ready = *c
		}
		if c := meta.FindStatusCondition(es.Status.Conditions, laxityv1alpha1.ElasticSchedulePoolReadyCondition); c != nil {
			tick.poolReady = *c
		}
		ticks = append(ticks, tick)
		if w.settled(ctx) {
			break
		}
	}
	w.report(ctx)
	for _, e := range evs {
		fmt.Fprintln(GinkgoWriter, "event:", e)
	}
	return ticks, evs
}

// ssExact checks that a query's own steps processed every tuple of its
// window exactly once: the batches' indices are 0, 1, … with every attempt
// of a batch over the same range, the ranges tile [0, total), and the
// status agrees. Foreign objects are not among the query's steps.
func ssExact(ctx context.Context, w *world, query string, total int64) {
	steps, err := listSteps(ctx, k8sClient, Options{}, w.ns, client.MatchingLabels{LabelQuery: query})
	Expect(err).NotTo(HaveOccurred())
	ranges := map[int][2]int64{}
	for _, s := range steps {
		_, step, err := sparkapp.StepOf(s.Object)
		Expect(err).NotTo(HaveOccurred())
		if step.Kind != planner.StepBatch {
			continue
		}
		r := [2]int64{step.FromTuple, step.ToTuple}
		if seen, ok := ranges[step.Index]; ok {
			Expect(r).To(Equal(seen), "%s: every attempt of batch %d reads the same range (%s)", query, step.Index, s.Object.GetName())
		}
		ranges[step.Index] = r
	}
	next := int64(0)
	for i := range len(ranges) {
		r, ok := ranges[i]
		Expect(ok).To(BeTrue(), "%s: batch indices have no gap (missing %d)", query, i)
		Expect(r[0]).To(Equal(next), "%s: batch %d starts where batch %d ended: no tuple twice, none lost", query, i, i-1)
		next = r[1]
	}
	Expect(next).To(Equal(total), "%s: every tuple of the window is in a batch", query)
	q := fsQuery(ctx, w, query)
	Expect(ptr.Deref(q.Status.ProcessedTuples, -1)).To(Equal(total), "%s: the status counts each tuple once", query)
	Expect(q.Status.Batches).To(HaveLen(len(ranges)), "%s: the status shows the query's own batches only", query)
	for i, b := range q.Status.Batches {
		Expect([2]int64{b.FromTuple, b.ToTuple}).To(Equal(ranges[i]), "%s: status of batch %d", query, i)
		Expect(b.Outcome).To(Equal(laxityv1alpha1.StepSucceeded), "%s: batch %d", query, i)
	}
}

// ssTotal is the window's tuples at a query's rate.
func ssTotal(ctx context.Context, w *world, query string) int64 {
	rate, err := strconv.ParseFloat(fsQuery(ctx, w, query).Spec.Input.RatePerSecond, 64)
	Expect(err).NotTo(HaveOccurred())
	return int64(rate * 600)
}

// ssReleased expects the pool back at its idle size.
func ssReleased(ctx context.Context, w *world) {
	es := fsSchedule(ctx, w)
	Expect(ptr.Deref(es.Status.NodesRequested, -1)).To(BeZero(), "the pool is released at the end")
}

// ssForged renders step s of query as laxity would, with results under
// root, and creates it without laxity's owner reference: with owner when
// given, else none.
func ssForged(ctx context.Context, w *world, query string, s sparkapp.Step, root string, owner *metav1.OwnerReference) *unstructured.Unstructured {
	q := fsQuery(ctx, w, query)
	app, err := sparkapp.Render(q, fsSchedule(ctx, w), s, sparkapp.Locations{Input: q.Spec.Input.Location, ResultRoot: root})
	Expect(err).NotTo(HaveOccurred())
	if owner != nil {
		app.SetOwnerReferences([]metav1.OwnerReference{*owner})
	}
	Expect(k8sClient.Create(ctx, app)).To(Succeed())
	return app
}

// ssSquat creates an unlabelled SparkApplication named name, finished, as
// anyone might have: it holds the name and nothing else.
func ssSquat(ctx context.Context, w *world, name string) *unstructured.Unstructured {
	app := sparkapp.New()
	app.SetNamespace(w.ns)
	app.SetName(name)
	_ = unstructured.SetNestedMap(app.Object, map[string]any{
		"type": "Scala", "mode": "cluster", "image": "someone-else:1", "sparkVersion": "3.5.3",
		"mainApplicationFile": "local:///opt/other.jar", "driver": map[string]any{}, "executor": map[string]any{},
	}, "spec")
	Expect(k8sClient.Create(ctx, app)).To(Succeed())
	_ = unstructured.SetNestedField(app.Object, "COMPLETED", "status", "applicationState", "state")
	_ = unstructured.SetNestedField(app.Object, name+"-driver", "status", "driverInfo", "podName")
	Expect(k8sClient.Status().Update(ctx, app)).To(Succeed())
	return app
}

// ssHoldingClient is the Spark stand-in's client with some applications
// held: their status never moves past SUBMITTED, as with a driver pod that
// never gets scheduled.
type ssHoldingClient struct {
	client.Client
	held map[string]bool
}

func (c *ssHoldingClient) Status() client.SubResourceWriter {
	return &ssHoldingStatus{c.Client.Status(), c.held}
}

type ssHoldingStatus struct {
	client.SubResourceWriter
	held map[string]bool
}

func (s *ssHoldingStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if u, ok := obj.(*unstructured.Unstructured); ok && s.held[u.GetName()] {
		if state, _, _ := unstructured.NestedString(u.Object, "status", "applicationState", "state"); state != sparkapp.StateSubmitted {
			return nil // held: the operator never gets further
		}
	}
	return s.SubResourceWriter.Update(ctx, obj, opts...)
}

// ssCondition is a query's condition of type t, nil when absent.
func ssCondition(ctx context.Context, w *world, query, t string) *metav1.Condition {
	return meta.FindStatusCondition(fsQuery(ctx, w, query).Status.Conditions, t)
}

var _ = Describe("Forged SparkApplications created mid-window", Ordered, func() {
	var (
		w              *world
		ticks          []ssTick
		evs            []string
		forgedBatch    *unstructured.Unstructured
		forgedFinal    *unstructured.Unstructured
		forgedFinalRef metav1.OwnerReference
	)
	const lead = 2 * time.Minute
	BeforeAll(func(ctx SpecContext) {
		w = newWorld(ctx, "steps-forged", lead)
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4, 8).LeadTime(lead).SmallBatches().Obj()
		w.create(ctx, w.schedule,
			builder.Query(w.ns, "alpha").Rate("50").Slack(3*time.Minute).Obj(),
			builder.Query(w.ns, "bravo").Rate("40").Slack(4*time.Minute).Obj(),
		)
		w.at(windowStart.Add(4 * time.Minute))
		ticks, evs = ssRun(ctx, w, 30*time.Minute, func(ctx context.Context, now time.Time) {
			if !now.Equal(windowStart.Add(4 * time.Minute)) {
				return
			}
			// A later attempt of batch 1 over the whole window, unowned:
			// taken for the latest attempt, it would run the tuples twice
			// and feed its result to the final merge.
			forgedBatch = ssForged(ctx, w, "alpha", sparkapp.Step{Kind: planner.StepBatch, Index: 1, Attempt: 5, FromTuple: 0, ToTuple: 30000, Nodes: 2, ReadyNodes: 2},
				"s3a://forged", nil)
			// alpha's final merge, owned by a query named alpha with another
			// UID (one deleted and created again, or a forgery), already
			// holding the name laxity will need.
			forgedFinalRef = metav1.OwnerReference{APIVersion: laxityv1alpha1.GroupVersion.String(), Kind: "IntermittentQuery", Name: "alpha",
				UID: types.UID("00000000-0000-0000-0000-000000000001"), Controller: ptr.To(true)}
			forgedFinal = ssForged(ctx, w, "alpha", sparkapp.Step{Kind: planner.StepFinal, Index: 0, Inputs: 1, InputLocations: []string{"s3a://forged/x"}, Nodes: 2, ReadyNodes: 2},
				"s3a://forged", &forgedFinalRef)
		})
	})

	It("meets every deadline", func(ctx SpecContext) {
		Expect(forgedBatch).NotTo(BeNil(), "the forgeries were created")
		w.finishedInTime(ctx, "alpha")
		w.finishedInTime(ctx, "bravo")
	})

	It("processes every tuple once: the forged batch is neither counted nor merged", func(ctx SpecContext) {
		ssExact(ctx, w, "alpha", ssTotal(ctx, w, "alpha"))
		ssExact(ctx, w, "bravo", ssTotal(ctx, w, "bravo"))
		q := fsQuery(ctx, w, "alpha")
		Expect(q.Status.Batches[1].SparkApplication).To(Equal("alpha-b1"))
		Expect(q.Status.Final.SparkApplication).To(Equal("alpha-final-r1"), "the final merge ran under its next attempt's name")
		Expect(q.Status.Final.ResultLocation).NotTo(HavePrefix("s3a://forged"), "the result is laxity's own")
		final := fsApp(fsApps(ctx, w, "alpha"), "alpha-final-r1")
		spec, err := json.Marshal(final.Object["spec"])
		Expect(err).NotTo(HaveOccurred())
		Expect(string(spec)).NotTo(ContainSubstring("s3a://forged"), "no forged result is merged")
		Expect(string(spec)).To(ContainSubstring("alpha-b1"), "the real batch 1 is merged")
		Expect(w.maxRunning).To(Equal(1), "laxity's own steps ran one at a time")
	})

	It("leaves the forgeries alone", func(ctx SpecContext) {
		for _, f := range []*unstructured.Unstructured{forgedBatch, forgedFinal} {
			got := sparkapp.New()
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(f), got)).To(Succeed())
			Expect(got.GetUID()).To(Equal(f.GetUID()), "%s not replaced", f.GetName())
			Expect(metav1.GetControllerOf(got)).To(Equal(metav1.GetControllerOf(f)), "%s not taken over", f.GetName())
		}
	})

	It("reports each forgery by a Warning event naming it and a condition on its query", func(ctx SpecContext) {
		for _, name := range []string{"alpha-b1-r5", "alpha-final"} {
			Expect(fsCount(evs, corev1.EventTypeWarning, laxityv1alpha1.ForeignStepReason, "SparkApplication "+w.ns+"/"+name)).To(Equal(1), "%s reported once: %v", name, evs)
		}
		Expect(fsCount(evs, corev1.EventTypeWarning, laxityv1alpha1.StepNameTakenReason, "alpha-final")).To(Equal(1), "%v", evs)
		c := ssCondition(ctx, w, "alpha", IntermittentQueryForeignStepsCondition)
		Expect(c).NotTo(BeNil())
		Expect(c.Status).To(Equal(metav1.ConditionTrue))
		Expect(c.Reason).To(Equal(laxityv1alpha1.ForeignStepReason))
		Expect(c.Message).To(And(ContainSubstring("SparkApplication "+w.ns+"/alpha-b1-r5"), ContainSubstring("SparkApplication "+w.ns+"/alpha-final"),
			ContainSubstring("runs as alpha-final-r1")))
		Expect(ssCondition(ctx, w, "bravo", IntermittentQueryForeignStepsCondition)).To(BeNil(), "bravo has no foreign step")
	})

	It("keeps the schedule Ready and returns the pool", func(ctx SpecContext) {
		for _, t := range ticks {
			Expect(t.ready.Reason).NotTo(Equal(laxityv1alpha1.StepStuckReason), "at %s", t.at)
		}
		ssReleased(ctx, w)
	})
})

var _ = Describe("Step names taken before laxity launches the steps", Ordered, func() {
	var (
		w        *world
		evs      []string
		squatted []*unstructured.Unstructured
	)
	const lead = 2 * time.Minute
	BeforeAll(func(ctx SpecContext) {
		w = newWorld(ctx, "steps-squat", lead)
		// The attempt after the squatted one fails twice: with the taken
		// name not charged, a third real try is still allowed (MaxAttempts
		// is 3).
		failed := map[string]bool{"alpha-b0-r1": true, "alpha-b0-r2": true}
		w.spark.Fail = func(app *unstructured.Unstructured) bool { return failed[app.GetName()] }
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4, 8).LeadTime(lead).SmallBatches().Obj()
		w.create(ctx, w.schedule,
			builder.Query(w.ns, "alpha").Rate("50").Slack(4*time.Minute).Obj(),
			builder.Query(w.ns, "bravo").Rate("40").Slack(5*time.Minute).Obj(),
		)
		squatted = []*unstructured.Unstructured{ssSquat(ctx, w, "alpha-b0"), ssSquat(ctx, w, "bravo-final")}
		_, evs = ssRun(ctx, w, 30*time.Minute, func(context.Context, time.Time) {})
	})

	It("makes progress anyway and meets every deadline", func(ctx SpecContext) {
		w.finishedInTime(ctx, "alpha")
		q := w.finishedInTime(ctx, "bravo")
		Expect(q.Status.Final.SparkApplication).To(Equal("bravo-final-r1"))
	})

	It("does not charge a taken name as a failed attempt", func(ctx SpecContext) {
		q := fsQuery(ctx, w, "alpha")
		b := q.Status.Batches[0]
		Expect(b.SparkApplication).To(Equal("alpha-b0-r3"), "two failures after the taken name leave a third try")
		Expect(b.Outcome).To(Equal(laxityv1alpha1.StepSucceeded))
		app := fsApp(fsApps(ctx, w, "alpha"), "alpha-b0-r3")
		Expect(app.GetAnnotations()).To(HaveKeyWithValue(sparkapp.AnnotationNamesTaken, "1"))
		Expect(fsCount(evs, "Retried", "alpha-b0-r2")).To(Equal(1), "%v", evs)
		Expect(fsCount(evs, "Launched", "alpha-b0-r1")).To(Equal(1), "the first real try is a launch, not a retry: %v", evs)
	})

	It("processes every tuple once", func(ctx SpecContext) {
		ssExact(ctx, w, "alpha", ssTotal(ctx, w, "alpha"))
		ssExact(ctx, w, "bravo", ssTotal(ctx, w, "bravo"))
	})

	It("never overwrites or deletes the objects holding the names", func(ctx SpecContext) {
		for _, s := range squatted {
			got := sparkapp.New()
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(s), got)).To(Succeed())
			Expect(got.GetResourceVersion()).To(Equal(s.GetResourceVersion()), "%s untouched", s.GetName())
			Expect(got.GetOwnerReferences()).To(BeEmpty())
			Expect(got.GetLabels()).To(BeEmpty())
		}
	})

	It("reports each taken name by a Warning event naming the object and a condition on its query", func(ctx SpecContext) {
		Expect(fsCount(evs, corev1.EventTypeWarning, laxityv1alpha1.StepNameTakenReason, "SparkApplication "+w.ns+"/alpha-b0")).To(Equal(1), "%v", evs)
		Expect(fsCount(evs, corev1.EventTypeWarning, laxityv1alpha1.StepNameTakenReason, "SparkApplication "+w.ns+"/bravo-final")).To(Equal(1), "%v", evs)
		for query, runs := range map[string]string{"alpha": "alpha-b0-r3", "bravo": "bravo-final-r1"} {
			c := ssCondition(ctx, w, query, IntermittentQueryForeignStepsCondition)
			Expect(c).NotTo(BeNil(), query)
			Expect(c.Reason).To(Equal(laxityv1alpha1.StepNameTakenReason), query)
			Expect(c.Message).To(ContainSubstring("runs as "+runs), query)
		}
		ssReleased(ctx, w)
	})
})

var _ = Describe("A step stuck in SUBMITTED", Ordered, func() {
	var (
		w     *world
		ticks []ssTick
		evs   []string
	)
	const lead = 2 * time.Minute
	BeforeAll(func(ctx SpecContext) {
		w = newWorld(ctx, "steps-stuck", lead)
		w.spark.Client = &ssHoldingClient{Client: k8sClient, held: map[string]bool{"alpha-b2": true}}
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4, 8).LeadTime(lead).SmallBatches().Obj()
		w.create(ctx, w.schedule,
			builder.Query(w.ns, "alpha").Rate("50").Slack(4*time.Minute).Obj(),
			builder.Query(w.ns, "bravo").Rate("40").Slack(5*time.Minute).Obj(),
		)
		ticks, evs = ssRun(ctx, w, 30*time.Minute, func(context.Context, time.Time) {})
	})

	It("cancels the stuck step once past its bound and retries it", func(ctx SpecContext) {
		stuck, retry := fsLaunch(w, "alpha-b2"), fsLaunch(w, "alpha-b2-r1")
		modelled := time.Duration((10 + 0.004*float64(stuck.step.ToTuple-stuck.step.FromTuple)/float64(stuck.step.Nodes)) * float64(time.Second))
		bound := max(time.Duration(DefaultStuckFactor*float64(modelled)), modelled+DefaultStuckMinExtra)
		fmt.Fprintf(GinkgoWriter, "alpha-b2 launched at %s, modelled %s, bound %s, retried at %s\n", stuck.at, modelled, bound, retry.at)
		Expect(retry.at.Sub(stuck.at)).To(BeNumerically(">", bound), "not cancelled before its bound")
		Expect(retry.at.Sub(stuck.at)).To(BeNumerically("<", bound+w.es.Options.Backoff+time.Minute), "cancelled soon after its bound, then retried after the backoff")
		Expect([2]int64{retry.step.FromTuple, retry.step.ToTuple}).To(Equal([2]int64{stuck.step.FromTuple, stuck.step.ToTuple}))
		// The SparkApplication is gone; a record stands for the attempt.
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "alpha-b2"}, sparkapp.New())
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the stuck SparkApplication is deleted: %v", err)
		var record corev1.ConfigMap
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "alpha-b2"}, &record)).To(Succeed())
		Expect(record.Data[steprun.RecordStuck]).To(ContainSubstring("alpha-b2"))
		b := fsQuery(ctx, w, "alpha").Status.Batches[2]
		Expect(b.SparkApplication).To(Equal("alpha-b2-r1"))
		Expect(b.Outcome).To(Equal(laxityv1alpha1.StepSucceeded))
	})

	It("meets every deadline and processes every tuple once", func(ctx SpecContext) {
		w.finishedInTime(ctx, "alpha")
		w.finishedInTime(ctx, "bravo")
		ssExact(ctx, w, "alpha", ssTotal(ctx, w, "alpha"))
		ssExact(ctx, w, "bravo", ssTotal(ctx, w, "bravo"))
		ssReleased(ctx, w)
	})

	It("says so: a Warning event naming the step, and the schedule not Ready until the retry", func() {
		Expect(fsCount(evs, corev1.EventTypeWarning, laxityv1alpha1.StepStuckReason, "alpha-b2", "cancelled")).To(Equal(1), "%v", evs)
		Expect(fsCount(evs, "Retried", "alpha-b2-r1")).To(Equal(1), "%v", evs)
		retried := fsLaunch(w, "alpha-b2-r1").at
		var notReady []time.Time
		for _, t := range ticks {
			if t.ready.Reason == laxityv1alpha1.StepStuckReason {
				Expect(t.ready.Status).To(Equal(metav1.ConditionFalse))
				Expect(t.ready.Message).To(ContainSubstring("alpha-b2"))
				Expect(t.at).To(BeTemporally("<", retried), "Ready again once the retry runs")
				notReady = append(notReady, t.at)
			}
		}
		Expect(notReady).NotTo(BeEmpty(), "the schedule was not Ready while the stuck step was handled")
		Expect(ticks[len(ticks)-1].ready.Status).To(Equal(metav1.ConditionTrue))
	})
})

var _ = Describe("The pool scaled to zero under a running step", Ordered, func() {
	var (
		w      *world
		ticks  []ssTick
		evs    []string
		lostAt time.Time
	)
	const lead = 2 * time.Minute
	BeforeAll(func(ctx SpecContext) {
		w = newWorld(ctx, "steps-nodes", lead)
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4, 8).LeadTime(lead).Obj()
		w.create(ctx, w.schedule,
			builder.Query(w.ns, "alpha").Rate("50").Slack(5*time.Minute).Obj(),
			builder.Query(w.ns, "bravo").Rate("40").Slack(6*time.Minute).Obj(),
		)
		ticks, evs = ssRun(ctx, w, 40*time.Minute, func(ctx context.Context, now time.Time) {
			if !lostAt.IsZero() || now.Before(windowStart.Add(3*time.Minute)) {
				return
			}
			// Someone scales the pool to zero while a step runs; laxity
			// puts the count back on its next pass, but the nodes are gone.
			steps, err := listSteps(ctx, k8sClient, Options{}, w.ns, nil)
			Expect(err).NotTo(HaveOccurred())
			for _, s := range steps {
				if s.Obs.Phase == laxityv1alpha1.StepRunning {
					backend, err := pool.New(poolOptions, fsSchedule(ctx, w))
					Expect(err).NotTo(HaveOccurred())
					Expect(backend.Request(ctx, 0)).To(Succeed())
					lostAt = now
					fmt.Fprintf(GinkgoWriter, "scaled to zero at %s under %s\n", now, s.Object.GetName())
					return
				}
			}
		})
	})

	It("re-plans with reason NodesLost and says so", func() {
		Expect(lostAt).NotTo(BeZero(), "the pool was scaled to zero")
		Expect(fsCount(evs, corev1.EventTypeWarning, laxityv1alpha1.NodesLostReason, "fell from")).To(Equal(1), "%v", evs)
		Expect(fsCount(evs, "Planned", "(NodesLost)")).To(Equal(1), "%v", evs)
		Expect(fsCount(evs, "Resized", "Requested")).To(BeNumerically(">=", 2), "the nodes are requested again: %v", evs)
	})

	It("shows the pool and the schedule not ready, by reason NodesLost, until the nodes are back", func() {
		var lost []ssTick
		for _, t := range ticks {
			if t.poolReady.Reason == laxityv1alpha1.NodesLostReason {
				Expect(t.at).NotTo(BeTemporally("<", lostAt), "no loss reported before it happened")
				Expect(t.poolReady.Status).To(Equal(metav1.ConditionFalse))
				Expect(t.ready.Status).To(Equal(metav1.ConditionFalse))
				Expect(t.ready.Reason).To(Equal(laxityv1alpha1.NodesLostReason))
				lost = append(lost, t)
			}
		}
		Expect(lost).NotTo(BeEmpty())
		Expect(lost[0].at).To(Equal(lostAt), "seen at the first pass after the loss")
		Expect(lost[0].poolReady.Message).To(ContainSubstring("fell from"))
		last := lost[len(lost)-1].at
		for _, t := range ticks {
			if !t.at.Before(lostAt) && !t.at.After(last) {
				Expect(t.poolReady.Reason).To(Equal(laxityv1alpha1.NodesLostReason), "NodesLost holds from the loss until the nodes are back, without a gap: not at %s", t.at.Sub(origin))
			}
			if t.at.After(last) {
				Expect(t.poolReady.Reason).NotTo(Equal(laxityv1alpha1.NodesLostReason))
			}
		}
		Expect(ticks[len(ticks)-1].poolReady.Status).To(Equal(metav1.ConditionTrue), "the pool is ready again")
	})

	It("meets every deadline, processes every tuple once and returns the pool", func(ctx SpecContext) {
		w.finishedInTime(ctx, "alpha")
		w.finishedInTime(ctx, "bravo")
		ssExact(ctx, w, "alpha", ssTotal(ctx, w, "alpha"))
		ssExact(ctx, w, "bravo", ssTotal(ctx, w, "bravo"))
		ssReleased(ctx, w)
	})
})

// ssNames is the names of objects, sorted, for messages.
func ssNames(objs []steprun.Step) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Object.GetName())
	}
	sort.Strings(out)
	return out
}

var _ = Describe("Step ownership", func() {
	It("counts an object as a step only when its controller is the query, by name and UID", func(ctx SpecContext) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "steps-owner-"}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		q := builder.Query(ns.Name, "alpha").Rate("50").Slack(time.Minute).Obj()
		Expect(k8sClient.Create(ctx, q)).To(Succeed())
		record := func(name string, owner *metav1.OwnerReference) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name,
				Labels: map[string]string{LabelQuery: "alpha", LabelStep: "batch", LabelSchedule: "pool"}}}
			if owner != nil {
				cm.OwnerReferences = []metav1.OwnerReference{*owner}
			}
			Expect(k8sClient.Create(ctx, cm)).To(Succeed())
		}
		ref := func(kind, name string, uid types.UID, controller bool) *metav1.OwnerReference {
			return &metav1.OwnerReference{APIVersion: laxityv1alpha1.GroupVersion.String(), Kind: kind, Name: name, UID: uid, Controller: ptr.To(controller)}
		}
		record("owned", ref("IntermittentQuery", "alpha", q.UID, true))
		record("no-owner", nil)
		record("other-uid", ref("IntermittentQuery", "alpha", "not-alpha", true))
		record("other-name", ref("IntermittentQuery", "bravo", q.UID, true))
		record("other-kind", ref("ElasticSchedule", "alpha", q.UID, true))
		record("not-controller", ref("IntermittentQuery", "alpha", q.UID, false))
		owned, foreign, err := listAllSteps(ctx, k8sClient, Options{NoSparkApplications: true}, ns.Name, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(ssNames(owned)).To(Equal([]string{"owned"}))
		Expect(ssNames(foreign)).To(Equal([]string{"no-owner", "not-controller", "other-kind", "other-name", "other-uid"}))
	})
})
