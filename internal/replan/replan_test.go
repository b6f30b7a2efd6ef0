package replan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/planner"
)

func TestRemainingPlansWhatIsLeft(t *testing.T) {
	// A window [-300s, 300s] around now declared at 100 tuples/s (60000 in
	// all), five batches of 5000 launched.
	cost := costmodel.Model{
		Batch: costmodel.Linear{Overhead: 10, Parallel: 0.004},
		Merge: costmodel.Linear{Overhead: 5, Serial: 0.1, Parallel: 0.5},
	}
	pq := planner.Query{Name: "q", WindowStart: -300, WindowEnd: 300, Deadline: 400, Granularity: 500,
		Rates: []planner.RateSegment{{TuplesPerSecond: 100}}, Cost: cost}
	done := Progress{Tuples: 25000, Batches: 5, LastFrom: 20000}
	// The final merge will also merge the five launched batches, charged
	// on the smallest pool: 5 * (0.1 + 0.5/2).
	merge := costmodel.Linear{Overhead: 5 + 5*0.35, Serial: 0.1, Parallel: 0.5}
	for _, tc := range []struct {
		name        string
		rates       []planner.RateSegment
		arrived     int64
		pessimistic bool
		want        []planner.RateSegment
	}{{
		name: "on the declared rate", arrived: 30000, pessimistic: true,
		want: []planner.RateSegment{{Offset: 0, TuplesPerSecond: 5000.0 / 300}, {Offset: 300, TuplesPerSecond: 100}},
	}, {
		name: "a later profile segment holds from its own offset", arrived: 30000, pessimistic: true,
		rates: []planner.RateSegment{{TuplesPerSecond: 100}, {Offset: 450, TuplesPerSecond: 100}},
		want:  []planner.RateSegment{{Offset: 0, TuplesPerSecond: 5000.0 / 300}, {Offset: 300, TuplesPerSecond: 100}, {Offset: 450, TuplesPerSecond: 100}},
	}, {
		name: "pessimistic, faster: the measured rate continues", arrived: 40000, pessimistic: true,
		rates: []planner.RateSegment{{TuplesPerSecond: 100}, {Offset: 300, TuplesPerSecond: 150}},
		want:  []planner.RateSegment{{Offset: 0, TuplesPerSecond: 15000.0 / 300}, {Offset: 300, TuplesPerSecond: 150}},
	}, {
		name: "pessimistic, slower: the declared total still arrives", arrived: 27000, pessimistic: true,
		want: []planner.RateSegment{{Offset: 0, TuplesPerSecond: 2000.0 / 300}, {Offset: 300, TuplesPerSecond: 110}},
	}, {
		name: "optimistic, faster: the declared total arrived early", arrived: 36000,
		want: []planner.RateSegment{{Offset: 0, TuplesPerSecond: 11000.0 / 300}, {Offset: 300, TuplesPerSecond: 80}},
	}, {
		name: "optimistic, slower: fewer in all", arrived: 27000,
		want: []planner.RateSegment{{Offset: 0, TuplesPerSecond: 2000.0 / 300}, {Offset: 300, TuplesPerSecond: 100}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			q := pq
			if tc.rates != nil {
				q.Rates = tc.rates
			}
			got, gotDone := Remaining(q, 300, tc.arrived, done, 60000, tc.pessimistic, 2)
			want := q
			want.Rates = tc.want
			want.Cost.Merge = merge
			if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("Remaining (-want +got):\n%s", diff)
			}
			if gotDone != done {
				t.Errorf("progress = %+v, want %+v", gotDone, done)
			}
		})
	}

	// The window has closed and every tuple is launched: the last batch
	// stays in the plan, so that the final merge is planned after it.
	closed := Progress{Tuples: 60000, Batches: 12, LastFrom: 55000}
	got, gotDone := Remaining(pq, 700, 60000, closed, 60000, true, 2)
	if want := (Progress{Tuples: 55000, Batches: 11, LastFrom: 55000}); gotDone != want {
		t.Errorf("progress = %+v, want %+v", gotDone, want)
	}
	if diff := cmp.Diff([]planner.RateSegment{{Offset: 0, TuplesPerSecond: 5000.0 / 600}}, got.Rates); diff != "" {
		t.Errorf("rates (-want +got):\n%s", diff)
	}
}

func TestNumberOnContinuesTheLaunchedSteps(t *testing.T) {
	doc := planner.Document{
		Queries: []planner.QueryPlan{{Name: "q", BatchSize: 4000, Batches: 2}, {Name: "other", Batches: 3}},
		Steps: []planner.Step{
			{Query: "q", Kind: planner.StepBatch, Index: 0, FromTuple: 0, ToTuple: 4000},
			{Query: "other", Kind: planner.StepBatch, Index: 0, FromTuple: 0, ToTuple: 100},
			{Query: "q", Kind: planner.StepBatch, Index: 1, FromTuple: 4000, ToTuple: 7000},
			{Query: "q", Kind: planner.StepFinal, Index: 0, FromTuple: 0, ToTuple: 7000, Inputs: 2},
		},
	}
	NumberOn(&doc, "q", Progress{Tuples: 25000, Batches: 5}, false)
	want := []planner.Step{
		{Query: "q", Kind: planner.StepBatch, Index: 5, FromTuple: 25000, ToTuple: 29000},
		{Query: "other", Kind: planner.StepBatch, Index: 0, FromTuple: 0, ToTuple: 100},
		{Query: "q", Kind: planner.StepBatch, Index: 6, FromTuple: 29000, ToTuple: 32000},
		{Query: "q", Kind: planner.StepFinal, Index: 0, FromTuple: 0, ToTuple: 32000, Inputs: 7},
	}
	if diff := cmp.Diff(want, doc.Steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if doc.Queries[0].Batches != 7 || doc.Queries[1].Batches != 3 {
		t.Errorf("batches = %d, %d, want 7, 3", doc.Queries[0].Batches, doc.Queries[1].Batches)
	}
}

func TestNodesNowKeepsRequestsWithinTheLeadTime(t *testing.T) {
	w := planner.Workload{Pool: planner.Pool{ProvisioningLeadTime: 120}}
	for _, tc := range []struct {
		name             string
		ready, requested int
		requestedBy      float64
		want             planner.PoolNow
	}{
		{"ready", 2, 2, 0, planner.PoolNow{Ready: 2, Requested: 2, MoreBy: 120}},
		{"coming", 2, 4, 50, planner.PoolNow{Ready: 2, Requested: 4, RequestedBy: 50, MoreBy: 120}},
		{"overdue", 2, 4, -30, planner.PoolNow{Ready: 2, Requested: 4, MoreBy: 120}},
		{"expected after new ones", 2, 4, 500, planner.PoolNow{Ready: 2, Requested: 4, RequestedBy: 120, MoreBy: 120}},
		{"fewer requested than ready", 4, 2, 0, planner.PoolNow{Ready: 4, Requested: 4, MoreBy: 120}},
	} {
		if got := NodesNow(w, tc.ready, tc.requested, tc.requestedBy); !cmp.Equal(got, tc.want) {
			t.Errorf("%s: NodesNow = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
