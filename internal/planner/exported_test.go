package planner

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// exportedWorkloads are the plans the exported simulation API is held to:
// the TPC-H sample, whose cheapest plan never grows, and generated days
// whose plans must.
func exportedWorkloads() []Workload {
	ws := []Workload{tpchWorkload(1, 1), tpchWorkload(0.5, 1)}
	for seed := range uint64(3) {
		ws = append(ws, generatedWorkload(12, seed))
	}
	return ws
}

func TestArrivalCurveIsThePlans(t *testing.T) {
	for _, w := range exportedWorkloads() {
		d, err := Plan(w)
		if err != nil {
			t.Fatalf("%s: %v", w.Name, err)
		}
		curves := map[string]ArrivalCurve{}
		for _, q := range w.Queries {
			curves[q.Name] = NewArrivalCurve(q)
		}
		for _, s := range d.Steps {
			c := curves[s.Query]
			switch {
			case s.Kind == StepBatch && c.ReadyAt(s.ToTuple) != s.Ready:
				t.Errorf("%s: batch %+v is ready at %v by the curve", w.Name, s, c.ReadyAt(s.ToTuple))
			case s.Kind == StepFinal && s.ToTuple != c.Total():
				t.Errorf("%s: %s has %d tuples, %d by the curve", w.Name, s.Query, s.ToTuple, c.Total())
			}
		}
	}
}

func TestArrivalCurveWaitsForTheLateness(t *testing.T) {
	// 10/s for 50 s, nothing for 20 s, then 30/s until 100: 500 + 0 + 900
	// tuples, the last at 200; late tuples may come until 230.
	q := Query{WindowStart: 100, WindowEnd: 200, AllowedLateness: 30, Rates: []RateSegment{{0, 10}, {50, 0}, {70, 30}}}
	c := NewArrivalCurve(q)
	if got := c.Total(); got != 1400 {
		t.Errorf("Total = %d, want 1400", got)
	}
	for _, tc := range []struct {
		to              int64
		timeOf, readyAt float64
	}{{0, 100, 100}, {500, 150, 150}, {501, 170 + 1.0/30, 170 + 1.0/30}, {1400, 200, 230}} {
		if got := c.TimeOf(tc.to); !approxEqual(got, tc.timeOf) {
			t.Errorf("TimeOf(%d) = %v, want %v", tc.to, got, tc.timeOf)
		}
		if got := c.ReadyAt(tc.to); !approxEqual(got, tc.readyAt) {
			t.Errorf("ReadyAt(%d) = %v, want %v", tc.to, got, tc.readyAt)
		}
	}
}

// TestSimulateFixedIsTheSearchWithoutGrowth holds the fixed pool to the
// search: every step runs on the pool's nodes; a pool size and factor meet
// every deadline exactly when the search's candidate starting there is
// feasible without growing; and the chosen plan, when it never grows, is
// the fixed pool's run step for step.
func TestSimulateFixedIsTheSearchWithoutGrowth(t *testing.T) {
	compared := 0
	for _, w := range exportedWorkloads() {
		// The grid's cells are what the fixed pool is compared with; the
		// improvement phase reshapes batches beyond them.
		w.Planning.GridOnly = true
		d, err := Plan(w)
		if err != nil {
			t.Fatalf("%s: %v", w.Name, err)
		}
		for _, c := range d.Candidates {
			steps, err := SimulateFixed(w, c.InitialNodes, c.BatchSizeFactor)
			if err != nil {
				t.Fatalf("%s: %v", w.Name, err)
			}
			if met, want := deadlinesMet(w, steps), c.Feasible && c.MaxNodes == c.InitialNodes; met != want {
				t.Errorf("%s: %d nodes, %dX: deadlines met %v, the candidate %+v", w.Name, c.InitialNodes, c.BatchSizeFactor, met, c)
			}
			for _, s := range steps {
				if s.Nodes != c.InitialNodes {
					t.Fatalf("%s: step %+v of the fixed pool of %d nodes", w.Name, s, c.InitialNodes)
				}
			}
			if ch := d.Chosen; ch.Feasible && ch.MaxNodes == ch.InitialNodes && c.InitialNodes == ch.InitialNodes && c.BatchSizeFactor == ch.BatchSizeFactor {
				compared++
				if diff := cmp.Diff(d.Steps, steps); diff != "" {
					t.Errorf("%s: the chosen plan differs from its fixed pool (-plan +fixed):\n%s", w.Name, diff)
				}
			}
		}
	}
	if compared == 0 {
		t.Error("no chosen plan kept its initial size: nothing compared step for step")
	}
}

