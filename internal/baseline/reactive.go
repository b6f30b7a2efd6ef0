package baseline

import (
	"math"

	"github.com/laxity-dev/laxity/internal/planner"
)

// The reactive autoscaler's rule. The paper's experiments ran EMR's auto
// scaling on YARN memory; the thresholds follow EMR's default rules, with the
// busy fraction of the pool standing in for YARN memory in use and the queued
// work for pending containers.
const (
	// ControlInterval is how often the autoscaler looks, in seconds: EMR
	// evaluates its scaling metrics once a minute.
	ControlInterval = 60.0
	// ScaleOutUtilisation is the least busy fraction of the last interval
	// for growing: EMR's default scale-out rule fires below 15% YARN memory
	// available.
	ScaleOutUtilisation = 0.85
	// ScaleOutBacklog is the queued work, in modelled seconds on the ready
	// nodes, above which a busy pool grows: more than it can clear before
	// the next look.
	ScaleOutBacklog = ControlInterval
	// ScaleInUtilisation is the busy fraction below which, with nothing
	// queued, the pool may shrink: EMR's default scale-in rule fires above
	// 75% YARN memory available.
	ScaleInUtilisation = 0.25
	// ScaleInCooldown is how long, in seconds, every look must have seen
	// the pool that idle before it shrinks one size, and again before the
	// next: EMR's default five-minute evaluation period and cool-down.
	ScaleInCooldown = 300.0
)

// reactive is the reactive-autoscaler baseline: laxity's batches on a pool
// grown and shrunk by an EMR-style rule that knows nothing of deadlines.
//
// The pool starts at the smallest size. Every ControlInterval seconds from
// the origin the autoscaler measures the busy fraction of the last interval
// and the backlog: the modelled seconds, on the ready nodes, of the batches
// (with their merges) that have arrived but not started. When the pool was
// at least ScaleOutUtilisation busy and the backlog exceeds
// ScaleOutBacklog, it requests the next larger size, which arrives
// ProvisioningLeadTime later; it makes no other change while nodes are on
// their way. When every look for ScaleInCooldown seconds has seen the pool
// less than ScaleInUtilisation busy with no backlog, it shrinks one size,
// provided no step is running (EMR decommissions gracefully), and the
// cool-down starts again. It never leaves the pool's sizes.
//
// The work is the elastic plan's own batches: the batch size its chosen
// factor gives each query, with the partial and final merges that follow
// each batch, so that only the scaling differs from laxity's. Whenever the
// pool is free, the ready batch with the least slack runs on the ready
// nodes (slack: the deadline, less now, less the query's remaining batches
// and merges on those nodes); ties go to the query listed first. Nodes are
// billed from their request, as laxity's executable timeline is, until
// released or the last step ends.
func reactive(w planner.Workload, plan planner.Document) Result {
	sizes := w.Pool.Sizes
	jobs := jobsOf(w.Queries, plan.Steps)
	next := make([]int, len(w.Queries))
	var steps []planner.Step
	var busy []interval
	timeline := []planner.NodeLevel{{At: 0, Nodes: sizes[0]}}
	// ready and requested are size indexes; requested > ready while nodes
	// are on their way, arriving at arrives.
	ready, requested := 0, 0
	arrives := math.Inf(1)
	lowSince, low := 0.0, false
	busyUntil := 0.0
	ticks := 0
	now := 0.0

	arrive := func() {
		if arrives <= now+eps {
			ready, arrives = requested, math.Inf(1)
		}
	}
	backlog := func() float64 {
		seconds := 0.0
		for q := range jobs {
			for j := next[q]; j < len(jobs[q]) && jobs[q][j].ready <= now+eps; j++ {
				seconds += jobs[q][j].seconds(w.Queries[q], sizes[ready])
			}
		}
		return seconds
	}
	control := func() {
		utilisation := busyFraction(busy, now-ControlInterval, now)
		queued := backlog()
		switch {
		case requested > ready:
			// One scaling activity at a time.
		case utilisation >= ScaleOutUtilisation && queued > ScaleOutBacklog:
			low = false
			if requested+1 < len(sizes) {
				requested++
				arrives = now + w.Pool.ProvisioningLeadTime
				timeline = append(timeline, planner.NodeLevel{At: now, Nodes: sizes[requested]})
			}
		case utilisation < ScaleInUtilisation && queued == 0:
			if !low {
				low, lowSince = true, now
			}
			if now-lowSince >= ScaleInCooldown-eps && ready > 0 && busyUntil <= now+eps {
				ready--
				requested = ready
				timeline = append(timeline, planner.NodeLevel{At: now, Nodes: sizes[ready]})
				lowSince = now
			}
		default:
			low = false
		}
	}

	for open := len(w.Queries); open > 0; {
		arrive()
		if tick := float64(ticks) * ControlInterval; tick <= now+eps {
			control()
			ticks++
			arrive()
		}
		wake := math.Min(float64(ticks)*ControlInterval, arrives)
		if busyUntil <= now+eps {
			if q := leastSlackReady(w.Queries, jobs, next, now, sizes[ready]); q >= 0 {
				placed := jobs[q][next[q]].place(w.Queries[q], now, sizes[ready])
				steps = append(steps, placed...)
				busyUntil = placed[len(placed)-1].End
				busy = append(busy, interval{now, busyUntil})
				if next[q]++; next[q] == len(jobs[q]) {
					open--
				}
				continue
			}
			for q := range jobs {
				if next[q] < len(jobs[q]) {
					wake = math.Min(wake, jobs[q][next[q]].ready)
				}
			}
		} else {
			wake = math.Min(wake, busyUntil)
		}
		now = wake
	}
	timeline = append(timeline, planner.NodeLevel{At: busyUntil, Nodes: 0})
	maxNodes := 0
	for _, p := range timeline {
		maxNodes = max(maxNodes, p.Nodes)
	}
	return finish(w, Result{Baseline: ReactiveAutoscaler, MaxNodes: maxNodes, Steps: steps, Timeline: timeline})
}

