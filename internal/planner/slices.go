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

// Sliding windows: windows of one query over one stream that overlap ("the
// last hour, every ten minutes") read most of their tuples again. With
// sharing, the stream is cut at every window start and end of such a group
// into slices; each slice is read once, by batches of the window that ends
// first among those containing it (its owner), and its result is kept: a
// partial merge of the slice's batches, or, for the slice that ends its
// owner's window, the owner's final merge, which combines the window's own
// batches with the results of the slices before it in the window (carried).
// At steady state each window reads only its newest slice, and its final
// merge combines as many slice results as its window has slices.

// slidingGroup is windows of one query over one stream that overlap one
// another, by window start.
type slidingGroup struct {
	members []int
}

// slidingKey is what windows of one query have in common: the same stream,
// models, arrivals and window length; only where the window falls differs.
type slidingKey struct {
	stream          string
	cost            costmodel.Model
	margin          float64
	rate            float64
	length          float64
	granularity     int64
	allowedLateness float64
	partialEvery    float64
}

func slidingKeyOf(q Query) slidingKey {
	return slidingKey{
		stream: q.Stream, cost: q.Cost,
		margin: q.Margin, rate: q.Rates[0].TuplesPerSecond, length: onTheGrain(q.WindowEnd - q.WindowStart),
		granularity: q.Granularity, allowedLateness: q.AllowedLateness, partialEvery: q.PartialEvery,
	}
}

// grain is the finest time slices are cut at: a window's bounds come from
// instants in the API, and two bounds closer than this are one.
const grain = 1e-3

// onTheGrain is seconds rounded to the grain, so that window lengths and
// bounds computed from different origins compare equal.
func onTheGrain(seconds float64) float64 { return math.Round(seconds/grain) * grain }

// slidingGroups are the groups of overlapping windows that Planning.Sharing
// with Planning.Slices plans in slices; none otherwise. A window slices only when its
// arrival rate is one constant rate, so that a slice's tuples arrive the
// same way whichever window it belongs to, and when it carries nothing yet.
func slidingGroups(w Workload) []slidingGroup {
	if !w.Planning.Sharing || !w.Planning.Slices {
		return nil
	}
	byKey := map[slidingKey][]int{}
	var keys []slidingKey
	for i, q := range w.Queries {
		if q.Stream == "" || len(q.Rates) != 1 {
			continue
		}
		k := slidingKeyOf(q)
		if _, seen := byKey[k]; !seen {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], i)
	}
	var groups []slidingGroup
	for _, k := range keys {
		members := byKey[k]
		slices.SortStableFunc(members, func(a, b int) int { return cmp.Compare(w.Queries[a].WindowStart, w.Queries[b].WindowStart) })
		if repeatsWindow(w, members) {
			// The same window twice is two queries that share whole
			// batches (sharingGroups), or read alone; slicing the
			// stream under a window read whole would read it twice.
			continue
		}
		var chain []int
		flush := func() {
			if g := (slidingGroup{members: chain}); len(chain) > 1 && g.slicesHoldTuples(w) {
				groups = append(groups, g)
			}
			chain = nil
		}
		for _, m := range members {
			if n := len(chain); n > 0 {
				if last := w.Queries[chain[n-1]]; w.Queries[m].WindowStart >= last.WindowEnd {
					flush()
				}
			}
			chain = append(chain, m)
		}
		flush()
	}
	return groups
}

// repeatsWindow reports whether two of members, sorted by window start,
// start closer than the grain: the same window, their length being the
// key's.
func repeatsWindow(w Workload, members []int) bool {
	for i := 1; i < len(members); i++ {
		if sameInstant(w.Queries[members[i]].WindowStart, w.Queries[members[i-1]].WindowStart) {
			return true
		}
	}
	return false
}

// sameInstant reports whether a and b are one instant to the planner:
// closer than the grain.
func sameInstant(a, b float64) bool { return math.Abs(a-b) < grain }

// slicesHoldTuples reports whether every slice of g holds a tuple: windows
// that start less than a tuple's time apart have nothing to share a slice
// of, and are planned alone.
func (g slidingGroup) slicesHoldTuples(w Workload) bool {
	for _, s := range g.cut(w) {
		q := w.Queries[s.owner]
		if tuplesBefore(q, s.end)-tuplesBefore(q, s.start) < 1 {
			return false
		}
	}
	return true
}

// slice is one piece of a sliding group's stream: [start, end), read by
// its owner's batches.
type slice struct {
	owner      int
	start, end float64
	// last is whether the slice ends its owner's window: its merge is the
	// owner's final merge.
	last bool
	// carried is, for the last slice, the other slices of the owner's
	// window, whose results its final merge combines.
	carried int
}

