//go:build cluster

package cluster_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/localcluster"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/internal/tenancy"
	"github.com/laxity-dev/laxity/test/builder"
)

// smallInstanceType is a KWOK instance type of 2 CPUs and 4Gi, of which
// 1900m and 4086Mi are allocatable: too small for the template's executor
// of 3 cores.
const smallInstanceType = "c-2x-amd64-linux"

var _ = Describe("laxity on a pool whose nodes are smaller than one executor", Ordered, func() {
	It("holds the query, Stalled with reason ExecutorDoesNotFit naming the template field and the node size, as soon as a node is Ready", func(ctx SpecContext) {
		c := theCluster.Client
		stopManager := startLaxity(ctx)
		DeferCleanup(stopManager)

		ns := namespace(ctx, "laxity-fit")
		poolName := "laxity-" + ns
		np := localcluster.NewNodePool(poolName, ptr.To[int64](0), smallInstanceType)
		np.SetAnnotations(map[string]string{tenancy.AllowedNamespacesAnnotation: ns})
		Expect(c.Create(ctx, np)).To(Succeed())
		DeferCleanup(deletePool, poolName)
		backend := builder.ScaleBackend(localcluster.NodePoolKind.GroupVersion().String(), localcluster.NodePoolKind.Kind, poolName)
		Expect(c.Create(ctx, eventsSchedule(ns, poolName, backend))).To(Succeed())
		query := threeQueries(ns, time.Now().Add(windowOpensIn))[0]
		Expect(c.Create(ctx, query)).To(Succeed())

		// The plan asks for the first node a lead time before the query's
		// first batch, which may be as late as the window's end.
		By("Karpenter bringing up the pool's first node")
		var readyAt time.Time
		Eventually(ctx, func(g Gomega) {
			list, err := nodes(ctx, poolName)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list).NotTo(BeEmpty())
			for i := range list {
				if ready(&list[i]) {
					readyAt = time.Now()
					return
				}
			}
			g.Expect(readyAt).NotTo(BeZero(), "no node of %s is Ready", poolName)
		}).WithTimeout(windowOpensIn + windowLength + declaredLead + 30*time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

		By("the query turning Stalled")
		var stalled *metaCondition
		Eventually(ctx, func(g Gomega) {
			var got laxityv1alpha1.IntermittentQuery
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(query), &got)).To(Succeed())
			cond := meta.FindStatusCondition(got.Status.Conditions, laxityv1alpha1.IntermittentQueryStalledCondition)
			g.Expect(cond).NotTo(BeNil())
			stalled = &metaCondition{reason: cond.Reason, message: cond.Message, seen: time.Now()}
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		AddReportEntry("executor fit: node Ready → query Stalled", stalled.seen.Sub(readyAt).Round(time.Millisecond).String(), ReportEntryVisibilityAlways)
		Expect(stalled.reason).To(Equal(laxityv1alpha1.ExecutorDoesNotFitReason))
		Expect(stalled.message).To(ContainSubstring("spec.sparkApplication.executor.cores"))
		Expect(stalled.message).To(ContainSubstring(fmt.Sprintf("asks for %d CPU", executorCores)))
		Expect(stalled.message).To(ContainSubstring("has 1900m allocatable"))
		// The query controller is woken by the schedule's verdict, not by
		// its poll.
		Expect(stalled.seen.Sub(readyAt)).To(BeNumerically("<", 5*time.Second))

		By("nothing of the query launched while it is held")
		Consistently(ctx, func(g Gomega) {
			apps := sparkapp.NewList()
			g.Expect(c.List(ctx, apps, client.InNamespace(ns))).To(Succeed())
			g.Expect(apps.Items).To(BeEmpty())
		}).WithTimeout(20 * time.Second).WithPolling(time.Second).Should(Succeed())
	}, SpecTimeout(6*time.Minute))
})

// metaCondition is a condition as seen, and when.
type metaCondition struct {
	reason, message string
	seen            time.Time
}
