package gantt

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/laxity-dev/laxity/internal/planner"
)

const (
	figureWidth = 11 * vg.Inch
	margin      = vg.Length(10)
	// rowHeight leaves room for a 10 pt query name per row.
	rowHeight = vg.Length(16)
	// nodesDataHeight is the height of the node timelines' data area.
	nodesDataHeight = vg.Length(130)
	panelGap        = vg.Length(8)
	legendGap       = vg.Length(6)
	// timePadding is the share of the horizon added on the right, so that
	// a deadline at the horizon is not drawn on the frame.
	timePadding = 0.02
)

// sans is Liberation Sans, which gonum measures text with; it has the
// metrics of Arial, so labels fit where either is installed.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

func textStyle(size vg.Length) text.Style {
	return text.Style{
		Color:   black,
		Font:    font.From(sans, size),
		XAlign:  draw.XLeft,
		YAlign:  draw.YBottom,
		Handler: plot.DefaultTextHandler,
	}
}

// layout is the figure taken apart into what is drawn where: title, legend,
// the Gantt panel over the node panel, and the height all of it needs.
type layout struct {
	heading, chosen  text.Style
	headingText      string
	chosenText       string
	legend           legend
	gantt, nodes     *plot.Plot
	ganttPanelHeight vg.Length
	nodesPanelHeight vg.Length
	height           vg.Length
}

func newLayout(fig Figure) layout {
	l := layout{heading: textStyle(13), chosen: textStyle(10)}
	l.headingText, l.chosenText = titleLines(fig)
	end := horizon(fig)
	if end == 0 {
		end = 1 // an empty plan still gets a time axis
	}
	xMax := end * (1 + timePadding)
	l.gantt = ganttPlot(fig, xMax)
	l.nodes = nodesPlot(fig, xMax)
	l.legend = newLegend(fig)

	rows := max(len(fig.Plan.Queries), 1)
	l.ganttPanelHeight = axesOverhead(l.gantt) + vg.Length(rows)*rowHeight
	l.nodesPanelHeight = axesOverhead(l.nodes) + nodesDataHeight
	l.height = margin + l.titleHeight() + legendGap + l.legend.height() + legendGap +
		l.ganttPanelHeight + panelGap + l.nodesPanelHeight + margin
	return l
}

func (l layout) titleHeight() vg.Length {
	h := l.chosen.Height(l.chosenText)
	if l.headingText != "" {
		h += l.heading.Height(l.headingText)
	}
	return h
}

// axesOverhead is how much height a plot's axes take from its canvas.
func axesOverhead(p *plot.Plot) vg.Length {
	const probe = 1000
	c := draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: figureWidth, Y: probe}}}
	data := p.DataCanvas(c)
	return probe - (data.Max.Y - data.Min.Y)
}

func (l layout) draw(c draw.Canvas) {
	c.SetColor(white)
	c.Fill(c.Path())
	c = draw.Crop(c, margin, -margin, margin, -margin)

	top := c.Max.Y
	if l.headingText != "" {
		top -= l.heading.Height(l.headingText)
		c.FillText(l.heading, vg.Point{X: c.Min.X, Y: top}, l.headingText)
	}
	top -= l.chosen.Height(l.chosenText)
	c.FillText(l.chosen, vg.Point{X: c.Min.X, Y: top}, l.chosenText)

	legendTop := top - legendGap
	ganttTop := legendTop - l.legend.height() - legendGap
	ganttArea := draw.Crop(c, 0, 0, ganttTop-l.ganttPanelHeight-c.Min.Y, ganttTop-c.Max.Y)
	nodesArea := draw.Crop(c, 0, 0, 0, ganttTop-l.ganttPanelHeight-panelGap-c.Max.Y)
	ganttArea, nodesArea = alignX(l.gantt, ganttArea, l.nodes, nodesArea)

	l.legend.draw(c, vg.Point{X: c.Min.X, Y: legendTop})
	l.gantt.Draw(ganttArea)
	l.nodes.Draw(nodesArea)
}

// alignX narrows two stacked plots' canvases so that their data areas span
// the same width and one time reads the same on both.
func alignX(a *plot.Plot, ac draw.Canvas, b *plot.Plot, bc draw.Canvas) (draw.Canvas, draw.Canvas) {
	ad, bd := a.DataCanvas(ac), b.DataCanvas(bc)
	left := max(ad.Min.X-ac.Min.X, bd.Min.X-bc.Min.X)
	right := max(ac.Max.X-ad.Max.X, bc.Max.X-bd.Max.X)
	ac = draw.Crop(ac, left-(ad.Min.X-ac.Min.X), -(right - (ac.Max.X - ad.Max.X)), 0, 0)
	bc = draw.Crop(bc, left-(bd.Min.X-bc.Min.X), -(right - (bc.Max.X - bd.Max.X)), 0, 0)
	return ac, bc
}

// styleAxes gives both panels the same fonts and time ticks.
func styleAxes(p *plot.Plot) {
	p.X.Tick.Marker = wholeTicks{limit: 12}
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 10)
		a.Tick.Label.Font = font.From(sans, 9)
	}
}

