package dispatch

import (
	"testing"
	"time"

	"github.com/laxity-dev/laxity/internal/planner"
)

func TestSlackNow(t *testing.T) {
	finished := query("q", 200, 1000, done(0, 1000))
	finished.Final = &Attempt{State: Succeeded, Ended: at(180)}
	tests := []struct {
		name  string
		now   float64
		query Query
		want  time.Duration
	}{
		// 10 batches of 2 s and the final merge of 1 s.
		{name: "nothing run", now: 0, query: query("q", 200, 0), want: 179 * time.Second},
		// 7 batches left.
		{name: "window open", now: 50, query: query("q", 200, 300, done(0, 100), done(100, 200), done(200, 300)), want: 135 * time.Second},
		// Once the window has closed the rest is what arrived: one batch of
		// 50 tuples (1.5 s) and the final merge.
		{name: "closed, tuples left", now: 120, query: query("q", 200, 950, done(0, 900)), want: 77500 * time.Millisecond},
		{name: "closed, every tuple in a batch", now: 150, query: query("q", 200, 1000, done(0, 1000)), want: 49 * time.Second},
		{name: "done", now: 190, query: finished, want: 20 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.query.SlackNow(at(tc.now), 2); got != tc.want {
				t.Errorf("SlackNow = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLastAllowed(t *testing.T) {
	tests := []struct {
		name                    string
		number, namesTaken, max int
		want                    bool
	}{
		{name: "third try of three", number: 2, max: 3, want: true},
		{name: "a name passed over leaves one try", number: 2, namesTaken: 1, max: 3},
		{name: "the only try", number: 0, max: 1, want: true},
		{name: "first of two", number: 0, max: 2},
		{name: "more names taken than numbers", number: 1, namesTaken: 3, max: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := Attempt{Number: tc.number, NamesTaken: tc.namesTaken, State: Failed}
			if got := a.LastAllowed(tc.max); got != tc.want {
				t.Errorf("LastAllowed(%d) = %v, want %v", tc.max, got, tc.want)
			}
			if got := FailedOut(a, tc.max); got != tc.want {
				t.Errorf("FailedOut(%d) = %v, want %v", tc.max, got, tc.want)
			}
		})
	}
}

// A plan's tail margin leaves the query's slack, by which steps are
// ordered, as it is; TailSlack, what another step must leave it, is that
// less the margin's share of the work left that runs after the window
// closes.
func TestTailSlack(t *testing.T) {
	q := query("q", 200, 950, done(0, 900))
	q.TailMargin = 0.5
	// The next batch from tuple 900: after the close, the 50 tuples in
	// (1.5 s) and the final merge (1 s); while the window is open, the 100
	// expected (2 s) and the final merge.
	next := Step{Kind: planner.StepBatch, Index: 1, FromTuple: 900, ToTuple: 950}
	for _, tc := range []struct {
		name        string
		now         float64
		slack, tail time.Duration
	}{
		{"after the close: all of it", 120, 77500 * time.Millisecond, 76250 * time.Millisecond},
		{"before the close: the part after it", 99, 98 * time.Second, 97 * time.Second},
		{"well before the close: none", 50, 147 * time.Second, 147 * time.Second},
	} {
		if got := q.Slack(at(tc.now), next, 2); got != tc.slack {
			t.Errorf("%s: Slack = %v, want %v", tc.name, got, tc.slack)
		}
		if got := q.TailSlack(at(tc.now), next, 2); got != tc.tail {
			t.Errorf("%s: TailSlack = %v, want %v", tc.name, got, tc.tail)
		}
	}
}
