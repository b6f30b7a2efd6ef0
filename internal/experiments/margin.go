package experiments

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/learn"
	"github.com/laxity-dev/laxity/internal/offlinerun"
	"github.com/laxity-dev/laxity/internal/planner"
)

// The margin study: plan the sample with each runtime margin, then carry
// every plan out runs times on nodes with BCframework's measured slowdown.
var (
	margins = []int{0, 5, 10, 15, 20, 25, 30, 40, 50}
	// runs per margin, seeded 0..runs-1: enough that a 1% miss rate is a
	// couple of runs, few enough for a few seconds.
	runs = 200
	// acceptableMisses is the share of runs with a missed deadline the
	// recommended default may leave.
	acceptableMisses = 0.01
)

type marginRow struct {
	margin        int
	planned       planner.Chosen
	runsMissed    int
	queriesMissed int
	meanCost      float64
}

func marginStudy(base planner.Workload) ([]marginRow, error) {
	var rows []marginRow
	for _, m := range margins {
		w := base
		w.Planning.RuntimeMargin = float64(m) / 100
		doc, err := planner.Plan(w)
		if err != nil {
			return nil, err
		}
		row := marginRow{margin: m, planned: doc.Chosen}
		// A first window, as the operator runs it by default: what its
		// steps teach is applied within the window.
		learning := firstWindow(base, w.Planning.RuntimeMargin)
		results, err := eachSeed(runs, func(seed uint64) (offlinerun.Result, error) {
			return offlinerun.Run(w, &doc, offlinerun.Options{Noise: offlinerun.BCFramework, Seed: seed, Learning: learning})
		})
		if err != nil {
			return nil, err
		}
		for _, r := range results {
			if len(r.Missed) > 0 {
				row.runsMissed++
			}
			row.queriesMissed += len(r.Missed)
			row.meanCost += r.Cost / float64(runs)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// firstWindow is what the operator knows of base before its first window:
// the declared models and lead time, nothing observed; a query plans with
// the unlearned margin until what its steps teach applies.
func firstWindow(base planner.Workload, unlearned float64) *offlinerun.Learning {
	declared := make(map[string]costmodel.Model, len(base.Queries))
	for _, q := range base.Queries {
		declared[q.Name] = q.Cost
	}
	settings := learn.Defaults
	settings.Unlearned = unlearned
	return &offlinerun.Learning{Declared: declared, DeclaredLead: base.Pool.ProvisioningLeadTime, Settings: settings}
}

func margin(b *strings.Builder, base planner.Workload) ([]byte, error) {
	rows, err := marginStudy(base)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(b, `## Run-time noise: the runtime margin

Cloud nodes are not as steady as a cost model. BCframework, a
deadline-aware scheduler for streams on public clouds, evaluates itself
under a performance-degradation model of public clouds it adopts from
earlier work (it does not measure it): each period a virtual machine loses
performance drawn from a normal distribution with mean 15%% and standard
deviation 10%%. Each plan of the sample (1D, baseline rate, the default
search and bill), made with `+"`planning.runtimeMarginPercent`"+` added to
every modelled duration, is carried out %d times by `+"`internal/offlinerun`"+`:
the operator's own pass decisions (`+"`internal/pass`"+`), learning within
the window as a schedule does by default (`+"`learning: Apply`"+`), on a
simulated cluster whose every batch and merge takes its modelled time × (1 +
s), s drawn from N(15%%, 10%%) per step (seeds 0 to %d). This is a first
window: nothing was learned before it. Costs bill the pool as it was asked
for, including the nodes the operator adds when execution lags the plan or
re-plans for what the steps teach.

| Margin | Plan: nodes, factor, cost | Runs with a missed deadline | Queries missed (of %d per run) | Mean executed cost |
|---|---|---|---|---|
`, runs, runs-1, len(base.Queries))
	recommended := -1
	for _, r := range rows {
		fmt.Fprintf(b, "| %d%% | INN %d, %dX, max %d, %.2f | %.1f%% | %.2f | %.2f |\n", r.margin, r.planned.InitialNodes, r.planned.BatchSizeFactor,
			r.planned.MaxNodes, r.planned.ExecutableCost, 100*float64(r.runsMissed)/float64(runs), float64(r.queriesMissed)/float64(runs), r.meanCost)
		if recommended < 0 && r.planned.Feasible && float64(r.runsMissed)/float64(runs) <= acceptableMisses {
			recommended = r.margin
		}
	}
	var rose []string
	for i := 1; i < len(rows); i++ {
		if rows[i].runsMissed > rows[i-1].runsMissed {
			rose = append(rose, fmt.Sprintf("%d%% (INN %d, %dX) misses in more runs than %d%% (INN %d, %dX)", rows[i].margin,
				rows[i].planned.InitialNodes, rows[i].planned.BatchSizeFactor, rows[i-1].margin, rows[i-1].planned.InitialNodes, rows[i-1].planned.BatchSizeFactor))
		}
	}
	if len(rose) > 0 {
		fmt.Fprintf(b, "\nMisses do not fall at every step: each margin's plan is the cheapest for that margin, and a larger margin can make a plan with less slack at its tightest query the cheapest: %s.\n", strings.Join(rose, "; "))
	}
	b.WriteString("\n![Margin against missed deadlines and executed cost](margin.svg)\n\n")
	if recommended < 0 {
		fmt.Fprintf(b, "No margin up to %d%% keeps the share of runs with a miss at or below %.0f%%.\n", margins[len(margins)-1], 100*acceptableMisses)
	} else {
		zero := rows[0].meanCost
		var at marginRow
		for _, r := range rows {
			if r.margin == recommended {
				at = r
			}
		}
		fmt.Fprintf(b, `Recommendation: a runtime margin of %d%%, the smallest that keeps the share of
runs with a missed deadline at or below %.0f%% here, for %+.0f%% of executed cost
against no margin. Without a margin %.0f%% of runs miss a deadline: the
planner spends the slack it is given, so the model's error lands on the
deadline of the tightest query (tpch-q1, with %.1f s of planned slack)
before the window's steps have taught enough to re-plan. %s
With the field unset, a query plans with %.0f%% (learn.DefaultMargin, the
85th percentile of this noise) until it is learned; learning then replaces
it: each query's margin is sized from its own
measured steps (see "Learning across windows" below).

Two run-time rules came out of this study. First, dispatch judges slack with
the margin the plan was made with, as the planner did: with the bare model
its estimates were optimistic by the margin, and a 20%% margin missed in more
runs than 15%%. Second, dispatch does not start a step that would still be
running when a tighter query's batch becomes ready and would make it late
(dispatch.blockedBy): when steps run faster than planned the pool is free
early, and least slack first among the batches ready at that moment started
a loose query's long batch seconds before tpch-q1's last batch was ready at
its window end.
`, recommended, 100*acceptableMisses, 100*(at.meanCost-zero)/zero, 100*float64(rows[0].runsMissed)/float64(runs), tightestSlack(base),
			defaultMarginText(rows), 100*learn.DefaultMargin)
	}
	b.WriteString("\n")
	return drawMargin(rows)
}

// marginTicks labels every margin studied.
type marginTicks struct{}

func (marginTicks) Ticks(_, _ float64) []plot.Tick {
	ticks := make([]plot.Tick, len(margins))
	for i, m := range margins {
		ticks[i] = plot.Tick{Value: float64(m), Label: fmt.Sprintf("%d%%", m)}
	}
	return ticks
}

// tightestSlack is the least slack of a query in the sample's plan.
func tightestSlack(base planner.Workload) float64 {
	doc, err := planner.Plan(base)
	if err != nil || len(doc.Queries) == 0 {
		return 0
	}
	least := doc.Queries[0].Slack
	for _, q := range doc.Queries {
		least = min(least, q.Slack)
	}
	return least
}

// drawMargin plots the share of runs with a miss and the executed cost
// relative to no margin against the margin.
func drawMargin(rows []marginRow) ([]byte, error) {
	p := plot.New()
	p.Title.Text = "Runtime margin: missed deadlines and cost (13-query sample, N(15%, 10%) slowdown)"
	p.X.Label.Text = "runtimeMarginPercent"
	p.Y.Label.Text = "%"
	p.Add(plotter.NewGrid())
	misses, cost := make(plotter.XYs, len(rows)), make(plotter.XYs, len(rows))
	for i, r := range rows {
		misses[i] = plotter.XY{X: float64(r.margin), Y: 100 * float64(r.runsMissed) / float64(runs)}
		cost[i] = plotter.XY{X: float64(r.margin), Y: 100 * r.meanCost / rows[0].meanCost}
	}
	for _, series := range []struct {
		name string
		xys  plotter.XYs
		c    color.Color
	}{
		{"runs with a missed deadline (%)", misses, color.RGBA{R: 0xc0, G: 0x39, B: 0x2b, A: 0xff}},
		{"executed cost (% of no margin)", cost, color.RGBA{R: 0x1f, G: 0x5f, B: 0x9f, A: 0xff}},
	} {
		line, points, err := plotter.NewLinePoints(series.xys)
		if err != nil {
			return nil, err
		}
		line.Color, points.Color = series.c, series.c
		line.Width = vg.Points(1.5)
		points.Shape = draw.CircleGlyph{}
		p.Add(line, points)
		p.Legend.Add(series.name, line, points)
	}
	// Below the lines' upper-left corner, where they start at 100%.
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(40), vg.Points(-60)
	p.Y.Min = 0
	p.X.Tick.Marker = marginTicks{}
	canvas := vgsvg.New(7*vg.Inch, 4*vg.Inch)
	p.Draw(draw.New(canvas))
	var out bytes.Buffer
	_, err := canvas.WriteTo(&out)
	return out.Bytes(), err
}

// defaultMarginText says what the study measured at the margin a first
// window plans with by default.
func defaultMarginText(rows []marginRow) string {
	for _, r := range rows {
		if r.margin == int(math.Round(100*learn.DefaultMargin)) {
			return fmt.Sprintf("At the default, %d%%, %.1f%% of runs miss a deadline, for %.2f of executed cost (%+.0f%% against no margin): the operator otherwise buys the missing headroom late, in nodes that arrive a lead time after it asks.",
				r.margin, 100*float64(r.runsMissed)/float64(runs), r.meanCost, 100*(r.meanCost-rows[0].meanCost)/rows[0].meanCost)
		}
	}
	return ""
}
