//go:build !lean

package cli

import (
	"bytes"
	"fmt"
	"os"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/gantt"
	"github.com/laxity-dev/laxity/internal/planner"
)

// writeSVG draws the plan with the workload's windows into path. It runs
// before the plan is printed, so that a bad path prints nothing but the error.
func writeSVG(path string, es *laxityv1alpha1.ElasticSchedule, w planner.Workload, doc planner.Document) error {
	windows := make(map[string]gantt.Window, len(w.Queries))
	for _, q := range w.Queries {
		// A window that opened before --origin is drawn from the origin.
		windows[q.Name] = gantt.Window{Start: max(q.WindowStart, 0), End: max(q.WindowEnd, 0)}
	}
	var svg bytes.Buffer
	if err := gantt.Render(&svg, gantt.Figure{Title: "ElasticSchedule " + es.Namespace + "/" + es.Name, Plan: doc, Windows: windows}); err != nil {
		return &exitError{code: exitInvalid, err: fmt.Errorf("plan: --svg %s: drawing the plan: %w", path, err)}
	}
	if err := os.WriteFile(path, svg.Bytes(), 0o666); err != nil {
		return &exitError{code: exitInvalid, err: fmt.Errorf("plan: --svg: %w", err)}
	}
	return nil
}
