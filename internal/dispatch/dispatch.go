// Package dispatch makes laxity's run-time decisions: which step of which
// query to launch on the pool now, and how many nodes to ask the pool for. It
// is pure: the controllers observe the cluster, call Decide with what they
// saw and the clock's now, and act.
//
// One step runs on the pool at a time, as the plan assumes; a plan that runs
// steps side by side splits the queries into lanes (Settings.LaneNodes),
// and one step of each lane runs at a time, on nodes no other step holds.
// Within a lane, or on the whole pool, among the queries
// whose next batch is ready — a full batch of tuples has arrived, or the
// window (plus allowed lateness) has closed and tuples remain — the one with
// the least slack is launched (or the earliest deadline with the
// EarliestDeadline policy). A merge that is due goes before any batch: the
// plan runs a partial merge right after the batch that completes its inputs
// and the final merge right after the last batch. A failed step is retried
// with exponential backoff up to a bound; after that the query is reported as
// exhausted and gets no further launches. Attempts are counted from the
// step's SparkApplications, not from the plan, so a re-plan does not reset
// them.
package dispatch

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/planner"
)

// State is where a launched step stands.
type State int

const (
	// Pending is created but not running yet; it already holds the pool.
	Pending State = iota
	// Running is running on the pool.
	Running
	// Succeeded finished and wrote its result.
	Succeeded
	// Failed finished without a result.
	Failed
)

// Attempt is the latest try of one step.
type Attempt struct {
	// Number counts tries from 0.
	Number int
	State  State
	// Started is when a Running attempt began (zero while unknown); Nodes
	// is the pool size it runs on and Inputs, for a merge, the results it
	// combines: what its modelled end is computed from (FreeAt).
	Started time.Time
	Nodes   int
	Inputs  int
	// Ended is when a Succeeded or Failed attempt finished.
	Ended time.Time
	// NamesTaken counts the attempt numbers up to Number that were passed
	// over without a try because an object laxity does not own had their
	// name: Number − NamesTaken attempts really ran before this one, and
	// only those count towards MaxAttempts and the backoff.
	NamesTaken int
	// Launched is when the attempt was created, on the controller's clock;
	// zero when unknown. Stuck judges a step from it (or from Started).
	Launched time.Time
	// Members are the queries a shared batch serves, in name order; nil
	// for a step of one query. Every member sees the attempt as its own.
	Members []string
	// SideBySide marks an attempt launched in lane Lane: it holds its
	// Nodes only. Any other attempt holds the whole pool, its executors
	// filling every node ready when it was launched.
	SideBySide bool
	Lane       int
}

// failures is how many attempts of the step ran and failed before this one.
func (a Attempt) failures() int { return max(a.Number-a.NamesTaken, 0) }

// LastAllowed reports whether the attempt is the step's last allowed try
// under maxAttempts: if it fails, the step is not retried and nothing more
// of its query is launched. Only attempts that ran count, not attempt
// numbers passed over because their names were taken. This is the one
// retry rule; Decide, FailedOut and BehindSchedule all apply it.
func (a Attempt) LastAllowed(maxAttempts int) bool {
	return a.failures()+1 >= maxAttempts
}

// Batch is a launched batch: its tuple range [From, To) and latest attempt.
type Batch struct {
	From, To int64
	Attempt
}

// Query is one query's plan and observed progress.
type Query struct {
	Name     string
	Deadline time.Time
	// Closed is when the last batch may run: the window end plus the
	// allowed lateness.
	Closed time.Time
	Cost   costmodel.Model
	// TailMargin is the tail margin its plan keeps
	// (planner.QueryPlan.TailMargin): a step of another query that would
	// leave it less than that headroom waits (TailSlack).
	TailMargin float64
	// BatchSize and PartialEvery (c: a partial merge after every c batches,
	// 0 for none) come from the plan; ExpectedTotal is the window's total
	// under the plan's rate model, used to estimate the remaining work.
	BatchSize     int64
	PartialEvery  int
	ExpectedTotal int64
	// BatchEnds are the plan's batch ends by batch index
	// (planner.Document.BatchEnds): batch i ends at BatchEnds[i] when the
	// plan holds it, and BatchSize tuples after its start otherwise.
	BatchEnds []int64
	// Arrived is the tuples arrived so far.
	Arrived int64
	// ArrivalOf says when the arrivals will reach a count, for a source
	// that can tell (nil otherwise): the decision then names the instant
	// the next batch is ready as its recheck time.
	ArrivalOf func(tuples int64) (time.Time, bool)
	// Batches are the launched batches in index order; Partials the
	// launched partial merges in ordinal order; Final the final merge.
	Batches  []Batch
	Partials []Attempt
	Final    *Attempt
	// Shared are the plan's shared batches of the query, by batch index:
	// the queries each serves (planner.Step.Members). SharedMembers
	// launches such a batch once for them all.
	Shared map[int][]string
	// Held is set while the query's input cannot be read: nothing of it
	// starts, since a batch would read tuples nobody counted and a final
	// merge could leave the last ones out. A step of it that is already
	// running still holds the pool.
	Held bool
	// Lane is the lane the plan runs the query's steps in
	// (planner.Document.LaneOf), with Settings.LaneNodes.
	Lane int
	// Planned are the plan's steps of the query, in start order: with
	// Settings.LaneNodes, a step takes no more nodes than the plan gives
	// it, and another lane does not take the nodes of a step the plan
	// starts before its own would end.
	Planned []Planned
}

// Planned is one step of a query as its plan has it: when it starts, on
// how many nodes.
type Planned struct {
	Kind  planner.StepKind
	Index int
	Start time.Time
	Nodes int
}

// Step is a step to launch.
type Step struct {
	Query string
	Kind  planner.StepKind
	// Index is the batch index, or the merge ordinal.
	Index int
	// Attempt is 0 for a first try.
	Attempt            int
	FromTuple, ToTuple int64
	// Inputs is the number of results a merge combines.
	Inputs int
	// Nodes is the pool size the step runs on: the largest size that is
	// ready.
	Nodes int
	// Slack is the query's slack with this step started now.
	Slack time.Duration
	// NamesTaken is carried over from the attempt a retry follows (see
	// Attempt.NamesTaken).
	NamesTaken int
	// Members are the queries a shared batch serves (SharedMembers), in
	// name order; nil for a step of one query.
	Members []string
	// Fills is the nodes the step's executors fill: one step at a time,
	// every ready node (at least Nodes); side by side, its own Nodes, the
	// other nodes being other steps'.
	Fills int
	// SideBySide marks a step launched in lane Lane of a plan that runs
	// steps side by side.
	SideBySide bool
	Lane       int
}

