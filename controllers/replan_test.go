package controllers

import (
	"testing"
	"time"

	"k8s.io/utils/ptr"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/pass"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/replan"
	"github.com/laxity-dev/laxity/internal/spec"
	"github.com/laxity-dev/laxity/test/builder"
)

func TestReplanReasonComparesWithTheAssumedRate(t *testing.T) {
	es := builder.AnalyticsSchedule()
	es.Spec.Planning.RateTolerancePercent = ptr.To[int32](2)
	queries := []laxityv1alpha1.IntermittentQuery{builder.AnalyticsQuery("q1", nil)} // declared 9500/s
	now := origin.Add(20 * time.Minute)
	inputs := inputsHash(es, queries)
	w, err := spec.Workload(es, queries, now)
	if err != nil {
		t.Fatal(err)
	}
	stored := func(factor float64, rates map[string]float64) *pass.Plan {
		return &pass.Plan{Doc: planner.Document{MaxSupportedRateFactor: factor}, Inputs: inputs, Assumed: rates}
	}
	for _, tc := range []struct {
		name     string
		stored   *pass.Plan
		measured float64
		want     string
	}{
		{"within the declared rate's factor", stored(1.5, nil), 14000, ""},
		{"above the declared rate's factor", stored(1.5, nil), 15000, ReplanRateExceeded},
		// A pessimistic re-plan assumed 30000/s; its factor is relative
		// to that, not to the declared 9500/s.
		{"within the assumed rate's factor", stored(1.1, map[string]float64{"q1": 30000}), 33000, ""},
		{"above the assumed rate's factor", stored(1.1, map[string]float64{"q1": 30000}), 34000, ReplanRateExceeded},
		{"a declared rate above the assumed one counts", stored(1.1, map[string]float64{"q1": 5000}), 10000, ""},
		// An infeasible plan has factor 0: re-planning on every pass would
		// only make it again.
		{"infeasible plan", stored(0, nil), 100000, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &pass.Snapshot{
				Now: now, Workload: w, Plan: tc.stored, Inputs: inputs,
				Queries: []pass.Query{{Name: "q1", WindowStart: queries[0].Spec.Window.Start.Time, Deadline: queries[0].Spec.Deadline.Time, Rate: tc.measured}},
				Rules:   pass.Rules{Rates: spec.RateRules(es), RateWindow: es.Spec.Planning.RateWindow.Duration},
			}
			got, err := pass.Judge(s)
			if err != nil {
				t.Fatal(err)
			}
			if got.Reason != tc.want {
				t.Errorf("the pass judged %q, want %q", got.Reason, tc.want)
			}
		})
	}
}

func TestPlannedTotalCoversTheRenumberedWindow(t *testing.T) {
	doc := planner.Document{
		Queries: []planner.QueryPlan{{Name: "q", BatchSize: 4000, Batches: 2}},
		Steps: []planner.Step{
			{Query: "q", Kind: planner.StepBatch, Index: 0, FromTuple: 0, ToTuple: 4000},
			{Query: "q", Kind: planner.StepBatch, Index: 1, FromTuple: 4000, ToTuple: 7000},
			{Query: "q", Kind: planner.StepFinal, Index: 0, FromTuple: 0, ToTuple: 7000, Inputs: 2},
		},
	}
	replan.NumberOn(&doc, "q", replan.Progress{Tuples: 25000, Batches: 5}, false)
	if got := doc.PlannedTotal("q"); got != 32000 {
		t.Errorf("PlannedTotal = %d, want the whole window's 32000", got)
	}
}
