//go:build cluster

package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/controllers"
	"github.com/laxity-dev/laxity/internal/localcluster"
	"github.com/laxity-dev/laxity/internal/pool"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/internal/spec"
	"github.com/laxity-dev/laxity/internal/standin"
	"github.com/laxity-dev/laxity/internal/tenancy"
	"github.com/laxity-dev/laxity/test/builder"
)

// laxity itself on the local cluster: its reconcilers on a real clock, the
// Spark stand-in running its SparkApplications as pods, kube-scheduler
// placing them and Karpenter provisioning the nodes. The workload is
// config/samples/three-queries.yaml scaled from half an hour to two
// minutes: a window of 120 s that turns six times busier for its last 40 s,
// deadlines 30, 40 and 50 s after it, so the plan grows the pool for the
// busy part and releases it after.
//
// The three backends that resize a Karpenter pool (scale, placeholder,
// capacityBuffer) run at once, each with its own NodePool and namespace, so
// that the three stories share the wall time of one.
const (
	// declaredLead is the schedules' provisioningLeadTime: KWOK's node
	// delay (leadTime) plus what Karpenter takes to create the node.
	declaredLead = leadTime + 5*time.Second
	// keepAlive is the schedules' releaseAfterIdle.
	keepAlive = 20 * time.Second
	// windowOpensIn leaves time to plan before the window opens.
	windowOpensIn = 25 * time.Second
	windowLength  = 120 * time.Second
	busyAfter     = 80 * time.Second
	// driverPool is a static NodePool of one node for the Spark drivers:
	// laxity pins only the executors to the elastic pool (internal/sparkapp).
	driverPool = "drivers"
	// pendingBound is how long an executor may wait for kube-scheduler
	// after its launch: preempting a placeholder takes a scheduling cycle
	// and KWOK's deletion of the victim.
	pendingBound = 5 * time.Second
	// claimBound is how long Karpenter may take to create the NodeClaims
	// for nodes laxity asked for: at most its BATCH_MAX_DURATION (10 s by
	// default), the longest it gathers pending pods before it provisions.
	// Under the full make test-all it once took 5.4 s; the plan's lead time
	// holds it, and whether the nodes came ahead of need is checked apart.
	claimBound = 10 * time.Second
)

// The pods of the template fit a KWOK node of localcluster.DefaultInstanceType:
// 4 CPUs and 8Gi, of which Karpenter's KWOK provider keeps 100m and 10Mi
// (kube-reserved), leaving 3900m and 8182Mi allocatable. An executor of 3
// cores and 4g asks 3 CPUs and 4506Mi (4g plus Spark's 410Mi overhead): one
// per node, as executorsPerNode 1 says. A driver of 1 core and 1g asks 1
// CPU and 1408Mi; the driver node holds two of each run's.
const (
	executorCores  = 3
	executorMemory = "4g"
	// placeholderCPU and placeholderMemory size a placeholder pod like an
	// executor: one per node, and an executor that preempts it fits. The
	// CapacityBuffer's pods are the same size.
	placeholderCPU    = "3"
	placeholderMemory = "4Gi"
	// driverCPU and driverMemory are what a driver asks.
	driverCPU    = "1"
	driverMemory = "1408Mi"
	// runs is how many runs share the cluster: the three backends', and
	// steps side by side on the scale backend (after them).
	runs = 4
)

func sparkTemplate(mainClass string) string {
	return fmt.Sprintf(`{"type":"Scala","mode":"cluster","image":"apache/spark:3.5.3","sparkVersion":"3.5.3",`+
		`"mainClass":%q,"mainApplicationFile":"local:///opt/spark/examples/jars/laxity-events.jar",`+
		`"driver":{"cores":1,"memory":"1g","nodeSelector":{%q:%q}},"executor":{"cores":%d,"memory":%q}}`,
		mainClass, localcluster.NodePoolLabel, driverPool, executorCores, executorMemory)
}

// threeQueries are the sample's queries on schedule "events" with windows
// opening at open, with the sample's rates and serial costs; the parallel
// costs are half the sample's and the overheads shorter, so that four nodes
// meet every deadline with the runtime margin below.
func threeQueries(ns string, open time.Time) []*laxityv1alpha1.IntermittentQuery {
	profile := []laxityv1alpha1.RateSegment{
		{After: metav1.Duration{}, RatePerSecond: "2000"},
		{After: metav1.Duration{Duration: busyAfter}, RatePerSecond: "12000"},
	}
	merge := builder.MergeCost("3", "0.3", "0.5")
	query := func(name, mainClass string, slack time.Duration, batch laxityv1alpha1.BatchCostModel) *laxityv1alpha1.IntermittentQuery {
		return builder.Query(ns, name).Schedule("events").Window(open, windowLength).Slack(slack).
			Rate("").Profile(profile...).Granularity(2000).
			CostModel(builder.CostModel(batch, merge)).Template(sparkTemplate(mainClass)).Obj()
	}
	return []*laxityv1alpha1.IntermittentQuery{
		query("errors-by-service", "dev.laxity.examples.ErrorsByService", 30*time.Second, builder.BatchCost("4", "1e-6", "3e-5")),
		query("latency-percentiles", "dev.laxity.examples.LatencyPercentiles", 40*time.Second, builder.BatchCost("5", "2e-6", "5e-5")),
		query("active-users", "dev.laxity.examples.ActiveUsers", 50*time.Second, builder.BatchCost("3", "5e-7", "2e-5")),
	}
}

