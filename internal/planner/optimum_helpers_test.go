package planner

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/laxity-dev/laxity/internal/costmodel"
)

// oracleQuery is one query as the exact solver sees it: whole arrival units,
// when a batch ending at each unit is ready, and its planned cost model.
type oracleQuery struct {
	units    int
	deadline float64
	// to[u] is the exclusive end tuple of the first u units (to[0] = 0).
	to []int64
	// ready[u] is when a batch ending after unit u (1-based) is ready.
	ready []float64
	cost  costmodel.Model
	name  string
}

// oracleProblem is a tiny workload in the solver's terms.
type oracleProblem struct {
	pool    Pool
	queries []oracleQuery
}

func newOracleProblem(w Workload) oracleProblem {
	p := oracleProblem{pool: w.Pool}
	for _, q := range w.Queries {
		curve := NewArrivalCurve(q)
		total := curve.Total()
		unit := max(q.Granularity, 1)
		units := int(ceilDiv(total, unit))
		oq := oracleQuery{units: units, deadline: q.Deadline, cost: q.Planned(w.Planning), name: q.Name}
		oq.to = make([]int64, units+1)
		oq.ready = make([]float64, units+1)
		for u := 1; u <= units; u++ {
			oq.to[u] = min(int64(u)*unit, total)
			oq.ready[u] = curve.ReadyAt(oq.to[u])
		}
		p.queries = append(p.queries, oq)
	}
	return p
}

// costs prices a complete plan's steps as the planner prices its own.
func (p *oracleProblem) costs(steps []Step) (instant, executable float64) {
	nodes := NodeTimeline(steps, p.pool)
	return Cost(nodes, p.pool), Cost(RequestTimeline(nodes, p.pool), p.pool)
}

// exhaustiveOptimum is the optimum by plain enumeration of every plan of
// the space, with no pruning: the reference the branch and bound of optimum
// is checked against on workloads small enough to enumerate.
func exhaustiveOptimum(w Workload) (instant, executable float64, feasible bool) {
	p := newOracleProblem(w)
	instant, executable = math.Inf(1), math.Inf(1)
	all := make([]int, len(p.queries))
	for i := range all {
		all[i] = i
	}
	p.eachPlan(all, p.pool.Sizes, func(steps []Step) bool {
		i, e := p.costs(steps)
		instant, executable, feasible = min(instant, i), min(executable, e), true
		return true
	})
	return instant, executable, feasible
}

// eachPlan calls visit with every plan of the queries qs (indices into
// p.queries) on the pool sizes sizes that meets their deadlines, as
// optimum's space has them: every whole-unit batch partition of each
// query, every interleaving of the batches (each query's in order), every
// size per batch, one step at a time, each starting as soon as the previous
// one ends and its batch is ready, each final merge right after its query's
// last batch on the same nodes. visit must not keep steps, which the next
// plan reuses; the enumeration stops when it returns false.
func (p *oracleProblem) eachPlan(qs, sizes []int, visit func(steps []Step) bool) {
	next := make([]int, len(p.queries))
	batches := make([]int, len(p.queries))
	var steps []Step
	stopped := false
	var walk func(t float64)
	walk = func(t float64) {
		if stopped {
			return
		}
		done := true
		for _, qi := range qs {
			q := &p.queries[qi]
			if next[qi] == q.units {
				continue
			}
			done = false
			for end := next[qi] + 1; end <= q.units; end++ {
				for _, n := range sizes {
					start := max(t, q.ready[end])
					batchEnd := start + q.cost.BatchSeconds(n, q.to[end]-q.to[next[qi]])
					steps = append(steps, Step{Query: q.name, Kind: StepBatch, Index: batches[qi], FromTuple: q.to[next[qi]], ToTuple: q.to[end], Ready: q.ready[end], Start: start, End: batchEnd, Nodes: n})
					from := next[qi]
					next[qi], batches[qi] = end, batches[qi]+1
					finish := batchEnd
					if end == q.units {
						finish = batchEnd + q.cost.MergeSeconds(n, batches[qi])
						steps = append(steps, Step{Query: q.name, Kind: StepFinal, Index: 0, ToTuple: q.to[end], Inputs: batches[qi], Ready: batchEnd, Start: batchEnd, End: finish, Nodes: n})
					}
					if end < q.units || finish <= q.deadline+eps {
						walk(finish)
					}
					next[qi], batches[qi] = from, batches[qi]-1
					if end == q.units {
						steps = steps[:len(steps)-1]
					}
					steps = steps[:len(steps)-1]
				}
			}
		}
		if done {
			stopped = !visit(steps)
		}
	}
	walk(0)
}

