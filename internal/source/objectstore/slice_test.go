package objectstore

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// slicer calls Slice on a source in turn, each batch with the slice of the
// one before.
type slicer struct {
	src      *Source
	previous map[string]string
}

func (s *slicer) next(t *testing.T, now time.Duration, tuples int64) (map[string]string, int64) {
	t.Helper()
	slice, taken, err := s.src.Slice(context.Background(), windowStart.Add(now), s.previous, tuples)
	if err != nil {
		t.Fatalf("Slice(start%+v, %d): %v", now, tuples, err)
	}
	s.previous = slice
	return slice, taken
}

// readBack is slice as an operator that restarts reads it back: written
// out and parsed again.
func readBack(t *testing.T, slice map[string]string) map[string]string {
	t.Helper()
	encoded, err := json.Marshal(slice)
	if err != nil {
		t.Fatalf("encoding %v: %v", slice, err)
	}
	var decoded map[string]string
	if err := json.Unmarshal(encoded, &decoded); err != nil {
		t.Fatalf("decoding %s: %v", encoded, err)
	}
	return decoded
}

// TestSlice cuts four batches by hand, in key-time mode, with a restart
// before the third: the first stops past its tuples by less than its last
// object, the second takes two late objects, one placed before the
// previous cursor by its key alone, the third resumes from the read-back
// slice, and the fourth finds nothing.
func TestSlice(t *testing.T) {
	st := newStore(t)
	key := func(at time.Duration, name string) string {
		return testPrefix + windowStart.Add(at).Format(testLayout) + "-" + name
	}
	cursor := func(at time.Duration, name string) string {
		return formatInstant(windowStart.Add(at)) + "|" + key(at, name)
	}
	cfg := st.config()
	cfg.KeyTimeLayout, cfg.Settle = testLayout, time.Minute
	cfg.TuplesPerObject, cfg.BytesPerTuple = 0, 10
	upload := func(at time.Duration, name string, size int, uploaded time.Duration) {
		st.put(t, key(at, name), size, windowStart.Add(uploaded))
	}
	upload(time.Minute, "a", 10, 2*time.Minute)
	// Dated exactly at the first cut: in the first batch, and not late in the second.
	upload(2*time.Minute, "b", 30, 9*time.Minute)
	upload(3*time.Minute, "c", 5, 4*time.Minute)
	upload(4*time.Minute, "d", 10, 20*time.Minute)
	upload(-time.Minute, "before", 10, 2*time.Minute)
	upload(time.Hour, "after", 10, 2*time.Minute)

	batches := &slicer{src: newSource(t, cfg)}
	slice, taken := batches.next(t, 10*time.Minute, 2)
	want := map[string]string{
		"objectstore-bucket":  "events",
		"objectstore-prefix":  "clicks/",
		"objectstore-window":  "2026-12-01T00:00:00Z/2026-12-01T01:00:00Z",
		"objectstore-after":   "",
		"objectstore-through": cursor(2*time.Minute, "b"),
		"objectstore-cut":     "2026-12-01T00:09:00Z",
		"objectstore-objects": "2",
		"late":                "0",
		"objectstore-late":    "[]",
		"objectstore-keys":    fmt.Sprintf("[%q,%q]", key(time.Minute, "a"), key(2*time.Minute, "b")),
	}
	if diff := cmp.Diff(want, slice); diff != "" || taken != 4 {
		t.Errorf("first batch (-want +got):\n%s\ntaken %d, want 4", diff, taken)
	}

	// Late: e by its key time, a2 by its key at b's time.
	upload(90*time.Second, "e", 10, 12*time.Minute)
	upload(2*time.Minute, "a2", 10, 12*time.Minute+500*time.Millisecond)
	slice, taken = batches.next(t, 15*time.Minute, 5)
	want = map[string]string{
		"objectstore-bucket":  "events",
		"objectstore-prefix":  "clicks/",
		"objectstore-window":  "2026-12-01T00:00:00Z/2026-12-01T01:00:00Z",
		"objectstore-after":   cursor(2*time.Minute, "b"),
		"objectstore-through": cursor(3*time.Minute, "c"),
		"objectstore-cut":     "2026-12-01T00:14:00Z",
		"objectstore-objects": "3",
		"late":                "2",
		"objectstore-late":    fmt.Sprintf("[%q,%q]", key(90*time.Second, "e"), key(2*time.Minute, "a2")),
		"objectstore-keys":    fmt.Sprintf("[%q,%q,%q]", key(90*time.Second, "e"), key(2*time.Minute, "a2"), key(3*time.Minute, "c")),
	}
	if diff := cmp.Diff(want, slice); diff != "" || taken != 3 {
		t.Errorf("second batch (-want +got):\n%s\ntaken %d, want 3", diff, taken)
	}

	batches = &slicer{src: newSource(t, cfg), previous: readBack(t, slice)}
	slice, taken = batches.next(t, 25*time.Minute+500*time.Millisecond, 1)
	want = map[string]string{
		"objectstore-bucket":  "events",
		"objectstore-prefix":  "clicks/",
		"objectstore-window":  "2026-12-01T00:00:00Z/2026-12-01T01:00:00Z",
		"objectstore-after":   cursor(3*time.Minute, "c"),
		"objectstore-through": cursor(4*time.Minute, "d"),
		"objectstore-cut":     "2026-12-01T00:24:00.5Z",
		"objectstore-objects": "1",
		"late":                "0",
		"objectstore-late":    "[]",
		"objectstore-keys":    fmt.Sprintf("[%q]", key(4*time.Minute, "d")),
	}
	if diff := cmp.Diff(want, slice); diff != "" || taken != 1 {
		t.Errorf("batch after the restart (-want +got):\n%s\ntaken %d, want 1", diff, taken)
	}

	slice, taken = batches.next(t, 2*time.Hour, 1)
	want = map[string]string{
		"objectstore-bucket":  "events",
		"objectstore-prefix":  "clicks/",
		"objectstore-window":  "2026-12-01T00:00:00Z/2026-12-01T01:00:00Z",
		"objectstore-after":   cursor(4*time.Minute, "d"),
		"objectstore-through": cursor(4*time.Minute, "d"),
		"objectstore-cut":     "2026-12-01T01:59:00Z",
		"objectstore-objects": "0",
		"late":                "0",
		"objectstore-late":    "[]",
		"objectstore-keys":    "[]",
	}
	if diff := cmp.Diff(want, slice); diff != "" || taken != 0 {
		t.Errorf("empty batch (-want +got):\n%s\ntaken %d, want 0", diff, taken)
	}
}