// runtimeMarginPercent is the schedules' spec.planning.runtimeMarginPercent.
// The cheapest plan for the cost models alone ends the last query within a
// second of its deadline, while every step here also waits for its pods to
// be created, scheduled and started, which the cost models do not see: on
// a machine busy with other suites that is seconds per step. The margin is
// that headroom, as a platform team would set it for its own cluster.
const runtimeMarginPercent = 25

// eventsSchedule is the sample's schedule on the KWOK nodes of NodePool
// poolName, at the lead time and keep-alive of the local cluster.
func eventsSchedule(ns, poolName string, backend laxityv1alpha1.PoolBackend) *laxityv1alpha1.ElasticSchedule {
	return builder.Schedule(ns, "events").Sizes(1, 2, 4).IdleNodes(ptr.To[int32](0)).Price("0.40").
		Planning(laxityv1alpha1.Planning{RuntimeMarginPercent: ptr.To[int32](runtimeMarginPercent)}).
		LeadTime(declaredLead).ReleaseAfterIdle(keepAlive).ExecutorsPerNode(1).
		NodeSelector(map[string]string{localcluster.NodePoolLabel: poolName}).Backend(backend).Obj()
}

var _ = Describe("laxity on the local cluster", Ordered, func() {
	var scaleRun, placeholderRun, bufferRun, lanesRun *laxityRun

	BeforeAll(func(ctx SpecContext) {
		c := theCluster.Client
		stopSpark, err := theCluster.StartSparkStandIn(&localcluster.SparkStandIn{
			// Each step runs as long as its query's cost model says.
			Duration: standin.ModelledDuration(c, spec.CostModel),
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stopSpark)

		// One node for every run's drivers, three of them each (a step's
		// and the next one's while the first ends, and a second lane's).
		driverType, err := localcluster.InstanceTypeFor(corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(driverCPU), corev1.ResourceMemory: resource.MustParse(driverMemory),
		}, 3*runs)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Create(ctx, localcluster.NewNodePool(driverPool, ptr.To[int64](1), driverType))).To(Succeed())
		DeferCleanup(deletePool, driverPool)

		stopManager := startLaxity(ctx)
		DeferCleanup(stopManager)

		// The node for the drivers comes up while the windows wait to open.
		open := time.Now().Add(windowOpensIn)
		scaleRun = startScaleRun(ctx, open)
		placeholderRun = startPlaceholderRun(ctx, open)
		bufferRun = startCapacityBufferRun(ctx, open)
		// Steps side by side have the cluster to themselves once the
		// backends' runs are over: four runs at once, on two cores busy
		// with other suites, start their steps late enough to miss.
		lanesRun = startLanesRun(ctx, open.Add(lanesAfter))
		Eventually(ctx, func(g Gomega) {
			expectReadyNodes(ctx, g, driverPool, 1)
		}).WithTimeout(windowOpensIn).Should(Succeed())
	}, NodeTimeout(2*time.Minute))

	It("runs the sample on a static NodePool through its replicas (scale backend): nodes a lead time ahead, every deadline met, nodes released", func(ctx SpecContext) {
		scaleRun.finish(ctx)
		scaleRun.check()
	}, SpecTimeout(6*time.Minute))

	It("runs the sample on a dynamic NodePool through placeholder pods that make way for the executors: nodes a lead time ahead, no more than asked for, every deadline met, nodes released", func(ctx SpecContext) {
		placeholderRun.finish(ctx)
		placeholderRun.check()
		By("the placeholder pods ranking below the executors")
		var placeholders, executors []int32
		for _, p := range placeholderRun.obs.podsSeen() {
			prio := ptr.Deref(p.Spec.Priority, 0)
			switch {
			case p.Labels[pool.LabelRole] == pool.RolePlaceholder:
				placeholders = append(placeholders, prio)
			case p.Labels[localcluster.SparkRoleLabel] == "executor":
				executors = append(executors, prio)
			}
		}
		Expect(placeholders).NotTo(BeEmpty())
		Expect(executors).NotTo(BeEmpty())
		AddReportEntry("placeholder: priorities (placeholders, executors)", fmt.Sprintf("%d..%d, %d..%d",
			slices.Min(placeholders), slices.Max(placeholders), slices.Min(executors), slices.Max(executors)), ReportEntryVisibilityAlways)
		Expect(slices.Max(placeholders)).To(BeNumerically("<", slices.Min(executors)))
	}, SpecTimeout(6*time.Minute))

	It("runs the sample on a dynamic NodePool through a CapacityBuffer that Karpenter keeps room for: nodes a lead time ahead, no more than asked for, every deadline met, nodes released", func(ctx SpecContext) {
		bufferRun.finish(ctx)
		bufferRun.check()
		By("the buffered pods never running: Karpenter only keeps room for them")
		for _, p := range bufferRun.obs.podsSeen() {
			Expect(p.Labels).NotTo(HaveKeyWithValue(pool.LabelRole, pool.RoleCapacityBuffer), "pod %s", p.Name)
		}
		By("Karpenter having resolved the buffer's PodTemplate")
		cb := &unstructured.Unstructured{}
		cb.SetGroupVersionKind(pool.CapacityBufferKind)
		Expect(theCluster.Client.Get(ctx, client.ObjectKey{Namespace: bufferRun.ns, Name: pool.CapacityBufferName("events")}, cb)).To(Succeed())
		conditions, _, err := unstructured.NestedSlice(cb.Object, "status", "conditions")
		Expect(err).NotTo(HaveOccurred())
		Expect(conditions).To(ContainElement(And(HaveKeyWithValue("type", "ReadyForProvisioning"), HaveKeyWithValue("status", "True"))),
			"the CapacityBuffer's conditions: %v", conditions)
	}, SpecTimeout(6*time.Minute))

	It("runs the sample with steps side by side on a static NodePool: two steps at once, each with executors for its own nodes, every executor placed on a pool node at once, every deadline met, nodes released", func(ctx SpecContext) {
		lanesRun.finish(ctx)
		lanesRun.check()
		c := theCluster.Client
		By("the plan running steps in lanes")
		var es laxityv1alpha1.ElasticSchedule
		Expect(c.Get(ctx, client.ObjectKey{Namespace: lanesRun.ns, Name: "events"}, &es)).To(Succeed())
		Expect(es.Status.Chosen).NotTo(BeNil())
		Expect(es.Status.Chosen.Lanes).To(BeNumerically(">=", 2), "the plan: %+v", es.Status.Chosen)

		By("two SparkApplications running at once, in two lanes, on nodes that were Ready")
		o := lanesRun.obs
		o.mu.Lock()
		defer o.mu.Unlock()
		type ran struct {
			name       string
			lane       string
			nodes      int64
			start, end time.Time
		}
		var apps []ran
		for name, app := range o.apps {
			obs := sparkapp.Observe(app)
			lane, sideBySide := app.GetAnnotations()[sparkapp.AnnotationLane]
			Expect(sideBySide).To(BeTrue(), "step %s ran alone on the pool, under a plan of lanes", name)
			nodes, err := strconv.ParseInt(app.GetAnnotations()[sparkapp.AnnotationNodes], 10, 64)
			Expect(err).NotTo(HaveOccurred())
			instances, _, err := unstructured.NestedInt64(app.Object, "spec", "executor", "instances")
			Expect(err).NotTo(HaveOccurred())
			Expect(instances).To(Equal(nodes), "step %s: one executor per node of its own", name)
			Expect(obs.Started).NotTo(BeNil(), "step %s never started", name)
			Expect(obs.Ended).NotTo(BeNil(), "step %s never ended", name)
			apps = append(apps, ran{name: name, lane: lane, nodes: nodes, start: *obs.Started, end: *obs.Ended})
		}
		together := 0
		var pairs []string
		for i, a := range apps {
			held := a.nodes
			for j, b := range apps {
				if i != j && !b.start.After(a.start) && b.end.After(a.start) {
					held += b.nodes
					if b.lane != a.lane {
						together++
						pairs = append(pairs, a.name+" beside "+b.name)
					}
				}
			}
			Expect(held).To(BeNumerically("<=", o.readyAt(a.start)), "when %s started, the steps running held %d nodes", a.name, held)
		}
		AddReportEntry("lanes: steps that started beside a running step of another lane", strings.Join(pairs, ", "), ReportEntryVisibilityAlways)
		Expect(together).To(BeNumerically(">", 0), "no two steps of different lanes ran at once")
	}, SpecTimeout(10*time.Minute))
})

