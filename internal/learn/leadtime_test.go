package learn

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

var leadOrigin = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

func TestLeadTimesObserve(t *testing.T) {
	type pass struct {
		at               time.Duration
		requested, ready int
		wantLead         time.Duration
		wantMeasured     bool
		wantPending      int // 0: none
	}
	for _, tc := range []struct {
		name   string
		passes []pass
	}{
		{name: "a request met is one measurement, to the second", passes: []pass{
			{at: 0, requested: 4, ready: 0, wantPending: 4},
			{at: 100 * time.Second, requested: 4, ready: 2, wantPending: 4},
			{at: 420*time.Second + 400*time.Millisecond, requested: 4, ready: 4, wantLead: 420 * time.Second, wantMeasured: true},
			{at: 500 * time.Second, requested: 4, ready: 4},
		}},
		{name: "a request withdrawn before it was met is none", passes: []pass{
			{at: 0, requested: 4, ready: 2, wantPending: 4},
			{at: time.Minute, requested: 2, ready: 2},
		}},
		{name: "a request raised while one is timed is timed from the first", passes: []pass{
			{at: 0, requested: 4, ready: 2, wantPending: 4},
			{at: time.Minute, requested: 6, ready: 2, wantPending: 4},
			{at: 5 * time.Minute, requested: 6, ready: 4, wantLead: 5 * time.Minute, wantMeasured: true},
			{at: 5*time.Minute + 10*time.Second, requested: 6, ready: 4, wantPending: 6},
		}},
		{name: "fewer nodes than ready start nothing", passes: []pass{
			{at: 0, requested: 2, ready: 4},
			{at: time.Minute, requested: 4, ready: 4},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m LeadTimes
			for i, p := range tc.passes {
				lead, measured := m.Observe(p.requested, p.ready, leadOrigin.Add(p.at))
				if lead != p.wantLead || measured != p.wantMeasured {
					t.Errorf("pass %d: measured %s, %v; want %s, %v", i, lead, measured, p.wantLead, p.wantMeasured)
				}
				pending := 0
				if m.Pending != nil {
					pending = m.Pending.Nodes
				}
				if pending != p.wantPending {
					t.Errorf("pass %d: pending %d, want %d", i, pending, p.wantPending)
				}
			}
		})
	}
}

// Whatever a pool is asked for and delivers, pass after pass: a lead time
// is measured only when the ready nodes reach the request being timed, as
// the time since it was made; a request not met stays timed unless
// withdrawn; and no more than MaxLeadTimes are kept.
func TestLeadTimesObserveProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var m LeadTimes
		now := leadOrigin
		for range rapid.IntRange(1, 120).Draw(t, "passes") {
			now = now.Add(time.Duration(rapid.IntRange(0, 600).Draw(t, "seconds")) * time.Second)
			requested, ready := rapid.IntRange(0, 8).Draw(t, "requested"), rapid.IntRange(0, 8).Draw(t, "ready")
			before := m.Pending
			kept := len(m.Measured)
			lead, measured := m.Observe(requested, ready, now)
			switch {
			case before != nil && ready >= before.Nodes:
				if !measured || lead != now.Sub(before.Since) {
					t.Fatalf("ready %d met the request for %d since %s at %s: measured %s, %v", ready, before.Nodes, before.Since, now, lead, measured)
				}
				if m.Measured[len(m.Measured)-1] != lead || len(m.Measured) != min(kept+1, MaxLeadTimes) {
					t.Fatalf("measured %s; kept %v", lead, m.Measured)
				}
			case measured:
				t.Fatalf("measured %s with ready %d and pending %+v", lead, ready, before)
			case requested > ready && m.Pending == nil:
				t.Fatalf("a request for %d above %d ready is not timed", requested, ready)
			case requested <= ready && m.Pending != nil:
				t.Fatalf("a request for %d met by %d ready is still timed: %+v", requested, ready, m.Pending)
			case before != nil && m.Pending != nil && *m.Pending != *before:
				t.Fatalf("the request timed since %s was replaced by %+v before it was met", before.Since, m.Pending)
			}
		}
	})
}

func TestLeadTimesPlanned(t *testing.T) {
	declared := 2 * time.Minute
	for _, tc := range []struct {
		name        string
		measured    []time.Duration
		wantLearned time.Duration
		wantPlanned time.Duration
	}{
		{name: "nothing measured", wantLearned: declared, wantPlanned: declared},
		{name: "as declared", measured: []time.Duration{2 * time.Minute, 2 * time.Minute}, wantLearned: declared, wantPlanned: declared},
		{name: "a little late is planned as declared", measured: []time.Duration{2*time.Minute + 20*time.Second}, wantLearned: 2*time.Minute + 20*time.Second, wantPlanned: declared},
		{name: "half as long again is planned as measured", measured: []time.Duration{3 * time.Minute}, wantLearned: 3 * time.Minute, wantPlanned: 3 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := LeadTimes{Measured: tc.measured}
			if got := m.Learned(declared, Defaults); got != tc.wantLearned {
				t.Errorf("Learned = %s, want %s", got, tc.wantLearned)
			}
			if got := m.Planned(declared, Defaults); got != tc.wantPlanned {
				t.Errorf("Planned = %s, want %s", got, tc.wantPlanned)
			}
		})
	}
}
