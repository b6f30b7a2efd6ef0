package planner

import (
	"slices"
	"time"
)

// StepKind says what a step of the plan runs.
type StepKind string

const (
	// StepBatch processes one batch of a query's tuples.
	StepBatch StepKind = "batch"
	// StepPartial merges the intermediate results of the batches since the
	// previous partial merge (section 6).
	StepPartial StepKind = "partial"
	// StepFinal merges the partials and the remaining intermediate results
	// into the query's answer.
	StepFinal StepKind = "final"
)

// Document is a plan: the chosen candidate, every step and the node
// timelines. Times are seconds from Origin.
type Document struct {
	// Schedule is the name of the workload (ElasticSchedule) planned; it is
	// not part of the JSON document.
	Schedule string `json:"-"`
	// Origin is t0.
	Origin time.Time `json:"origin"`
	// Chosen is the cheapest feasible candidate, or, when none is feasible,
	// the candidate that comes closest (see Failure).
	Chosen Chosen `json:"chosen"`
	// Candidates is the full initialNodes × batchSizeFactor grid, in size
	// then factor order.
	Candidates []Candidate `json:"candidates"`
	// Queries summarises each query under the chosen candidate, in input order.
	Queries []QueryPlan `json:"queries"`
	// Steps is every batch and merge of the chosen candidate in start order.
	Steps []Step `json:"steps"`
	// Nodes is the instantaneous node timeline whose cost is Chosen.Cost.
	Nodes []NodeLevel `json:"nodes"`
	// Requests is the executable timeline: increases requested
	// ProvisioningLeadTime ahead, decreases only for long idle periods.
	Requests []NodeLevel `json:"requests"`
	// MaxSupportedRateFactor is the largest factor (at 1% resolution) by which
	// every query's rate can grow while the chosen plan still meets every
	// deadline; 0 for an infeasible plan.
	MaxSupportedRateFactor float64 `json:"maxSupportedRateFactor"`
	// SearchSeconds is how long the search took. The planner cannot read a
	// clock, so the caller measures and fills it in.
	SearchSeconds float64 `json:"searchSeconds"`
}

// PlannedTotal is the window's total tuples in the plan for query: the tuple
// range of its final merge (0 when the plan does not cover it).
func (d *Document) PlannedTotal(query string) int64 {
	for _, s := range d.Steps {
		if s.Query == query && s.Kind == StepFinal {
			return s.ToTuple
		}
	}
	return 0
}

// BatchEnds is where the plan cuts query's batches: element i is the
// exclusive end tuple of batch index i, 0 for an index the plan does not
// hold (a batch launched before a re-plan); a shared batch counts for each
// of its members. Batches of a reshaped plan
// differ in size, so dispatch cuts them here rather than by the batch size.
func (d *Document) BatchEnds(query string) []int64 {
	var ends []int64
	for _, s := range d.Steps {
		if s.Query != query && !slices.Contains(s.Members, query) || s.Kind != StepBatch || s.Index < 0 {
			continue
		}
		for len(ends) <= s.Index {
			ends = append(ends, 0)
		}
		ends[s.Index] = s.ToTuple
	}
	return ends
}

// LaneOf is the lane the plan runs query's steps in (Step.Lane); 0 in a
// plan whose steps run one at a time, or that does not cover query.
func (d *Document) LaneOf(query string) int {
	for _, s := range d.Steps {
		if s.Query == query || slices.Contains(s.Members, query) {
			return s.Lane
		}
	}
	return 0
}

// LaneNodes is, by lane, the most nodes a step of that lane runs on: what
// the lane may take of the pool at run time, the rest being the other
// lanes'. Nil for a plan whose steps run one at a time.
func (d *Document) LaneNodes() []int {
	if d.Chosen.Lanes <= 1 {
		return nil
	}
	out := make([]int, d.Chosen.Lanes)
	for _, s := range d.Steps {
		if s.Lane >= 0 && s.Lane < len(out) {
			out[s.Lane] = max(out[s.Lane], s.Nodes)
		}
	}
	return out
}

