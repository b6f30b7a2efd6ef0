package experiments

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/laxity-dev/laxity/internal/learn"
	"github.com/laxity-dev/laxity/internal/offlinerun"
	"github.com/laxity-dev/laxity/internal/pass"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/replan"
)

// The variable-rate study again, as users run it: the default search and
// bill, and a first window's unlearned margin, learned from within the
// window as the operator does; and streams that keep to their declared mean
// rate but arrive as a Poisson process.

// poissonRuns is how many Poisson streams the study draws (a variable for
// the claim test under the race detector, which draws fewer).
var poissonRuns = 100

// defaultVariableRates is the 2FR workload planned as users plan it, with
// what a first window learns from.
func defaultVariableRates(base planner.Workload) (planner.Workload, planner.Document, *offlinerun.Learning, error) {
	w := variant{deadline: 1, rate: 2, factors: base.Planning.BatchSizeFactors, backtrack: base.Planning.BacktrackStep}.apply(base)
	w.Planning.Objective, w.Planning.GridOnly = base.Planning.Objective, base.Planning.GridOnly
	w.Planning.RuntimeMargin = learn.DefaultMargin
	doc, err := planner.Plan(w)
	return w, doc, firstWindow(w, learn.DefaultMargin), err
}

// defaultRun is one profile run on the defaults.
func defaultRun(w planner.Workload, doc *planner.Document, learning *offlinerun.Learning, p rateProfile) (offlinerun.Result, error) {
	return offlinerun.Run(w, doc, offlinerun.Options{Actual: actualRates(w, p.changes), Replan: replanning(), Learning: learning})
}

// poissonSummary is what the Poisson runs at the declared rate did.
type poissonSummary struct {
	runs, missed, rateReplanned, churned int
	mostReplans                          int
	replans                              float64
	// reasons are every run's re-plan reasons.
	reasons []string
}

// poissonStudy runs the default plan against poissonRuns Poisson streams
// at the declared rates.
func poissonStudy(w planner.Workload, doc *planner.Document, learning *offlinerun.Learning) (poissonSummary, error) {
	results, err := eachSeed(poissonRuns, func(seed uint64) (offlinerun.Result, error) {
		return offlinerun.Run(w, doc, offlinerun.Options{Poisson: true, Seed: seed, Replan: replanning(), Learning: learning})
	})
	if err != nil {
		return poissonSummary{}, err
	}
	s := poissonSummary{runs: len(results)}
	planned := regrowths(doc.Requests)
	for _, r := range results {
		if len(r.Missed) > 0 {
			s.missed++
		}
		s.mostReplans = max(s.mostReplans, len(r.Replans))
		s.replans += float64(len(r.Replans)) / float64(len(results))
		s.reasons = append(s.reasons, r.Reasons...)
		if slices.ContainsFunc(r.Reasons, isRateReason) {
			s.rateReplanned++
		}
		if regrowths(r.Requested) > planned {
			s.churned++
		}
	}
	return s, nil
}

func isRateReason(reason string) bool {
	return reason == pass.RateExceeded || reason == pass.RateFellBack
}

// regrowths counts the times a node timeline rises again after it fell:
// a pool that shrinks and regrows.
func regrowths(levels []planner.NodeLevel) int {
	n, fell := 0, false
	for i := 1; i < len(levels); i++ {
		switch {
		case levels[i].Nodes < levels[i-1].Nodes:
			fell = true
		case levels[i].Nodes > levels[i-1].Nodes && fell:
			n++
			fell = false
		}
	}
	return n
}

// reasonsText lists re-plan reasons with how often each was given, in
// name order.
func reasonsText(reasons []string) string {
	if len(reasons) == 0 {
		return "none"
	}
	counts := map[string]int{}
	for _, reason := range reasons {
		counts[reason]++
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s %d", name, counts[name]))
	}
	return strings.Join(parts, ", ")
}

// variableDefaults writes the study on the defaults.
func variableDefaults(b *strings.Builder, base planner.Workload) error {
	w, doc, learning, err := defaultVariableRates(base)
	if err != nil {
		return err
	}
	chosen := doc.Chosen
	fmt.Fprintf(b, `### With the defaults

The same streams under the plan users get: the default search (the grid,
then the reshaping of the best cell) ranked by the executable bill, every
query planned with the margin of a first window (%.0f%%, until what its
steps teach applies, as the operator learns within a window). The 2FR plan:
INN %d, %dX, at most %d nodes, %.2f with its executable timeline; it meets
every deadline up to %.2f times its rates.

| Case | Actual rate | Max nodes | Executed cost | Re-plans | Deadlines met |
|---|---|---|---|---|---|
`, 100*learn.DefaultMargin, chosen.InitialNodes, chosen.BatchSizeFactor, chosen.MaxNodes, chosen.ExecutableCost, doc.MaxSupportedRateFactor)
	for _, p := range variableProfiles {
		r, err := defaultRun(w, &doc, learning, p)
		if err != nil {
			return err
		}
		fmt.Fprintf(b, "| %s | %s | %d | %.2f | %d (%s) | %s |\n", p.name, p.what, r.MaxNodes, r.Cost, len(r.Replans), reasonsText(r.Reasons), metText(r, len(w.Queries)))
	}
	s, err := poissonStudy(w, &doc, learning)
	if err != nil {
		return err
	}
	fmt.Fprintf(b, `
A stream that keeps to its declared mean rate still arrives unevenly. Drawn
as %d Poisson streams at 2FR (every query's arrival units as a Poisson
process at its declared rate, polled every 15 s): %d runs missed a deadline;
%.2f re-plans a run on average, at most %d (%s); %d runs re-planned for a
rate; in %d the pool shrank and grew again where the plan's own timeline
does not. A rate is judged against the plan only when it differs by more
than the measurement's noise (%d standard deviations of a Poisson count over
the rate window, and of the count since the plan was made), so a stream at
its rate moves neither the plan nor the pool.

`, s.runs, s.missed, s.replans, s.mostReplans, reasonsText(s.reasons), s.rateReplanned, s.churned, replan.NoiseSigmas)
	return nil
}