// Settings are the schedule-wide parameters of the decision.
type Settings struct {
	Sizes  []int
	Policy planner.Policy
	// LaneNodes is, for a plan that runs steps side by side, the most
	// nodes each lane's steps take (planner.Document.LaneNodes); nil runs
	// one step at a time on the whole pool.
	LaneNodes []int
	// laneBusy limits a decision to what runs beside a lane's running
	// step: merges.
	laneBusy bool
	// MaxAttempts bounds the tries of one step; Backoff is the wait before
	// the first retry, doubled for every further one.
	MaxAttempts int
	Backoff     time.Duration
}

// Decision is what to do now.
type Decision struct {
	// Launch is the step to launch, or nil.
	Launch *Step
	// Why says why nothing is launched, for conditions and logs.
	Why string
	// Exhausted names the queries whose failed step used up its attempts.
	Exhausted []string
	// Recheck is the earliest time the decision can change without a
	// change the controller observes (a retry's backoff ending, a window
	// closing); zero when only observed changes matter.
	Recheck time.Time
}

// Pool is what the pool holds now and what it has been asked for.
type Pool struct {
	// Ready is the number of ready nodes.
	Ready int
	// Coming is the number of nodes the pool has been asked for and
	// ComingBy when the plan expects them ready (see Coming); zero when
	// nothing is known to be on its way.
	Coming   int
	ComingBy time.Time
	// ExpectedBy is how many nodes the plan expects ready at a later
	// instant (ExpectedReady); nil expects no more than are ready. Lanes
	// leave the nodes that come by then to the step planned then.
	ExpectedBy func(time.Time) int
}

// Decide picks the step to launch now, given the queries of one schedule and
// the pool. One launch a decision: with lanes, the controller's next pass,
// which sees the launched step hold its nodes, launches the next lane's.
func Decide(now time.Time, settings Settings, queries []Query, pool Pool) Decision {
	if len(settings.LaneNodes) > 1 {
		return decideLanes(now, settings, queries, pool)
	}
	// Steps launched side by side under an earlier plan hold the pool
	// until they end, as a plan one step at a time made then assumes (it
	// starts when they are done): a step launched beside them would hold
	// the whole pool and keep their queries' next steps waiting.
	d := decideOne(now, settings, queries, pool)
	if d.Launch != nil {
		d.Launch.Fills = max(pool.Ready, d.Launch.Nodes)
	}
	return d
}

// heldSideBySide is the nodes the steps launched side by side hold, and
// whether those are all the steps that hold the pool: a step launched one
// at a time holds all of it.
func heldSideBySide(queries []Query) (int, bool) {
	held, alone := 0, false
	eachHolding(queries, func(_ *Query, a Attempt, _ Step) {
		if a.SideBySide {
			held += a.Nodes
		} else {
			alone = true
		}
	})
	return held, !alone
}

// decideLanes is Decide for a plan that runs steps side by side: each idle
// lane is decided as a pool of its own, of the nodes no step holds, on the
// sizes up to the most its plan gives a step, with its own queries; of the
// lanes with a step to launch, the one whose step has the least slack
// launches (the lower lane on a tie). Nodes are not taken from a running
// step: a step waits until its size is free. Nor from the step another
// idle lane's plan starts before this one would end (lanes ahead of their
// plan would otherwise take the nodes of lanes on time), unless that step
// is due and not ready: a lane waiting for tuples holds nothing.
func decideLanes(now time.Time, settings Settings, queries []Query, pool Pool) Decision {
	busy, sideBySide := heldSideBySide(queries)
	if !sideBySide {
		// A step launched one at a time, under an earlier plan, fills the
		// pool until it ends.
		return decideOne(now, settings, queries, pool)
	}
	free := Pool{Ready: max(pool.Ready-busy, 0), Coming: max(pool.Coming-busy, 0), ComingBy: pool.ComingBy}
	lanes := make([]lane, len(settings.LaneNodes))
	for i := range queries {
		k := min(max(queries[i].Lane, 0), len(lanes)-1)
		lanes[k].queries = append(lanes[k].queries, queries[i])
	}
	for k := range lanes {
		l := &lanes[k]
		l.settings = settings
		l.settings.Sizes = slices.DeleteFunc(slices.Clone(settings.Sizes), func(size int) bool { return size > settings.LaneNodes[k] })
		if len(l.settings.Sizes) == 0 {
			l.settings.Sizes = settings.Sizes[:1]
		}
		for i := range l.queries {
			q := &l.queries[i]
			if name, busy := q.busyIn(k); busy {
				l.busy = true
				l.decision = Decision{Why: fmt.Sprintf("%s of query %s is running", name, q.Name)}
			}
			if _, busy := q.busy(); !busy {
				l.idle = append(l.idle, *q)
			}
		}
		if l.busy {
			// A merge that is due does not wait for its lane: it runs
			// beside the lane's step on free nodes, such as those its
			// query's last batch just freed.
			l.settings.laneBusy = true
			if beside := decideOne(now, l.settings, l.idle, free); beside.Launch != nil {
				l.decision = beside
			}
			continue
		}
		l.decision = decideOne(now, l.settings, l.idle, free)
	}
	lendDoneLanes(now, lanes, free)
	var d Decision
	var idle []string
	for k := range lanes {
		l := &lanes[k]
		if len(l.queries) == 0 {
			continue
		}
		ld := l.decision
		d.Exhausted = append(d.Exhausted, ld.Exhausted...)
		d.Recheck = Earliest(d.Recheck, ld.Recheck)
		// A launch that takes nodes another lane's plan starts a step on
		// before it ends is decided again on the nodes left.
		for ld.Launch != nil {
			room, why, until := roomBeside(now, pool, busy, lanes, k, *ld.Launch)
			if room >= ld.Launch.Nodes {
				break
			}
			view := Pool{Ready: room, Coming: max(free.Coming-(free.Ready-room), 0), ComingBy: free.ComingBy}
			again := decideOne(now, l.settings, l.idle, view)
			if again.Launch == nil {
				again.Why = why
				if until.After(now) {
					again.Recheck = Earliest(again.Recheck, until)
				}
			}
			d.Recheck = Earliest(d.Recheck, again.Recheck)
			ld = again
		}
		switch {
		case ld.Launch == nil:
			idle = append(idle, fmt.Sprintf("lane %d: %s", k, ld.Why))
		case d.Launch == nil || ld.Launch.Slack < d.Launch.Slack:
			d.Launch = ld.Launch
			d.Launch.SideBySide, d.Launch.Lane = true, k
		}
	}
	if d.Launch != nil {
		d.Launch.Fills = d.Launch.Nodes
	} else {
		d.Why = strings.Join(idle, "; ")
	}
	return d
}