// startLaxity runs laxity's reconcilers as `laxity manager` does, on the
// wall clock, against the cluster; its log goes to laxity.log in the run
// directory.
func startLaxity(ctx context.Context) (stop func()) {
	// Specs that run laxity one after another share the log.
	logFile, err := os.OpenFile(filepath.Join(theCluster.Dir, "laxity.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	Expect(err).NotTo(HaveOccurred())
	mgr, err := ctrl.NewManager(theCluster.Config, ctrl.Options{
		Scheme: theCluster.Scheme, Cache: controllers.CacheOptions(), Client: controllers.ClientOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Logger: zap.New(zap.WriteTo(logFile), zap.UseDevMode(true)),
		// A manager of an earlier spec registered the same controller
		// names in this process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	opts := controllers.Options{MaxAttempts: 3, Backoff: 2 * time.Second, ResultRoot: "s3a://results", Poll: time.Second}
	Expect(controllers.Setup(ctx, mgr, clock.RealClock{}, opts, "pause")).To(Succeed())
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(runCtx)).To(Succeed())
	}()
	return func() { cancel(); <-done; _ = logFile.Close() }
}

// laxityRun is one backend's story: its namespace, NodePool, schedule and
// queries, and what the observer saw of them.
type laxityRun struct {
	name, ns, pool string
	queries        []*laxityv1alpha1.IntermittentQuery
	obs            *observer
	// strictCount: the pool never holds more nodes than laxity asked for.
	strictCount bool
	// done is when every query had ended (Succeeded or DeadlineMissed).
	done time.Time
}

// startScaleRun is the run of the scale backend on a static NodePool.
func startScaleRun(ctx context.Context, open time.Time) *laxityRun {
	return startStaticRun(ctx, "scale", open)
}

// startStaticRun makes a static NodePool of zero replicas, annotated to let
// the run's namespace resize it, and a schedule resizing it through /scale
// with the given planning changes.
func startStaticRun(ctx context.Context, name string, open time.Time, planning ...func(*laxityv1alpha1.Planning)) *laxityRun {
	ns := namespace(ctx, "laxity-"+strings.ToLower(name))
	poolName := "laxity-" + ns
	np := localcluster.NewNodePool(poolName, ptr.To[int64](0))
	// A NodePool is cluster-scoped: the annotation is how its owner lets
	// the schedule's namespace resize it (internal/tenancy).
	np.SetAnnotations(map[string]string{tenancy.AllowedNamespacesAnnotation: ns})
	Expect(theCluster.Client.Create(ctx, np)).To(Succeed())
	DeferCleanup(deletePool, poolName)
	target := func(ctx context.Context) (int64, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(localcluster.NodePoolKind)
		if err := theCluster.Client.Get(ctx, client.ObjectKey{Name: poolName}, u); err != nil {
			return 0, err
		}
		n, _, err := unstructured.NestedInt64(u.Object, "spec", "replicas")
		return n, err
	}
	backend := builder.ScaleBackend(localcluster.NodePoolKind.GroupVersion().String(), localcluster.NodePoolKind.Kind, poolName)
	r := startRun(ctx, name, ns, poolName, backend, target, open, planning...)
	r.strictCount = true
	return r
}

// startLanesRun is the scale backend's run with steps side by side
// (spec.planning.concurrency Concurrent) on a NodePool of its own. Two
// lanes of two nodes run every query's last batch and merge after the
// window closes, where one step at a time on four nodes would bill more.
// Two steps at once also wait for pods twice over on a busy machine, so
// the plan keeps more headroom than the other runs (lanesMarginPercent).
func startLanesRun(ctx context.Context, open time.Time) *laxityRun {
	return startStaticRun(ctx, "lanes", open, func(p *laxityv1alpha1.Planning) {
		p.Concurrency = laxityv1alpha1.ConcurrencyConcurrent
		p.RuntimeMarginPercent = ptr.To[int32](lanesMarginPercent)
	})
}

// lanesMarginPercent is the runtime margin of the run with steps side by
// side.
const lanesMarginPercent = 50

// lanesAfter is how long after the backends' windows the run with steps
// side by side opens its window: after their last deadline.
const lanesAfter = windowLength + time.Minute

// startPlaceholderRun makes a dynamic NodePool and a schedule holding its
// nodes with placeholder pods; laxity's requests are the placeholders and
// the nodes its steps use in their place.
func startPlaceholderRun(ctx context.Context, open time.Time) *laxityRun {
	ns := namespace(ctx, "laxity-placeholder")
	poolName := "laxity-" + ns
	np := localcluster.NewNodePool(poolName, nil)
	// Karpenter's default budget disrupts 10% of a pool's nodes at a time:
	// all of them may go once laxity releases the pool.
	Expect(unstructured.SetNestedSlice(np.Object, []any{map[string]any{"nodes": "100%"}}, "spec", "disruption", "budgets")).To(Succeed())
	Expect(theCluster.Client.Create(ctx, np)).To(Succeed())
	DeferCleanup(deletePool, poolName)
	target := func(ctx context.Context) (int64, error) {
		var d appsv1.Deployment
		err := theCluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: pool.PlaceholderDeploymentName("events")}, &d)
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		// The nodes laxity's steps use in place of their placeholders
		// count as requested.
		inUse, _ := strconv.ParseInt(d.Annotations[pool.AnnotationNodesInUse], 10, 64)
		return int64(ptr.Deref(d.Spec.Replicas, 0)) + inUse, nil
	}
	backend := builder.PlaceholderBackend(corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(placeholderCPU),
		corev1.ResourceMemory: resource.MustParse(placeholderMemory),
	})
	r := startRun(ctx, "placeholder", ns, poolName, backend, target, open)
	// laxity frees a step's nodes of their placeholders before it
	// launches: no placeholder is recreated Pending while a step runs, so
	// Karpenter adds no node for one.
	r.strictCount = true
	return r
}

