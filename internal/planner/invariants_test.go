package planner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/laxity-dev/laxity/internal/costmodel"
)

// This file checks a plan Document against the planner's model,
// independently of how the planner computes it: arrivals, batch layout, the
// cost model, merges, the one-step-at-a-time pool, the node timelines and their
// bills, the search grid and determinism are all recomputed here from the
// Workload alone. The property and fuzz tests run every plan through it.

// maxViolations bounds the report of one document; a broken plan usually
// breaks the same invariant at every step.
const maxViolations = 40

// tol is the tolerance for comparing two modelled quantities (seconds,
// dollars): 1e-6 relative, and 1e-6 absolute for values below 1.
func tol(a, b float64) float64 {
	return 1e-6 * math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func near(a, b float64) bool { return math.Abs(a-b) <= tol(a, b) }

// leq is a <= b up to tol.
func leq(a, b float64) bool { return a <= b+tol(a, b) }

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// violations collects the violated invariants of one document.
type violations struct {
	list    []string
	dropped int
}

func (v *violations) add(format string, args ...any) {
	if len(v.list) >= maxViolations {
		v.dropped++
		return
	}
	v.list = append(v.list, fmt.Sprintf(format, args...))
}

func (v *violations) result() []string {
	if v.dropped > 0 {
		return append(v.list, fmt.Sprintf("... and %d more violations", v.dropped))
	}
	return v.list
}

// checkInvariants returns every invariant of the model that the feasible plan
// d of workload w violates, each as a readable sentence; none when d is a
// correct plan. It also plans w again and checks the result is byte for byte
// the same document.
func checkInvariants(w Workload, d Document) []string {
	var v violations
	if !d.Chosen.Feasible {
		v.add("checkInvariants needs a feasible plan: chosen.feasible is false")
		return v.result()
	}
	if d.Chosen.Failure != nil {
		v.add("feasible plan has a failure %+v", *d.Chosen.Failure)
	}
	if !d.Origin.Equal(w.Origin) {
		v.add("origin %v, workload origin %v", d.Origin, w.Origin)
	}
	if len(d.Steps) == 0 {
		v.add("feasible plan has no steps")
		return v.result()
	}
	horizon := checkSteps(&v, w, d)
	if sharesWork(d) {
		checkSharing(&v, w, d)
	} else {
		checkQueries(&v, w, d)
	}
	checkNodeTimeline(&v, w, d, horizon)
	checkRequests(&v, w, d, horizon)
	checkCosts(&v, w, d, horizon)
	checkGrid(&v, w, d)
	if !(d.MaxSupportedRateFactor >= 1-1e-9) {
		v.add("maxSupportedRateFactor %g of a feasible plan is below 1", d.MaxSupportedRateFactor)
	}
	for _, s := range checkDeterminism(w, d) {
		v.add("%s", s)
	}
	return v.result()
}

// checkSteps checks what holds for every step regardless of its query: finite
// times, start order, one step at a time, nodes from the pool sizes, no start
// before ready. It returns the horizon end, the latest step end.
func checkSteps(v *violations, w Workload, d Document) float64 {
	horizon := math.Inf(-1)
	for i, s := range d.Steps {
		if !finite(s.Ready) || !finite(s.Start) || !finite(s.End) {
			v.add("step %d %s: non-finite time (ready %g, start %g, end %g)", i, stepName(s), s.Ready, s.Start, s.End)
			continue
		}
		horizon = math.Max(horizon, s.End)
		if !slices.Contains(w.Pool.Sizes, s.Nodes) {
			v.add("step %d %s runs on %d nodes, not one of the pool sizes %v", i, stepName(s), s.Nodes, w.Pool.Sizes)
		}
		if !leq(s.Ready, s.Start) {
			v.add("step %d %s starts at %g before it is ready at %g", i, stepName(s), s.Start, s.Ready)
		}
		if s.Start < -tol(s.Start, 0) {
			v.add("step %d %s starts at %g, before the origin", i, stepName(s), s.Start)
		}
		if i > 0 {
			p := d.Steps[i-1]
			if s.Start < p.Start {
				v.add("steps out of start order: step %d %s starts at %g, before step %d %s at %g", i, stepName(s), s.Start, i-1, stepName(p), p.Start)
			}
		}
	}
	// One step at a time in each lane: in start order, each step starts
	// once every earlier one of its lane has ended. (A plan whose steps run
	// one at a time has one lane.)
	order := slices.Clone(d.Steps)
	sort.SliceStable(order, func(i, j int) bool { return order[i].Start < order[j].Start })
	latestEnd, latest := map[int]float64{}, map[int]Step{}
	for _, s := range order {
		if end, ok := latestEnd[s.Lane]; ok && !leq(end, s.Start) {
			l := latest[s.Lane]
			v.add("steps overlap in lane %d: %s runs [%g, %g] while %s runs [%g, %g]", s.Lane, stepName(s), s.Start, s.End, stepName(l), l.Start, l.End)
		}
		if end, ok := latestEnd[s.Lane]; !ok || s.End > end {
			latestEnd[s.Lane], latest[s.Lane] = s.End, s
		}
		if s.Lane < 0 || s.Lane >= max(d.Chosen.Lanes, 1) {
			v.add("step %s runs in lane %d of %d", stepName(s), s.Lane, max(d.Chosen.Lanes, 1))
		}
	}
	return horizon
}

// runningNodes is the nodes of d's steps running at t: those that start at
// or before t and end after it. A step of no time holds its nodes for no
// time, beside none.
func runningNodes(d Document, t float64) int {
	n := 0
	for _, s := range d.Steps {
		if s.Start <= t && t < s.End {
			n += s.Nodes
		}
	}
	return n
}

func stepName(s Step) string {
	return fmt.Sprintf("%s/%s#%d", s.Query, s.Kind, s.Index)
}

// arrivalCurve is A(t) of one query, recomputed from its rate segments.
type arrivalCurve struct {
	start, end []float64 // segment i covers [start[i], end[i])
	rate       []float64
	windowEnd  float64
}

func newArrivalCurve(q Query) arrivalCurve {
	var a arrivalCurve
	for i, seg := range q.Rates {
		from := q.WindowStart + seg.Offset
		to := q.WindowEnd
		if i+1 < len(q.Rates) {
			to = q.WindowStart + q.Rates[i+1].Offset
		}
		a.start = append(a.start, from)
		a.end = append(a.end, math.Min(to, q.WindowEnd))
		a.rate = append(a.rate, seg.TuplesPerSecond)
	}
	a.windowEnd = q.WindowEnd
	return a
}

// at is A(t), tuples arrived by t.
func (a arrivalCurve) at(t float64) float64 {
	sum := 0.0
	for i := range a.rate {
		if t <= a.start[i] {
			break
		}
		sum += a.rate[i] * (math.Min(t, a.end[i]) - a.start[i])
	}
	return sum
}

// inverse is A^-1(k), the earliest time by which k tuples have arrived; the
// window end for a k that only rounding separates from the window's total.
func (a arrivalCurve) inverse(k float64) float64 {
	if len(a.rate) == 0 {
		return a.windowEnd
	}
	if k <= 0 {
		return a.start[0]
	}
	sum := 0.0
	for i := range a.rate {
		n := a.rate[i] * (a.end[i] - a.start[i])
		if sum+n >= k && a.rate[i] > 0 {
			return math.Min(a.start[i]+(k-sum)/a.rate[i], a.end[i])
		}
		sum += n
	}
	return a.windowEnd
}

// totals are the acceptable N = floor(A(windowEnd)): the epsilon that guards
// the floor against round-off may be anything from 1e-9 to 1e-6.
func (a arrivalCurve) totals() (lo, hi int64) {
	n := a.at(a.windowEnd)
	return int64(math.Floor(n + 1e-9)), int64(math.Floor(n + 1e-6))
}

// checkQueries checks each query's batches and merges against its arrivals,
// cost model and partial aggregation, and its summary in d.Queries.
func checkQueries(v *violations, w Workload, d Document) {
	byQuery := map[string][]Step{}
	known := map[string]bool{}
	for _, q := range w.Queries {
		known[q.Name] = true
	}
	for _, s := range d.Steps {
		if !known[s.Query] {
			v.add("step %s names no query of the workload", stepName(s))
			continue
		}
		byQuery[s.Query] = append(byQuery[s.Query], s)
	}
	if len(d.Queries) != len(w.Queries) {
		v.add("%d query summaries for %d queries", len(d.Queries), len(w.Queries))
	}
	for qi, q := range w.Queries {
		var qp *QueryPlan
		if qi < len(d.Queries) {
			qp = &d.Queries[qi]
			if qp.Name != q.Name {
				v.add("query summary %d is %q, want %q (input order)", qi, qp.Name, q.Name)
				qp = nil
			}
		}
		if qp == nil {
			continue
		}
		checkQuery(v, w, q, *qp, byQuery[q.Name], d.Chosen.Improved)
	}
}

func checkQuery(v *violations, w Workload, q Query, qp QueryPlan, steps []Step, improved bool) {
	name := q.Name
	arr := newArrivalCurve(q)
	nLo, nHi := arr.totals()
	var batches, merges []Step
	for _, s := range steps {
		switch s.Kind {
		case StepBatch:
			batches = append(batches, s)
		case StepPartial, StepFinal:
			merges = append(merges, s)
		default:
			v.add("query %s: step %s has unknown kind %q", name, stepName(s), s.Kind)
		}
	}
	if len(batches) == 0 {
		v.add("query %s: no batches (N = %d)", name, nLo)
		return
	}
	n := batches[len(batches)-1].ToTuple
	if n != nLo && n != nHi {
		v.add("query %s: batches end at tuple %d, want N = floor(A(windowEnd)) = %d", name, n, nLo)
		n = nLo
	}

	// Batch layout.
	k := len(batches)
	if qp.Batches != k {
		v.add("query %s: summary says %d batches, the plan has %d", name, qp.Batches, k)
	}
	if q.Granularity > 0 && qp.BatchSize%q.Granularity != 0 {
		v.add("query %s: batch size %d is not a multiple of the granularity %d", name, qp.BatchSize, q.Granularity)
	}
	if qp.BatchSize <= 0 {
		v.add("query %s: batch size %d is not positive", name, qp.BatchSize)
	}
	if len(w.Pool.Sizes) > 0 && qp.BatchSize > 0 {
		if bt := q.Cost.BatchSeconds(w.Pool.Sizes[0], qp.BatchSize); !(bt < w.Planning.MaxBatchDuration+tol(bt, w.Planning.MaxBatchDuration)) {
			v.add("query %s: batch size %d takes %gs on %d nodes, not below maxBatchDuration %g", name, qp.BatchSize, bt, w.Pool.Sizes[0], w.Planning.MaxBatchDuration)
		}
	}
	next := int64(0)
	lastReady := q.WindowEnd + q.AllowedLateness
	largest := int64(0)
	for i, b := range batches {
		if b.Index != i {
			v.add("query %s: batch %d in start order has index %d", name, i, b.Index)
		}
		if b.Inputs != 0 {
			v.add("query %s: batch %d has inputs %d, want 0", name, i, b.Inputs)
		}
		if b.FromTuple != next {
			v.add("query %s: batch %d covers [%d, %d), want it to start at tuple %d", name, i, b.FromTuple, b.ToTuple, next)
		}
		size := b.ToTuple - b.FromTuple
		largest = max(largest, size)
		switch {
		case improved && i < k-1 && (size <= 0 || size > qp.BatchSize || size%max(q.Granularity, 1) != 0):
			// A reshaped plan's batches differ in size: whole units, none
			// larger than the summary's batch size.
			v.add("query %s: batch %d of %d has %d tuples, want whole units of %d up to the batch size %d", name, i, k, size, q.Granularity, qp.BatchSize)
		case !improved && i < k-1 && size != qp.BatchSize:
			v.add("query %s: batch %d of %d has %d tuples, want the batch size %d", name, i, k, size, qp.BatchSize)
		case i == k-1 && (size <= 0 || size > qp.BatchSize):
			v.add("query %s: last batch %d has %d tuples, want 1..%d", name, i, size, qp.BatchSize)
		}
		next = b.ToTuple
		if arrived := arr.inverse(float64(b.ToTuple)); !leq(arrived, b.Ready) {
			v.add("query %s: batch %d is ready at %g, before its last tuple %d arrives at %g", name, i, b.Ready, b.ToTuple, arrived)
		}
		if i == k-1 && !leq(lastReady, b.Ready) {
			v.add("query %s: last batch %d is ready at %g, before windowEnd+allowedLateness %g", name, i, b.Ready, lastReady)
		}
		if want := q.Cost.BatchSeconds(b.Nodes, size); !near(b.End-b.Start, want) {
			v.add("query %s: batch %d of %d tuples on %d nodes takes %g s, cost model says %g s", name, i, size, b.Nodes, b.End-b.Start, want)
		}
	}

	if unit := max(q.Granularity, 1); improved && (largest > qp.BatchSize || qp.BatchSize-largest >= unit) {
		v.add("query %s: the summary's batch size %d of a reshaped plan is not its largest batch, %d tuples, in whole units of %d", name, qp.BatchSize, largest, unit)
	}

	// Merges.
	final, ok := checkMerges(v, q, batches, merges, n)

	// Deadline and summary.
	if ok {
		if !leq(final.End, q.Deadline) {
			v.add("query %s: final merge ends at %g, after the deadline %g", name, final.End, q.Deadline)
		}
		// The tail headroom: a plan keeps the query's tail margin (or, made
		// without it, none) of its last batch and final merge spare.
		last := batches[k-1]
		tail := (last.End - last.Start) + (final.End - final.Start)
		switch {
		case qp.TailMargin != 0 && qp.TailMargin != q.TailMargin:
			v.add("query %s: the plan keeps a tail margin of %g, the query asks for %g", name, qp.TailMargin, q.TailMargin)
		case !leq(final.End, q.Deadline-qp.TailMargin*tail):
			v.add("query %s: final merge ends at %g, within the tail headroom %g×%g s before the deadline %g", name, final.End, qp.TailMargin, tail, q.Deadline)
		}
		if !near(qp.Finish, final.End) {
			v.add("query %s: summary finish %g, final merge ends at %g", name, qp.Finish, final.End)
		}
	}
	if !near(qp.Deadline, q.Deadline) {
		v.add("query %s: summary deadline %g, workload deadline %g", name, qp.Deadline, q.Deadline)
	}
	if !near(qp.Slack, q.Deadline-qp.Finish) {
		v.add("query %s: summary slack %g, deadline-finish = %g", name, qp.Slack, q.Deadline-qp.Finish)
	}
}

// checkMerges checks a query's partial and final merges against section 6 and
// returns its final merge.
func checkMerges(v *violations, q Query, batches, merges []Step, n int64) (Step, bool) {
	b := len(batches)
	// c = ceil(φ·B); accept the value with or without an epsilon that guards
	// the ceiling against round-off.
	var cs []int
	if q.PartialEvery > 0 {
		x := q.PartialEvery * float64(b)
		c1 := max(1, int(math.Ceil(x)))
		c2 := max(1, int(math.Ceil(x-1e-9)))
		cs = append(cs, c1)
		if c2 != c1 {
			cs = append(cs, c2)
		}
	} else {
		cs = []int{0}
	}
	var first []string
	for _, c := range cs {
		var vc violations
		final, ok := checkMergesWith(&vc, q, batches, merges, n, c)
		if len(vc.list) == 0 {
			return final, ok
		}
		if first == nil {
			first = vc.result()
		}
	}
	for _, s := range first {
		v.add("%s", s)
	}
	var final Step
	finals := 0
	for _, m := range merges {
		if m.Kind == StepFinal {
			final = m
			finals++
		}
	}
	return final, finals == 1
}

// checkMergesWith checks the merges for partial merges of c batches (c = 0:
// no partial aggregation).
func checkMergesWith(v *violations, q Query, batches, merges []Step, n int64, c int) (Step, bool) {
	name := q.Name
	b := len(batches)
	type want struct {
		kind     StepKind
		index    int
		inputs   int
		from, to int64
		after    int // 1-based count of the last batch it merges
	}
	var wants []want
	partials := 0
	if c > 0 {
		for j := 1; j < b; j++ {
			if j%c == 0 {
				wants = append(wants, want{StepPartial, partials, c, batches[j-c].FromTuple, batches[j-1].ToTuple, j})
				partials++
			}
		}
	}
	wants = append(wants, want{StepFinal, partials, partials + b - partials*c, 0, n, b})
	if len(merges) != len(wants) {
		v.add("query %s: %d merge steps, want %d partials (every %d of %d batches) and one final", name, len(merges), partials, c, b)
	}
	var final Step
	ok := false
	for i, m := range merges {
		if i >= len(wants) {
			v.add("query %s: extra merge %s", name, stepName(m))
			continue
		}
		wt := wants[i]
		if m.Kind != wt.kind || m.Index != wt.index {
			v.add("query %s: merge %d in start order is %s#%d, want %s#%d", name, i, m.Kind, m.Index, wt.kind, wt.index)
		}
		if m.Inputs != wt.inputs {
			v.add("query %s: %s merges %d inputs, want %d", name, stepName(m), m.Inputs, wt.inputs)
		}
		if m.FromTuple != wt.from || m.ToTuple != wt.to {
			v.add("query %s: %s covers [%d, %d), want [%d, %d)", name, stepName(m), m.FromTuple, m.ToTuple, wt.from, wt.to)
		}
		if want := q.Cost.MergeSeconds(m.Nodes, m.Inputs); !near(m.End-m.Start, want) {
			v.add("query %s: %s of %d inputs on %d nodes takes %g s, cost model says %g s", name, stepName(m), m.Inputs, m.Nodes, m.End-m.Start, want)
		}
		mergedEnd := batches[wt.after-1].End
		if !leq(mergedEnd, m.Start) {
			v.add("query %s: %s starts at %g, before batch %d it merges ends at %g", name, stepName(m), m.Start, wt.after-1, mergedEnd)
		}
		if wt.kind == StepPartial && !near(m.Start, mergedEnd) {
			v.add("query %s: %s starts at %g, not at the end %g of batch %d it follows", name, stepName(m), m.Start, mergedEnd, wt.after-1)
		}
		if wt.kind == StepFinal {
			final, ok = m, m.Kind == StepFinal
			for _, p := range merges[:i] {
				if !leq(p.End, m.Start) {
					v.add("query %s: final merge starts at %g, before %s ends at %g", name, m.Start, stepName(p), p.End)
				}
			}
		}
	}
	return final, ok
}

// levelAt is the level of timeline ls at t: that of the last point at or
// before t, 0 before the first point.
func levelAt(ls []NodeLevel, t float64) int {
	level := 0
	for _, p := range ls {
		if p.At > t {
			break
		}
		level = p.Nodes
	}
	return level
}

// maxLevel is the highest level of ls over [a, b].
func maxLevel(ls []NodeLevel, a, b float64) int {
	level := levelAt(ls, a)
	for _, p := range ls {
		if p.At > a && p.At <= b {
			level = max(level, p.Nodes)
		}
	}
	return level
}

// minLevel is the lowest level of ls over [a, b].
func minLevel(ls []NodeLevel, a, b float64) int {
	level := levelAt(ls, a)
	for _, p := range ls {
		if p.At > a && p.At <= b {
			level = min(level, p.Nodes)
		}
	}
	return level
}

// checkTimelineShape checks that ls starts at 0, is strictly ascending, has
// no negative level and no point after the horizon end.
func checkTimelineShape(v *violations, what string, ls []NodeLevel, horizon float64) {
	if len(ls) == 0 {
		v.add("%s timeline is empty", what)
		return
	}
	if ls[0].At != 0 {
		v.add("%s timeline starts at %g, not 0", what, ls[0].At)
	}
	for i, p := range ls {
		if !finite(p.At) {
			v.add("%s point %d at non-finite time %g", what, i, p.At)
		}
		if p.Nodes < 0 {
			v.add("%s point %d at %g has negative level %d", what, i, p.At, p.Nodes)
		}
		if i > 0 && !(p.At > ls[i-1].At) {
			v.add("%s timeline not strictly ascending: point %d at %g after point %d at %g", what, i, p.At, i-1, ls[i-1].At)
		}
		if !leq(p.At, horizon) {
			v.add("%s point %d at %g is after the horizon end %g", what, i, p.At, horizon)
		}
	}
}

// checkNodeTimeline checks d.Nodes: its shape, that it holds enough nodes for
// every step, and that it ends at the horizon with the idle level.
func checkNodeTimeline(v *violations, w Workload, d Document, horizon float64) {
	checkTimelineShape(v, "nodes", d.Nodes, horizon)
	if len(d.Nodes) == 0 {
		return
	}
	last := d.Nodes[len(d.Nodes)-1]
	if !near(last.At, horizon) || last.Nodes != w.Pool.IdleNodes {
		v.add("nodes timeline ends with %d nodes at %g, want idleNodes %d at the horizon end %g", last.Nodes, last.At, w.Pool.IdleNodes, horizon)
	}
	for _, s := range d.Steps {
		// Allow the timeline to move by round-off at the step's edges; a
		// step too short to tell its edges apart (a merge of negligible
		// cost) may take its nodes from either side of its instant.
		edge := tol(s.Start, s.End)
		if s.End-s.Start <= 2*edge && levelAt(d.Nodes, s.Start) == w.Pool.IdleNodes {
			// A step that takes no time (a cost model of zeros) holds no
			// node for any time: the timeline may stay idle through it.
			continue
		}
		low := minLevel(d.Nodes, s.Start+edge, s.End-edge)
		if s.End-s.Start <= 2*edge {
			// Either side of its instant, or the level the timeline takes
			// at the instant itself before it moves on (a rise and a fall
			// at one time are two points with the same At).
			low = max(levelAt(d.Nodes, s.Start-edge), levelAt(d.Nodes, s.Start))
			for _, l := range d.Nodes {
				if l.At >= s.Start-edge && l.At <= s.End+edge {
					low = max(low, l.Nodes)
				}
			}
		}
		if low < s.Nodes {
			v.add("nodes timeline drops to %d during %s [%g, %g] on %d nodes", low, stepName(s), s.Start, s.End, s.Nodes)
		}
	}
	// The nodes of the steps running at any instant fit the timeline (with
	// one lane, the step's own nodes: the check above); chosen.maxNodes is
	// the most they ever hold together.
	maxNodes := 0
	for _, s := range d.Steps {
		maxNodes = max(maxNodes, runningNodes(d, s.Start), s.Nodes)
		if s.End-s.Start <= 2*tol(s.Start, s.End) {
			continue
		}
		// Inside the step, clear of round-off at the edges of the others.
		at := s.Start + tol(s.Start, s.End)
		if running, level := runningNodes(d, at), levelAt(d.Nodes, at); level < running {
			v.add("the steps running at %g hold %d nodes, the nodes timeline %d", at, running, level)
		}
	}
	if d.Chosen.MaxNodes != maxNodes {
		v.add("chosen.maxNodes %d, steps use up to %d nodes at once", d.Chosen.MaxNodes, maxNodes)
	}
}

// checkRequests checks the executable timeline: its shape, and that for every
// t in [0, H] the requested level covers the instantaneous level over
// [t, t+lead] (clipped to H), so every increase is requested lead seconds
// ahead (at 0 when that is before the origin) and no decrease is requested
// before the nodes are no longer needed.
func checkRequests(v *violations, w Workload, d Document, horizon float64) {
	checkTimelineShape(v, "requests", d.Requests, horizon)
	if len(d.Requests) == 0 || len(d.Nodes) == 0 {
		return
	}
	lead := w.Pool.ProvisioningLeadTime
	eps := tol(horizon, 0)
	crit := []float64{0, horizon}
	for _, p := range d.Nodes {
		crit = append(crit, p.At, p.At-lead)
	}
	for _, p := range d.Requests {
		crit = append(crit, p.At-eps, p.At+eps)
	}
	var ts []float64
	for _, t := range crit {
		if t >= 0 && t <= horizon {
			ts = append(ts, t)
		}
	}
	sort.Float64s(ts)
	ts = slices.Compact(ts)
	probes := slices.Clone(ts)
	for i := 1; i < len(ts); i++ {
		probes = append(probes, (ts[i-1]+ts[i])/2)
	}
	sort.Float64s(probes)
	reported := 0
	for _, t := range probes {
		need := maxLevel(d.Nodes, t, math.Min(t+lead, horizon))
		// A request may be off by round-off in time either way.
		have := maxLevel(d.Requests, t-eps, t+eps)
		if have < need && reported < 3 {
			reported++
			v.add("requests hold %d nodes at %g, but the nodes timeline needs %d within the lead time %g (by %g)", have, t, need, lead, math.Min(t+lead, horizon))
		}
	}
}

// timelineCost bills timeline ls over [0, horizon] by the billing rule:
// every increase acquires nodes, every decrease releases the most recently
// acquired ones first, and each acquired node costs
// price/3600*max(heldSeconds, billingMinimum); nodes still held at the
// horizon end are released then. Points after the horizon are ignored.
func timelineCost(ls []NodeLevel, horizon, pricePerNodeHour, billingMinimum float64) float64 {
	type lot struct {
		at float64
		n  int
	}
	var held []lot
	total := 0.0
	release := func(n int, at float64) {
		for n > 0 && len(held) > 0 {
			top := &held[len(held)-1]
			k := min(n, top.n)
			total += float64(k) * pricePerNodeHour / 3600 * math.Max(at-top.at, billingMinimum)
			top.n -= k
			n -= k
			if top.n == 0 {
				held = held[:len(held)-1]
			}
		}
	}
	level := 0
	for _, p := range ls {
		if p.At > horizon+tol(p.At, horizon) {
			break
		}
		at := math.Min(p.At, horizon)
		switch {
		case p.Nodes > level:
			held = append(held, lot{at, p.Nodes - level})
		case p.Nodes < level:
			release(level-p.Nodes, at)
		}
		level = p.Nodes
	}
	release(level, horizon)
	return total
}

func nearCost(a, b float64) bool { return math.Abs(a-b) <= 1e-6+1e-6*math.Abs(b) }

func checkCosts(v *violations, w Workload, d Document, horizon float64) {
	price, minimum := w.Pool.PricePerNodeHour, w.Pool.BillingMinimum
	// The timelines are those of the steps: anyone can price a plan's steps
	// as the planner does.
	if diff := cmp.Diff(NodeTimeline(d.Steps, w.Pool), d.Nodes); diff != "" {
		v.add("nodes timeline is not NodeTimeline of the steps (-steps +nodes):\n%s", diff)
	}
	if diff := cmp.Diff(RequestTimeline(d.Nodes, w.Pool), d.Requests); diff != "" {
		v.add("requests timeline is not RequestTimeline of the nodes (-want +requests):\n%s", diff)
	}
	if want := timelineCost(d.Nodes, horizon, price, minimum); !nearCost(d.Chosen.Cost, want) {
		v.add("chosen.cost %.9g, the nodes timeline bills %.9g", d.Chosen.Cost, want)
	}
	if want := timelineCost(d.Requests, horizon, price, minimum); !nearCost(d.Chosen.ExecutableCost, want) {
		v.add("chosen.executableCost %.9g, the requests timeline bills %.9g", d.Chosen.ExecutableCost, want)
	}
}

// checkGridShape checks that d.Candidates is the sizes × factors grid in size
// then factor order.
func checkGridShape(v *violations, w Workload, d Document) {
	sizes, factors := w.Pool.Sizes, w.Planning.BatchSizeFactors
	if len(d.Candidates) != len(sizes)*len(factors) {
		v.add("%d candidates, want %d sizes × %d factors", len(d.Candidates), len(sizes), len(factors))
		return
	}
	for i, s := range sizes {
		for j, f := range factors {
			c := d.Candidates[i*len(factors)+j]
			if c.InitialNodes != s || c.BatchSizeFactor != f {
				v.add("candidate %d is (%d nodes, %dX), want (%d nodes, %dX) in size then factor order", i*len(factors)+j, c.InitialNodes, c.BatchSizeFactor, s, f)
			}
		}
	}
}

func checkGrid(v *violations, w Workload, d Document) {
	checkGridShape(v, w, d)
	ch := d.Chosen
	chFirst, chSecond := w.Planning.Objective.ranked(ch.Cost, ch.ExecutableCost)
	found := false
	for _, c := range d.Candidates {
		if !ch.Improved && c.InitialNodes == ch.InitialNodes && c.BatchSizeFactor == ch.BatchSizeFactor {
			found = true
			if !c.Feasible || !nearCost(c.Cost, ch.Cost) || !nearCost(c.ExecutableCost, ch.ExecutableCost) || c.MaxNodes != ch.MaxNodes {
				v.add("chosen (%d nodes, %dX, cost %g, executable %g, max %d) differs from its candidate %+v", ch.InitialNodes, ch.BatchSizeFactor, ch.Cost, ch.ExecutableCost, ch.MaxNodes, c)
			}
		}
		if !c.Feasible {
			continue
		}
		first, second := w.Planning.Objective.ranked(c.Cost, c.ExecutableCost)
		if first < chFirst-1e-9-1e-12*math.Abs(chFirst) {
			v.add("candidate %+v is feasible and cheaper by the objective %s than the chosen (%g)", c, w.Planning.Objective, chFirst)
		}
		// Ties go to the other cost, then fewer max nodes, then the smaller
		// factor.
		if !ch.Improved && first == chFirst && (second < chSecond || second == chSecond && (c.MaxNodes < ch.MaxNodes || c.MaxNodes == ch.MaxNodes && c.BatchSizeFactor < ch.BatchSizeFactor)) {
			v.add("candidate %+v ties with the chosen (%d nodes, %dX, max %d) and wins the tie-break", c, ch.InitialNodes, ch.BatchSizeFactor, ch.MaxNodes)
		}
	}
	if !found && !ch.Improved {
		v.add("chosen (%d nodes, %dX) is not among the candidates", ch.InitialNodes, ch.BatchSizeFactor)
	}
	if ch.Improved && w.Planning.GridOnly {
		v.add("chosen is reshaped beyond the grid although the planning is grid only")
	}
}

// checkInfeasible checks an infeasible document: no candidate is feasible,
// and the failure names a query of the workload that is late.
func checkInfeasible(w Workload, d Document) []string {
	var v violations
	if d.Chosen.Feasible {
		v.add("checkInfeasible needs an infeasible plan: chosen.feasible is true")
		return v.result()
	}
	f := d.Chosen.Failure
	if f == nil {
		v.add("infeasible plan without chosen.failure")
	} else {
		known := false
		for _, q := range w.Queries {
			known = known || q.Name == f.Query
		}
		if !known {
			v.add("failure names %q, not a query of the workload", f.Query)
		}
		if !(f.LateSeconds > 0) || !finite(f.LateSeconds) {
			v.add("failure of query %q is late by %g seconds, want a positive number", f.Query, f.LateSeconds)
		}
	}
	checkGridShape(&v, w, d)
	for _, c := range d.Candidates {
		if c.Feasible {
			v.add("chosen is infeasible but candidate %+v is feasible", c)
		}
	}
	if d.MaxSupportedRateFactor != 0 {
		v.add("maxSupportedRateFactor %g of an infeasible plan, want 0", d.MaxSupportedRateFactor)
	}
	for _, s := range checkDeterminism(w, d) {
		v.add("%s", s)
	}
	return v.result()
}

// Plan limits for guardedPlan: a plan of the test workloads takes
// milliseconds and a few megabytes.
const (
	planTimeLimit = 30 * time.Second
	planHeapLimit = 1 << 30
)

// guardedPlan is Plan under a watchdog: a planner that loops or allocates
// without bound would otherwise hang the test or exhaust the machine's
// memory before it could report the workload. The watchdog prints the
// workload as a Go literal and every goroutine's stack, and exits the test
// binary: a runaway Plan goroutine cannot be stopped, so neither rapid's
// shrinking nor any later test could run safely (the fuzzing engine records
// the input as a crasher).
func guardedPlan(w Workload) (Document, error) {
	type result struct {
		d   Document
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := Plan(w)
		done <- result{d, err}
	}()
	deadline := time.NewTimer(planTimeLimit)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	for {
		select {
		case r := <-done:
			return r.d, r.err
		case <-deadline.C:
			planRunaway(w, fmt.Sprintf("Plan did not return within %v", planTimeLimit))
		case <-tick.C:
			metrics.Read(sample)
			if heap := sample[0].Value.Uint64(); heap > planHeapLimit {
				planRunaway(w, fmt.Sprintf("Plan holds %d MB of heap", heap>>20))
			}
		}
	}
}

func planRunaway(w Workload, why string) {
	stack := make([]byte, 1<<16)
	stack = stack[:runtime.Stack(stack, true)]
	fmt.Fprintf(os.Stderr, "FAIL: %s on workload:\n%s\ngoroutines:\n%s\n", why, workloadLiteral(w), stack)
	os.Exit(2)
}

// checkDeterminism plans w again and compares the JSON of both documents,
// with searchSeconds (measured by the caller) zeroed.
func checkDeterminism(w Workload, d Document) []string {
	again, err := guardedPlan(w)
	if err != nil {
		return []string{fmt.Sprintf("planning the same workload again fails: %v", err)}
	}
	d.SearchSeconds, again.SearchSeconds = 0, 0
	a, err := json.Marshal(d)
	if err != nil {
		return []string{fmt.Sprintf("document does not marshal to JSON: %v", err)}
	}
	b, err := json.Marshal(again)
	if err != nil {
		return []string{fmt.Sprintf("second document does not marshal to JSON: %v", err)}
	}
	if bytes.Equal(a, b) {
		return nil
	}
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-60)
	return []string{fmt.Sprintf("planning the same workload twice differs at byte %d: %q… vs %q…",
		i, a[from:min(len(a), i+60)], b[from:min(len(b), i+60)])}
}