// lendDoneLanes lets a lane whose queries are all done run, on its free
// nodes, the step of another lane's query that is behind its plan while
// that lane is busy: steps ran slower than planned, and the late lane
// would otherwise run its queue one step at a time beside idle nodes that
// are paid for. Only steps behind their plan are lent a lane: a step on
// time waits for its own lane, where the plan placed it.
func lendDoneLanes(now time.Time, lanes []lane, free Pool) {
	var waiting []Query
	for k := range lanes {
		if lanes[k].busy {
			waiting = append(waiting, lanes[k].idle...)
		}
	}
	if len(waiting) == 0 {
		return
	}
	for k := range lanes {
		l := &lanes[k]
		if l.busy || l.decision.Launch != nil || len(l.queries) == 0 || !l.done() {
			continue
		}
		lent := decideOne(now, l.settings, waiting, free)
		if lent.Launch == nil {
			continue
		}
		for i := range waiting {
			if q := &waiting[i]; q.Name == lent.Launch.Query && q.behindPlan(now, *lent.Launch) {
				l.decision = lent
			}
		}
	}
}

// done reports whether every query of the lane has launched its final
// merge: the lane has nothing of its own left to run.
func (l *lane) done() bool {
	for i := range l.queries {
		if l.queries[i].Final == nil {
			return false
		}
	}
	return true
}

// lane is one lane's queries and decision as decideLanes weighs them:
// busy while a step launched in it holds the pool; idle are its queries
// with no step holding the pool, of which it launches.
type lane struct {
	queries, idle []Query
	settings      Settings
	busy          bool
	decision      Decision
}

// roomBeside is how many of the free nodes step, launched now in lane k,
// may take and leave the other idle lanes the nodes of their next planned
// steps that start before it ends (those still to come, or due, ready and
// no looser than step):
// at each such start, the nodes expected ready then, less those held now,
// less the steps kept for up to then. why and until say what is kept for
// first, and when it starts.
func roomBeside(now time.Time, pool Pool, busy int, lanes []lane, k int, step Step) (int, string, time.Time) {
	// The step's query is of lane k, or, lent lane k (lendDoneLanes), of
	// another.
	var q *Query
	for j := range lanes {
		for i := range lanes[j].queries {
			if lanes[j].queries[i].Name == step.Query {
				q = &lanes[j].queries[i]
			}
		}
	}
	ends := now.Add(seconds(q.stepSeconds(step, step.Nodes)))
	type kept struct {
		Planned
		lane  int
		query string
	}
	var keep []kept
	for j := range lanes {
		other := &lanes[j]
		if j == k || len(other.queries) == 0 || other.busy {
			continue
		}
		next, owner, ok := other.nextPlanned()
		if !ok || !next.Start.Before(ends) {
			continue
		}
		if due := !next.Start.After(now); due && (other.decision.Launch == nil || other.decision.Launch.Slack > step.Slack) {
			// Due, and not ready or looser than step: least slack
			// goes first.
			continue
		}
		keep = append(keep, kept{Planned: next, lane: j, query: owner})
	}
	slices.SortStableFunc(keep, func(a, b kept) int { return a.Start.Compare(b.Start) })
	room := max(pool.Ready-busy, 0)
	var why string
	var until time.Time
	held := 0
	for _, c := range keep {
		held += c.Nodes
		ready := pool.Ready
		if pool.ExpectedBy != nil && c.Start.After(now) {
			ready = max(ready, pool.ExpectedBy(c.Start))
		}
		if left := ready - busy - held; left < room {
			room = max(left, 0)
			why = fmt.Sprintf("keeping %d nodes for lane %d: %s %d of query %s is planned to start at %s, before %s %d of query %s would end",
				c.Nodes, c.lane, c.Kind, c.Index, c.query, c.Start.UTC().Format(time.RFC3339), step.Kind, step.Index, step.Query)
			until = c.Start
		}
	}
	return room, why, until
}

// nextPlanned is the lane's earliest planned step not launched yet, and
// its query.
func (l *lane) nextPlanned() (Planned, string, bool) {
	var best Planned
	var owner string
	found := false
	for i := range l.queries {
		q := &l.queries[i]
		if p, ok := q.nextPlanned(); ok && (!found || p.Start.Before(best.Start)) {
			best, owner, found = p, q.Name, true
		}
	}
	return best, owner, found
}

// nextInPlan reports whether step is the earliest planned step of queries
// not launched yet.
func nextInPlan(queries []Query, step Step) bool {
	next, owner, ok := (&lane{queries: queries}).nextPlanned()
	return ok && owner == step.Query && next.Kind == step.Kind && next.Index == step.Index
}

// nextPlanned is the query's first planned step not launched yet.
func (q *Query) nextPlanned() (Planned, bool) {
	if q.Final != nil {
		return Planned{}, false
	}
	for _, p := range q.Planned {
		switch {
		case p.Kind == planner.StepBatch && p.Index < len(q.Batches),
			p.Kind == planner.StepPartial && p.Index < len(q.Partials):
			continue
		}
		return p, true
	}
	return Planned{}, false
}

// behindPlan reports whether step's planned start has passed: it is in
// the plan in force, which started it more than lateToPlan before now.
func (q *Query) behindPlan(now time.Time, step Step) bool {
	p, ok := q.planned(step)
	return ok && p.Start.Add(lateToPlan).Before(now)
}

// planned is step as the plan in force has it, if it does.
func (q *Query) planned(step Step) (Planned, bool) {
	for _, p := range q.Planned {
		if p.Kind == step.Kind && p.Index == step.Index {
			return p, true
		}
	}
	return Planned{}, false
}

// lateToPlan is how late a step may start and still be on time to its
// plan: passes run at instants the plan names, give or take rounding and
// the time a pass takes.
const lateToPlan = time.Second

// plannedNodes is the size step takes of nodes free in a lane: the plan's
// nodes for it, when the plan has it and nodes hold them, else nodes.
func (q *Query) plannedNodes(step Step, sizes []int, nodes int) int {
	if p, ok := q.planned(step); ok {
		return sizeFor(sizes, min(nodes, p.Nodes))
	}
	return nodes
}