// startCapacityBufferRun makes a dynamic NodePool and a schedule holding
// its nodes with a CapacityBuffer; laxity's requests are the buffer's
// replicas and the nodes its steps use in their place.
func startCapacityBufferRun(ctx context.Context, open time.Time) *laxityRun {
	ns := namespace(ctx, "laxity-buffer")
	poolName := "laxity-" + ns
	np := localcluster.NewNodePool(poolName, nil)
	Expect(unstructured.SetNestedSlice(np.Object, []any{map[string]any{"nodes": "100%"}}, "spec", "disruption", "budgets")).To(Succeed())
	Expect(theCluster.Client.Create(ctx, np)).To(Succeed())
	DeferCleanup(deletePool, poolName)
	target := func(ctx context.Context) (int64, error) {
		cb := &unstructured.Unstructured{}
		cb.SetGroupVersionKind(pool.CapacityBufferKind)
		err := theCluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: pool.CapacityBufferName("events")}, cb)
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		replicas, _, err := unstructured.NestedInt64(cb.Object, "spec", "replicas")
		if err != nil {
			return 0, err
		}
		inUse, _ := strconv.ParseInt(cb.GetAnnotations()[pool.AnnotationNodesInUse], 10, 64)
		return replicas + inUse, nil
	}
	backend := builder.CapacityBufferBackend(corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(placeholderCPU),
		corev1.ResourceMemory: resource.MustParse(placeholderMemory),
	})
	// The capacityBuffer backend keeps room only on nodes a TenantPolicy
	// grants the namespace.
	policy := builder.TenantPolicy(ns).Namespaces(ns).Obj()
	policy.Spec.CapacityBuffers = []laxityv1alpha1.CapacityBufferGrant{{NodeSelector: map[string]string{localcluster.NodePoolLabel: poolName}}}
	Expect(theCluster.Client.Create(ctx, policy)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(theCluster.Client.Delete(ctx, policy))).To(Succeed())
	})
	r := startRun(ctx, "capacityBuffer", ns, poolName, backend, target, open)
	// The buffer gives a step's nodes up before it launches, and Karpenter
	// keeps room for pods that never run: nothing for an executor to push
	// out and Karpenter to provision again.
	r.strictCount = true
	return r
}

