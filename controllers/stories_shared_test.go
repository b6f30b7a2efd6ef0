package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/emr/emrfake"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/internal/spec"
	"github.com/laxity-dev/laxity/internal/steprun"
	"github.com/laxity-dev/laxity/internal/steprun/jobrun"
	"github.com/laxity-dev/laxity/test/builder"
	"github.com/laxity-dev/laxity/test/builder/emrbuilder"
)

// Shared steps: three queries of one stream, window and rate, whose
// batches the plan shares, run as one SparkApplication per batch that
// every member owns. The helpers carry an sh prefix.

// shScan is the stream's scan: three quarters of the queries' per-tuple
// cost and most of their start-up, so that sharing a batch pays even
// between two queries, once a re-plan has dropped the third.
var shScan = &laxityv1alpha1.ScanCostModel{OverheadSeconds: "8", SerialSecondsPerTuple: "0", ParallelSecondsPerTuple: "0.009"}

// shTotal is the tuples of each query's window: 50 a second for 10
// minutes.
const shTotal = 30000

// shWorld is a world whose schedule declares stream orders and whose
// queries alpha, bravo and charlie read it, due 3, 4 and 5 minutes after
// their window, and later by extra (at most one); its Spark stand-in runs
// a shared batch as long as the shared model says (shDuration).
func shWorld(ctx context.Context, name string, extra ...time.Duration) *world {
	later := time.Duration(0)
	for _, e := range extra {
		later += e
	}
	const lead = 2 * time.Minute
	w := newWorld(ctx, name, lead)
	es := builder.Schedule(w.ns, "pool").Sizes(2, 4, 8).LeadTime(lead).SmallBatches().Obj()
	es.Spec.Streams = []laxityv1alpha1.Stream{{Name: "orders", Scan: shScan}}
	w.schedule = es
	w.spark.Duration = shDuration(w)
	w.create(ctx, es)
	w.create(ctx, shQuery(w.ns, "alpha", 3*time.Minute+later), shQuery(w.ns, "bravo", 4*time.Minute+later), shQuery(w.ns, "charlie", 5*time.Minute+later))
	return w
}

func shQuery(ns, name string, slack time.Duration) client.Object {
	q := builder.Query(ns, name).Rate("50").Slack(slack).
		CostModel(builder.CostModel(builder.BatchCost("10", "0", "0.012"), builder.MergeCost("5", "0", "0.5"))).Obj()
	q.Spec.Input.Stream = "orders"
	return q
}

// shDuration is how long the stand-in runs a step: a step of one query as
// its model says, a shared batch as the shared model of its members still
// there says (one overhead, the scan once, each member's work beyond it).
func shDuration(w *world) func(ctx context.Context, app metav1.Object) (time.Duration, error) {
	alone := w.spark.Duration
	return func(ctx context.Context, app metav1.Object) (time.Duration, error) {
		_, step, err := sparkapp.StepOf(app)
		if err != nil || len(step.Members) == 0 {
			return alone(ctx, app)
		}
		scan, _, err := spec.StreamScan(w.schedule, 0)
		if err != nil {
			return 0, err
		}
		shared := scan
		for _, m := range step.Members {
			var q laxityv1alpha1.IntermittentQuery
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: app.GetNamespace(), Name: m}, &q); apierrors.IsNotFound(err) {
				continue
			} else if err != nil {
				return 0, err
			}
			model, err := spec.CostModel(&q)
			if err != nil {
				return 0, err
			}
			shared.Overhead = max(shared.Overhead, model.Batch.Overhead)
			shared.Parallel += max(model.Batch.Parallel-scan.Parallel, 0)
			shared.Serial += max(model.Batch.Serial-scan.Serial, 0)
		}
		return costmodel.Duration(shared.Seconds(int(step.Nodes), float64(step.ToTuple-step.FromTuple))), nil
	}
}

// shBatches are the batch SparkApplications of the world, by name.
func shBatches(ctx context.Context, w *world) []unstructured.Unstructured {
	return slices.DeleteFunc(fsApps(ctx, w, ""), func(app unstructured.Unstructured) bool {
		return app.GetLabels()[LabelStep] != string(planner.StepBatch)
	})
}

