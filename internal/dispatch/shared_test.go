package dispatch

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/laxity-dev/laxity/internal/planner"
)

// sharing is q with the plan's batches 0 to 9 shared among members.
func sharing(q Query, members ...string) Query {
	q.Shared = map[int][]string{}
	for i := range 10 {
		q.Shared[i] = members
	}
	return q
}

func sharedAttempt(state State, members ...string) Batch {
	return Batch{From: 0, To: 100, Attempt: Attempt{State: state, Nodes: 2, Launched: at(10), Ended: at(12), Members: members}}
}

func TestSharedMembers(t *testing.T) {
	batch0 := Step{Kind: planner.StepBatch, Index: 0, FromTuple: 0, ToTuple: 100}
	of := func(query string, s Step) Step { s.Query = query; return s }
	retry := func(s Step) Step { s.Attempt = 1; return s }
	tests := []struct {
		name    string
		queries []Query
		launch  Step
		want    []string
	}{
		{"the plan's members whose next batch it is", []Query{
			sharing(query("a", 200, 150), "a", "b", "c"), sharing(query("b", 200, 150), "a", "b", "c"), sharing(query("c", 200, 150), "a", "b", "c"),
		}, of("b", batch0), []string{"a", "b", "c"}},
		{"a member whose input is held is left out", []Query{
			sharing(query("a", 200, 150), "a", "b", "c"), sharing(query("b", 200, 150), "a", "b", "c"), held(sharing(query("c", 200, 150), "a", "b", "c")),
		}, of("a", batch0), []string{"a", "b"}},
		{"a member further on runs alone", []Query{
			sharing(query("a", 200, 250), "a", "b"), sharing(query("b", 200, 250, done(0, 100)), "a", "b"),
		}, of("a", batch0), nil},
		{"a deleted member is no member", []Query{
			sharing(query("a", 200, 150), "a", "b", "gone"),
		}, of("a", batch0), nil},
		{"not shared by the plan", []Query{query("a", 200, 150), query("b", 200, 150)}, of("a", batch0), nil},
		{"a retry serves the failed attempt's members", []Query{
			sharing(query("a", 200, 150, sharedAttempt(Failed, "a", "b")), "a", "b", "c"),
			sharing(query("b", 200, 150, sharedAttempt(Failed, "a", "b")), "a", "b", "c"),
			sharing(query("c", 200, 150, sharedAttempt(Failed, "a", "b")), "a", "b", "c"),
		}, of("b", retry(batch0)), []string{"a", "b"}},
		{"a retry after its first member was deleted", []Query{
			sharing(query("b", 200, 150, sharedAttempt(Failed, "a", "b", "c")), "a", "b", "c"),
			sharing(query("c", 200, 150, sharedAttempt(Failed, "a", "b", "c")), "a", "b", "c"),
		}, of("c", retry(batch0)), []string{"b", "c"}},
		{"a merge is never shared", []Query{sharing(query("a", 200, 150), "a", "b"), sharing(query("b", 200, 150), "a", "b")},
			Step{Query: "a", Kind: planner.StepFinal, Inputs: 1}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := SharedMembers(at(60), settings, tc.queries, tc.launch)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("members (-want +got):\n%s", diff)
			}
		})
	}
}

func held(q Query) Query { q.Held = true; return q }

// TestSharedAttemptCountsOnce holds a shared batch, which every member
// sees as its own, to one step on the pool: its nodes are busy once, it
// is stuck once, and it is modelled as its members' batches together.
func TestSharedAttemptCountsOnce(t *testing.T) {
	running := sharedAttempt(Running, "a", "b")
	queries := []Query{query("a", 200, 150, running), query("b", 200, 150, running)}
	if got := Busy(queries); got != 2 {
		t.Errorf("busy %d nodes, want the shared batch's 2 once", got)
	}
	// Each member's batch of 100 tuples on 2 nodes takes 2 s: together 4 s.
	if got, want := FreeAt(queries, at(10)), at(14); !got.Equal(want) {
		t.Errorf("free at %s, want %s", got, want)
	}
	rule := StuckRule{Factor: 3}
	stuck := Stuck(at(23), rule, queries)
	if len(stuck) != 1 || stuck[0].Query != "a" || stuck[0].Modelled != 4*time.Second {
		t.Errorf("stuck %+v: want the shared batch once, by its first member, modelled at 4 s", stuck)
	}
	if got := Stuck(at(21), rule, queries); len(got) != 0 {
		t.Errorf("stuck at 11 s of a 12 s bound: %+v", got)
	}
	// With its first member deleted, the next one accounts for it.
	stuck = Stuck(at(23), rule, queries[1:])
	if len(stuck) != 1 || stuck[0].Query != "b" {
		t.Errorf("stuck %+v: want the shared batch by b", stuck)
	}
}
