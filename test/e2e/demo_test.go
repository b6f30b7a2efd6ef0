//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/laxity-dev/laxity/internal/dispatch"
	"github.com/laxity-dev/laxity/internal/manifest"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/source"
)

// The demo runs its own control plane: these specs only share the built
// binary and KUBEBUILDER_ASSETS with the rest of the suite.
var _ = Describe("laxity demo", func() {
	const sample = "three-queries.yaml"

	It("runs the 3-query sample to the end and reports what ran, every deadline met", func(ctx SpecContext) {
		dir := GinkgoT().TempDir()
		report, svg := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.svg")
		demo := exec.CommandContext(ctx, binary, "demo", "--workload", filepath.Join("..", "..", "config", "samples", sample),
			"--speed", "high", "--report", report, "--svg", svg)
		out, err := demo.CombinedOutput()
		AddReportEntry("demo output", string(out))
		Expect(err).NotTo(HaveOccurred(), "the demo exits 0 only when every deadline is met:\n%s", out)
		Expect(string(out)).To(ContainSubstring("3 of 3 queries met their deadline"))

		data, err := os.ReadFile(report)
		Expect(err).NotTo(HaveOccurred())
		var doc planner.Document
		Expect(json.Unmarshal(data, &doc)).To(Succeed())
		set, err := manifest.Load(filepath.Join("..", "..", "config", "samples", sample))
		Expect(err).NotTo(HaveOccurred())
		checkReport(&doc, set)

		// The figure has a bar per step (drawn as paths or rects by the
		// plotting library: count the step colour's fills instead of
		// guessing) and names every query.
		figure, err := os.ReadFile(svg)
		Expect(err).NotTo(HaveOccurred())
		Expect(wellFormedXML(figure)).To(Succeed())
		for _, q := range set.Queries {
			Expect(string(figure)).To(ContainSubstring(">" + q.Object.Name + "<"))
		}
	})

	It("runs three windows of a RecurringQuery 40% slower than declared, and meets the third's deadline with what it learned", func(ctx SpecContext) {
		report := filepath.Join(GinkgoT().TempDir(), "r.json")
		demo := exec.CommandContext(ctx, binary, "demo", "--workload", filepath.Join("..", "..", "config", "samples", "recurring.yaml"),
			"--speed", "high", "--slowdown", "40", "--windows", "3", "--report", report)
		out, err := demo.CombinedOutput()
		AddReportEntry("demo output", string(out))
		Expect(err).NotTo(HaveOccurred(), "a recurring run exits 0 when every window from the third on met its deadline:\n%s", out)
		Expect(string(out)).To(ContainSubstring("every deadline from the third window on was met (1 of 1 windows)"))

		data, err := os.ReadFile(report)
		Expect(err).NotTo(HaveOccurred())
		var doc struct {
			planner.Document
			Windows []struct {
				RecurringQuery, Query                    string
				WindowStart, WindowEnd, Deadline, Finish float64
				Met                                      bool
				LearnedSlowdownPercent                   *float64
			} `json:"windows"`
		}
		Expect(json.Unmarshal(data, &doc)).To(Succeed())
		// Exactly the three windows ran, ten minutes apart, and nothing else.
		Expect(doc.Windows).To(HaveLen(3))
		Expect(doc.Queries).To(HaveLen(3))
		for i, w := range doc.Windows {
			Expect(w.RecurringQuery).To(Equal("orders-by-region"))
			Expect(doc.Queries[i].Name).To(Equal(w.Query))
			Expect(w.WindowEnd - w.WindowStart).To(Equal(300.0))
			Expect(w.Deadline - w.WindowEnd).To(Equal(240.0))
			if i > 0 {
				Expect(w.WindowStart - doc.Windows[i-1].WindowStart).To(Equal(600.0))
			}
		}
		third := doc.Windows[2]
		Expect(third.Met).To(BeTrue())
		Expect(third.Finish).To(BeNumerically("<=", third.Deadline))
		Expect(third.LearnedSlowdownPercent).NotTo(BeNil())
		Expect(*third.LearnedSlowdownPercent).To(BeNumerically(">", 10), "the 40%% slowdown was not learned")
	})

	It("says in one line what to do when the control plane is not built", func(ctx SpecContext) {
		demo := exec.CommandContext(ctx, binary, "demo", "--control-plane", GinkgoT().TempDir())
		out, err := demo.CombinedOutput()
		var exit *exec.ExitError
		Expect(errors.As(err, &exit)).To(BeTrue(), "%v", err)
		Expect(exit.ExitCode()).To(Equal(1))
		Expect(strings.Count(strings.TrimSpace(string(out)), "\n")).To(BeZero(), "one line: %s", out)
		Expect(string(out)).To(ContainSubstring("make envtest"))
	})

	It("names the file and the field of a bad workload, before starting anything", func(ctx SpecContext) {
		bad := filepath.Join(GinkgoT().TempDir(), "bad.yaml")
		Expect(os.WriteFile(bad, []byte("apiVersion: laxity.dev/v1alpha1\nkind: IntermittentQuery\nmetadata: {name: q}\nspec: {scheduleName: s, deadline: soon}\n"), 0o600)).To(Succeed())
		out, err := exec.CommandContext(ctx, binary, "demo", "--workload", bad).CombinedOutput()
		Expect(err).To(HaveOccurred())
		Expect(string(out)).To(ContainSubstring(bad))
		Expect(string(out)).To(ContainSubstring("spec.deadline"))
		Expect(string(out)).NotTo(ContainSubstring("Starting a local control plane"))
	})
})

