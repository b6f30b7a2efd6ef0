package planner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/laxity-dev/laxity/internal/costmodel"
)

// sharedGroup is queries of one stream whose batches are shared steps: the
// same window, arrivals, arrival unit, allowed lateness and partial
// aggregation, so that one cut into batches is every member's, and each
// batch is ready for all of them at once.
type sharedGroup struct {
	stream string
	// members are indices into Workload.Queries, ascending; the first (the
	// lead) names the group in the plan it is searched as.
	members []int
	// mergeOrder is the order the members' merges run in after a shared
	// batch: by deadline, then input order, so that the tightest member's
	// answer is ready first.
	mergeOrder []int
}

// sharingGroups are the groups of two queries or more that Planning.Sharing
// plans as shared steps, in the order of their leads; none when sharing is
// off. A query that differs from every other query of its stream in its
// window, arrivals or partial aggregation is planned alone: slicing a
// stream at differing window boundaries is not built yet.
func sharingGroups(w Workload) []sharedGroup {
	if !w.Planning.Sharing {
		return nil
	}
	var groups []sharedGroup
	for i, q := range w.Queries {
		if q.Stream == "" || keepsSlices(q) {
			// A window that reads only part of itself slices with the
			// other windows of its query.
			continue
		}
		at := slices.IndexFunc(groups, func(g sharedGroup) bool {
			return g.stream == q.Stream && sameArrivals(w.Queries[g.members[0]], q)
		})
		if at < 0 {
			groups = append(groups, sharedGroup{stream: q.Stream})
			at = len(groups) - 1
		}
		groups[at].members = append(groups[at].members, i)
	}
	var out []sharedGroup
	for _, g := range groups {
		order := slices.Clone(g.members)
		slices.SortStableFunc(order, func(a, b int) int {
			return cmp.Compare(w.Queries[a].Deadline, w.Queries[b].Deadline)
		})
		// At most MaxSharedMembers to a group, the tightest together.
		for part := range slices.Chunk(order, MaxSharedMembers) {
			if len(part) > 1 {
				out = append(out, sharedGroup{stream: g.stream, members: slices.Sorted(slices.Values(part)), mergeOrder: slices.Clone(part)})
			}
		}
	}
	return out
}

// MaxSharedMembers bounds the queries one shared step serves: the step
// carries every member's result location in its annotations, arguments and
// Spark conf, and every member's status lists the members of each of its
// shared batches, so that a stream read by thousands of queries would make
// steps and statuses no API server takes. Beyond it, the queries of a
// stream share in groups of it, the tightest deadlines together.
const MaxSharedMembers = 32

// sameArrivals reports whether a and b see the same tuples at the same
// instants and cut them the same way, so that a batch of one is a batch of
// the other.
func sameArrivals(a, b Query) bool {
	return a.WindowStart == b.WindowStart && a.WindowEnd == b.WindowEnd &&
		slices.Equal(a.Rates, b.Rates) && a.Granularity == b.Granularity &&
		a.AllowedLateness == b.AllowedLateness && a.PartialEvery == b.PartialEvery
}

// sharedBatch is the batch model of a shared step over members that read
// a stream whose scan is scan: one overhead, the largest of the scan's and
// the members' own (a member's overhead is the start-up a step pays once,
// and the step starts every member's plan), plus, per tuple, the scan once
// and each member's own work. A member's own work is its batch model less
// the scan, coefficient by coefficient and never below zero: a query's
// declared model is what it costs alone, a read of its tuples included.
// So a shared batch takes at least as long as any member's batch alone on
// the same tuples and nodes, and no longer than all of them one after the
// other when the scan's overhead is at most their sum.
func sharedBatch(scan costmodel.Linear, members []costmodel.Linear) costmodel.Linear {
	shared := scan
	for _, m := range members {
		shared.Overhead = max(shared.Overhead, m.Overhead)
		shared.Serial += max(m.Serial-scan.Serial, 0)
		shared.Parallel += max(m.Parallel-scan.Parallel, 0)
	}
	return shared
}

