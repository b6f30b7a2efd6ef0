package planner

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestOptimumIsExhaustiveEnumeration checks the branch and bound of
// optimum against plain enumeration of every plan on workloads small
// enough to enumerate.
func TestOptimumIsExhaustiveEnumeration(t *testing.T) {
	feasible, maxUnits := 0, 5
	if testing.Short() {
		maxUnits = 4
	}
	for seed := range uint64(60) {
		w := oracleWorkload(seed, 2, 2, maxUnits)
		wantI, wantE, wantOK := exhaustiveOptimum(w)
		gotI, gotE, gotOK, exact := optimum(w, 0)
		if !exact {
			t.Fatalf("seed %d: the unlimited search stopped", seed)
		}
		if gotOK != wantOK || gotOK && (math.Abs(gotI-wantI) > 1e-12 || math.Abs(gotE-wantE) > 1e-12) {
			t.Errorf("seed %d: optimum = (%g, %g, %v), enumeration = (%g, %g, %v)", seed, gotI, gotE, gotOK, wantI, wantE, wantOK)
		}
		if wantOK {
			feasible++
		}
	}
	if feasible < 20 || feasible == 60 {
		t.Errorf("%d of 60 workloads feasible: the check needs both kinds", feasible)
	}
}

// The comparison's workloads: 1–3 queries of 4 to oracleMaxUnits units,
// and the partial plans the exact search may visit per workload. A workload
// whose search reaches the limit is left out of the comparison (and
// counted), since its best plan found is not known to be the optimum;
// workloads are drawn until oracleWorkloads have a proved optimum, from at
// most oracleMaxDrawn seeds.
const (
	oracleWorkloads = 200
	oracleMaxDrawn  = 4 * oracleWorkloads
	oracleMaxUnits  = 16
	oracleLimit     = 100_000
)

// comparison is the planner against the optimum over the generated
// workloads.
type comparison struct {
	workloads, exact, feasible, plannerInfeasible int
	// reservedInfeasible counts the workloads where only the plan with the
	// default slack reserve has none (the side-by-side comparison; the
	// other counts either in plannerInfeasible).
	reservedInfeasible int
	// lanesOnly and lanesCheaper count the feasible workloads (of the
	// side-by-side comparison) whose optimum needs lanes, and those where
	// lanes lower the executable optimum.
	lanesOnly, lanesCheaper int
	sideBySide              bool
	// provedLate counts the workloads without a plan that the lower bound
	// (provablyLate) proves so.
	provedLate int
	// instant and executable are planner/optimum with ExactDeadlines, as
	// the optimum plans; reservedInstant and reservedExecutable with the
	// slack the planner leaves by default.
	instant, executable                 []float64
	reservedInstant, reservedExecutable []float64
	oracleSeconds                       float64  // the exact searches' total
	cheaper                             []string // planner plans below the optimum
}

// compareWithOptimum compares the planner with the optimum on the first
// n generated workloads whose optimum the exact search proves.
func compareWithOptimum(n int) (comparison, error) {
	var c comparison
	for seed := uint64(0); c.exact < n && seed < oracleMaxDrawn; seed++ {
		w := oracleWorkload(seed, 3, 4, oracleMaxUnits)
		c.workloads++
		start := time.Now()
		instant, executable, feasible, exact := optimum(w, oracleLimit)
		elapsed := time.Since(start).Seconds()
		if !exact {
			continue
		}
		c.exact++
		c.oracleSeconds += elapsed
		exactW := w
		exactW.Planning.ExactDeadlines = true
		doc, err := Plan(exactW)
		if err != nil {
			return c, fmt.Errorf("seed %d: %w", seed, err)
		}
		reserved, err := Plan(w)
		if err != nil {
			return c, fmt.Errorf("seed %d: %w", seed, err)
		}
		p, err := prepare(w)
		if err != nil {
			return c, fmt.Errorf("seed %d: %w", seed, err)
		}
		late := p.provablyLate()
		if late && (feasible || doc.Chosen.Feasible || reserved.Chosen.Feasible) {
			c.cheaper = append(c.cheaper, fmt.Sprintf("seed %d: the lower bound calls late a workload with a plan", seed))
		}
		if !feasible {
			if doc.Chosen.Feasible || reserved.Chosen.Feasible {
				c.cheaper = append(c.cheaper, fmt.Sprintf("seed %d: the planner meets deadlines no plan of the space meets", seed))
			}
			if late {
				c.provedLate++
			}
			continue
		}
		c.feasible++
		if !doc.Chosen.Feasible || !reserved.Chosen.Feasible {
			c.plannerInfeasible++
			continue
		}
		for _, d := range []struct {
			doc                 Document
			instant, executable *[]float64
		}{{doc, &c.instant, &c.executable}, {reserved, &c.reservedInstant, &c.reservedExecutable}} {
			nodes := NodeTimeline(d.doc.Steps, w.Pool)
			pi, pe := Cost(nodes, w.Pool), Cost(RequestTimeline(nodes, w.Pool), w.Pool)
			if pi < instant-1e-9 || pe < executable-1e-9 {
				c.cheaper = append(c.cheaper, fmt.Sprintf("seed %d: planner (instant %g, executable %g) below the optimum (%g, %g)", seed, pi, pe, instant, executable))
			}
			*d.instant = append(*d.instant, pi/instant)
			*d.executable = append(*d.executable, pe/executable)
		}
	}
	if c.exact < n {
		return c, fmt.Errorf("the exact search proved the optimum of %d of %d workloads, want %d", c.exact, c.workloads, n)
	}
	return c, nil
}