// TestSliceBeforeAnyObject cuts batches of nothing, and of zero tuples,
// before and after objects arrive: the cursors stay empty until a batch
// takes an object.
func TestSliceBeforeAnyObject(t *testing.T) {
	st := newStore(t)
	batches := &slicer{src: newSource(t, st.config())}
	slice, taken := batches.next(t, time.Minute, 3)
	if slice["objectstore-after"] != "" || slice["objectstore-through"] != "" || slice["objectstore-objects"] != "0" || taken != 0 {
		t.Errorf("first batch of an empty bucket = %v, taken %d", slice, taken)
	}
	st.put(t, testPrefix+"a", 1, windowStart.Add(2*time.Minute))
	slice, taken = batches.next(t, 3*time.Minute, 0)
	if slice["objectstore-through"] != "" || slice["objectstore-objects"] != "0" || taken != 0 {
		t.Errorf("batch of zero tuples = %v, taken %d", slice, taken)
	}
	slice, taken = batches.next(t, 3*time.Minute, 1)
	if want := "2026-12-01T00:02:00Z|clicks/a"; slice["objectstore-after"] != "" || slice["objectstore-through"] != want || taken != 1 {
		t.Errorf("batch of the first object = %v, taken %d; want through %q", slice, taken, want)
	}
}

