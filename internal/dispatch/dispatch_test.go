package dispatch

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/planner"
)

var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func at(seconds float64) time.Time { return t0.Add(time.Duration(seconds * float64(time.Second))) }

var settings = Settings{Sizes: []int{2, 4, 10}, Policy: planner.LeastLaxity, MaxAttempts: 3, Backoff: 30 * time.Second}

// query has 100-tuple batches of 1 s + 0.01 s/tuple/node on 2 nodes (2 s
// each), 1 s merges, a 1,000-tuple window closing at 100 s.
func query(name string, deadline float64, arrived int64, batches ...Batch) Query {
	return Query{
		Name: name, Deadline: at(deadline), Closed: at(100),
		Cost: costmodel.Model{
			Batch: costmodel.Linear{Overhead: 1, Parallel: 0.02},
			Merge: costmodel.Linear{Overhead: 1},
		},
		BatchSize: 100, ExpectedTotal: 1000, Arrived: arrived, Batches: batches,
	}
}

func done(from, to int64) Batch { return Batch{From: from, To: to, Attempt: Attempt{State: Succeeded}} }

func TestDecide(t *testing.T) {
	tests := []struct {
		name     string
		now      float64
		settings func(*Settings)
		queries  []Query
		ready    int
		// coming and comingBy are the nodes on their way.
		coming   int
		comingBy time.Time
		want     Decision
	}{
		{
			name:    "nothing arrived",
			now:     5,
			queries: []Query{query("a", 200, 50)},
			ready:   2,
			want:    Decision{Why: "no step is ready", Recheck: at(100)},
		},
		{
			// a: 10 batches of 2 s + 1 s merge left, deadline 200: slack
			// 200-30-21 = 149 s. b: deadline 60: slack 9 s. A query with a
			// ready batch asks for no recheck.
			name:    "least slack first",
			now:     30,
			queries: []Query{query("a", 200, 300), query("b", 60, 300)},
			ready:   2,
			want:    Decision{Launch: &Step{Query: "b", Kind: planner.StepBatch, FromTuple: 0, ToTuple: 100, Nodes: 2, Fills: 2, Slack: 9 * time.Second}},
		},
		{
			// b's input cannot be read: a, with more slack, goes first.
			name:    "a held query launches nothing",
			now:     30,
			queries: []Query{query("a", 200, 300), func() Query { q := query("b", 60, 300); q.Held = true; return q }()},
			ready:   2,
			want:    Decision{Launch: &Step{Query: "a", Kind: planner.StepBatch, FromTuple: 0, ToTuple: 100, Nodes: 2, Fills: 2, Slack: 149 * time.Second}},
		},
		{
			// A held query's running batch still holds the pool.
			name: "a held query's running step holds the pool",
			now:  30,
			queries: []Query{query("a", 200, 300), func() Query {
				q := query("b", 60, 300, Batch{From: 0, To: 100, Attempt: Attempt{State: Running}})
				q.Held = true
				return q
			}()},
			ready: 2,
			want:  Decision{Why: "batch 0 of query b is running"},
		},
		{
			// On 4 ready nodes every batch takes 1.5 s: b's slack is
			// 30 s - (10 × 1.5 s + 1 s).
			name: "earliest deadline",
			now:  30,
			settings: func(s *Settings) {
				s.Policy = planner.EarliestDeadline
			},
			queries: []Query{query("a", 200, 300), query("b", 60, 300)},
			ready:   4,
			want:    Decision{Launch: &Step{Query: "b", Kind: planner.StepBatch, FromTuple: 0, ToTuple: 100, Nodes: 4, Fills: 4, Slack: 30*time.Second - 16*time.Second}},
		},
		{
			name:    "one step at a time",
			now:     30,
			queries: []Query{query("a", 200, 300, Batch{From: 0, To: 100, Attempt: Attempt{State: Running}}), query("b", 60, 300)},
			ready:   2,
			want:    Decision{Why: "batch 0 of query a is running"},
		},
		{
			// 50 of the next 100 tuples are there; the source says the
			// rest arrive at 62 s.
			name: "rechecks when the source says the next batch is full",
			now:  50,
			queries: func() []Query {
				q := query("a", 200, 450, done(0, 100), done(100, 200), done(200, 300), done(300, 400))
				q.ArrivalOf = func(tuples int64) (time.Time, bool) {
					if tuples != 500 {
						t.Errorf("asked when %d tuples arrive, want 500", tuples)
					}
					return at(62), true
				}
				return []Query{q}
			}(),
			ready: 2,
			want:  Decision{Why: "no step is ready", Recheck: at(62)},
		},
		{
			name:    "partial batch not ready while the window is open",
			now:     50,
			queries: []Query{query("a", 200, 450, done(0, 100), done(100, 200), done(200, 300), done(300, 400))},
			ready:   2,
			want:    Decision{Why: "no step is ready", Recheck: at(100)},
		},
		{
			name:    "the last batch takes what is left once the window closed",
			now:     100,
			queries: []Query{query("a", 200, 950, done(0, 900))},
			ready:   10,
			want:    Decision{Launch: &Step{Query: "a", Kind: planner.StepBatch, Index: 1, FromTuple: 900, ToTuple: 950, Nodes: 10, Fills: 10, Slack: 100*time.Second - 2100*time.Millisecond}},
		},
		{
			name:    "final merge after the last batch",
			now:     104,
			queries: []Query{query("a", 200, 1000, done(0, 900), done(900, 1000))},
			ready:   2,
			want:    Decision{Launch: &Step{Query: "a", Kind: planner.StepFinal, Index: 0, Inputs: 2, FromTuple: 0, ToTuple: 1000, Nodes: 2, Fills: 2, Slack: 95 * time.Second}},
		},
		{
			// b's batch takes 2 s on the 2 ready nodes and 1.2 s on 10
			// (1 s + 100 × 0.02/10): starting on them at 30.5 s ends at
			// 31.7 s, before 32 s.
			name:     "waits for a larger pool due before the step would end",
			now:      30,
			queries:  []Query{query("a", 200, 300), query("b", 60, 300)},
			ready:    2,
			coming:   10,
			comingBy: at(30.5),
			want: Decision{
				Why:     "waiting for 10 nodes due at 2026-12-01T00:00:30Z: batch 0 of query b finishes sooner on them than on the 2 ready now",
				Recheck: at(30.5),
			},
		},
		{
			// Due at 31 s, the 10 nodes end the batch at 32.2 s, after 32 s.
			name:     "launches on the ready nodes when waiting would end later",
			now:      30,
			queries:  []Query{query("b", 60, 300)},
			ready:    2,
			coming:   10,
			comingBy: at(31),
			want:     Decision{Launch: &Step{Query: "b", Kind: planner.StepBatch, FromTuple: 0, ToTuple: 100, Nodes: 2, Fills: 2, Slack: 9 * time.Second}},
		},
		{
			// Due at 29.5 s, the 10 nodes would save 0.8 s: waited for
			// until 30.3 s.
			name:     "waits for overdue nodes no longer than they would save",
			now:      30,
			queries:  []Query{query("b", 60, 300)},
			ready:    2,
			coming:   10,
			comingBy: at(29.5),
			want: Decision{
				Why:     "waiting for 10 nodes due at 2026-12-01T00:00:29Z: batch 0 of query b finishes sooner on them than on the 2 ready now",
				Recheck: at(30.3),
			},
		},
		{
			name:     "does not wait for nodes overdue by more than they would save",
			now:      30,
			queries:  []Query{query("b", 60, 300)},
			ready:    2,
			coming:   10,
			comingBy: at(29),
			want:     Decision{Launch: &Step{Query: "b", Kind: planner.StepBatch, FromTuple: 0, ToTuple: 100, Nodes: 2, Fills: 2, Slack: 9 * time.Second}},
		},
		{
			// 3 more nodes make no pool size larger than 4.
			name:     "does not wait for nodes that make no larger size",
			now:      30,
			queries:  []Query{query("b", 60, 300)},
			ready:    4,
			coming:   7,
			comingBy: at(30.1),
			want:     Decision{Launch: &Step{Query: "b", Kind: planner.StepBatch, FromTuple: 0, ToTuple: 100, Nodes: 4, Fills: 4, Slack: 30*time.Second - 16*time.Second}},
		},
		{
			name:    "too few ready nodes",
			now:     30,
			queries: []Query{query("a", 200, 300)},
			ready:   1,
			want:    Decision{Why: "1 free nodes, fewer than the smallest pool size 2"},
		},
		{
			name:    "failed batch waits for its backoff",
			now:     40,
			queries: []Query{query("a", 200, 300, Batch{From: 0, To: 100, Attempt: Attempt{State: Failed, Ended: at(20)}})},
			ready:   2,
			want:    Decision{Why: "no step is ready", Recheck: at(50)},
		},
		{
			name:    "failed batch retried with the same range",
			now:     80,
			queries: []Query{query("a", 200, 300, Batch{From: 0, To: 100, Attempt: Attempt{Number: 1, State: Failed, Ended: at(20)}})},
			ready:   2,
			want:    Decision{Launch: &Step{Query: "a", Kind: planner.StepBatch, Attempt: 2, FromTuple: 0, ToTuple: 100, Nodes: 2, Fills: 2, Slack: 200*time.Second - 80*time.Second - 21*time.Second}},
		},
		{
			name:    "attempts exhausted",
			now:     500,
			queries: []Query{query("a", 900, 300, Batch{From: 0, To: 100, Attempt: Attempt{Number: 2, State: Failed, Ended: at(20)}})},
			ready:   2,
			want:    Decision{Why: "no step is ready", Exhausted: []string{"a"}},
		},
		{
			// Nothing is judged while a step holds the pool.
			name: "attempts exhausted while another query's step runs",
			now:  500,
			queries: []Query{
				query("a", 900, 300, Batch{From: 0, To: 100, Attempt: Attempt{Number: 2, State: Failed, Ended: at(20)}}),
				query("b", 900, 300, Batch{From: 0, To: 100, Attempt: Attempt{State: Running}}),
			},
			ready: 2,
			want:  Decision{Why: "batch 0 of query b is running"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := settings
			if tc.settings != nil {
				tc.settings(&s)
			}
			got := Decide(at(tc.now), s, tc.queries, Pool{Ready: tc.ready, Coming: tc.coming, ComingBy: tc.comingBy})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
			// The controllers judge the plan by Exhausted before they
			// decide: it must name what Decide does.
			if diff := cmp.Diff(got.Exhausted, Exhausted(at(tc.now), s, tc.queries)); diff != "" {
				t.Errorf("Exhausted disagrees with Decide (-decide +exhausted):\n%s", diff)
			}
		})
	}
}