func startRun(ctx context.Context, name, ns, poolName string, backend laxityv1alpha1.PoolBackend, target func(context.Context) (int64, error), open time.Time, planning ...func(*laxityv1alpha1.Planning)) *laxityRun {
	r := &laxityRun{name: name, ns: ns, pool: poolName, queries: threeQueries(ns, open)}
	es := eventsSchedule(ns, poolName, backend)
	for _, p := range planning {
		p(&es.Spec.Planning)
	}
	Expect(theCluster.Client.Create(ctx, es)).To(Succeed())
	for _, q := range r.queries {
		Expect(theCluster.Client.Create(ctx, q)).To(Succeed())
	}
	r.obs = newObserver(ns, poolName, target)
	DeferCleanup(r.obs.start())
	return r
}

// finish waits for every query to end, then for Karpenter to remove the
// pool's nodes once laxity released them.
func (r *laxityRun) finish(ctx context.Context) {
	c := theCluster.Client
	By(r.name + ": every query ending")
	Eventually(ctx, func(g Gomega) {
		for _, q := range r.queries {
			var got laxityv1alpha1.IntermittentQuery
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(q), &got)).To(Succeed())
			ended := meta.IsStatusConditionTrue(got.Status.Conditions, laxityv1alpha1.IntermittentQuerySucceededCondition) ||
				meta.IsStatusConditionTrue(got.Status.Conditions, laxityv1alpha1.IntermittentQueryDeadlineMissedCondition)
			g.Expect(ended).To(BeTrue(), "query %s has not ended", q.Name)
		}
	}).WithTimeout(time.Until(r.queries[0].Spec.Deadline.Time) + 2*time.Minute).WithPolling(time.Second).Should(Succeed())
	r.done = time.Now()

	By(r.name + ": Karpenter removing the pool's nodes after the keep-alive")
	Eventually(ctx, nodes).WithArguments(r.pool).WithTimeout(keepAlive + 2*time.Minute).WithPolling(time.Second).Should(BeEmpty())
	Eventually(ctx, nodeClaims).WithArguments(r.pool).WithTimeout(time.Minute).WithPolling(time.Second).Should(BeEmpty())
	gone := time.Now()
	r.obs.stop()
	AddReportEntry(r.name+": last query ended → pool nodes gone (keep-alive "+keepAlive.String()+")", gone.Sub(r.done).Round(time.Second).String(), ReportEntryVisibilityAlways)
}