// shExpectOneObjectPerAttempt holds every step to one object per attempt:
// no batch index of any query is launched twice under one attempt, whether
// alone or shared.
func shExpectOneObjectPerAttempt(ctx context.Context, w *world) {
	seen := map[string]string{}
	for _, app := range fsApps(ctx, w, "") {
		query, step, err := sparkapp.StepOf(&app)
		Expect(err).NotTo(HaveOccurred())
		served := []string{query}
		if len(step.Members) > 0 {
			served = step.Members
		}
		for _, q := range served {
			key := fmt.Sprintf("%s %s %d attempt %d", q, step.Kind, step.Index, step.Attempt)
			Expect(seen).NotTo(HaveKey(key), "%s by %s and %s", key, seen[key], app.GetName())
			seen[key] = app.GetName()
		}
	}
}

// shExpectTiled holds each query's latest batches, shared or its own, to
// cover its window once, in index order, and its status to show them.
func shExpectTiled(ctx context.Context, w *world, name string) {
	q := fsQuery(ctx, w, name)
	next := int64(0)
	for i, b := range q.Status.Batches {
		Expect(b.Index).To(Equal(int32(i)), name)
		Expect(b.FromTuple).To(Equal(next), "%s batch %d", name, i)
		Expect(b.Outcome).To(Equal(laxityv1alpha1.StepSucceeded), "%s batch %d", name, i)
		next = b.ToTuple
	}
	Expect(next).To(Equal(int64(shTotal)), name)
}

var _ = Describe("Three queries of one stream share their batches", Ordered, func() {
	var w *world
	BeforeAll(func(ctx SpecContext) {
		w = shWorld(ctx, "shared")
		w.run(ctx, 30*time.Minute)
		w.report(ctx)
	})

	It("plans shared batches, and says so in the Planned condition", func(ctx SpecContext) {
		stored, err := loadPlan(ctx, k8sClient, w.schedule)
		Expect(err).NotTo(HaveOccurred())
		shared := 0
		for _, s := range stored.doc.Steps {
			if s.Kind == planner.StepBatch {
				Expect(s.Members).To(Equal([]string{"alpha", "bravo", "charlie"}), "batch %d", s.Index)
				shared++
			}
		}
		Expect(shared).To(BeNumerically(">", 1))
		var es laxityv1alpha1.ElasticSchedule
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(w.schedule), &es)).To(Succeed())
		planned := meta.FindStatusCondition(es.Status.Conditions, laxityv1alpha1.ElasticSchedulePlannedCondition)
		Expect(planned).NotTo(BeNil())
		Expect(planned.Message).To(ContainSubstring("shared batches serve 3 queries"))
	})

	It("runs each batch once, as one SparkApplication named by its first member and owned by every member, none of them controller", func(ctx SpecContext) {
		batches := shBatches(ctx, w)
		Expect(batches).NotTo(BeEmpty())
		for _, app := range batches {
			Expect(app.GetName()).To(HavePrefix("alpha-b"))
			Expect(app.GetAnnotations()).To(HaveKeyWithValue(sparkapp.AnnotationMembers, "alpha,bravo,charlie"))
			var owners []string
			for _, ref := range app.GetOwnerReferences() {
				Expect(ref.Controller).To(Or(BeNil(), HaveValue(BeFalse())), app.GetName())
				owners = append(owners, ref.Name)
			}
			Expect(owners).To(Equal([]string{"alpha", "bravo", "charlie"}), app.GetName())
		}
		shExpectOneObjectPerAttempt(ctx, w)
	})

	It("shows the shared step in every member's status, and each member merges its own results", func(ctx SpecContext) {
		for _, name := range []string{"alpha", "bravo", "charlie"} {
			q := w.finishedInTime(ctx, name)
			shExpectTiled(ctx, w, name)
			for _, b := range q.Status.Batches {
				Expect(b.SharedWith).To(Equal([]string{"alpha", "bravo", "charlie"}))
				Expect(b.SparkApplication).To(HavePrefix("alpha-b"))
				Expect(b.ResultLocation).To(ContainSubstring("/" + name + "/" + name + "-b"))
			}
			final := fsApp(fsApps(ctx, w, name), name+"-final")
			conf, _, _ := unstructured.NestedStringMap(final.Object, "spec", "sparkConf")
			for _, b := range q.Status.Batches {
				Expect(conf["spark.laxity.input"]).To(ContainSubstring(b.ResultLocation))
			}
		}
	})

	It("learns nothing from a shared batch as if its query had run alone", func(ctx SpecContext) {
		for _, name := range []string{"alpha", "bravo", "charlie"} {
			q := fsQuery(ctx, w, name)
			for _, o := range spec.Observations(q) {
				Expect(o.Kind).NotTo(Equal(laxityv1alpha1.StepKindBatch), name)
			}
		}
	})
})

