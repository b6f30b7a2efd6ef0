package controllers

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/planner"
)

// SearchLane runs the plan searches known to be long (a schedule whose last
// search ran out of its time budget, or one that outgrew the time a
// reconcile worker gives a search) on goroutines of its own, outside the
// ElasticSchedule controller's workers: however many of them there are,
// they never hold a worker, so the other schedules' passes, and their short
// searches, go on. It is a manager Runnable (Start).
//
// A reconcile pass hands the lane its search and ends; the lane runs the
// searches one schedule at a time per goroutine, taking the namespaces in
// turn so that one namespace's many schedules do not hold back another's,
// and wakes the schedule when its search has ended. The schedule's next
// pass takes the result (take) and acts on it as on a search of its own.
// The lane holds at most one search per schedule: a newer one (the specs
// changed) replaces it, and a running one it replaces is cancelled.
type SearchLane struct {
	// Workers is how many long searches run at once (0 means 1).
	Workers int
	// Wake is told of the schedule whose search ended; nil tells no one
	// (the pass's requeue finds the result).
	Wake chan<- event.TypedGenericEvent[*laxityv1alpha1.ElasticSchedule]

	mu      sync.Mutex
	ready   chan struct{}
	entries map[types.NamespacedName]*laneSearch
	// turn is the namespace whose search started last: the next one is
	// taken from the namespace after it, in name order.
	turn string
	// outgrown holds the schedules (by UID) whose last search outgrew a
	// worker's share of the budget: their next searches go to the lane at
	// once instead of spending that share again on a search to be cut
	// short, until one ends within the share.
	outgrown map[types.NamespacedName]types.UID
}

// laneSearch is one schedule's search in the lane.
type laneSearch struct {
	schedule types.NamespacedName
	uid      types.UID
	// inputs is the hash of the specs searched (inputsHash).
	inputs string
	budget time.Duration
	run    search
	queued time.Time
	// cancel ends the search when it runs; nil before it starts.
	cancel  context.CancelFunc
	running bool
	done    bool
	result  searchResult
}

// search is one plan search, ready to run: what a pass read, fixed.
type search func(ctx context.Context) (planner.Document, map[string]float64, error)

// searchResult is the outcome of one search, and the compute time it took.
type searchResult struct {
	doc     planner.Document
	assumed map[string]float64
	err     error
	took    time.Duration
}

// runSearch runs s within budget, in compute time.
func runSearch(ctx context.Context, s search, budget time.Duration) searchResult {
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	wall := time.Now() // plan_search_seconds is compute time, whatever the reconcilers' clock is
	doc, assumed, err := s(ctx)
	return searchResult{doc: doc, assumed: assumed, err: err, took: time.Since(wall)}
}

func (l *SearchLane) init() {
	if l.entries == nil {
		l.entries = map[types.NamespacedName]*laneSearch{}
		l.outgrown = map[types.NamespacedName]types.UID{}
		l.ready = make(chan struct{}, 1)
	}
}

// submit queues a schedule's search, in place of any earlier one of the
// schedule, which is cancelled if it runs.
func (l *SearchLane) submit(s *laneSearch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	if old := l.entries[s.schedule]; old != nil && old.cancel != nil {
		old.cancel()
	}
	l.entries[s.schedule] = s
	select {
	case l.ready <- struct{}{}:
	default:
	}
}

// state says whether the lane holds a search of the schedule with uid of
// inputs, and whether it has ended.
func (l *SearchLane) state(key types.NamespacedName, uid types.UID, inputs string) (held, done bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.entries[key]
	if s == nil || s.uid != uid || s.inputs != inputs {
		return false, false
	}
	return true, s.done
}

// take hands over the result of the schedule's ended search of inputs and
// forgets it.
func (l *SearchLane) take(key types.NamespacedName, uid types.UID, inputs string) (searchResult, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.entries[key]
	if s == nil || !s.done || s.uid != uid || s.inputs != inputs {
		return searchResult{}, false
	}
	delete(l.entries, key)
	return s.result, true
}

// outgrew records whether the schedule with uid's last search took longer
// than a worker's share of the budget.
func (l *SearchLane) outgrew(key types.NamespacedName, uid types.UID, longer bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	if longer {
		l.outgrown[key] = uid
	} else {
		delete(l.outgrown, key)
	}
}

// isOutgrown says whether the schedule with uid's last search took longer
// than a worker's share of the budget.
func (l *SearchLane) isOutgrown(key types.NamespacedName, uid types.UID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	got, ok := l.outgrown[key]
	return ok && got == uid
}

// forget drops the schedule's search, cancelling it if it runs: the
// schedule is gone, or no longer needs a new plan.
func (l *SearchLane) forget(key types.NamespacedName) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.outgrown, key)
	if s := l.entries[key]; s != nil {
		if s.cancel != nil {
			s.cancel()
		}
		delete(l.entries, key)
	}
}

// next takes the next search to run, nil when none waits: the oldest of
// the namespace after the last one served, in name order, so that the
// namespaces take turns. The search is marked running, with a context of
// its own that forget and submit can cancel.
func (l *SearchLane) next(ctx context.Context) (*laneSearch, context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var waiting []*laneSearch
	for _, s := range l.entries {
		if !s.running && !s.done {
			waiting = append(waiting, s)
		}
	}
	if len(waiting) == 0 {
		return nil, nil
	}
	turn := l.turn
	slices.SortFunc(waiting, func(a, b *laneSearch) int {
		// The namespaces after the last one served come first, then the
		// rest, each in name order; in a namespace, the oldest first.
		if aAfter, bAfter := a.schedule.Namespace > turn, b.schedule.Namespace > turn; aAfter != bAfter {
			if aAfter {
				return -1
			}
			return 1
		}
		if c := strings.Compare(a.schedule.Namespace, b.schedule.Namespace); c != 0 {
			return c
		}
		if c := a.queued.Compare(b.queued); c != 0 {
			return c
		}
		return strings.Compare(a.schedule.Name, b.schedule.Name)
	})
	s := waiting[0]
	l.turn = s.schedule.Namespace
	if len(waiting) > 1 {
		// Another worker may take the next one.
		select {
		case l.ready <- struct{}{}:
		default:
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	s.cancel, s.running = cancel, true
	return s, runCtx
}

// finish records the result of s, unless s was replaced or forgotten
// meanwhile, and says whether it was kept.
func (l *SearchLane) finish(s *laneSearch, result searchResult) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	s.cancel()
	if l.entries[s.schedule] != s {
		return false
	}
	s.running, s.done, s.result, s.run = false, true, result, nil
	return true
}

// Start runs the lane's workers until ctx ends.
func (l *SearchLane) Start(ctx context.Context) error {
	l.mu.Lock()
	l.init()
	l.mu.Unlock()
	var wg sync.WaitGroup
	for range max(l.Workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.work(ctx)
		}()
	}
	wg.Wait()
	return nil
}

// work runs the searches next hands out until ctx ends.
func (l *SearchLane) work(ctx context.Context) {
	for {
		s, runCtx := l.next(ctx)
		if s == nil {
			select {
			case <-ctx.Done():
				return
			case <-l.ready:
				continue
			}
		}
		result := runSearch(runCtx, s.run, s.budget)
		if !l.finish(s, result) || l.Wake == nil {
			continue
		}
		es := &laxityv1alpha1.ElasticSchedule{}
		es.Namespace, es.Name, es.UID = s.schedule.Namespace, s.schedule.Name, s.uid
		select {
		case l.Wake <- event.TypedGenericEvent[*laxityv1alpha1.ElasticSchedule]{Object: es}:
		case <-ctx.Done():
			return
		}
	}
}