// cut is group g of w cut into slices, in time order.
func (g slidingGroup) cut(w Workload) []slice {
	var bounds []float64
	for _, m := range g.members {
		bounds = append(bounds, readStart(w.Queries[m]), w.Queries[m].WindowEnd)
	}
	slices.Sort(bounds)
	bounds = slices.CompactFunc(bounds, sameInstant)
	var out []slice
	for i := 0; i+1 < len(bounds); i++ {
		start, end := bounds[i], bounds[i+1]
		owner := -1
		for _, m := range g.members {
			q := w.Queries[m]
			if readStart(q) < start+grain && q.WindowEnd > end-grain && (owner < 0 || q.WindowEnd < w.Queries[owner].WindowEnd) {
				owner = m
			}
		}
		if owner < 0 {
			continue
		}
		out = append(out, slice{owner: owner, start: start, end: end, last: end > w.Queries[owner].WindowEnd-grain})
	}
	for i := range out {
		if !out[i].last {
			continue
		}
		q := w.Queries[out[i].owner]
		out[i].carried = q.Carried
		for j, s := range out {
			if j != i && s.start > q.WindowStart-grain && s.end < q.WindowEnd+grain {
				out[i].carried++
			}
		}
	}
	return out
}

// owned is the part of a window its own batches read: its slices, from
// start to its window's end, cut where each slice but the last ends, and
// the results of the other slices of its window its final merge carries.
type owned struct {
	start   float64
	cuts    []float64
	carried int
}

// readStart is where q's own batches start reading: its window's start,
// or ReadFrom when earlier windows kept the slices before it.
func readStart(q Query) float64 {
	if keepsSlices(q) {
		return q.ReadFrom
	}
	return q.WindowStart
}

// keepsSlices reports whether earlier windows kept slices of q's window:
// it carries their results.
func keepsSlices(q Query) bool { return q.Carried > 0 }

// validateKept reports a query whose kept slices do not add up: ReadFrom
// at or after its window's end, kept slices without results to carry, or
// results without kept slices.
func validateKept(w Workload) error {
	for _, q := range w.Queries {
		var err error
		switch {
		case len(q.Cuts) > 0:
			err = errors.New("slice ends are the planner's to set: a query as given has none")
		case q.Carried < 0 || q.Carried > MaxCarried:
			err = fmt.Errorf("the final merge carries %d kept results; between 0 and %d are supported", q.Carried, MaxCarried)
		case !keepsSlices(q):
		case !finiteIn(q.ReadFrom, -maxCoordinate, maxCoordinate):
			err = fmt.Errorf("the kept slices end at %s from the plan origin, out of range", human(q.ReadFrom))
		case q.ReadFrom >= q.WindowEnd || len(q.Rates) > 0 && tuplesBefore(q, q.WindowEnd)-tuplesBefore(q, q.ReadFrom) < 1:
			err = fmt.Errorf("the kept slices end at %s, where less than a tuple of the window is left to read", human(q.ReadFrom))
		case q.ReadFrom <= q.WindowStart+grain:
			err = fmt.Errorf("the final merge carries %d kept results, but no slice of the window is kept", q.Carried)
		}
		if err != nil {
			return &InvalidError{Schedule: w.Name, Query: q.Name, Err: err}
		}
	}
	return nil
}

// ownedParts is, by window, the part of it each window reads that does not
// read its whole window: a window of a sliding group reads the slices it
// owns; any other window whose earlier slices were kept, from ReadFrom.
func ownedParts(w Workload, groups []slidingGroup) map[int]owned {
	parts := map[int]owned{}
	for i, q := range w.Queries {
		if keepsSlices(q) {
			parts[i] = owned{start: q.ReadFrom, carried: q.Carried}
		}
	}
	for _, g := range groups {
		for _, m := range g.members {
			delete(parts, m)
		}
	}
	for _, g := range groups {
		for _, s := range g.cut(w) {
			o, seen := parts[s.owner]
			if !seen {
				o.start = s.start
			} else {
				o.cuts = append(o.cuts, s.start)
			}
			if s.last {
				o.carried = s.carried
			}
			parts[s.owner] = o
		}
	}
	return parts
}

// slicedWorkload is w with each window of a sliding group reading only the
// part of it it owns (ownedParts).
func slicedWorkload(w Workload, groups []slidingGroup) (Workload, map[int]owned) {
	parts := ownedParts(w, groups)
	out := w
	out.Queries = slices.Clone(w.Queries)
	out.Planning.Sharing = false
	for i, o := range parts {
		q := &out.Queries[i]
		q.Rates = ratesFrom(*q, o.start)
		q.WindowStart, q.ReadFrom, q.Cuts, q.Carried, q.Stream = o.start, 0, o.cuts, o.carried, ""
	}
	return out, parts
}

// ratesFrom is q's rate profile for a window that starts at at instead:
// the segment in force at at first, the later ones after it.
func ratesFrom(q Query, at float64) []RateSegment {
	shift := at - q.WindowStart
	var out []RateSegment
	for i, r := range q.Rates {
		if i+1 < len(q.Rates) && q.Rates[i+1].Offset <= shift {
			continue
		}
		out = append(out, RateSegment{Offset: max(r.Offset-shift, 0), TuplesPerSecond: r.TuplesPerSecond})
	}
	return out
}

