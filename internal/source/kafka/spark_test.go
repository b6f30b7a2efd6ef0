package kafka

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestOffsetsJSON(t *testing.T) {
	ranges := map[int32]Range{10: {7, 9}, 2: {0, 0}, 0: {23, 30}, 1: {42, math.MaxInt64}}
	starting, ending := OffsetsJSON(testTopic, ranges)
	// Numeric partition order: 10 after 2.
	if want := `{"events":{"0":23,"1":42,"2":0,"10":7}}`; starting != want {
		t.Errorf("starting = %s, want %s", starting, want)
	}
	if want := `{"events":{"0":30,"1":9223372036854775807,"2":0,"10":9}}`; ending != want {
		t.Errorf("ending = %s, want %s", ending, want)
	}
	parsed, err := ParseOffsetsJSON(testTopic, starting, ending)
	if err != nil {
		t.Fatalf("ParseOffsetsJSON: %v", err)
	}
	if diff := cmp.Diff(ranges, parsed); diff != "" {
		t.Errorf("ParseOffsetsJSON (-want +got):\n%s", diff)
	}

	starting, ending = OffsetsJSON(testTopic, nil)
	if want := `{"events":{}}`; starting != want || ending != want {
		t.Errorf("no partitions: got %s and %s, want %s for both", starting, ending, want)
	}
}

