package planner

import (
	"cmp"
	"context"
	"math"
	"slices"
)

// Concurrency: a step takes overhead + t·(serial + parallel/p) on p nodes,
// so the node-seconds it bills, p·overhead + t·(p·serial + parallel), grow
// with p: a step uses a large pool less well than a small one. When the
// work needs a large pool, it is cheaper to run several steps side by side
// on parts of it than one at a time on all of it.
//
// A concurrent plan splits the queries into lanes. Each lane is planned as
// today's sequential plan, on pool sizes up to its share of the largest
// (so the lanes' nodes together never exceed it), and the pool holds, at
// every instant, the sum of the lanes' nodes: a node one lane releases is
// one the next lane's step may use without being acquired again. A
// query's steps stay in one lane, in order, as dispatch runs them.

// maxLanes is the most lanes tried: beyond it, each lane's share of the
// pool is the smallest size, and lanes only add idle nodes.
const maxLanes = 4

// planAlone plans w with every query on its own: one step at a time on the
// whole pool, and, with Planning.Concurrent, also in lanes; the cheaper
// plan that meets every deadline is taken. When none does, the lanes are
// taken, late by the least: with deadlines missed anyway (the tail of a
// window that ran slow, many last batches and merges at once), steps side
// by side finish more of them sooner, and a plan one step at a time would
// first wait for every step running side by side to end.
func planAlone(ctx context.Context, w Workload) (Document, error) {
	best, err := planSequential(ctx, w)
	if err != nil || !w.Planning.Concurrent || w.Planning.GridOnly {
		return best, err
	}
	best = withHeld(best, w)
	grid := best.Candidates
	var late *Document
	for lanes := 2; lanes <= min(maxLanes, len(w.Queries)); lanes++ {
		doc, ok, err := planLanes(ctx, w, lanes, grid, !best.Chosen.Feasible)
		if shapeRefused(err) {
			continue
		}
		if err != nil {
			return Document{}, err
		}
		doc = withHeld(doc, w)
		switch {
		case !ok:
		case doc.Chosen.Feasible:
			if cheaper(doc, best, w.Planning.Objective) {
				best = doc
			}
		case late == nil || lateBy(doc) < lateBy(*late)-eps:
			late = &doc
		}
	}
	if !best.Chosen.Feasible && late != nil {
		return *late, nil
	}
	return best, nil
}

// lateBy is how late the latest query of doc's plan finishes after its
// deadline.
func lateBy(doc Document) float64 {
	late := math.Inf(-1)
	for _, q := range doc.Queries {
		late = max(late, -q.Slack)
	}
	return late
}

// laneWork is what a query asks of the pool: its whole window as batches
// of the smallest size, on that size, in node-seconds.
func laneWork(q Query, smallest int) float64 {
	return float64(NewArrivalCurve(q).Total()) * q.Cost.Batch.PerUnit(smallest) * float64(smallest)
}

// laneOf assigns w's queries to lanes: the largest work first, each to the
// lane with the least so far (ties to the lower lane), so the lanes' work
// is as even as the queries allow.
func laneOf(w Workload, lanes int) []int {
	smallest := w.Pool.Sizes[0]
	order := make([]int, len(w.Queries))
	for i := range order {
		order[i] = i
	}
	work := make([]float64, len(w.Queries))
	for i, q := range w.Queries {
		work[i] = laneWork(q, smallest)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(work[b], work[a]) })
	load := make([]float64, lanes)
	lane := make([]int, len(w.Queries))
	for _, i := range order {
		least := 0
		for k := range load {
			if load[k] < load[least] {
				least = k
			}
		}
		lane[i] = least
		load[least] += work[i]
	}
	return lane
}