// oracleWorkload is a random tiny workload, deterministic from seed: 1 to
// maxQueries queries of minUnits to maxUnits arrival units arriving evenly over windows of 1–10
// minutes, deadlines 10 s to 4 minutes after the window end (a third of the
// workloads tight: 10–40 s), pool sizes {1,2}, {1,2,4} or {2,4}, and cost
// models whose whole-window batch takes 10–200 s on the smallest size.
func oracleWorkload(seed uint64, maxQueries, minUnits, maxUnits int) Workload {
	rng := rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
	sizes := [][]int{{1, 2}, {1, 2, 4}, {2, 4}}[rng.IntN(3)]
	idle := 0
	if rng.IntN(2) == 1 {
		idle = sizes[0]
	}
	w := Workload{
		Name: fmt.Sprintf("tiny-%d", seed),
		Pool: Pool{Sizes: sizes, IdleNodes: idle, PricePerNodeHour: 1,
			BillingMinimum: 60, ProvisioningLeadTime: 60, ReleaseAfterIdle: 120},
		Planning: Planning{BatchSizeFactors: []int{1, 2, 4, 8, 16, 32}, BacktrackStep: 1,
			MaxBatchDuration: 1e6, Policy: LeastLaxity, Objective: Executable},
	}
	tight := rng.IntN(3) == 0
	for i := range 1 + rng.IntN(maxQueries) {
		units := minUnits + rng.IntN(maxUnits-minUnits+1)
		const granularity = 1000
		window := float64(60 * (1 + rng.IntN(10)))
		start := float64(rng.IntN(13)) * 10
		slack := 10 + float64(rng.IntN(24))*10
		if tight {
			slack = 10 + float64(rng.IntN(4))*10
		}
		overhead := 2 + float64(rng.IntN(19))
		whole := max(10, overhead+5) + rng.Float64()*(200-max(10, overhead+5))
		perTuple := (whole - overhead) / float64(units*granularity)
		serialShare := rng.Float64() * 0.2
		w.Queries = append(w.Queries, Query{
			Name:        fmt.Sprintf("q%d", i),
			WindowStart: start, WindowEnd: start + window, Deadline: start + window + slack,
			Rates:       []RateSegment{{TuplesPerSecond: float64(units*granularity) / window}},
			Granularity: granularity,
			Cost: costmodel.Model{
				Batch: costmodel.Linear{Overhead: overhead, Serial: serialShare * perTuple, Parallel: (1 - serialShare) * perTuple * float64(sizes[0])},
				Merge: costmodel.Linear{Overhead: 1 + float64(rng.IntN(5)), Serial: 0.2, Parallel: 0.5},
			},
		})
	}
	return w
}

// optimum is the exact minimum instant cost and, separately, the exact
// minimum executable cost over every plan of a workload without partial
// merges: every whole-unit batch partition of every query, every
// interleaving of the batches (each query's in order), every pool size per
// batch, each step starting as soon as the previous one ends and its batch
// is ready, each final merge right after its query's last batch on the same
// nodes and by the query's deadline. feasible is false when no plan meets
// every deadline.
//
// It is a depth-first branch and bound over the plan's steps in start
// order. Two bounds prune, both sound, so the minimum is exact:
//   - deadlines: each unfinished query still needs at least one batch of
//     its remaining tuples and a final merge, on the largest size (the
//     fastest); its last batch starts no earlier than the window closes;
//     and the pool runs one step at a time, so the queries' least remaining
//     durations, in deadline order from now, must each end by their
//     deadline (preemptive earliest-deadline-first, which is optimal for
//     that relaxation);
//   - cost: both timelines bill every held node for at least the time it
//     is held, and the executable timeline holds at least what the instant
//     one holds at every moment, so a cost is at least the price times the
//     node-seconds of the instant timeline so far (the steps' nodes while
//     they run, and between steps the idle nodes, or the fewer of both
//     neighbours' nodes across a gap shorter than the billing minimum) and
//     the least node-seconds of the remaining work: one batch of the
//     remaining tuples and a final merge, on the smallest size, since
//     node-seconds grow with the nodes for this cost model.
//
// The search visits at most limit partial plans (no limit when limit is 0);
// exact is false when it stopped there, and then the costs are only the
// best found.
func optimum(w Workload, limit int) (instant, executable float64, feasible, exact bool) {
	p := newOracleProblem(w)
	s := &oracleSearch{p: &p, bestInstant: math.Inf(1), bestExecutable: math.Inf(1), limit: limit}
	s.next = make([]int, len(p.queries))
	s.batches = make([]int, len(p.queries))
	s.order = make([]int, len(p.queries))
	s.walk(0, 0)
	return s.bestInstant, s.bestExecutable, s.found, !s.stopped
}

type oracleSearch struct {
	p                           *oracleProblem
	next, batches, order        []int
	steps                       []Step
	bestInstant, bestExecutable float64
	// bestExecutableSteps is the plan of bestExecutable, for diagnosis.
	bestExecutableSteps []Step
	found               bool
	visited, limit      int
	stopped             bool
}

