// Package demo runs laxity end to end on one machine: a local control plane
// (kube-apiserver and etcd), laxity's manager in-process on a scaled clock,
// and two labelled simulations standing in for the cluster — a node
// provisioner and the Spark operator (package standin) — while it shows
// the workload's progress and finally reports what ran, in the plan
// document's format.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/controllers"
	"github.com/laxity-dev/laxity/internal/manifest"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/pool"
	"github.com/laxity-dev/laxity/internal/recurrence"
	"github.com/laxity-dev/laxity/internal/spec"
	"github.com/laxity-dev/laxity/internal/standin"
)

// Options configure a demo run.
type Options struct {
	// Workload is the manifests to run.
	Workload []manifest.File
	// Speed is how many simulated seconds pass per real second.
	Speed float64
	// Assets is the directory of kube-apiserver and etcd; empty looks in
	// the usual places (see findAssets).
	Assets string
	// Keep leaves the control plane running after the workload has
	// finished, until ctx is done.
	Keep bool
	// Out receives the progress; Live redraws it in place (a terminal)
	// rather than printing a block now and then.
	Out  io.Writer
	Live bool
	// Slowdown makes every simulated step take 1+Slowdown times its
	// declared cost model's duration; NoiseMean and NoiseStdDev add a
	// per-step slowdown drawn from that normal distribution (fractions).
	// laxity is not told: it learns them from the steps that ran.
	Slowdown, NoiseMean, NoiseStdDev float64
	// Windows is how many windows of each RecurringQuery run, from 1 to
	// MaxWindows; 0 is DefaultWindows. Once a RecurringQuery has created
	// them the demo sets its spec.suspend, and deletes the windows it
	// created beyond them before they start.
	Windows int
	// Cluster is what the workload runs on: ClusterEmbedded (empty) or
	// ClusterKarpenter, where Speed compresses the workload in time
	// instead of scaling the clock.
	Cluster string
	// ClusterBinaries is the directory of the local cluster's binaries;
	// empty looks where localcluster.FindBinaries does.
	ClusterBinaries string
}

// Outcome is what ran.
type Outcome struct {
	// Reports are the executed schedules in the plan document's format, in
	// the workload's order.
	Reports []Report
	// LogFile holds the manager's log.
	LogFile string
	// Speed is the embedded cluster's clock rate; Compression, set on the
	// local cluster, how the workload was compressed in time (the reports
	// are in workload time).
	Speed       float64
	Compression *Compression
}

// Report is what one schedule ran.
type Report struct {
	Schedule *laxityv1alpha1.ElasticSchedule
	// Plan is the schedule's first plan; Executed is what ran, in the
	// same format; Replans counts the plans made after the first.
	Plan     *planner.Document
	Executed planner.Document
	Replans  int
	// Windows are the queries' windows, in seconds from Executed.Origin.
	Windows map[string][2]float64
	// Missed names the queries that finished after their deadline or not
	// at all.
	Missed []string
	// Recurring are the windows the schedule's RecurringQueries ran, each
	// RecurringQuery's oldest first, in the workload's order.
	Recurring []Window
	// DeclaredLeadTime is the pool's provisioningLeadTime;
	// ObservedLeadTimes are those laxity measured, from a request for more
	// nodes to that many Ready (status.leadTime.observations).
	DeclaredLeadTime  time.Duration
	ObservedLeadTimes []time.Duration
	// RanOn says what the schedule ran on (Outcome.Describe).
	RanOn string
}

// The run-time settings of the demo's manager: those of `laxity manager`.
// The synthetic sources say when each batch is full, so the schedules need
// no frequent poll; the queries' arrival counts move once a simulated
// minute.
var managerOptions = controllers.Options{
	MaxAttempts: 3, Backoff: 30 * time.Second, ResultRoot: "s3a://laxity-demo/results", Poll: time.Minute,
	// The samples' SparkApplications run as spark-operator's "spark".
	AllowedServiceAccounts: []string{"spark"},
}

