package experiments

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/laxity-dev/laxity/internal/learn"
	"github.com/laxity-dev/laxity/internal/offlinerun"
	"github.com/laxity-dev/laxity/internal/pass"
	"github.com/laxity-dev/laxity/internal/planner"
)

// The overdue-nodes study: a first window of the sample under the noise of
// the margin study, whose pool turns slow halfway through: nodes asked for
// from then on take longer than the declared lead time to come. The
// operator re-plans once for nodes that are overdue (pass.NodesOverdue);
// the same runs keeping the plan in force say what that buys.
var (
	// overdueFrom is when the pool turns slow, as a share of the window.
	overdueFrom = 0.5
	// overdueFactors are the lead times of the slow pool, as multiples of
	// the declared one.
	overdueFactors = []float64{1.5, 2}
)

// overdueRow is one slow pool, run with and without re-planning for
// overdue nodes.
type overdueRow struct {
	factor float64
	// replanned and kept are the runs re-planning for overdue nodes and
	// keeping the plan in force.
	replanned, kept overdueRuns
}

// overdueRuns is what runs of one way came to.
type overdueRuns struct {
	runsMissed, queriesMissed int
	meanCost                  float64
	// replans are the re-plans of every run, overdue those for overdue
	// nodes; mostOverdue is the most of those in one run.
	replans, overdue, mostOverdue int
}

func overdueStudy(base planner.Workload) ([]overdueRow, error) {
	learning := firstWindow(base, learn.DefaultMargin)
	w := learning.Priced(base, nil, nil)
	doc, err := planner.Plan(w)
	if err != nil {
		return nil, err
	}
	from := overdueFrom * (w.Queries[0].WindowEnd - w.Queries[0].WindowStart)
	var rows []overdueRow
	for _, f := range overdueFactors {
		row := overdueRow{factor: f}
		for _, keep := range []bool{false, true} {
			results, err := eachSeed(runs, func(seed uint64) (offlinerun.Result, error) {
				return offlinerun.Run(w, &doc, offlinerun.Options{
					Noise: offlinerun.BCFramework, Seed: seed, Learning: learning, AskAhead: true,
					LateFrom: from, LateLead: time.Duration(f * w.Pool.ProvisioningLeadTime * float64(time.Second)),
					KeepPlanForOverdueNodes: keep,
				})
			})
			if err != nil {
				return nil, err
			}
			var out overdueRuns
			for _, r := range results {
				if len(r.Missed) > 0 {
					out.runsMissed++
				}
				out.queriesMissed += len(r.Missed)
				out.meanCost += r.Cost / float64(runs)
				out.replans += len(r.Reasons)
				n := 0
				for _, reason := range r.Reasons {
					if reason == pass.NodesOverdue {
						n++
					}
				}
				out.overdue += n
				out.mostOverdue = max(out.mostOverdue, n)
			}
			if keep {
				row.kept = out
			} else {
				row.replanned = out
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func overdue(b *strings.Builder, base planner.Workload) error {
	rows, err := overdueStudy(base)
	if err != nil {
		return err
	}
	minutes := overdueFrom * (base.Queries[0].WindowEnd - base.Queries[0].WindowStart) / 60
	fmt.Fprintf(b, `## Nodes that come late mid-window

A cloud short of capacity delivers nodes later than the lead time a plan
assumed. When a raise of the pool is not ready %.0f s after the plan
expected it (a lead time after the request), the operator re-plans at once
(`+"`NodesOverdue`"+`), expecting those nodes no sooner than nodes asked for now;
before, the plan in force counted on them until they came, dispatch
waited for them while that paid, and the lead time measured on their
arrival re-planned (`+"`ModelLearned`"+`). Each row runs a first window of the
sample (1D, baseline rate, the defaults) %d times under the margin
study's noise, N(15%%, 10%%) per step, on a pool whose nodes asked for from
minute %.0f on take that many times the declared %.0f-minute lead time;
the plan asks for its largest pool for the window's tail after that.
"Keeping the plan" is the same runs without re-planning for overdue
nodes.

| Lead time from minute %.0f | Re-planning for overdue nodes | Runs with a missed deadline | Queries missed (of %d per run) | Mean executed cost | Re-plans (mean) | for overdue nodes (most in a run) |
|---|---|---|---|---|---|---|
`, pass.OverdueGrace.Seconds(), runs, minutes, base.Pool.ProvisioningLeadTime/60, minutes, len(base.Queries))
	for _, r := range rows {
		for i, way := range []struct {
			name string
			runs overdueRuns
		}{{"re-plans (the operator)", r.replanned}, {"keeps the plan", r.kept}} {
			name := ""
			if i == 0 {
				name = fmt.Sprintf("%gx", r.factor)
			}
			o := way.runs
			fmt.Fprintf(b, "| %s | %s | %.1f%% | %.2f | %.2f | %.2f | %.2f (%d) |\n", name, way.name, 100*float64(o.runsMissed)/float64(runs),
				float64(o.queriesMissed)/float64(runs), o.meanCost, float64(o.replans)/float64(runs), float64(o.overdue)/float64(runs), o.mostOverdue)
		}
	}
	b.WriteString("\n")
	var said []string
	for _, r := range rows {
		said = append(said, fmt.Sprintf("at %gx the lead time, %s runs with a miss (%d against %d of %d) for %s executed cost (%.2f against %.2f)",
			r.factor, fewerOrMore(r.replanned.runsMissed, r.kept.runsMissed), r.replanned.runsMissed, r.kept.runsMissed, runs,
			lowerOrHigher(r.replanned.meanCost, r.kept.meanCost), r.replanned.meanCost, r.kept.meanCost))
	}
	most := slices.MaxFunc(rows, func(a, b overdueRow) int { return a.replanned.mostOverdue - b.replanned.mostOverdue })
	fmt.Fprintf(b, `Re-planning for overdue nodes leaves %s. It re-plans for them at most %d
time(s) in a run, never twice for the same raise: a plan made for overdue
nodes starts from them. Nothing decided once nodes are overdue brings them sooner, so
what misses is the tail those nodes were asked for; what the re-plan
changes is that the rest of the window no longer waits for them.

`, strings.Join(said, ", and "), most.replanned.mostOverdue)
	return nil
}

// fewerOrMore says how a count compares with another.
func fewerOrMore(a, b int) string {
	switch {
	case a < b:
		return "fewer"
	case a > b:
		return "more"
	}
	return "as many"
}

// lowerOrHigher says how a cost compares with another, to the cent.
func lowerOrHigher(a, b float64) string {
	switch {
	case a < b-0.005:
		return "lower"
	case a > b+0.005:
		return "higher"
	}
	return "the same"
}
