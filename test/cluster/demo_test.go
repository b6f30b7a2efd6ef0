//go:build cluster

package cluster_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// `laxity demo --cluster karpenter` as a user runs it, the built binary in
// a process of its own (controller-runtime's names are per process, and this
// one runs laxity's reconcilers already): it starts a local cluster of its
// own (the suite's stays idle meanwhile), runs the three-query sample
// compressed ten times and reports in workload time.
var _ = Describe("laxity demo --cluster karpenter", func() {
	It("runs the three-query sample compressed on a local cluster, meets every deadline and reports in workload time", func(ctx SpecContext) {
		root, err := filepath.Abs(filepath.Join("..", ".."))
		Expect(err).NotTo(HaveOccurred())
		binary := filepath.Join(GinkgoT().TempDir(), "laxity")
		build := exec.CommandContext(ctx, "go", "build", "-o", binary, ".")
		build.Dir = root
		built, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(built))

		report := filepath.Join(GinkgoT().TempDir(), "run.json")
		var out, errOut bytes.Buffer
		demo := exec.CommandContext(ctx, binary, "demo", "--cluster", "karpenter",
			"--workload", filepath.Join(root, "config", "samples", "three-queries.yaml"), "--report", report)
		demo.Stdout, demo.Stderr = &out, &errOut
		started := time.Now()
		err = demo.Run()
		AddReportEntry("demo --cluster karpenter: wall time", time.Since(started).Round(time.Second).String(), ReportEntryVisibilityAlways)
		AddReportEntry("demo --cluster karpenter: output", out.String(), ReportEntryVisibilityFailureOrVerbose)
		Expect(err).NotTo(HaveOccurred(), "stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())

		By("the summary: every deadline, what it ran on, the lead times measured")
		Expect(out.String()).To(And(
			ContainSubstring("Starting a local cluster"),
			ContainSubstring("ElasticSchedule observability/events: 3 of 3 queries met their deadline."),
			ContainSubstring("Ran on a local cluster: Karpenter (KWOK provider)"),
			ContainSubstring("the workload compressed 10 times in time"),
			ContainSubstring("provisioning lead time: declared 3m0s; measured"),
		))

		By("the report: in workload time, saying what it ran on")
		data, err := os.ReadFile(report)
		Expect(err).NotTo(HaveOccurred())
		var doc struct {
			RanOn   string `json:"ranOn"`
			Queries []struct {
				Name     string  `json:"name"`
				Deadline float64 `json:"deadline"`
				Slack    float64 `json:"slack"`
			} `json:"queries"`
			Steps []struct {
				Nodes int `json:"nodes"`
			} `json:"steps"`
		}
		Expect(json.Unmarshal(data, &doc)).To(Succeed())
		Expect(doc.RanOn).To(ContainSubstring("Karpenter"))
		deadlines := map[string]float64{}
		for _, q := range doc.Queries {
			deadlines[q.Name] = q.Deadline
			Expect(q.Slack).To(BeNumerically(">=", 0), "query %s", q.Name)
		}
		// The sample's deadlines are two minutes apart; compressed they
		// were 12 s apart, and whole seconds on the wall clock are ten in
		// workload time.
		Expect(deadlines["latency-percentiles"] - deadlines["errors-by-service"]).To(BeNumerically("~", 120, 10))
		Expect(deadlines["active-users"] - deadlines["latency-percentiles"]).To(BeNumerically("~", 120, 10))
		Expect(doc.Steps).NotTo(BeEmpty())
		for _, s := range doc.Steps {
			Expect(s.Nodes).To(BeNumerically(">", 0))
		}
	}, SpecTimeout(12*time.Minute))
})