// tick is how often, in real time, the simulations move on and the
// timelines are sampled; clusterTick how often the local cluster's pools
// are sampled, whose nodes come in whole seconds.
const (
	tick        = 5 * time.Millisecond
	clusterTick = 250 * time.Millisecond
)

// demoClock is the reconcilers' clock: scaled on the embedded cluster,
// held while laxity reacts; the wall clock on the local one.
type demoClock interface {
	clock.PassiveClock
	hold()
	run()
}

// Run runs the workload to its end and reports what ran.
func Run(ctx context.Context, o Options) (*Outcome, error) {
	set, err := manifest.Read(o.Workload...)
	if err != nil {
		return nil, err
	}
	if err := complete(set); err != nil {
		return nil, err
	}
	if o.Windows == 0 {
		o.Windows = DefaultWindows
	}
	if o.Windows < 1 || o.Windows > MaxWindows {
		return nil, fmt.Errorf("the windows of each RecurringQuery must be from 1 to %d, not %d", MaxWindows, o.Windows)
	}
	for _, es := range set.Schedules {
		if simulatePool(es.Object) {
			fmt.Fprintf(o.Out, "ElasticSchedule %s/%s: the demo runs spec.nodePool.backend.emrContainers as SparkApplications on a simulated pool\n", es.Object.Namespace, es.Object.Name)
		}
	}
	for _, q := range set.Queries {
		for _, simulated := range simulateInputs(q.Object) {
			fmt.Fprintf(o.Out, "IntermittentQuery %s/%s: the demo simulates %s with tuples at the declared rate\n", q.Object.Namespace, q.Object.Name, simulated)
		}
	}
	for _, rq := range set.Recurring {
		for _, change := range prepareRecurring(rq.Object, o.Windows) {
			fmt.Fprintf(o.Out, "RecurringQuery %s/%s: the demo %s\n", rq.Object.Namespace, rq.Object.Name, change)
		}
	}
	if o.Speed <= 0 {
		return nil, fmt.Errorf("the speed must be positive, not %g", o.Speed)
	}
	switch o.Cluster {
	case ClusterKarpenter:
		return runOnCluster(ctx, o, set)
	case "", ClusterEmbedded:
	default:
		return nil, fmt.Errorf("no cluster %q: %s or %s", o.Cluster, ClusterEmbedded, ClusterKarpenter)
	}
	assets, err := findAssets(o.Assets)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "laxity-demo-")
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(dir + string(os.PathSeparator) + "manager.log")
	if err != nil {
		return nil, err
	}
	defer func() { _ = logFile.Close() }()
	ctrl.SetLogger(zap.New(zap.WriteTo(logFile)))

	fmt.Fprintf(o.Out, "Starting a local control plane (kube-apiserver %s, etcd %s) ...\n", kubeVersion, etcdVersion)
	cp, err := startControlPlane(assets)
	if err != nil {
		return nil, err
	}
	defer func() { _ = cp.stop() }()
	if o.Keep {
		path, err := cp.kubeconfig(dir)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Out, "While it runs: kubectl --kubeconfig %s get laxity -A -o wide\n", path)
	}

	r, err := newRun(cp.cfg, set, o)
	if err != nil {
		return nil, err
	}
	out, err := r.execute(ctx, logFile.Name())
	if err != nil {
		return nil, err
	}
	if o.Keep {
		fmt.Fprintln(o.Out, "The control plane keeps running; interrupt (Ctrl-C) to stop it.")
		<-ctx.Done()
	}
	return out, nil
}