func deadlinesMet(w Workload, steps []Step) bool {
	for _, s := range steps {
		for _, q := range w.Queries {
			if s.Kind == StepFinal && s.Query == q.Name && s.End > q.Deadline+eps {
				return false
			}
		}
	}
	return true
}

func TestSimulateFixedKeepsThePlansBatches(t *testing.T) {
	// A pool that is none of the sizes runs the same batches as the
	// smallest: 1X comes from the smallest size whatever the pool holds.
	w := tpchWorkload(1, 1)
	smallest, err := SimulateFixed(w, w.Pool.Sizes[0], 2)
	if err != nil {
		t.Fatal(err)
	}
	odd, err := SimulateFixed(w, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	batches := func(steps []Step) map[string][]int64 {
		ends := map[string][]int64{}
		for _, s := range steps {
			if s.Kind == StepBatch {
				ends[s.Query] = append(ends[s.Query], s.ToTuple)
			}
		}
		return ends
	}
	if diff := cmp.Diff(batches(smallest), batches(odd)); diff != "" {
		t.Errorf("batches on 3 nodes differ from those on %d (-smallest +3):\n%s", w.Pool.Sizes[0], diff)
	}
	for _, s := range odd {
		if s.Nodes != 3 {
			t.Fatalf("step %+v of the fixed pool of 3 nodes", s)
		}
	}
}

func TestSimulateFixedRejects(t *testing.T) {
	valid := tpchWorkload(1, 1)
	empty := valid
	empty.Queries = nil
	for _, tc := range []struct {
		name          string
		w             Workload
		nodes, factor int
	}{
		{"no nodes", valid, 0, 1},
		{"no factor", valid, 2, 0},
		{"no queries", empty, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var invalid *InvalidError
			if _, err := SimulateFixed(tc.w, tc.nodes, tc.factor); !errors.As(err, &invalid) {
				t.Errorf("got %v, want an *InvalidError", err)
			}
		})
	}
}

// ExportedWorkloads and BatchSlacks let the external tests in this
// directory (slack_test.go) hold other packages to the planner's numbers.
var ExportedWorkloads = exportedWorkloads

// BatchSlacks is, for each batch of d's steps (by position; 0 for merges),
// the slack the planner's simulation gives it when it starts on its nodes:
// the query's deadline less the start less the work left from that batch.
func BatchSlacks(w Workload, d Document) ([]float64, error) {
	p, err := prepare(w)
	if err != nil {
		return nil, err
	}
	ls := make([]layout, len(w.Queries))
	for i, q := range w.Queries {
		ls[i] = layoutOf(i, q, p.arrivals[i], p.costs[i], d.BatchEnds(q.Name))
		ls[i].precompute(w.Pool.Sizes)
	}
	byName := map[string]*layout{}
	for i := range ls {
		byName[ls[i].name] = &ls[i]
	}
	sizeIndex := map[int]int{}
	for i, n := range w.Pool.Sizes {
		sizeIndex[n] = i
	}
	slacks := make([]float64, len(d.Steps))
	for i, s := range d.Steps {
		if s.Kind != StepBatch {
			continue
		}
		l := byName[s.Query]
		if s.Index >= l.batches() || l.to[s.Index] != s.ToTuple {
			return nil, fmt.Errorf("batch %d of %s is [%d, %d) in the plan, not the layout's", s.Index, s.Query, s.FromTuple, s.ToTuple)
		}
		slacks[i] = l.deadline - s.Start - l.remaining(s.Index, sizeIndex[s.Nodes])
	}
	return slacks, nil
}