func TestMergesGoFirst(t *testing.T) {
	// a has three batches done and partial merges every 3 batches: its
	// partial merge is due and goes before b's batch, although b has less
	// slack.
	a := query("a", 900, 600, done(0, 100), done(100, 200), done(200, 300))
	a.PartialEvery = 3
	b := query("b", 60, 300)
	got := Decide(at(40), settings, []Query{a, b}, Pool{Ready: 2})
	if got.Launch == nil || got.Launch.Query != "a" || got.Launch.Kind != planner.StepPartial || got.Launch.Inputs != 3 || got.Launch.ToTuple != 300 {
		t.Errorf("launch = %+v, want a's partial merge 0 of 3 inputs over [0, 300)", got.Launch)
	}
	// With the partial done and the window closed after the 4th batch, the
	// final merge takes the partial and the one batch after it.
	a.Partials = []Attempt{{State: Succeeded}}
	a.Batches = append(a.Batches, done(300, 350))
	a.Arrived = 350
	got = Decide(at(101), settings, []Query{a}, Pool{Ready: 2})
	if got.Launch == nil || got.Launch.Kind != planner.StepFinal || got.Launch.Inputs != 2 || got.Launch.Index != 1 {
		t.Errorf("launch = %+v, want the final merge of 1 partial + 1 batch", got.Launch)
	}
}