// workloadLiteral prints w as a Go literal that reproduces it exactly, for
// reporting counterexamples.
func workloadLiteral(w Workload) string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	ints := func(xs []int) string {
		var s []string
		for _, x := range xs {
			s = append(s, strconv.Itoa(x))
		}
		return "[]int{" + strings.Join(s, ", ") + "}"
	}
	linear := func(l costmodel.Linear) string {
		return fmt.Sprintf("costmodel.Linear{Overhead: %s, Serial: %s, Parallel: %s}", f(l.Overhead), f(l.Serial), f(l.Parallel))
	}
	policy := fmt.Sprintf("Policy(%q)", w.Planning.Policy)
	switch w.Planning.Policy {
	case LeastLaxity:
		policy = "LeastLaxity"
	case EarliestDeadline:
		policy = "EarliestDeadline"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Workload{\n\tName:   %q,\n\tOrigin: time.Date(%d, %d, %d, %d, %d, %d, %d, time.UTC),\n",
		w.Name, w.Origin.Year(), w.Origin.Month(), w.Origin.Day(), w.Origin.Hour(), w.Origin.Minute(), w.Origin.Second(), w.Origin.Nanosecond())
	p := w.Pool
	fmt.Fprintf(&b, "\tPool: Pool{Sizes: %s, IdleNodes: %d, PricePerNodeHour: %s, BillingMinimum: %s, ProvisioningLeadTime: %s, ReleaseAfterIdle: %s},\n",
		ints(p.Sizes), p.IdleNodes, f(p.PricePerNodeHour), f(p.BillingMinimum), f(p.ProvisioningLeadTime), f(p.ReleaseAfterIdle))
	pl := w.Planning
	fmt.Fprintf(&b, "\tPlanning: Planning{BatchSizeFactors: %s, BacktrackStep: %d, MaxBatchDuration: %s, Policy: %s, Sharing: %t, Slices: %t, Concurrent: %t},\n",
		ints(pl.BatchSizeFactors), pl.BacktrackStep, f(pl.MaxBatchDuration), policy, pl.Sharing, pl.Slices, pl.Concurrent)
	if len(w.Streams) > 0 {
		b.WriteString("\tStreams: []Stream{\n")
		for _, st := range w.Streams {
			fmt.Fprintf(&b, "\t\t{Name: %q, Scan: %s},\n", st.Name, linear(st.Scan))
		}
		b.WriteString("\t},\n")
	}
	b.WriteString("\tQueries: []Query{\n")
	for _, q := range w.Queries {
		var rates []string
		for _, r := range q.Rates {
			rates = append(rates, fmt.Sprintf("{Offset: %s, TuplesPerSecond: %s}", f(r.Offset), f(r.TuplesPerSecond)))
		}
		fmt.Fprintf(&b, "\t\t{Name: %q, WindowStart: %s, WindowEnd: %s, Deadline: %s,\n", q.Name, f(q.WindowStart), f(q.WindowEnd), f(q.Deadline))
		fmt.Fprintf(&b, "\t\t\tRates:       []RateSegment{%s},\n", strings.Join(rates, ", "))
		fmt.Fprintf(&b, "\t\t\tGranularity: %d, AllowedLateness: %s, PartialEvery: %s, Margin: %s, Stream: %q, ReadFrom: %s, Carried: %d,\n",
			q.Granularity, f(q.AllowedLateness), f(q.PartialEvery), f(q.Margin), q.Stream, f(q.ReadFrom), q.Carried)
		fmt.Fprintf(&b, "\t\t\tCost: costmodel.Model{\n\t\t\t\tBatch: %s,\n\t\t\t\tMerge: %s}},\n", linear(q.Cost.Batch), linear(q.Cost.Merge))
	}
	b.WriteString("\t},\n}")
	return b.String()
}

