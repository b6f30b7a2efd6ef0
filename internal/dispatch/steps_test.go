package dispatch

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/laxity-dev/laxity/internal/planner"
)

func TestStuckBound(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rule     StuckRule
		modelled time.Duration
		want     time.Duration
	}{
		{"a short step gets the minimum extra", StuckRule{Factor: 3, MinExtra: 2 * time.Minute}, 5 * time.Second, 2*time.Minute + 5*time.Second},
		{"a long step gets the factor", StuckRule{Factor: 3, MinExtra: 2 * time.Minute}, 10 * time.Minute, 30 * time.Minute},
		{"where both agree", StuckRule{Factor: 3, MinExtra: 2 * time.Minute}, time.Minute, 3 * time.Minute},
		{"factor only", StuckRule{Factor: 2}, 40 * time.Second, 80 * time.Second},
		{"minimum only", StuckRule{MinExtra: time.Minute}, 40 * time.Second, 100 * time.Second},
		{"no rule, no bound", StuckRule{}, time.Hour, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.rule.Bound(tc.modelled); got != tc.want {
				t.Errorf("Bound(%s) = %s, want %s", tc.modelled, got, tc.want)
			}
		})
	}
}

func TestStuck(t *testing.T) {
	rule := StuckRule{Factor: 3, MinExtra: 2 * time.Minute}
	// Batches of 100 tuples on 2 nodes are modelled at 2 s: bound 122 s.
	running := func(launched, started float64) Batch {
		a := Attempt{State: Running, Nodes: 2}
		if launched >= 0 {
			a.Launched = at(launched)
		}
		if started >= 0 {
			a.Started = at(started)
		}
		return Batch{From: 100, To: 200, Attempt: a}
	}
	pending := func(launched float64, number int) Batch {
		return Batch{From: 100, To: 200, Attempt: Attempt{State: Pending, Nodes: 2, Launched: at(launched), Number: number}}
	}
	for _, tc := range []struct {
		name  string
		now   float64
		query Query
		want  []StuckStep
	}{
		{name: "within the bound", now: 150, query: query("a", 900, 300, done(0, 100), running(30, 35))},
		{name: "exactly at the bound", now: 152, query: query("a", 900, 300, done(0, 100), running(30, 35))},
		{
			name: "running past the bound, judged from its launch", now: 153, query: query("a", 900, 300, done(0, 100), running(30, 35)),
			want: []StuckStep{{Query: "a", Kind: planner.StepBatch, Index: 1, Since: at(30), Modelled: 2 * time.Second, Bound: 122 * time.Second}},
		},
		{
			name: "never started, past the bound", now: 200, query: query("a", 900, 300, done(0, 100), pending(70, 1)),
			want: []StuckStep{{Query: "a", Kind: planner.StepBatch, Index: 1, Attempt: 1, Since: at(70), Modelled: 2 * time.Second, Bound: 122 * time.Second}},
		},
		{
			name: "no launch time: judged from its start", now: 200, query: query("a", 900, 300, done(0, 100), running(-1, 60)),
			want: []StuckStep{{Query: "a", Kind: planner.StepBatch, Index: 1, Since: at(60), Modelled: 2 * time.Second, Bound: 122 * time.Second}},
		},
		{name: "neither launch nor start known: not judged", now: 900, query: query("a", 900, 300, done(0, 100), running(-1, -1))},
		{name: "finished steps are never stuck", now: 900, query: query("a", 900, 300, done(0, 100), done(100, 200))},
		{
			name: "a final merge", now: 400,
			query: func() Query {
				q := query("a", 900, 200, done(0, 100), done(100, 200))
				q.Final = &Attempt{State: Pending, Nodes: 2, Inputs: 2, Launched: at(100)}
				return q
			}(),
			// 1 s merges: bound 121 s.
			want: []StuckStep{{Query: "a", Kind: planner.StepFinal, Since: at(100), Modelled: time.Second, Bound: 121 * time.Second}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Stuck(at(tc.now), rule, []Query{tc.query})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Stuck (-want +got):\n%s", diff)
			}
		})
	}
	if got := Stuck(at(900), StuckRule{}, []Query{query("a", 900, 300, running(0, 0))}); got != nil {
		t.Errorf("with no rule, Stuck = %+v, want none", got)
	}
	q := []Query{query("a", 900, 300, done(0, 100), running(30, 35))}
	if got, want := StuckRecheck(at(100), rule, q), at(153); !got.Equal(want) {
		t.Errorf("StuckRecheck = %s, want %s", got, want)
	}
	if got := StuckRecheck(at(200), rule, q); !got.IsZero() {
		t.Errorf("StuckRecheck past the bound = %s, want zero", got)
	}
}

