package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/laxity-dev/laxity/internal/planner"
)

// alternatives are the plans a schedule's plan was chosen over, for their
// bills: without sharing, and one step at a time.
type alternatives struct {
	sharing    *sharing
	sideBySide *sideBySide
}

// sideBySide is the bill of a schedule that may run steps side by side,
// and of the same workload planned one step at a time, as
// spec.planning.concurrency Sequential plans it.
type sideBySide struct {
	// Lanes is how many parts of the pool the plan runs steps side by side
	// on; 0 when it runs them one at a time.
	Lanes int `json:"lanes"`
	// WithLanes is the plan's bill.
	WithLanes bill `json:"withLanes"`
	// OneAtATime is the bill of the plan one step at a time.
	OneAtATime bill `json:"oneAtATime"`
}

// planOneAtATime plans w one step at a time, for the bill of doc, w's plan
// with steps side by side allowed, without them.
func planOneAtATime(ctx context.Context, w planner.Workload, doc planner.Document) (*sideBySide, error) {
	sequential := w
	sequential.Planning.Concurrent = false
	one, err := planner.PlanContext(ctx, sequential)
	if err != nil {
		return nil, err
	}
	return &sideBySide{Lanes: doc.Chosen.Lanes, WithLanes: billOf(doc.Chosen), OneAtATime: billOf(one.Chosen)}, nil
}

// writeSideBySide prints s under a plan's table: the lanes and the bill
// with and without steps side by side.
func writeSideBySide(out io.Writer, s *sideBySide) error {
	if s == nil {
		return nil
	}
	var err error
	if s.Lanes > 1 {
		_, err = fmt.Fprintf(out, "\nSteps side by side in %d lanes: bill %.2f (executable %.2f); one step at a time %.2f (executable %.2f)%s: %.3fx\n",
			s.Lanes, s.WithLanes.Cost, s.WithLanes.ExecutableCost, s.OneAtATime.Cost, s.OneAtATime.ExecutableCost, missing(s.OneAtATime), ratio(s.WithLanes.ExecutableCost, s.OneAtATime.ExecutableCost))
	} else {
		_, err = fmt.Fprintf(out, "\nSteps one at a time: bill %.2f (executable %.2f); no plan side by side bills less with every deadline met\n",
			s.OneAtATime.Cost, s.OneAtATime.ExecutableCost)
	}
	return err
}