func TestNoPartialAfterTheLastBatch(t *testing.T) {
	// Three batches of c = 3 and the window closed with nothing left: the
	// third batch is the last, so the final merge takes all three.
	a := query("a", 900, 300, done(0, 100), done(100, 200), done(200, 300))
	a.PartialEvery = 3
	got := Decide(at(100), settings, []Query{a}, Pool{Ready: 2})
	if got.Launch == nil || got.Launch.Kind != planner.StepFinal || got.Launch.Inputs != 3 {
		t.Errorf("launch = %+v, want the final merge of 3 batches", got.Launch)
	}
}

func TestRemainingFollowsTheCostModel(t *testing.T) {
	q := query("a", 900, 300, done(0, 100))
	q.PartialEvery = 4
	// 900 tuples to go in 9 batches of 2 s on 2 nodes; 10 batches in all
	// give (10-1)/4 = 2 partial merges of 1 s and a final merge of 1 s.
	got := q.Remaining(at(30), Step{Kind: planner.StepBatch, Index: 1, FromTuple: 100, ToTuple: 200}, 2)
	if want := 18*time.Second + 3*time.Second; got != want {
		t.Errorf("Remaining = %v, want %v", got, want)
	}
}

func TestRequestAt(t *testing.T) {
	requests := []planner.NodeLevel{{At: 0, Nodes: 2}, {At: 100, Nodes: 10}, {At: 300, Nodes: 0}}
	for _, tc := range []struct {
		now      float64
		want     int
		nextWant time.Time
	}{
		{-10, 2, at(100)}, {0, 2, at(100)}, {99.9, 2, at(100)}, {100, 10, at(300)}, {500, 0, time.Time{}},
	} {
		if got := RequestAt(t0, requests, at(tc.now)); got != tc.want {
			t.Errorf("RequestAt(%v) = %d, want %d", tc.now, got, tc.want)
		}
		if got := NextRequestChange(t0, requests, at(tc.now)); !got.Equal(tc.nextWant) {
			t.Errorf("NextRequestChange(%v) = %v, want %v", tc.now, got, tc.nextWant)
		}
	}
	if !strings.Contains(Decide(at(0), settings, nil, Pool{Ready: 2}).Why, "no step") {
		t.Error("no queries should leave nothing to launch")
	}
}

func TestPoliciesDisagree(t *testing.T) {
	// a is due first (70 s) but light: 10 batches of 1.1 s + 1 s merge,
	// slack 28 s at 30 s. b is due later (75 s) but heavy: slack 24 s.
	a := query("a", 70, 300)
	a.Cost.Batch.Parallel = 0.002
	b := query("b", 75, 300)
	if got := Decide(at(30), settings, []Query{a, b}, Pool{Ready: 2}).Launch; got == nil || got.Query != "b" {
		t.Errorf("LeastLaxity launched %+v, want b", got)
	}
	edf := settings
	edf.Policy = planner.EarliestDeadline
	if got := Decide(at(30), edf, []Query{a, b}, Pool{Ready: 2}).Launch; got == nil || got.Query != "a" {
		t.Errorf("EarliestDeadline launched %+v, want a", got)
	}
}

func TestComing(t *testing.T) {
	// The pool grows to 10 nodes at 100 s, shrinks to 4 at 300 s and grows
	// to 6 at 400 s; nodes take 60 s to arrive.
	requests := []planner.NodeLevel{{At: 0, Nodes: 2}, {At: 100, Nodes: 10}, {At: 300, Nodes: 4}, {At: 400, Nodes: 6}}
	for _, tc := range []struct {
		now    float64
		nodes  int
		readBy time.Time
	}{
		{-10, 2, at(0)},
		{50, 2, at(0)},
		{100, 10, at(160)},
		{250, 10, at(160)},
		// A shrink brings nothing new: the last growth's time stands.
		{300, 4, at(160)},
		{400, 6, at(460)},
	} {
		nodes, by := Coming(t0, requests, nil, time.Minute, at(tc.now))
		if nodes != tc.nodes || !by.Equal(tc.readBy) {
			t.Errorf("Coming(%v) = %d by %v, want %d by %v", tc.now, nodes, by, tc.nodes, tc.readBy)
		}
		if want := RequestAt(t0, requests, at(tc.now)); nodes != want {
			t.Errorf("Coming(%v) = %d nodes, RequestAt says %d", tc.now, nodes, want)
		}
	}
	if nodes, by := Coming(t0, nil, nil, time.Minute, at(5)); nodes != 0 || !by.IsZero() {
		t.Errorf("Coming with no requests = %d by %v, want nothing", nodes, by)
	}
	// A plan made while 4 nodes asked for earlier were on their way: it
	// asks for 4 from its origin, and its node timeline has them at 90 s.
	timeline := []planner.NodeLevel{{At: 0, Nodes: 2}, {At: 90, Nodes: 4}, {At: 400, Nodes: 0}}
	for _, now := range []float64{0, 30, 120} {
		if nodes, by := Coming(t0, []planner.NodeLevel{{At: 0, Nodes: 4}, {At: 400, Nodes: 0}}, timeline, time.Minute, at(now)); nodes != 4 || !by.Equal(at(90)) {
			t.Errorf("Coming(%v) on the way = %d by %v, want 4 by %v", now, nodes, by, at(90))
		}
	}
}

func withFinal(q Query, a Attempt) Query { q.Final = &a; return q }

