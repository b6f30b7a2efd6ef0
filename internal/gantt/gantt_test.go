package gantt

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/laxity-dev/laxity/internal/planner"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// sample has a query with partial merges, one with batches and a final
// merge only, and one with no steps at all, plus every kind of timeline.
func sample() Figure {
	step := func(query string, kind planner.StepKind, index int, start, end float64) planner.Step {
		return planner.Step{Query: query, Kind: kind, Index: index, Ready: start, Start: start, End: end, Nodes: 2}
	}
	return Figure{
		Title: "ElasticSchedule analytics/sample",
		Plan: planner.Document{
			Schedule: "sample",
			Origin:   time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
			Chosen:   planner.Chosen{InitialNodes: 2, BatchSizeFactor: 4, Cost: 1.25, ExecutableCost: 1.5, MaxNodes: 4, Feasible: true},
			Queries: []planner.QueryPlan{
				{Name: "sessions", Batches: 3, Finish: 640, Deadline: 700},
				{Name: "revenue", Batches: 2, Finish: 560, Deadline: 900},
				{Name: "idle", Deadline: 300},
			},
			Steps: []planner.Step{
				step("sessions", planner.StepBatch, 0, 100, 150),
				step("revenue", planner.StepBatch, 0, 150, 220),
				step("sessions", planner.StepBatch, 1, 250, 300),
				step("sessions", planner.StepPartial, 0, 300, 310),
				step("revenue", planner.StepBatch, 1, 500, 550),
				step("revenue", planner.StepFinal, 0, 550, 560),
				step("sessions", planner.StepBatch, 2, 600, 630),
				step("sessions", planner.StepFinal, 1, 630, 640),
			},
			Nodes:    []planner.NodeLevel{{At: 0, Nodes: 2}, {At: 500, Nodes: 4}, {At: 640, Nodes: 0}},
			Requests: []planner.NodeLevel{{At: 0, Nodes: 2}, {At: 440, Nodes: 4}, {At: 640, Nodes: 0}},
		},
		Windows: map[string]Window{"sessions": {Start: 0, End: 600}, "revenue": {Start: 100, End: 500}},
		Ready:   []planner.NodeLevel{{At: 0, Nodes: 0}, {At: 90, Nodes: 2}, {At: 510, Nodes: 4}, {At: 660, Nodes: 0}},
	}
}

func render(t *testing.T, fig Figure) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Render(&b, fig); err != nil {
		t.Fatalf("Render: %v", err)
	}
	return b.Bytes()
}

// svgShape is what the structure tests read from an SVG: its texts in
// drawing order and how many paths it draws in each style. Coordinates and
// fonts are left out, so that moving a mark by a point changes nothing.
type svgShape struct {
	root  string
	texts []string
	paths map[string]int
}

func parseSVG(t *testing.T, svg []byte) svgShape {
	t.Helper()
	shape := svgShape{paths: map[string]int{}}
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var inText bool
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the output is not XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if shape.root == "" {
				shape.root = el.Name.Local
			}
			switch el.Name.Local {
			case "path":
				shape.paths[pathKey(el)]++
			case "text":
				inText = true
				shape.texts = append(shape.texts, "")
			}
		case xml.CharData:
			if inText {
				shape.texts[len(shape.texts)-1] += string(el)
			}
		case xml.EndElement:
			inText = false
		}
	}
	return shape
}

// pathKey names a path by what tells the marks apart: fill colour, or
// stroke colour with width and dashes.
func pathKey(el xml.StartElement) string {
	style := map[string]string{}
	for _, a := range el.Attr {
		if a.Name.Local != "style" {
			continue
		}
		for _, decl := range strings.Split(a.Value, ";") {
			if k, v, ok := strings.Cut(decl, ":"); ok {
				style[k] = v
			}
		}
	}
	if fill, ok := style["fill"]; ok && fill != "none" {
		return "fill " + fill
	}
	width := style["stroke-width"]
	if width == "" {
		width = "1" // SVG's default, which vgsvg leaves out
	}
	key := "stroke " + style["stroke"] + " width " + width
	if dashes, ok := style["stroke-dasharray"]; ok {
		key += " dashes " + dashes
	}
	return key
}

