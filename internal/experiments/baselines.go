package experiments

import (
	"fmt"
	"strings"

	"github.com/laxity-dev/laxity/internal/baseline"
	"github.com/laxity-dev/laxity/internal/planner"
)

// seedTable7 is the paper's fixed pools (FN:n) against its elastic plan,
// "-" where a fixed pool misses a deadline.
var seedTable7 = map[string][]string{
	"1FR:0.6D": {"-", "2.05", "5.11", "6.11", "8.13", "1.14:4"},
	"1FR:0.4D": {"-", "-", "5.10", "6.10", "8.11", "1.55:10"},
	"1FR:0.3D": {"-", "-", "-", "6.10", "8.11", "1.74:14"},
	"2FR:1D":   {"-", "2.06", "5.11", "6.11", "8.12", "1.34:4"},
	"4FR:1D":   {"-", "-", "5.13", "6.13", "8.15", "2.99:14"},
}

// compare plans v on the grid, as the published tables do, but ranked by
// the executable bill the elastic plan is billed on here, and runs the
// other approaches with its batch sizes.
func compare(base planner.Workload, v variant) ([]baseline.Result, error) {
	doc, err := planExecutable(base, v)
	if err != nil {
		return nil, err
	}
	w := v.apply(base)
	w.Planning.Objective = planner.Executable
	return baseline.Compare(w, doc)
}

func table7(b *strings.Builder, base planner.Workload) error {
	b.WriteString("## Table 7: fixed pools against the elastic plan\n\n")
	b.WriteString("Cost of a pool held at n nodes for the whole run with laxity's batch sizes (the paper's 9.5.1; `-` where a deadline is missed) and of the elastic plan (`cost:max nodes`, billed on its executable timeline). Upper row laxity, lower row the paper.\n\n")
	sizes := base.Pool.Sizes
	fmt.Fprintf(b, "| Case | Source |%s | Elastic |\n|---|---|%s---|\n", columns("FN:", sizes), strings.Repeat("---|", len(sizes)))
	cases := []struct {
		name string
		v    variant
	}{
		{"1FR:0.6D", variant{deadline: 0.6, rate: 1}},
		{"1FR:0.4D", variant{deadline: 0.4, rate: 1}},
		{"1FR:0.3D", variant{deadline: 0.3, rate: 1}},
		{"2FR:1D", variant{deadline: 1, rate: 2}},
		{"4FR:1D", variant{deadline: 1, rate: 4}},
	}
	cheaper, bothMet := 0, 0
	var elasticUnmet []string
	fixedMetWhereElasticDoesNot := false
	for _, c := range cases {
		c.v.factors, c.v.backtrack = []int{1, 2, 4, 8, 16, 32}, 1
		results, err := compare(base, c.v)
		if err != nil {
			return err
		}
		var elastic baseline.Result
		fixed := map[int]baseline.Result{}
		for _, r := range results {
			switch r.Baseline {
			case baseline.Elastic:
				elastic = r
			case baseline.Fixed:
				fixed[r.Nodes] = r
			}
		}
		var cells []string
		cheapestFixed := -1.0
		for _, n := range sizes {
			r := fixed[n]
			if !r.DeadlinesMet {
				cells = append(cells, "-")
				continue
			}
			cells = append(cells, fmt.Sprintf("%.2f", r.Cost))
			if cheapestFixed < 0 || r.Cost < cheapestFixed {
				cheapestFixed = r.Cost
			}
		}
		elasticCell := "-"
		if !elastic.DeadlinesMet {
			elasticUnmet = append(elasticUnmet, c.name)
			fixedMetWhereElasticDoesNot = fixedMetWhereElasticDoesNot || cheapestFixed >= 0
		}
		if elastic.DeadlinesMet {
			elasticCell = fmt.Sprintf("%.2f:%d", elastic.Cost, elastic.MaxNodes)
			if cheapestFixed >= 0 {
				bothMet++
				if elastic.Cost < cheapestFixed-1e-9 {
					cheaper++
				}
			}
		}
		fmt.Fprintf(b, "| %s | laxity | %s | %s |\n", c.name, strings.Join(cells, " | "), elasticCell)
		fmt.Fprintf(b, "| %s | paper | %s |\n", c.name, strings.Join(seedTable7[c.name], " | "))
	}
	agreement := fmt.Sprintf("so it is here, in all %d cases where both meet the deadlines", bothMet)
	if cheaper < bothMet {
		agreement = fmt.Sprintf("here it is strictly cheaper in %d of the %d cases where both meet the deadlines; in the others its plan never grows past the smallest pool, so it is that fixed pool and costs the same", cheaper, bothMet)
	}
	fmt.Fprintf(b, `
The paper's claim is that its elastic plan costs less than the cheapest fixed
pool that meets the deadlines in every case: %s. Small fixed pools fail as
the deadline tightens or the rate rises, as in the paper.%s

`, agreement, elasticUnmetText(elasticUnmet, fixedMetWhereElasticDoesNot))
	return nil
}

