package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/pool"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/test/builder"
)

// Reconcile cost: how many API writes laxity's reconcilers make over a run,
// per launched step and while nothing happens (measured on story 7's runs,
// see costRun), and what 1,000 queries cost in memory and in reconcile
// time. These are measurements, printed to GinkgoWriter (go test -v
// -ginkgo.v); the assertions are loose structural bounds, never timings.

// countingClient counts the writes sent through it, by verb, kind and
// subresource ("Update ElasticSchedule/status").
type countingClient struct {
	client.Client
	mu     sync.Mutex
	counts map[string]int
	// fields counts the status patches by the status fields they set
	// ("IntermittentQuery/status {conditions slackSeconds}"): what drove
	// each write.
	fields map[string]int
	// reads counts Get and List calls by kind, and spent the time every
	// call took (reads and writes), by verb.
	reads map[string]int
	spent map[string]time.Duration
}

func (c *countingClient) took(verb string, started time.Time) {
	c.mu.Lock()
	c.spent[verb] += time.Since(started)
	c.mu.Unlock()
}

func (c *countingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	defer c.took("Get", time.Now())
	c.read("Get", obj)
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *countingClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	defer c.took("List", time.Now())
	c.read("List", list)
	return c.Client.List(ctx, list, opts...)
}

func (c *countingClient) read(verb string, obj k8sruntime.Object) {
	kind := fmt.Sprintf("%T", obj)
	if gvk, err := c.GroupVersionKindFor(obj); err == nil {
		kind = gvk.Kind
	}
	c.mu.Lock()
	c.reads[verb+" "+kind]++
	c.mu.Unlock()
}

func newCountingClient(c client.Client) *countingClient {
	return &countingClient{Client: c, counts: map[string]int{}, fields: map[string]int{}, reads: map[string]int{}, spent: map[string]time.Duration{}}
}

// fieldsSnapshot is a copy of the field counts so far.
func (c *countingClient) fieldsSnapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.fields))
	for k, v := range c.fields {
		out[k] = v
	}
	return out
}

func (c *countingClient) count(verb string, obj k8sruntime.Object, subresource string) {
	kind := fmt.Sprintf("%T", obj)
	if gvk, err := c.GroupVersionKindFor(obj); err == nil {
		kind = gvk.Kind
	}
	key := verb + " " + kind
	if subresource != "" {
		key += "/" + subresource
	}
	c.mu.Lock()
	c.counts[key]++
	c.mu.Unlock()
}

// snapshot is a copy of the counts so far.
func (c *countingClient) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

func (c *countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.count("Create", obj, "")
	return c.Client.Create(ctx, obj, opts...)
}

func (c *countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.count("Update", obj, "")
	return c.Client.Update(ctx, obj, opts...)
}

func (c *countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.count("Patch", obj, "")
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *countingClient) Apply(ctx context.Context, obj k8sruntime.ApplyConfiguration, opts ...client.ApplyOption) error {
	kind := strings.TrimSuffix(strings.TrimPrefix(fmt.Sprintf("%T", obj), "*"), "ApplyConfiguration")
	kind = kind[strings.LastIndex(kind, ".")+1:]
	// An unstructured object (the CapacityBuffer) says its kind itself.
	if u, ok := obj.(interface{ GetKind() string }); ok && u.GetKind() != "" {
		kind = u.GetKind()
	}
	c.mu.Lock()
	c.counts["Apply "+kind]++
	c.mu.Unlock()
	return c.Client.Apply(ctx, obj, opts...)
}

func (c *countingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	c.count("Delete", obj, "")
	return c.Client.Delete(ctx, obj, opts...)
}

func (c *countingClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	c.count("DeleteAllOf", obj, "")
	return c.Client.DeleteAllOf(ctx, obj, opts...)
}

func (c *countingClient) Status() client.SubResourceWriter {
	return &countingSubResource{SubResourceClient: c.Client.SubResource("status"), parent: c, name: "status"}
}

func (c *countingClient) SubResource(name string) client.SubResourceClient {
	return &countingSubResource{SubResourceClient: c.Client.SubResource(name), parent: c, name: name}
}

type countingSubResource struct {
	client.SubResourceClient
	parent *countingClient
	name   string
}

func (s *countingSubResource) Create(ctx context.Context, obj client.Object, sub client.Object, opts ...client.SubResourceCreateOption) error {
	s.parent.count("Create", obj, s.name)
	return s.SubResourceClient.Create(ctx, obj, sub, opts...)
}