// groupQuery is group g of w as the one query the search plans it as: the
// lead's window and arrivals, the shared batch model, every member's
// merges one after the other (a merge model that is the sum of theirs, the
// members' partial aggregation being the same), and a deadline that holds
// every member to its own. Members plan with their own margins: the
// group's margin is the largest, and each member's part is scaled down to
// its own.
//
// The deadline: after the group's last batch the members' final merges run
// in mergeOrder, so member i is done the merges of the members after it
// before the group. The group is held to min over i of (deadline of i +
// the least time the merges after i can take: one input on the largest
// pool size), so that a group done by it has every member done by its own
// deadline, whatever the pool size and the number of inputs.
func groupQuery(w Workload, g sharedGroup, scan costmodel.Linear) Query {
	margins := make([]float64, len(g.members))
	for i, m := range g.members {
		margins[i] = max(w.Queries[m].Margin, w.Planning.RuntimeMargin)
	}
	top := slices.Max(margins)
	parts := make([]costmodel.Linear, len(g.members))
	var merge costmodel.Linear
	for i, m := range g.members {
		own := w.Queries[m].Cost
		if margins[i] != top {
			// The scan is priced at the group's margin, a member's own
			// part (what sharedBatch adds beyond the scan) at its own.
			rel := (1 + margins[i]) / (1 + top)
			own = own.Scaled(rel)
			own.Batch.Serial = scan.Serial + max(own.Batch.Serial-rel*scan.Serial, 0)
			own.Batch.Parallel = scan.Parallel + max(own.Batch.Parallel-rel*scan.Parallel, 0)
		}
		parts[i] = own.Batch
		merge.Overhead += own.Merge.Overhead
		merge.Serial += own.Merge.Serial
		merge.Parallel += own.Merge.Parallel
	}
	largest := w.Pool.Sizes[len(w.Pool.Sizes)-1]
	deadline, after := math.Inf(1), 0.0
	for _, m := range slices.Backward(g.mergeOrder) {
		q := w.Queries[m]
		deadline = min(deadline, q.Deadline+after)
		after += q.Planned(w.Planning).MergeSeconds(largest, 1)
	}
	q := w.Queries[g.members[0]]
	q.Cost = costmodel.Model{Batch: sharedBatch(scan, parts), Merge: merge}
	q.Margin = top
	for _, m := range g.members {
		q.TailMargin = max(q.TailMargin, w.Queries[m].TailMargin)
	}
	q.Deadline = deadline
	q.Stream = ""
	return q
}

// validateStreams reports a stream declared twice, a scan model that is
// not one, or a query that reads a stream the workload does not declare.
func validateStreams(w Workload) error {
	seen := map[string]bool{}
	for _, s := range w.Streams {
		if s.Name == "" || seen[s.Name] {
			return &InvalidError{Schedule: w.Name, Err: fmt.Errorf("stream %q: a stream needs a name of its own", s.Name)}
		}
		seen[s.Name] = true
		err := s.Scan.CheckBounds(MaxCoefficient)
		if s.Scan != (costmodel.Linear{}) {
			// A scan that costs nothing is a model: reading is free.
			err = errors.Join(s.Scan.Validate(), err)
		}
		if err != nil {
			return &InvalidError{Schedule: w.Name, Err: fmt.Errorf("stream %q: scan: %w", s.Name, err)}
		}
	}
	for _, q := range w.Queries {
		if q.Stream != "" && !seen[q.Stream] {
			return &InvalidError{Schedule: w.Name, Query: q.Name, Err: fmt.Errorf("spec.input.stream: no stream %q is declared", q.Stream)}
		}
	}
	return nil
}

