package planner

import (
	"slices"
	"time"

	"github.com/laxity-dev/laxity/internal/costmodel"
)

// WithOrigin is w with its times measured from origin instead of w.Origin:
// every query's window, deadline, kept slices' end and slice cuts.
func WithOrigin(w Workload, origin time.Time) Workload {
	ahead := origin.Sub(w.Origin).Seconds()
	w.Origin = origin
	w.Queries = slices.Clone(w.Queries)
	for i := range w.Queries {
		q := &w.Queries[i]
		q.WindowStart -= ahead
		q.WindowEnd -= ahead
		q.Deadline -= ahead
		if q.Carried > 0 {
			q.ReadFrom -= ahead
		}
		if len(q.Cuts) > 0 {
			cuts := make([]float64, len(q.Cuts))
			for k, c := range q.Cuts {
				cuts[k] = c - ahead
			}
			q.Cuts = cuts
		}
	}
	return w
}

// afterHeld is w, whose pool has steps held from before its origin (Held),
// planned from by seconds after its origin, when they have freed their
// nodes: the pool as it will be then, with nothing held.
func afterHeld(w Workload, by float64) Workload {
	now := *w.Pool.Now
	now.Held = nil
	now.RequestedBy = max(now.RequestedBy-by, 0)
	now.MoreBy = max(now.MoreBy-by, 0)
	if by > 0 {
		w = WithOrigin(w, w.Origin.Add(costmodel.Duration(by)))
	}
	w.Pool.Now = &now
	return w
}

// shiftedBack is doc, a plan from by seconds after origin, with its times
// measured from origin: its steps, queries and node timelines start by
// seconds later. The nodes the held steps hold until then are theirs, not
// the plan's.
func shiftedBack(doc Document, origin time.Time, by float64) Document {
	if by <= 0 {
		return doc
	}
	doc.Origin = origin
	for i := range doc.Steps {
		s := &doc.Steps[i]
		s.Ready += by
		s.Start += by
		s.End += by
	}
	for i := range doc.Queries {
		doc.Queries[i].Finish += by
		doc.Queries[i].Deadline += by
	}
	for _, timeline := range [][]NodeLevel{doc.Nodes, doc.Requests} {
		for i := range timeline {
			timeline[i].At += by
		}
	}
	return doc
}

// withHeld is doc, a plan for w, with the nodes of the steps held from
// before its origin (w.Pool.Now.Held) in its node timelines and bills, each
// until it is expected to free them: the pool holds them whatever the
// plan does, and a lane that starts while another lane's step still runs
// needs its nodes beside that step's, so the pool must be asked for both.
// Plans one step at a time and in lanes are priced alike so.
func withHeld(doc Document, w Workload) Document {
	now := w.Pool.Now
	if now == nil || len(doc.Nodes) == 0 {
		return doc
	}
	var ends []float64
	held := 0
	for _, h := range now.Held {
		if h.FreeAt > 0 {
			ends = append(ends, h.FreeAt)
			held += h.Nodes
		}
	}
	if held == 0 {
		return doc
	}
	slices.Sort(ends)
	timeline := []NodeLevel{{At: 0, Nodes: held}}
	for _, end := range slices.Compact(ends) {
		for _, h := range now.Held {
			if h.FreeAt == end {
				held -= h.Nodes
			}
		}
		timeline = append(timeline, NodeLevel{At: end, Nodes: held})
	}
	doc.Nodes = sumTimelines([][]NodeLevel{timeline, doc.Nodes}, w.Pool.IdleNodes)
	doc.Requests = RequestTimeline(doc.Nodes, w.Pool)
	doc.Chosen.Cost, doc.Chosen.ExecutableCost = Cost(doc.Nodes, w.Pool), Cost(doc.Requests, w.Pool)
	return doc
}
