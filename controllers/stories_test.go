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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	// due is, as of the last tick, the earliest instant something asked
	// the world to be looked at again: a reconciler's requeue, the
	// simulated cluster's next change; zero when nothing did.
	due time.Time
	// instants are the story's own instants (its actions, its inputs'
	// arrivals), each a tick of its own.
	instants []time.Time
	// requested is the pool size the simulated provisioner was last
	// brought towards.
	requested int32
	// passes counts the schedule's reconciles.
	passes int
	// caughtUp, when set, waits until the reconcilers' reader (a cache)
	// has seen every write made so far: a pass that read a step still
	// running after it ended would be looked at again only at its next
	// event, maybe a poll later.
	caughtUp func(ctx context.Context)
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
	opts := Options{MaxAttempts: 3, Backoff: 20 * time.Second, ResultRoot: "s3a://results", Poll: storyPoll}
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

// storyPoll is the reconcilers' poll in the stories. Their synthetic
// sources say when each batch fills (source.Forecaster), so a pass asks
// to be woken when anything it waits for is due, and the poll only covers
// a change a watch missed; the stories miss none, since every tick
// reconciles everything. It is the embedded demo's poll. Stories whose
// sources cannot tell their arrivals ahead (a Kafka topic, a bucket) poll
// as often as a cluster would (pollEvery).
var storyPoll = time.Minute

// reactWithin is how soon the simulated cluster takes up what a pass asked
// of it: a SparkApplication to submit, a job run to start, nodes to add or
// remove.
const reactWithin = time.Second

// pollEvery sets the reconcilers' poll, for a story whose sources must be
// polled for their arrivals.
func (w *world) pollEvery(d time.Duration) {
	w.es.Options.Poll, w.iq.Options.Poll = d, d
}

// tick moves the world to now: the simulated cluster first, then both
// reconcilers, and records what an observer of the cluster would see and
// when the world must be looked at next (next).
func (w *world) tick(ctx context.Context, now time.Time) {
	es := w.simulate(ctx, now)
	w.catchUp(ctx)
	w.passes++
	res, err := w.es.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(es)})
	if err != nil && w.reconcileErrors != nil {
		var after laxityv1alpha1.ElasticSchedule
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(es), &after)).To(Succeed())
		*w.reconcileErrors = append(*w.reconcileErrors, reconcileError{err, meta.FindStatusCondition(after.Status.Conditions, laxityv1alpha1.ElasticScheduleReadyCondition)})
		// Retried with backoff, as controller-runtime would; the poll
		// bounds the wait.
		err = nil
		res = ctrl.Result{RequeueAfter: reactWithin}
	}
	Expect(err).NotTo(HaveOccurred())
	w.requeue(now, res)
	w.catchUp(ctx)
	w.reconcileQueries(ctx, now, w.iq)
	w.observe(ctx, now)
	w.follow(ctx, now, es)
}

// simulate sets the clock to now and moves the simulated cluster there: the
// provisioner towards the pool's size, the Spark operator (or EMR) on. It
// forgets what the last tick was due for and notes the cluster's next
// change, and returns the schedule as the tick found it.
func (w *world) simulate(ctx context.Context, now time.Time) *laxityv1alpha1.ElasticSchedule {
	w.clock.SetTime(now)
	w.due = time.Time{}
	var es laxityv1alpha1.ElasticSchedule
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "pool"}, &es)).To(Succeed())
	w.requested = w.poolRequested(ctx, &es)
	Expect(w.nodes.Tick(ctx, now, w.ns, es.Spec.NodePool.NodeSelector, w.requested)).To(Succeed())
	w.wake(w.nodes.Next)
	if w.aws != nil {
		w.runJobRuns(ctx, now)
	} else {
		Expect(w.spark.Tick(ctx, now, w.ns)).To(Succeed())
		w.wake(w.spark.Next)
	}
	return &es
}

// poolRequested is the pool size the schedule's backend holds now.
func (w *world) poolRequested(ctx context.Context, es *laxityv1alpha1.ElasticSchedule) int32 {
	if w.aws != nil {
		return w.aws.DesiredSize()
	}
	backend, err := pool.New(poolOptions, es)
	Expect(err).NotTo(HaveOccurred())
	requested, err := backend.Requested(ctx)
	Expect(err).NotTo(HaveOccurred())
	return requested
}