func TestParseOffsetsJSON(t *testing.T) {
	tests := []struct {
		name     string
		starting string
		ending   string
		want     map[int32]Range
	}{
		{"any partition order", `{"events":{"0":23,"1":0}}`, `{"events":{"1":50,"0":42}}`, map[int32]Range{0: {23, 42}, 1: {0, 50}}},
		{"negative zero is zero", `{"events":{"0":-0}}`, `{"events":{"0":0}}`, map[int32]Range{0: {0, 0}}},
		{"whitespace", " { \"events\" : {\n\"0\" : 1 } }\n", `{"events":{"0":1}}`, map[int32]Range{0: {1, 1}}},
		{"no partitions", `{"events":{}}`, `{"events":{}}`, map[int32]Range{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseOffsetsJSON(testTopic, tc.starting, tc.ending)
			if err != nil {
				t.Fatalf("ParseOffsetsJSON: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseOffsetsJSON (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseOffsetsJSONErrors(t *testing.T) {
	const good = `{"events":{"0":1}}`
	tests := []struct {
		name     string
		starting string
		ending   string
		wantErr  string
	}{
		{"empty", "", good, "startingOffsets: unexpected end of the document"},
		{"truncated", good, `{"events":{"0":1}`, "endingOffsets: unexpected end of the document"},
		{"not an object", `[]`, good, `startingOffsets: want "{", got "["`},
		{"other topic", `{"orders":{"0":1}}`, good, `startingOffsets: want the topic "events" as the only key, got "orders"`},
		{"a second topic", good, `{"events":{"0":1},"orders":{}}`, `endingOffsets: want the topic "events" as the only key, got "orders"`},
		{"partitions not an object", `{"events":[1]}`, good, `startingOffsets: topic "events": want "{", got "["`},
		{"partition not a number", `{"events":{"zero":1}}`, good, `startingOffsets: partition "zero": want a partition number in canonical decimal`},
		{"partition with a leading zero", `{"events":{"00":1}}`, good, `partition "00": want a partition number in canonical decimal`},
		{"partition with a sign", `{"events":{"+0":1}}`, good, `partition "+0": want a partition number in canonical decimal`},
		{"negative partition", `{"events":{"-1":1}}`, good, `partition "-1": want a partition number in canonical decimal`},
		{"partition beyond int32", `{"events":{"2147483648":1}}`, good, `partition "2147483648": want a partition number in canonical decimal`},
		{"duplicate partition", `{"events":{"0":1,"0":2}}`, good, "startingOffsets: partition 0: listed twice"},
		{"Spark's latest", `{"events":{"0":-1}}`, good, "startingOffsets: partition 0: want an offset, a non-negative integer, got -1"},
		{"Spark's earliest", good, `{"events":{"0":-2}}`, "endingOffsets: partition 0: want an offset, a non-negative integer, got -2"},
		{"fraction", `{"events":{"0":1.5}}`, good, "partition 0: want an offset, a non-negative integer, got 1.5"},
		{"exponent", `{"events":{"0":1e3}}`, good, "partition 0: want an offset, a non-negative integer, got 1e3"},
		{"string offset", `{"events":{"0":"1"}}`, good, `partition 0: want an offset, a non-negative integer, got "1"`},
		{"null offset", `{"events":{"0":null}}`, good, "partition 0: want an offset, a non-negative integer, got null"},
		{"offset beyond int64", `{"events":{"0":9223372036854775808}}`, good, "got 9223372036854775808"},
		{"nested offset", `{"events":{"0":{}}}`, good, `partition 0: want an offset, a non-negative integer, got "{"`},
		{"trailing document", good + `{}`, good, `startingOffsets: want the end of the document, got "{"`},
		{"trailing garbage", good, good + ` x`, "endingOffsets: invalid character 'x'"},
		{"partition missing from ending", `{"events":{"0":1,"1":2}}`, good, "endingOffsets: partition 1 of startingOffsets is missing"},
		{"partition missing from starting", good, `{"events":{"0":1,"3":2}}`, "startingOffsets: partition 3 of endingOffsets is missing"},
		{"ending before starting", `{"events":{"0":5}}`, `{"events":{"0":4}}`, "partition 0: ending offset 4 is before the starting offset 5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseOffsetsJSON(testTopic, tc.starting, tc.ending)
			if err == nil {
				t.Fatalf("ParseOffsetsJSON = %v, want an error containing %q", got, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseOffsetsJSON error = %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

// FuzzParseOffsetsJSON checks that ParseOffsetsJSON never panics, that
// whatever it accepts OffsetsJSON writes back to a document it reads the same
// way, and that it reads back every batch OffsetsJSON writes.
func FuzzParseOffsetsJSON(f *testing.F) {
	f.Add(testTopic, `{"events":{"0":23,"1":42}}`, `{"events":{"0":30,"1":42}}`, int32(3), int64(10), int64(5))
	f.Add(testTopic, `{"events":{}}`, `{"events":{}}`, int32(0), int64(0), int64(0))
	f.Add("a.b_c-d", `{"a.b_c-d":{"2147483647":9223372036854775807}}`, `{"a.b_c-d":{"2147483647":9223372036854775807}}`,
		int32(math.MaxInt32), int64(math.MaxInt64), int64(0))
	f.Add(`"<&>"`, `{"\"\u003c&>\"":{"1":2}}`, `{"\"<\u0026>\"":{"1":3}}`, int32(1), int64(2), int64(1))
	f.Add(testTopic, `{"events":{"0":1,"0":1}}`, `{"events":{"0":-1}}`, int32(-1), int64(-1), int64(-1))
	f.Add(testTopic, `{"events":{"0":1e2}} []`, `{"events":{"01":1}`, int32(7), int64(1), int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, topic, starting, ending string, partition int32, from, length int64) {
		if parsed, err := ParseOffsetsJSON(topic, starting, ending); err == nil {
			s, e := OffsetsJSON(topic, parsed)
			again, err := ParseOffsetsJSON(topic, s, e)
			if err != nil {
				t.Fatalf("ParseOffsetsJSON accepted %s and %s as %v but not their rewrite %s and %s: %v",
					starting, ending, parsed, s, e, err)
			}
			if diff := cmp.Diff(parsed, again); diff != "" {
				t.Fatalf("rewriting %s and %s (-first +second reading):\n%s", starting, ending, diff)
			}
		}

		// JSON holds only valid UTF-8, so OffsetsJSON's topic must be.
		if !utf8.ValidString(topic) || partition < 0 || from < 0 || length < 0 || length > math.MaxInt64-from {
			return
		}
		batch := map[int32]Range{partition: {from, from + length}, partition / 2: {from / 2, from + length}}
		s, e := OffsetsJSON(topic, batch)
		got, err := ParseOffsetsJSON(topic, s, e)
		if err != nil {
			t.Fatalf("ParseOffsetsJSON(%q, %s, %s): %v", topic, s, e, err)
		}
		if diff := cmp.Diff(batch, got); diff != "" {
			t.Fatalf("round trip of %s and %s (-want +got):\n%s", s, e, diff)
		}
	})
}
