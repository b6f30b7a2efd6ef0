package cli

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/laxity-dev/laxity/internal/baseline"
	"github.com/laxity-dev/laxity/internal/planner"
)

// writeTable prints a plan for people: the candidate grid, one column per
// initial pool size and one row per batch-size factor (cost:maxNodes per initial size and factor), the
// queries, and the node timeline with the requests that drive it.
func writeTable(out io.Writer, schedule string, d planner.Document) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	at := func(seconds float64) string {
		return fmt.Sprintf("%s\t(+%.1fs)", d.Origin.Add(time.Duration(seconds*float64(time.Second))).Format("15:04:05"), seconds)
	}
	c := d.Chosen
	fmt.Fprintf(tw, "ElasticSchedule %s, origin %s\n", schedule, d.Origin.Format(time.RFC3339))
	switch {
	case c.Feasible && c.Improved:
		fmt.Fprintf(tw, "Chosen: %d initial nodes, batches reshaped from %dX: cost %.2f (executable %.2f), at most %d nodes\n",
			c.InitialNodes, c.BatchSizeFactor, c.Cost, c.ExecutableCost, c.MaxNodes)
	case c.Feasible:
		fmt.Fprintf(tw, "Chosen: %d initial nodes, %dX batches: cost %.2f (executable %.2f), at most %d nodes\n",
			c.InitialNodes, c.BatchSizeFactor, c.Cost, c.ExecutableCost, c.MaxNodes)
	}
	if c.Feasible {
		fmt.Fprintf(tw, "Meets every deadline up to %.2f times the planned arrival rates.\n", d.MaxSupportedRateFactor)
	} else {
		fmt.Fprintf(tw, "INFEASIBLE: no candidate meets every deadline. Even with every batch on %d nodes, %s is %.1fs late.\n",
			c.InitialNodes, c.Failure.Query, c.Failure.LateSeconds)
		fmt.Fprintf(tw, "Shown: that %d-node run with %dX batches, cost %.2f.\n", c.InitialNodes, c.BatchSizeFactor, c.Cost)
	}
	fmt.Fprintf(tw, "Searched %d candidates in %.3fs.\n\n", len(d.Candidates), d.SearchSeconds)

	writeGrid(tw, d)
	fmt.Fprintln(tw)

	fmt.Fprintln(tw, "QUERY\tBATCH SIZE\tBATCHES\tFINISH\t\tDEADLINE\t\tSLACK")
	for _, q := range d.Queries {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%.1fs\n", q.Name, q.BatchSize, q.Batches, at(q.Finish), at(q.Deadline), q.Slack)
	}
	fmt.Fprintln(tw)
	writeInputs(tw, d)

	fmt.Fprintln(tw, "AT\t\tNODES\tREQUESTED")
	for _, p := range mergeTimelines(d.Nodes, d.Requests) {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", at(p.at), p.nodes, p.requested)
	}
	return tw.Flush()
}

// writeInputs lists, for each query over several inputs, every input's
// tuples and the ranges of its first and last batch; nothing when there is
// no such query.
func writeInputs(tw io.Writer, d planner.Document) {
	type span struct{ first, last planner.InputRange }
	var order []string
	spans := map[string][]span{}
	for _, s := range d.Steps {
		if s.Kind != planner.StepBatch || len(s.Ranges) == 0 {
			continue
		}
		have, seen := spans[s.Query]
		if !seen {
			order = append(order, s.Query)
			for _, r := range s.Ranges {
				have = append(have, span{first: r, last: r})
			}
		}
		for i, r := range s.Ranges {
			if i < len(have) && r.FromTuple >= have[i].last.FromTuple {
				have[i].last = r
			}
		}
		spans[s.Query] = have
	}
	if len(order) == 0 {
		return
	}
	fmt.Fprintln(tw, "Queries over several inputs: every batch covers the same interval of time on each input.")
	fmt.Fprintln(tw, "QUERY\tINPUT\tTUPLES\tFIRST BATCH\tLAST BATCH")
	for _, q := range order {
		for _, sp := range spans[q] {
			fmt.Fprintf(tw, "%s\t%s\t%d\t[%d, %d)\t[%d, %d)\n", q, sp.first.Input, sp.last.ToTuple,
				sp.first.FromTuple, sp.first.ToTuple, sp.last.FromTuple, sp.last.ToTuple)
		}
	}
	fmt.Fprintln(tw)
}

