package controllers

import (
	"testing"
	"time"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/planner"
)

// A candidate that misses a deadline is not priced by the search: the
// status shows no cost and no node count for it, where a 0 would read as
// the cheapest plan; a feasible one keeps both.
func TestInfeasibleCandidatesCarryNoCost(t *testing.T) {
	doc := &planner.Document{
		Origin: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Chosen: planner.Chosen{InitialNodes: 2, BatchSizeFactor: 2, Cost: 0.7, ExecutableCost: 0.75, MaxNodes: 4, Feasible: true},
		Candidates: []planner.Candidate{
			{InitialNodes: 2, BatchSizeFactor: 2, Cost: 0.7, MaxNodes: 4, Feasible: true},
			{InitialNodes: 2, BatchSizeFactor: 32, Feasible: false},
		},
	}
	var es laxityv1alpha1.ElasticSchedule
	writePlanStatus(&es, doc, doc.Origin)
	got := es.Status.Candidates
	if len(got) != 2 {
		t.Fatalf("%d candidates in the status, want 2", len(got))
	}
	if got[0].Cost != "0.7" || got[0].MaxNodes != 4 || !got[0].Feasible {
		t.Errorf("feasible candidate %+v, want cost 0.7 on at most 4 nodes", got[0])
	}
	if got[1].Cost != "" || got[1].MaxNodes != 0 || got[1].Feasible {
		t.Errorf("infeasible candidate %+v, want neither cost nor nodes", got[1])
	}
}

func TestSharingMessage(t *testing.T) {
	tests := []struct {
		name  string
		steps []planner.Step
		notes []string
		want  string
	}{
		{"nothing shared, nothing to say", []planner.Step{{Query: "a", Kind: planner.StepBatch}}, nil, ""},
		{"shared batches", []planner.Step{
			{Query: "a", Kind: planner.StepBatch, Members: []string{"a", "b"}},
			{Query: "a", Kind: planner.StepBatch, Index: 1, Members: []string{"a", "b"}},
			{Query: "a", Kind: planner.StepFinal}, {Query: "b", Kind: planner.StepFinal},
		}, nil, "2 shared batches serve 2 queries"},
		{"a stream left unshared", nil, []string{"stream s declares no scan in spec.streams: its queries are planned alone"},
			"stream s declares no scan in spec.streams: its queries are planned alone"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := sharingMessage(&planner.Document{Steps: tc.steps}, tc.notes); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