// fullComparison is the comparison on oracleWorkloads proved workloads,
// made once for the tests that read it.
var fullComparison = sync.OnceValues(func() (comparison, error) { return compareWithOptimum(oracleWorkloads) })

// quantile is the q-quantile of xs by nearest rank, NaN for none.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Sorted(slices.Values(xs))
	return s[min(len(s)-1, max(0, int(math.Ceil(q*float64(len(s))))-1))]
}

func (c comparison) String() string {
	lanes := ""
	if c.sideBySide {
		lanes = fmt.Sprintf("; lanes: the only plans on %d, the cheaper executable optimum on %d", c.lanesOnly, c.lanesCheaper)
	}
	return fmt.Sprintf("%d workloads, %d solved exactly (%.1f ms each on average), %d feasible; planner infeasible on %d of them; "+
		"the lower bound proves %d of the %d others late; planner/optimum instant median %.3f p90 %.3f max %.3f, executable median %.3f p90 %.3f max %.3f",
		c.workloads, c.exact, 1000*c.oracleSeconds/float64(max(c.exact, 1)), c.feasible, c.plannerInfeasible,
		c.provedLate, c.exact-c.feasible,
		quantile(c.instant, 0.5), quantile(c.instant, 0.9), quantile(c.instant, 1),
		quantile(c.executable, 0.5), quantile(c.executable, 0.9), quantile(c.executable, 1)) +
		fmt.Sprintf("; with the default slack reserve (no plan on %d): instant median %.3f p90 %.3f max %.3f, executable median %.3f p90 %.3f max %.3f",
			c.reservedInfeasible, quantile(c.reservedInstant, 0.5), quantile(c.reservedInstant, 0.9), quantile(c.reservedInstant, 1),
			quantile(c.reservedExecutable, 0.5), quantile(c.reservedExecutable, 0.9), quantile(c.reservedExecutable, 1)) + lanes
}

// TestPlannerAgainstTheOptimum checks that no plan of the planner beats the
// exact optimum, a sanity check of both, and reports how far it is above.
func TestPlannerAgainstTheOptimum(t *testing.T) {
	compare := fullComparison
	if testing.Short() {
		compare = func() (comparison, error) { return compareWithOptimum(oracleWorkloads / 4) }
	}
	c, err := compare()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range c.cheaper {
		t.Error(e)
	}
	t.Log(c)
}

// TestPlannerMeetsTheOptimumGoals asserts the planner's goals on tiny
// workloads: a plan wherever one exists; instant cost within 1.10× the
// optimum at the median and 1.5× at worst; executable cost at the optimum
// at the median and within 1.05× at p90.
func TestPlannerMeetsTheOptimumGoals(t *testing.T) {
	if testing.Short() {
		t.Skip("the goals are measured on the full sample of workloads")
	}
	c, err := fullComparison()
	if err != nil {
		t.Fatal(err)
	}
	met := c.plannerInfeasible == 0 &&
		quantile(c.instant, 0.5) <= 1.10+1e-9 && quantile(c.instant, 1) <= 1.5+1e-9 &&
		quantile(c.executable, 0.5) <= 1.0+1e-9 && quantile(c.executable, 0.9) <= 1.05+1e-9
	if !met {
		t.Error("the goals are not met: " + c.String())
	}
	t.Log(c)
}

// BenchmarkPlannerAgainstTheOptimum records the comparison's distribution.
func BenchmarkPlannerAgainstTheOptimum(b *testing.B) {
	var c comparison
	for b.Loop() {
		var err error
		if c, err = compareWithOptimum(oracleWorkloads); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(quantile(c.instant, 0.5), "instant-median-ratio")
	b.ReportMetric(quantile(c.instant, 0.9), "instant-p90-ratio")
	b.ReportMetric(quantile(c.instant, 1), "instant-max-ratio")
	b.ReportMetric(quantile(c.executable, 0.5), "executable-median-ratio")
	b.ReportMetric(quantile(c.executable, 0.9), "executable-p90-ratio")
	b.ReportMetric(quantile(c.executable, 1), "executable-max-ratio")
	b.ReportMetric(quantile(c.reservedExecutable, 0.9), "reserved-executable-p90-ratio")
	b.ReportMetric(quantile(c.reservedExecutable, 1), "reserved-executable-max-ratio")
	b.ReportMetric(float64(c.plannerInfeasible), "planner-infeasible")
	b.ReportMetric(float64(c.provedLate), "proved-late")
	b.ReportMetric(float64(c.exact), "solved-exactly")
}