// reconcileQueries reconciles every query of the world with iq, as their
// watches would after a tick's changes.
func (w *world) reconcileQueries(ctx context.Context, now time.Time, iq *IntermittentQueryReconciler) {
	var queries laxityv1alpha1.IntermittentQueryList
	Expect(k8sClient.List(ctx, &queries, client.InNamespace(w.ns))).To(Succeed())
	if w.caughtUp == nil {
		// What the queries share is read once for all of them, as from
		// the manager's cache once it has caught up.
		direct := iq.Client
		iq.Client = newTickReader(direct)
		defer func() { iq.Client = direct }()
	}
	for i := range queries.Items {
		res, err := iq.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&queries.Items[i])})
		Expect(err).NotTo(HaveOccurred())
		w.requeue(now, res)
	}
}

// follow notes what the simulated cluster must take up after the tick's
// passes: a step launched and not yet submitted, a pool resized.
func (w *world) follow(ctx context.Context, now time.Time, es *laxityv1alpha1.ElasticSchedule) {
	if w.poolRequested(ctx, es) != w.requested {
		w.wake(now.Add(reactWithin))
	}
	if w.aws != nil && w.jobRunsMoving() {
		w.wake(now.Add(reactWithin))
	}
}

// catchUp waits for the reconcilers' reader, when it is a cache, to see
// every write made so far.
func (w *world) catchUp(ctx context.Context) {
	if w.caughtUp != nil {
		w.caughtUp(ctx)
	}
}

// wake notes that the world must be looked at again at t (zero: never).
func (w *world) wake(t time.Time) {
	if !t.IsZero() && (w.due.IsZero() || t.Before(w.due)) {
		w.due = t
	}
}

// requeue notes a reconcile's result.
func (w *world) requeue(now time.Time, res ctrl.Result) {
	if res.RequeueAfter > 0 {
		w.wake(now.Add(res.RequeueAfter))
	}
}

// at makes each instant a tick of its own: the story acts or its inputs
// arrive then.
func (w *world) at(instants ...time.Time) {
	w.instants = append(w.instants, instants...)
}

// next is the instant of the tick after now: the earliest of what the last
// tick was due for and the story's own instants, and at the latest a poll
// later, so that a story waiting for what no one announces still moves
// on. Instants are whole seconds from origin, as the stand-ins stamp
// them, and at least a second apart.
func (w *world) next(now time.Time) time.Time {
	next := now.Add(w.es.Options.Poll)
	if !w.due.IsZero() && w.due.Before(next) {
		next = w.due
	}
	for _, t := range w.instants {
		if t.After(now) && t.Before(next) {
			next = t
		}
	}
	if r := next.Sub(origin) % time.Second; r != 0 {
		next = next.Add(time.Second - r)
	}
	if next.Before(now.Add(time.Second)) {
		next = now.Add(time.Second)
	}
	return next
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
		if _, ok := app.(*unstructured.Unstructured); ok && s.Obs.State == sparkapp.StateNew {
			// The Spark operator submits it on its next look.
			w.wake(now.Add(reactWithin))
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
	fmt.Fprintf(GinkgoWriter, "%d passes of the schedule, the last at %.0fs\n", w.passes, w.clock.Now().Sub(origin).Seconds())
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

// run ticks, from event to event (next), until every query has finished
// and the pool is back at its idle size, or until the time limit.
func (w *world) run(ctx context.Context, limit time.Duration) {
	w.runFeeding(ctx, limit, func(context.Context, time.Time) {})
}

// runFeeding is run with feed called at every tick's time before the tick,
// for stories whose inputs (a topic, a bucket) are written as the clock
// moves, or whose operator restarts; the instants feed needs are the
// story's (at).
func (w *world) runFeeding(ctx context.Context, limit time.Duration, feed func(ctx context.Context, now time.Time)) {
	for t := origin; !t.After(origin.Add(limit)); t = w.next(t) {
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
		w.run(ctx, 30*time.Minute)
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