var _ = Describe("A shared batch across an operator restart", Ordered, func() {
	var (
		w        *world
		counts   fsCounts
		restarts int
	)
	BeforeAll(func(ctx SpecContext) {
		w = shWorld(ctx, "shared-restart")
		// A fresh manager every 40 s of the window: each finds the shared
		// batches already launched by their names and launches none again.
		c := fsRestartManager(w, &counts)
		for t := origin.Add(5 * time.Minute); t.Before(origin.Add(16 * time.Minute)); t = t.Add(40 * time.Second) {
			w.at(t)
		}
		for t := origin; !t.After(origin.Add(30 * time.Minute)); t = w.next(t) {
			if slices.ContainsFunc(w.instants, t.Equal) {
				c = fsRestartManager(w, &counts)
				restarts++
			}
			fsTick(ctx, w, c, t, false, nil)
			if w.settled(ctx) {
				break
			}
		}
		w.report(ctx)
	})

	It("never launches a shared batch twice, and every member meets its deadline", func(ctx SpecContext) {
		Expect(restarts).To(BeNumerically(">=", 10))
		shExpectOneObjectPerAttempt(ctx, w)
		for _, name := range []string{"alpha", "bravo", "charlie"} {
			w.finishedInTime(ctx, name)
			shExpectTiled(ctx, w, name)
		}
		Expect(shBatches(ctx, w)).To(HaveEach(WithTransform(func(app unstructured.Unstructured) string {
			return app.GetAnnotations()[sparkapp.AnnotationMembers]
		}, Equal("alpha,bravo,charlie"))))
	})
})

var _ = Describe("A member of a shared batch deleted mid-window", Ordered, func() {
	var (
		w       *world
		deleted time.Time
		before  []string
	)
	BeforeAll(func(ctx SpecContext) {
		w = shWorld(ctx, "shared-delete")
		// alpha, the first member, which names the shared batches, goes as
		// soon as its second batch is running.
		fsRunUntil(ctx, w, 30*time.Minute, func(now time.Time) bool {
			if deleted.IsZero() {
				for _, app := range shBatches(ctx, w) {
					if app.GetName() == "alpha-b1" && sparkapp.Observe(&app).State == sparkapp.StateRunning {
						before = fsNames(shBatches(ctx, w))
						Expect(k8sClient.Delete(ctx, fsQuery(ctx, w, "alpha"))).To(Succeed())
						deleted = now
						w.wake(now.Add(reactWithin))
					}
				}
				return false
			}
			return w.settled(ctx)
		})
		w.report(ctx)
	})

	It("neither deletes nor breaks the batch that was running: it finishes for the others", func(ctx SpecContext) {
		Expect(deleted).NotTo(BeZero(), "alpha-b1 never ran")
		b1 := fsApp(fsApps(ctx, w, ""), "alpha-b1")
		Expect(sparkapp.Observe(b1).State).To(Equal(sparkapp.StateCompleted))
		for _, name := range []string{"bravo", "charlie"} {
			q := fsQuery(ctx, w, name)
			Expect(q.Status.Batches[1].SparkApplication).To(Equal("alpha-b1"), name)
			Expect(q.Status.Batches[1].Outcome).To(Equal(laxityv1alpha1.StepSucceeded), name)
		}
	})

	It("shares the rest of the window between the members left, under the next member's name", func(ctx SpecContext) {
		var after []string
		for _, app := range shBatches(ctx, w) {
			if !slices.Contains(before, app.GetName()) {
				after = append(after, app.GetName())
				Expect(app.GetName()).To(HavePrefix("bravo-b"))
				Expect(app.GetAnnotations()).To(HaveKeyWithValue(sparkapp.AnnotationMembers, "bravo,charlie"))
			}
		}
		Expect(after).NotTo(BeEmpty())
		shExpectOneObjectPerAttempt(ctx, w)
		for _, name := range []string{"bravo", "charlie"} {
			w.finishedInTime(ctx, name)
			shExpectTiled(ctx, w, name)
		}
	})
})