// check holds what the observer saw against what laxity asked for.
func (r *laxityRun) check() {
	c := theCluster.Client
	ctx := context.Background()
	o := r.obs
	o.mu.Lock()
	defer o.mu.Unlock()

	By(r.name + ": every deadline met")
	queries := make([]laxityv1alpha1.IntermittentQuery, len(r.queries))
	var finishes []string
	for i, q := range r.queries {
		got := &queries[i]
		Expect(c.Get(ctx, client.ObjectKeyFromObject(q), got)).To(Succeed())
		finish := "no final merge"
		if f := got.Status.Final; f != nil && f.End != nil {
			switch early := got.Spec.Deadline.Sub(f.End.Time).Round(100 * time.Millisecond); {
			case early < 0:
				finish = (-early).String() + " late"
			default:
				finish = early.String() + " before"
			}
		}
		finishes = append(finishes, got.Name+" "+finish)
	}
	// Reported before the checks, so that a miss says by how much.
	AddReportEntry(r.name+": each query's final merge ended, against its deadline", strings.Join(finishes, ", "), ReportEntryVisibilityAlways)
	for i := range queries {
		got := &queries[i]
		Expect(meta.IsStatusConditionTrue(got.Status.Conditions, laxityv1alpha1.IntermittentQuerySucceededCondition)).To(BeTrue(),
			"query %s did not succeed: %v", got.Name, got.Status.Conditions)
		Expect(meta.IsStatusConditionTrue(got.Status.Conditions, laxityv1alpha1.IntermittentQueryDeadlineMissedCondition)).To(BeFalse(),
			"query %s missed its deadline", got.Name)
	}

	By(r.name + ": laxity's requests, and the NodeClaims and Ready nodes that followed")
	Expect(o.requests).NotTo(BeEmpty())
	var timeline []string
	var leads, ahead []time.Duration
	maxRequested := int64(0)
	for i, req := range o.requests {
		timeline = append(timeline, fmt.Sprintf("%s→%d", req.at.Sub(o.started).Round(time.Second), req.n))
		maxRequested = max(maxRequested, req.n)
		prev := int64(0)
		if i > 0 {
			prev = o.requests[i-1].n
		}
		if req.n <= prev {
			continue
		}
		// A later request for more does not cancel this one; one for fewer
		// does.
		end := o.stopped
		for _, later := range o.requests[i+1:] {
			if later.n < req.n {
				end = later.at
				break
			}
		}
		claimed, readied := o.reached(req.at, end, req.n)
		Expect(claimed).NotTo(BeZero(), "%s: laxity asked for %d nodes at %s; the pool never had that many NodeClaims before it asked for fewer", r.name, req.n, req.at)
		Expect(claimed.Sub(req.at)).To(BeNumerically("<=", claimBound), "%s: NodeClaims for %d nodes came %s after laxity's request", r.name, req.n, claimed.Sub(req.at))
		Expect(readied).NotTo(BeZero(), "%s: laxity asked for %d nodes at %s; that many were never Ready before it asked for fewer", r.name, req.n, req.at)
		lead := readied.Sub(req.at)
		leads = append(leads, lead)
		// Ahead of need: the first step planned on that many nodes
		// launched once they were Ready. Its creationTimestamp is in whole
		// seconds and the poll that saw the nodes Ready up to a period late.
		if launch := o.firstLaunch(req.at, req.n); !launch.IsZero() {
			ahead = append(ahead, launch.Sub(readied))
			Expect(launch).To(BeTemporally(">=", readied.Add(-time.Second-o.period)),
				"%s: a step on %d nodes launched at %s, before they were Ready at %s", r.name, req.n, launch, readied)
		}
		// The polling adds up to one period on each end.
		Expect(lead).To(BeNumerically("<=", declaredLead+2*o.period), "%s: %d nodes were Ready %s after laxity's request; it declared %s", r.name, req.n, lead, declaredLead)
	}
	AddReportEntry(r.name+": laxity's requests (since the run began → nodes)", strings.Join(timeline, ", "), ReportEntryVisibilityAlways)
	AddReportEntry(r.name+": observed lead time, request → nodes Ready (declared "+declaredLead.String()+", KWOK "+leadTime.String()+")",
		durations(leads), ReportEntryVisibilityAlways)
	AddReportEntry(r.name+": nodes Ready → first step planned on them launched", durations(ahead), ReportEntryVisibilityAlways)
	maxNodes := 0
	for _, n := range o.nodeCounts {
		maxNodes = max(maxNodes, n)
	}
	AddReportEntry(r.name+": most nodes at once, NodeClaims made, most requested", fmt.Sprintf("%d, %d, %d", maxNodes, len(o.claimNames), maxRequested), ReportEntryVisibilityAlways)
	if r.strictCount {
		Expect(int64(maxNodes)).To(BeNumerically("<=", maxRequested), "%s: the pool had more nodes than laxity asked for", r.name)
		Expect(int64(len(o.claimNames))).To(BeNumerically("<=", maxRequested), "%s: Karpenter made more NodeClaims than laxity asked for nodes", r.name)
	}

	By(r.name + ": every executor placed on a pool node within seconds of its launch")
	var pending []time.Duration
	executors := 0
	for _, p := range o.pods {
		if p.Labels[localcluster.SparkRoleLabel] != "executor" {
			continue
		}
		executors++
		scheduled := podScheduled(p)
		Expect(scheduled).NotTo(BeZero(), "%s: executor %s was never scheduled (%v)", r.name, p.Name, p.Status.Conditions)
		Expect(o.nodeNames).To(HaveKey(p.Spec.NodeName), "%s: executor %s ran on %q, not a node of pool %s", r.name, p.Name, p.Spec.NodeName, r.pool)
		wait := scheduled.Sub(p.CreationTimestamp.Time)
		pending = append(pending, wait)
		Expect(wait).To(BeNumerically("<=", pendingBound), "%s: executor %s was Pending %s", r.name, p.Name, wait)
	}
	Expect(executors).NotTo(BeZero())
	sort.Slice(pending, func(i, j int) bool { return pending[i] < pending[j] })
	AddReportEntry(r.name+": executors, longest Pending (launch → scheduled, whole seconds)",
		fmt.Sprintf("%d, %s", executors, pending[len(pending)-1]), ReportEntryVisibilityAlways)

	By(r.name + ": no duplicate SparkApplication")
	steps := map[string][]string{}
	for name, app := range o.apps {
		key := strings.Join([]string{app.GetLabels()[sparkapp.LabelQuery], app.GetLabels()[sparkapp.LabelStep], app.GetAnnotations()[sparkapp.AnnotationBatchIndex]}, "/")
		if sparkapp.Observe(app).Phase == laxityv1alpha1.StepFailed {
			// A retry follows a failed attempt under a name of its own.
			continue
		}
		steps[key] = append(steps[key], name)
	}
	for key, names := range steps {
		Expect(names).To(HaveLen(1), "%s: step %s ran as %v", r.name, key, names)
	}
	AddReportEntry(r.name+": SparkApplications", fmt.Sprint(len(o.apps)), ReportEntryVisibilityAlways)
}