// leastSlackReady is the query whose next job is ready at now with the
// least slack on n nodes, or -1 when no job is ready.
func leastSlackReady(queries []planner.Query, jobs [][]job, next []int, now float64, n int) int {
	chosen := -1
	var chosenSlack float64
	for q := range jobs {
		if next[q] == len(jobs[q]) || jobs[q][next[q]].ready > now+eps {
			continue
		}
		remaining := planner.RemainingSeconds(queries[q].Cost.OnNodes(n), progress(jobs[q], next[q]))
		if slack := queries[q].Deadline - now - remaining; chosen < 0 || slack < chosenSlack {
			chosen, chosenSlack = q, slack
		}
	}
	return chosen
}

// progress is where a query whose plan has the given jobs stands before
// job next: the plan's batch size (its first batch's), partial merges of
// as many inputs as its partial merges have, and the window's total (its
// final merge's tuples).
func progress(jobs []job, next int) planner.Progress {
	first := jobs[0].steps[0]
	last := jobs[len(jobs)-1].steps
	p := planner.Progress{
		Total: last[len(last)-1].ToTuple, From: jobs[next].steps[0].FromTuple,
		BatchSize: first.ToTuple - first.FromTuple, Batches: next,
	}
	for i, j := range jobs {
		for _, s := range j.steps {
			if s.Kind != planner.StepPartial {
				continue
			}
			p.PartialEvery = s.Inputs
			if i < next {
				p.Partials++
			}
		}
	}
	return p
}

// job is one of a plan's batches with the merges the plan runs right after
// it on the same nodes. Its steps keep the plan's tuples, inputs and
// readiness; place gives them times and nodes.
type job struct {
	ready float64
	steps []planner.Step
}

// jobsOf cuts a plan's steps into each query's jobs, in batch order. The
// plan lists each merge right after the batch it follows, and a query's
// batches in index order.
func jobsOf(queries []planner.Query, steps []planner.Step) [][]job {
	index := make(map[string]int, len(queries))
	for i, q := range queries {
		index[q.Name] = i
	}
	jobs := make([][]job, len(queries))
	for _, s := range steps {
		q := index[s.Query]
		if s.Kind == planner.StepBatch {
			jobs[q] = append(jobs[q], job{ready: s.Ready})
		}
		j := &jobs[q][len(jobs[q])-1]
		j.steps = append(j.steps, s)
	}
	return jobs
}

// seconds is the job's modelled duration for query q on n nodes.
func (j *job) seconds(q planner.Query, n int) float64 {
	total := 0.0
	for _, s := range j.steps {
		total += stepSeconds(q, s, n)
	}
	return total
}

// place runs the job's steps back to back from start on n nodes.
func (j *job) place(q planner.Query, start float64, n int) []planner.Step {
	placed := make([]planner.Step, len(j.steps))
	for i, s := range j.steps {
		if i > 0 {
			s.Ready = start
		}
		s.Start, s.End, s.Nodes = start, start+stepSeconds(q, s, n), n
		placed[i] = s
		start = s.End
	}
	return placed
}

func stepSeconds(q planner.Query, s planner.Step, n int) float64 {
	if s.Kind == planner.StepBatch {
		return q.Cost.BatchSeconds(n, s.ToTuple-s.FromTuple)
	}
	return q.Cost.MergeSeconds(n, s.Inputs)
}

// interval is a half-open busy period [from, to) of the pool.
type interval struct{ from, to float64 }

// busyFraction is the fraction of [from, to) covered by busy, which is
// sorted and disjoint.
func busyFraction(busy []interval, from, to float64) float64 {
	covered := 0.0
	for i := len(busy) - 1; i >= 0 && busy[i].to > from; i-- {
		covered += math.Max(0, math.Min(busy[i].to, to)-math.Max(busy[i].from, from))
	}
	return covered / (to - from)
}