// TestSliceSlowUpload shows the limit of Settle: an object listed only
// after a batch was cut past its LastModified is taken when its position is
// after that batch's cursor, and by no batch when it is before, although
// Arrived counts it.
func TestSliceSlowUpload(t *testing.T) {
	st := newStore(t)
	cfg := st.config()
	cfg.KeyTimeLayout, cfg.Settle = testLayout, time.Minute
	key := func(at time.Duration) string { return testPrefix + windowStart.Add(at).Format(testLayout) }
	st.put(t, key(5*time.Minute), 1, windowStart.Add(6*time.Minute))
	batches := &slicer{src: newSource(t, cfg)}
	batches.next(t, 10*time.Minute, 10)
	// Both dated before the cut at 9 min, listed only now.
	st.put(t, key(4*time.Minute), 1, windowStart.Add(8*time.Minute))
	st.put(t, key(7*time.Minute), 1, windowStart.Add(8*time.Minute))
	slice, taken := batches.next(t, 20*time.Minute, 10)
	if want := fmt.Sprintf("[%q]", key(7*time.Minute)); slice["objectstore-keys"] != want || taken != 1 {
		t.Errorf("keys = %s, taken %d; want %s, 1", slice["objectstore-keys"], taken, want)
	}
	if arrived, err := batches.src.Arrived(context.Background(), windowStart.Add(20*time.Minute)); err != nil || arrived != 3 {
		t.Errorf("Arrived = %d, %v; want 3", arrived, err)
	}
}

// TestSliceLargeBatch lists over more than one page, and leaves the keys of
// a batch of more than 1000 objects out of its slice.
func TestSliceLargeBatch(t *testing.T) {
	st := newStore(t)
	const objects = maxListedKeys + 1
	for i := range objects {
		st.put(t, fmt.Sprintf("%s%04d", testPrefix, i), 0, windowStart.Add(time.Duration(i)*time.Millisecond))
	}
	src := newSource(t, st.config())
	if arrived, err := src.Arrived(context.Background(), windowEnd); err != nil || arrived != objects {
		t.Fatalf("Arrived = %d, %v; want %d", arrived, err, objects)
	}
	slice, taken, err := src.Slice(context.Background(), windowEnd, nil, objects)
	if err != nil {
		t.Fatalf("Slice: %v", err)
	}
	if _, listed := slice["objectstore-keys"]; listed || slice["objectstore-objects"] != strconv.Itoa(objects) || taken != objects {
		t.Errorf("batch of %d objects: objects %s, taken %d, keys listed %t", objects, slice["objectstore-objects"], taken, listed)
	}
	slice, _, err = src.Slice(context.Background(), windowEnd, nil, maxListedKeys)
	if err != nil {
		t.Fatalf("Slice: %v", err)
	}
	var keys []string
	if err := json.Unmarshal([]byte(slice["objectstore-keys"]), &keys); err != nil || len(keys) != maxListedKeys {
		t.Errorf("batch of %d objects lists %d keys (%v)", maxListedKeys, len(keys), err)
	}
}

// uploaded is an object the tiling test put in the store.
type uploaded struct {
	key      string
	position Cursor
	arrival  time.Time
	tuples   int64
}