var _ = Describe("A query of the stream added mid-window", Ordered, func() {
	var (
		w     *world
		added time.Time
	)
	BeforeAll(func(ctx SpecContext) {
		w = shWorld(ctx, "shared-add")
		// Two minutes into the window, with a deadline 10 minutes after
		// it (25 minutes in, hence the longer run): in time, if the others
		// share (alone, no pool size makes the four of them in time).
		added = origin.Add(7 * time.Minute)
		w.at(added)
		fsRunUntil(ctx, w, 40*time.Minute, func(now time.Time) bool {
			if now.Equal(added) {
				w.create(ctx, shQuery(w.ns, "delta", 10*time.Minute))
				w.wake(now.Add(reactWithin))
				return false
			}
			return !now.Before(added) && w.settled(ctx)
		})
		w.report(ctx)
	})

	It("re-plans: the newcomer, behind the others, runs its batches alone, and the others keep sharing", func(ctx SpecContext) {
		for _, app := range shBatches(ctx, w) {
			query, step, err := sparkapp.StepOf(&app)
			Expect(err).NotTo(HaveOccurred())
			if query == "delta" {
				Expect(step.Members).To(BeEmpty(), app.GetName())
			} else {
				Expect(step.Members).To(Equal([]string{"alpha", "bravo", "charlie"}), app.GetName())
			}
		}
		Expect(fsApps(ctx, w, "delta")).NotTo(BeEmpty())
		shExpectOneObjectPerAttempt(ctx, w)
		for _, name := range []string{"alpha", "bravo", "charlie", "delta"} {
			w.finishedInTime(ctx, name)
			shExpectTiled(ctx, w, name)
		}
	})
})

var _ = Describe("A shared batch that fails and is retried", Ordered, func() {
	var w *world
	BeforeAll(func(ctx SpecContext) {
		w = shWorld(ctx, "shared-retry")
		w.spark.Fail = func(app *unstructured.Unstructured) bool { return app.GetName() == "alpha-b1" }
		w.run(ctx, 30*time.Minute)
		w.report(ctx)
	})

	It("retries it once as one shared step for every member, after the backoff", func(ctx SpecContext) {
		apps := fsApps(ctx, w, "")
		b1, r1 := fsApp(apps, "alpha-b1"), fsApp(apps, "alpha-b1-r1")
		Expect(sparkapp.Observe(b1).State).To(Equal("FAILED"))
		Expect(r1.GetAnnotations()).To(HaveKeyWithValue(sparkapp.AnnotationMembers, "alpha,bravo,charlie"))
		Expect(r1.GetAnnotations()[sparkapp.AnnotationFromTuple]).To(Equal(b1.GetAnnotations()[sparkapp.AnnotationFromTuple]))
		Expect(r1.GetAnnotations()[sparkapp.AnnotationToTuple]).To(Equal(b1.GetAnnotations()[sparkapp.AnnotationToTuple]))
		Expect(fsLaunch(w, "alpha-b1-r1").at.Sub(fsEnded(b1))).To(BeNumerically(">=", w.es.Options.Backoff))
		shExpectOneObjectPerAttempt(ctx, w)
	})

	It("shows attempt 1 in every member's status, and every member meets its deadline", func(ctx SpecContext) {
		for _, name := range []string{"alpha", "bravo", "charlie"} {
			q := w.finishedInTime(ctx, name)
			Expect(q.Status.Batches[1].Attempt).To(Equal(int32(1)), name)
			Expect(q.Status.Batches[1].SparkApplication).To(Equal("alpha-b1-r1"), name)
			shExpectTiled(ctx, w, name)
		}
		var names []string
		for _, app := range fsApps(ctx, w, "") {
			if strings.Contains(app.GetName(), "-r") {
				names = append(names, app.GetName())
			}
		}
		Expect(names).To(Equal([]string{"alpha-b1-r1"}), "only batch 1 failed")
	})
})