func fill(c color.Color) string { return "fill " + hex(c) }

func stroke(s draw.LineStyle) string {
	key := fmt.Sprintf("stroke %s width %g", hex(s.Color), float64(s.Width))
	if len(s.Dashes) > 0 {
		dashes := make([]string, len(s.Dashes))
		for i, d := range s.Dashes {
			dashes[i] = fmt.Sprint(float64(d))
		}
		key += " dashes " + strings.Join(dashes, ",")
	}
	return key
}

func hex(c color.Color) string {
	rgba := color.RGBAModel.Convert(c).(color.RGBA)
	return fmt.Sprintf("#%02X%02X%02X", rgba.R, rgba.G, rgba.B)
}

func TestRenderDrawsEveryStepQueryAndTimeline(t *testing.T) {
	fig := sample()
	shape := parseSVG(t, render(t, fig))
	if shape.root != "svg" {
		t.Fatalf("root element <%s>, want <svg>", shape.root)
	}

	// Each kind's colour fills one bar per step plus its legend swatch.
	for _, k := range kindStyles {
		steps := 0
		for _, s := range fig.Plan.Steps {
			if s.Kind == k.kind {
				steps++
			}
		}
		if got := shape.paths[fill(k.fill)]; got != steps+1 {
			t.Errorf("%s: %d bars, want %d steps + 1 legend swatch", k.kind, got, steps)
		}
	}
	for _, q := range fig.Plan.Queries {
		if n := count(shape.texts, q.Name); n != 1 {
			t.Errorf("query %s labels %d rows, want 1", q.Name, n)
		}
	}
	if got, want := shape.paths[stroke(deadlineStyle)], len(fig.Plan.Queries)+1; got != want {
		t.Errorf("%d deadline marks, want one per query and the legend's: %d", got, want)
	}
	if got, want := shape.paths[fill(windowColor)], len(fig.Windows)+1; got != want {
		t.Errorf("%d window bands, want one per window and the legend's: %d", got, want)
	}
	if got, want := shape.paths[stroke(windowEndStyle)], 2*(len(fig.Windows)+1); got != want {
		t.Errorf("%d window ends, want %d", got, want)
	}
	for name, style := range map[string]draw.LineStyle{"planned": plannedStyle, "requested": requestedStyle, "ready": readyStyle} {
		if got := shape.paths[stroke(style)]; got != 2 {
			t.Errorf("%s nodes: %d paths, want the step line and its legend swatch", name, got)
		}
	}
	for _, label := range []string{"batch", "partial merge", "final merge", "window", "deadline", "planned nodes", "requested nodes", "ready nodes"} {
		if n := count(shape.texts, label); n != 1 {
			t.Errorf("legend %q appears %d times, want once", label, n)
		}
	}
	for _, want := range []string{
		"ElasticSchedule analytics/sample",
		"2 initial nodes, 4X batches: cost 1.25 (executable 1.50), at most 4 nodes, meets every deadline",
		"seconds from origin 2026-12-01T00:00:00Z",
		"nodes",
	} {
		if !slices.Contains(shape.texts, want) {
			t.Errorf("no text %q in %q", want, shape.texts)
		}
	}
}

func count(texts []string, s string) int {
	n := 0
	for _, t := range texts {
		if t == s {
			n++
		}
	}
	return n
}

func TestRenderLeavesOutWhatIsNotThere(t *testing.T) {
	fig := sample()
	fig.Ready = nil
	fig.Windows = nil
	var steps []planner.Step
	for _, s := range fig.Plan.Steps {
		if s.Kind != planner.StepPartial {
			steps = append(steps, s)
		}
	}
	fig.Plan.Steps = steps
	shape := parseSVG(t, render(t, fig))
	for _, label := range []string{"partial merge", "window", "ready nodes"} {
		if slices.Contains(shape.texts, label) {
			t.Errorf("legend names %q, which the figure does not have", label)
		}
	}
	if n := shape.paths[stroke(readyStyle)]; n != 0 {
		t.Errorf("%d ready lines without a ready timeline", n)
	}
	if n := shape.paths[fill(windowColor)]; n != 0 {
		t.Errorf("%d window bands without windows", n)
	}
}

