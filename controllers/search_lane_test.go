package controllers

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/replan"
)

func laneEntry(ns, name, inputs string, queued time.Time, run search) *laneSearch {
	return &laneSearch{schedule: types.NamespacedName{Namespace: ns, Name: name}, uid: types.UID(ns + "/" + name), inputs: inputs,
		budget: time.Minute, run: run, queued: queued}
}

// TestSearchLaneTakesNamespacesInTurn: one namespace's many searches do not
// hold back another namespace's.
func TestSearchLaneTakesNamespacesInTurn(t *testing.T) {
	l := &SearchLane{}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i, name := range []string{"a1", "a2", "a3"} {
		l.submit(laneEntry("team-a", name, "x", t0.Add(time.Duration(i)*time.Second), nil))
	}
	l.submit(laneEntry("team-b", "b1", "x", t0.Add(time.Hour), nil))
	l.submit(laneEntry("team-c", "c1", "x", t0.Add(2*time.Hour), nil))
	var order []string
	for {
		s, _ := l.next(context.Background())
		if s == nil {
			break
		}
		order = append(order, s.schedule.Name)
	}
	want := []string{"a1", "b1", "c1", "a2", "a3"}
	if len(order) != len(want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("order %v, want %v", order, want)
		}
	}
}

// TestSearchLaneKeepsOneSearchPerSchedule: a newer search replaces the
// running one, which is cancelled and whose result is dropped; a result is
// handed over once, and only for the specs it searched.
func TestSearchLaneKeepsOneSearchPerSchedule(t *testing.T) {
	l := &SearchLane{}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	old := laneEntry("team-a", "s", "old", t0, nil)
	l.submit(old)
	s, ctx := l.next(context.Background())
	if s != old {
		t.Fatalf("next = %+v, want the old search", s)
	}
	if held, done := l.state(old.schedule, old.uid, "old"); !held || done {
		t.Fatalf("state of a running search = %v, %v; want held, not done", held, done)
	}
	newer := laneEntry("team-a", "s", "new", t0.Add(time.Second), nil)
	l.submit(newer)
	if ctx.Err() == nil {
		t.Fatal("the replaced search's context was not cancelled")
	}
	if l.finish(old, searchResult{err: ctx.Err()}) {
		t.Fatal("the replaced search's result was kept")
	}
	if _, ok := l.take(old.schedule, old.uid, "old"); ok {
		t.Fatal("took the replaced search's result")
	}
	s, _ = l.next(context.Background())
	if s != newer {
		t.Fatalf("next = %+v, want the newer search", s)
	}
	if !l.finish(newer, searchResult{took: time.Second}) {
		t.Fatal("the newer search's result was dropped")
	}
	if _, ok := l.take(newer.schedule, "another-uid", "new"); ok {
		t.Fatal("a schedule of the same name and another UID took the result")
	}
	if _, ok := l.take(newer.schedule, newer.uid, "other"); ok {
		t.Fatal("took a result for other specs")
	}
	if res, ok := l.take(newer.schedule, newer.uid, "new"); !ok || res.took != time.Second {
		t.Fatalf("take = %+v, %v; want the newer search's result", res, ok)
	}
	if _, ok := l.take(newer.schedule, newer.uid, "new"); ok {
		t.Fatal("a result was handed over twice")
	}
	l.submit(laneEntry("team-a", "gone", "x", t0, nil))
	l.forget(types.NamespacedName{Namespace: "team-a", Name: "gone"})
	if s, _ := l.next(context.Background()); s != nil {
		t.Fatalf("a forgotten search ran: %+v", s)
	}
	var none *SearchLane
	none.forget(newer.schedule) // a reconciler without a lane
}

// TestSearchLaneRunsAndWakes: the lane runs a search within its budget and
// wakes the schedule.
func TestSearchLaneRunsAndWakes(t *testing.T) {
	wake := make(chan event.TypedGenericEvent[*laxityv1alpha1.ElasticSchedule], 1)
	l := &SearchLane{Wake: wake}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- l.Start(ctx) }()
	endless := func(ctx context.Context) (planner.Document, map[string]float64, error) {
		<-ctx.Done()
		return planner.Document{}, nil, errors.Join(planner.ErrSearchBudget, ctx.Err())
	}
	s := laneEntry("team-a", "s", "x", time.Now(), endless)
	s.budget = 10 * time.Millisecond
	l.submit(s)
	select {
	case e := <-wake:
		if e.Object.Name != "s" || e.Object.Namespace != "team-a" || e.Object.UID != s.uid {
			t.Fatalf("woke %s/%s (%s), want team-a/s", e.Object.Namespace, e.Object.Name, e.Object.UID)
		}
	case <-time.After(time.Minute):
		t.Fatal("the lane never woke the schedule")
	}
	res, ok := l.take(s.schedule, s.uid, "x")
	if !ok || !errors.Is(res.err, planner.ErrSearchBudget) {
		t.Fatalf("take = %+v, %v; want a search out of its budget", res, ok)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestSearchOutgrownGoesToTheLaneAtOnce: a search cut short at a worker's
// share is not tried in a worker again (it would be cut short again and run
// a second time in the lane) until one of the schedule's searches ends
// within the share.
func TestSearchOutgrownGoesToTheLaneAtOnce(t *testing.T) {
	lane := &SearchLane{}
	r := &ElasticScheduleReconciler{LongSearches: lane, Options: Options{PlanTimeout: time.Minute, InlineSearch: 10 * time.Millisecond}}
	es := &laxityv1alpha1.ElasticSchedule{}
	es.Namespace, es.Name, es.UID = "team-a", "s", "uid-1"
	key := types.NamespacedName{Namespace: "team-a", Name: "s"}
	ran := 0
	long := func(ctx context.Context) (planner.Document, map[string]float64, error) {
		ran++
		<-ctx.Done()
		return planner.Document{}, nil, planner.ErrSearchBudget
	}
	short := func(context.Context) (planner.Document, map[string]float64, error) {
		ran++
		return planner.Document{}, nil, nil
	}
	pass := func(inputs string, run search) bool {
		_, inLane := r.search(context.Background(), &view{es: es, inputsHash: inputs}, replan.BudgetState{}, run)
		return inLane
	}

	if !pass("v1", long) || ran != 1 {
		t.Fatalf("the first long search: %d runs in the worker, want 1, then the lane", ran)
	}
	if !pass("v2", long) || ran != 1 {
		t.Fatalf("a known long search ran %d times in the worker, want none", ran-1)
	}
	// The lane's search of v2 ends within the share: the next search is the
	// worker's again.
	s, _ := lane.next(context.Background())
	lane.finish(s, searchResult{took: time.Millisecond})
	if pass("v2", long) {
		t.Fatal("the lane's ended search of v2 was not taken")
	}
	if lane.isOutgrown(key, es.UID) {
		t.Fatal("a search that ended within the share left the schedule outgrown")
	}
	if pass("v3", short) || ran != 2 {
		t.Fatalf("a short search after a quick one: %d runs, want it run in the worker", ran)
	}
	// Another object of the same name is not taken for the outgrown one.
	lane.outgrew(key, "uid-0", true)
	if lane.isOutgrown(key, es.UID) {
		t.Fatal("a schedule re-created under the same name inherited its predecessor's record")
	}
}