// ganttPlot draws one row per query, the first query on top.
func ganttPlot(fig Figure, xMax float64) *plot.Plot {
	p := plot.New()
	styleAxes(p)
	queries, lanes := byLane(fig.Plan)
	rowOf := make(map[string]float64, len(queries))
	ticks := make([]plot.Tick, len(queries))
	for i, q := range queries {
		row := float64(len(queries) - 1 - i)
		rowOf[q.Name] = row
		ticks[i] = plot.Tick{Value: row, Label: q.Name}
		if lanes != nil {
			ticks[i].Label = fmt.Sprintf("lane %d · %s", lanes[q.Name], q.Name)
		}
	}
	p.X.Min, p.X.Max = 0, xMax
	p.Y.Min, p.Y.Max = -0.5, float64(max(len(queries), 1))-0.5
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Tick.Length = 0
	p.Y.Width = 0
	p.Y.Padding = 6 // between the query names and the bars

	// The time grid goes over the windows, so that it reads across them.
	grid := plotter.NewGrid()
	grid.Horizontal.Width = 0
	p.Add(&windowMarks{windows: fig.Windows, queries: queries, rowOf: rowOf})
	p.Add(grid)
	p.Add(&stepBars{steps: fig.Plan.Steps, rowOf: rowOf})
	p.Add(&deadlineMarks{queries: queries, rowOf: rowOf})
	return p
}

// byLane is the plan's queries, grouped by the lane their steps run in
// when the plan runs steps side by side (so that a lane's steps read along
// its rows, beside the other lanes'), with each query's lane; lanes is nil
// when steps run one at a time.
func byLane(doc planner.Document) ([]planner.QueryPlan, map[string]int) {
	if doc.Chosen.Lanes < 2 {
		return doc.Queries, nil
	}
	lanes := make(map[string]int, len(doc.Queries))
	for _, s := range doc.Steps {
		if _, ok := lanes[s.Query]; !ok {
			lanes[s.Query] = s.Lane
		}
	}
	queries := slices.Clone(doc.Queries)
	slices.SortStableFunc(queries, func(a, b planner.QueryPlan) int { return cmp.Compare(lanes[a.Name], lanes[b.Name]) })
	return queries, lanes
}

// nodesPlot draws the node timelines as steps: each level holds from its
// point until the next one, and the last until the end of the axis.
func nodesPlot(fig Figure, xMax float64) *plot.Plot {
	p := plot.New()
	styleAxes(p)
	p.X.Min, p.X.Max = 0, xMax
	p.X.Label.Text = timeAxisLabel(fig.Plan.Origin)
	p.Y.Label.Text = "nodes"
	p.Y.Min = 0
	p.Y.Tick.Marker = wholeTicks{limit: 6}
	p.Add(plotter.NewGrid())

	peak := 1
	for _, t := range timelines(fig) {
		for _, l := range t.levels {
			peak = max(peak, l.Nodes)
		}
		p.Add(stepLine(t.levels, t.style, xMax))
	}
	// Headroom so that the top level is not drawn on the frame.
	p.Y.Max = math.Ceil(float64(peak) * 1.15)
	return p
}

// timeline is one node timeline with the style that tells it apart.
type timeline struct {
	label  string
	levels []planner.NodeLevel
	style  draw.LineStyle
}

// timelines lists what the node panel draws, bottom layer first: a thick
// planned line under thinner ones, so that equal levels stay visible.
func timelines(fig Figure) []timeline {
	t := []timeline{
		{"planned nodes", fig.Plan.Nodes, plannedStyle},
		{"requested nodes", fig.Plan.Requests, requestedStyle},
	}
	if fig.Ready != nil {
		t = append(t, timeline{"ready nodes", fig.Ready, readyStyle})
	}
	return t
}

func stepLine(levels []planner.NodeLevel, style draw.LineStyle, xMax float64) *plotter.Line {
	xys := make(plotter.XYs, 0, len(levels)+1)
	for _, l := range levels {
		xys = append(xys, plotter.XY{X: l.At, Y: float64(l.Nodes)})
	}
	if len(levels) > 0 {
		xys = append(xys, plotter.XY{X: xMax, Y: float64(levels[len(levels)-1].Nodes)})
	}
	return &plotter.Line{XYs: xys, StepStyle: plotter.PostStep, LineStyle: style}
}

// wholeTicks labels an axis with whole numbers, spaced 1, 2, 5, 10, 20, …
// apart, the least spacing that keeps them to about limit: gonum's default
// ticks print "2500.00" and put ticks between node counts.
type wholeTicks struct {
	limit int
}

func (t wholeTicks) Ticks(lo, hi float64) []plot.Tick {
	step := 1.0
	for i := 0; (hi-lo)/step > float64(t.limit); i++ {
		step *= [...]float64{2, 2.5, 2}[i%3]
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', 0, 64)})
	}
	return ticks
}