// execute applies the workload, runs the manager and the loop to the end
// and reports what ran.
func (r *run) execute(ctx context.Context, logFile string) (*Outcome, error) {
	if err := r.apply(ctx); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	managerDone, err := r.startManager(runCtx)
	if err != nil {
		return nil, err
	}
	runErr := r.loop(runCtx)
	cancel()
	if err := <-managerDone; err != nil && runErr == nil {
		runErr = fmt.Errorf("the manager stopped: %w (its log: %s)", err, logFile)
	}
	if runErr != nil {
		return nil, runErr
	}
	out := &Outcome{LogFile: logFile, Speed: r.o.Speed, Compression: r.compression}
	for _, s := range r.schedules {
		report, err := r.report(ctx, s)
		if err != nil {
			return nil, err
		}
		if r.compression != nil {
			r.compression.expand(&report)
		}
		report.RanOn = out.Describe()
		out.Reports = append(out.Reports, report)
	}
	return out, nil
}

// complete checks that the workload can run on its own: something to run,
// and every query's schedule in it.
func complete(set *manifest.Set) error {
	if len(set.Schedules) == 0 || len(set.Queries)+len(set.Recurring) == 0 {
		return errors.New("the workload needs at least one ElasticSchedule and one IntermittentQuery or RecurringQuery")
	}
	for _, q := range set.Queries {
		if set.Schedule(q.Object.Namespace, q.Object.Spec.ScheduleName) == nil {
			return fmt.Errorf("%s: IntermittentQuery %s/%s: spec.scheduleName: no ElasticSchedule %q in namespace %s in the workload",
				q.Source, q.Object.Namespace, q.Object.Name, q.Object.Spec.ScheduleName, q.Object.Namespace)
		}
	}
	for _, rq := range set.Recurring {
		if name := rq.Object.Spec.Template.ScheduleName; set.Schedule(rq.Object.Namespace, name) == nil {
			return fmt.Errorf("%s: RecurringQuery %s/%s: spec.template.scheduleName: no ElasticSchedule %q in namespace %s in the workload",
				rq.Source, rq.Object.Namespace, rq.Object.Name, name, rq.Object.Namespace)
		}
	}
	return nil
}

// simulateInputs replaces q's real input sources, which the demo cannot
// reach, with synthetic streams at the declared rates, and names the fields
// it dropped.
func simulateInputs(q *laxityv1alpha1.IntermittentQuery) []string {
	var dropped []string
	if f := simulateInput("spec.input", &q.Spec.Input); f != "" {
		dropped = append(dropped, f)
	}
	for i := range q.Spec.Inputs {
		if f := simulateInput(fmt.Sprintf("spec.inputs[%d]", i), &q.Spec.Inputs[i].Input); f != "" {
			dropped = append(dropped, f)
		}
	}
	return dropped
}

// simulateInput replaces the real source of input in, declared at field,
// with the synthetic stream at its declared rate, and names the field it
// dropped ("" when there was none).
func simulateInput(field string, in *laxityv1alpha1.Input) string {
	switch {
	case in.Kafka != nil:
		in.Kafka = nil
		return field + ".kafka"
	case in.ObjectStore != nil:
		in.ObjectStore = nil
		return field + ".objectStore"
	}
	return ""
}

// simulatePool replaces an EMR on EKS backend, which the demo cannot reach,
// with placeholder pods on the simulated pool, and says whether it did.
func simulatePool(es *laxityv1alpha1.ElasticSchedule) bool {
	b := &es.Spec.NodePool.Backend
	if b.EMRContainers == nil {
		return false
	}
	*b = laxityv1alpha1.PoolBackend{Placeholder: &laxityv1alpha1.PlaceholderBackend{
		Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
	}}
	return true
}

// schedule is one ElasticSchedule of the run and what is seen of its pool.
type schedule struct {
	object *laxityv1alpha1.ElasticSchedule
	// pool is the pool as the planner models it, for billing.
	pool        planner.Pool
	provisioner *standin.Provisioner
	// applied are the workload's IntermittentQueries, as applied; queries
	// are those and the windows of the RecurringQueries that the demo
	// runs, as last read from the cluster (see discover).
	applied   []*laxityv1alpha1.IntermittentQuery
	queries   []*laxityv1alpha1.IntermittentQuery
	recurring []*recurring
	// requested and ready are the pool's node counts over time, as sampled.
	requested, ready []level
	// firstPlan is the schedule's first plan, latestPlan its latest; plans
	// counts the plans seen.
	firstPlan  *planner.Document
	latestPlan *planner.Document
	lastPlan   string
	plans      int
}

