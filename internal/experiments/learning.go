package experiments

import (
	"bytes"
	"fmt"
	"image/color"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/laxity-dev/laxity/internal/learn"
	"github.com/laxity-dev/laxity/internal/offlinerun"
	"github.com/laxity-dev/laxity/internal/planner"
)

// The learning study: consecutive windows of the sample on a cluster that
// is not as declared, learning on, runtime margin 0.
var (
	learningWindows = 10
	// learningFrom is the first window the goals hold from: window 1 runs
	// on the declared models, window 2 on one window's observations.
	learningFrom = 3
	// learningCostBound is the most a window from learningFrom on may cost
	// against the plan that knew the truth.
	learningCostBound = 1.10
)

// learnQuantile is the quantile the learned margins cover.
func learnQuantile() float64 { return learn.Defaults.Quantile }

// reality is one way the cluster departs from the declared workload.
type reality struct {
	name       string
	noise      offlinerun.Noise
	slowdown   float64
	leadFactor float64
}

var realities = []reality{
	{name: "(a) every step × (1 + N(15%, 10%))", noise: offlinerun.BCFramework, slowdown: 1, leadFactor: 1},
	{name: "(b) every step 1.4× the declared model", slowdown: 1.4, leadFactor: 1},
	{name: "(c) every step 0.6× the declared model", slowdown: 0.6, leadFactor: 1},
	{name: "(d) nodes arrive 2× the declared lead time late", slowdown: 1, leadFactor: 2},
}

// learningRow is one reality: per window, the runs with a missed deadline,
// the mean executed cost and the mean re-plans, and the cost of the plan
// that knew the truth.
type learningRow struct {
	reality reality
	known   planner.Chosen
	missed  []int
	cost    []float64
	replans []float64
	margin  []float64
	// tailMargin is the mean learned tail margin, per window.
	tailMargin []float64
	// late are the runs that missed a deadline from window learningFrom
	// on, in seed order.
	late []lateRun
}

// lateRun is why one window of one run missed a deadline: the first query
// it missed, how its tail (its last batch and final merge) was planned,
// and how the last batch ran.
type lateRun struct {
	seed   uint64
	window int
	query  string
	// over is how long after its deadline the final merge ended; slack how
	// long before it the plan's final merge ended.
	over, slack float64
	replans     int
	// plannedBatch and ranBatch are the last batch's seconds; draw its
	// duration over the true mean model's, sigmas how many standard
	// deviations of the noise that is above the mean; slowdown and margin
	// what the window planned the query with.
	plannedBatch, ranBatch, draw, sigmas float64
	slowdown, margin, tailMargin         float64
	// earliest is whether the query's deadline is the workload's earliest.
	earliest bool
}

// longTail reports whether l is one long draw of the last batch on a plan
// that did not re-plan: what the report's explanation of (a) says.
func (l lateRun) longTail() bool {
	return l.replans == 0 && l.earliest && l.sigmas >= 2.5 && l.ranBatch > l.plannedBatch
}

