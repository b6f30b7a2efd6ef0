package replan

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestBackoffDelay(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    Backoff
		n    int
		want time.Duration
	}{
		{"no search ran out", Backoff{}, 0, 0},
		{"negative count", Backoff{}, -3, 0},
		{"first: the default base", Backoff{}, 1, DefaultBackoffBase},
		{"second: doubled", Backoff{}, 2, 2 * DefaultBackoffBase},
		{"fourth: doubled three times", Backoff{}, 4, 8 * DefaultBackoffBase},
		{"fifth: at the default cap", Backoff{}, 5, DefaultBackoffCap},
		{"many: still the cap", Backoff{}, 1000, DefaultBackoffCap},
		{"a count that would overflow a shift", Backoff{}, math.MaxInt, DefaultBackoffCap},
		{"own base and cap", Backoff{Base: time.Second, Cap: 10 * time.Second}, 3, 4 * time.Second},
		{"own cap reached", Backoff{Base: time.Second, Cap: 10 * time.Second}, 5, 10 * time.Second},
		{"a base above the cap is the cap", Backoff{Base: time.Hour, Cap: time.Minute}, 1, time.Minute},
		{"a huge cap does not overflow", Backoff{Base: time.Hour, Cap: time.Duration(math.MaxInt64)}, 200, time.Duration(math.MaxInt64)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.b.Delay(tc.n); got != tc.want {
				t.Errorf("Delay(%d) = %s, want %s", tc.n, got, tc.want)
			}
		})
	}
}

func TestBudgetStateWait(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	backing := BudgetState{Inputs: "abc", Exceeded: 2, Next: now.Add(10 * time.Minute)}
	for _, tc := range []struct {
		name     string
		s        BudgetState
		inputs   string
		now      time.Time
		wait     bool
		until    time.Time
		wantLong bool
	}{
		{"never ran out", BudgetState{}, "abc", now, false, time.Time{}, false},
		{"same inputs, backing off", backing, "abc", now, true, backing.Next, true},
		{"same inputs, a second before the next try", backing, "abc", backing.Next.Add(-time.Second), true, backing.Next, true},
		{"same inputs, at the next try", backing, "abc", backing.Next, false, time.Time{}, true},
		{"same inputs, past the next try", backing, "abc", backing.Next.Add(time.Hour), false, time.Time{}, true},
		{"a spec change is a new try at once", backing, "xyz", now, false, time.Time{}, true},
		{"a state that counts none never waits", BudgetState{Inputs: "abc", Next: now.Add(time.Hour)}, "abc", now, false, time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wait, until := tc.s.Wait(tc.inputs, tc.now)
			if wait != tc.wait || !until.Equal(tc.until) {
				t.Errorf("Wait(%q, %s) = %v, %s; want %v, %s", tc.inputs, tc.now, wait, until, tc.wait, tc.until)
			}
			if long := tc.s.Long(); long != tc.wantLong {
				t.Errorf("Long() = %v, want %v", long, tc.wantLong)
			}
		})
	}
}

func TestBudgetStateRanOut(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	b := Backoff{Base: time.Minute, Cap: 5 * time.Minute}
	for _, tc := range []struct {
		name   string
		s      BudgetState
		inputs string
		want   BudgetState
	}{
		{"first time", BudgetState{}, "abc", BudgetState{Inputs: "abc", Exceeded: 1, Next: now.Add(time.Minute)}},
		{"again, same inputs: doubled", BudgetState{Inputs: "abc", Exceeded: 1, Next: now}, "abc", BudgetState{Inputs: "abc", Exceeded: 2, Next: now.Add(2 * time.Minute)}},
		{"third in a row", BudgetState{Inputs: "abc", Exceeded: 2, Next: now}, "abc", BudgetState{Inputs: "abc", Exceeded: 3, Next: now.Add(4 * time.Minute)}},
		{"capped", BudgetState{Inputs: "abc", Exceeded: 7, Next: now}, "abc", BudgetState{Inputs: "abc", Exceeded: 8, Next: now.Add(5 * time.Minute)}},
		{"new inputs start a new series", BudgetState{Inputs: "abc", Exceeded: 7, Next: now}, "xyz", BudgetState{Inputs: "xyz", Exceeded: 1, Next: now.Add(time.Minute)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.s.RanOut(tc.inputs, now, b)); diff != "" {
				t.Errorf("RanOut (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBudgetStateSeries walks one series: the searches that run out of
// their budget start ever later, never sooner than the backoff allows.
func TestBudgetStateSeries(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var s BudgetState
	b := Backoff{}
	var waits []time.Duration
	for range 7 {
		if wait, _ := s.Wait("abc", now); wait {
			t.Fatalf("a search at the next try waits: %+v at %s", s, now)
		}
		s = s.RanOut("abc", now, b)
		if wait, until := s.Wait("abc", now); !wait || !until.Equal(s.Next) {
			t.Fatalf("a search right after running out does not wait: %+v", s)
		}
		waits = append(waits, s.Next.Sub(now))
		now = s.Next
	}
	want := []time.Duration{5 * time.Minute, 10 * time.Minute, 20 * time.Minute, 40 * time.Minute, time.Hour, time.Hour, time.Hour}
	if diff := cmp.Diff(want, waits); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
}
