package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/test/builder"
)

// Several workers: schedules are reconciled at once (--schedule-workers),
// so what the reconcilers share must be safe for concurrent use (run these
// with -race), and one schedule whose plan takes long holds back no other.

// activeScheduleWorkers is how many ElasticSchedule reconciles are running,
// from controller-runtime's workqueue metrics.
func activeScheduleWorkers() float64 {
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "controller_runtime_active_workers" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "elasticschedule" {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return 0
}

func hasPlan(ctx context.Context, key types.NamespacedName) bool {
	var es laxityv1alpha1.ElasticSchedule
	if err := k8sClient.Get(ctx, key, &es); err != nil {
		return false
	}
	return es.Status.Chosen != nil
}

var _ = Describe("Story: several workers", concurrent, func() {
	It("runs two schedules to the end at once, the reconcilers sharing their sources", func(ctx SpecContext) {
		a := newWorld(ctx, "workers-a", 2*time.Minute)
		b := newWorld(ctx, "workers-b", 2*time.Minute)
		// One Sources for all four reconcilers, as Setup shares it.
		b.es.Sources, b.iq.Sources, a.iq.Sources = a.es.Sources, a.es.Sources, a.es.Sources
		for _, w := range []*world{a, b} {
			w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4, 10).LeadTime(2 * time.Minute).SmallBatches().Obj()
			w.create(ctx, append([]client.Object{w.schedule}, threeQueries(w.ns)...)...)
		}
		var wg sync.WaitGroup
		for _, w := range []*world{a, b} {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				w.run(ctx, 40*time.Minute)
			}()
		}
		wg.Wait()
		for _, w := range []*world{a, b} {
			for _, name := range []string{"alpha", "bravo", "charlie"} {
				w.finishedInTime(ctx, name)
			}
		}
	})

	// plansAlongside starts a manager with the given schedule workers over
	// two namespaces, gives one schedule many queries and, once its plan is
	// being made, creates a small schedule in the other; it says whether the
	// small schedule was planned before the large one.
	plansAlongside := func(ctx context.Context, workers, queries int) bool {
		large := newWorld(ctx, "workers-large", 2*time.Minute)
		small := newWorld(ctx, "workers-small", 2*time.Minute)
		for i := range queries {
			large.create(ctx, builder.Query(large.ns, fmt.Sprintf("q%04d", i)).Rate("5").Slack(time.Duration(90+i%7*30)*time.Second).Obj())
		}
		opts := CacheOptions()
		opts.DefaultNamespaces = map[string]cache.Config{large.ns: {}, small.ns: {}}
		mgr, err := ctrl.NewManager(cfg, ctrl.Options{
			Scheme: k8sClient.Scheme(), Cache: opts, Client: ClientOptions(),
			Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
			Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(Setup(ctx, mgr, clocktesting.NewFakeClock(origin), Options{
			MaxAttempts: 3, Backoff: 20 * time.Second, ResultRoot: "s3a://results", Poll: 10 * time.Second,
			ScheduleWorkers: workers, QueryWorkers: workers,
		}, "pause")).To(Succeed())
		mgrCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(mgr.Start(mgrCtx)).To(Succeed())
		}()
		defer func() { stop(); <-done }()

		large.schedule = builder.Schedule(large.ns, "pool").Sizes(2, 4, 10, 20).LeadTime(2 * time.Minute).Obj()
		large.create(ctx, large.schedule)
		largeKey := client.ObjectKeyFromObject(large.schedule)
		// The large schedule's plan is being made: a worker is busy and
		// no plan is there yet.
		Eventually(func() bool {
			return activeScheduleWorkers() >= 1 && !hasPlan(ctx, largeKey)
		}).WithContext(ctx).WithPolling(5 * time.Millisecond).Should(BeTrue())

		small.schedule = builder.Schedule(small.ns, "pool").Sizes(2, 4).LeadTime(2 * time.Minute).Obj()
		small.create(ctx, append([]client.Object{small.schedule}, threeQueries(small.ns)...)...)
		smallKey := client.ObjectKeyFromObject(small.schedule)
		var largeFirst bool
		Eventually(func() bool {
			largeFirst = hasPlan(ctx, largeKey)
			return hasPlan(ctx, smallKey)
		}).WithContext(ctx).WithTimeout(5 * time.Minute).WithPolling(10 * time.Millisecond).Should(BeTrue())
		Eventually(func() bool { return hasPlan(ctx, largeKey) }).WithContext(ctx).WithTimeout(5 * time.Minute).Should(BeTrue())
		return !largeFirst
	}

	It("plans a small schedule while a large one's plan is being made", func(ctx SpecContext) {
		Expect(plansAlongside(ctx, 2, largeScheduleQueries)).To(BeTrue(), "with 2 workers the small schedule waited for the large one's plan")
	})

	It("(the control) makes the small schedule wait with one worker", func(ctx SpecContext) {
		Expect(plansAlongside(ctx, 1, largeScheduleQueries)).To(BeFalse(), "with 1 worker the small schedule was planned first: the story above shows nothing")
	})
})

// largeScheduleQueries is the large schedule's query count: enough for its
// plan to take far longer than the small one's whole reconcile.
const largeScheduleQueries = 400
