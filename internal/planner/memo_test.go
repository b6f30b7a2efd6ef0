package planner

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Under RememberOneAtATime, planning a workload one step at a time after
// planning it side by side makes no plan one step at a time again, and the
// plans, side by side and one step at a time, are those made without it:
// every kept plan is handed out as a copy, which the searches may change
// (a re-plan while a step runs moves its plan back in place).
func TestRememberOneAtATime(t *testing.T) {
	w := goldenWorkload(t, "tpch-tpch")
	for i := range w.Queries {
		w.Queries[i].Rates = []RateSegment{{TuplesPerSecond: 4 * w.Queries[i].Rates[0].TuplesPerSecond}}
	}
	// A re-plan while a step runs: a plan one step at a time is made
	// after it ends and moved back (shiftedBack), in place.
	w.Pool.Now = &PoolNow{Ready: 4, Requested: 4, MoreBy: w.Pool.ProvisioningLeadTime, Held: []HeldStep{{Query: w.Queries[0].Name, Nodes: 2, FreeAt: 900}}}
	w.Planning.Concurrent = true
	alone := w
	alone.Planning.Concurrent = false
	wantSide, err := PlanContext(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	wantOne, err := PlanContext(context.Background(), alone)
	if err != nil {
		t.Fatal(err)
	}
	if wantSide.Chosen.Lanes < 2 {
		t.Fatalf("the sample at 4x plans in %d lanes; the test wants a plan side by side", wantSide.Chosen.Lanes)
	}

	ctx := RememberOneAtATime(context.Background())
	kept := ctx.Value(oneAtATimeKey{}).(*oneAtATimePlans)
	side, err := PlanContext(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	made := len(kept.plans)
	if made == 0 {
		t.Fatal("planning side by side kept no plan one step at a time")
	}
	one, err := PlanContext(ctx, alone)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept.plans) != made {
		t.Errorf("planning one step at a time made %d plans again, want none", len(kept.plans)-made)
	}
	if diff := cmp.Diff(wantSide, side); diff != "" {
		t.Errorf("side by side, kept (-without +with):\n%s", diff)
	}
	if diff := cmp.Diff(wantOne, one); diff != "" {
		t.Errorf("one step at a time, kept (-without +with):\n%s", diff)
	}
	// Planned again under the same context, nothing changed what was kept.
	again, err := PlanContext(ctx, alone)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantOne, again); diff != "" {
		t.Errorf("one step at a time, a second time (-without +with):\n%s", diff)
	}
}