// Candidate is one cell of the initialNodes × batchSizeFactor grid.
type Candidate struct {
	InitialNodes    int     `json:"initialNodes"`
	BatchSizeFactor int     `json:"batchSizeFactor"`
	Cost            float64 `json:"cost"`
	ExecutableCost  float64 `json:"executableCost"`
	MaxNodes        int     `json:"maxNodes"`
	Feasible        bool    `json:"feasible"`
}

// Chosen is the selected candidate with the cost of its executable timeline.
type Chosen struct {
	InitialNodes    int     `json:"initialNodes"`
	BatchSizeFactor int     `json:"batchSizeFactor"`
	Cost            float64 `json:"cost"`
	ExecutableCost  float64 `json:"executableCost"`
	MaxNodes        int     `json:"maxNodes"`
	Feasible        bool    `json:"feasible"`
	// Improved says the plan was reshaped beyond its grid cell (the initial
	// size and batch-size factor above): some query's batches differ in
	// size, or its batch count is not the factor's.
	Improved bool `json:"improved"`
	// Policy is the order the plan runs ready batches in, and dispatch
	// follows: the workload's, or the other one when only it meets every
	// deadline (see PlanContext).
	Policy Policy `json:"policy"`
	// Failure names the query that misses its deadline first when no
	// candidate is feasible; absent for a feasible plan.
	Failure *Failure `json:"failure,omitempty"`
	// Lanes is how many parts of the pool a concurrent plan runs steps
	// side by side on (see concurrency.go); absent when steps run one at
	// a time.
	Lanes int `json:"lanes,omitempty"`
}

// Failure says which query of an infeasible plan is late first, and by how
// much, when everything runs on the largest pool size.
type Failure struct {
	Query       string  `json:"query"`
	LateSeconds float64 `json:"lateSeconds"`
}

// QueryPlan summarises one query under the chosen candidate.
type QueryPlan struct {
	Name      string  `json:"name"`
	BatchSize int64   `json:"batchSize"`
	Batches   int     `json:"batches"`
	Finish    float64 `json:"finish"`
	Deadline  float64 `json:"deadline"`
	Slack     float64 `json:"slack"`
	// TailMargin is the query's Query.TailMargin when the plan keeps it,
	// 0 when the plan was made without (see PlanContext): dispatch judges
	// slack with what the plan kept.
	TailMargin float64 `json:"tailMargin,omitempty"`
}

// Step is one batch or merge on the pool. FromTuple and ToTuple bound the
// tuples [from, to) a batch processes, or that a merge's inputs cover. Index
// is the batch index for batches and the merge ordinal for merges (partials
// 0, 1, …; the final merge takes the next ordinal). Inputs is m for merges
// and 0 for batches. Ready is when the step could start at the earliest.
type Step struct {
	Query     string   `json:"query"`
	Kind      StepKind `json:"kind"`
	Index     int      `json:"index"`
	FromTuple int64    `json:"fromTuple"`
	ToTuple   int64    `json:"toTuple"`
	Inputs    int      `json:"inputs"`
	Ready     float64  `json:"ready"`
	Start     float64  `json:"start"`
	End       float64  `json:"end"`
	Nodes     int      `json:"nodes"`
	// Members are the queries a shared batch serves, in input order, Query
	// (the group's first) among them; absent for a step of one query. Each
	// member's tuples [FromTuple, ToTuple) are read once, by this step.
	Members []string `json:"members,omitempty"`
	// Lane is the part of the pool a concurrent plan runs the step on
	// (see concurrency.go): steps of one lane run one at a time, steps of
	// different lanes side by side, each on its own nodes. 0, and absent,
	// in a plan whose steps run one at a time.
	Lane int `json:"lane,omitempty"`
	// Ranges are, for a step of a query over several inputs, its tuples on
	// each input: every range covers the same interval of time; absent for
	// a query of one input.
	Ranges []InputRange `json:"ranges,omitempty"`
}

// NodeLevel is a point of a node timeline: from At on, the pool holds Nodes
// nodes, until the next point.
type NodeLevel struct {
	At    float64 `json:"at"`
	Nodes int     `json:"nodes"`
}