// decideOne is Decide for queries whose steps run one at a time on pool.
func decideOne(now time.Time, settings Settings, queries []Query, pool Pool) Decision {
	var d Decision
	for _, q := range queries {
		if name, busy := q.busy(); busy {
			d.Why = fmt.Sprintf("%s of query %s is running", name, q.Name)
			return d
		}
	}
	nodes := sizeFor(settings.Sizes, pool.Ready)
	var merges, batches []Step
	for i := range queries {
		q := &queries[i]
		if q.Held {
			continue
		}
		step, recheck, exhausted := q.next(now, settings)
		if exhausted {
			d.Exhausted = append(d.Exhausted, q.Name)
		}
		d.Recheck = Earliest(d.Recheck, recheck)
		if step == nil {
			continue
		}
		step.Nodes = nodes
		if len(settings.LaneNodes) > 1 && !q.behindPlan(now, *step) {
			// On time, a step takes the nodes it was planned for; behind
			// its planned start (steps ran slower than planned), it
			// catches up on as many of its lane's free nodes as there are.
			step.Nodes = q.plannedNodes(*step, settings.Sizes, nodes)
		}
		if step.Nodes > 0 {
			step.Slack = q.Slack(now, *step, step.Nodes)
		}
		if step.Kind == planner.StepBatch {
			batches = append(batches, *step)
		} else {
			merges = append(merges, *step)
		}
	}
	candidates := merges
	if len(candidates) == 0 && !settings.laneBusy {
		candidates = batches
	}
	if len(candidates) == 0 && nodes > 0 && !settings.laneBusy {
		candidates = catchUp(now, settings.Sizes, pool, queries, nodes)
	}
	switch {
	case len(candidates) == 0:
		d.Why = "no step is ready"
	case nodes == 0:
		d.Why = fmt.Sprintf("%d free nodes, fewer than the smallest pool size %d", pool.Ready, settings.Sizes[0])
	default:
		byName := map[string]*Query{}
		for i := range queries {
			byName[queries[i].Name] = &queries[i]
		}
		sort.SliceStable(candidates, func(a, b int) bool {
			ca, cb := candidates[a], candidates[b]
			if settings.Policy == planner.EarliestDeadline {
				if da, db := byName[ca.Query].Deadline, byName[cb.Query].Deadline; !da.Equal(db) {
					return da.Before(db)
				}
			} else if ca.Slack != cb.Slack {
				return ca.Slack < cb.Slack
			}
			return ca.Query < cb.Query
		})
		launch := candidates[0]
		if settings.Policy != planner.EarliestDeadline {
			launch = sparing(now, candidates, byName)
		}
		waitFor := pool
		if len(settings.LaneNodes) > 1 {
			// In a lane, for no more nodes than the plan gives the step.
			waitFor.Coming = byName[launch.Query].plannedNodes(launch, settings.Sizes, pool.Coming)
		}
		if larger, recheck, ok := worthWaiting(now, settings.Sizes, waitFor, byName[launch.Query], launch); ok {
			d.Why = fmt.Sprintf("waiting for %d nodes due at %s: %s %d of query %s finishes sooner on them than on the %d ready now",
				larger, pool.ComingBy.UTC().Format(time.RFC3339), launch.Kind, launch.Index, launch.Query, nodes)
			d.Recheck = Earliest(d.Recheck, recheck)
			return d
		}
		// A lane's plan is followed in its order: its next step, on time,
		// waits for no other, the plan having placed every ready time
		// around it. Behind its planned start, it may no longer fit where
		// the plan put it, before a tighter query's batch becomes ready.
		onPlan := len(settings.LaneNodes) > 1 && nextInPlan(queries, launch) && !byName[launch.Query].behindPlan(now, launch)
		if urgent, ready, ok := blockedBy(now, settings.Sizes, pool, queries, byName[launch.Query], launch); ok && !onPlan {
			d.Why = fmt.Sprintf("holding the pool for query %s, whose next batch is ready at %s: %s %d of query %s would still run then and make it late",
				urgent, ready.UTC().Format(time.RFC3339), launch.Kind, launch.Index, launch.Query)
			d.Recheck = Earliest(d.Recheck, ready)
			return d
		}
		d.Launch = &launch
	}
	return d
}

// sparing is the step to launch of candidates, in least-slack order: the
// first, unless running it first would leave the second late, and running
// the second first leaves the worse slack of the two larger. A plan that
// meets every deadline never leaves a query late that way, so a run that
// keeps to its plan launches what the plan's least slack first launched.
// Steps are not pre-empted, and a query's slack counts
// all its work left while only one step runs now: of two queries a few
// seconds of slack apart, least slack first can start the one whose long
// batch makes the other late, where the other's short one first leaves
// both in time, or late by less. Only the two tightest are weighed: a
// short step of a loose query first only delays both.
func sparing(now time.Time, candidates []Step, byName map[string]*Query) Step {
	if len(candidates) < 2 {
		return candidates[0]
	}
	first, second := candidates[0], candidates[1]
	firstHolds, secondHolds := byName[first.Query].holds(now, first), byName[second.Query].holds(now, second)
	if leftAfterFirst := second.Slack - firstHolds; leftAfterFirst < 0 && min(second.Slack, first.Slack-secondHolds) > min(first.Slack, leftAfterFirst) {
		return second
	}
	return first
}

// holds is how long step, launched now, keeps the pool from every other
// query: its own time, and, for the last batch of a closed window, the
// final merge that follows it (with that batch among its inputs), since
// merges go first and no partial merge comes after the last batch.
func (q *Query) holds(now time.Time, step Step) time.Duration {
	d := q.stepSeconds(step, step.Nodes)
	if step.Kind == planner.StepBatch && !now.Before(q.Closed) && step.ToTuple >= q.Arrived {
		final := q.finalStep()
		final.Inputs++
		d += q.stepSeconds(final, step.Nodes)
	}
	return seconds(d)
}

// blockedBy reports a query that launching step now would make late: its
// next batch becomes ready before step ends, it could still meet its
// deadline starting then, and it could not starting after step, or would
// spend its tail margin while q can wait for it and still meet its own
// deadline. Steps run
// one at a time and are not pre-empted, so least slack first among the
// batches ready now can start a long batch of a loose query seconds before
// the last batch of a tight one is ready at its window end. The plan, which
// knows when every batch is ready, leaves the pool free there; when steps
// run faster than planned, dispatch must not fill that gap.
func blockedBy(now time.Time, sizes []int, pool Pool, queries []Query, q *Query, step Step) (string, time.Time, bool) {
	ends := now.Add(seconds(q.stepSeconds(step, step.Nodes)))
	for i := range queries {
		other := &queries[i]
		if other.Name == q.Name || !other.mayBatch() {
			continue
		}
		next, ready, ok := other.nextBatch(now)
		if !ok || !ready.After(now) || !ready.Before(ends) {
			continue
		}
		// The other query's batch runs on the nodes there by then; after
		// step, on the nodes there now: nodes on their way that are late
		// must not leave it late too.
		// It could meet its deadline starting then; after step, it would eat
		// into the tail margin its plan keeps, if not miss the deadline.
		future := other.whole()
		then := nodesBy(sizes, pool, step.Nodes, ready)
		if future.Slack(ready, next, then) < 0 || future.TailSlack(ends, next, step.Nodes) >= 0 {
			continue
		}
		// Holding the pool is for a deadline, not for headroom alone: when
		// the other query would still meet its deadline after step (only
		// its tail margin is spent) and waiting for its batch would make
		// this query late, step goes now.
		if future.Slack(ends, next, step.Nodes) >= 0 {
			next.Nodes = then
			waited := ready.Add(future.holds(ready, next))
			if self := q.whole(); self.Slack(waited, step, then) < 0 {
				continue
			}
		}
		return other.Name, ready, true
	}
	return "", time.Time{}, false
}