func TestBehindSchedule(t *testing.T) {
	doc := &planner.Document{Origin: t0, Steps: []planner.Step{
		{Query: "a", Kind: planner.StepBatch, Index: 0, Start: 10, End: 20, Nodes: 2},
		{Query: "a", Kind: planner.StepBatch, Index: 1, Start: 30, End: 40, Nodes: 4},
		{Query: "a", Kind: planner.StepFinal, Index: 0, Start: 100, End: 101, Nodes: 2},
	}}
	failed := Batch{From: 100, To: 200, Attempt: Attempt{Number: 2, State: Failed}}
	for _, tc := range []struct {
		name string
		now  float64
		a    Query
		want int
	}{
		{"on time: nothing started late", 5, query("a", 200, 300), 0},
		{"batch 0 due and not done: its nodes", 15, query("a", 200, 300), 2},
		{"batch 1 due, batch 0 done: batch 1's nodes", 35, query("a", 200, 300, done(0, 100)), 4},
		{"caught up: the next step is not due yet", 50, query("a", 200, 300, done(0, 100), done(100, 200)), 0},
		{"a query out of attempts is not waited for", 35, query("a", 200, 300, done(0, 100), failed), 0},
		// The plan cut more batches than ran: the window brought fewer
		// tuples, and the final merge took what there was.
		{"a query whose final merge succeeded is done, batches planned or not", 150, withFinal(query("a", 200, 300, done(0, 100)), Attempt{State: Succeeded}), 0},
	} {
		if got := BehindSchedule(doc, []Query{tc.a}, 3, at(tc.now)); got != tc.want {
			t.Errorf("%s: BehindSchedule = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// A loose query's long batch is not started when it would still run when a
// tight query's last batch is ready, and would make that one late.
func TestHoldsThePoolForABatchAboutToBeReady(t *testing.T) {
	loose := query("a", 500, 300)
	loose.BatchSize = 300 // 4 s on 2 nodes
	tight := func(deadline float64) Query {
		// 950 of 1,000 tuples arrived; the window closes at 100 s, when
		// its last batch (2 s) and final merge (1 s) can start.
		q := query("b", deadline, 950, done(0, 900))
		q.ArrivalOf = func(tuples int64) (time.Time, bool) { return at(100), tuples <= 1000 }
		return q
	}
	got := Decide(at(99), settings, []Query{loose, tight(104)}, Pool{Ready: 2})
	want := Decision{
		Why:     "holding the pool for query b, whose next batch is ready at 2026-12-01T00:01:40Z: batch 0 of query a would still run then and make it late",
		Recheck: at(100),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decision (-want +got):\n%s", diff)
	}
	// With time to spare after a's batch, b is not waited for.
	if got := Decide(at(99), settings, []Query{loose, tight(200)}, Pool{Ready: 2}); got.Launch == nil || got.Launch.Query != "a" {
		t.Errorf("decision %+v, want a's batch launched", got)
	}
	// Nor when b is late whatever happens: holding the pool would help nobody.
	if got := Decide(at(99), settings, []Query{loose, tight(101)}, Pool{Ready: 2}); got.Launch == nil || got.Launch.Query != "a" {
		t.Errorf("decision %+v, want a's batch launched", got)
	}
}

// In a lane, the next step of the lane's plan goes first when it is on
// time: the plan placed every ready time around it. Behind its planned
// start, it no longer fits where the plan put it, and it does not make a
// tighter query of its lane late.
func TestALaneStepBehindItsPlanHoldsForATighterBatch(t *testing.T) {
	lanes := settings
	lanes.LaneNodes = []int{2, 2}
	queries := func(start float64) []Query {
		loose := inLane(query("a", 500, 300), 0)
		loose.BatchSize = 300 // 4 s on 2 nodes
		loose.Planned = []Planned{{Kind: planner.StepBatch, Start: at(start), Nodes: 2}}
		// 950 of 1,000 tuples arrived; the window closes at 100 s, when
		// its last batch (2 s) and final merge (1 s) can start.
		tight := inLane(query("b", 104, 950, done(0, 900)), 0)
		tight.ArrivalOf = func(tuples int64) (time.Time, bool) { return at(100), tuples <= 1000 }
		tight.Planned = []Planned{{Kind: planner.StepBatch, Index: 1, Start: at(100), Nodes: 2}}
		return []Query{loose, tight}
	}
	if got := Decide(at(99), lanes, queries(99), Pool{Ready: 2}); got.Launch == nil || got.Launch.Query != "a" {
		t.Errorf("on time to its plan: decision %+v, want a's batch launched", got)
	}
	got := Decide(at(99), lanes, queries(60), Pool{Ready: 2})
	if got.Launch != nil || !strings.Contains(got.Why, "holding the pool for query b") {
		t.Errorf("39 s behind its plan: decision %+v, want the lane held for b", got)
	}
}

func TestFreeAt(t *testing.T) {
	running := func(started float64, nodes int) Batch {
		return Batch{From: 0, To: 100, Attempt: Attempt{State: Running, Started: at(started), Nodes: nodes}}
	}
	merging := query("m", 200, 1000, done(0, 100))
	merging.Final = &Attempt{State: Pending, Nodes: 2, Inputs: 1}
	for _, tc := range []struct {
		name    string
		queries []Query
		now     float64
		want    float64
	}{
		{"nothing holds the pool", []Query{query("a", 200, 100, done(0, 100))}, 10, 10},
		// 1 s + 0.02 s × 100 tuples / 2 nodes = 2 s.
		{"a running batch ends by the model", []Query{query("a", 200, 100, running(10, 2))}, 11, 12},
		{"on more nodes sooner", []Query{query("a", 200, 100, running(10, 4))}, 10.5, 11.5},
		{"a step overdue frees the pool now", []Query{query("a", 200, 100, running(10, 2))}, 15, 15},
		{"a pending merge runs from now", []Query{merging}, 20, 21},
		{"the start is unknown", []Query{query("a", 200, 100, Batch{From: 0, To: 100, Attempt: Attempt{State: Pending, Nodes: 2}})}, 30, 32},
	} {
		if got := FreeAt(tc.queries, at(tc.now)); !got.Equal(at(tc.want)) {
			t.Errorf("%s: FreeAt = %v, want %v", tc.name, got.Sub(t0).Seconds(), tc.want)
		}
	}
}

// Held names every step that holds the pool, with its nodes and its
// modelled end from now: what a re-plan side by side starts each lane
// after.
func TestHeld(t *testing.T) {
	running := Batch{From: 0, To: 100, Attempt: Attempt{State: Running, Started: at(10), Nodes: 2}}
	merging := query("m", 200, 1000, done(0, 100))
	merging.Final = &Attempt{State: Pending, Nodes: 4, Inputs: 1}
	overdue := query("o", 200, 100, running)
	got := Held([]Query{query("a", 200, 100, running), query("idle", 200, 100, done(0, 100)), merging}, at(11))
	want := []planner.HeldStep{{Query: "a", Nodes: 2, FreeAt: 1}, {Query: "m", Nodes: 4, FreeAt: 1}}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("Held (-want +got):\n%s", diff)
	}
	if got := Held([]Query{overdue}, at(30)); len(got) != 1 || got[0].FreeAt != 0 {
		t.Errorf("an overdue step: Held = %+v, want it free now", got)
	}
}

// A reshaped plan cuts a query's batches at its own ends: the next batch
// waits for its planned end, not a batch size after its start, and the
// plan's last batch takes what the window brought when it closes.
func TestBatchesFollowThePlansEnds(t *testing.T) {
	ends := []int64{100, 400, 450, 1000}
	tests := []struct {
		name     string
		now      float64
		arrived  int64
		batches  []Batch
		from, to int64
		launch   bool
	}{
		{"first batch at its end", 50, 120, nil, 0, 100, true},
		{"second batch waits past a batch size", 50, 250, []Batch{done(0, 100)}, 0, 0, false},
		{"second batch at its planned end", 50, 400, []Batch{done(0, 100)}, 100, 400, true},
		{"a short batch", 60, 460, []Batch{done(0, 100), done(100, 400)}, 400, 450, true},
		{"the last planned batch waits for the close", 90, 980, []Batch{done(0, 100), done(100, 400), done(400, 450)}, 0, 0, false},
		{"the last batch takes more than planned", 100, 1030, []Batch{done(0, 100), done(100, 400), done(400, 450)}, 450, 1030, true},
		{"the last batch takes fewer than planned", 100, 900, []Batch{done(0, 100), done(100, 400), done(400, 450)}, 450, 900, true},
		{"past the plan, batch sizes", 100, 1300, []Batch{done(0, 100), done(100, 400), done(400, 450), done(450, 1000)}, 1000, 1100, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := query("a", 900, tc.arrived, tc.batches...)
			q.BatchEnds = ends
			got := Decide(at(tc.now), settings, []Query{q}, Pool{Ready: 2})
			if !tc.launch {
				if got.Launch != nil {
					t.Errorf("launch = %+v, want none", got.Launch)
				}
				return
			}
			if l := got.Launch; l == nil || l.Kind != planner.StepBatch || l.FromTuple != tc.from || l.ToTuple != tc.to {
				t.Errorf("launch = %+v, want batch [%d, %d)", got.Launch, tc.from, tc.to)
			}
		})
	}
}

// The work left counts the plan's batches, whatever their sizes.
func TestRemainingCountsThePlansBatches(t *testing.T) {
	q := query("a", 900, 100, done(0, 100))
	q.BatchEnds = []int64{100, 900, 1000}
	// Two batches to go (800 and 100 tuples): 2 × 1 s of overhead, 900 ×
	// 0.01 s, and the final merge of 3 results, 1 s. With batches of 100 it
	// would be nine overheads.
	got := q.Remaining(at(30), Step{Kind: planner.StepBatch, Index: 1, FromTuple: 100, ToTuple: 900}, 2)
	if want := 2*time.Second + 9*time.Second + time.Second; got != want {
		t.Errorf("Remaining = %v, want %v", got, want)
	}
}

// A query whose plan cuts its remaining tuples as one batch at the
// window's close runs what has arrived now when the pool would sit idle
// and waiting for the cut would make it late; it waits when it would not
// be late, when nodes due by then make it in time, and when another step
// is ready to use the pool.
func TestBehindItRunsWhatArrived(t *testing.T) {
	behind := func(deadline float64) Query {
		// 900 of 1,000 tuples in at 90 s; the plan's last batch, 900
		// tuples from 100, is ready at the close: 10 s on 2 nodes, then a
		// 1 s final merge, so it ends at 111 s.
		q := query("a", deadline, 900, done(0, 100))
		q.BatchEnds = []int64{100, 1000}
		q.ArrivalOf = func(tuples int64) (time.Time, bool) { return at(float64(tuples) / 10), tuples <= 1000 }
		return q
	}
	tests := []struct {
		name    string
		queries []Query
		pool    Pool
		launch  string
		from    int64
		to      int64
	}{
		{"late at the cut: runs what arrived", []Query{behind(105)}, Pool{Ready: 2}, "a", 100, 900},
		{"in time at the cut: waits", []Query{behind(200)}, Pool{Ready: 2}, "", 0, 0},
		{"nodes due before the cut make it in time: waits", []Query{behind(105)}, Pool{Ready: 2, Coming: 10, ComingBy: at(95)}, "", 0, 0},
		{"nodes due after the cut do not: runs", []Query{behind(105)}, Pool{Ready: 2, Coming: 10, ComingBy: at(120)}, "a", 100, 900},
		{"another ready step takes the pool", []Query{behind(105), query("b", 500, 300)}, Pool{Ready: 2}, "b", 0, 100},
		{"held: waits", []Query{func() Query { q := behind(105); q.Held = true; return q }()}, Pool{Ready: 2}, "", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(at(90), settings, tc.queries, tc.pool)
			if tc.launch == "" {
				if got.Launch != nil {
					t.Errorf("launch = %+v, want none", got.Launch)
				}
				return
			}
			if l := got.Launch; l == nil || l.Query != tc.launch || l.Kind != planner.StepBatch || l.FromTuple != tc.from || l.ToTuple != tc.to {
				t.Errorf("launch = %+v, want %s's batch [%d, %d)", got.Launch, tc.launch, tc.from, tc.to)
			}
		})
	}
}

// Of the two tightest ready steps after their windows have closed, the one
// whose running first leaves the worse slack of the two the larger goes
// first: least slack first is kept unless the other order saves more.
// "long" has 800 tuples left (a 9 s batch on 2 nodes, then a 1 s final
// merge: it holds the pool 10 s), "short" 100 (2 s, then 1 s: 3 s).
func TestTheTwoTightestGoInTheOrderThatSavesMore(t *testing.T) {
	long := func(deadline float64) Query {
		q := query("long", deadline, 1000, done(0, 200))
		q.BatchSize = 1000
		return q
	}
	short := func(deadline float64) Query { return query("short", deadline, 1000, done(0, 900)) }
	loose := query("loose", 500, 1000, done(0, 900))
	tests := []struct {
		name    string
		queries []Query
		want    string
	}{
		// Slack 5 and 6: long first leaves short 6-10 = -4, short first
		// leaves long 5-3 = 2.
		{"the short step first saves both", []Query{long(125), short(119), loose}, "short"},
		// Slack 5 and 12: long first leaves short 2, in time.
		{"least slack first when it leaves the other in time", []Query{long(125), short(125), loose}, "long"},
		// Slack -2 and 5: long first leaves short -5, short first leaves
		// long -5: least slack first.
		{"a late query is not passed over for nothing", []Query{long(118), short(118), loose}, "long"},
		// Slack 1 and 2: either order makes one late; long first by 8 s,
		// short first by 2.
		{"the order late by less", []Query{long(121), short(115), loose}, "short"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(at(110), settings, tt.queries, Pool{Ready: 2})
			if d.Launch == nil || d.Launch.Query != tt.want {
				t.Fatalf("launched %+v (%s), want a step of %s", d.Launch, d.Why, tt.want)
			}
		})
	}
}

