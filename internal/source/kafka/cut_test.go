package kafka

import (
	"context"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCut(t *testing.T) {
	const maxInt = math.MaxInt64
	tests := []struct {
		name      string
		after     map[int32]int64
		available map[int32]Range
		tuples    int64
		want      map[int32]Range
	}{{
		name:      "first batch starts at the window's start, in proportion",
		available: map[int32]Range{0: {100, 110}, 1: {0, 20}, 2: {5, 35}},
		tuples:    6,
		want:      map[int32]Range{0: {100, 101}, 1: {0, 2}, 2: {5, 8}},
	}, {
		name:      "next batch continues where after ends",
		after:     map[int32]int64{0: 101, 1: 2, 2: 8},
		available: map[int32]Range{0: {100, 110}, 1: {0, 20}, 2: {5, 35}},
		tuples:    9,
		// Exact shares 1.5, 3 and 4.5: the tie between 0 and 2 goes to 0.
		want: map[int32]Range{0: {101, 103}, 1: {2, 5}, 2: {8, 12}},
	}, {
		name:      "largest remainders win the rounding",
		available: map[int32]Range{0: {0, 1}, 1: {0, 3}, 2: {0, 6}},
		tuples:    5,
		// Exact shares 0.5, 1.5, 3: the tie between 0 and 1 goes to 0.
		want: map[int32]Range{0: {0, 1}, 1: {0, 1}, 2: {0, 3}},
	}, {
		name:      "ties go to the lower partition",
		available: map[int32]Range{2: {0, 1}, 0: {0, 1}, 1: {0, 1}},
		tuples:    2,
		want:      map[int32]Range{0: {0, 1}, 1: {0, 1}, 2: {0, 0}},
	}, {
		name:      "a larger remainder beats a lower partition",
		available: map[int32]Range{0: {0, 7}, 1: {0, 2}},
		tuples:    4,
		// Exact shares 3 1/9 and 8/9.
		want: map[int32]Range{0: {0, 3}, 1: {0, 1}},
	}, {
		name:      "fewer available than asked: all of it",
		after:     map[int32]int64{0: 4},
		available: map[int32]Range{0: {0, 10}, 1: {3, 5}},
		tuples:    100,
		want:      map[int32]Range{0: {4, 10}, 1: {3, 5}},
	}, {
		name:      "zero tuples: empty ranges where the next batch starts",
		after:     map[int32]int64{1: 7},
		available: map[int32]Range{0: {2, 10}, 1: {3, 9}},
		tuples:    0,
		want:      map[int32]Range{0: {2, 2}, 1: {7, 7}},
	}, {
		name:      "a drained partition keeps an empty range for Spark",
		after:     map[int32]int64{0: 10, 1: 3},
		available: map[int32]Range{0: {0, 10}, 1: {0, 13}},
		tuples:    4,
		want:      map[int32]Range{0: {10, 10}, 1: {3, 7}},
	}, {
		name:      "after below From: the previous batch ended before the window's first record",
		after:     map[int32]int64{0: 4, 1: 1},
		available: map[int32]Range{0: {9, 12}, 1: {0, 3}},
		tuples:    10,
		want:      map[int32]Range{0: {9, 12}, 1: {1, 3}},
	}, {
		name:      "nothing available",
		available: map[int32]Range{0: {5, 5}},
		tuples:    3,
		want:      map[int32]Range{0: {5, 5}},
	}, {
		name:   "no partitions",
		tuples: 3,
		want:   map[int32]Range{},
	}, {
		name:      "huge ranges do not overflow",
		available: map[int32]Range{0: {0, maxInt - 1}, 1: {0, 1}},
		tuples:    maxInt - 1,
		// Exact shares (M−1)²/M = M−2 + 1/M and (M−1)/M: 1 goes to the larger remainder.
		want: map[int32]Range{0: {0, maxInt - 2}, 1: {0, 1}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Cut(tc.after, tc.available, tc.tuples)
			if err != nil {
				t.Fatalf("Cut: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Cut (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCutErrors(t *testing.T) {
	tests := []struct {
		name      string
		after     map[int32]int64
		available map[int32]Range
		tuples    int64
		wantErr   string
	}{
		{"negative tuples", nil, map[int32]Range{0: {0, 1}}, -1, "tuples: must not be negative, got -1"},
		{"after beyond the available end", map[int32]int64{1: 6}, map[int32]Range{0: {0, 9}, 1: {0, 5}}, 1,
			"after[1]: the previous batch ended at 6, beyond the available range [0, 5)"},
		{"after on an unknown partition", map[int32]int64{3: 0}, map[int32]Range{0: {0, 9}}, 1,
			"after[3]: partition 3 has no available range"},
		{"negative after", map[int32]int64{0: -1}, map[int32]Range{0: {0, 9}}, 1, "after[0]: offsets are not negative, got -1"},
		{"From after To", nil, map[int32]Range{0: {5, 4}}, 1, "available[0]: want 0 ≤ From ≤ To, got [5, 4)"},
		{"negative From", nil, map[int32]Range{0: {-2, 4}}, 1, "available[0]: want 0 ≤ From ≤ To, got [-2, 4)"},
		{"negative partition", nil, map[int32]Range{-1: {0, 4}}, 1, "available[-1]: partition numbers are not negative"},
		{"more records than an int64 holds", nil, map[int32]Range{0: {0, math.MaxInt64}, 1: {0, 1}}, 1,
			"available: more than 9223372036854775807 records in all"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Cut(tc.after, tc.available, tc.tuples)
			if err == nil {
				t.Fatalf("Cut = %v, want an error containing %q", got, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Cut error = %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

// TestCutTilesTheWindow runs batches over a topic that grows while they run:
// records arrive a few minutes late, so timestamps interleave around both
// bounds, and partition 2 gets its first records late in the window. Halfway,
// the source is rebuilt and the previous batch's end parsed back from its
// Spark options, as after an operator restart. Once every partition has
// passed the window end and the batches have drained it, every offset of
// every partition's window has been in exactly one batch, and no offset
// outside it in any.
func TestCutTilesTheWindow(t *testing.T) {
	brokers := newCluster(t)
	rng := rand.New(rand.NewPCG(20261201, 1))
	src := newSource(t, Config{Brokers: brokers, Topic: testTopic})
	// produced holds each partition's timestamps in offset order.
	produced := map[int32][]time.Duration{}
	var batches []map[int32]Range
	after := map[int32]int64{}
	next := func(t *testing.T, tuples int64) map[int32]Range {
		t.Helper()
		available, err := src.Snapshot(context.Background())
		if err != nil {
			t.Fatalf("Snapshot: %v", err)
		}
		batch, err := Cut(after, available, tuples)
		if err != nil {
			t.Fatalf("Cut: %v", err)
		}
		left := int64(0)
		for p, r := range available {
			left += r.To - max(after[p], r.From)
		}
		if got, want := Total(batch), min(tuples, left); got != want {
			t.Fatalf("batch %d holds %d records, want %d", len(batches), got, want)
		}
		batches = append(batches, batch)
		for p, r := range batch {
			after[p] = r.To
		}
		return batch
	}

	const rounds = 16
	for round := range rounds {
		// The clock runs from 10 min before the window to 20 min after it.
		clock := -10*time.Minute + time.Duration(round)*6*time.Minute
		var records []record
		for p := range int32(3) {
			if p == 2 && clock < 30*time.Minute {
				continue
			}
			for range rng.IntN(6) {
				at := clock - time.Duration(rng.IntN(4*60))*time.Second
				records = append(records, record{p, at})
				produced[p] = append(produced[p], at)
			}
		}
		produce(t, brokers, records)
		batch := next(t, int64(rng.IntN(8)))

		if round == rounds/2 {
			starting, ending := OffsetsJSON(testTopic, batch)
			// The old source is closed when the test ends.
			src = newSource(t, Config{Brokers: brokers, Topic: testTopic})
			resumed, err := ParseOffsetsJSON(testTopic, starting, ending)
			if err != nil {
				t.Fatalf("ParseOffsetsJSON(%s, %s): %v", starting, ending, err)
			}
			if diff := cmp.Diff(batch, resumed); diff != "" {
				t.Fatalf("resumed batch (-before +after the restart):\n%s", diff)
			}
			after = map[int32]int64{}
			for p, r := range resumed {
				after[p] = r.To
			}
		}
	}
	// Every partition passes the window end; then drain.
	var closing []record
	for p := range int32(3) {
		closing = append(closing, record{p, 2 * time.Hour})
		produced[p] = append(produced[p], 2*time.Hour)
	}
	produce(t, brokers, closing)
	for drained := false; !drained; {
		drained = Total(next(t, 5)) == 0
	}

	for p := range int32(3) {
		// The window by the first-offset rule, from what was produced.
		timestamps := produced[p]
		start := int64(slices.IndexFunc(timestamps, func(at time.Duration) bool { return at >= 0 }))
		end := int64(slices.IndexFunc(timestamps, func(at time.Duration) bool { return at >= time.Hour }))
		if start < 0 || end < start {
			t.Fatalf("partition %d: no window in %v", p, timestamps)
		}
		covered := map[int64]int{}
		for _, batch := range batches {
			for offset := batch[p].From; offset < batch[p].To; offset++ {
				covered[offset]++
			}
		}
		for offset := range int64(len(timestamps)) {
			want := 0
			if offset >= start && offset < end {
				want = 1
			}
			if covered[offset] != want {
				t.Errorf("partition %d: offset %d (timestamp %v) is in %d batches, want %d; window [%d, %d)",
					p, offset, timestamps[offset], covered[offset], want, start, end)
			}
		}
		if len(covered) != int(end-start) {
			t.Errorf("partition %d: batches cover offsets %v, want [%d, %d)", p, slices.Sorted(maps.Keys(covered)), start, end)
		}
	}
}
