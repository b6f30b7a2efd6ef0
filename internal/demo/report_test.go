package demo

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/laxity-dev/laxity/internal/planner"
)

var origin = time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)

func TestLevelsFrom(t *testing.T) {
	at := func(seconds float64) time.Time { return origin.Add(time.Duration(seconds * float64(time.Second))) }
	got := levelsFrom(origin, []level{
		{at(-30), 1}, // sampled before the origin: the level at 0
		{at(-2), 0},
		{at(10.2), 2},
		{at(10.7), 4}, // the same whole second: the later level stands
		{at(300.9), 0},
	})
	want := []planner.NodeLevel{{At: 0, Nodes: 0}, {At: 10, Nodes: 4}, {At: 300, Nodes: 0}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("levels (-want +got):\n%s", diff)
	}
}

func TestExecutedDocument(t *testing.T) {
	pool := planner.Pool{PricePerNodeHour: 3.6, BillingMinimum: 60}
	plan := &planner.Document{
		Chosen:                 planner.Chosen{InitialNodes: 2, BatchSizeFactor: 4},
		Candidates:             []planner.Candidate{{InitialNodes: 2, BatchSizeFactor: 4, Cost: 1, MaxNodes: 2, Feasible: true}},
		MaxSupportedRateFactor: 1.5,
	}
	batch := func(q string, start, end float64) planner.Step {
		return planner.Step{Query: q, Kind: planner.StepBatch, Start: start, End: end, Nodes: 2}
	}
	// 2 nodes from 0 to 100 s and 4 from 100 to 200 s: 2·100 + 2·200 =
	// 600 node-seconds at 0.001 per node-second.
	requested := []planner.NodeLevel{{At: 0, Nodes: 2}, {At: 100, Nodes: 4}, {At: 200, Nodes: 0}}
	ready := []planner.NodeLevel{{At: 0, Nodes: 0}, {At: 30, Nodes: 2}, {At: 130, Nodes: 4}, {At: 200, Nodes: 0}}

	t.Run("every deadline met", func(t *testing.T) {
		doc := executedDocument(origin, plan, []executedQuery{
			{name: "b", batchSize: 10, deadline: 190, steps: []planner.Step{batch("b", 50, 60)}, finish: 180, finished: true},
			{name: "a", batchSize: 20, deadline: 150, steps: []planner.Step{batch("a", 10, 20), batch("a", 30, 40)}, finish: 140, finished: true},
		}, 250, requested, ready, pool)
		if !doc.Chosen.Feasible || doc.Chosen.Failure != nil {
			t.Errorf("chosen %+v, want feasible", doc.Chosen)
		}
		if doc.Chosen.ExecutableCost != 0.6 || doc.Chosen.MaxNodes != 4 {
			t.Errorf("executable cost %v and max nodes %d, want 0.6 on the requested timeline and 4", doc.Chosen.ExecutableCost, doc.Chosen.MaxNodes)
		}
		var starts []float64
		for _, s := range doc.Steps {
			starts = append(starts, s.Start)
		}
		if diff := cmp.Diff([]float64{10, 30, 50}, starts); diff != "" {
			t.Errorf("steps not in start order (-want +got):\n%s", diff)
		}
		want := []planner.QueryPlan{
			{Name: "b", BatchSize: 10, Batches: 1, Finish: 180, Deadline: 190, Slack: 10},
			{Name: "a", BatchSize: 20, Batches: 2, Finish: 140, Deadline: 150, Slack: 10},
		}
		if diff := cmp.Diff(want, doc.Queries); diff != "" {
			t.Errorf("queries (-want +got):\n%s", diff)
		}
		if doc.MaxSupportedRateFactor != 1.5 || len(doc.Candidates) != 1 || doc.Chosen.BatchSizeFactor != 4 {
			t.Errorf("the first plan's choice was not carried over: %+v", doc)
		}
	})

	t.Run("late and unfinished queries", func(t *testing.T) {
		doc := executedDocument(origin, plan, []executedQuery{
			{name: "late", deadline: 100, finish: 130, finished: true},
			{name: "stuck", deadline: 300},
		}, 250, requested, ready, pool)
		if doc.Chosen.Feasible || doc.Chosen.Failure == nil || *doc.Chosen.Failure != (planner.Failure{Query: "late", LateSeconds: 30}) {
			t.Errorf("chosen %+v, want infeasible with late 30 s late first", doc.Chosen)
		}
		// An unfinished query finishes at the run's end: not late yet, but
		// not done either.
		if q := doc.Queries[1]; q.Finish != 250 || q.Slack != 50 {
			t.Errorf("unfinished query %+v, want finish 250", q)
		}
	})

	t.Run("no plan was made", func(t *testing.T) {
		doc := executedDocument(origin, nil, nil, 0, nil, nil, pool)
		if doc.Chosen.Cost != 0 || doc.Chosen.ExecutableCost != 0 || !doc.Chosen.Feasible {
			t.Errorf("chosen %+v, want nothing spent", doc.Chosen)
		}
	})
}