// explainLate is why window k (from 0) of a run seeded seed missed.
func explainLate(base planner.Workload, re reality, seed uint64, k int, w offlinerun.WindowResult) lateRun {
	out := lateRun{seed: seed, window: k + 1, query: w.Missed[0], replans: len(w.Replans)}
	qi := 0
	for i, q := range base.Queries {
		if q.Name == out.query {
			qi = i
		}
	}
	q := base.Queries[qi]
	out.margin, out.tailMargin = w.Learned[qi].Margin, w.Learned[qi].TailMargin
	last := func(steps []planner.Step, kind planner.StepKind) (planner.Step, bool) {
		var found planner.Step
		ok := false
		for _, st := range steps {
			if st.Query == q.Name && st.Kind == kind && (!ok || st.Index > found.Index) {
				found, ok = st, true
			}
		}
		return found, ok
	}
	if final, ok := last(w.Steps, planner.StepFinal); ok {
		out.over = final.End - q.Deadline
	}
	if final, ok := last(w.Plan.Steps, planner.StepFinal); ok {
		out.slack = q.Deadline - final.End
	}
	if batch, ok := last(w.Plan.Steps, planner.StepBatch); ok {
		out.plannedBatch = batch.End - batch.Start
	}
	if batch, ok := last(w.Steps, planner.StepBatch); ok {
		out.ranBatch = batch.End - batch.Start
		// The slowdown the window priced the batch with: its learned model
		// against the declared one.
		tuples := batch.ToTuple - batch.FromTuple
		out.slowdown = w.Learned[qi].Model.BatchSeconds(batch.Nodes, tuples) / q.Cost.BatchSeconds(batch.Nodes, tuples)
		mean := q.Cost.Scaled(re.slowdown).BatchSeconds(batch.Nodes, batch.ToTuple-batch.FromTuple)
		out.draw = out.ranBatch / mean
		if re.noise.StdDev > 0 {
			out.sigmas = (out.draw - 1 - re.noise.Mean) / re.noise.StdDev
		}
	}
	out.earliest = true
	for _, other := range base.Queries {
		out.earliest = out.earliest && other.Deadline >= q.Deadline
	}
	return out
}

func (r learningRow) missedShare(k int) float64 { return float64(r.missed[k]) / float64(runs) }

// mostMissed is the most runs that missed a deadline in any one window
// from learningFrom on.
func (r learningRow) mostMissed() int {
	return slices.Max(r.missed[learningFrom-1:])
}
func (r learningRow) costRatio(k int) float64 { return r.cost[k] / r.known.ExecutableCost }

// knownPlan plans the workload with the true mean model and lead time and
// no margin: the plan a planner that knew the cluster would make.
func knownPlan(base planner.Workload, re reality) (planner.Document, error) {
	w := base
	w.Queries = append([]planner.Query(nil), base.Queries...)
	for i := range w.Queries {
		w.Queries[i].Cost = w.Queries[i].Cost.Scaled(re.slowdown * (1 + re.noise.Mean))
	}
	w.Pool.ProvisioningLeadTime *= re.leadFactor
	w.Planning.RuntimeMargin = 0
	return planner.Plan(w)
}