// catchUp are the batches of queries that are behind, for a pool that
// would otherwise sit idle: each takes the tuples that have arrived when
// the query's next planned batch, started once its tuples are in, would
// leave it late even on the nodes due by then. A plan made late in a
// window, or one the steps have fallen behind, can cut a late query's
// remaining tuples as one batch at the window's end; waiting for that cut
// with ready nodes and arrived tuples only moves the work into the
// query's tail, after the window closes. Running what arrived costs one
// more batch's start-up on nodes that are paid for anyway, and one more
// batch after it for the tuples still to come.
func catchUp(now time.Time, sizes []int, pool Pool, queries []Query, nodes int) []Step {
	var out []Step
	for i := range queries {
		q := &queries[i]
		if q.Held || !now.Before(q.Closed) || q.Arrived <= q.processed() || !q.mayBatch() {
			continue
		}
		next, ready, ok := q.nextBatch(now)
		if !ok {
			next, ready, ok = q.expectedBatch(now)
		}
		if !ok || !ready.After(now) {
			continue
		}
		// Late by the deadline itself, not by the tail margin: catching up
		// adds a batch's start-up to the tail, which only a query that
		// would otherwise miss its deadline should pay.
		if future := q.whole(); future.Slack(ready, next, nodesBy(sizes, pool, nodes, ready)) >= 0 {
			continue
		}
		step := Step{Query: q.Name, Kind: planner.StepBatch, Index: len(q.Batches), FromTuple: q.processed(), ToTuple: q.Arrived, Nodes: nodes}
		step.Slack = q.Slack(now, step, nodes)
		out = append(out, step)
	}
	return out
}

// mayBatch reports whether the query's next step can be a new batch: no
// step of it holds the pool, it is not finished, no failed step waits for
// its retry and no partial merge is due.
func (q *Query) mayBatch() bool {
	_, busy := q.busy()
	return !busy && q.Final == nil && !q.retrying() && len(q.Partials) >= q.duePartials()
}

// whole is the query judged as if its window had closed: with every tuple
// the window is expected to bring, not only those there now.
func (q *Query) whole() Query {
	future := *q
	future.Arrived = max(q.Arrived, q.ExpectedTotal)
	return future
}

// nodesBy is the pool size a step gets at t: the larger size the nodes on
// their way make, once they are due, or nodes.
func nodesBy(sizes []int, pool Pool, nodes int, t time.Time) int {
	if larger := sizeFor(sizes, pool.Coming); larger > nodes && !pool.ComingBy.After(t) {
		return larger
	}
	return nodes
}

// nextBatch is the query's next batch and when it will be ready, for a
// source that can tell: when a full batch has arrived, or, for the last
// one, when the window closes.
func (q *Query) nextBatch(now time.Time) (Step, time.Time, bool) {
	from := q.processed()
	step := Step{Query: q.Name, Kind: planner.StepBatch, Index: len(q.Batches), FromTuple: from, ToTuple: q.nextEnd()}
	if q.ArrivalOf != nil {
		if full, ok := q.ArrivalOf(step.ToTuple); ok && full.Before(q.Closed) {
			return step, full, true
		}
	} else if !q.lastPlanned() && step.ToTuple < q.ExpectedTotal {
		// A polled source cannot tell when a batch fills; only that the
		// last one is ready when the window closes.
		return Step{}, time.Time{}, false
	}
	if q.ExpectedTotal <= from || !now.Before(q.Closed) {
		return Step{}, time.Time{}, false
	}
	step.ToTuple = q.ExpectedTotal
	return step, q.Closed, true
}

// expectedBatch is the query's next batch and when it should fill, for a
// polled source, which cannot tell: at the pace that brings the tuples
// still expected by the window's close, the rate the plan counts on from
// here.
func (q *Query) expectedBatch(now time.Time) (Step, time.Time, bool) {
	from, end := q.processed(), q.nextEnd()
	left, until := q.ExpectedTotal-q.Arrived, q.Closed.Sub(now)
	if left <= 0 || until <= 0 || end <= q.Arrived {
		return Step{}, time.Time{}, false
	}
	fill := time.Duration(float64(until) * float64(end-q.Arrived) / float64(left))
	step := Step{Query: q.Name, Kind: planner.StepBatch, Index: len(q.Batches), FromTuple: from, ToTuple: end}
	return step, now.Add(min(fill, until)), true
}

// retrying reports a failed step waiting for its retry, which comes before
// any new batch of the query.
func (q *Query) retrying() bool {
	for _, b := range q.Batches {
		if b.State == Failed {
			return true
		}
	}
	for _, p := range q.Partials {
		if p.State == Failed {
			return true
		}
	}
	return false
}

// duePartials is how many partial merges the succeeded batches call for.
func (q *Query) duePartials() int {
	if q.PartialEvery == 0 {
		return 0
	}
	return q.succeededBatches() / q.PartialEvery
}

// worthWaiting reports whether step, about to run on the ready nodes
// (step.Nodes), should wait for the larger pool the plan has asked for,
// with that pool's size and when to look again. The plan sized the step for
// the nodes it requested a lead time ahead; launching it on the few that are ready a moment before
// the rest arrive can take far longer than the wait. It waits when the
// larger pool, arriving when due, ends the step sooner — and for nodes that
// are overdue, only as long as they would save: nothing says when they come,
// so the wait costs at most what it could gain.
func worthWaiting(now time.Time, sizes []int, pool Pool, q *Query, step Step) (int, time.Time, bool) {
	larger := sizeFor(sizes, pool.Coming)
	if larger <= step.Nodes {
		return 0, time.Time{}, false
	}
	saving := seconds(q.stepSeconds(step, step.Nodes) - q.stepSeconds(step, larger))
	if !now.After(pool.ComingBy.Add(-saving)) || !now.Before(pool.ComingBy.Add(saving)) {
		return 0, time.Time{}, false
	}
	// Look again when the nodes are due or, overdue, when waiting stops
	// paying off.
	recheck := pool.ComingBy
	if !recheck.After(now) {
		recheck = pool.ComingBy.Add(saving)
	}
	return larger, recheck, true
}

// stepSeconds is the modelled duration of step on nodes nodes.
func (q *Query) stepSeconds(step Step, nodes int) float64 {
	if step.Kind == planner.StepBatch {
		return q.Cost.BatchSeconds(nodes, step.ToTuple-step.FromTuple)
	}
	return q.Cost.MergeSeconds(nodes, step.Inputs)
}

func seconds(s float64) time.Duration { return costmodel.Duration(s) }

// FreeAt is when the pool is expected to be free: the latest modelled end
// of the steps that hold it (Held), and now when no step holds it or every
// modelled end has passed.
func FreeAt(queries []Query, now time.Time) time.Time {
	free := now
	eachHeld(queries, now, func(_ *Query, _ Attempt, end time.Time) {
		if end.After(free) {
			free = end
		}
	})
	return free
}

