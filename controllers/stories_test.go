package controllers

import (
	"context"
	"fmt"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/emr/emrfake"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/pool"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/internal/spec"
	"github.com/laxity-dev/laxity/internal/standin"
	"github.com/laxity-dev/laxity/test/builder"
)

// world is one schedule in its own namespace, with the reconcilers on a
// fake clock and the simulated provisioner and Spark operator around them.
type world struct {
	ns       string
	schedule *laxityv1alpha1.ElasticSchedule
	clock    *clocktesting.FakeClock
	es       *ElasticScheduleReconciler
	iq       *IntermittentQueryReconciler
	nodes    *standin.Provisioner
	spark    *standin.Spark
	// aws, when set, is the EMR on EKS the schedule's steps run on instead
	// of spark (see stories_emr_test.go).
	aws *emrfake.Server
	// failRun says which job runs fail instead of completing.
	failRun func(name string) bool
	// reconcileErrors, when set, collects the schedule's reconcile errors
	// and its Ready condition after each, instead of failing the story on
	// the first.
	reconcileErrors *[]reconcileError
	// launches records every SparkApplication the first tick it is seen.
	launches []launch
	// maxRunning is the most steps seen holding the pool at once.
	maxRunning int
}

type reconcileError struct {
	err   error
	ready *metav1.Condition
}

type launch struct {
	name    string
	at      time.Time
	query   string
	step    sparkapp.Step
	ready   int32
	arrived int64
}

func newWorld(ctx context.Context, name string, leadTime time.Duration) *world {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	w := &world{ns: ns.Name, clock: clocktesting.NewFakeClock(origin)}
	opts := Options{MaxAttempts: 3, Backoff: 20 * time.Second, ResultRoot: "s3a://results", Poll: 10 * time.Second}
	backend := func(_ context.Context, es *laxityv1alpha1.ElasticSchedule) (pool.Backend, error) {
		return pool.New(poolOptions, es)
	}
	sources := &Sources{} // one reading of each input serves both reconcilers, as in Setup
	w.es = &ElasticScheduleReconciler{Client: k8sClient, Clock: w.clock, Recorder: events.NewFakeRecorder(10000), Options: opts, Backend: backend, Sources: sources, Runner: StepRunners(k8sClient, nil)}
	w.iq = &IntermittentQueryReconciler{Client: k8sClient, Clock: w.clock, Recorder: events.NewFakeRecorder(10000), Options: opts, Sources: sources, Runner: StepRunners(k8sClient, nil)}
	w.nodes = &standin.Provisioner{Client: k8sClient, Delay: leadTime}
	w.spark = &standin.Spark{Client: k8sClient, Duration: standin.ModelledDuration(k8sClient, spec.CostModel)}
	return w
}

// windowStart is when the stories' windows open (builder.Query's default):
// five minutes after the schedule is created, so that the first nodes can
// arrive in time.
var windowStart = origin.Add(5 * time.Minute)

// threeQueries are alpha, bravo and charlie: the tighter the deadline, the
// higher the rate, so their slack ranks them in that order throughout.
func threeQueries(ns string) []client.Object {
	return []client.Object{
		builder.Query(ns, "alpha").Rate("50").Slack(90 * time.Second).Obj(),
		builder.Query(ns, "bravo").Rate("40").Slack(3 * time.Minute).Obj(),
		builder.Query(ns, "charlie").Rate("30").Slack(5 * time.Minute).Obj(),
	}
}

func (w *world) create(ctx context.Context, objs ...client.Object) {
	for _, o := range objs {
		Expect(k8sClient.Create(ctx, o)).To(Succeed())
	}
}

// tick moves the world to now: the simulated cluster first, then both
// reconcilers, and records what an observer of the cluster would see.
func (w *world) tick(ctx context.Context, now time.Time) {
	w.clock.SetTime(now)
	var es laxityv1alpha1.ElasticSchedule
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "pool"}, &es)).To(Succeed())
	if w.aws != nil {
		Expect(w.nodes.Tick(ctx, now, w.ns, es.Spec.NodePool.NodeSelector, w.aws.DesiredSize())).To(Succeed())
		w.runJobRuns(ctx, now)
	} else {
		backend, err := pool.New(poolOptions, &es)
		Expect(err).NotTo(HaveOccurred())
		requested, err := backend.Requested(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(w.nodes.Tick(ctx, now, w.ns, es.Spec.NodePool.NodeSelector, requested)).To(Succeed())
		Expect(w.spark.Tick(ctx, now, w.ns)).To(Succeed())
	}

	_, err := w.es.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&es)})
	if err != nil && w.reconcileErrors != nil {
		var after laxityv1alpha1.ElasticSchedule
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&es), &after)).To(Succeed())
		*w.reconcileErrors = append(*w.reconcileErrors, reconcileError{err, meta.FindStatusCondition(after.Status.Conditions, laxityv1alpha1.ElasticScheduleReadyCondition)})
		err = nil
	}
	Expect(err).NotTo(HaveOccurred())
	var queries laxityv1alpha1.IntermittentQueryList
	Expect(k8sClient.List(ctx, &queries, client.InNamespace(w.ns))).To(Succeed())
	for i := range queries.Items {
		_, err := w.iq.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&queries.Items[i])})
		Expect(err).NotTo(HaveOccurred())
	}
	w.observe(ctx, now)
}