// A last batch after its window closed holds the pool for itself and the
// final merge that follows it, with partial merges too: the final merge
// then takes the partials, the batches after them and this one.
func TestALastBatchHoldsThePoolForItsFinalMerge(t *testing.T) {
	q := query("p", 500, 1000, done(0, 300), done(300, 600), done(600, 900))
	q.PartialEvery = 2
	q.Partials = []Attempt{{State: Succeeded}}
	q.Cost.Merge.Parallel = 2 // 1 s + 1 s per input on 2 nodes
	last := Step{Query: "p", Kind: planner.StepBatch, Index: 3, FromTuple: 900, ToTuple: 1000, Nodes: 2}
	// The batch: 1 + 0.02 × 100 / 2 = 2 s; the final merge of the partial,
	// the third batch and this one: 1 + 3 = 4 s.
	if got, want := q.holds(at(110), last), 6*time.Second; got != want {
		t.Errorf("after the window: holds %v, want %v", got, want)
	}
	if got, want := q.holds(at(90), last), 2*time.Second; got != want {
		t.Errorf("before the window closes: holds %v, want %v", got, want)
	}
}

// A tail margin makes dispatch hold the pool for the tight query's last
// batch where its deadline alone would not (b could start after a's batch
// and still just meet it), unless waiting would make a late, and never makes a query catch up on arrived
// tuples that its deadline alone does not call for: that adds a batch to
// its tail.
func TestTheTailMarginHoldsThePoolButCatchesUpByTheDeadline(t *testing.T) {
	loose := query("a", 500, 300)
	loose.BatchSize = 300 // 4 s on 2 nodes
	tight := func(margin float64) Query {
		// Its last batch (2 s) and final merge (1 s) are ready at 100 s:
		// after a's batch, from 103 s, they end at 106 s.
		q := query("b", 106.5, 950, done(0, 900))
		q.ArrivalOf = func(tuples int64) (time.Time, bool) { return at(100), tuples <= 1000 }
		q.TailMargin = margin
		return q
	}
	if got := Decide(at(99), settings, []Query{loose, tight(0)}, Pool{Ready: 2}); got.Launch == nil || got.Launch.Query != "a" {
		t.Errorf("no tail margin: decision %+v, want a's batch launched", got)
	}
	if got := Decide(at(99), settings, []Query{loose, tight(0.5)}, Pool{Ready: 2}); got.Launch != nil {
		t.Errorf("a 50%% tail margin: decision %+v, want the pool held for b", got)
	}
	// The margin is headroom, not a deadline: a waits for b's tail only
	// while it can still meet its own deadline after it. Its work left
	// (the window's 1,000 tuples in batches of 300, and its final merge)
	// takes 15 s: from 99 s it ends by 116 s, after b's 3 s from 100 s it
	// does not.
	hurried := func(deadline float64) Query {
		q := query("a", deadline, 300)
		q.BatchSize = 300
		return q
	}
	if got := Decide(at(99), settings, []Query{hurried(116), tight(0.5)}, Pool{Ready: 2}); got.Launch == nil || got.Launch.Query != "a" {
		t.Errorf("a late after waiting: decision %+v, want a's batch launched", got)
	}
	if got := Decide(at(99), settings, []Query{hurried(119), tight(0.5)}, Pool{Ready: 2}); got.Launch != nil {
		t.Errorf("a in time after waiting: decision %+v, want the pool held for b", got)
	}

	behind := func(margin float64) Query {
		// As in TestBehindItRunsWhatArrived: waiting for the cut, the rest
		// (nine 100-tuple batches of 2 s) and the final merge end at 119 s:
		// in time, though not with a 50% tail margin of that to spare.
		q := query("a", 125, 900, done(0, 100))
		q.BatchEnds = []int64{100, 1000}
		q.ArrivalOf = func(tuples int64) (time.Time, bool) { return at(float64(tuples) / 10), tuples <= 1000 }
		q.TailMargin = margin
		return q
	}
	for _, margin := range []float64{0, 0.5} {
		if got := Decide(at(90), settings, []Query{behind(margin)}, Pool{Ready: 2}); got.Launch != nil {
			t.Errorf("tail margin %g: launch %+v, want none: in time by the deadline", margin, got.Launch)
		}
	}
}