// elasticUnmetText says which cases the elastic plan misses.
func elasticUnmetText(cases []string, fixedMet bool) string {
	switch {
	case len(cases) == 0:
		return ""
	case fixedMet:
		return fmt.Sprintf(" The elastic plan misses %s, where a fixed pool meets it.", joinWords(cases))
	}
	return fmt.Sprintf(` No pool, fixed or elastic, meets %s: the start-ups of the
last batches and final merges after the window overrun a deadline (see
Table 3).`, joinWords(cases))
}

func section95(b *strings.Builder, base planner.Workload) error {
	b.WriteString("## Section 9.5: the other approaches (1FR:1D)\n\n")
	b.WriteString("Every approach simulated on the same model by `laxity plan --compare` (its legend gives each rule; `internal/baseline` documents them).\n\n")
	results, err := compare(base, variant{deadline: 1, rate: 1, factors: []int{1, 2, 4, 8, 16, 32}, backtrack: 1})
	if err != nil {
		return err
	}
	b.WriteString("| Approach | Cost | Max nodes | Deadlines |\n|---|---|---|---|\n")
	var elastic, reactive baseline.Result
	var llfMet []int
	for _, r := range results {
		met := "met"
		if !r.DeadlinesMet {
			met = fmt.Sprintf("%s %.0f s late", r.Late.Query, r.Late.LateSeconds)
		}
		fmt.Fprintf(b, "| %s | %.2f | %d | %s |\n", r.Label(), r.Cost, r.MaxNodes, met)
		switch r.Baseline {
		case baseline.Elastic:
			elastic = r
		case baseline.ReactiveAutoscaler:
			reactive = r
		case baseline.LLFNoBatching:
			if r.DeadlinesMet {
				llfMet = append(llfMet, r.Nodes)
			}
		}
	}
	fmt.Fprintf(b, `
The paper reports: LLF without batch-size determination met the 1D deadlines
only on 20 nodes (laxity: met on %s nodes), because the query with the least
laxity early on runs many small batches and uses up the pool; EMR auto
scaling acquired 10 nodes and cost 2.38 against 1.12 for the elastic plan's
2 (laxity's reactive autoscaler: %d nodes, %.2f against %.2f, %.1fx); Spark
Streaming could not finish the join queries in time and cost 12 times more
on 20 nodes for the others (laxity's micro-batch streaming: the row above).
The direction agrees throughout; the factors differ with the sample's cost
models and the autoscaler's thresholds, which the paper does not publish.

`, joinInts(llfMet), reactive.MaxNodes, reactive.Cost, elastic.Cost, reactive.Cost/elastic.Cost)
	return nil
}

func joinInts(values []int) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = fmt.Sprint(v)
	}
	if len(parts) == 0 {
		return "no"
	}
	return strings.Join(parts, ", ")
}