// planSliced plans w with its sliding groups cut into slices, and every
// window whose earlier slices were kept reading from where they end, and
// writes the plan back in the windows' terms.
func planSliced(ctx context.Context, w Workload, groups []slidingGroup) (Document, error) {
	if len(groups) == 0 && !slices.ContainsFunc(w.Queries, keepsSlices) {
		return planAlone(ctx, w)
	}
	sliced, parts := slicedWorkload(w, groups)
	doc, err := planAlone(ctx, sliced)
	if err != nil {
		return Document{}, err
	}
	if f := slicesOutOfOrder(doc, w, parts); f != nil && doc.Chosen.Feasible {
		// The grid's cells were judged on the sliced workload, in which
		// the order of the slices is not a deadline; none is known to run.
		doc.Chosen.Feasible, doc.Chosen.Failure, doc.MaxSupportedRateFactor = false, f, 0
		for i := range doc.Candidates {
			doc.Candidates[i].Feasible = false
		}
	}
	return expandSliced(doc, w, sliced, parts), nil
}

// slicesOutOfOrder is the first window whose final merge, in doc, starts
// before the result of a slice of its window that another window reads is
// kept, and by how much; nil when none does. The search orders steps by
// their own deadlines, and an earlier slice's deadline is earlier, so this
// is rare; a plan that does it cannot run, and is not taken.
func slicesOutOfOrder(doc Document, w Workload, parts map[int]owned) *Failure {
	index := map[string]int{}
	for i, q := range w.Queries {
		index[q.Name] = i
	}
	// kept[i] is when each result of window i's slices is kept, by the
	// instant the slice ends: its partial merges and its final merge.
	kept := map[int][]Step{}
	for _, st := range doc.Steps {
		if i := index[st.Query]; st.Kind != StepBatch {
			kept[i] = append(kept[i], st)
		}
	}
	for _, st := range doc.Steps {
		i := index[st.Query]
		if _, sliced := parts[i]; !sliced || st.Kind != StepFinal {
			continue
		}
		q := w.Queries[i]
		for j, o := range w.Queries {
			if _, sliced := parts[j]; !sliced || j == i || o.WindowEnd <= q.WindowStart || parts[j].start >= q.WindowEnd {
				continue
			}
			// Window j reads slices inside window i; the last kept of
			// them ends before i's final merge starts.
			for _, k := range kept[j] {
				if k.End > st.Start+eps && keepsInside(k, o, parts[j], q) {
					return &Failure{Query: q.Name, LateSeconds: k.End - st.Start}
				}
			}
		}
	}
	return nil
}

// keepsInside reports whether merge step k of window o, which reads part,
// keeps the result of a slice inside window q.
func keepsInside(k Step, o Query, part owned, q Query) bool {
	end := o.WindowEnd
	if k.Kind == StepPartial && k.Index < len(part.cuts) {
		end = part.cuts[k.Index]
	}
	return end > q.WindowStart+grain && end <= q.WindowEnd+grain
}

// tuplesBefore is how many of q's tuples, numbered from its window start,
// arrive before at.
func tuplesBefore(q Query, at float64) int64 {
	if at <= q.WindowStart {
		return 0
	}
	q.WindowEnd = math.Min(at, q.WindowEnd)
	return newArrivals(q, 1).total()
}

// expandSliced writes doc, planned on sliced (w with each window of a
// sliding group reading only the part it owns), in the windows' own terms:
// their tuples numbered from their window's start, and their final merges
// over the whole window.
func expandSliced(doc Document, w, sliced Workload, parts map[int]owned) Document {
	// renumber is, by window, its part's tuples counted from its window's
	// start. They may differ by one from a count from the part's own start
	// where a rate does not fill whole tuples: the part's end is the
	// window's last tuple.
	type renumber struct{ shift, part, end int64 }
	by := map[string]renumber{}
	for i := range parts {
		q := w.Queries[i]
		by[q.Name] = renumber{
			shift: tuplesBefore(q, parts[i].start),
			part:  newArrivals(sliced.Queries[i], 1).total(),
			end:   newArrivals(q, 1).total(),
		}
	}
	for k, st := range doc.Steps {
		r, ok := by[st.Query]
		if !ok {
			continue
		}
		if st.Kind == StepFinal {
			st.FromTuple, st.ToTuple = 0, r.end
		} else {
			at := func(x int64) int64 {
				if x == r.part {
					return r.end
				}
				return min(r.shift+x, r.end)
			}
			st.FromTuple, st.ToTuple = at(st.FromTuple), at(st.ToTuple)
		}
		doc.Steps[k] = st
	}
	return doc
}
