package objectstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The keys of a slice; the package doc says what each holds.
const (
	sliceBucket  = "objectstore-bucket"
	slicePrefix  = "objectstore-prefix"
	sliceAfter   = "objectstore-after"
	sliceThrough = "objectstore-through"
	sliceCut     = "objectstore-cut"
	sliceObjects = "objectstore-objects"
	sliceLate    = "objectstore-late"
	// sliceLateTuples is source-neutral: laxity.dev/late, the number of late
	// events a batch holds.
	sliceLateTuples = "late"
	sliceKeys       = "objectstore-keys"
	sliceWindow     = "objectstore-window"
)

// maxListedKeys is the most objects whose keys a slice lists; the job of a
// larger batch lists the range itself, so that the annotations stay small.
const maxListedKeys = 1000

// Slice returns the next batch of the window, read at now: the map of its
// input (see the package doc) and the tuples it holds. previous is the map
// Slice returned for the batch before, as read back from its annotations,
// and nil for the first batch; Slice reads its bucket, prefix, after,
// through and cut, and rejects a map that lacks one or holds one that this
// source could not have written.
//
// The batch takes the window's objects that count at the cut, now −
// Settle, and are after the previous cursor, in position order until their
// tuples reach tuples: it holds fewer only when fewer count, and more by
// less than its last object. It takes too every late object, at or before
// the previous cursor and dated after the previous cut, whatever tuples
// asks for; taken counts their tuples as well. now must not give a cut
// before the previous one.
func (s *Source) Slice(ctx context.Context, now time.Time, previous map[string]string, tuples int64) (slice map[string]string, taken int64, err error) {
	if s == nil {
		return nil, 0, errNotConstructed
	}
	if tuples < 0 {
		return nil, 0, fmt.Errorf("tuples: must not be negative, got %d", tuples)
	}
	cut := now.Add(-s.settle)
	prev, err := s.parsePrevious(previous)
	if err != nil {
		return nil, 0, err
	}
	if prev.cut.After(cut) {
		return nil, 0, fmt.Errorf("now: the cut %s (now − settle) is before the previous batch's cut %s",
			formatInstant(cut), formatInstant(prev.cut))
	}
	objects, err := s.list(ctx)
	if err != nil {
		return nil, 0, err
	}
	keys, late := []string{}, []string{}
	through := prev.through
	var fresh, lateTuples int64
	for _, o := range objects {
		if o.arrival.After(cut) {
			continue
		}
		if prev.through != nil && o.position.compare(*prev.through) <= 0 {
			if o.arrival.After(prev.cut) {
				keys = append(keys, o.position.Key)
				late = append(late, o.position.Key)
				if taken, err = s.add(taken, o.tuples); err != nil {
					return nil, 0, err
				}
				lateTuples += o.tuples
			}
			continue
		}
		// Late objects come before every new one, so none is left.
		if fresh >= tuples {
			break
		}
		keys = append(keys, o.position.Key)
		if fresh, err = s.add(fresh, o.tuples); err != nil {
			return nil, 0, err
		}
		if taken, err = s.add(taken, o.tuples); err != nil {
			return nil, 0, err
		}
		through = &o.position
	}
	slice = map[string]string{
		sliceBucket:     s.bucket,
		slicePrefix:     s.prefix,
		sliceAfter:      cursorString(prev.through),
		sliceThrough:    cursorString(through),
		sliceCut:        formatInstant(cut),
		sliceObjects:    strconv.Itoa(len(keys)),
		sliceLate:       jsonStrings(late),
		sliceLateTuples: strconv.FormatInt(lateTuples, 10),
		sliceWindow:     formatInstant(s.windowStart) + "/" + formatInstant(s.windowEnd),
	}
	if len(keys) <= maxListedKeys {
		slice[sliceKeys] = jsonStrings(keys)
	}
	return slice, taken, nil
}

// previousBatch is what Slice needs of the batch before.
type previousBatch struct {
	// through is its cursor; nil while no batch has taken an object.
	through *Cursor
	// cut is its cut; the zero time, before every cut, for the first batch.
	cut time.Time
}