// planLanes plans w in the given number of lanes; ok is false when the
// pool has no size within each lane's share, a lane's plan takes the
// other order, or, unless late is set, a lane meets no deadline plan.
// With late, a plan with a lane that misses a deadline is kept, late by
// its latest lane: when no plan meets every deadline, steps side by side
// may still be the least late (the tail of a window that ran slow, many
// last batches and merges at once). The plan keeps grid, the candidates
// of the plan one step at a time, beside it.
func planLanes(ctx context.Context, w Workload, lanes int, grid []Candidate, late bool) (Document, bool, error) {
	share := w.Pool.Sizes[len(w.Pool.Sizes)-1] / lanes
	var sizes []int
	for _, s := range w.Pool.Sizes {
		if s <= share {
			sizes = append(sizes, s)
		}
	}
	if len(sizes) == 0 {
		return Document{}, false, nil
	}
	lane := laneOf(w, lanes)
	docs := make([]Document, lanes)
	pools := lanePools(w, lane, lanes, share)
	for k := range lanes {
		lw := w
		lw.Planning.Concurrent = false
		lw.Pool = pools[k]
		lw.Pool.Sizes = sizes
		lw.Queries = nil
		for i, q := range w.Queries {
			if lane[i] == k {
				lw.Queries = append(lw.Queries, q)
			}
		}
		if len(lw.Queries) == 0 {
			// Queries of no work all went to one lane: fewer lanes do.
			return Document{}, false, nil
		}
		// A lane's improvement phase gets its share of the least work, so
		// that the lanes together search about as long as one plan; a lane
		// that finds no plan in its share searches again with the whole.
		doc, err := planSequentialShare(ctx, lw, float64(len(lw.Queries))/float64(len(w.Queries)))
		if err == nil && !doc.Chosen.Feasible {
			doc, err = planSequential(ctx, lw)
		}
		if err != nil {
			return Document{}, false, err
		}
		if !doc.Chosen.Feasible && !late || doc.Chosen.Policy != w.Planning.Policy {
			// Dispatch follows one order for the whole schedule.
			return Document{}, false, nil
		}
		docs[k] = doc
	}
	return joinLanes(w, docs, grid), true, nil
}

// lanePools are pool split among lanes of share nodes each, lane[i] the
// lane of w's query i: the idle nodes are the first lane's; the nodes held
// by a lane's own steps (heldOf) stay its own; the other nodes ready now,
// then those on their way, are dealt to the lanes in turn, the smallest
// size at a time, up to a share each, so that every lane can run a step
// without waiting a lead time; every lane may ask for more a lead time
// from now. A plan made before its window (no PoolNow) has every lane's
// nodes there when it starts, as a plan one step at a time does.
func lanePools(w Workload, lane []int, lanes, share int) []Pool {
	pool := w.Pool
	out := make([]Pool, lanes)
	for k := range out {
		out[k] = pool
		out[k].IdleNodes = 0
		if k == 0 {
			out[k].IdleNodes = min(pool.IdleNodes, share)
		}
	}
	if pool.Now == nil {
		return out
	}
	held, own := heldOf(w, lane, lanes, share)
	ready := make([]int, lanes)
	left := pool.Now.Ready
	for k := range ready {
		ready[k] = min(own[k], left)
		left -= ready[k]
	}
	unit := max(pool.Sizes[0], 1)
	for k, n := range deal(left, lanes, share, unit, ready...) {
		ready[k] += n
	}
	coming := deal(max(pool.Now.Requested-pool.Now.Ready, 0), lanes, share, unit, ready...)
	for k := range out {
		now := *pool.Now
		now.Ready, now.Requested, now.Held = ready[k], ready[k]+coming[k], held[k]
		out[k].Now = &now
	}
	return out
}

// heldOf splits the steps launched before the plan that still hold nodes
// among the lanes (lane[i] the lane of w's query i): a lane starts when
// its queries' held steps free their nodes, which are its own (own, by
// lane), and the other lanes need not wait for them. A held step of no
// lane's query (a shared step, planned under its group's name), or held
// steps of one lane that hold more than its share, hold nodes the other
// lanes would run on: every lane waits for those.
func heldOf(w Workload, lane []int, lanes, share int) (held [][]HeldStep, own []int) {
	held, own = make([][]HeldStep, lanes), make([]int, lanes)
	laneOfQuery := make(map[string]int, len(w.Queries))
	for i, q := range w.Queries {
		laneOfQuery[q.Name] = lane[i]
	}
	var everyLane []HeldStep
	for _, h := range w.Pool.Now.Held {
		if h.FreeAt <= 0 {
			continue
		}
		k, ok := laneOfQuery[h.Query]
		if !ok {
			everyLane = append(everyLane, h)
			continue
		}
		held[k] = append(held[k], h)
		own[k] += h.Nodes
	}
	for k := range held {
		if own[k] > share {
			everyLane = append(everyLane, held[k]...)
			held[k], own[k] = nil, 0
		}
	}
	for k := range held {
		held[k] = append(held[k], everyLane...)
	}
	return held, own
}

// deal is nodes dealt to lanes in turn, unit at a time (what is left of
// the last unit to the next lane in turn), no lane beyond share with what
// it holds already (held, by lane).
func deal(nodes, lanes, share, unit int, held ...int) []int {
	out := make([]int, lanes)
	room := func(k int) int {
		if k < len(held) {
			return share - held[k] - out[k]
		}
		return share - out[k]
	}
	for k, stuck := 0, 0; nodes > 0 && stuck < lanes; k = (k + 1) % lanes {
		give := min(unit, nodes, room(k))
		if give <= 0 {
			stuck++
			continue
		}
		stuck = 0
		out[k] += give
		nodes -= give
	}
	return out
}

