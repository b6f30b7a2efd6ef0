// Package planner simulates a workload of intermittent queries on an elastic
// node pool and chooses the cheapest deadline-meeting plan, by the batch
// sizing and scaling search of "Elastic Scheduling of Intermittent Query
// Processing in a Cluster Environment". It is pure: no Kubernetes imports, no
// clock, no randomness, no map iteration that reaches the output. Same
// Workload in, same Plan out, byte for byte.
//
// Section, equation and algorithm numbers in this package's comments
// ("section 3.2", "eq. 5", "Algorithm 2") are that paper's; docs/design.md
// describes the same model in the project's own terms.
package planner

import (
	"time"

	"github.com/laxity-dev/laxity/internal/costmodel"
)

// Policy chooses among ready batches.
type Policy string

const (
	// LeastLaxity runs the ready batch whose query has the least slack (LLF).
	LeastLaxity Policy = "LeastLaxity"
	// EarliestDeadline runs the ready batch whose query has the earliest deadline (EDF).
	EarliestDeadline Policy = "EarliestDeadline"
)

// Objective is the bill the planner minimises.
type Objective string

const (
	// Executable ranks plans by the cost of the timeline the operator
	// really asks the pool for: nodes requested a provisioning lead time
	// ahead, kept through idle periods shorter than the keep-alive, billed
	// with the billing minimum. The default.
	Executable Objective = "Executable"
	// Instant ranks plans by the cost of nodes that come and go the moment
	// they are needed, as the published method does; it reproduces the
	// published tables.
	Instant Objective = "Instant"
)

// Workload is everything the planner needs about one ElasticSchedule and the
// queries that reference it. Times are seconds from Origin.
type Workload struct {
	// Name identifies the schedule in errors and in the plan.
	Name string
	// Origin is the instant t0 that every time in the workload and the plan is
	// measured from.
	Origin   time.Time
	Pool     Pool
	Planning Planning
	Queries  []Query
	// Streams are the inputs queries may declare they read (Query.Stream),
	// each with what one scan of it costs; the planner shares a stream's
	// batches among its queries when Planning.Sharing is set.
	Streams []Stream
}

// Stream is an input several queries may read: the same Kafka topic and
// cluster, bucket and prefix, or declared stream name.
type Stream struct {
	Name string
	// Scan is what a step that only reads t tuples of the stream takes on p
	// nodes: its start-up and opening (Overhead) and its read (Serial and
	// Parallel per tuple). A query's own batch model includes such a read;
	// in a shared step the read is paid once (see sharedBatch).
	Scan costmodel.Linear
}

// Pool describes the elastic executor pool and how it is billed.
type Pool struct {
	// Sizes are the node counts the planner may choose, ascending (Cf1..Cfn).
	Sizes []int
	// IdleNodes is what the pool shrinks to while no window is open and
	// nothing is pending.
	IdleNodes int
	// PricePerNodeHour is billed per second per held node.
	PricePerNodeHour float64
	// BillingMinimum is the minimum billed seconds per acquired node.
	BillingMinimum float64
	// ProvisioningLeadTime is how long a requested node takes to arrive.
	ProvisioningLeadTime float64
	// ReleaseAfterIdle is the least idle time for which releasing nodes is
	// worth it.
	ReleaseAfterIdle float64
	// Now is the pool as it is at the origin. Nil means any size can be
	// there at the origin: the plan is made at least a lead time before it
	// needs nodes, and its requests ask for them in time.
	Now *PoolNow
}

// PoolNow is the pool at the plan's origin: the nodes ready, and the nodes
// asked for that are still on their way. A step can run on a pool size only
// once that many nodes can be there: the ready ones at once, the requested
// ones when they are expected, more when nodes asked for now arrive.
type PoolNow struct {
	// Ready is the nodes ready at the origin.
	Ready int
	// Requested is the nodes asked for, the ready ones included.
	Requested int
	// RequestedBy is when, in seconds after the origin, the requested nodes
	// are expected ready.
	RequestedBy float64
	// MoreBy is when more nodes can be there, in seconds after the origin:
	// the provisioning lead time after they are asked for, now.
	MoreBy float64
	// Held are the steps launched before the origin that still hold some
	// of the ready or requested nodes. A plan one step at a time starts
	// when the last of them frees its nodes; a plan in lanes starts each
	// lane when the held steps of its queries free theirs (see heldOf).
	// Empty, the pool is free at the origin.
	Held []HeldStep
}

// HeldStep is a step launched before the plan's origin that holds nodes:
// its query (the first member of a shared step), its nodes and when it is
// expected to free them, in seconds after the origin (0 or less: at the
// origin).
type HeldStep struct {
	Query  string
	Nodes  int
	FreeAt float64
}

// freeAt is when every held step has freed its nodes, in seconds after the
// origin; 0 when none holds any past it.
func (p *PoolNow) freeAt() float64 {
	free := 0.0
	if p != nil {
		for _, h := range p.Held {
			free = max(free, h.FreeAt)
		}
	}
	return free
}