func (s *countingSubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	s.parent.count("Update", obj, s.name)
	defer s.parent.took("Update/"+s.name, time.Now())
	return s.SubResourceClient.Update(ctx, obj, opts...)
}

func (s *countingSubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	s.parent.count("Patch", obj, s.name)
	defer s.parent.took("Patch/"+s.name, time.Now())
	if data, err := patch.Data(obj); err == nil {
		var body map[string]map[string]json.RawMessage
		if json.Unmarshal(data, &body) == nil {
			var keys []string
			for k := range body[s.name] {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			kind := fmt.Sprintf("%T", obj)
			if gvk, err := s.parent.GroupVersionKindFor(obj); err == nil {
				kind = gvk.Kind
			}
			s.parent.mu.Lock()
			s.parent.fields[fmt.Sprintf("%s/%s %v", kind, s.name, keys)]++
			s.parent.mu.Unlock()
		}
	}
	return s.SubResourceClient.Patch(ctx, obj, patch, opts...)
}

func (s *countingSubResource) Apply(ctx context.Context, obj k8sruntime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	s.parent.mu.Lock()
	s.parent.counts["Apply "+fmt.Sprintf("%T", obj)+"/"+s.name]++
	s.parent.mu.Unlock()
	return s.SubResourceClient.Apply(ctx, obj, opts...)
}

// writeCounts are write counts by key.
type writeCounts map[string]int

func (w writeCounts) total() int {
	n := 0
	for _, v := range w {
		n += v
	}
	return n
}

func (w writeCounts) add(o writeCounts) {
	for k, v := range o {
		w[k] += v
	}
}

func (w writeCounts) String() string {
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		if w[k] != 0 {
			fmt.Fprintf(&b, "%s=%d ", k, w[k])
		}
	}
	return strings.TrimSpace(b.String())
}

// lines is one "key: n" line per key.
func (w writeCounts) lines() string {
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %d\n", k, w[k])
	}
	return b.String()
}