func TestRenderGolden(t *testing.T) {
	shape := parseSVG(t, render(t, sample()))
	var b strings.Builder
	fmt.Fprintln(&b, "# Texts in drawing order, then paths by style. Regenerate with: go test ./internal/gantt -update")
	for _, s := range shape.texts {
		fmt.Fprintf(&b, "text %q\n", s)
	}
	keys := make([]string, 0, len(shape.paths))
	for k := range shape.paths {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%d × %s\n", shape.paths[k], k)
	}
	golden := filepath.Join("testdata", "sample.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/gantt -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("SVG structure differs from %s (-want +got); if the change is meant, rerun with -update:\n%s", golden, diff)
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	first := render(t, sample())
	for range 3 {
		if !bytes.Equal(first, render(t, sample())) {
			t.Fatal("the same figure rendered to different bytes")
		}
	}
}

func TestRenderEdgeCases(t *testing.T) {
	infeasible := sample()
	infeasible.Plan.Chosen.Feasible = false
	infeasible.Plan.Chosen.Failure = &planner.Failure{Query: "sessions", LateSeconds: 12.5}
	tests := []struct {
		name string
		fig  Figure
		want string
	}{
		{"empty document", Figure{}, "0 initial nodes"},
		{"infeasible", infeasible, "INFEASIBLE: sessions is 12.5 s late"},
		{"only zero-step queries", Figure{Plan: planner.Document{Queries: []planner.QueryPlan{{Name: "idle", Deadline: 10}}}}, "idle"},
		{"steps at the origin", Figure{Plan: planner.Document{
			Queries: []planner.QueryPlan{{Name: "q"}},
			Steps:   []planner.Step{{Query: "q", Kind: planner.StepBatch}},
			Nodes:   []planner.NodeLevel{{At: 0, Nodes: 1}},
		}}, "q"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			shape := parseSVG(t, render(t, tc.fig))
			if !slices.ContainsFunc(shape.texts, func(s string) bool { return strings.Contains(s, tc.want) }) {
				t.Errorf("no text contains %q: %q", tc.want, shape.texts)
			}
		})
	}
}

func TestRenderRejectsBadInputNamingTheField(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name   string
		change func(*Figure)
		want   string
	}{
		{"NaN start", func(f *Figure) { f.Plan.Steps[1].Start = nan }, "steps[1].start: NaN is not a time"},
		{"negative end", func(f *Figure) { f.Plan.Steps[2].End = -1 }, "steps[2].end: -1 is before the origin"},
		{"end before start", func(f *Figure) { f.Plan.Steps[0].End = 90 }, "steps[0].end: 90 is before start 100"},
		{"unknown query", func(f *Figure) { f.Plan.Steps[3].Query = "nope" }, `steps[3].query: "nope" is not in queries`},
		{"unknown kind", func(f *Figure) { f.Plan.Steps[0].Kind = "merge" }, `steps[0].kind: "merge" is not batch, partial or final`},
		{"infinite deadline", func(f *Figure) { f.Plan.Queries[1].Deadline = inf }, "queries[1].deadline: +Inf is not a time"},
		{"negative deadline", func(f *Figure) { f.Plan.Queries[0].Deadline = -5 }, "queries[0].deadline: -5 is before the origin"},
		{"duplicate query", func(f *Figure) { f.Plan.Queries[2].Name = "sessions" }, `queries[2].name: "sessions" appears twice`},
		{"window of no query", func(f *Figure) { f.Windows["ghost"] = Window{} }, `windows["ghost"]: "ghost" is not in queries`},
		{"NaN window start", func(f *Figure) { f.Windows["revenue"] = Window{Start: nan, End: 5} }, `windows["revenue"].start: NaN is not a time`},
		{"window ends first", func(f *Figure) { f.Windows["sessions"] = Window{Start: 10, End: 5} }, `windows["sessions"].end: 5 is before start 10`},
		{"negative node time", func(f *Figure) { f.Plan.Nodes[0].At = -1 }, "nodes[0].at: -1 is before the origin"},
		{"timeline goes back", func(f *Figure) { f.Plan.Requests[2].At = 100 }, "requests[2].at: 100 is before the previous point's 440"},
		{"negative nodes", func(f *Figure) { f.Plan.Requests[1].Nodes = -2 }, "requests[1].nodes: -2 is negative"},
		{"NaN ready time", func(f *Figure) { f.Ready[3].At = nan }, "ready[3].at: NaN is not a time"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fig := sample()
			tc.change(&fig)
			var b bytes.Buffer
			err := Render(&b, fig)
			if err == nil || err.Error() != tc.want {
				t.Errorf("Render error = %v, want %q", err, tc.want)
			}
			if b.Len() != 0 {
				t.Errorf("bad input wrote %d bytes", b.Len())
			}
		})
	}
}