// parsePrevious reads and checks the map Slice returned for the batch
// before; nil is the first batch's.
func (s *Source) parsePrevious(previous map[string]string) (previousBatch, error) {
	if previous == nil {
		return previousBatch{}, nil
	}
	value := func(key string) (string, error) {
		v, ok := previous[key]
		if !ok {
			return "", fmt.Errorf("previous slice: %s: missing", key)
		}
		return v, nil
	}
	for _, where := range []struct{ key, want string }{{sliceBucket, s.bucket}, {slicePrefix, s.prefix}} {
		got, err := value(where.key)
		if err != nil {
			return previousBatch{}, err
		}
		if got != where.want {
			return previousBatch{}, fmt.Errorf("previous slice: %s: %q, but this source reads %q", where.key, got, where.want)
		}
	}
	var prev previousBatch
	written, err := value(sliceCut)
	if err != nil {
		return previousBatch{}, err
	}
	if prev.cut, err = parseInstant(written); err != nil {
		return previousBatch{}, fmt.Errorf("previous slice: %s: %w", sliceCut, err)
	}
	written, err = value(sliceThrough)
	if err != nil {
		return previousBatch{}, err
	}
	if written != "" {
		through, err := s.parsePosition(written)
		if err != nil {
			return previousBatch{}, fmt.Errorf("previous slice: %s: %w", sliceThrough, err)
		}
		prev.through = &through
	}
	written, err = value(sliceAfter)
	if err != nil {
		return previousBatch{}, err
	}
	if written == "" {
		return prev, nil
	}
	after, err := s.parsePosition(written)
	switch {
	case err != nil:
		return previousBatch{}, fmt.Errorf("previous slice: %s: %w", sliceAfter, err)
	case prev.through == nil || after.compare(*prev.through) > 0:
		return previousBatch{}, fmt.Errorf("previous slice: %s: %q is after %s %q",
			sliceAfter, written, sliceThrough, cursorString(prev.through))
	}
	return prev, nil
}

// parsePosition reads a cursor and checks that it is the position of one of
// the window's objects.
func (s *Source) parsePosition(written string) (Cursor, error) {
	c, err := ParseCursor(written)
	if err != nil {
		return Cursor{}, err
	}
	if !strings.HasPrefix(c.Key, s.prefix) {
		return Cursor{}, fmt.Errorf("%q: the key is not under the prefix %q", written, s.prefix)
	}
	if c.Time.Before(s.windowStart) || !c.Time.Before(s.windowEnd) {
		return Cursor{}, fmt.Errorf("%q: the time is outside the window [%s, %s)",
			written, formatInstant(s.windowStart), formatInstant(s.windowEnd))
	}
	if s.keyTime != nil {
		if t, ok := s.keyTime.parse(c.Key[len(s.prefix):]); !ok || !t.Equal(c.Time) {
			return Cursor{}, fmt.Errorf("%q: the time is not the one the key carries in the layout %q", written, s.keyTime.layout)
		}
	}
	return c, nil
}

// Cursor is an object's position: its key time, or LastModified, and its
// key. Positions order objects by time, then key.
type Cursor struct {
	Time time.Time
	Key  string
}

// String writes c as <time>|<key>, the time in RFC 3339 UTC with
// nanoseconds.
func (c Cursor) String() string {
	return formatInstant(c.Time) + "|" + c.Key
}

// cursorString is c written, and empty for a nil cursor, which is before
// every position.
func cursorString(c *Cursor) string {
	if c == nil {
		return ""
	}
	return c.String()
}

// compare orders positions by time, then key.
func (c Cursor) compare(other Cursor) int {
	return cmp.Or(c.Time.Compare(other.Time), strings.Compare(c.Key, other.Key))
}

// ParseCursor reads a cursor exactly as Cursor.String writes it: a time in
// RFC 3339 UTC with nanoseconds (trailing zeros dropped), '|', and a
// non-empty UTF-8 key, which may hold '|' itself. It is strict, since a
// batch resumed from a misread cursor would skip or repeat objects.
func ParseCursor(written string) (Cursor, error) {
	timeText, key, found := strings.Cut(written, "|")
	switch {
	case !found:
		return Cursor{}, fmt.Errorf("cursor %q: want <time>|<key>, found no '|'", written)
	case key == "":
		return Cursor{}, fmt.Errorf("cursor %q: the key is empty", written)
	case !utf8.ValidString(key):
		return Cursor{}, fmt.Errorf("cursor %q: the key is not valid UTF-8", written)
	}
	t, err := parseInstant(timeText)
	if err != nil {
		return Cursor{}, fmt.Errorf("cursor %q: %w", written, err)
	}
	return Cursor{Time: t, Key: key}, nil
}

// formatInstant writes t in RFC 3339 UTC with nanoseconds.
func formatInstant(t time.Time) string {
	return t.UTC().Format(time.RFC3339Nano)
}

// parseInstant reads an instant exactly as formatInstant writes it, so that
// every instant has one spelling.
func parseInstant(written string) (time.Time, error) {
	if written == "" {
		return time.Time{}, errors.New("the time is empty")
	}
	t, err := time.Parse(time.RFC3339Nano, written)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q: want RFC 3339 in UTC, such as 2026-12-01T00:00:00.5Z", written)
	}
	if canonical := formatInstant(t); canonical != written {
		return time.Time{}, fmt.Errorf("time %q: want it written in UTC with no trailing zeros, %q", written, canonical)
	}
	return t.UTC(), nil
}

// jsonStrings is the JSON array of values.
func jsonStrings(values []string) string {
	// Marshaling strings cannot fail.
	encoded, _ := json.Marshal(values)
	return string(encoded)
}