// An attempt number passed over because its name was taken is not a try:
// it counts neither towards the attempt limit nor the backoff.
func TestNamesTakenAreNotFailures(t *testing.T) {
	failed := func(number, taken int, ended float64) Batch {
		return Batch{From: 100, To: 200, Attempt: Attempt{State: Failed, Number: number, NamesTaken: taken, Ended: at(ended)}}
	}
	for _, tc := range []struct {
		name          string
		batch         Batch
		now           float64
		wantAttempt   int
		wantTaken     int
		wantExhausted bool
		wantRecheck   time.Time
	}{
		// MaxAttempts 3, backoff 30 s doubled per failure.
		{name: "third attempt after two failures", batch: failed(1, 0, 10), now: 70, wantAttempt: 2},
		{name: "no fourth try", batch: failed(2, 0, 10), now: 500, wantExhausted: true},
		{name: "a taken name leaves a try", batch: failed(2, 1, 10), now: 70, wantAttempt: 3, wantTaken: 1},
		{name: "the backoff counts failures only", batch: failed(2, 1, 10), now: 60, wantRecheck: at(70)},
		{name: "two taken names, one failure", batch: failed(3, 2, 10), now: 70, wantAttempt: 4, wantTaken: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := query("a", 900, 300, done(0, 100), tc.batch)
			d := Decide(at(tc.now), settings, []Query{q}, Pool{Ready: 2})
			if tc.wantExhausted {
				if len(d.Exhausted) != 1 || d.Launch != nil {
					t.Fatalf("Decide = %+v, want query a exhausted", d)
				}
				if !FailedOut(tc.batch.Attempt, settings.MaxAttempts) {
					t.Error("FailedOut = false")
				}
				return
			}
			if FailedOut(tc.batch.Attempt, settings.MaxAttempts) {
				t.Error("FailedOut = true")
			}
			if !tc.wantRecheck.IsZero() {
				if d.Launch != nil || !d.Recheck.Equal(tc.wantRecheck) {
					t.Fatalf("Decide = %+v, want a recheck at %s", d, tc.wantRecheck)
				}
				return
			}
			if d.Launch == nil || d.Launch.Index != 1 || d.Launch.Attempt != tc.wantAttempt || d.Launch.NamesTaken != tc.wantTaken {
				t.Fatalf("Decide = %+v %s, want batch 1 attempt %d with %d names taken", d.Launch, d.Why, tc.wantAttempt, tc.wantTaken)
			}
		})
	}
}

func TestNodesLost(t *testing.T) {
	// Requests: 2 nodes at 0, 8 at 100, 2 at 300; lead time 60 s.
	requests := []planner.NodeLevel{{At: 0, Nodes: 2}, {At: 100, Nodes: 8}, {At: 300, Nodes: 2}}
	for _, tc := range []struct {
		now  float64
		want int
	}{{50, 2}, {120, 2}, {160, 8}, {299, 8}, {300, 2}, {400, 2}} {
		if got := ExpectedReady(t0, requests, time.Minute, at(tc.now)); got != tc.want {
			t.Errorf("ExpectedReady at %.0fs = %d, want %d", tc.now, got, tc.want)
		}
	}
	for _, tc := range []struct {
		name                            string
		previous, ready, need, expected int
		want                            bool
	}{
		{"the pool went to zero under a running step", 8, 0, 8, 8, true},
		{"some of the step's nodes went", 8, 5, 8, 8, true},
		{"a planned scale-down", 8, 2, 2, 2, false},
		{"nodes gone that nothing needs", 8, 4, 4, 8, false},
		{"nodes not there yet are not lost", 0, 0, 8, 8, false},
		{"still short, but nothing fell since the last look", 0, 0, 8, 8, false},
		{"more than the plan expected went, but the plan expects few", 8, 2, 8, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NodesLost(tc.previous, tc.ready, tc.need, tc.expected); got != tc.want {
				t.Errorf("NodesLost(%d, %d, %d, %d) = %t, want %t", tc.previous, tc.ready, tc.need, tc.expected, got, tc.want)
			}
		})
	}
	running := Batch{From: 100, To: 200, Attempt: Attempt{State: Running, Nodes: 4}}
	beside := Batch{From: 0, To: 100, Attempt: Attempt{State: Pending, Nodes: 2}}
	if got := Busy([]Query{query("a", 900, 300, done(0, 100)), query("b", 900, 300, running), query("c", 900, 300, beside)}); got != 6 {
		t.Errorf("Busy = %d, want 6 (steps side by side add up)", got)
	}
	if got := Busy([]Query{query("a", 900, 300, done(0, 100))}); got != 0 {
		t.Errorf("Busy with nothing running = %d, want 0", got)
	}
}

func TestBusy(t *testing.T) {
	withPartials := func(q Query, as ...Attempt) Query { q.Partials = as; return q }
	for _, tc := range []struct {
		name    string
		queries []Query
		want    int
	}{
		{name: "no query", want: 0},
		{name: "only ended steps", queries: []Query{query("a", 900, 300, done(0, 100),
			Batch{From: 100, To: 200, Attempt: Attempt{State: Failed, Nodes: 4}})}, want: 0},
		{name: "a pending batch holds its nodes", queries: []Query{query("a", 900, 300, done(0, 100),
			Batch{From: 100, To: 200, Attempt: Attempt{State: Pending, Nodes: 2}})}, want: 2},
		{name: "a running batch and a running final merge of another query", queries: []Query{
			query("a", 900, 300, Batch{From: 0, To: 100, Attempt: Attempt{State: Running, Nodes: 2}}),
			withFinal(query("b", 900, 300, done(0, 100)), Attempt{State: Running, Nodes: 4}),
		}, want: 6},
		{name: "a pending partial merge, a succeeded final merge", queries: []Query{
			withPartials(query("a", 900, 300, done(0, 100)), Attempt{State: Succeeded, Nodes: 8}, Attempt{State: Pending, Nodes: 1}),
			withFinal(query("b", 900, 300), Attempt{State: Succeeded, Nodes: 4}),
		}, want: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Busy(tc.queries); got != tc.want {
				t.Errorf("Busy = %d, want %d", got, tc.want)
			}
		})
	}
}
