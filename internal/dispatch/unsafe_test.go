package dispatch

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUnsafeAt(t *testing.T) {
	// At 100 s the windows have closed with 1,000 tuples each: a query with
	// nothing run has 10 batches of 2 s and a final merge of 1 s left, 21 s
	// by the model.
	finished := query("a", 110, 1000, done(0, 1000))
	finished.Final = &Attempt{State: Succeeded, Ended: at(99)}
	closing := query("a", 106, 1000, done(0, 900), Batch{From: 900, To: 1000, Attempt: Attempt{State: Running, Started: at(100), Nodes: 2}})
	tests := []struct {
		name    string
		queries []Query
		factor  float64
		nodes   int
		want    []string
	}{
		{name: "within its deadline at the slowdown", queries: []Query{query("a", 130, 1000)}, factor: 1.4, nodes: 2},
		{name: "late at the slowdown", queries: []Query{query("a", 130, 1000)}, factor: 1.5, nodes: 2, want: []string{"a"}},
		{name: "more nodes make it", queries: []Query{query("a", 130, 1000)}, factor: 1.5, nodes: 4},
		{name: "steps as modelled are not this rule's business", queries: []Query{query("a", 110, 1000)}, factor: 1, nodes: 2},
		{name: "faster steps neither", queries: []Query{query("a", 110, 1000)}, factor: 0.8, nodes: 2},
		{name: "no nodes, no judgement", queries: []Query{query("a", 110, 1000)}, factor: 2, nodes: 0},
		{
			// Each alone has 25.2 s of work and time for it; b, due later,
			// also waits for a's.
			name: "the query due later waits for the one due first", queries: []Query{query("b", 150, 1000), query("a", 130, 1000)},
			factor: 1.2, nodes: 2, want: []string{"b"},
		},
		{name: "a query done takes no time", queries: []Query{finished, query("b", 130, 1000)}, factor: 1.4, nodes: 2},
		// The running batch ends at 103 s at 1.5x, the merge 1.5 s later.
		{name: "the step holding the pool counts, within", queries: []Query{closing}, factor: 1.5, nodes: 2},
		// At 2.5x: 105 s, then 2.5 s.
		{name: "the step holding the pool counts, late", queries: []Query{closing}, factor: 2.5, nodes: 2, want: []string{"a"}},
		{
			name: "sorted by deadline", queries: []Query{query("z", 105, 1000), query("y", 104, 1000)},
			factor: 2, nodes: 2, want: []string{"y", "z"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, UnsafeAt(at(100), tc.queries, tc.factor, tc.nodes)); diff != "" {
				t.Errorf("UnsafeAt (-want +got):\n%s", diff)
			}
		})
	}
}