func diffCounts(after, before map[string]int) writeCounts {
	out := writeCounts{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// countingWorld is a world whose reconcilers (and pool backend) write
// through a counting client.
func countingWorld(ctx context.Context, name string, lead time.Duration) (*world, *countingClient) {
	w := newWorld(ctx, name, lead)
	counts := newCountingClient(k8sClient)
	w.es.Client, w.iq.Client = counts, counts
	w.es.Runner, w.iq.Runner = StepRunners(counts, nil), StepRunners(counts, nil)
	opts := poolOptions
	opts.Client = counts
	w.es.Backend = func(_ context.Context, es *laxityv1alpha1.ElasticSchedule) (pool.Backend, error) {
		return pool.New(opts, es)
	}
	return w, counts
}

// costRun is what a counting world wrote, tick by tick: story 7 runs its
// worlds through a counting client and records every tick here, so that the
// reconcile cost is measured on the same runs the story checks, at no extra
// run time.
type costRun struct {
	counts *countingClient
	// queries is how many IntermittentQuery reconciles a tick makes (one
	// ElasticSchedule reconcile besides).
	queries int
	// ticks are the writes of each tick, by key, and the status fields the
	// status patches of that tick set.
	ticks []costTick
	// settled is the index of the tick at which the run settled, -1 before.
	settled int
	// launched is the number of steps launched.
	launched int
	// idleFrom is the first tick of the idle stretch: the run settled and
	// the released nodes are gone; nothing changes from there on.
	idleFrom int
	// poolChanges is how many times the requested pool size changed.
	poolChanges int
}

type costTick struct {
	at     time.Time
	writes writeCounts
	fields writeCounts
}

func newCostRun(counts *countingClient, queries int) *costRun {
	return &costRun{counts: counts, queries: queries, settled: -1, idleFrom: -1}
}

// tick runs one tick of w and records its writes.
func (c *costRun) tick(ctx context.Context, w *world, now time.Time) {
	before, beforeFields := c.counts.snapshot(), c.counts.fieldsSnapshot()
	w.tick(ctx, now)
	c.ticks = append(c.ticks, costTick{at: now, writes: diffCounts(c.counts.snapshot(), before), fields: diffCounts(c.counts.fieldsSnapshot(), beforeFields)})
	c.launched = len(w.launches)
}

// sum adds up the ticks [from, to).
func (c *costRun) sum(from, to int) (writes, fields writeCounts) {
	writes, fields = writeCounts{}, writeCounts{}
	for _, t := range c.ticks[from:to] {
		writes.add(t.writes)
		fields.add(t.fields)
	}
	return writes, fields
}

// report prints the measurement.
func (c *costRun) report() {
	reconciles := len(c.ticks) * (1 + c.queries)
	run, runFields := c.sum(0, c.idleFrom)
	idle, _ := c.sum(c.idleFrom, len(c.ticks))
	fmt.Fprintf(GinkgoWriter, "reconcile cost: %d ticks, %d reconciles (1 ElasticSchedule + %d IntermittentQuery a tick), %d steps launched\n",
		len(c.ticks), reconciles, c.queries, c.launched)
	fmt.Fprintf(GinkgoWriter, "  until idle: %d writes (%.1f a launched step, %.2f a reconcile): %s\n", run.total(),
		float64(run.total())/float64(max(c.launched, 1)), float64(run.total())/float64(reconciles), run)
	for _, line := range strings.Split(runFields.lines(), "\n") {
		if line != "" {
			fmt.Fprintf(GinkgoWriter, "    status patches setting %s\n", line)
		}
	}
	fmt.Fprintf(GinkgoWriter, "  idle (%d ticks): %d writes %s\n", len(c.ticks)-c.idleFrom, idle.total(), idle)
	perTick := make([]int, len(c.ticks))
	for i, t := range c.ticks {
		perTick[i] = t.writes.total()
	}
	fmt.Fprintf(GinkgoWriter, "  writes a tick: %v\n", perTick)
}

// fieldsWithin says whether a status patch key ("Kind/status [a b]") is
// of kind and sets only fields among allowed.
func fieldsWithin(key, kind string, allowed ...string) bool {
	rest, ok := strings.CutPrefix(key, kind+"/status [")
	if !ok {
		return false
	}
	for _, f := range strings.Fields(strings.TrimSuffix(rest, "]")) {
		if !slices.Contains(allowed, f) {
			return false
		}
	}
	return true
}

// clockDriven counts the status patches of a query that set only what
// moves with the clock: its arrived tuples, its slack, the slack in its
// condition messages.
func clockDriven(fields writeCounts) int {
	n := 0
	for k, v := range fields {
		if fieldsWithin(k, "IntermittentQuery", "arrivedTuples", "conditions", "slackSeconds") {
			n += v
		}
	}
	return n
}

// poolDriven counts the status patches of a schedule that set only what
// follows the pool: requested and ready nodes, the upcoming requests, the
// lead time being measured.
func poolDriven(fields writeCounts) int {
	n := 0
	for k, v := range fields {
		if fieldsWithin(k, "ElasticSchedule", "conditions", "nodesReady", "nodesRequested", "nodeRequests", "leadTime") {
			n += v
		}
	}
	return n
}

// reconcileCostIts are the reconcile-cost assertions on a recorded run:
// loose structural bounds, not timings.
func reconcileCostIts(run func() *costRun) {
	It("reconcile cost: creates each step's SparkApplication exactly once and the plan once", func() {
		c := run()
		c.report()
		all, _ := c.sum(0, len(c.ticks))
		Expect(all["Create SparkApplication"]).To(Equal(c.launched))
		Expect(all["Create ConfigMap"]).To(Equal(1), "one plan, stored once")
		Expect(all["Update ConfigMap"]+all["Patch ConfigMap"]).To(BeZero(), "nothing re-planned")
		Expect(all["Update ElasticSchedule"]).To(Equal(1), "the finalizer, added once")
	})

	It("reconcile cost: writes at most a handful of times per launched step and per pool resize", func() {
		c := run()
		all, fields := c.sum(0, c.idleFrom)
		// A query's status also follows the clock (its arrivals and slack),
		// and a schedule's follows its pool (requested and ready nodes).
		// Those writes come with time and with the pool, not with steps, and
		// are counted apart.
		clock, pool := clockDriven(fields), poolDriven(fields)
		// The placeholder backend's Deployment and PriorityClass, and the
		// capacityBuffer backend's CapacityBuffer and PodTemplate, are the
		// pool object: written on each resize, and for the Deployment and
		// the CapacityBuffer also to hand a step its nodes and take them
		// back after it.
		poolObject := all["Apply Deployment"] + all["Apply PriorityClass"] + all["Apply CapacityBuffer"] + all["Apply PodTemplate"]
		steps := all.total() - clock - pool - poolObject
		fmt.Fprintf(GinkgoWriter, "writes: %d in all; %d with steps and plans (%.1f a launched step); %d with the pool (%d resizes); %d with the clock alone (%.2f a query a tick)\n",
			all.total(), steps, float64(steps)/float64(c.launched), pool, c.poolChanges, clock, float64(clock)/float64(c.queries*c.idleFrom))
		Expect(c.launched).To(BeNumerically(">", 0))
		// A launch creates the SparkApplication and writes the schedule's
		// and the query's status; the step's pending, running and finished
		// states are the query's status writes; the plan and the finalizer
		// are written once.
		Expect(steps).To(BeNumerically("<=", 6*c.launched+4), "writes: %s", all)
		// Per resize: nodes requested, the request passing from the
		// upcoming list, the nodes turning ready. Not on every pass.
		Expect(pool).To(BeNumerically("<=", 4*c.poolChanges+4), "the schedule's status follows the pool too often: %s", fields)
		Expect(all["Apply Deployment"]).To(BeNumerically("<=", 2*c.launched+c.poolChanges), "writes: %s", all)
		Expect(all["Apply PriorityClass"]).To(BeNumerically("<=", c.poolChanges), "writes: %s", all)
		Expect(all["Apply CapacityBuffer"]).To(BeNumerically("<=", 2*c.launched+c.poolChanges), "writes: %s", all)
		// The template does not change: written with the first buffer.
		Expect(all["Apply PodTemplate"]).To(BeNumerically("<=", 1), "writes: %s", all)
		// Unbounded by steps, but well under once a query a tick: only the
		// arrivals move with the clock; the slack and the messages that
		// show it move in steps of a minute (0.23 a query a tick measured;
		// 0.67 while the messages carried the exact slack).
		Expect(2 * clock).To(BeNumerically("<=", c.queries*c.idleFrom))
	})

	It("reconcile cost: writes nothing while nothing changes", func() {
		c := run()
		Expect(len(c.ticks) - c.idleFrom).To(BeNumerically(">=", 20))
		idle, _ := c.sum(c.idleFrom, len(c.ticks))
		Expect(idle.total()).To(BeZero(), "%d idle ticks wrote %s", len(c.ticks)-c.idleFrom, idle)
	})
}

// 1,000 queries: created in envtest under a few schedules, then one
// reconcile of each schedule and each query through a client backed by an
// informer cache, as in the manager. Heap in use (after GC) is read before
// the cache starts, once it has synced, and after the reconciles.
var _ = Describe("Reconcile cost with 1,000 queries", concurrent, Ordered, func() {
	const (
		schedules = 4
		queries   = 1000
	)
	var (
		ns       string
		names    []string
		informer cache.Cache
		stop     context.CancelFunc
	)
	BeforeAll(func(ctx SpecContext) {
		// About two minutes against envtest, most of it in the queries'
		// uncached SparkApplication lists: opt in.
		if testing.Short() || os.Getenv("LAXITY_MEASURE_1000") == "" {
			Skip("measuring 1,000 queries takes minutes: set LAXITY_MEASURE_1000=1 to run it (never with -short)")
		}
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cost1000-"}}
		Expect(k8sClient.Create(ctx, n)).To(Succeed())
		ns = n.Name
		started := time.Now()
		for s := range schedules {
			es := builder.Schedule(ns, "pool").Sizes(2, 4, 10, 14, 20).LeadTime(6 * time.Minute).Obj()
			es.Name = fmt.Sprintf("pool-%d", s)
			es.Spec.NodePool.NodeSelector = map[string]string{"laxity.dev/pool": es.Name}
			Expect(k8sClient.Create(ctx, es)).To(Succeed())
			names = append(names, es.Name)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		objs := make(chan *laxityv1alpha1.IntermittentQuery)
		errs := make(chan error, queries)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for q := range objs {
					errs <- k8sClient.Create(ctx, q)
				}
			})
		}
		for i := range queries {
			// Windows of 20 minutes to 3 hours over a day, as the planner's
			// 1,000-query benchmark.
			length := time.Duration(1200+rng.Float64()*9600) * time.Second
			start := time.Duration(rng.Float64()*(86400-length.Seconds())) * time.Second
			q := builder.Query(ns, fmt.Sprintf("q%04d", i)).Rate(fmt.Sprint(500 + rng.IntN(4500))).Slack(0).Obj()
			q.Spec.ScheduleName = names[i%schedules]
			q.Spec.Window = laxityv1alpha1.Window{Start: metav1.NewTime(origin.Add(time.Hour + start)), End: metav1.NewTime(origin.Add(time.Hour + start + length))}
			q.Spec.Deadline = metav1.NewTime(q.Spec.Window.End.Add(time.Duration(600+rng.Float64()*3000) * time.Second))
			q.Spec.Input.Granularity = 1000
			q.Spec.CostModel.Batch = laxityv1alpha1.BatchCostModel{OverheadSeconds: "5", SerialSecondsPerTuple: "1e-7", ParallelSecondsPerTuple: fmt.Sprintf("%.1e", 2e-6+rng.Float64()*6e-6)}
			q.Spec.CostModel.Merge = laxityv1alpha1.MergeCostModel{OverheadSeconds: "3", SerialSecondsPerInput: "0.01", ParallelSecondsPerInput: "0.1"}
			objs <- q
		}
		close(objs)
		wg.Wait()
		close(errs)
		for err := range errs {
			Expect(err).NotTo(HaveOccurred())
		}
		fmt.Fprintf(GinkgoWriter, "\n1,000 queries: created %d schedules and %d queries in %s\n", schedules, queries, time.Since(started).Round(time.Millisecond))
	})

	AfterAll(func() {
		if stop != nil {
			stop()
		}
	})

	It("reports heap in use and the reconcile times", func(ctx SpecContext) {
		heap := func() uint64 {
			runtime.GC()
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			return m.HeapInuse
		}
		mib := func(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
		delta := func(a, b uint64) string { return fmt.Sprintf("%+.1f MiB", (float64(a)-float64(b))/(1<<20)) }

		base := heap()
		var err error
		informer, err = cache.New(cfg, cache.Options{Scheme: k8sClient.Scheme(), DefaultNamespaces: map[string]cache.Config{ns: {}}})
		Expect(err).NotTo(HaveOccurred())
		cacheCtx, cancel := context.WithCancel(context.Background())
		stop = cancel
		go func() { _ = informer.Start(cacheCtx) }()
		c, err := client.New(cfg, client.Options{Scheme: k8sClient.Scheme(), Cache: &client.CacheOptions{Reader: informer}})
		Expect(err).NotTo(HaveOccurred())
		// Informers start on first use, as in the manager: read every kind
		// the reconcilers read once.
		for _, list := range []client.ObjectList{&laxityv1alpha1.ElasticScheduleList{}, &laxityv1alpha1.IntermittentQueryList{}, &corev1.ConfigMapList{}, &corev1.NodeList{}, sparkapp.NewList()} {
			Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		}
		Expect(informer.WaitForCacheSync(ctx)).To(BeTrue())
		synced := heap()

		clk := clocktesting.NewFakeClock(origin)
		counts := newCountingClient(c)
		opts := Options{MaxAttempts: 3, Backoff: 20 * time.Second, ResultRoot: "s3a://results", Poll: 10 * time.Second}
		poolOpts := poolOptions
		poolOpts.Client = counts
		es := &ElasticScheduleReconciler{Client: counts, Clock: clk, Recorder: events.NewFakeRecorder(100000), Options: opts, Sources: &Sources{}, Runner: StepRunners(counts, nil),
			Backend: func(_ context.Context, es *laxityv1alpha1.ElasticSchedule) (pool.Backend, error) {
				return pool.New(poolOpts, es)
			}}
		iq := &IntermittentQueryReconciler{Client: counts, Clock: clk, Options: opts, Sources: &Sources{}, Runner: StepRunners(counts, nil)}

		var esTimes []time.Duration
		for _, name := range names {
			started := time.Now()
			// Twice: the first adds the finalizer and plans, the second
			// is a steady-state pass over the stored plan.
			for range 2 {
				_, err := es.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}})
				Expect(err).NotTo(HaveOccurred())
				esTimes = append(esTimes, time.Since(started))
				started = time.Now()
			}
		}
		// Let the cache see the plans before the queries read them.
		Eventually(func(g Gomega) {
			for _, name := range names {
				var cm corev1.ConfigMap
				g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: PlanConfigMapName(name)}, &cm)).To(Succeed())
			}
		}).Should(Succeed())
		planned := heap()

		var list laxityv1alpha1.IntermittentQueryList
		Expect(c.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		Expect(list.Items).To(HaveLen(queries))
		started := time.Now()
		for i := range list.Items {
			_, err := iq.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			Expect(err).NotTo(HaveOccurred())
		}
		iqTime := time.Since(started)
		reconciled := heap()

		// A second pass over 100 queries: nothing changed, nothing written.
		writesBefore := writeCounts(counts.snapshot()).total()
		started = time.Now()
		for i := range list.Items[:100] {
			_, err := iq.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			Expect(err).NotTo(HaveOccurred())
		}
		iqSteady := time.Since(started) / 100
		Expect(writeCounts(counts.snapshot()).total()).To(Equal(writesBefore), "a second pass with nothing changed wrote")
		// What one query's reconcile reads: the plan is decoded whole.
		started = time.Now()
		for range 100 {
			_, err := loadPlan(ctx, c, &laxityv1alpha1.ElasticSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names[0]}})
			Expect(err).NotTo(HaveOccurred())
		}
		loadTime := time.Since(started) / 100
		started = time.Now()
		for range 100 {
			Expect(c.List(ctx, sparkapp.NewList(), client.InNamespace(ns), client.MatchingLabels{LabelQuery: "q0000"})).To(Succeed())
		}
		listTime := time.Since(started) / 100

		var planBytes, steps int
		for _, name := range names {
			var cm corev1.ConfigMap
			Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: PlanConfigMapName(name)}, &cm)).To(Succeed())
			planBytes += len(cm.Data[planKey])
			stored, err := loadPlan(ctx, c, &laxityv1alpha1.ElasticSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
			Expect(err).NotTo(HaveOccurred())
			steps += len(stored.doc.Steps)
		}
		fmt.Fprintf(GinkgoWriter, "1,000 queries under %d schedules (%d each):\n", schedules, queries/schedules)
		fmt.Fprintf(GinkgoWriter, "  heap in use: %s before the cache, %s once the cache synced (%s), %s after planning (%s), %s after one reconcile of every query (%s)\n",
			mib(base), mib(synced), delta(synced, base), mib(planned), delta(planned, synced), mib(reconciled), delta(reconciled, planned))
		fmt.Fprintf(GinkgoWriter, "  ElasticSchedule reconcile (first = plan, second = steady state): %v\n", esTimes)
		fmt.Fprintf(GinkgoWriter, "  IntermittentQuery reconciles: %s for %d, %s each; %s each with nothing to write; of which decoding the schedule's plan %s, listing SparkApplications (not cached: unstructured) %s\n",
			iqTime.Round(time.Millisecond), queries, (iqTime / queries).Round(time.Microsecond), iqSteady.Round(time.Microsecond), loadTime.Round(time.Microsecond), listTime.Round(time.Microsecond))
		fmt.Fprintf(GinkgoWriter, "  stored plans: %d bytes of plan.json for %d steps in %d ConfigMaps (%d bytes a step; a ConfigMap holds at most 1 MiB)\n",
			planBytes, steps, schedules, planBytes/max(steps, 1))
		fmt.Fprintf(GinkgoWriter, "  writes: %s\n", writeCounts(counts.snapshot()))
		fmt.Fprintf(GinkgoWriter, "  reads: %s\n", writeCounts(counts.reads))
		fmt.Fprintf(GinkgoWriter, "  time in client calls: %v\n", counts.spent)

		var esList laxityv1alpha1.ElasticScheduleList
		Expect(c.List(ctx, &esList, client.InNamespace(ns))).To(Succeed())
		for _, s := range esList.Items {
			Expect(s.Status.Chosen).NotTo(BeNil(), s.Name)
			fmt.Fprintf(GinkgoWriter, "  %s: feasible %v, cost %s, max nodes %d, %d candidates\n", s.Name, s.Status.Chosen.Feasible, s.Status.Chosen.Cost, s.Status.Chosen.MaxNodes, len(s.Status.Candidates))
		}
		writes := writeCounts(counts.snapshot())
		Expect(writes["Update IntermittentQuery/status"]+writes["Patch IntermittentQuery/status"]).To(Equal(queries), "one status write per query")
		Expect(slices.Max(esTimes)).To(BeNumerically(">", 0))
		Expect(len(seriesMatching(map[string]string{labelNamespace: ns}))).To(BeNumerically(">=", queries), "a slack series per query")
	})
})