func (w *world) observe(ctx context.Context, now time.Time) {
	steps, err := listSteps(ctx, k8sClient, Options{}, w.ns, nil)
	Expect(err).NotTo(HaveOccurred())
	ready, err := pool.ReadyNodes(ctx, k8sClient, map[string]string{"laxity.dev/pool": w.ns})
	Expect(err).NotTo(HaveOccurred())
	seen := map[string]bool{}
	for _, l := range w.launches {
		seen[l.name] = true
	}
	running := 0
	for _, s := range steps {
		app := s.Object
		if phase := s.Obs.Phase; phase == laxityv1alpha1.StepPending || phase == laxityv1alpha1.StepRunning {
			running++
		}
		if seen[app.GetName()] {
			continue
		}
		query, step, err := sparkapp.StepOf(app)
		Expect(err).NotTo(HaveOccurred())
		var q laxityv1alpha1.IntermittentQuery
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: query}, &q)).To(Succeed())
		src, err := w.es.Sources.For(ctx, &q)
		Expect(err).NotTo(HaveOccurred())
		arrived, err := src.Arrived(context.Background(), now)
		Expect(err).NotTo(HaveOccurred())
		w.launches = append(w.launches, launch{name: app.GetName(), at: now, query: query, step: step, ready: ready, arrived: arrived})
	}
	w.maxRunning = max(w.maxRunning, running)
}

// report writes what ran next to the plan, for a failing story.
func (w *world) report(ctx context.Context) {
	for _, l := range w.launches {
		fmt.Fprintf(GinkgoWriter, "%6.0fs %-20s nodes %d ready %d arrived %d range [%d, %d)\n",
			l.at.Sub(origin).Seconds(), l.name, l.step.Nodes, l.ready, l.arrived, l.step.FromTuple, l.step.ToTuple)
	}
	var queries laxityv1alpha1.IntermittentQueryList
	Expect(k8sClient.List(ctx, &queries, client.InNamespace(w.ns))).To(Succeed())
	for _, q := range queries.Items {
		for _, b := range q.Status.Batches {
			fmt.Fprintf(GinkgoWriter, "status %s batch %d %s %v-%v\n", q.Name, b.Index, b.Outcome, b.Start, b.End)
		}
		fmt.Fprintf(GinkgoWriter, "status %s final %+v arrived %v processed %v\n", q.Name, q.Status.Final, ptr.Deref(q.Status.ArrivedTuples, -1), ptr.Deref(q.Status.ProcessedTuples, -1))
	}
	var es laxityv1alpha1.ElasticSchedule
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(w.schedule), &es)).To(Succeed())
	for _, c := range es.Status.Conditions {
		fmt.Fprintf(GinkgoWriter, "schedule %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	stored, err := loadPlan(ctx, k8sClient, w.schedule)
	if err == nil && stored != nil {
		for _, s := range stored.doc.Steps {
			fmt.Fprintf(GinkgoWriter, "plan %6.0fs-%6.0fs %s %s %d [%d, %d) on %d\n", s.Start, s.End, s.Query, s.Kind, s.Index, s.FromTuple, s.ToTuple, s.Nodes)
		}
		fmt.Fprintf(GinkgoWriter, "plan origin %s nodes %v requests %v\n", stored.doc.Origin, stored.doc.Nodes, stored.doc.Requests)
	}
}

// run ticks until every query has finished and the pool is back at its
// idle size, or until the time limit.
func (w *world) run(ctx context.Context, limit time.Duration, step time.Duration) {
	w.runFeeding(ctx, limit, step, func(context.Context, time.Time) {})
}

// runFeeding is run with feed called at every tick's time before the tick,
// for stories whose inputs (a topic, a bucket) are written as the clock
// moves, or whose operator restarts.
func (w *world) runFeeding(ctx context.Context, limit, step time.Duration, feed func(ctx context.Context, now time.Time)) {
	for t := origin; !t.After(origin.Add(limit)); t = t.Add(step) {
		w.clock.SetTime(t)
		feed(ctx, t)
		w.tick(ctx, t)
		if w.settled(ctx) {
			return
		}
	}
}

// finishedInTime expects the named query to have succeeded by its deadline
// and returns it.
func (w *world) finishedInTime(ctx context.Context, name string) laxityv1alpha1.IntermittentQuery {
	var q laxityv1alpha1.IntermittentQuery
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &q)).To(Succeed())
	Expect(meta.IsStatusConditionTrue(q.Status.Conditions, laxityv1alpha1.IntermittentQuerySucceededCondition)).To(BeTrue(), "query %s: %+v", name, q.Status.Conditions)
	Expect(meta.IsStatusConditionTrue(q.Status.Conditions, laxityv1alpha1.IntermittentQueryDeadlineMissedCondition)).To(BeFalse(), "query %s missed its deadline", name)
	Expect(q.Status.Final.End.Time).NotTo(BeTemporally(">", q.Spec.Deadline.Time), "query %s", name)
	return q
}