// Held is every launched step that holds the pool, with its query, its
// nodes and when it is expected to free them, in seconds after now (0 once
// its modelled end has passed).
func Held(queries []Query, now time.Time) []planner.HeldStep {
	var out []planner.HeldStep
	eachHeld(queries, now, func(q *Query, a Attempt, end time.Time) {
		out = append(out, planner.HeldStep{Query: q.Name, Nodes: a.Nodes, FreeAt: max(end.Sub(now).Seconds(), 0)})
	})
	return out
}

// eachHeld calls f with every launched step that holds the pool, its query
// and its modelled end: its start, or now for one not started yet, plus
// its modelled duration on its nodes.
func eachHeld(queries []Query, now time.Time, f func(q *Query, a Attempt, end time.Time)) {
	eachHolding(queries, func(q *Query, a Attempt, step Step) {
		start := a.Started
		if start.IsZero() || start.After(now) {
			start = now
		}
		f(q, a, start.Add(seconds(q.attemptSeconds(a, step, queries))))
	})
}

// Busy is how many of the pool's nodes the queries' launched steps hold:
// the nodes of every attempt Pending or Running.
func Busy(queries []Query) int {
	busy := 0
	eachHolding(queries, func(_ *Query, a Attempt, _ Step) { busy += a.Nodes })
	return busy
}

// eachHolding calls f with every launched attempt that holds the pool
// (Pending or Running), its query and its step.
func eachHolding(queries []Query, f func(q *Query, a Attempt, step Step)) {
	for i := range queries {
		q := &queries[i]
		hold := func(a Attempt, step Step) {
			if q.holdsPool(a, queries) {
				f(q, a, step)
			}
		}
		for k, b := range q.Batches {
			hold(b.Attempt, Step{Kind: planner.StepBatch, Index: k, FromTuple: b.From, ToTuple: b.To})
		}
		for _, p := range q.Partials {
			hold(p, Step{Kind: planner.StepPartial, Inputs: p.Inputs})
		}
		if q.Final != nil {
			hold(*q.Final, Step{Kind: planner.StepFinal, Inputs: q.Final.Inputs})
		}
	}
}

// busy reports a launched step that holds the pool.
func (q *Query) busy() (string, bool) {
	return q.holding(func(Attempt) bool { return true })
}

// busyIn reports a launched step of the query that holds lane k: one
// launched in that lane. A step launched in another lane, before a re-plan
// moved the query, holds its nodes but not the lane.
func (q *Query) busyIn(k int) (string, bool) {
	return q.holding(func(a Attempt) bool { return a.SideBySide && a.Lane == k })
}

// holding names the query's launched step that holds the pool, of those
// in.
func (q *Query) holding(in func(Attempt) bool) (string, bool) {
	holds := func(a Attempt) bool { return (a.State == Pending || a.State == Running) && in(a) }
	for i, b := range q.Batches {
		if holds(b.Attempt) {
			return fmt.Sprintf("batch %d", i), true
		}
	}
	for k, p := range q.Partials {
		if holds(p) {
			return fmt.Sprintf("partial merge %d", k), true
		}
	}
	if f := q.Final; f != nil && holds(*f) {
		return "the final merge", true
	}
	return "", false
}

// next is the query's next step if it can run now, the time it might
// become runnable otherwise, and whether a failed step has no tries left.
func (q *Query) next(now time.Time, s Settings) (*Step, time.Time, bool) {
	// A failed step is retried before anything else of the query.
	if f := q.Final; f != nil {
		if f.State != Failed {
			return nil, time.Time{}, false // done, or running
		}
		return q.retry(now, s, q.finalStep(), *f)
	}
	for k, p := range q.Partials {
		if p.State == Failed {
			return q.retry(now, s, q.partialStep(k), p)
		}
	}
	for i, b := range q.Batches {
		if b.State == Failed {
			return q.retry(now, s, Step{Query: q.Name, Kind: planner.StepBatch, Index: i, FromTuple: b.From, ToTuple: b.To}, b.Attempt)
		}
	}
	closed := !now.Before(q.Closed)
	var recheck time.Time
	if !closed {
		recheck = q.Closed
		if q.ArrivalOf != nil {
			if full, ok := q.ArrivalOf(q.nextEnd()); ok && full.After(now) {
				recheck = Earliest(recheck, full)
			}
		}
	}
	done := q.succeededBatches()
	if q.PartialEvery > 0 && len(q.Partials) < done/q.PartialEvery {
		k := len(q.Partials)
		// No partial after the last batch: the final merge takes it.
		if last := closed && (k+1)*q.PartialEvery == len(q.Batches) && q.processed() == q.Arrived; !last {
			step := q.partialStep(k)
			return &step, time.Time{}, false
		}
	}
	from, end := q.processed(), q.nextEnd()
	switch {
	case closed && q.lastPlanned() && q.Arrived > from:
		// The plan's last batch takes what the window brought, more or
		// fewer tuples than the plan expected.
		return &Step{Query: q.Name, Kind: planner.StepBatch, Index: len(q.Batches), FromTuple: from, ToTuple: q.Arrived}, time.Time{}, false
	case q.Arrived >= end && (closed || !q.lastPlanned()):
		// The plan's last batch waits for the window to close even when
		// the tuples it expected are in: a stream that ran ahead brings
		// more until then, and they belong in it.
		return &Step{Query: q.Name, Kind: planner.StepBatch, Index: len(q.Batches), FromTuple: from, ToTuple: end}, time.Time{}, false
	case closed && q.Arrived > from:
		return &Step{Query: q.Name, Kind: planner.StepBatch, Index: len(q.Batches), FromTuple: from, ToTuple: q.Arrived}, time.Time{}, false
	case closed && done == len(q.Batches) && len(q.Batches) > 0:
		step := q.finalStep()
		return &step, time.Time{}, false
	}
	return nil, recheck, false
}

func (q *Query) retry(now time.Time, s Settings, step Step, last Attempt) (*Step, time.Time, bool) {
	if last.LastAllowed(s.MaxAttempts) {
		return nil, time.Time{}, true
	}
	failures := last.failures()
	eligible := last.Ended.Add(s.Backoff << failures)
	if now.Before(eligible) {
		return nil, eligible, false
	}
	step.Attempt, step.NamesTaken = last.Number+1, last.NamesTaken
	return &step, time.Time{}, false
}

func (q *Query) partialStep(k int) Step {
	c := q.PartialEvery
	first, last := k*c, (k+1)*c-1
	return Step{
		Query: q.Name, Kind: planner.StepPartial, Index: k, Inputs: c,
		FromTuple: q.Batches[first].From, ToTuple: q.Batches[last].To,
	}
}

func (q *Query) finalStep() Step {
	p := len(q.Partials)
	return Step{
		Query: q.Name, Kind: planner.StepFinal, Index: p,
		Inputs: p + len(q.Batches) - p*q.PartialEvery, FromTuple: 0, ToTuple: q.processed(),
	}
}