// TestSliceTilesTheWindow cuts batches of random sizes from a bucket that
// grows while they run, and restarts from a read-back slice halfway. In
// key-time mode half the objects are late: their key time is 3 to 30 min
// before their upload, in a range that earlier batches have already read.
// Once drained, every object of the window has been read by exactly one
// batch, and none outside it by any. Each batch is also checked against the
// package doc's rule for a job that lists the range itself.
func TestSliceTilesTheWindow(t *testing.T) {
	for _, mode := range []struct {
		name   string
		layout string
	}{{"key time", testLayout}, {"last modified", ""}} {
		t.Run(mode.name, func(t *testing.T) {
			st := newStore(t)
			cfg := st.config()
			cfg.KeyTimeLayout, cfg.Settle = mode.layout, time.Minute
			cfg.TuplesPerObject, cfg.BytesPerTuple = 0, 10
			rng := rand.New(rand.NewPCG(20261201, 2))
			var all []uploaded
			upload := func(at time.Time) {
				size := rng.IntN(40)
				o := uploaded{arrival: at, tuples: max(1, int64((size+9)/10))}
				if mode.layout == "" {
					o.key = fmt.Sprintf("%s%08x", testPrefix, rng.Uint32())
					o.position = Cursor{Time: at, Key: o.key}
				} else {
					back := time.Duration(rng.IntN(120)) * time.Second
					if rng.IntN(2) == 0 {
						back = time.Duration(180+rng.IntN(1620)) * time.Second
					}
					keyTime := at.Add(-back).Truncate(time.Second)
					o.key = fmt.Sprintf("%s%s-%04d.json", testPrefix, keyTime.Format(testLayout), len(all))
					o.position = Cursor{Time: keyTime, Key: o.key}
				}
				st.put(t, o.key, size, at)
				all = append(all, o)
			}
			inWindow := func(o uploaded) bool {
				return !o.position.Time.Before(windowStart) && o.position.Time.Before(windowEnd)
			}

			reads := map[string]int{}
			lateReads := 0
			batches := &slicer{src: newSource(t, cfg)}
			cutBatch := func(now time.Duration, tuples int64) int {
				t.Helper()
				slice, taken := batches.next(t, now, tuples)
				checkBatch(t, slice, taken, tuples, all, inWindow)
				var keys []string
				if err := json.Unmarshal([]byte(slice["objectstore-keys"]), &keys); err != nil {
					t.Fatalf("objectstore-keys: %v", err)
				}
				for _, key := range keys {
					reads[key]++
				}
				var late []string
				if err := json.Unmarshal([]byte(slice["objectstore-late"]), &late); err != nil {
					t.Fatalf("objectstore-late: %v", err)
				}
				lateReads += len(late)
				return len(keys)
			}

			const rounds, step = 30, 3 * time.Minute
			for round := range rounds {
				// The clock runs from 10 min before the window to 20 min
				// after it; objects arrive dated within each step.
				from := -10*time.Minute + time.Duration(round)*step
				for range rng.IntN(8) {
					at := from + time.Duration(1+rng.IntN(int(step/time.Millisecond)))*time.Millisecond
					if rng.IntN(8) == 0 {
						// Exactly at this step's cut.
						at = from + step - cfg.Settle
					}
					upload(windowStart.Add(at))
				}
				cutBatch(from+step, int64(rng.IntN(25)))
				if round == rounds/2 {
					batches = &slicer{src: newSource(t, cfg), previous: readBack(t, batches.previous)}
				}
			}
			drainAt := 3 * time.Hour
			for cutBatch(drainAt, 5) > 0 {
				drainAt += time.Minute
			}

			var want int64
			windowObjects := 0
			for _, o := range all {
				if inWindow(o) {
					windowObjects++
					want += o.tuples
					if reads[o.key] != 1 {
						t.Errorf("object %s (arrived %s) is in %d batches, want 1", o.key, formatInstant(o.arrival), reads[o.key])
					}
				} else if reads[o.key] != 0 {
					t.Errorf("object %s outside the window is in %d batches", o.key, reads[o.key])
				}
			}
			if arrived, err := batches.src.Arrived(context.Background(), windowStart.Add(drainAt)); err != nil || arrived != want {
				t.Errorf("Arrived = %d, %v; want %d", arrived, err, want)
			}
			t.Logf("%d objects, %d in the window, %d of them read as late", len(all), windowObjects, lateReads)
			if mode.layout != "" && lateReads < 10 {
				t.Errorf("%d objects read as late; the test wants at least 10 to show anything", lateReads)
			}
		})
	}
}

