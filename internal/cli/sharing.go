package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/spec"
)

// sharing is what a schedule that declares streams shares, and its bill
// with and without sharing: the same workload planned with every query
// alone, as spec.planning.sharing None plans it.
type sharing struct {
	// Groups are the queries that run their batches as shared steps, one
	// entry per group, in the plan's order.
	Groups []sharedGroup `json:"groups"`
	// Shared says whether the plan shares: false when planning alone bills
	// less or sharing misses a deadline, or nothing can be shared.
	Shared bool `json:"shared"`
	// Alone is the bill of every query planned alone: its cost, executable
	// cost and whether it meets every deadline.
	Alone bill `json:"alone"`
	// WithSharing is the plan's bill.
	WithSharing bill `json:"withSharing"`
	// Notes say what is left unshared and why (a stream without a scan).
	Notes []string `json:"notes,omitempty"`
}

type sharedGroup struct {
	Stream  string   `json:"stream"`
	Members []string `json:"members"`
	// Batches is the number of shared steps the group runs.
	Batches int `json:"batches"`
}

type bill struct {
	Cost           float64 `json:"cost"`
	ExecutableCost float64 `json:"executableCost"`
	Feasible       bool    `json:"feasible"`
}

func billOf(c planner.Chosen) bill {
	return bill{Cost: c.Cost, ExecutableCost: c.ExecutableCost, Feasible: c.Feasible}
}

// planSharing plans w alone when it may share (spec.planning.sharing Auto
// with a stream of a scan model), for the bill without sharing, and says
// what doc shares, with notes (spec.WorkloadNotes); nil when the schedule
// declares no stream.
func planSharing(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, notes []string, w planner.Workload, doc planner.Document) (*sharing, error) {
	if len(es.Spec.Streams) == 0 {
		return nil, nil
	}
	s := &sharing{Groups: []sharedGroup{}, Alone: billOf(doc.Chosen), WithSharing: billOf(doc.Chosen), Notes: notes}
	if !w.Planning.Sharing {
		return s, nil
	}
	alone := w
	alone.Planning.Sharing = false
	docAlone, err := planner.PlanContext(ctx, alone)
	if err != nil {
		return nil, err
	}
	s.Alone = billOf(docAlone.Chosen)
	streamOf := map[string]string{}
	for _, q := range w.Queries {
		streamOf[q.Name] = spec.StreamOfKey(q.Stream)
	}
	for _, step := range doc.Steps {
		if len(step.Members) == 0 {
			continue
		}
		at := slices.IndexFunc(s.Groups, func(g sharedGroup) bool { return slices.Equal(g.Members, step.Members) })
		if at < 0 {
			s.Groups = append(s.Groups, sharedGroup{Stream: streamOf[step.Query], Members: step.Members})
			at = len(s.Groups) - 1
		}
		s.Groups[at].Batches++
	}
	s.Shared = len(s.Groups) > 0
	return s, nil
}

// writeSharing prints s under a plan's table: the groups and their shared
// batches, and the bill with and without sharing.
func writeSharing(out io.Writer, s *sharing) error {
	if s == nil {
		return nil
	}
	var b strings.Builder
	b.WriteString("\nSharing:\n")
	if len(s.Groups) > 0 {
		fmt.Fprintf(&b, "STREAM\tSHARED BATCHES\tMEMBERS\n")
		for _, g := range s.Groups {
			fmt.Fprintf(&b, "%s\t%d\t%s\n", g.Stream, g.Batches, strings.Join(g.Members, ", "))
		}
	}
	switch {
	case s.Shared:
		fmt.Fprintf(&b, "Bill with sharing %.2f (executable %.2f); every query alone %.2f (executable %.2f)%s: %.3fx\n",
			s.WithSharing.Cost, s.WithSharing.ExecutableCost, s.Alone.Cost, s.Alone.ExecutableCost, missing(s.Alone), ratio(s.WithSharing.ExecutableCost, s.Alone.ExecutableCost))
	default:
		fmt.Fprintf(&b, "Nothing shared: every query planned alone, bill %.2f (executable %.2f); sharing would bill no less with every deadline met, or no two queries can share\n",
			s.Alone.Cost, s.Alone.ExecutableCost)
	}
	for _, n := range s.Notes {
		fmt.Fprintf(&b, "Note: %s\n", n)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if _, err := io.WriteString(tw, b.String()); err != nil {
		return err
	}
	return tw.Flush()
}

func missing(b bill) string {
	if b.Feasible {
		return ""
	}
	return ", missing a deadline"
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