func durations(ds []time.Duration) string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Round(100 * time.Millisecond).String()
	}
	return strings.Join(out, ", ")
}

func podScheduled(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// observer polls what a run is made of and keeps the last state of every
// object it saw, for objects that are gone by the end (executors, nodes).
type observer struct {
	ns, pool string
	target   func(context.Context) (int64, error)
	period   time.Duration

	mu               sync.Mutex
	started, stopped time.Time
	// requests are laxity's requests: the target's replicas when they
	// changed.
	requests []request
	// claims and ready are, at every poll, how many NodeClaims and Ready
	// nodes the pool had.
	polls      []time.Time
	claimCount []int
	readyCount []int
	nodeCounts []int
	nodeNames  map[string]bool
	claimNames map[string]bool
	pods       map[string]*corev1.Pod
	apps       map[string]*unstructured.Unstructured

	cancel context.CancelFunc
	done   chan struct{}
}

type request struct {
	at time.Time
	n  int64
}

func newObserver(ns, poolName string, target func(context.Context) (int64, error)) *observer {
	return &observer{ns: ns, pool: poolName, target: target, period: 500 * time.Millisecond,
		nodeNames: map[string]bool{}, claimNames: map[string]bool{}, pods: map[string]*corev1.Pod{}, apps: map[string]*unstructured.Unstructured{}}
}

func (o *observer) start() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	o.cancel, o.done = cancel, make(chan struct{})
	o.started = time.Now()
	stopWatch, err := o.watchPods(ctx)
	Expect(err).NotTo(HaveOccurred(), "watching the pods of namespace %s", o.ns)
	go func() {
		defer close(o.done)
		defer stopWatch()
		tick := time.NewTicker(o.period)
		defer tick.Stop()
		for i := 0; ; i++ {
			// SparkApplications stay until the run's namespace goes:
			// every other poll sees them.
			o.poll(ctx, i%2 == 0)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return o.stop
}

func (o *observer) stop() {
	if o.cancel == nil {
		return
	}
	o.cancel()
	<-o.done
	o.mu.Lock()
	if o.stopped.IsZero() {
		o.stopped = time.Now()
	}
	o.mu.Unlock()
}

func (o *observer) poll(ctx context.Context, all bool) {
	c := theCluster.Client
	at := time.Now()
	replicas, err := o.target(ctx)
	if err != nil {
		return
	}
	claims, err := nodeClaims(ctx, o.pool)
	if err != nil {
		return
	}
	list, err := nodes(ctx, o.pool)
	if err != nil {
		return
	}
	apps := &unstructured.UnstructuredList{}
	apps.SetGroupVersionKind(sparkapp.GroupVersionKind.GroupVersion().WithKind(sparkapp.GroupVersionKind.Kind + "List"))
	if all && c.List(ctx, apps, client.InNamespace(o.ns)) != nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if n := len(o.requests); n == 0 && replicas > 0 || n > 0 && o.requests[n-1].n != replicas {
		o.requests = append(o.requests, request{at: at, n: replicas})
	}
	readyNodes := 0
	for i := range claims {
		o.claimNames[claims[i].GetName()] = true
	}
	for i := range list {
		o.nodeNames[list[i].Name] = true
		if ready(&list[i]) {
			readyNodes++
		}
	}
	o.polls = append(o.polls, at)
	o.claimCount = append(o.claimCount, len(claims))
	o.readyCount = append(o.readyCount, readyNodes)
	o.nodeCounts = append(o.nodeCounts, len(list))
	for i := range apps.Items {
		o.apps[apps.Items[i].GetName()] = &apps.Items[i]
	}
}

// reached is the first poll in [from, to) at which the pool had at least n
// NodeClaims, and the first at which it had at least n Ready nodes (zero
// when it did not).
func (o *observer) reached(from, to time.Time, n int64) (claimed, readied time.Time) {
	for i, at := range o.polls {
		if at.Before(from) || !at.Before(to) {
			continue
		}
		if claimed.IsZero() && int64(o.claimCount[i]) >= n {
			claimed = at
		}
		if readied.IsZero() && int64(o.readyCount[i]) >= n {
			readied = at
		}
	}
	return claimed, readied
}

// readyAt is the most Ready nodes the polls saw around t: a step's start
// is in whole seconds, and a poll sees nodes up to a period late.
func (o *observer) readyAt(t time.Time) int64 {
	most := 0
	for i, at := range o.polls {
		if !at.Before(t.Add(-time.Second)) && !at.After(t.Add(time.Second+o.period)) {
			most = max(most, o.readyCount[i])
		}
	}
	return int64(most)
}

// firstLaunch is when the first SparkApplication created after from and
// planned on at least n nodes was created (zero when none was).
func (o *observer) firstLaunch(from time.Time, n int64) time.Time {
	var first time.Time
	for _, app := range o.apps {
		nodes, err := strconv.ParseInt(app.GetAnnotations()[sparkapp.AnnotationNodes], 10, 64)
		created := app.GetCreationTimestamp().Time
		// Creation times are whole seconds.
		if err != nil || nodes < n || created.Before(from.Truncate(time.Second)) {
			continue
		}
		if first.IsZero() || created.Before(first) {
			first = created
		}
	}
	return first
}

// watchPods keeps the last state of every pod of the namespace from a
// watch, not from polls: an executor lives for seconds, and the stand-in
// deletes it when its application ends, so a poll can miss every state of
// it after its creation. The returned stop returns once no event is
// being recorded.
func (o *observer) watchPods(ctx context.Context) (stop func(), err error) {
	clientset, err := kubernetes.NewForConfig(theCluster.Config)
	if err != nil {
		return nil, err
	}
	list, err := clientset.CoreV1().Pods(o.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	for i := range list.Items {
		o.pods[podKey(&list.Items[i])] = &list.Items[i]
	}
	o.mu.Unlock()
	lw := cache.NewListWatchFromClient(clientset.CoreV1().RESTClient(), "pods", o.ns, fields.Everything())
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, lw)
	if err != nil {
		return nil, err
	}
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			o.mu.Lock()
			o.pods[podKey(pod)] = pod
			o.mu.Unlock()
		}
	}()
	return func() { w.Stop(); <-recorded }, nil
}

func podKey(p *corev1.Pod) string { return p.Name + "/" + string(p.UID) }

func (o *observer) podsSeen() []*corev1.Pod {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(o.pods))
	for _, p := range o.pods {
		out = append(out, p)
	}
	return out
}