// checkReport checks what ran against the model, independently of laxity's
// own code: every step after its tuples arrived, one at a time, each
// query's batches tiling its window once, every deadline met, and every
// node a step used asked for at least the lead time before.
func checkReport(doc *planner.Document, set *manifest.Set) {
	Expect(set.Schedules).To(HaveLen(1))
	lead := set.Schedules[0].Object.Spec.NodePool.ProvisioningLeadTime.Seconds()
	Expect(doc.Chosen.Feasible).To(BeTrue(), "failure %+v", doc.Chosen.Failure)

	steps := append([]planner.Step(nil), doc.Steps...)
	sort.SliceStable(steps, func(a, b int) bool { return steps[a].Start < steps[b].Start })
	for i, s := range steps {
		Expect(s.End).To(BeNumerically(">=", s.Start), "%+v", s)
		Expect(s.Start).To(BeNumerically(">=", s.Ready), "%s %s %d started before its inputs were there", s.Query, s.Kind, s.Index)
		if i > 0 {
			Expect(s.Start).To(BeNumerically(">=", steps[i-1].End), "%+v overlaps %+v", s, steps[i-1])
		}
		Expect(s.Nodes).To(BeNumerically(">", 0))
		Expect(levelAt(doc, doc.Nodes, s.Start)).To(BeNumerically(">=", s.Nodes), "%s %s %d ran on nodes that were not ready", s.Query, s.Kind, s.Index)
		// Whole seconds: a node asked for a fraction of a second after
		// start - lead is within the report's rounding.
		Expect(levelAt(doc, doc.Requests, s.Start-lead+1)).To(BeNumerically(">=", s.Nodes),
			"%s %s %d at %.0f s used %d nodes not asked for by %.0f s", s.Query, s.Kind, s.Index, s.Start, s.Nodes, s.Start-lead)
	}

	Expect(doc.Queries).To(HaveLen(len(set.Queries)))
	for _, q := range set.Queries {
		var plan *planner.QueryPlan
		for i := range doc.Queries {
			if doc.Queries[i].Name == q.Object.Name {
				plan = &doc.Queries[i]
			}
		}
		Expect(plan).NotTo(BeNil(), q.Object.Name)
		deadline := q.Object.Spec.Deadline.Sub(doc.Origin).Seconds()
		Expect(plan.Deadline).To(BeNumerically("~", deadline, 1))
		Expect(plan.Finish).To(BeNumerically("<=", deadline), "%s finished late", q.Object.Name)

		src, err := source.FromSpec(q.Object, nil)
		Expect(err).NotTo(HaveOccurred())
		next, finals := int64(0), 0
		for _, s := range doc.Steps {
			if s.Query != q.Object.Name {
				continue
			}
			switch s.Kind {
			case planner.StepBatch:
				Expect(s.FromTuple).To(Equal(next), "%s batch %d does not start where the previous ended", s.Query, s.Index)
				Expect(s.ToTuple).To(BeNumerically(">", s.FromTuple))
				arrived, err := src.Arrived(context.Background(), doc.Origin.Add(time.Duration(s.Start)*time.Second).Add(time.Second))
				Expect(err).NotTo(HaveOccurred())
				Expect(arrived).To(BeNumerically(">=", s.ToTuple), "%s batch %d ran tuples that had not arrived", s.Query, s.Index)
				next = s.ToTuple
			case planner.StepFinal:
				finals++
				Expect(s.Start).To(BeNumerically(">=", q.Object.Spec.Window.End.Sub(doc.Origin).Seconds()-1))
			}
		}
		Expect(next).To(Equal(src.Total()), "%s: the batches do not cover the window's tuples", q.Object.Name)
		Expect(finals).To(Equal(1), q.Object.Name)
	}
}

// levelAt is a timeline's level seconds after the report's origin.
func levelAt(doc *planner.Document, levels []planner.NodeLevel, seconds float64) int {
	return dispatch.RequestAt(doc.Origin, levels, doc.Origin.Add(time.Duration(seconds*float64(time.Second))))
}

func wellFormedXML(data []byte) error {
	d := xml.NewDecoder(strings.NewReader(string(data)))
	for {
		if _, err := d.Token(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
