// Package baseline simulates the alternatives laxity is compared with (the
// baselines of "Elastic Scheduling of Intermittent Query Processing in a
// Cluster Environment") on the same workload and the same model as the
// planner: the same arrivals, cost models, one step at a time on the pool,
// and the same billing (planner.Cost). Each baseline is a simulation, not a
// formula, and returns its steps and node timeline along with its cost, its
// largest pool and whether every deadline is met.
//
// It is pure like the planner: no Kubernetes imports, no clock, no
// randomness, no map iteration that reaches the output.
package baseline

import (
	"fmt"
	"math"

	"github.com/laxity-dev/laxity/internal/planner"
)

// Kind names a scheduling approach.
type Kind string

const (
	// Elastic is laxity's own plan: the chosen candidate of planner.Plan.
	Elastic Kind = "elastic"
	// Fixed is laxity's batch-size determination and
	// LLF on a pool held at one size for the whole run.
	Fixed Kind = "fixed"
	// LLFNoBatching is LLF over whatever has arrived,
	// without batch-size determination, on a pool held at one size.
	LLFNoBatching Kind = "llf-no-batching"
	// ReactiveAutoscaler is laxity's batches in LLF
	// order on a pool that an EMR-style rule grows and shrinks from what
	// it observes.
	ReactiveAutoscaler Kind = "reactive-autoscaler"
	// MicroBatchStreaming is micro-batch streaming: every trigger interval
	// each query processes what arrived since the last trigger, on a pool
	// sized for the peak rate and held for the whole run.
	MicroBatchStreaming Kind = "micro-batch-streaming"
)

// Result is one approach simulated on one workload. Steps and Timeline are
// left out of the JSON form: they are for tests and pictures, and
// `laxity plan -o json` prints the elastic plan's own.
type Result struct {
	Baseline Kind `json:"baseline"`
	// Nodes is the size of the pool a fixed-pool approach holds (Fixed,
	// LLFNoBatching, MicroBatchStreaming); 0 for the others.
	Nodes int `json:"nodes,omitempty"`
	// Cost bills Timeline with planner.Cost.
	Cost     float64 `json:"cost"`
	MaxNodes int     `json:"maxNodes"`
	// DeadlinesMet is true when every query's final merge ends by its
	// deadline; otherwise Late names the late query with the earliest
	// deadline and by how many seconds it misses it.
	DeadlinesMet bool             `json:"deadlinesMet"`
	Late         *planner.Failure `json:"late,omitempty"`
	// Steps are every batch and merge in start order, one at a time on
	// the pool.
	Steps []planner.Step `json:"-"`
	// Timeline is the billed node timeline, from the origin to the end of
	// the last step.
	Timeline []planner.NodeLevel `json:"-"`
}

// Label is the result's row name: the approach, with the pool size for
// the approaches that compare every size.
func (r Result) Label() string {
	switch r.Baseline {
	case Fixed, LLFNoBatching:
		return fmt.Sprintf("%s %d", r.Baseline, r.Nodes)
	}
	return string(r.Baseline)
}

// eps absorbs floating-point noise when comparing times, as the planner's
// does.
const eps = 1e-9

// Compare simulates every approach on w: elastic (plan, which must be
// planner.Plan(w): w is then valid), fixed and LLF without batching at
// each pool size, the reactive autoscaler and micro-batch streaming, in
// that order.
func Compare(w planner.Workload, plan planner.Document) ([]Result, error) {
	// A query over several inputs is compared as the planner plans it: one
	// stream of its inputs' arrivals together.
	w, err := planner.OneStream(w)
	if err != nil {
		return nil, err
	}
	m := modelled(w)
	curves := make([]arrivalCurve, len(m.Queries))
	for i, q := range m.Queries {
		curves[i] = newArrivalCurve(q)
	}
	results := []Result{elastic(plan)}
	for _, n := range m.Pool.Sizes {
		r, err := fixed(w, n)
		if err != nil {
			return nil, err
		}
		results = append(results, r)
	}
	for _, n := range m.Pool.Sizes {
		results = append(results, llfWithoutBatching(m, curves, n))
	}
	return append(results, reactive(m, plan), microBatch(m, curves)), nil
}

// modelled is w with each query's cost model scaled by the runtime margin,
// as the planner scales it, so that every approach runs on the durations
// the plan was made with. The baselines' own simulations take such a
// workload; the fixed pool's is the planner's, which scales w itself.
func modelled(w planner.Workload) planner.Workload {
	m := w
	m.Queries = make([]planner.Query, len(w.Queries))
	for i, q := range w.Queries {
		q.Cost, q.Margin = q.Planned(w.Planning), 0
		m.Queries[i] = q
	}
	return m
}

// elastic is laxity's chosen plan. Its cost is that of the executable
// timeline (increases requested ProvisioningLeadTime ahead): what the
// operator actually requests, billed as the reactive autoscaler's requests
// are. The plan's simulated cost, the figure the paper reports, ignores the
// lead time.
func elastic(plan planner.Document) Result {
	c := plan.Chosen
	return Result{
		Baseline: Elastic, Cost: c.ExecutableCost, MaxNodes: c.MaxNodes,
		DeadlinesMet: c.Feasible, Late: c.Failure,
		Steps: plan.Steps, Timeline: plan.Requests,
	}
}

// heldPool is the result of steps run on a pool of n nodes held from the
// origin until the last step ends.
func heldPool(w planner.Workload, kind Kind, n int, steps []planner.Step) Result {
	end := 0.0
	for _, s := range steps {
		end = math.Max(end, s.End)
	}
	timeline := []planner.NodeLevel{{At: 0, Nodes: n}, {At: end, Nodes: 0}}
	return finish(w, Result{Baseline: kind, Nodes: n, MaxNodes: n, Steps: steps, Timeline: timeline})
}

// finish fills in the cost of r's timeline and its deadline outcome from
// its steps.
func finish(w planner.Workload, r Result) Result {
	r.Cost = planner.Cost(r.Timeline, w.Pool)
	r.Late = firstLate(w.Queries, r.Steps)
	r.DeadlinesMet = r.Late == nil
	return r
}

// firstLate is, among the queries whose final merge ends after their
// deadline, the one with the earliest deadline (the planner's choice of
// the query that is late first), or nil when none is late.
func firstLate(queries []planner.Query, steps []planner.Step) *planner.Failure {
	finish := make(map[string]float64, len(queries))
	for _, s := range steps {
		if s.Kind == planner.StepFinal {
			finish[s.Query] = s.End
		}
	}
	var late *planner.Failure
	deadline := math.Inf(1)
	for _, q := range queries {
		if end := finish[q.Name]; end > q.Deadline+eps && q.Deadline < deadline {
			late, deadline = &planner.Failure{Query: q.Name, LateSeconds: end - q.Deadline}, q.Deadline
		}
	}
	return late
}