// joinLanes is one plan of the lanes' plans: their steps in start order,
// each marked with its lane, the queries in w's order, and the pool holding
// the lanes' nodes together. It is beyond any grid cell (Improved).
func joinLanes(w Workload, docs []Document, grid []Candidate) Document {
	doc := Document{Schedule: w.Name, Origin: w.Origin, Candidates: grid}
	rate := math.Inf(1)
	for k, d := range docs {
		for _, s := range d.Steps {
			s.Lane = k
			doc.Steps = append(doc.Steps, s)
		}
		rate = min(rate, d.MaxSupportedRateFactor)
		doc.Chosen.InitialNodes += d.Chosen.InitialNodes
	}
	slices.SortStableFunc(doc.Steps, func(a, b Step) int { return cmp.Compare(a.Start, b.Start) })
	plans := map[string]QueryPlan{}
	for _, d := range docs {
		for _, qp := range d.Queries {
			plans[qp.Name] = qp
		}
	}
	for _, q := range w.Queries {
		doc.Queries = append(doc.Queries, plans[q.Name])
	}
	doc.Nodes = NodeTimeline(doc.Steps, w.Pool)
	doc.Requests = RequestTimeline(doc.Nodes, w.Pool)
	doc.Chosen.MaxNodes = peakNodes(doc.Steps)
	doc.Chosen.BatchSizeFactor = docs[0].Chosen.BatchSizeFactor
	doc.Chosen.Cost, doc.Chosen.ExecutableCost = Cost(doc.Nodes, w.Pool), Cost(doc.Requests, w.Pool)
	doc.Chosen.Feasible, doc.Chosen.Policy, doc.Chosen.Improved, doc.Chosen.Lanes = true, w.Planning.Policy, true, len(docs)
	for _, d := range docs {
		if f := d.Chosen.Failure; !d.Chosen.Feasible {
			doc.Chosen.Feasible, doc.MaxSupportedRateFactor = false, 0
			if f != nil && (doc.Chosen.Failure == nil || f.LateSeconds > doc.Chosen.Failure.LateSeconds) {
				doc.Chosen.Failure = f
			}
		}
	}
	if doc.Chosen.Feasible {
		doc.MaxSupportedRateFactor = rate
	}
	return doc
}

// sumTimelines is the timeline holding, at every instant, the nodes of all
// the timelines together, and never fewer than idle; it ends at the last
// timeline's end, at idle.
func sumTimelines(timelines [][]NodeLevel, idle int) []NodeLevel {
	var at []float64
	for _, t := range timelines {
		for _, l := range t {
			at = append(at, l.At)
		}
	}
	slices.Sort(at)
	at = slices.Compact(at)
	next := make([]int, len(timelines))
	level := make([]int, len(timelines))
	var out []NodeLevel
	for _, t := range at {
		total := 0
		for k, tl := range timelines {
			for next[k] < len(tl) && tl[next[k]].At <= t {
				level[k] = tl[next[k]].Nodes
				next[k]++
			}
			total += level[k]
		}
		total = max(total, idle)
		if n := len(out); n == 0 || out[n-1].Nodes != total {
			out = append(out, NodeLevel{At: t, Nodes: total})
		}
	}
	if end := at[len(at)-1]; out[len(out)-1].At < end {
		// The horizon: where the last lane ends, back at idle.
		out = append(out, NodeLevel{At: end, Nodes: idle})
	}
	return out
}

// peakNodes is the most nodes steps running at the same time hold: a sweep
// over their starts and ends, an end before a start at the same instant (a
// step that ends frees its nodes for the one that starts then). A step of
// no time holds its nodes for no time, beside none.
func peakNodes(steps []Step) int {
	type event struct {
		at    float64
		nodes int
	}
	events := make([]event, 0, 2*len(steps))
	peak := 0
	for _, s := range steps {
		peak = max(peak, s.Nodes)
		if s.End > s.Start {
			events = append(events, event{s.Start, s.Nodes}, event{s.End, -s.Nodes})
		}
	}
	slices.SortFunc(events, func(a, b event) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.nodes, b.nodes)) })
	running := 0
	for _, e := range events {
		running += e.nodes
		peak = max(peak, running)
	}
	return peak
}