type level struct {
	at    time.Time
	nodes int
}

func (s *schedule) key() string { return s.object.Namespace + "/" + s.object.Name }

type run struct {
	o   Options
	cfg *rest.Config
	// client writes, and reads what was just written; reader reads through
	// the manager's cache.
	client      client.Client
	reader      client.Reader
	mapper      meta.RESTMapper
	poolOptions pool.Options
	clock       demoClock
	// spark is the simulated Spark operator; nil on the local cluster,
	// where the Spark stand-in runs pods.
	spark *standin.Spark
	// compression is how the workload was compressed in time for the local
	// cluster; nil on the embedded one.
	compression *Compression
	schedules   []*schedule
	namespaces  []string
	start       time.Time
	// windows is Options.Windows; demoWrites counts what the demo itself
	// wrote to the RecurringQueries and their windows, as writes does for
	// the simulations.
	windows    int
	demoWrites int
}

func newRun(cfg *rest.Config, set *manifest.Set, o Options) (*run, error) {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(laxityv1alpha1.AddToScheme(scheme))
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	r := &run{o: o, cfg: cfg, client: c, windows: o.Windows}
	// The clock starts a provisioning lead time before the first window
	// opens, so that the first nodes can be there when it does.
	first, lead := time.Time{}, time.Duration(0)
	var recurrings []*recurring
	for i := range set.Schedules {
		es := set.Schedules[i].Object
		s := &schedule{object: es}
		for _, q := range set.QueriesFor(es.Namespace, es.Name) {
			s.applied = append(s.applied, q.Object)
			if start := q.Object.Spec.Window.Start.Time; first.IsZero() || start.Before(first) {
				first = start
			}
		}
		s.queries = s.applied
		for _, rq := range set.RecurringFor(es.Namespace, es.Name) {
			sched, err := recurrence.Validate(recurrence.Spec{
				Schedule: rq.Object.Spec.Schedule, TimeZone: rq.Object.Spec.TimeZone, WindowLength: rq.Object.Spec.WindowLength.Duration,
			})
			if err != nil {
				return nil, fmt.Errorf("RecurringQuery %s/%s: %w", rq.Object.Namespace, rq.Object.Name, err)
			}
			x := &recurring{object: rq.Object, schedule: sched, dropped: map[string]bool{}, learned: map[string]string{}}
			s.recurring = append(s.recurring, x)
			recurrings = append(recurrings, x)
		}
		var queries []laxityv1alpha1.IntermittentQuery
		for _, q := range s.applied {
			queries = append(queries, *q)
		}
		w, err := spec.Workload(es, queries, time.Time{})
		if err != nil {
			return nil, fmt.Errorf("ElasticSchedule %s: %w", s.key(), err)
		}
		s.pool = w.Pool
		s.provisioner = &standin.Provisioner{Client: c, Delay: seconds(w.Pool.ProvisioningLeadTime)}
		lead = max(lead, s.provisioner.Delay)
		r.schedules = append(r.schedules, s)
		if !slices.Contains(r.namespaces, es.Namespace) {
			r.namespaces = append(r.namespaces, es.Namespace)
		}
	}
	if first.IsZero() {
		// RecurringQueries only: their windows start after the clock does.
		r.start = clockStart(recurrings, lead)
		return r, nil
	}
	r.start = first.Add(-lead - time.Minute).Truncate(time.Minute)
	return r, nil
}

