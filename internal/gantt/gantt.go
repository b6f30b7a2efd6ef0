// Package gantt draws a plan document as one SVG figure: a Gantt row per
// query (its batches and merges, its window and its deadline) above the node
// timelines (planned, requested and, for a run, ready), on one time axis in
// seconds from the plan's origin. The same picture serves a plan and a record
// of what ran, since both are plan documents.
//
// Like the planner it is pure: no Kubernetes imports and no clock, so the
// same Figure gives the same bytes.
package gantt

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/laxity-dev/laxity/internal/planner"
)

// Window is a query's arrival window in seconds from the plan's origin.
type Window struct {
	Start, End float64
}

// Figure is what Render draws.
type Figure struct {
	// Title heads the figure; empty uses Plan.Schedule.
	Title string
	// Plan is the plan to draw, or what ran, written as a plan document.
	Plan planner.Document
	// Windows holds arrival windows by query name. A query without one is
	// drawn without window marks; the plan document itself does not carry
	// windows.
	Windows map[string]Window
	// Ready is the observed timeline of ready nodes; nil leaves it out, as
	// for a plan that has not run.
	Ready []planner.NodeLevel
}

// Render writes fig as one SVG document to w. It returns an error naming the
// offending field when a time is negative or not a number, a step ends before
// it starts, a timeline goes back in time, or a step or window names a query
// the plan does not have.
func Render(w io.Writer, fig Figure) error {
	if err := validate(fig); err != nil {
		return err
	}
	l := newLayout(fig)
	canvas := vgsvg.New(figureWidth, l.height)
	l.draw(draw.New(canvas))
	if _, err := canvas.WriteTo(w); err != nil {
		return fmt.Errorf("writing the SVG: %w", err)
	}
	return nil
}

// titleLines says which plan the figure shows: the candidate the search
// chose and whether it meets every deadline.
func titleLines(fig Figure) (heading, chosen string) {
	c := fig.Plan.Chosen
	heading = fig.Title
	if heading == "" {
		heading = fig.Plan.Schedule
	}
	chosen = fmt.Sprintf("%s, %dX batches: cost %.2f (executable %.2f), at most %s, ",
		plural(c.InitialNodes, "initial node"), c.BatchSizeFactor, c.Cost, c.ExecutableCost, plural(c.MaxNodes, "node"))
	switch {
	case c.Feasible:
		chosen += "meets every deadline"
	case c.Failure != nil:
		chosen += fmt.Sprintf("INFEASIBLE: %s is %.1f s late", c.Failure.Query, c.Failure.LateSeconds)
	default:
		chosen += "INFEASIBLE"
	}
	return heading, chosen
}

// timeAxisLabel names the origin so that readers can turn seconds into
// clock times.
func timeAxisLabel(origin time.Time) string {
	if origin.IsZero() {
		return "seconds from origin"
	}
	return "seconds from origin " + origin.UTC().Format(time.RFC3339)
}

// horizon is the last time the figure must show: a step's end, a deadline, a
// window's end or a timeline change, whichever is latest.
func horizon(fig Figure) float64 {
	d := fig.Plan
	end := 0.0
	for _, s := range d.Steps {
		end = math.Max(end, s.End)
	}
	for _, q := range d.Queries {
		end = math.Max(end, q.Deadline)
	}
	for _, w := range fig.Windows {
		end = math.Max(end, w.End)
	}
	for _, levels := range [][]planner.NodeLevel{d.Nodes, d.Requests, fig.Ready} {
		for _, l := range levels {
			end = math.Max(end, l.At)
		}
	}
	return end
}

func validate(fig Figure) error {
	d := fig.Plan
	rows := map[string]bool{}
	for i, q := range d.Queries {
		if rows[q.Name] {
			return fmt.Errorf("queries[%d].name: %q appears twice", i, q.Name)
		}
		rows[q.Name] = true
		if err := checkTime(fmt.Sprintf("queries[%d].deadline", i), q.Deadline); err != nil {
			return err
		}
	}
	for i, s := range d.Steps {
		field := fmt.Sprintf("steps[%d]", i)
		if !rows[s.Query] {
			return fmt.Errorf("%s.query: %q is not in queries", field, s.Query)
		}
		if _, ok := styleOf(s.Kind); !ok {
			return fmt.Errorf("%s.kind: %q is not batch, partial or final", field, s.Kind)
		}
		if err := checkTime(field+".start", s.Start); err != nil {
			return err
		}
		if err := checkTime(field+".end", s.End); err != nil {
			return err
		}
		if s.End < s.Start {
			return fmt.Errorf("%s.end: %g is before start %g", field, s.End, s.Start)
		}
		for j, m := range s.Members {
			if !rows[m] {
				return fmt.Errorf("%s.members[%d]: %q is not in queries", field, j, m)
			}
		}
	}
	// Sorted so that the first bad window reported is the same every time.
	names := make([]string, 0, len(fig.Windows))
	for name := range fig.Windows {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		w, field := fig.Windows[name], fmt.Sprintf("windows[%q]", name)
		if !rows[name] {
			return fmt.Errorf("%s: %q is not in queries", field, name)
		}
		if err := checkTime(field+".start", w.Start); err != nil {
			return err
		}
		if err := checkTime(field+".end", w.End); err != nil {
			return err
		}
		if w.End < w.Start {
			return fmt.Errorf("%s.end: %g is before start %g", field, w.End, w.Start)
		}
	}
	for _, t := range []struct {
		field  string
		levels []planner.NodeLevel
	}{{"nodes", d.Nodes}, {"requests", d.Requests}, {"ready", fig.Ready}} {
		if err := checkTimeline(t.field, t.levels); err != nil {
			return err
		}
	}
	return nil
}

func checkTimeline(field string, levels []planner.NodeLevel) error {
	for i, l := range levels {
		at := fmt.Sprintf("%s[%d].at", field, i)
		if err := checkTime(at, l.At); err != nil {
			return err
		}
		if i > 0 && l.At < levels[i-1].At {
			return fmt.Errorf("%s: %g is before the previous point's %g", at, l.At, levels[i-1].At)
		}
		if l.Nodes < 0 {
			return fmt.Errorf("%s[%d].nodes: %d is negative", field, i, l.Nodes)
		}
	}
	return nil
}

// checkTime accepts the seconds from the origin that a figure can show.
func checkTime(field string, t float64) error {
	switch {
	case math.IsNaN(t), math.IsInf(t, 0):
		return fmt.Errorf("%s: %g is not a time", field, t)
	case t < 0:
		return fmt.Errorf("%s: %g is before the origin", field, t)
	}
	return nil
}

// plural keeps the title grammatical for one node.
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