// mutationWorkload is a feasible two-query workload with partial merges, a
// piecewise rate, allowed lateness and a provisioning lead time, in whole
// seconds so that its plan is exact.
func mutationWorkload() Workload {
	cost := costmodel.Model{
		Batch: costmodel.Linear{Overhead: 25, Serial: 2e-8, Parallel: 2e-5},
		Merge: costmodel.Linear{Overhead: 8, Serial: 0.05, Parallel: 0.4},
	}
	return Workload{
		Name:   "mutations",
		Origin: testOrigin,
		Pool: Pool{Sizes: []int{2, 4, 10}, IdleNodes: 1, PricePerNodeHour: 0.25, BillingMinimum: 60,
			ProvisioningLeadTime: 120, ReleaseAfterIdle: 240},
		Planning: Planning{BatchSizeFactors: []int{1, 2, 4}, BacktrackStep: 1, MaxBatchDuration: 600, Policy: LeastLaxity},
		Queries: []Query{
			{Name: "q1", WindowStart: 0, WindowEnd: 3600, Deadline: 4000,
				Rates: []RateSegment{{Offset: 0, TuplesPerSecond: 95000}}, Granularity: 9500,
				Cost: cost, PartialEvery: 0.25},
			{Name: "q2", WindowStart: 600, WindowEnd: 2400, Deadline: 2700,
				Rates:       []RateSegment{{Offset: 0, TuplesPerSecond: 5000}, {Offset: 600, TuplesPerSecond: 20000}},
				Granularity: 1000, AllowedLateness: 30, Cost: cost},
		},
	}
}