var _ = Describe("Shared batches as EMR on EKS job runs", Ordered, func() {
	var (
		w   *world
		aws *emrfake.Server
	)
	BeforeAll(func(ctx SpecContext) {
		const lead = 2 * time.Minute
		w = newWorld(ctx, "shared-emr", lead)
		aws = emrfake.New(GinkgoT())
		w.useEMR(aws)
		es := builder.Schedule(w.ns, "pool").Sizes(2, 4, 8).LeadTime(lead).SmallBatches().Backend(emrbuilder.Backend(aws.Config())).Obj()
		es.Spec.Streams = []laxityv1alpha1.Stream{{Name: "orders", Scan: shScan}}
		// The fake ends a run on the story's next tick: steps slower than
		// modelled, which this story is not about.
		es.Spec.Planning.Learning = laxityv1alpha1.LearningOff
		w.schedule = es
		w.create(ctx, es)
		w.create(ctx, shQuery(w.ns, "alpha", 3*time.Minute), shQuery(w.ns, "bravo", 4*time.Minute), shQuery(w.ns, "charlie", 5*time.Minute))
		w.run(ctx, 30*time.Minute)
		w.report(ctx)
	})

	It("starts one job run per shared batch, recorded once, owned by every member, each of which holds the finalizer", func(ctx SpecContext) {
		records := w.jobRunRecords(ctx)
		batches := 0
		for name, r := range records {
			if r.Labels[LabelStep] != string(planner.StepBatch) {
				continue
			}
			batches++
			Expect(name).To(HavePrefix("alpha-b"))
			Expect(r.Annotations).To(HaveKeyWithValue(sparkapp.AnnotationMembers, "alpha,bravo,charlie"))
			var owners []string
			for _, ref := range r.OwnerReferences {
				Expect(ref.Controller).To(Or(BeNil(), HaveValue(BeFalse())), name)
				owners = append(owners, ref.Name)
			}
			Expect(owners).To(Equal([]string{"alpha", "bravo", "charlie"}), name)
		}
		Expect(batches).To(BeNumerically(">", 1))
		runs := map[string]int{}
		for _, run := range aws.Runs() {
			runs[run.Name]++
		}
		for name, n := range runs {
			Expect(n).To(Equal(1), "job run %s started %d times", name, n)
		}
		Expect(runs).To(HaveLen(len(records)))
		for _, name := range []string{"alpha", "bravo", "charlie"} {
			q := w.finishedInTime(ctx, name)
			Expect(q.Finalizers).To(ContainElement(jobrun.Finalizer), name)
			shExpectTiled(ctx, w, name)
		}
	})
})

var _ = Describe("A shared batch stuck in SUBMITTED", Ordered, func() {
	var (
		w   *world
		evs []string
	)
	BeforeAll(func(ctx SpecContext) {
		// Deadlines that leave room for a batch held past its bound.
		w = shWorld(ctx, "shared-stuck", 5*time.Minute)
		w.spark.Client = &ssHoldingClient{Client: k8sClient, held: map[string]bool{"alpha-b2": true}}
		_, evs = ssRun(ctx, w, 30*time.Minute, func(context.Context, time.Time) {})
		w.report(ctx)
	})

	It("judges it by its members' work together, cancels it once and retries it as one shared step", func(ctx SpecContext) {
		stuck, retry := fsLaunch(w, "alpha-b2"), fsLaunch(w, "alpha-b2-r1")
		// Three members' batches alone, without the plan's margin: less
		// than the bound the shared batch is given, and more than three
		// times one member's, which would cancel it too soon.
		alone := 10 + 0.012*float64(stuck.step.ToTuple-stuck.step.FromTuple)/float64(stuck.step.Nodes)
		modelled := time.Duration(3 * alone * float64(time.Second))
		bound := max(time.Duration(DefaultStuckFactor*float64(modelled)), modelled+DefaultStuckMinExtra)
		fmt.Fprintf(GinkgoWriter, "alpha-b2 launched at %s, bound at least %s, retried at %s\n", stuck.at, bound, retry.at)
		Expect(retry.at.Sub(stuck.at)).To(BeNumerically(">", bound), "not cancelled before its members' bound")
		Expect(retry.step.Members).To(Equal([]string{"alpha", "bravo", "charlie"}))
		Expect(fsCount(evs, laxityv1alpha1.StepStuckReason, "alpha-b2", "cancelled")).To(Equal(1), "%v", evs)
		var record corev1.ConfigMap
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "alpha-b2"}, &record)).To(Succeed())
		Expect(record.Data[steprun.RecordStuck]).To(ContainSubstring("alpha-b2"))
		Expect(record.Annotations).To(HaveKeyWithValue(sparkapp.AnnotationMembers, "alpha,bravo,charlie"))
		Expect(record.OwnerReferences).To(HaveLen(3), "the record stands for the shared batch, owned as it was")
		for _, name := range []string{"alpha", "bravo", "charlie"} {
			q := w.finishedInTime(ctx, name)
			Expect(q.Status.Batches[2].SparkApplication).To(Equal("alpha-b2-r1"), name)
			Expect(q.Status.Batches[2].Outcome).To(Equal(laxityv1alpha1.StepSucceeded), name)
			shExpectTiled(ctx, w, name)
		}
		shExpectOneObjectPerAttempt(ctx, w)
	})
})