// readyAt is when nodes nodes can be there, in seconds after the origin.
func (p Pool) readyAt(nodes int) float64 {
	now := p.Now
	switch {
	case now == nil || nodes <= now.Ready:
		return 0
	case nodes <= now.Requested:
		return min(now.RequestedBy, now.MoreBy)
	}
	return now.MoreBy
}

// Planning holds the search parameters.
type Planning struct {
	// BatchSizeFactors are the multiples of the 1X batch size to try.
	BatchSizeFactors []int
	// BacktrackStep is K of eq. 8: how many scheduled batches a failed
	// simulation moves back before retrying with more nodes.
	BacktrackStep int
	// MaxBatchDuration is Cmax: no batch may be modelled to take this long on
	// the smallest pool size.
	MaxBatchDuration float64
	// Policy chooses among ready batches.
	Policy Policy
	// Objective is the cost plans are ranked by; empty means Executable.
	Objective Objective
	// GridOnly plans as the published method does: the best cell of the
	// initial size × batch-size factor grid, without the improvement phase
	// that reshapes its batches. The experiments that reproduce the
	// published tables set it.
	GridOnly bool
	// ExactDeadlines lets the improvement phase end a query at its
	// deadline, without the slack it otherwise leaves each one
	// (reserveSeconds). An exact optimum, which knows no such slack, is
	// compared with plans made this way; no API field sets it.
	ExactDeadlines bool
	// RuntimeMargin is the fraction added to every modelled batch and merge
	// duration, as headroom for nodes slower than the cost model.
	RuntimeMargin float64
	// MaxSteps bounds the work of one search: the batches and merges the
	// smallest batch-size factor may cut the workload into, summed over the
	// queries. A larger workload is rejected before the search starts. Zero
	// means DefaultMaxSteps.
	MaxSteps int
	// Sharing plans the queries of one stream with the same window,
	// arrivals and partial aggregation as a group whose batches are shared
	// steps, and takes that plan when it bills less (see PlanContext). Off,
	// every query is planned alone.
	Sharing bool
	// Slices, with Sharing, plans overlapping windows of one query over one
	// stream in slices (see slices.go). The operator does not run slices
	// yet, so it leaves this off; windows whose earlier slices were kept
	// (Query.ReadFrom) read from there regardless.
	Slices bool
	// Concurrent also plans the queries in lanes: parts of the pool that
	// run their steps side by side (see concurrency.go), and takes that plan
	// when it bills less. Off, steps run one at a time on the whole pool.
	Concurrent bool
}

// Query is one recurring query over one window of its stream.
type Query struct {
	Name string
	// WindowStart and WindowEnd bound the arrivals; Deadline is when the final
	// result is due.
	WindowStart, WindowEnd, Deadline float64
	// Rates is the piecewise-constant arrival rate, ascending by Offset.
	Rates []RateSegment
	// Granularity is the number of tuples in one arrival unit (one file);
	// batch sizes are whole units.
	Granularity int64
	// AllowedLateness delays the last batch past WindowEnd for late tuples.
	AllowedLateness float64
	Cost            costmodel.Model
	// Margin is the fraction added to this query's modelled durations when
	// it is larger than Planning.RuntimeMargin: headroom sized from how far
	// the query's own measured run times spread around its model.
	Margin float64
	// TailMargin is headroom for the query's tail — its work after the
	// window has closed: the last batch and the final merge — where no
	// re-plan can help any more, and a few steps' sum spreads far more than
	// a window's worth of steps does. A plan starts a step of the query
	// only when its slack also covers TailMargin of the part of the work
	// left that runs after the close (TailHeadroom); it leaves the order of
	// the steps and their durations (those of Margin) alone. A plan that
	// cannot keep it for every query is made without it (see PlanContext).
	TailMargin float64
	// PartialEvery is φ of section 6: a partial merge runs after every
	// ceil(φ*batches) batches. Zero disables partial aggregation.
	PartialEvery float64
	// Stream names the Workload.Streams entry the query reads; empty when
	// it shares its input with no other query.
	Stream string
	// ReadFrom is where the query's own batches start reading, in seconds
	// from the origin, when the slices of its window before it were read
	// and kept by earlier windows of the same query (see slices.go); it
	// counts only with Carried.
	ReadFrom float64
	// Carried is how many kept results of those earlier slices its final
	// merge combines with its own; 0 when it reads its whole window.
	Carried int
	// Inputs are the streams of a query over several (a join), each with
	// its own rates; then Rates is empty, and every batch covers the same
	// interval of time on each (see inputs.go). None for a query of one.
	Inputs []Input
	// Cuts are instants inside the window, ascending, where a slice of a
	// shared stream ends (see slices.go): a batch ends at each, and a
	// partial merge keeps the slice's result. The planner sets them on the
	// windows it plans in slices; a query as given has none.
	Cuts []float64
}

// Planned is the cost model the planner and the dispatcher price q's steps
// with: q.Cost with the larger of q's own margin and the planning's runtime
// margin added to every duration.
func (q Query) Planned(p Planning) costmodel.Model {
	return q.Cost.Scaled(1 + max(q.Margin, p.RuntimeMargin))
}

// RateSegment is a constant arrival rate from Offset seconds after the window
// start until the next segment or the window end.
type RateSegment struct {
	Offset          float64
	TuplesPerSecond float64
}