func (w *world) settled(ctx context.Context) bool {
	var queries laxityv1alpha1.IntermittentQueryList
	Expect(k8sClient.List(ctx, &queries, client.InNamespace(w.ns))).To(Succeed())
	for _, q := range queries.Items {
		if !meta.IsStatusConditionTrue(q.Status.Conditions, laxityv1alpha1.IntermittentQuerySucceededCondition) {
			return false
		}
	}
	var es laxityv1alpha1.ElasticSchedule
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(w.schedule), &es)).To(Succeed())
	return ptr.Deref(es.Status.NodesRequested, -1) == ptr.Deref(es.Spec.NodePool.IdleNodes, 0)
}

var _ = Describe("A schedule running three queries", Ordered, func() {
	var w *world
	const lead = 2 * time.Minute
	BeforeAll(func(ctx SpecContext) {
		w = newWorld(ctx, "story1", lead)
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4, 8).LeadTime(lead).Obj()
		w.create(ctx, w.schedule)
		w.create(ctx, threeQueries(w.ns)...)
		w.run(ctx, 30*time.Minute, 5*time.Second)
		w.report(ctx)
	})

	It("meets every deadline", func(ctx SpecContext) {
		for _, name := range []string{"alpha", "bravo", "charlie"} {
			w.finishedInTime(ctx, name)
		}
	})

	It("runs one step at a time", func() {
		Expect(w.maxRunning).To(Equal(1))
	})

	It("launches every batch after its tuples arrived, in index order, each range once", func(ctx SpecContext) {
		next := map[string]int64{}
		index := map[string]int{}
		for _, l := range w.launches {
			if l.step.Kind != planner.StepBatch {
				continue
			}
			Expect(l.step.Attempt).To(BeZero(), "no step failed, so none is retried")
			Expect(l.step.Index).To(Equal(index[l.query]), "batch order of %s", l.query)
			Expect(l.step.FromTuple).To(Equal(next[l.query]), "tuple ranges of %s tile the window", l.query)
			Expect(l.arrived).To(BeNumerically(">=", l.step.ToTuple), "%s launched before its tuples arrived", l.name)
			index[l.query]++
			next[l.query] = l.step.ToTuple
		}
		for name, to := range next {
			var q laxityv1alpha1.IntermittentQuery
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &q)).To(Succeed())
			rate, _ := strconv.ParseFloat(q.Spec.Input.RatePerSecond, 64)
			Expect(to).To(Equal(int64(rate*600)), "every tuple of %s processed", name)
		}
	})

	It("launches steps only on nodes that are ready, which were requested a lead time before", func() {
		for _, l := range w.launches {
			Expect([]int32{2, 4, 8}).To(ContainElement(l.step.Nodes), l.name)
			Expect(l.step.Nodes).To(BeNumerically("<=", l.ready), "%s planned for more nodes than were ready", l.name)
		}
	})

	It("returns the pool to its idle size at the end", func(ctx SpecContext) {
		var es laxityv1alpha1.ElasticSchedule
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(w.schedule), &es)).To(Succeed())
		Expect(es.Status.NodesRequested).To(Equal(ptr.To[int32](0)))
		Expect(meta.IsStatusConditionTrue(es.Status.Conditions, laxityv1alpha1.ElasticScheduleFeasibleCondition)).To(BeTrue())
		fmt.Fprintf(GinkgoWriter, "launches: %d, plan cost %s\n", len(w.launches), es.Status.Chosen.Cost)
	})
})