// nextEnd is where the next batch ends once its tuples have arrived: where
// the plan cuts it, or a batch size after its start.
func (q *Query) nextEnd() int64 {
	from := q.processed()
	if i := len(q.Batches); i < len(q.BatchEnds) && q.BatchEnds[i] > from {
		return q.BatchEnds[i]
	}
	return from + q.BatchSize
}

// lastPlanned reports whether the next batch is the plan's last one.
func (q *Query) lastPlanned() bool {
	i := len(q.Batches)
	return i == len(q.BatchEnds)-1 && q.BatchEnds[i] > q.processed()
}

// processed is where the next batch starts: the end of the last launched
// batch.
func (q *Query) processed() int64 {
	if n := len(q.Batches); n > 0 {
		return q.Batches[n-1].To
	}
	return 0
}

func (q *Query) succeededBatches() int {
	n := 0
	for _, b := range q.Batches {
		if b.State == Succeeded {
			n++
		}
	}
	return n
}

// Remaining is the modelled work left for the query on nodes nodes with
// step launched at now: the batches still to come for the expected total
// (what has arrived, once the window has closed), the partial merges still
// due and the final merge, counted by planner.RemainingSeconds as the plan
// counts them. A batch step counts from its own first tuple, so a retry
// counts the batch it repeats, and in full even past the expected total.
func (q *Query) Remaining(now time.Time, step Step, nodes int) time.Duration {
	return seconds(planner.RemainingSeconds(q.Cost.OnNodes(nodes), q.progress(now, step)))
}

// progress is where the query stands with step launched at now.
func (q *Query) progress(now time.Time, step Step) planner.Progress {
	total := max(q.ExpectedTotal, q.Arrived)
	if !now.Before(q.Closed) {
		total = q.Arrived
	}
	p := planner.Progress{
		Total: total, From: q.processed(), BatchSize: q.BatchSize, Ends: q.BatchEnds, PartialEvery: q.PartialEvery,
		Batches: len(q.Batches), Partials: len(q.Partials),
	}
	if step.Kind == planner.StepBatch {
		p.From, p.Batches = step.FromTuple, step.Index
		p.Total = max(total, step.ToTuple)
	}
	return p
}

// SlackNow is the query's slack at now on nodes nodes, for its status:
// its deadline less the modelled work left from its next batch (the final
// merge once every tuple is in a batch and the window has closed), or,
// when it is done, the time its final merge ended before the deadline. It
// is counted with the work left as modelled.
func (q *Query) SlackNow(now time.Time, nodes int) time.Duration {
	if q.Final != nil && q.Final.State == Succeeded {
		return q.Deadline.Sub(q.Final.Ended)
	}
	next := Step{Kind: planner.StepFinal}
	if n := len(q.Batches); now.Before(q.Closed) || n == 0 || q.processed() < q.Arrived {
		from := q.processed()
		next = Step{Kind: planner.StepBatch, Index: n, FromTuple: from, ToTuple: from}
	}
	return q.Deadline.Sub(now) - q.Remaining(now, next, nodes)
}

// Slack is the query's slack with step launched at now on nodes nodes.
func (q *Query) Slack(now time.Time, step Step, nodes int) time.Duration {
	return q.Deadline.Sub(now) - q.Remaining(now, step, nodes)
}

// TailSlack is Slack less the time the query's plan keeps spare for its
// tail margin (planner.TailHeadroom): what a step must leave it so that the
// plan's headroom after the window closes holds.
func (q *Query) TailSlack(now time.Time, step Step, nodes int) time.Duration {
	left := q.Remaining(now, step, nodes)
	slack := q.Deadline.Sub(now) - left
	if q.TailMargin > 0 {
		slack -= seconds(planner.TailHeadroom(q.TailMargin, 0, left.Seconds(), q.Closed.Sub(now).Seconds()))
	}
	return slack
}

// sizeFor is the largest pool size that ready nodes can hold, 0 when none.
func sizeFor(sizes []int, ready int) int {
	best := 0
	for _, s := range sizes {
		if s <= ready {
			best = s
		}
	}
	return best
}

// Earliest is the earlier of a and b, where the zero time means none.
func Earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}

// RequestAt is the pool size the plan's executable timeline asks for at now:
// the level of the last request point at or before now (the first one before
// the timeline starts).
func RequestAt(origin time.Time, requests []planner.NodeLevel, now time.Time) int {
	if len(requests) == 0 {
		return 0
	}
	offset := now.Sub(origin).Seconds()
	level := requests[0].Nodes
	for _, r := range requests {
		if r.At > offset {
			break
		}
		level = r.Nodes
	}
	return level
}

// Coming is the pool size the plan's executable timeline has asked for by
// now and when the plan expects those nodes ready: a provisioning lead time
// after the request that raised the size to its current level, or, for the
// level the plan starts with, when its node timeline (nodes) first holds
// that many; a plan is made from the pool as it is, whose nodes asked for
// before the plan may still be on their way at its origin.
func Coming(origin time.Time, requests, nodes []planner.NodeLevel, lead time.Duration, now time.Time) (int, time.Time) {
	if len(requests) == 0 {
		return 0, time.Time{}
	}
	offset := now.Sub(origin).Seconds()
	level, by := requests[0].Nodes, origin.Add(seconds(requests[0].At))
	for _, n := range nodes {
		if n.Nodes >= level {
			by = origin.Add(seconds(max(n.At, requests[0].At)))
			break
		}
	}
	for _, r := range requests[1:] {
		if r.At > offset {
			break
		}
		if r.Nodes > level {
			by = origin.Add(seconds(r.At)).Add(lead)
		}
		level = r.Nodes
	}
	return level, by
}

// NextRequestChange is when RequestAt next changes after now, or zero.
func NextRequestChange(origin time.Time, requests []planner.NodeLevel, now time.Time) time.Time {
	offset := now.Sub(origin).Seconds()
	current := RequestAt(origin, requests, now)
	for _, r := range requests {
		if r.At > offset && r.Nodes != current {
			return origin.Add(costmodel.Duration(r.At))
		}
	}
	return time.Time{}
}

// BehindSchedule is the pool size the plan gave the first step that has not
// succeeded yet, when that step should already have started: execution lags
// the plan, and the plan's timeline, which has moved on (possibly to a
// smaller pool or to idle), must not take away the nodes the lagging work
// needs. Zero when execution keeps up. A query with a step that failed on its
// last allowed attempt lags for good and is not waited for: nothing more of
// it will run, and holding nodes for it kept the pool up indefinitely. Nor
// is a query whose final merge succeeded, whatever batches the plan cut
// for it that never ran. In a plan of lanes, each lane lags on its own,
// and the nodes of the lanes that lag add up.
func BehindSchedule(doc *planner.Document, queries []Query, maxAttempts int, now time.Time) int {
	byName := map[string]*Query{}
	for i := range queries {
		byName[queries[i].Name] = &queries[i]
	}
	judged := map[int]bool{}
	lagging := 0
	for _, s := range doc.Steps {
		q := byName[s.Query]
		if judged[s.Lane] || q == nil || q.succeeded() || stepSucceeded(q, s) || failedOutQuery(q, maxAttempts) {
			continue
		}
		judged[s.Lane] = true
		if !doc.Origin.Add(seconds(s.Start)).After(now) {
			lagging += s.Nodes
		}
	}
	return lagging
}