// seconds is a duration of the planner's model, which counts in seconds.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// apply creates the workload: namespaces, stand-ins for the scale targets,
// the schedules, the queries, the recurring queries.
func (r *run) apply(ctx context.Context) error {
	for _, ns := range r.namespaces {
		if err := r.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}
	for _, s := range r.schedules {
		target, err := standin.ScaleTarget(s.object)
		if err != nil {
			return err
		}
		if target != nil {
			if err := r.client.Create(ctx, target); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating the simulated %s %s: %w", target.GetKind(), target.GetName(), err)
			}
		}
		if err := r.client.Create(ctx, s.object.DeepCopy()); err != nil {
			return fmt.Errorf("creating ElasticSchedule %s: %w", s.key(), err)
		}
		for _, q := range s.applied {
			if err := r.client.Create(ctx, q.DeepCopy()); err != nil {
				return fmt.Errorf("creating IntermittentQuery %s/%s: %w", q.Namespace, q.Name, err)
			}
		}
		for _, rq := range s.recurring {
			// The object the RecurringQuery's windows are owned by: its UID
			// tells them apart from anyone else's.
			created := rq.object.DeepCopy()
			if err := r.client.Create(ctx, created); err != nil {
				return fmt.Errorf("creating RecurringQuery %s: %w", rq.key(), err)
			}
			rq.object = created
		}
	}
	return nil
}

// startManager runs laxity's controllers, as `laxity manager` does, on the
// scaled clock, and starts the clock once the manager's caches have synced.
// The simulations read through the manager's cache too: polling the API
// server dozens of times a second would slow the very reconciles the demo
// is timing.
func (r *run) startManager(ctx context.Context) (<-chan error, error) {
	mgr, err := ctrl.NewManager(r.cfg, ctrl.Options{
		Scheme:                 r.client.Scheme(),
		Cache:                  controllers.CacheOptions(),
		Client:                 controllers.ClientOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 ctrl.Log,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	opts := managerOptions
	if r.compression == nil {
		r.clock = newScaledClock(clock.RealClock{}, r.start, r.o.Speed)
		opts.ClockRate = r.o.Speed
	} else {
		// The manager's own waits shrink with the workload.
		opts.Backoff = r.compression.Duration(opts.Backoff)
		opts.Poll = max(r.compression.Duration(opts.Poll), time.Second)
	}
	if err := controllers.Setup(ctx, mgr, r.clock, opts, "pause"); err != nil {
		return nil, err
	}
	if r.poolOptions, err = pool.NewOptions(r.cfg, mgr.GetHTTPClient(), mgr.GetClient(), mgr.GetRESTMapper(), "pause"); err != nil {
		return nil, err
	}
	r.reader, r.mapper = mgr.GetClient(), mgr.GetRESTMapper()
	for _, s := range r.schedules {
		s.provisioner.Client = mgr.GetClient()
	}
	if r.compression == nil {
		duration := standin.Slower(standin.ModelledDuration(mgr.GetClient(), spec.CostModel), r.o.Slowdown, r.o.NoiseMean, r.o.NoiseStdDev)
		r.spark = &standin.Spark{Client: mgr.GetClient(), Duration: duration}
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return nil, errors.New("the manager's cache did not sync")
	}
	// Reading every kind the loop reads once fills the cache before the
	// clock runs.
	for _, s := range r.schedules {
		if err := r.sample(ctx, s); err != nil {
			return nil, err
		}
	}
	r.clock.run()
	return done, nil
}

// loop moves the simulations on and shows the progress until every query
// has finished (or cannot) and every pool is back at its idle size. Each
// pass holds the clock while the simulations act and laxity reacts, so that
// a step that ends is followed by the next at the same simulated instant,
// as on a cluster where a reconcile is nothing next to a batch.
func (r *run) loop(ctx context.Context) error {
	show := newProgress(r.o.Out, r.o.Live, r.o.Speed, r.compression)
	limit := r.limit()
	wake := time.NewTimer(tick)
	defer wake.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake.C:
		}
		r.clock.hold()
		now := r.clock.Now()
		// A reconcile that one of laxity's own timers started while the
		// clock ran (a node request or a launch due now) finishes with the
		// clock held too, before the simulations look at what it wrote.
		if err := settleIfBusy(ctx); err != nil {
			return err
		}
		for {
			before := r.writes()
			if err := r.step(ctx, now); err != nil {
				return err
			}
			if err := r.discover(ctx); err != nil {
				return err
			}
			if r.writes() == before {
				break
			}
			if err := settle(ctx); err != nil {
				return err
			}
		}
		finished := r.finished()
		if show.due(now.Sub(r.start), finished) {
			snapshot, err := r.snapshot(ctx, now)
			if err != nil {
				return err
			}
			show.show(snapshot)
		}
		if finished {
			return nil
		}
		if now.After(limit) {
			return fmt.Errorf("the workload had not finished by %s, long after its last deadline; the manager's log may say why", limit.UTC().Format(time.RFC3339))
		}
		wake.Reset(r.untilNextEvent(now))
		r.clock.run()
	}
}

