package planner_test

import (
	"math"
	"testing"
	"time"

	"github.com/laxity-dev/laxity/internal/dispatch"
	"github.com/laxity-dev/laxity/internal/planner"
)

// TestDispatchSlackIsThePlans replays every plan of the exported workloads
// step by step and checks that, before each batch, dispatch's slack for the
// query — given the plan's batches and merges so far as its progress —
// equals the slack the planner's simulation chose the batch with. Dispatch
// orders the ready queries by that slack, so a difference would run them in
// another order than planned.
func TestDispatchSlackIsThePlans(t *testing.T) {
	var workloads []planner.Workload
	for _, w := range planner.ExportedWorkloads() {
		// Each also with partial aggregation, whose merges the slack counts.
		partial := w
		partial.Name += "-partial"
		partial.Queries = append([]planner.Query(nil), w.Queries...)
		for i := range partial.Queries {
			partial.Queries[i].PartialEvery = []float64{0, 0.25, 0.5}[i%3]
		}
		workloads = append(workloads, w, partial)
	}
	for _, w := range workloads {
		d, err := planner.Plan(w)
		if err != nil {
			t.Fatalf("%s: %v", w.Name, err)
		}
		want, err := planner.BatchSlacks(w, d)
		if err != nil {
			t.Fatalf("%s: %v", w.Name, err)
		}
		queries := map[string]*dispatch.Query{}
		for _, q := range w.Queries {
			dq := &dispatch.Query{
				Name:          q.Name,
				Deadline:      d.Origin.Add(secs(q.Deadline)),
				Closed:        d.Origin.Add(secs(q.WindowEnd + q.AllowedLateness)),
				Cost:          q.Cost.Scaled(1 + w.Planning.RuntimeMargin),
				ExpectedTotal: d.PlannedTotal(q.Name),
			}
			for _, qp := range d.Queries {
				if qp.Name == q.Name {
					dq.BatchSize = qp.BatchSize
					dq.BatchEnds = d.BatchEnds(q.Name)
					if q.PartialEvery > 0 {
						// As the operator derives it from the plan.
						dq.PartialEvery = max(int(math.Ceil(q.PartialEvery*float64(qp.Batches)-1e-9)), 1)
					}
				}
			}
			queries[q.Name] = dq
		}
		checked := 0
		for i, s := range d.Steps {
			dq := queries[s.Query]
			now := d.Origin.Add(secs(s.Start))
			switch s.Kind {
			case planner.StepBatch:
				// What has arrived: the batch's tuples, and all of them
				// once the window has closed.
				dq.Arrived = s.ToTuple
				if !now.Before(dq.Closed) {
					dq.Arrived = dq.ExpectedTotal
				}
				step := dispatch.Step{Query: s.Query, Kind: planner.StepBatch, Index: s.Index, FromTuple: s.FromTuple, ToTuple: s.ToTuple}
				got := dq.Slack(now, step, s.Nodes)
				if diff := got - secs(want[i]); diff > time.Millisecond || diff < -time.Millisecond {
					t.Errorf("%s: batch %d of %s at t+%.3fs on %d nodes: dispatch's slack %v, the planner's %.6fs",
						w.Name, s.Index, s.Query, s.Start, s.Nodes, got, want[i])
				}
				checked++
				dq.Batches = append(dq.Batches, dispatch.Batch{From: s.FromTuple, To: s.ToTuple, Attempt: dispatch.Attempt{State: dispatch.Succeeded}})
			case planner.StepPartial:
				dq.Partials = append(dq.Partials, dispatch.Attempt{State: dispatch.Succeeded, Inputs: s.Inputs})
			}
		}
		if checked == 0 {
			t.Errorf("%s: no batch checked", w.Name)
		}
	}
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