// FailedOut reports whether a failed attempt was the step's last allowed
// one (see Attempt.LastAllowed).
func FailedOut(a Attempt, maxAttempts int) bool {
	return a.State == Failed && a.LastAllowed(maxAttempts)
}

// failedOutQuery reports a query one of whose steps failed on its last
// allowed attempt (Attempt.LastAllowed): dispatch launches nothing more of
// such a query.
func failedOutQuery(q *Query, maxAttempts int) bool {
	out := func(a Attempt) bool { return FailedOut(a, maxAttempts) }
	if q.Final != nil && out(*q.Final) {
		return true
	}
	for _, p := range q.Partials {
		if out(p) {
			return true
		}
	}
	for _, b := range q.Batches {
		if out(b.Attempt) {
			return true
		}
	}
	return false
}

// succeeded reports a query whose final merge succeeded: it is done, even
// if the plan cut more batches than ran (the window brought fewer tuples
// than planned).
func (q *Query) succeeded() bool { return q.Final != nil && q.Final.State == Succeeded }

func stepSucceeded(q *Query, s planner.Step) bool {
	switch s.Kind {
	case planner.StepBatch:
		return s.Index < len(q.Batches) && q.Batches[s.Index].State == Succeeded
	case planner.StepPartial:
		return s.Index < len(q.Partials) && q.Partials[s.Index].State == Succeeded
	default:
		return q.Final != nil && q.Final.State == Succeeded
	}
}

// StuckRule bounds how long a step may hold the pool before it is taken for
// stuck: pending (never picked up, or waiting for executors that do not
// come) or running (a driver that hangs). Bound gives the limit for a step
// modelled to take modelled, margin included.
type StuckRule struct {
	// Factor is how many times its modelled duration a step may take.
	Factor float64
	// MinExtra is the least time a step is given beyond its modelled
	// duration: short steps are dominated by start-up (pulling an image,
	// scheduling a driver), which the cost model does not see.
	MinExtra time.Duration
}

// Bound is how long a step modelled to take modelled may hold the pool:
// max(Factor × modelled, modelled + MinExtra). Zero means no bound (a rule
// with neither field set).
func (r StuckRule) Bound(modelled time.Duration) time.Duration {
	if r.Factor <= 0 && r.MinExtra <= 0 {
		return 0
	}
	return max(costmodel.Duration(r.Factor*modelled.Seconds()), modelled+r.MinExtra)
}

// StuckStep is a launched step that has held the pool past its bound.
type StuckStep struct {
	Query string
	Kind  planner.StepKind
	// Index is the batch index or the merge ordinal; Attempt the stuck
	// attempt's number.
	Index, Attempt int
	// Since is when the attempt was launched (or started, when its launch
	// time is unknown); Modelled its modelled duration on its nodes and
	// Bound the time it was allowed.
	Since           time.Time
	Modelled, Bound time.Duration
}

// Stuck lists the pending or running steps that have held the pool longer
// than rule allows for their modelled duration on their nodes (the query's
// Cost, which carries the plan's runtime margin). A step whose launch and
// start are both unknown is not judged.
func Stuck(now time.Time, rule StuckRule, queries []Query) []StuckStep {
	var out []StuckStep
	for i := range queries {
		q := &queries[i]
		judge := func(a Attempt, step Step) {
			if !q.holdsPool(a, queries) {
				return
			}
			since := a.Launched
			if since.IsZero() || (!a.Started.IsZero() && a.Started.Before(since)) {
				since = a.Started
			}
			if since.IsZero() {
				return
			}
			modelled := seconds(q.attemptSeconds(a, step, queries))
			bound := rule.Bound(modelled)
			if bound <= 0 || now.Sub(since) <= bound {
				return
			}
			out = append(out, StuckStep{Query: q.Name, Kind: step.Kind, Index: step.Index, Attempt: a.Number, Since: since, Modelled: modelled, Bound: bound})
		}
		for k, b := range q.Batches {
			judge(b.Attempt, Step{Kind: planner.StepBatch, Index: k, FromTuple: b.From, ToTuple: b.To})
		}
		for k, p := range q.Partials {
			judge(p, Step{Kind: planner.StepPartial, Index: k, Inputs: p.Inputs})
		}
		if q.Final != nil {
			judge(*q.Final, Step{Kind: planner.StepFinal, Index: len(q.Partials), Inputs: q.Final.Inputs})
		}
	}
	return out
}

// StuckRecheck is the earliest instant after now at which a step holding
// the pool would pass its bound, zero when none will: when to look again.
func StuckRecheck(now time.Time, rule StuckRule, queries []Query) time.Time {
	var next time.Time
	for i := range queries {
		q := &queries[i]
		hold := func(a Attempt, step Step) {
			if !q.holdsPool(a, queries) {
				return
			}
			since := a.Launched
			if since.IsZero() || (!a.Started.IsZero() && a.Started.Before(since)) {
				since = a.Started
			}
			bound := rule.Bound(seconds(q.attemptSeconds(a, step, queries)))
			if since.IsZero() || bound <= 0 {
				return
			}
			// Just past the bound, as Stuck wants more than the bound.
			if at := since.Add(bound + time.Second); at.After(now) {
				next = Earliest(next, at)
			}
		}
		for k, b := range q.Batches {
			hold(b.Attempt, Step{Kind: planner.StepBatch, Index: k, FromTuple: b.From, ToTuple: b.To})
		}
		for _, p := range q.Partials {
			hold(p, Step{Kind: planner.StepPartial, Inputs: p.Inputs})
		}
		if q.Final != nil {
			hold(*q.Final, Step{Kind: planner.StepFinal, Inputs: q.Final.Inputs})
		}
	}
	return next
}

// ExpectedReady is how many nodes the plan's executable timeline expects
// ready at now: a raise is ready a lead time after its request, a drop at
// once, so the lower of the levels asked for now and a lead time ago.
func ExpectedReady(origin time.Time, requests []planner.NodeLevel, lead time.Duration, now time.Time) int {
	return min(RequestAt(origin, requests, now), RequestAt(origin, requests, now.Add(-lead)))
}

// NodesLost reports that nodes the run depends on have gone: the ready
// count fell since the last look (previous), and is now below both what the
// work needs (need: the nodes of the step holding the pool, or of the step
// the plan should have started by now) and what the plan expects ready.
// A planned scale-down lowers the expected count with the ready one and is
// not a loss; nodes still on their way were never ready and are not lost.
func NodesLost(previous, ready, need, expected int) bool {
	return ready < previous && ready < need && ready < expected
}