func learningStudy(base planner.Workload) ([]learningRow, error) {
	var rows []learningRow
	for _, re := range realities {
		known, err := knownPlan(base, re)
		if err != nil {
			return nil, err
		}
		row := learningRow{reality: re, known: known.Chosen, missed: make([]int, learningWindows), cost: make([]float64, learningWindows),
			replans: make([]float64, learningWindows), margin: make([]float64, learningWindows), tailMargin: make([]float64, learningWindows)}
		results, err := eachSeed(runs, func(seed uint64) (offlinerun.RecurringResult, error) {
			r, err := offlinerun.RunRecurring(base, offlinerun.RecurringOptions{
				Windows: learningWindows, Seed: seed, Noise: re.noise, Slowdown: re.slowdown, LeadFactor: re.leadFactor,
				Learning: true,
			})
			if err != nil {
				return r, fmt.Errorf("%s, seed %d: %w", re.name, seed, err)
			}
			return r, nil
		})
		if err != nil {
			return nil, err
		}
		for seed, r := range results {
			for k, w := range r.Windows {
				if len(w.Missed) > 0 {
					row.missed[k]++
					if k >= learningFrom-1 {
						row.late = append(row.late, explainLate(base, re, uint64(seed), k, w))
					}
				}
				row.cost[k] += w.Cost / float64(runs)
				row.replans[k] += float64(len(w.Replans)) / float64(runs)
				for _, l := range w.Learned {
					row.margin[k] += l.Margin / float64(runs*len(w.Learned))
					row.tailMargin[k] += l.TailMargin / float64(runs*len(w.Learned))
				}
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// meetsGoals reports, for one reality, whether every window from
// learningFrom on missed no deadline and cost at most learningCostBound
// times the plan that knew.
func (r learningRow) meetsGoals() (missFree, withinCost bool) {
	missFree, withinCost = true, true
	for k := learningFrom - 1; k < learningWindows; k++ {
		missFree = missFree && r.missed[k] == 0
		withinCost = withinCost && r.costRatio(k) <= learningCostBound
	}
	return missFree, withinCost
}

func learning(b *strings.Builder, base planner.Workload) ([]byte, error) {
	rows, err := learningStudy(base)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(b, `## Learning across windows

This study and the runtime-margin study above run with the defaults users
get: the default search (`+"`planning.search: Improve`"+`) and bill
(`+"`Executable`"+`), learning applied.

A recurring query runs the same window again and again, so laxity can learn
from what ran: every finished batch and merge is an observation of its
query (its work, its nodes, its measured duration) and every node that
arrived one of the pool's provisioning lead time. Before each window the
operator refits each query's cost model (`+"`internal/learn`"+`: a robust,
recency-weighted fit with the declared model as its prior, see
[the design](design.md#learning)), sizes each query's margin from how far its
steps spread around the learned model, learns the lead time, and plans the
window with them. Within a window the run takes the operator's own pass
decisions (`+"`internal/pass`"+`): each query's model is corrected from its
own steps as they finish, and the plan is re-made at once when what was
learned moves its prices by more than the tolerance or, at the slowdown it
shows, the work left would make a query late even on the largest pool
(see [the design](design.md#learning-from-what-ran)).

The study runs %d consecutive windows of the sample (1D, baseline rate) %d
times (seeds 0 to %d) with learning on and `+"`runtimeMarginPercent`"+` 0 in
four realities the operator is not told. Window 1 is planned from the
declared models, as without learning. "Cost ratio" is the mean executed
cost of a window against the executable cost of the plan a planner that
knew the truth would make: the true mean model, the true lead time, no
margin. Goals: from window %d on no run misses a deadline and every window
costs at most %.2fx that plan.

| Reality | Plan that knew | Window | Runs with a missed deadline | Mean executed cost | Cost ratio | Re-plans in the window (mean) | Mean learned margin |
|---|---|---|---|---|---|---|---|
`, learningWindows, runs, runs-1, learningFrom, learningCostBound)
	for _, r := range rows {
		for k := range learningWindows {
			name, known := "", ""
			if k == 0 {
				name, known = r.reality.name, fmt.Sprintf("%.2f", r.known.ExecutableCost)
			}
			fmt.Fprintf(b, "| %s | %s | %d | %.1f%% | %.2f | %.3f | %.2f | %.1f%% |\n", name, known, k+1, 100*r.missedShare(k), r.cost[k], r.costRatio(k), r.replans[k], 100*r.margin[k])
		}
	}
	b.WriteString("\n![Learning across windows: missed deadlines and cost against the plan that knew, per window and reality](learning.svg)\n\n")
	var met, unmet []string
	for _, r := range rows {
		missFree, withinCost := r.meetsGoals()
		switch {
		case missFree && withinCost:
			met = append(met, r.reality.name[:3])
		case !missFree:
			unmet = append(unmet, fmt.Sprintf("%s misses a deadline in some run from window %d on", r.reality.name[:3], learningFrom))
		default:
			unmet = append(unmet, fmt.Sprintf("%s costs more than %.2fx the plan that knew in some window from %d on", r.reality.name[:3], learningCostBound, learningFrom))
		}
	}
	fmt.Fprintf(b, "From window %d on, the goals hold in %s", learningFrom, strings.Join(met, ", "))
	if len(unmet) > 0 {
		fmt.Fprintf(b, "; they do not hold where %s", strings.Join(unmet, "; "))
	}
	b.WriteString(".\n\n")
	noisy, pessimistic := rows[0], rows[2]
	cut := 1 - pessimistic.cost[learningFrom-1]/pessimistic.cost[0]
	noisyMissFree, _ := noisy.meetsGoals()
	verdict := fmt.Sprintf("miss none from window %d on", learningFrom)
	if !noisyMissFree {
		verdict = fmt.Sprintf("still miss a deadline in some run after window %d", learningFrom-1)
	}
	hoped := "not the 30% hoped for from steps 40% faster"
	if cut >= 0.3 {
		hoped = "as hoped for from steps 40% faster"
	}
	fmt.Fprintf(b, `Learning replaces a fixed runtime margin: under the same N(15%%, 10%%)
slowdown as the margin study above, the learned models and margins %s,
at %.2fx the cost of the plan that knew in window %d. In window 1, before
anything is learned across windows, what the window's own steps teach
re-plans it (%.1f times on average, when the plan cannot absorb it) and
%.1f%% of the runs still miss a deadline. The learned margin covers the
%.0fth percentile of each query's observed/learned ratios plus an allowance
for how few there are, not the 99th: a step inside the window that runs
long is seen and planned around. Only the tail, the last batch and final
merge after the window closes, is where a long step lands on the deadline,
so the plans keep a tail margin on top (%.1f%% on average from window %d,
%.0f standard deviations of the ratios over the margin): a plan starts a
step only when its slack also covers that share of the query's work after
the window closes.

A pessimistic model (c) is learned within one window, and saves %.0f%% of
the cost by window %d, %s: the sample's pool never goes below its smallest
size, 2 nodes, while its windows are open, and 2 nodes already meet every
deadline at the declared model, so faster steps leave those nodes idle more
often rather than release any. Where the declared model needs a larger
pool, the same learning releases nodes.

`, verdict, noisy.costRatio(learningWindows-1), learningWindows, noisy.replans[0], 100*noisy.missedShare(0), 100*learnQuantile(),
		100*noisy.tailMargin[learningFrom-1], learningFrom, learn.Defaults.TailDeviations, 100*cut, learningFrom, hoped)
	writeLate(b, noisy)
	writeLateNodes(b, rows[3], base.Pool.ProvisioningLeadTime)
	return drawLearning(rows)
}

// writeLate says why the runs of the noisy reality that missed a deadline
// from window learningFrom on missed.
func writeLate(b *strings.Builder, noisy learningRow) {
	windows := runs * (learningWindows - learningFrom + 1)
	if len(noisy.late) == 0 {
		fmt.Fprintf(b, "In (a) none of the %d runs of windows %d to %d missed a deadline.\n\n", windows, learningFrom, learningWindows)
		return
	}
	fmt.Fprintf(b, "In (a), %d of the %d runs of windows %d to %d missed a deadline, at most %d of the %d runs of any one window:\n\n", len(noisy.late), windows, learningFrom, learningWindows, noisy.mostMissed(), runs)
	all := true
	for _, l := range noisy.late {
		all = all && l.longTail()
		replanned := "no re-plan"
		if l.replans > 0 {
			replanned = fmt.Sprintf("%d re-plans", l.replans)
		}
		fmt.Fprintf(b, "- seed %d, window %d: %s's final merge ended %.1f s after its deadline, with %s. The plan gave its tail, the last batch (the rest of the window, launched when the window closed) and the final merge, %.0f s to spare, priced with its learned slowdown %.2f, margin %.1f%% and tail margin %.1f%%. The last batch drew a slowdown of %.2f, %.1f standard deviations above the mean, and took %.0f s, not the %.0f s planned.\n",
			l.seed, l.window, l.query, l.over, replanned, l.slack, l.slowdown, 100*l.margin, 100*l.tailMargin, l.draw, l.sigmas, l.ranBatch, l.plannedBatch)
	}
	if !all {
		b.WriteString("\n")
		return
	}
	l := noisy.late[0]
	fmt.Fprintf(b, `
Every such miss is one long step after the window closed, of the query
with the earliest deadline. It is not a trend: the window's earlier steps
ran as priced, so the pass, which re-plans for what the steps so far
teach, has nothing to act on, and once the window has closed no node could
come in time. The draw (%.0f%% above the learned model) is beyond what the
margin and the tail margin together cover, %.1f%% and %.1f%% on average in
that window, at %.2fx the cost of the plan that knew; covering it too
would take a tail margin of more standard deviations, which moves the
sample's plans to a larger batch-size factor at a quarter more cost.

`, 100*(l.draw/l.slowdown-1), 100*noisy.margin[l.window-1], 100*noisy.tailMargin[l.window-1], noisy.costRatio(l.window-1))
}

// writeLateNodes describes the late-nodes reality.
func writeLateNodes(b *strings.Builder, late learningRow, declaredLead float64) {
	after := 0
	for k := 1; k < learningWindows; k++ {
		after += late.missed[k]
	}
	fmt.Fprintf(b, `Late nodes (d): the operator plans a window before it starts (its windows
exist a few starts ahead) and asks for the window's first nodes the planned
lead time before its first step, so that they are ready when needed; the
offline run does the same. With a true lead time twice the declared one,
window 1's nodes come %.0f minutes late. The operator measures the lead
time as soon as its first request is met and, the plan having assumed half
of it, re-plans at once with the measured one (`+"`ModelLearned`"+`), asking
for later nodes that much earlier. Window 1 misses a deadline in %.1f%% of
the runs, at %.3fx the cost of the plan that knew; from window 2 on the plan
is made with the learned lead time from the start, and %s. Without noise
every run of (d) is the same.

`, (late.reality.leadFactor-1)*declaredLead/60, 100*late.missedShare(0), late.costRatio(0), map[bool]string{true: "no run misses a deadline", false: "some run still misses"}[after == 0])
}

// drawLearning plots, per reality, the share of runs with a missed
// deadline and the cost ratio against the window.
func drawLearning(rows []learningRow) ([]byte, error) {
	palette := []color.Color{
		color.RGBA{R: 0xc0, G: 0x39, B: 0x2b, A: 0xff}, color.RGBA{R: 0x1f, G: 0x5f, B: 0x9f, A: 0xff},
		color.RGBA{R: 0x27, G: 0x8c, B: 0x4f, A: 0xff}, color.RGBA{R: 0x8e, G: 0x44, B: 0xad, A: 0xff},
	}
	panel := func(title, ylabel string, value func(r learningRow, k int) float64) *plot.Plot {
		p := plot.New()
		p.Title.Text = title
		p.X.Label.Text = "window"
		p.Y.Label.Text = ylabel
		p.Add(plotter.NewGrid())
		for i, r := range rows {
			xys := make(plotter.XYs, learningWindows)
			for k := range learningWindows {
				xys[k] = plotter.XY{X: float64(k + 1), Y: value(r, k)}
			}
			line, points, err := plotter.NewLinePoints(xys)
			if err != nil {
				continue
			}
			c := palette[i%len(palette)]
			line.Color, points.Color = c, c
			line.Width = vg.Points(1.5)
			points.Shape = draw.CircleGlyph{}
			p.Add(line, points)
			p.Legend.Add(r.reality.name, line, points)
		}
		p.Legend.Top = true
		p.Y.Min = 0
		p.X.Min, p.X.Max = 0.5, float64(learningWindows)+0.5
		return p
	}
	missed := panel("Runs with a missed deadline (13-query sample, learning on)", "%", func(r learningRow, k int) float64 { return 100 * r.missedShare(k) })
	cost := panel("Executed cost against the plan that knew the truth", "cost ratio", func(r learningRow, k int) float64 { return r.costRatio(k) })
	cost.Y.Min = 0.8
	canvas := vgsvg.New(7*vg.Inch, 8*vg.Inch)
	dc := draw.New(canvas)
	top, bottom := dc, dc
	top.Min.Y = dc.Min.Y + dc.Size().Y/2
	bottom.Max.Y = dc.Min.Y + dc.Size().Y/2
	missed.Draw(top)
	cost.Draw(bottom)
	var out bytes.Buffer
	_, err := canvas.WriteTo(&out)
	return out.Bytes(), err
}
