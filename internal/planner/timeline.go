package planner

import (
	"math"
	"sort"
)

// steps expands the schedule into the plan's steps: each batch, then the
// partial or final merge that follows it on the same nodes.
func (s *sim) steps() []Step {
	steps := make([]Step, 0, len(s.entries)+len(s.layouts))
	for _, e := range s.entries {
		l := &s.layouts[e.query]
		nodes := s.sizes[e.nodes]
		steps = append(steps, Step{
			Query: l.name, Kind: StepBatch, Index: e.batch,
			FromTuple: l.from(e.batch), ToTuple: l.to[e.batch],
			Ready: e.ready, Start: e.start, End: e.batchEnd, Nodes: nodes,
		})
		at := e.batchEnd
		if l.partialAfter(e.batch) {
			inputs := l.partialInputs(e.batch)
			first := e.batch + 1 - inputs
			end := at + l.cost.merge(nodes, inputs)
			steps = append(steps, Step{
				Query: l.name, Kind: StepPartial, Index: l.partialOrdinal(e.batch),
				FromTuple: l.from(first), ToTuple: l.to[e.batch], Inputs: inputs,
				Ready: at, Start: at, End: end, Nodes: nodes,
			})
			at = end
		}
		if e.batch+1 == l.batches() {
			steps = append(steps, Step{
				Query: l.name, Kind: StepFinal, Index: l.partials(),
				FromTuple: 0, ToTuple: l.total, Inputs: l.finalInputs(),
				Ready: at, Start: at, End: e.end, Nodes: nodes,
			})
		}
	}
	return steps
}

// span is the pool held at one size over [start, end]: a batch with the
// merges that follow it on the same nodes, or one step of a plan.
type span struct {
	start, end float64
	nodes      int
}

// timeline is the instantaneous node timeline of the schedule (see
// instantTimeline).
func (s *sim) timeline(idle int, billingMinimum float64) []NodeLevel {
	s.spans = reuse(s.spans, len(s.entries))
	for i, e := range s.entries {
		s.spans[i] = span{start: e.start, end: e.end, nodes: s.sizes[e.nodes]}
	}
	return instantTimeline(s.spans, idle, billingMinimum)
}

// NodeTimeline is the instantaneous node timeline of a plan's steps (in
// start order) on pool: the timeline a plan document's Nodes holds. The
// steps of a concurrent plan's lanes hold their nodes together, and the
// pool never holds fewer than its idle nodes, which any lane's step may
// use.
func NodeTimeline(steps []Step, pool Pool) []NodeLevel {
	lanes := 1
	for _, st := range steps {
		lanes = max(lanes, st.Lane+1)
	}
	if lanes == 1 {
		spans := make([]span, len(steps))
		for i, st := range steps {
			spans[i] = span{start: st.Start, end: st.End, nodes: st.Nodes}
		}
		return instantTimeline(spans, pool.IdleNodes, pool.BillingMinimum)
	}
	timelines := make([][]NodeLevel, lanes)
	for lane := range lanes {
		var spans []span
		for _, st := range steps {
			if st.Lane == lane {
				spans = append(spans, span{start: st.Start, end: st.End, nodes: st.Nodes})
			}
		}
		timelines[lane] = instantTimeline(spans, 0, pool.BillingMinimum)
	}
	return sumTimelines(timelines, pool.IdleNodes)
}

// RequestTimeline is the executable timeline the operator asks pool for to
// carry out the instantaneous timeline nodes: a plan document's Requests.
func RequestTimeline(nodes []NodeLevel, pool Pool) []NodeLevel {
	return requests(nodes, pool.ProvisioningLeadTime, pool.ReleaseAfterIdle)
}

// instantTimeline is the node timeline of spans, which run one after
// another, if nodes came and went the moment they are needed or free: each
// span holds its nodes while it runs, and between spans the pool shrinks to
// idle — inside a window as well as between windows, since a node held idle
// is billed all the same. A gap shorter than the billing minimum keeps the
// nodes both neighbours use, since releasing and re-acquiring them would be
// billed at least as much.
func instantTimeline(spans []span, idle int, billingMinimum float64) []NodeLevel {
	levels := make([]NodeLevel, 0, 2*len(spans)+2)
	add := func(at float64, nodes int) {
		if n := len(levels); n > 0 {
			if levels[n-1].Nodes == nodes {
				return
			}
			if levels[n-1].At >= at {
				levels[n-1].Nodes = nodes
				if n > 1 && levels[n-2].Nodes == nodes {
					levels = levels[:n-1]
				}
				return
			}
		}
		levels = append(levels, NodeLevel{At: at, Nodes: nodes})
	}
	t := 0.0
	for i, sp := range spans {
		if sp.start > t {
			level := idle
			if i > 0 && sp.start-t < billingMinimum {
				level = max(idle, min(spans[i-1].nodes, sp.nodes))
			}
			add(t, level)
		}
		add(sp.start, sp.nodes)
		t = max(t, sp.end)
	}
	if len(levels) == 0 || levels[0].At > 0 {
		levels = append([]NodeLevel{{At: 0, Nodes: idle}}, levels...)
	}
	add(t, idle)
	if last := levels[len(levels)-1]; last.At < t {
		levels = append(levels, NodeLevel{At: t, Nodes: idle})
	}
	return levels
}