// TestRenderDrawsASharedBatchOnce: a batch shared by three queries is one
// filled bar, in its first member's row; each other member's row outlines
// where it is served, joined to the bar by a line; the legend says so.
func TestRenderDrawsASharedBatchOnce(t *testing.T) {
	fig := sample()
	fig.Plan.Queries = append(fig.Plan.Queries, planner.QueryPlan{Name: "orders", Batches: 1, Finish: 240, Deadline: 800})
	fig.Plan.Steps = append(fig.Plan.Steps,
		planner.Step{Query: "revenue", Kind: planner.StepBatch, Index: 2, Start: 200, End: 230, Nodes: 2, Members: []string{"revenue", "orders", "sessions"}},
		planner.Step{Query: "orders", Kind: planner.StepFinal, Start: 230, End: 240, Nodes: 2})
	shape := parseSVG(t, render(t, fig))
	batch, _ := styleOf(planner.StepBatch)
	batches := 0
	for _, s := range fig.Plan.Steps {
		if s.Kind == planner.StepBatch {
			batches++
		}
	}
	if got := shape.paths[fill(batch.fill)]; got != batches+1 {
		t.Errorf("%d filled batch bars, want %d: a shared batch is drawn once, plus the legend swatch", got, batches+1)
	}
	served := draw.LineStyle{Color: batch.edge, Width: 1, Dashes: []vg.Length{2, 2}}
	if got := shape.paths[stroke(served)]; got != 2+1 {
		t.Errorf("%d outlines where the shared batch serves, want one per other member and the legend's: 3", got)
	}
	if got := shape.paths[stroke(sharedStyle)]; got != 2 {
		t.Errorf("%d lines joining the shared batch to its members, want 2", got)
	}
	if n := count(shape.texts, "shared batch, where it serves"); n != 1 {
		t.Errorf("the legend names the shared batch %d times, want once", n)
	}

	fig.Plan.Steps[len(fig.Plan.Steps)-2].Members = []string{"revenue", "nobody"}
	err := Render(io.Discard, fig)
	if err == nil || !strings.Contains(err.Error(), `steps[8].members[1]: "nobody" is not in queries`) {
		t.Errorf("a member the plan does not have: error %v, want it named", err)
	}
}

// A plan of steps side by side groups its queries' rows by lane and names
// each row's lane; a plan one step at a time keeps the plan's order.
func TestRenderGroupsRowsByLane(t *testing.T) {
	fig := sample()
	fig.Plan.Chosen.Lanes = 2
	for i := range fig.Plan.Steps {
		if fig.Plan.Steps[i].Query == "sessions" {
			fig.Plan.Steps[i].Lane = 1
		}
	}
	queries, lanes := byLane(fig.Plan)
	var names []string
	for _, q := range queries {
		names = append(names, q.Name)
	}
	if diff := cmp.Diff([]string{"revenue", "idle", "sessions"}, names); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if lanes["sessions"] != 1 || lanes["revenue"] != 0 {
		t.Errorf("lanes %v, want sessions in lane 1 and revenue in lane 0", lanes)
	}
	shape := parseSVG(t, render(t, fig))
	for _, want := range []string{"lane 0 · revenue", "lane 1 · sessions"} {
		if count(shape.texts, want) != 1 {
			t.Errorf("the figure names row %q %d times, want once", want, count(shape.texts, want))
		}
	}
	if _, lanes := byLane(sample().Plan); lanes != nil {
		t.Errorf("a plan one step at a time has lanes %v", lanes)
	}
}
