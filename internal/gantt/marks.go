package gantt

import (
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/laxity-dev/laxity/internal/planner"
)

// Colours from Paul Tol's colour-blind safe schemes; each mark has its own,
// which is also how the tests find the marks in the SVG.
var (
	black         = color.RGBA{R: 0x22, G: 0x22, B: 0x22, A: 0xff}
	white         = color.RGBA{R: 0xff, G: 0xff, B: 0xff, A: 0xff}
	windowColor   = color.RGBA{R: 0xe8, G: 0xe8, B: 0xe8, A: 0xff}
	windowEdge    = color.RGBA{R: 0x77, G: 0x77, B: 0x77, A: 0xff}
	deadlineColor = color.RGBA{R: 0xcc, G: 0x33, B: 0x11, A: 0xff}
)

// kindStyle is how the steps of one kind look.
type kindStyle struct {
	kind       planner.StepKind
	label      string
	fill, edge color.RGBA
}

// kindStyles lists the step kinds in legend order. The darker edge keeps
// back-to-back steps apart and a step of a second or two visible.
var kindStyles = []kindStyle{
	{planner.StepBatch, "batch", color.RGBA{R: 0x44, G: 0x77, B: 0xaa, A: 0xff}, color.RGBA{R: 0x22, G: 0x3b, B: 0x55, A: 0xff}},
	{planner.StepPartial, "partial merge", color.RGBA{R: 0xcc, G: 0xbb, B: 0x44, A: 0xff}, color.RGBA{R: 0x66, G: 0x5d, B: 0x22, A: 0xff}},
	{planner.StepFinal, "final merge", color.RGBA{R: 0xaa, G: 0x33, B: 0x77, A: 0xff}, color.RGBA{R: 0x55, G: 0x19, B: 0x3b, A: 0xff}},
}

func styleOf(kind planner.StepKind) (kindStyle, bool) {
	for _, s := range kindStyles {
		if s.kind == kind {
			return s, true
		}
	}
	return kindStyle{}, false
}

var (
	plannedStyle   = draw.LineStyle{Color: black, Width: 2.5}
	requestedStyle = draw.LineStyle{Color: color.RGBA{R: 0xee, G: 0x77, B: 0x33, A: 0xff}, Width: 1.5, Dashes: []vg.Length{5, 3}}
	readyStyle     = draw.LineStyle{Color: color.RGBA{R: 0x00, G: 0x99, B: 0x88, A: 0xff}, Width: 1.5}
	windowEndStyle = draw.LineStyle{Color: windowEdge, Width: 1}
	deadlineStyle  = draw.LineStyle{Color: deadlineColor, Width: 2}
)

// Heights in rows, so that marks scale with the row: the window band shows
// above and below the bars, the deadline crosses both.
const (
	barHalfHeight      = 0.3
	windowHalfHeight   = 0.4
	deadlineHalfHeight = 0.45
	// minBarWidth keeps a step of a few seconds visible on a horizon of
	// hours.
	minBarWidth = vg.Length(1)
)

// stepBars draws every step as a bar in its query's row.
type stepBars struct {
	steps []planner.Step
	rowOf map[string]float64
}

func (b *stepBars) Plot(c draw.Canvas, p *plot.Plot) {
	x, y := p.Transforms(&c)
	for _, s := range b.steps {
		style, _ := styleOf(s.Kind)
		row := b.rowOf[s.Query]
		fillBar(&c, style, vg.Rectangle{
			Min: vg.Point{X: x(s.Start), Y: y(row - barHalfHeight)},
			Max: vg.Point{X: x(s.End), Y: y(row + barHalfHeight)},
		})
		// A shared batch runs once, in its first member's row; every other
		// member's row shows where it is served, joined to it by a line.
		for _, m := range s.Members {
			other, ok := b.rowOf[m]
			if m == s.Query || !ok {
				continue
			}
			servedBar(&c, style, vg.Rectangle{
				Min: vg.Point{X: x(s.Start), Y: y(other - barHalfHeight)},
				Max: vg.Point{X: x(s.End), Y: y(other + barHalfHeight)},
			})
			mid := (x(s.Start) + max(x(s.End), x(s.Start)+minBarWidth)) / 2
			from, to := y(row-barHalfHeight), y(other+barHalfHeight)
			if other > row {
				from, to = y(row+barHalfHeight), y(other-barHalfHeight)
			}
			c.StrokeLine2(sharedStyle, mid, from, mid, to)
		}
	}
}

// sharedStyle joins a shared batch to the rows of the members it serves.
var sharedStyle = draw.LineStyle{Color: color.RGBA{R: 0x22, G: 0x3b, B: 0x55, A: 0xff}, Width: 0.75, Dashes: []vg.Length{2, 2}}

// servedBar outlines where a shared batch serves a member: the bar's edge,
// no fill, since the work is drawn once, where it runs.
func servedBar(c *draw.Canvas, style kindStyle, r vg.Rectangle) {
	r.Max.X = max(r.Max.X, r.Min.X+minBarWidth)
	corners := []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}, r.Min}
	c.StrokeLines(draw.LineStyle{Color: style.edge, Width: 1, Dashes: []vg.Length{2, 2}}, corners)
}