// checkBatch checks one batch of the tiling test against the objects
// uploaded so far: its keys are what a job that lists the range reads, in
// position order; taken is their tuples; and it takes tuples, more by less
// than one object, or all the new objects that count.
func checkBatch(t *testing.T, slice map[string]string, taken, tuples int64, all []uploaded, inWindow func(uploaded) bool) {
	t.Helper()
	var after, through *Cursor
	for name, c := range map[string]**Cursor{"objectstore-after": &after, "objectstore-through": &through} {
		if slice[name] == "" {
			continue
		}
		parsed, err := ParseCursor(slice[name])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		*c = &parsed
	}
	cut, err := parseInstant(slice["objectstore-cut"])
	if err != nil {
		t.Fatalf("objectstore-cut: %v", err)
	}
	var keys, late []string
	for name, list := range map[string]*[]string{"objectstore-keys": &keys, "objectstore-late": &late} {
		if err := json.Unmarshal([]byte(slice[name]), list); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	isAfter := func(o uploaded, c *Cursor) bool { return c == nil || o.position.compare(*c) > 0 }
	byKey := map[string]uploaded{}
	var jobReads []uploaded
	var pending []uploaded
	for _, o := range all {
		byKey[o.key] = o
		if !inWindow(o) || o.arrival.After(cut) {
			continue
		}
		switch {
		case slices.Contains(late, o.key):
			jobReads = append(jobReads, o)
		case isAfter(o, after) && !isAfter(o, through):
			jobReads = append(jobReads, o)
		case isAfter(o, through):
			pending = append(pending, o)
		}
	}
	slices.SortFunc(jobReads, func(a, b uploaded) int { return a.position.compare(b.position) })
	wantKeys := []string{}
	var wantTaken, fresh, last int64
	for _, o := range jobReads {
		wantKeys = append(wantKeys, o.key)
		wantTaken += o.tuples
		if !slices.Contains(late, o.key) {
			fresh += o.tuples
			last = o.tuples
		}
	}
	if diff := cmp.Diff(wantKeys, keys); diff != "" {
		t.Fatalf("batch at cut %s: keys differ from what the job reads by listing (-job +keys):\n%s", formatInstant(cut), diff)
	}
	if slice["objectstore-objects"] != strconv.Itoa(len(keys)) || taken != wantTaken {
		t.Errorf("batch at cut %s: objects %s, taken %d; want %d, %d", formatInstant(cut), slice["objectstore-objects"], taken, len(keys), wantTaken)
	}
	switch {
	case fresh < tuples && len(pending) > 0:
		t.Errorf("batch at cut %s: %d new tuples of %d, but %d new objects count", formatInstant(cut), fresh, tuples, len(pending))
	case fresh > 0 && fresh-last >= tuples:
		t.Errorf("batch at cut %s: %d new tuples of %d, more by its last object of %d", formatInstant(cut), fresh, tuples, last)
	}
	for _, key := range late {
		if o := byKey[key]; through == nil || o.position.compare(*through) > 0 {
			t.Errorf("batch at cut %s: late object %s is after the cursor", formatInstant(cut), key)
		}
	}
}

func TestSliceErrors(t *testing.T) {
	st := newStore(t)
	cfg := st.config()
	cfg.KeyTimeLayout = testLayout
	key := testPrefix + "2026/12/01/00-10-00.json"
	st.put(t, key, 1, windowStart.Add(11*time.Minute))
	src := newSource(t, cfg)
	const valid = "2026-12-01T00:10:00Z|" + testPrefix + "2026/12/01/00-10-00.json"
	previous := func() map[string]string {
		return map[string]string{
			"objectstore-bucket":  "events",
			"objectstore-prefix":  "clicks/",
			"objectstore-window":  "2026-12-01T00:00:00Z/2026-12-01T01:00:00Z",
			"objectstore-after":   "",
			"objectstore-through": valid,
			"objectstore-cut":     "2026-12-01T00:12:00Z",
		}
	}
	if _, _, err := src.Slice(context.Background(), windowStart.Add(12*time.Minute), previous(), 1); err != nil {
		t.Fatalf("Slice with a valid previous slice: %v", err)
	}
	tests := []struct {
		name string
		// key is set to value in the previous slice, or removed from it.
		key, value string
		remove     bool
		now        time.Duration
		tuples     int64
		wantErr    string
	}{
		{name: "negative tuples", tuples: -1, wantErr: "tuples: must not be negative, got -1"},
		{name: "cut before the previous", now: 12*time.Minute - time.Nanosecond,
			wantErr: "now: the cut 2026-12-01T00:11:59.999999999Z (now − settle) is before the previous batch's cut 2026-12-01T00:12:00Z"},
		{name: "bucket missing", key: "objectstore-bucket", remove: true, wantErr: "previous slice: objectstore-bucket: missing"},
		{name: "another bucket", key: "objectstore-bucket", value: "orders", wantErr: `previous slice: objectstore-bucket: "orders", but this source reads "events"`},
		{name: "prefix missing", key: "objectstore-prefix", remove: true, wantErr: "previous slice: objectstore-prefix: missing"},
		{name: "another prefix", key: "objectstore-prefix", value: "", wantErr: `previous slice: objectstore-prefix: "", but this source reads "clicks/"`},
		{name: "cut missing", key: "objectstore-cut", remove: true, wantErr: "previous slice: objectstore-cut: missing"},
		{name: "cut empty", key: "objectstore-cut", value: "", wantErr: "previous slice: objectstore-cut: the time is empty"},
		{name: "cut not a time", key: "objectstore-cut", value: "yesterday", wantErr: `previous slice: objectstore-cut: time "yesterday": want RFC 3339 in UTC`},
		{name: "cut with an offset", key: "objectstore-cut", value: "2026-12-01T01:12:00+01:00",
			wantErr: `previous slice: objectstore-cut: time "2026-12-01T01:12:00+01:00": want it written in UTC with no trailing zeros, "2026-12-01T00:12:00Z"`},
		{name: "through missing", key: "objectstore-through", remove: true, wantErr: "previous slice: objectstore-through: missing"},
		{name: "through without a key", key: "objectstore-through", value: "2026-12-01T00:10:00Z",
			wantErr: `previous slice: objectstore-through: cursor "2026-12-01T00:10:00Z": want <time>|<key>, found no '|'`},
		{name: "through outside the prefix", key: "objectstore-through", value: "2026-12-01T00:10:00Z|views/2026/12/01/00-10-00.json",
			wantErr: `previous slice: objectstore-through: "2026-12-01T00:10:00Z|views/2026/12/01/00-10-00.json": the key is not under the prefix "clicks/"`},
		{name: "through outside the window", key: "objectstore-through", value: "2026-12-01T01:10:00Z|clicks/2026/12/01/01-10-00.json",
			wantErr: "previous slice: objectstore-through: \"2026-12-01T01:10:00Z|clicks/2026/12/01/01-10-00.json\": the time is outside the window [2026-12-01T00:00:00Z, 2026-12-01T01:00:00Z)"},
		{name: "through not at its key's time", key: "objectstore-through", value: "2026-12-01T00:10:01Z|" + key,
			wantErr: `the time is not the one the key carries in the layout "2006/01/02/15-04-05"`},
		{name: "after missing", key: "objectstore-after", remove: true, wantErr: "previous slice: objectstore-after: missing"},
		{name: "after past through", key: "objectstore-after", value: "2026-12-01T00:10:00Z|" + testPrefix + "2026/12/01/00-10-00.jsoo",
			wantErr: `previous slice: objectstore-after: "2026-12-01T00:10:00Z|clicks/2026/12/01/00-10-00.jsoo" is after objectstore-through "2026-12-01T00:10:00Z|clicks/2026/12/01/00-10-00.json"`},
		{name: "after malformed", key: "objectstore-after", value: "|" + key, wantErr: "previous slice: objectstore-after: cursor"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prev := previous()
			switch {
			case tc.remove:
				delete(prev, tc.key)
			case tc.key != "":
				prev[tc.key] = tc.value
			}
			now := tc.now
			if now == 0 {
				now = 20 * time.Minute
			}
			slice, _, err := src.Slice(context.Background(), windowStart.Add(now), prev, tc.tuples)
			if err == nil {
				t.Fatalf("Slice = %v, want an error containing %q", slice, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Slice error = %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
	t.Run("after with no through", func(t *testing.T) {
		prev := previous()
		prev["objectstore-after"], prev["objectstore-through"] = valid, ""
		_, _, err := src.Slice(context.Background(), windowStart.Add(20*time.Minute), prev, 1)
		if want := `previous slice: objectstore-after: "` + valid + `" is after objectstore-through ""`; err == nil || err.Error() != want {
			t.Errorf("Slice error = %v, want %q", err, want)
		}
	})
}

func TestParseCursor(t *testing.T) {
	tests := []struct {
		written string
		want    Cursor
	}{
		{"2026-12-01T00:00:00Z|clicks/a", Cursor{windowStart, "clicks/a"}},
		{"2026-12-01T00:00:00.5Z|a|b", Cursor{windowStart.Add(500 * time.Millisecond), "a|b"}},
		{"2026-12-01T00:00:00.000000001Z|ü ", Cursor{windowStart.Add(1), "ü "}},
		{"0001-01-01T00:00:00Z|x", Cursor{time.Time{}, "x"}},
	}
	for _, tc := range tests {
		got, err := ParseCursor(tc.written)
		if err != nil {
			t.Errorf("ParseCursor(%q): %v", tc.written, err)
			continue
		}
		if !got.Time.Equal(tc.want.Time) || got.Time.Location() != time.UTC || got.Key != tc.want.Key {
			t.Errorf("ParseCursor(%q) = %v, want %v", tc.written, got, tc.want)
		}
		if back := got.String(); back != tc.written {
			t.Errorf("String of ParseCursor(%q) = %q", tc.written, back)
		}
	}
}

func TestParseCursorErrors(t *testing.T) {
	tests := []struct {
		written string
		wantErr string
	}{
		{"", `cursor "": want <time>|<key>, found no '|'`},
		{"clicks/a", `cursor "clicks/a": want <time>|<key>, found no '|'`},
		{"2026-12-01T00:00:00Z|", `cursor "2026-12-01T00:00:00Z|": the key is empty`},
		{"2026-12-01T00:00:00Z|\xff", `the key is not valid UTF-8`},
		{"|clicks/a", `cursor "|clicks/a": the time is empty`},
		{"2026-12-01 00:00:00Z|a", `time "2026-12-01 00:00:00Z": want RFC 3339 in UTC`},
		{"2026-12-01T00:00:00.50Z|a", `time "2026-12-01T00:00:00.50Z": want it written in UTC with no trailing zeros, "2026-12-01T00:00:00.5Z"`},
		{"2026-12-01T00:00:00+00:00|a", `want it written in UTC with no trailing zeros, "2026-12-01T00:00:00Z"`},
		{"2026-12-01T00:00:00z|a", `want RFC 3339 in UTC`},
		{"2026-12-01T00:00:60Z|a", `want RFC 3339 in UTC`},
	}
	for _, tc := range tests {
		got, err := ParseCursor(tc.written)
		if err == nil {
			t.Errorf("ParseCursor(%q) = %v, want an error containing %q", tc.written, got, tc.wantErr)
			continue
		}
		if !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("ParseCursor(%q) error = %q, want it to contain %q", tc.written, err, tc.wantErr)
		}
	}
}

// FuzzParseCursor checks that ParseCursor never panics, that what it
// accepts String writes back byte for byte, and that it reads back every
// cursor String writes.
func FuzzParseCursor(f *testing.F) {
	f.Add("2026-12-01T00:00:00Z|clicks/a", int64(0), "clicks/a")
	f.Add("2026-12-01T00:00:00.123456789Z|a|b", int64(1), "a|b")
	f.Add("2026-12-01T00:00:00.50Z|a", int64(-1), "ü")
	f.Add("9999-12-31T23:59:59.999999999Z|\xff", int64(253402300799999999), "\xff")
	f.Add("|", int64(-62135596800000000), "")
	f.Fuzz(func(t *testing.T, written string, micros int64, key string) {
		if c, err := ParseCursor(written); err == nil {
			if back := c.String(); back != written {
				t.Errorf("ParseCursor(%q) = %v, which writes back as %q", written, c, back)
			}
		}
		c := Cursor{Time: time.UnixMicro(micros), Key: key}
		if c.Time.Year() < 0 || c.Time.Year() > 9999 || key == "" || !utf8.ValidString(key) {
			return
		}
		parsed, err := ParseCursor(c.String())
		if err != nil {
			t.Fatalf("ParseCursor(%q): %v", c.String(), err)
		}
		if !parsed.Time.Equal(c.Time) || parsed.Key != key {
			t.Errorf("ParseCursor(%q) = %v, want %v", c.String(), parsed, c)
		}
	})
}