// horizon is the end of a timeline: its last point.
func horizon(levels []NodeLevel) float64 { return levels[len(levels)-1].At }

// Cost bills a node timeline: every increase acquires nodes, every decrease
// releases the most recently acquired first, and each acquired node costs
// price/3600 * max(heldSeconds, billingMinimum). Nodes still held at the
// horizon are released there.
func Cost(levels []NodeLevel, pool Pool) float64 {
	if len(levels) == 0 {
		return 0
	}
	type lot struct {
		at    float64
		nodes int
	}
	var held []lot
	nodeSeconds := 0.0
	release := func(at float64, n int) {
		for n > 0 {
			top := &held[len(held)-1]
			k := min(n, top.nodes)
			nodeSeconds += float64(k) * math.Max(at-top.at, pool.BillingMinimum)
			top.nodes -= k
			n -= k
			if top.nodes == 0 {
				held = held[:len(held)-1]
			}
		}
	}
	count := 0
	for _, p := range levels {
		if p.Nodes > count {
			held = append(held, lot{p.At, p.Nodes - count})
		} else {
			release(p.At, count-p.Nodes)
		}
		count = p.Nodes
	}
	release(horizon(levels), count)
	return nodeSeconds * pool.PricePerNodeHour / 3600
}

// windowMax answers max(level over [t, t+width]) for ascending t over a
// piecewise-constant timeline, in amortised constant time (a monotonic
// deque). With open, the window is [t, t+width) instead.
type windowMax struct {
	levels []NodeLevel
	width  float64
	open   bool
	next   int   // next segment to enter the window
	deque  []int // segment indices with decreasing levels
}

func (w *windowMax) at(t float64) int {
	for w.next < len(w.levels) && w.entered(w.levels[w.next].At, t) {
		for len(w.deque) > 0 && w.levels[w.deque[len(w.deque)-1]].Nodes <= w.levels[w.next].Nodes {
			w.deque = w.deque[:len(w.deque)-1]
		}
		w.deque = append(w.deque, w.next)
		w.next++
	}
	// Segment i covers [At_i, At_i+1); it has left once At_i+1 <= t.
	for len(w.deque) > 0 {
		i := w.deque[0]
		if i+1 < len(w.levels) && w.levels[i+1].At <= t {
			w.deque = w.deque[1:]
			continue
		}
		break
	}
	return w.levels[w.deque[0]].Nodes
}

// entered reports whether a segment starting at start overlaps the window
// from t. Query times are often start-width, and (start-width)+width may
// round below start, so the comparison allows for rounding: a closed window
// takes a segment starting at its end, an open one never does.
func (w *windowMax) entered(start, t float64) bool {
	if start <= t {
		return true
	}
	tolerance := eps * max(1, math.Abs(start))
	if w.open {
		return start < t+w.width-tolerance
	}
	return start <= t+w.width+tolerance
}

// requests is the executable timeline of section 4: nodes are requested
// lead seconds before the instantaneous timeline needs them, and a decrease
// is carried out only for nodes that would otherwise sit idle for at least
// keep seconds.
func requests(levels []NodeLevel, lead, keep float64) []NodeLevel {
	end := horizon(levels)
	times := make([]float64, 0, 2*len(levels)+1)
	times = append(times, 0)
	for _, p := range levels {
		times = append(times, math.Max(p.At-lead, 0), p.At)
	}
	sort.Float64s(times)
	ahead := &windowMax{levels: levels, width: lead}
	var needed []NodeLevel
	for i, t := range times {
		if t > end || i > 0 && t == times[i-1] {
			continue
		}
		n := ahead.at(t)
		if len(needed) == 0 || needed[len(needed)-1].Nodes != n {
			needed = append(needed, NodeLevel{At: t, Nodes: n})
		}
	}
	if needed[len(needed)-1].At < end {
		needed = append(needed, NodeLevel{At: end, Nodes: levels[len(levels)-1].Nodes})
	}
	idleAhead := &windowMax{levels: needed, width: keep, open: true}
	var out []NodeLevel
	current := 0
	for i, p := range needed {
		n := p.Nodes
		if i > 0 && n < current {
			n = min(current, idleAhead.at(p.At))
			if p.At == end {
				n = p.Nodes
			}
		} else {
			idleAhead.at(p.At)
		}
		if len(out) == 0 || n != current {
			out = append(out, NodeLevel{At: p.At, Nodes: n})
			current = n
		}
	}
	if out[len(out)-1].At < end {
		out = append(out, NodeLevel{At: end, Nodes: current})
	}
	return out
}