// inLane is query q in lane lane of a plan that runs steps side by side.
func inLane(q Query, lane int) Query {
	q.Lane = lane
	return q
}

func TestDecideInLanes(t *testing.T) {
	lanes := settings
	lanes.LaneNodes = []int{4, 2}
	running := func(from, to int64, nodes, lane int) Batch {
		return Batch{From: from, To: to, Attempt: Attempt{State: Running, Nodes: nodes, SideBySide: true, Lane: lane}}
	}
	tests := []struct {
		name    string
		queries []Query
		ready   int
		want    Decision
	}{
		{
			// Both lanes idle: the step with the least slack of either
			// lane goes first, on no more than its lane's nodes, and its
			// executors fill only those.
			name:    "least slack across lanes",
			queries: []Query{inLane(query("a", 200, 300), 0), inLane(query("b", 60, 300), 1)},
			ready:   6,
			want:    Decision{Launch: &Step{Query: "b", Kind: planner.StepBatch, FromTuple: 0, ToTuple: 100, Nodes: 2, Fills: 2, SideBySide: true, Lane: 1, Slack: 9 * time.Second}},
		},
		{
			// b runs in lane 1 on 2 of the 6 nodes: a's lane launches
			// beside it on 4.
			name:    "side by side",
			queries: []Query{inLane(query("a", 200, 300), 0), inLane(query("b", 60, 300, running(0, 100, 2, 1)), 1)},
			ready:   6,
			want:    Decision{Launch: &Step{Query: "a", Kind: planner.StepBatch, FromTuple: 0, ToTuple: 100, Nodes: 4, Fills: 4, SideBySide: true, Lane: 0, Slack: 200*time.Second - 30*time.Second - 16*time.Second}},
		},
		{
			// 3 nodes free make lane 0's size 2, not its 4: a step never
			// takes nodes a running one holds.
			name:    "the free nodes only",
			queries: []Query{inLane(query("a", 200, 300), 0), inLane(query("b", 60, 300, running(0, 100, 2, 1)), 1)},
			ready:   5,
			want:    Decision{Launch: &Step{Query: "a", Kind: planner.StepBatch, FromTuple: 0, ToTuple: 100, Nodes: 2, Fills: 2, SideBySide: true, Lane: 0, Slack: 200*time.Second - 30*time.Second - 21*time.Second}},
		},
		{
			name:    "waits for free nodes",
			queries: []Query{inLane(query("a", 200, 300), 0), inLane(query("b", 60, 300, running(0, 100, 2, 1)), 1)},
			ready:   3,
			want:    Decision{Why: "lane 0: 1 free nodes, fewer than the smallest pool size 2; lane 1: batch 0 of query b is running"},
		},
		{
			// One step of a lane at a time: c, the tightest, waits for a,
			// though nodes are free.
			name: "one step a lane",
			queries: []Query{
				inLane(query("a", 200, 300, running(0, 100, 4, 0)), 0), inLane(query("c", 50, 300), 0),
				inLane(query("b", 60, 300, done(0, 100)), 1),
			},
			ready: 10,
			want:  Decision{Launch: &Step{Query: "b", Kind: planner.StepBatch, Index: 1, FromTuple: 100, ToTuple: 200, Nodes: 2, Fills: 2, SideBySide: true, Lane: 1, Slack: 60*time.Second - 30*time.Second - 19*time.Second}},
		},
		{
			// b's batch was launched in lane 0 before a re-plan moved b to
			// lane 1: it holds its nodes, not lane 1, where c launches.
			name:    "a step launched in another lane",
			queries: []Query{inLane(query("b", 60, 300, running(0, 100, 2, 0)), 1), inLane(query("c", 70, 300), 1)},
			ready:   4,
			want:    Decision{Launch: &Step{Query: "c", Kind: planner.StepBatch, FromTuple: 0, ToTuple: 100, Nodes: 2, Fills: 2, SideBySide: true, Lane: 1, Slack: 19 * time.Second}},
		},
		{
			// A lane the plan does not know (a plan of fewer lanes than the
			// query was launched in) is the last one.
			name:    "a lane out of range",
			queries: []Query{inLane(query("b", 60, 300), 7)},
			ready:   6,
			want:    Decision{Launch: &Step{Query: "b", Kind: planner.StepBatch, FromTuple: 0, ToTuple: 100, Nodes: 2, Fills: 2, SideBySide: true, Lane: 1, Slack: 9 * time.Second}},
		},
	}
	planned := func(q Query, start float64, nodes int) Query {
		q.Planned = []Planned{{Kind: planner.StepBatch, Index: len(q.Batches), Start: at(start), Nodes: nodes}}
		return q
	}
	tests = append(tests, []struct {
		name    string
		queries []Query
		ready   int
		want    Decision
	}{
		{
			// A step launched one at a time, under an earlier plan, fills
			// the pool: no lane launches beside it.
			name:    "a step alone holds the whole pool",
			queries: []Query{inLane(query("a", 200, 300, Batch{From: 0, To: 100, Attempt: Attempt{State: Running, Nodes: 2}}), 0), inLane(query("b", 60, 300), 1)},
			ready:   6,
			want:    Decision{Why: "batch 0 of query a is running"},
		},
		{
			// a's 2 s batch on 2 nodes would end at 32 s; lane 1's plan
			// starts b's batch on 2 at 31 s, and 2 nodes are free.
			name:    "keeps the nodes of another lane's planned step",
			queries: []Query{inLane(query("a", 200, 300), 0), planned(inLane(query("b", 60, 50), 1), 31, 2)},
			ready:   2,
			want: Decision{
				Why:     "lane 0: keeping 2 nodes for lane 1: batch 0 of query b is planned to start at 2026-12-01T00:00:31Z, before batch 0 of query a would end; lane 1: no step is ready",
				Recheck: at(31),
			},
		},
		{
			// A lane whose planned step is due and not ready (its tuples
			// are late) holds nothing.
			name:    "a lane waiting for tuples holds nothing",
			queries: []Query{inLane(query("a", 200, 300), 0), planned(inLane(query("b", 60, 50), 1), 20, 2)},
			ready:   2,
			// b's window closing is when to look again.
			want: Decision{Launch: &Step{Query: "a", Kind: planner.StepBatch, FromTuple: 0, ToTuple: 100, Nodes: 2, Fills: 2, SideBySide: true, Slack: 149 * time.Second}, Recheck: at(100)},
		},
		{
			// On time to its plan, a step takes the nodes planned for it,
			// though its lane has more free.
			name:    "on time, the nodes planned",
			queries: []Query{planned(inLane(query("a", 200, 300), 0), 30, 2), inLane(query("b", 60, 0), 1)},
			ready:   6,
			want:    Decision{Launch: &Step{Query: "a", Kind: planner.StepBatch, FromTuple: 0, ToTuple: 100, Nodes: 2, Fills: 2, SideBySide: true, Slack: 149 * time.Second}, Recheck: at(100)},
		},
		{
			// Behind its planned start (steps ran slower than planned), it
			// catches up on its lane's free nodes.
			name:    "behind the plan, the lane's free nodes",
			queries: []Query{planned(inLane(query("a", 200, 300), 0), 20, 2), inLane(query("b", 60, 0), 1)},
			ready:   6,
			want:    Decision{Launch: &Step{Query: "a", Kind: planner.StepBatch, FromTuple: 0, ToTuple: 100, Nodes: 4, Fills: 4, SideBySide: true, Slack: 154 * time.Second}, Recheck: at(100)},
		},
		{
			// Lane 0 is done and lane 1 busy with b: c, behind its plan,
			// runs in lane 0 on its free nodes rather than wait for b.
			name: "a done lane runs a late step of a busy one",
			queries: []Query{
				inLane(withFinal(query("d", 200, 1000, done(0, 1000)), Attempt{State: Succeeded}), 0),
				inLane(query("b", 60, 300, running(0, 100, 2, 1)), 1), planned(inLane(query("c", 200, 300), 1), 20, 2),
			},
			ready: 6,
			want:  Decision{Launch: &Step{Query: "c", Kind: planner.StepBatch, FromTuple: 0, ToTuple: 100, Nodes: 4, Fills: 4, SideBySide: true, Slack: 154 * time.Second}},
		},
		{
			// On time, c waits for its own lane, where the plan put it.
			name: "a done lane leaves a step on time to its lane",
			queries: []Query{
				inLane(withFinal(query("d", 200, 1000, done(0, 1000)), Attempt{State: Succeeded}), 0),
				inLane(query("b", 60, 300, running(0, 100, 2, 1)), 1), planned(inLane(query("c", 200, 300), 1), 40, 2),
			},
			ready: 6,
			want:  Decision{Why: "lane 0: no step is ready; lane 1: batch 0 of query b is running"},
		},
		{
			// b's planned step is due and ready, but a is tighter: least
			// slack first, a does not keep b's nodes.
			name:    "a tighter step before a looser one's due step",
			queries: []Query{inLane(query("a", 60, 300), 0), planned(inLane(query("b", 200, 300), 1), 20, 2)},
			ready:   2,
			want:    Decision{Launch: &Step{Query: "a", Kind: planner.StepBatch, FromTuple: 0, ToTuple: 100, Nodes: 2, Fills: 2, SideBySide: true, Slack: 9 * time.Second}},
		},
	}...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(at(30), lanes, tc.queries, Pool{Ready: tc.ready})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}

// Nodes the plan expects by the time another lane's step starts are that
// step's: a lane launches on the nodes ready now when more are due by then.
func TestDecideInLanesCountsTheNodesComing(t *testing.T) {
	lanes := settings
	lanes.LaneNodes = []int{4, 2}
	b := inLane(query("b", 60, 50), 1)
	b.Planned = []Planned{{Kind: planner.StepBatch, Start: at(31), Nodes: 2}}
	queries := []Query{inLane(query("a", 200, 300), 0), b}
	pool := Pool{Ready: 2, Coming: 4, ComingBy: at(31), ExpectedBy: func(t time.Time) int {
		if t.Before(at(31)) {
			return 2
		}
		return 4
	}}
	got := Decide(at(30), lanes, queries, pool)
	if got.Launch == nil || got.Launch.Query != "a" || got.Launch.Nodes != 2 {
		t.Errorf("decision %+v, want a's batch on the 2 ready nodes", got)
	}
	pool.ExpectedBy = func(time.Time) int { return 2 }
	if got := Decide(at(30), lanes, queries, pool); got.Launch != nil {
		t.Errorf("with no nodes coming, launched %+v over b's planned nodes", got.Launch)
	}
}

// Steps launched side by side under an earlier plan hold the pool for a
// plan one step at a time, which starts when they end: nothing launches
// beside them.
func TestDecideAloneAfterStepsSideBySide(t *testing.T) {
	queries := []Query{
		query("a", 200, 300, Batch{From: 0, To: 100, Attempt: Attempt{State: Running, Nodes: 2, SideBySide: true}}),
		query("b", 60, 300),
	}
	if got := Decide(at(30), settings, queries, Pool{Ready: 6}); got.Launch != nil || got.Why != "batch 0 of query a is running" {
		t.Errorf("beside a step launched side by side, decided %+v", got)
	}
}