func fillBar(c *draw.Canvas, style kindStyle, r vg.Rectangle) {
	r.Max.X = max(r.Max.X, r.Min.X+minBarWidth)
	corners := []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}}
	c.FillPolygon(style.fill, corners)
	c.StrokeLines(draw.LineStyle{Color: style.edge, Width: 0.5}, append(corners, r.Min))
}

// windowMarks draws each known arrival window as a band behind the query's
// bars, with a mark at either end.
type windowMarks struct {
	windows map[string]Window
	queries []planner.QueryPlan
	rowOf   map[string]float64
}

func (m *windowMarks) Plot(c draw.Canvas, p *plot.Plot) {
	x, y := p.Transforms(&c)
	for _, q := range m.queries {
		w, ok := m.windows[q.Name]
		if !ok {
			continue
		}
		row := m.rowOf[q.Name]
		drawWindow(&c, vg.Rectangle{
			Min: vg.Point{X: x(w.Start), Y: y(row - windowHalfHeight)},
			Max: vg.Point{X: x(w.End), Y: y(row + windowHalfHeight)},
		})
	}
}

func drawWindow(c *draw.Canvas, r vg.Rectangle) {
	c.FillPolygon(windowColor, []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
	c.StrokeLine2(windowEndStyle, r.Min.X, r.Min.Y, r.Min.X, r.Max.Y)
	c.StrokeLine2(windowEndStyle, r.Max.X, r.Min.Y, r.Max.X, r.Max.Y)
}

// deadlineMarks draws a line across each query's row at its deadline.
type deadlineMarks struct {
	queries []planner.QueryPlan
	rowOf   map[string]float64
}

func (m *deadlineMarks) Plot(c draw.Canvas, p *plot.Plot) {
	x, y := p.Transforms(&c)
	for _, q := range m.queries {
		row := m.rowOf[q.Name]
		c.StrokeLine2(deadlineStyle, x(q.Deadline), y(row-deadlineHalfHeight), x(q.Deadline), y(row+deadlineHalfHeight))
	}
}

// legend is one row of swatches with their labels. gonum's own legend is
// a column inside the data area, where it would cover bars.
type legend struct {
	style   text.Style
	entries []legendEntry
}

type legendEntry struct {
	label  string
	swatch func(c *draw.Canvas, r vg.Rectangle)
}

const (
	swatchWidth = vg.Length(16)
	swatchGap   = vg.Length(4)
	entryGap    = vg.Length(14)
)

// newLegend names the marks the figure shows: a partial merge, a window or
// a ready timeline only when there is one.
func newLegend(fig Figure) legend {
	l := legend{style: textStyle(9)}
	l.style.YAlign = draw.YCenter
	for _, k := range kindStyles {
		if k.kind == planner.StepPartial && !hasPartials(fig.Plan.Steps) {
			continue
		}
		l.entries = append(l.entries, legendEntry{k.label, func(c *draw.Canvas, r vg.Rectangle) {
			fillBar(c, k, shrinkY(r, 0.6))
		}})
	}
	if hasShared(fig.Plan.Steps) {
		batch, _ := styleOf(planner.StepBatch)
		l.entries = append(l.entries, legendEntry{"shared batch, where it serves", func(c *draw.Canvas, r vg.Rectangle) {
			servedBar(c, batch, shrinkY(r, 0.6))
		}})
	}
	if len(fig.Windows) > 0 {
		l.entries = append(l.entries, legendEntry{"window", func(c *draw.Canvas, r vg.Rectangle) {
			drawWindow(c, shrinkY(r, 0.8))
		}})
	}
	l.entries = append(l.entries, legendEntry{"deadline", func(c *draw.Canvas, r vg.Rectangle) {
		mid := (r.Min.X + r.Max.X) / 2
		c.StrokeLine2(deadlineStyle, mid, r.Min.Y, mid, r.Max.Y)
	}})
	for _, t := range timelines(fig) {
		l.entries = append(l.entries, legendEntry{t.label, func(c *draw.Canvas, r vg.Rectangle) {
			mid := (r.Min.Y + r.Max.Y) / 2
			c.StrokeLine2(t.style, r.Min.X, mid, r.Max.X, mid)
		}})
	}
	return l
}

func hasPartials(steps []planner.Step) bool {
	for _, s := range steps {
		if s.Kind == planner.StepPartial {
			return true
		}
	}
	return false
}

func hasShared(steps []planner.Step) bool {
	for _, s := range steps {
		if len(s.Members) > 1 {
			return true
		}
	}
	return false
}

// shrinkY keeps the middle share of a rectangle's height.
func shrinkY(r vg.Rectangle, share float64) vg.Rectangle {
	cut := (r.Max.Y - r.Min.Y) * vg.Length(1-share) / 2
	r.Min.Y += cut
	r.Max.Y -= cut
	return r
}

func (l legend) height() vg.Length {
	return l.style.FontExtents().Height
}

// draw lays the entries out left to right from topLeft.
func (l legend) draw(c draw.Canvas, topLeft vg.Point) {
	h := l.height()
	x := topLeft.X
	for _, e := range l.entries {
		e.swatch(&c, vg.Rectangle{
			Min: vg.Point{X: x, Y: topLeft.Y - h},
			Max: vg.Point{X: x + swatchWidth, Y: topLeft.Y},
		})
		x += swatchWidth + swatchGap
		c.FillText(l.style, vg.Point{X: x, Y: topLeft.Y - h/2}, e.label)
		x += l.style.Width(e.label) + entryGap
	}
}