// leastRemaining is the least time query qi needs from now, started at t,
// to finish: on the largest size, one batch and the final merge.
func (s *oracleSearch) leastRemaining(qi int, t float64) (finish, busy float64) {
	q := &s.p.queries[qi]
	largest := s.p.pool.Sizes[len(s.p.pool.Sizes)-1]
	merge := q.cost.MergeSeconds(largest, s.batches[qi]+1)
	busy = q.cost.BatchSeconds(largest, q.to[q.units]-q.to[s.next[qi]]) + merge
	last := q.ready[q.units] + q.cost.BatchSeconds(largest, q.to[q.units]-q.to[q.units-1]) + merge
	return max(t+busy, last), busy
}

// leastNodeSeconds is the least node-seconds query qi's remaining work holds.
func (s *oracleSearch) leastNodeSeconds(qi int) float64 {
	q := &s.p.queries[qi]
	smallest := s.p.pool.Sizes[0]
	return float64(smallest) * (q.cost.BatchSeconds(smallest, q.to[q.units]-q.to[s.next[qi]]) + q.cost.MergeSeconds(smallest, s.batches[qi]+1))
}

// hopeless reports whether no completion of the partial plan ending at t
// meets every deadline.
func (s *oracleSearch) hopeless(t float64) bool {
	open := s.order[:0]
	for qi, q := range s.p.queries {
		if s.next[qi] < q.units {
			if finish, _ := s.leastRemaining(qi, t); finish > q.deadline+eps {
				return true
			}
			open = append(open, qi)
		}
	}
	// Insertion sort by deadline: at most three queries.
	for i := 1; i < len(open); i++ {
		for j := i; j > 0 && s.p.queries[open[j]].deadline < s.p.queries[open[j-1]].deadline; j-- {
			open[j], open[j-1] = open[j-1], open[j]
		}
	}
	at := t
	for _, qi := range open {
		_, busy := s.leastRemaining(qi, at)
		at += busy
		if at > s.p.queries[qi].deadline+eps {
			return true
		}
	}
	return false
}

// gapNodeSeconds is what the instant timeline holds between the last
// step, which ends at t, and a step on nodes nodes starting at start.
func (s *oracleSearch) gapNodeSeconds(t, start float64, nodes int) float64 {
	gap := start - t
	if gap <= 0 {
		return 0
	}
	level := s.p.pool.IdleNodes
	if len(s.steps) > 0 && gap < s.p.pool.BillingMinimum {
		level = max(level, min(s.steps[len(s.steps)-1].Nodes, nodes))
	}
	return float64(level) * gap
}

// walk extends the partial plan s.steps, whose last step ends at t and
// whose instant timeline holds nodeSeconds until then.
func (s *oracleSearch) walk(t, nodeSeconds float64) {
	if s.visited++; s.limit > 0 && s.visited > s.limit {
		s.stopped = true
	}
	if s.stopped || s.hopeless(t) {
		return
	}
	pool := s.p.pool
	least := nodeSeconds
	done := true
	for qi, q := range s.p.queries {
		if s.next[qi] < q.units {
			done = false
			least += s.leastNodeSeconds(qi)
		}
	}
	if done {
		i, e := s.p.costs(s.steps)
		if e < s.bestExecutable {
			s.bestExecutableSteps = append(s.bestExecutableSteps[:0], s.steps...)
		}
		s.bestInstant, s.bestExecutable, s.found = min(s.bestInstant, i), min(s.bestExecutable, e), true
		return
	}
	if bound := least * pool.PricePerNodeHour / 3600 * (1 - 1e-12); bound >= s.bestInstant && bound >= s.bestExecutable {
		return
	}
	for qi := range s.p.queries {
		q := &s.p.queries[qi]
		from := s.next[qi]
		if from == q.units {
			continue
		}
		// Larger batches first: they find cheap plans early.
		for end := q.units; end > from; end-- {
			for _, n := range pool.Sizes {
				start := max(t, q.ready[end])
				batch := q.cost.BatchSeconds(n, q.to[end]-q.to[from])
				held := s.gapNodeSeconds(t, start, n)
				s.steps = append(s.steps, Step{Query: q.name, Kind: StepBatch, Index: s.batches[qi], FromTuple: q.to[from], ToTuple: q.to[end], Ready: q.ready[end], Start: start, End: start + batch, Nodes: n})
				s.next[qi], s.batches[qi] = end, s.batches[qi]+1
				finish, busy := start+batch, batch
				if end == q.units {
					merge := q.cost.MergeSeconds(n, s.batches[qi])
					s.steps = append(s.steps, Step{Query: q.name, Kind: StepFinal, Index: 0, ToTuple: q.to[end], Inputs: s.batches[qi], Ready: finish, Start: finish, End: finish + merge, Nodes: n})
					finish, busy = finish+merge, busy+merge
				}
				if end < q.units || finish <= q.deadline+eps {
					s.walk(finish, nodeSeconds+held+float64(n)*busy)
				}
				s.next[qi], s.batches[qi] = from, s.batches[qi]-1
				if end == q.units {
					s.steps = s.steps[:len(s.steps)-1]
				}
				s.steps = s.steps[:len(s.steps)-1]
			}
		}
	}
}