// untilNextEvent is the real time to sleep: a tick, or less when a
// simulated step ends or a node turns Ready before then, so that the step
// that follows starts when it would on a cluster rather than up to a tick
// later.
func (r *run) untilNextEvent(now time.Time) time.Duration {
	if r.spark == nil {
		return clusterTick
	}
	next := r.spark.Next
	for _, s := range r.schedules {
		if n := s.provisioner.Next; !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	if next.IsZero() {
		return tick
	}
	return min(tick, max(time.Duration(float64(next.Sub(now))/r.o.Speed), 0))
}

// writes counts what the simulations, and the demo, have written so far.
func (r *run) writes() int {
	n := r.demoWrites
	if r.spark != nil {
		n += r.spark.Writes
	}
	for _, s := range r.schedules {
		n += s.provisioner.Writes
	}
	return n
}

// settle waits for laxity's controllers to take up what the simulations
// just wrote and finish with it: the write reaches the manager's informers
// within milliseconds, so it waits up to noticeWithin for work to show in a
// queue, then until every queue is empty and no reconcile runs.
func settle(ctx context.Context) error {
	const noticeWithin = 5 * time.Millisecond
	seen := false
	for waited := time.Duration(0); ; waited += time.Millisecond {
		busy, err := controllersBusy()
		if err != nil {
			return err
		}
		seen = seen || busy
		if !busy && (seen || waited >= noticeWithin) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// settleIfBusy settles only when a controller is busy now: most ticks find
// every controller idle and should not wait for work to show.
func settleIfBusy(ctx context.Context) error {
	busy, err := controllersBusy()
	if err != nil || !busy {
		return err
	}
	return settle(ctx)
}

// controllersBusy reads controller-runtime's own metrics: a controller is
// busy while its workqueue holds requests or a reconcile is running.
// Requests waiting for a requeue delay are not in the queue yet.
func controllersBusy() (bool, error) {
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		return false, fmt.Errorf("reading the manager's metrics: %w", err)
	}
	for _, f := range families {
		if f.GetName() != "workqueue_depth" && f.GetName() != "controller_runtime_active_workers" {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetGauge().GetValue() > 0 {
				return true, nil
			}
		}
	}
	return false, nil
}

// limit is when a run that has not finished is given up: the last deadline
// (of the last window the demo runs, for a RecurringQuery) plus the time to
// release the pool.
func (r *run) limit() time.Time {
	var last time.Time
	var release time.Duration
	for _, s := range r.schedules {
		for _, q := range s.applied {
			if d := q.Spec.Deadline.Time; d.After(last) {
				last = d
			}
		}
		for _, rq := range s.recurring {
			if d := rq.lastDeadline(r.start, r.windows); d.After(last) {
				last = d
			}
		}
		release = max(release, seconds(s.pool.ReleaseAfterIdle)+2*s.provisioner.Delay)
	}
	grace := 10 * time.Minute
	if r.compression != nil {
		grace = r.compression.Duration(grace)
	}
	return last.Add(release + grace)
}

// step moves the simulated cluster to now and samples the pools.
func (r *run) step(ctx context.Context, now time.Time) error {
	for _, s := range r.schedules {
		var es laxityv1alpha1.ElasticSchedule
		if err := r.reader.Get(ctx, client.ObjectKeyFromObject(s.object), &es); err != nil {
			return err
		}
		requested, err := r.poolSize(ctx, &es)
		if err != nil {
			return fmt.Errorf("ElasticSchedule %s: reading the pool size: %w", s.key(), err)
		}
		if r.spark != nil {
			name := strings.ReplaceAll(s.key(), "/", "-")
			if err := s.provisioner.Tick(ctx, now, name, es.Spec.NodePool.NodeSelector, requested); err != nil {
				return err
			}
		}
		s.requested = record(s.requested, now, int(requested))
		if err := r.sample(ctx, s); err != nil {
			return err
		}
		ready, err := pool.ReadyNodes(ctx, r.reader, es.Spec.NodePool.NodeSelector)
		if err != nil {
			return err
		}
		s.ready = record(s.ready, now, int(ready))
	}
	if r.spark == nil {
		return nil
	}
	for _, ns := range r.namespaces {
		if err := r.spark.Tick(ctx, now, ns); err != nil {
			return err
		}
	}
	return nil
}

// sample notes a new plan of s.
func (r *run) sample(ctx context.Context, s *schedule) error {
	plan, err := controllers.PlanOf(ctx, r.reader, s.object)
	if err != nil {
		return err
	}
	if plan != nil {
		if s.firstPlan == nil {
			s.firstPlan = plan
		}
		s.latestPlan = plan
		if id := plan.Origin.String() + fmt.Sprint(plan.SearchSeconds, len(plan.Steps)); id != s.lastPlan {
			s.lastPlan = id
			s.plans++
		}
	}
	return nil
}

// poolSize is the size the pool object asks for, read through the cache as
// an autoscaler watching it would: spec.replicas of a scale target, or the
// placeholder backend's own count.
func (r *run) poolSize(ctx context.Context, es *laxityv1alpha1.ElasticSchedule) (int32, error) {
	ref := es.Spec.NodePool.Backend.Scale
	if ref == nil {
		backend, err := pool.New(r.poolOptions, es)
		if err != nil {
			return 0, err
		}
		return backend.Requested(ctx)
	}
	target := &unstructured.Unstructured{}
	target.SetAPIVersion(ref.APIVersion)
	target.SetKind(ref.Kind)
	mapping, err := r.mapper.RESTMapping(target.GroupVersionKind().GroupKind(), target.GroupVersionKind().Version)
	if err != nil {
		return 0, err
	}
	key := client.ObjectKey{Name: ref.Name}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		key.Namespace = es.Namespace
	}
	if err := r.reader.Get(ctx, key, target); err != nil {
		return 0, err
	}
	replicas, _, err := unstructured.NestedInt64(target.Object, "spec", "replicas")
	return int32(replicas), err
}

// record appends a level that differs from the last one.
func record(levels []level, at time.Time, nodes int) []level {
	if n := len(levels); n > 0 && levels[n-1].nodes == nodes {
		return levels
	}
	return append(levels, level{at: at, nodes: nodes})
}

// finished says whether every RecurringQuery has created the windows the
// demo runs, every query (window) has finished, or cannot any more, and
// every pool is back at its idle size. It reads the queries discover last
// read.
func (r *run) finished() bool {
	for _, s := range r.schedules {
		for _, rq := range s.recurring {
			if len(rq.windows) < r.windows {
				return false
			}
		}
		for _, q := range s.queries {
			if !queryDone(q) {
				return false
			}
		}
		idle := 0
		if s.object.Spec.NodePool.IdleNodes != nil {
			idle = int(*s.object.Spec.NodePool.IdleNodes)
		}
		if n := len(s.requested); n == 0 || s.requested[n-1].nodes > idle || s.ready[len(s.ready)-1].nodes != s.requested[n-1].nodes {
			return false
		}
	}
	return true
}