// TestCheckInvariantsCatchesMutations checks the checker: a correct plan
// passes, and each small corruption of it is reported.
func TestCheckInvariantsCatchesMutations(t *testing.T) {
	w := mutationWorkload()
	d, err := guardedPlan(w)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Chosen.Feasible {
		t.Fatalf("the mutation workload is infeasible: %+v", d.Chosen.Failure)
	}
	if errs := checkInvariants(w, d); len(errs) > 0 {
		t.Fatalf("the unmutated plan violates:\n- %s", strings.Join(errs, "\n- "))
	}
	var partials int
	for _, s := range d.Steps {
		if s.Kind == StepPartial {
			partials++
		}
	}
	if partials == 0 || len(d.Nodes) < 3 {
		t.Fatalf("the mutation workload should exercise partial merges and scaling: %d partials, nodes %v", partials, d.Nodes)
	}
	if testing.Verbose() {
		t.Logf("nodes %v\nrequests %v", d.Nodes, d.Requests)
	}
	// index finds the i-th step (0-based) of a kind.
	index := func(d *Document, kind StepKind, i int) int {
		for j, s := range d.Steps {
			if s.Kind == kind {
				if i == 0 {
					return j
				}
				i--
			}
		}
		t.Fatalf("no %s step %d", kind, i)
		return -1
	}
	mutations := []struct {
		name   string
		mutate func(d *Document)
	}{
		{"batch starts before ready", func(d *Document) {
			i := index(d, StepBatch, 0)
			d.Steps[i].Start--
			d.Steps[i].End--
		}},
		{"batch ready before its tuples", func(d *Document) {
			i := index(d, StepBatch, 1)
			d.Steps[i].Ready -= 10
			d.Steps[i].Start -= 10
			d.Steps[i].End -= 10
		}},
		{"batch duration", func(d *Document) { d.Steps[index(d, StepBatch, 2)].End += 0.5 }},
		{"merge duration", func(d *Document) { d.Steps[index(d, StepFinal, 0)].End -= 0.5 }},
		{"nodes not a size", func(d *Document) { d.Steps[index(d, StepBatch, 0)].Nodes = 3 }},
		{"tuple gap", func(d *Document) { d.Steps[index(d, StepBatch, 1)].FromTuple++ }},
		{"batch index", func(d *Document) { d.Steps[index(d, StepBatch, 1)].Index = 7 }},
		{"partial inputs", func(d *Document) { d.Steps[index(d, StepPartial, 0)].Inputs++ }},
		{"partial moved later", func(d *Document) {
			i := index(d, StepPartial, 0)
			d.Steps[i].Start += 0.1
			d.Steps[i].End += 0.1
		}},
		{"final dropped", func(d *Document) { d.Steps = slices.Delete(d.Steps, index(d, StepFinal, 0), index(d, StepFinal, 0)+1) }},
		{"final range", func(d *Document) { d.Steps[index(d, StepFinal, 0)].ToTuple-- }},
		{"overlap", func(d *Document) {
			i := index(d, StepBatch, 3)
			d.Steps[i].End += 1000
		}},
		{"summary batches", func(d *Document) { d.Queries[0].Batches++ }},
		{"summary batch size", func(d *Document) { d.Queries[1].BatchSize += 1000 }},
		{"summary finish", func(d *Document) { d.Queries[0].Finish++ }},
		{"summary slack", func(d *Document) { d.Queries[1].Slack++ }},
		{"deadline missed", func(d *Document) {
			i := index(d, StepFinal, 0)
			q := d.Steps[i].Query
			for j := range d.Queries {
				if d.Queries[j].Name == q {
					shift := d.Queries[j].Slack + 1
					d.Steps[i].Start += shift
					d.Steps[i].End += shift
					d.Queries[j].Finish += shift
					d.Queries[j].Slack -= shift
				}
			}
		}},
		{"cost", func(d *Document) { d.Chosen.Cost += 1e-3 }},
		{"executable cost", func(d *Document) { d.Chosen.ExecutableCost -= 1e-3 }},
		{"max nodes", func(d *Document) { d.Chosen.MaxNodes++ }},
		{"nodes timeline too low", func(d *Document) {
			for i := range d.Nodes {
				d.Nodes[i].Nodes = min(d.Nodes[i].Nodes, 1)
			}
		}},
		{"nodes timeline not idle at the end", func(d *Document) { d.Nodes[len(d.Nodes)-1].Nodes++ }},
		{"nodes timeline past the horizon", func(d *Document) {
			d.Nodes = append(d.Nodes, NodeLevel{At: d.Nodes[len(d.Nodes)-1].At + 10, Nodes: w.Pool.IdleNodes})
		}},
		{"requests without lead", func(d *Document) { d.Requests = slices.Clone(d.Nodes) }},
		{"request released early", func(d *Document) {
			for i := 1; i < len(d.Requests); i++ {
				if d.Requests[i].Nodes < d.Requests[i-1].Nodes {
					d.Requests[i].At -= 50
					return
				}
			}
		}},
		{"grid missing a cell", func(d *Document) { d.Candidates = d.Candidates[1:] }},
		{"cheaper feasible candidate", func(d *Document) {
			for i := range d.Candidates {
				c := &d.Candidates[i]
				if c.InitialNodes != d.Chosen.InitialNodes || c.BatchSizeFactor != d.Chosen.BatchSizeFactor {
					c.Feasible, c.Cost = true, d.Chosen.Cost/2
					return
				}
			}
		}},
		{"chosen differs from its candidate", func(d *Document) {
			for i := range d.Candidates {
				c := &d.Candidates[i]
				if c.InitialNodes == d.Chosen.InitialNodes && c.BatchSizeFactor == d.Chosen.BatchSizeFactor {
					c.MaxNodes++
				}
			}
		}},
		{"rate factor", func(d *Document) { d.MaxSupportedRateFactor = 0.5 }},
		{"not deterministic", func(d *Document) { d.Requests[0].At = 0.000001 }},
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			var c Document
			b, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			m.mutate(&c)
			if errs := checkInvariants(w, c); len(errs) == 0 {
				t.Errorf("mutation %q goes unreported", m.name)
			} else {
				t.Logf("reported: %s", errs[0])
			}
		})
	}
}