func writeGrid(tw io.Writer, d planner.Document) {
	var sizes, factors []int
	seen := map[[2]int]planner.Candidate{}
	for _, c := range d.Candidates {
		if !slices.Contains(sizes, c.InitialNodes) {
			sizes = append(sizes, c.InitialNodes)
		}
		if !slices.Contains(factors, c.BatchSizeFactor) {
			factors = append(factors, c.BatchSizeFactor)
		}
		seen[[2]int{c.InitialNodes, c.BatchSizeFactor}] = c
	}
	header := []string{"FACTOR"}
	for _, s := range sizes {
		header = append(header, fmt.Sprintf("INN:%d", s))
	}
	fmt.Fprintln(tw, "Candidates: cost:maxNodes per initial nodes (INN) and batch-size factor; * chosen, or where a reshaped plan started; - infeasible")
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, f := range factors {
		row := []string{fmt.Sprintf("%dX", f)}
		for _, s := range sizes {
			c := seen[[2]int{s, f}]
			cell := "-"
			if c.Feasible {
				cell = fmt.Sprintf("%.2f:%d", c.Cost, c.MaxNodes)
			}
			if d.Chosen.Feasible && c.InitialNodes == d.Chosen.InitialNodes && c.BatchSizeFactor == d.Chosen.BatchSizeFactor {
				cell += "*"
			}
			row = append(row, cell)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
}

type timelinePoint struct {
	at               float64
	nodes, requested int
}

// mergeTimelines lists every change of either timeline with both levels.
func mergeTimelines(nodes, requests []planner.NodeLevel) []timelinePoint {
	var times []float64
	for _, p := range nodes {
		times = append(times, p.At)
	}
	for _, p := range requests {
		times = append(times, p.At)
	}
	sort.Float64s(times)
	levelAt := func(levels []planner.NodeLevel, t float64) int {
		n := 0
		for _, p := range levels {
			if p.At > t {
				break
			}
			n = p.Nodes
		}
		return n
	}
	var out []timelinePoint
	for i, t := range times {
		if i > 0 && t == times[i-1] {
			continue
		}
		out = append(out, timelinePoint{at: t, nodes: levelAt(nodes, t), requested: levelAt(requests, t)})
	}
	return out
}

// writeComparisonTable prints laxity's plan against the baselines: one row
// per approach, then a legend with each approach's rule.
func writeComparisonTable(out io.Writer, c comparison) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "ElasticSchedule %s, origin %s: laxity's plan against the baselines: fixed pools, LLF without batch sizing, a reactive autoscaler, micro-batch streaming\n", c.schedule.Namespace+"/"+c.schedule.Name, c.origin.Format(time.RFC3339))
	fmt.Fprintln(tw, "APPROACH\tCOST\tMAX NODES\tDEADLINES MET")
	for _, r := range c.results {
		met := "yes"
		if !r.DeadlinesMet {
			met = fmt.Sprintf("no: %s %.1fs late", r.Late.Query, r.Late.LateSeconds)
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%d\t%s\n", r.Label(), r.Cost, r.MaxNodes, met)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out)
	return writeLegend(out, c)
}

// writeLegend states each approach's rule with this schedule's numbers.
func writeLegend(out io.Writer, c comparison) error {
	streamingNodes := 0
	for _, r := range c.results {
		if r.Baseline == baseline.MicroBatchStreaming {
			streamingNodes = r.Nodes
		}
	}
	seconds := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	_, err := fmt.Fprintf(out, `%s: laxity's plan, the cheapest candidate that meets every deadline
  (else the least late run on the largest size), billed on its executable
  timeline (nodes requested %v ahead).
%s N: laxity's batches (1X on the smallest size, the cheapest factor
  that meets every deadline) in LLF order on N nodes, held from the origin
  until the last step ends.
%s N: N nodes held throughout; whenever the pool is free, the
  query with the least laxity runs on all its pending arrival units as one
  batch, and its final merge of all its batches follows its last batch.
%s: laxity's batches in LLF order on a pool that starts at
  %d nodes. Every %v it asks for the next size, which arrives %v later,
  when the last interval was at least %.0f%% busy with more than %v of work
  queued; it shrinks one size once every look for %v found it less than
  %.0f%% busy with nothing queued. Nodes are billed from their request.
%s: every %v each query processes what has arrived
  since the last trigger, on the smallest size that keeps up with the peak
  rate, else the largest (here %d nodes), held throughout; its final merge
  of all its micro-batches follows its last one.
Costs bill each node per second with a minimum of %v, as the planner does.
`,
		baseline.Elastic, seconds(c.pool.ProvisioningLeadTime),
		baseline.Fixed,
		baseline.LLFNoBatching,
		baseline.ReactiveAutoscaler,
		c.pool.Sizes[0], seconds(baseline.ControlInterval), seconds(c.pool.ProvisioningLeadTime),
		100*baseline.ScaleOutUtilisation, seconds(baseline.ScaleOutBacklog),
		seconds(baseline.ScaleInCooldown), 100*baseline.ScaleInUtilisation,
		baseline.MicroBatchStreaming, seconds(baseline.TriggerInterval), streamingNodes,
		seconds(c.pool.BillingMinimum))
	return err
}
