//go:build cluster

package cluster_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/laxity-dev/laxity/internal/localcluster"
)

// leadTime is the provisioning lead time of the suite's cluster: a node is
// Ready this long after Karpenter creates it.
const leadTime = 15 * time.Second

var (
	theCluster *localcluster.Cluster
	anyFailed  bool
)

func TestCluster(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Local cluster (kube-scheduler, kube-controller-manager, KWOK, Karpenter)")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	started := time.Now()
	var err error
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	theCluster, err = localcluster.Start(ctx, localcluster.Options{NodeReadyDelay: leadTime})
	Expect(err).NotTo(HaveOccurred())
	AddReportEntry("cluster start", time.Since(started).Round(time.Millisecond).String(), ReportEntryVisibilityAlways)
	AddReportEntry("run directory", theCluster.Dir, ReportEntryVisibilityAlways)
}, NodeTimeout(5*time.Minute))

// A failed spec leaves the cluster's state next to the logs. AfterEach runs
// before the spec's DeferCleanup, so it sees the objects the spec made.
var _ = AfterEach(func(ctx SpecContext) {
	report := CurrentSpecReport()
	if !report.Failed() {
		return
	}
	anyFailed = true
	if theCluster == nil {
		return
	}
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(report.LeafNodeText))
	if path, err := theCluster.Dump(ctx, name[:min(len(name), 60)]); err != nil {
		fmt.Fprintf(GinkgoWriter, "dumping the cluster's state: %v\n", err)
	} else {
		fmt.Fprintf(GinkgoWriter, "the cluster's state at the failure is in %s\n", path)
	}
}, NodeTimeout(30*time.Second))

var _ = AfterSuite(func() {
	if theCluster == nil {
		return
	}
	if mem, err := theCluster.ResidentMemory(); err == nil {
		names := make([]string, 0, len(mem))
		for name := range mem {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			fmt.Fprintf(GinkgoWriter, "resident memory of %s: %d MiB\n", name, mem[name]>>20)
		}
		AddReportEntry("resident memory", fmt.Sprint(memMiB(mem)), ReportEntryVisibilityAlways)
	}
	Expect(theCluster.Stop()).To(Succeed())
	if anyFailed {
		fmt.Fprintf(GinkgoWriter, "the logs of the local cluster are in %s\n", theCluster.Dir)
		return
	}
	Expect(theCluster.RemoveDir()).To(Succeed())
})

func memMiB(mem map[string]int64) map[string]string {
	out := map[string]string{}
	for name, b := range mem {
		out[name] = fmt.Sprintf("%d MiB", b>>20)
	}
	return out
}
