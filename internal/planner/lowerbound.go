package planner

import (
	"cmp"
	"math"
	"slices"
)

// provablyLate reports whether no plan of any shape, size or order can meet
// every deadline: provablyLateOn the largest pool size. The search uses it
// to skip the reshaping and the other order, which cannot help, on a
// workload where the grid found no plan.
func (p *prepared) provablyLate() bool { return p.provablyLateOn(len(p.w.Pool.Sizes) - 1) }

// provablyLateOn reports whether no plan that never grows the pool past
// size index size can meet every deadline, by a bound that ignores what
// makes planning hard. The pool runs one step at a time, so any plan is
// also a schedule of these jobs on one machine, where a job may be
// interrupted and resumed:
//
//   - each query's tuple work on that size (seconds per tuple times its
//     tuples) and the overhead of all but one of the fewest batches its
//     largest batch allows, from its window start to its deadline;
//   - each query's last step without that work (one batch's overhead and a
//     final merge of one input on that size), from when its last tuple is
//     ready to its deadline.
//
// Every real step is at least as long on its own pool size, and a step
// cut at will fits wherever the whole one did, so a workload these jobs
// cannot fit has no such plan. Earliest deadline first, allowed to
// interrupt, fits them whenever any schedule does, so simulating it
// decides.
func (p *prepared) provablyLateOn(size int) bool {
	nodes := p.w.Pool.Sizes[size]
	jobs := make([]boundJob, 0, 2*len(p.w.Queries))
	for i := range p.w.Queries {
		jobs = p.appendBoundJobs(jobs, i, nodes, 1)
	}
	return !preemptiveEDFFits(jobs)
}

// appendBoundJobs appends query i's two jobs on nodes nodes, their work
// times scale: its tuple work with the overhead of all but one of the
// fewest batches, from its window's start, and its last step without that
// work (one batch's overhead and a final merge of one input), from its last
// tuple; both by its deadline. A query of no tuples has none.
func (p *prepared) appendBoundJobs(jobs []boundJob, i, nodes int, scale float64) []boundJob {
	a, c, deadline := p.arrivals[i], p.costs[i], p.w.Queries[i].Deadline
	total := a.total()
	if total == 0 {
		return jobs
	}
	overheads := float64(ceilDiv(total, p.limit[i])-1) * c.batchOverhead
	tupleWork := c.batch(nodes, total) - c.batchOverhead + overheads
	last := c.batchOverhead + c.merge(nodes, 1)
	return append(jobs,
		boundJob{release: a.timeOf(0), work: scale * tupleWork, deadline: deadline},
		boundJob{release: a.readyAt(total), work: scale * last, deadline: deadline})
}

// boundJob is work that may run, interrupted at will, between release and
// deadline.
type boundJob struct {
	release, work, deadline float64
}

// preemptiveEDFFits simulates earliest deadline first with interruptions on
// one machine and reports whether every job ends by its deadline (within
// rounding: the bound must never call a plan the search can make late).
func preemptiveEDFFits(jobs []boundJob) bool {
	slices.SortStableFunc(jobs, func(a, b boundJob) int { return cmp.Compare(a.release, b.release) })
	var ready queue // job indices by deadline
	now := 0.0
	for next := 0; next < len(jobs) || ready.len() > 0; {
		if ready.len() == 0 {
			now = max(now, jobs[next].release)
		}
		for next < len(jobs) && jobs[next].release <= now {
			ready.push(jobs[next].deadline, next)
			next++
		}
		// Run the most urgent job until it ends or the next release.
		j := &jobs[ready.top().query]
		until := now + j.work
		if next < len(jobs) && jobs[next].release < until {
			j.work -= jobs[next].release - now
			now = jobs[next].release
			continue
		}
		now = until
		ready.pop()
		if now > j.deadline+boundTolerance(j.deadline) {
			return false
		}
	}
	return true
}

// boundTolerance is how far past its deadline the bound lets a job end
// before it calls the workload late: far more than the search's rounding,
// far less than any real miss.
func boundTolerance(deadline float64) float64 {
	return 1e-6 * max(1, math.Abs(deadline))
}

// provablyLateSideBySide reports whether no plan, one step at a time or
// with steps side by side on parts of the pool (Planning.Concurrent), can
// meet every deadline. It relaxes provablyLateOn's jobs further, since
// steps side by side hold at most the largest size together:
//
//   - the largest size is a capacity of node-seconds per second that the
//     jobs share at will, and each job needs the node-seconds it takes on
//     the smallest size, the fewest it can: a step's node-seconds,
//     p·overhead + t·(p·serial + parallel), grow with its nodes p;
//   - no query's last step can be faster than on the largest size, from
//     when its last tuple is ready.
//
// Every plan of either kind is a schedule of these jobs on that capacity,
// so a workload they cannot fit has no plan; earliest deadline first
// decides it, as for provablyLateOn.
func (p *prepared) provablyLateSideBySide() bool {
	sizes := p.w.Pool.Sizes
	smallest, largest := sizes[0], sizes[len(sizes)-1]
	jobs := make([]boundJob, 0, 2*len(p.w.Queries))
	for i, q := range p.w.Queries {
		a, c := p.arrivals[i], p.costs[i]
		if total := a.total(); total > 0 && a.readyAt(total)+c.batchOverhead+c.merge(largest, 1) > q.Deadline+boundTolerance(q.Deadline) {
			return true
		}
		// A job of s node-seconds takes s/largest seconds of the capacity.
		jobs = p.appendBoundJobs(jobs, i, smallest, float64(smallest)/float64(largest))
	}
	return !preemptiveEDFFits(jobs)
}