// planSharing plans w with its sharing groups and returns the plan that
// bills least with every deadline met, alone (w planned with nothing
// shared) when no shared plan is cheaper.
//
// A group shares its batches until its last, so its tightest member's
// deadline holds every member's tail: the group's last batch carries every
// member's work and their final merges follow one after the other. When
// the tightest members' deadlines come well before the others', that tail
// can need a pool far larger than either part would alone. So each group is
// also tried cut in two at every place of its deadline order (the tighter
// members sharing among themselves, the looser among themselves; a part of
// one plans alone). The cuts are ranked by their grid plans, and the
// whole groups and the best two cuts planned in full: on the sample at 4x
// on one stream this takes a third of the time of planning every cut in
// full, for a plan within 7% of its bill.
func planSharing(ctx context.Context, w Workload, groups []sharedGroup, alone Document) (Document, error) {
	// Every cut is ranked by its grid plan, which is quick, and the
	// uncut groups and the cuts whose grid plans rank best are then
	// planned in full.
	grid := w
	grid.Planning.GridOnly = true
	type ranked struct {
		cuts []int
		doc  Document
	}
	var options []ranked
	rank := func(cuts []int) error {
		cut := cutGroups(groups, cuts)
		if len(cut) == 0 {
			// Every part is one query: that is the plan alone.
			return nil
		}
		doc, err := planShared(ctx, grid, cut)
		if err == nil && doc.Chosen.Feasible {
			options = append(options, ranked{cuts, doc})
		}
		if shapeRefused(err) {
			return nil
		}
		return err
	}
	whole := make([]int, len(groups))
	for i, g := range groups {
		for cut := 1; cut < len(g.members); cut++ {
			tried := slices.Clone(whole)
			tried[i] = cut
			if err := rank(tried); err != nil {
				return Document{}, err
			}
		}
	}
	slices.SortStableFunc(options, func(a, b ranked) int {
		first, _ := w.Planning.Objective.ranked(a.doc.Chosen.Cost, a.doc.Chosen.ExecutableCost)
		other, _ := w.Planning.Objective.ranked(b.doc.Chosen.Cost, b.doc.Chosen.ExecutableCost)
		return cmp.Compare(first, other)
	})
	finalists := [][]int{whole}
	for _, o := range options[:min(len(options), sharingFinalists)] {
		finalists = append(finalists, o.cuts)
	}
	best := alone
	for _, cuts := range finalists {
		doc, err := planShared(ctx, w, cutGroups(groups, cuts))
		if shapeRefused(err) {
			continue
		}
		if err != nil {
			return Document{}, err
		}
		if cheaper(doc, best, w.Planning.Objective) {
			best = doc
		}
	}
	return best, nil
}

// cutGroups is groups with group i cut after its first cuts[i] members in
// deadline order (0: not cut); a part of one member is left out, to plan
// alone.
func cutGroups(groups []sharedGroup, cuts []int) []sharedGroup {
	var out []sharedGroup
	for i, g := range groups {
		if cuts[i] == 0 {
			out = append(out, g)
			continue
		}
		for _, part := range [][]int{g.mergeOrder[:cuts[i]], g.mergeOrder[cuts[i]:]} {
			if len(part) < 2 {
				continue
			}
			members := slices.Sorted(slices.Values(part))
			out = append(out, sharedGroup{stream: g.stream, members: members, mergeOrder: slices.Clone(part)})
		}
	}
	return out
}

// planShared plans w with each group as one query (groupedWorkload) and
// writes the plan back in the members' terms (expandShared).
func planShared(ctx context.Context, w Workload, groups []sharedGroup) (Document, error) {
	doc, err := planSliced(ctx, groupedWorkload(w, groups), nil)
	if err != nil {
		return Document{}, err
	}
	return expandShared(doc, w, groups), nil
}

// groupedWorkload is w with each group one query, named by its lead, in
// its lead's place (groupQuery), and every other query as it is.
func groupedWorkload(w Workload, groups []sharedGroup) Workload {
	scans := map[string]costmodel.Linear{}
	for _, s := range w.Streams {
		scans[s.Name] = s.Scan
	}
	grouped := w
	grouped.Queries = nil
	grouped.Streams = nil
	grouped.Planning.Sharing = false
	member := make([]bool, len(w.Queries))
	lead := map[int]sharedGroup{}
	for _, g := range groups {
		lead[g.members[0]] = g
		for _, m := range g.members {
			member[m] = true
		}
	}
	for i, q := range w.Queries {
		if g, ok := lead[i]; ok {
			grouped.Queries = append(grouped.Queries, groupQuery(w, g, scans[g.stream]))
		} else if !member[i] {
			grouped.Queries = append(grouped.Queries, q)
		}
	}
	return grouped
}

