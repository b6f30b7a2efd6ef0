package planner

import (
	"context"
	"reflect"
	"slices"
	"sync"
)

// A plan that may run steps side by side (Planning.Concurrent) starts from
// the plan one step at a time of every shape it tries (planAlone), and the
// bill without steps side by side is that same workload planned again with
// Concurrent off: the second search would make every one of those plans
// once more. A context from RememberOneAtATime keeps them, so that the
// second search reuses what the first made.

// oneAtATimeKey is the context key of the plans one step at a time kept.
type oneAtATimeKey struct{}

// oneAtATimePlans are the plans one step at a time made under one context:
// each with the workload it planned (Concurrent off, which such a plan does
// not read) and the improvement phase's share.
type oneAtATimePlans struct {
	mu    sync.Mutex
	plans []keptPlan
}

type keptPlan struct {
	w     Workload
	share float64
	doc   Document
}

// RememberOneAtATime returns a context under which the plans one step at a
// time that PlanContext makes are kept and made only once: planning the
// same workload again with Planning.Concurrent off, for its bill, then
// costs next to nothing. The plans are the same as without it.
func RememberOneAtATime(ctx context.Context) context.Context {
	return context.WithValue(ctx, oneAtATimeKey{}, &oneAtATimePlans{})
}

// keptOneAtATime is w's plan one step at a time for share kept under ctx,
// if any; plan makes it and keeps it otherwise.
func keptOneAtATime(ctx context.Context, w Workload, share float64, plan func() (Document, error)) (Document, error) {
	kept, _ := ctx.Value(oneAtATimeKey{}).(*oneAtATimePlans)
	if kept == nil {
		return plan()
	}
	w.Planning.Concurrent = false
	if doc, ok := kept.find(w, share); ok {
		return doc, nil
	}
	doc, err := plan()
	if err != nil {
		return doc, err
	}
	kept.mu.Lock()
	defer kept.mu.Unlock()
	kept.plans = append(kept.plans, keptPlan{w: w, share: share, doc: doc.clone()})
	return doc, nil
}

func (k *oneAtATimePlans) find(w Workload, share float64) (Document, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, p := range k.plans {
		if p.share == share && reflect.DeepEqual(p.w, w) {
			return p.doc.clone(), true
		}
	}
	return Document{}, false
}

// clone is d with its own copies of what the search changes in place when
// it moves, expands or joins a plan, so a kept plan stays as it was made.
func (d Document) clone() Document {
	d.Candidates = slices.Clone(d.Candidates)
	d.Queries = slices.Clone(d.Queries)
	d.Steps = slices.Clone(d.Steps)
	d.Nodes = slices.Clone(d.Nodes)
	d.Requests = slices.Clone(d.Requests)
	if f := d.Chosen.Failure; f != nil {
		copied := *f
		d.Chosen.Failure = &copied
	}
	return d
}