// expandShared writes doc, planned with each group as its lead's query,
// in the members' terms: a group's batches name every member, its merges
// become each member's own in mergeOrder, and each member's summary has
// its own finish, deadline and slack, in w's query order.
func expandShared(doc Document, w Workload, groups []sharedGroup) Document {
	byLead := map[string]sharedGroup{}
	for _, g := range groups {
		byLead[w.Queries[g.members[0]].Name] = g
	}
	finish := map[string]float64{}
	steps := make([]Step, 0, len(doc.Steps))
	for _, s := range doc.Steps {
		g, shared := byLead[s.Query]
		switch {
		case !shared:
			steps = append(steps, s)
		case s.Kind == StepBatch:
			for _, m := range g.members {
				s.Members = append(s.Members, w.Queries[m].Name)
			}
			steps = append(steps, s)
		default:
			at := s.Start
			for i, m := range g.mergeOrder {
				q := w.Queries[m]
				merge := s
				merge.Query, merge.Ready, merge.Start = q.Name, at, at
				merge.End = at + q.Planned(w.Planning).MergeSeconds(s.Nodes, s.Inputs)
				if i == len(g.mergeOrder)-1 {
					// The group's merge is the sum; its end is the plan's.
					merge.End = s.End
				}
				at = merge.End
				steps = append(steps, merge)
				if s.Kind == StepFinal {
					finish[q.Name] = merge.End
				}
			}
		}
	}
	doc.Steps = steps
	plans := map[string]QueryPlan{}
	for _, qp := range doc.Queries {
		plans[qp.Name] = qp
	}
	leadOf := map[int]string{}
	for _, g := range groups {
		for _, m := range g.members {
			leadOf[m] = w.Queries[g.members[0]].Name
		}
	}
	queries := make([]QueryPlan, 0, len(w.Queries))
	for i, q := range w.Queries {
		lead, shared := leadOf[i]
		if !shared {
			queries = append(queries, plans[q.Name])
			continue
		}
		qp := plans[lead]
		qp.Name, qp.Finish, qp.Deadline, qp.Slack = q.Name, finish[q.Name], q.Deadline, q.Deadline-finish[q.Name]
		queries = append(queries, qp)
	}
	doc.Queries = queries
	if f := doc.Chosen.Failure; f != nil {
		if g, shared := byLead[f.Query]; shared {
			doc.Chosen.Failure = groupFailure(w, g, finish, f)
		}
	}
	return doc
}

// groupFailure names the member of a late group that is late first; when
// none is (the group's deadline holds each member to its own with room to
// spare), the member with the tightest deadline, late by what the group is.
func groupFailure(w Workload, g sharedGroup, finish map[string]float64, f *Failure) *Failure {
	for _, m := range g.mergeOrder {
		q := w.Queries[m]
		if late := finish[q.Name] - q.Deadline; late > eps {
			return &Failure{Query: q.Name, LateSeconds: late}
		}
	}
	return &Failure{Query: w.Queries[g.mergeOrder[0]].Name, LateSeconds: f.LateSeconds}
}

// cheaper reports whether doc meets every deadline and bills less than
// best, or best does not meet them; or, when neither does, whether doc is
// late by less. On the same bill, the plan with less
// work (the other bill, of nodes held only while steps run) is cheaper:
// with the pool held at its smallest size all along, sharing reads the
// stream fewer times for the same money.
func cheaper(doc, best Document, objective Objective) bool {
	if !doc.Chosen.Feasible {
		// Of two plans that miss a deadline, the one late by less: a
		// re-plan that cannot meet every deadline still runs the best it
		// can.
		return !best.Chosen.Feasible && doc.Chosen.Failure != nil && best.Chosen.Failure != nil &&
			doc.Chosen.Failure.LateSeconds < best.Chosen.Failure.LateSeconds-eps
	}
	if !best.Chosen.Feasible {
		return true
	}
	first, second := objective.ranked(doc.Chosen.Cost, doc.Chosen.ExecutableCost)
	bestFirst, bestSecond := objective.ranked(best.Chosen.Cost, best.Chosen.ExecutableCost)
	return first < bestFirst-costTolerance || first <= bestFirst+costTolerance && second < bestSecond-costTolerance
}

// sharingFinalists is how many cuts ranked by their grid plans are planned
// in full.
const sharingFinalists = 2
