package objectstore

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// keyTime reads the instant a key carries right after the prefix.
type keyTime struct {
	layout string
	// width is the length in bytes of every instant the layout formats.
	width int
	// sortable says that the layout formats later instants to strings that
	// sort no earlier, with no time zone in them: the keys of the window's
	// objects are then one contiguous run of the key-ordered listing.
	sortable bool
}

// layoutSamples differ in every field and in the width every unpadded field
// would take (a one- against a two-digit day, month, hour and minute, May
// against December, Sunday against Wednesday, no fraction against nine
// digits, UTC against an unnamed offset), so that a layout that formats them
// to the same width formats every instant to that width.
var layoutSamples = [2]time.Time{
	time.Date(2009, time.May, 3, 4, 5, 6, 0, time.UTC),
	time.Date(2026, time.December, 23, 22, 45, 59, 123456789, time.FixedZone("", -(9*3600+30*60))),
}

// newKeyTime checks that layout can place keys in time: every instant
// formats to the same width, so that a key's instant is its first width
// bytes; an instant reads back as it was written; and the layout carries the
// year at least, since windows are absolute.
func newKeyTime(layout string) (*keyTime, error) {
	first, second := layoutSamples[0].Format(layout), layoutSamples[1].Format(layout)
	switch {
	case first == second:
		return nil, fmt.Errorf("%q holds no time element", layout)
	case len(first) != len(second):
		return nil, fmt.Errorf("%q formats instants to different lengths, such as %q and %q; "+
			"keys must start with a fixed-width instant (use zero-padded fields, no zone names)", layout, first, second)
	}
	k := &keyTime{layout: layout, width: len(first)}
	for _, sample := range layoutSamples {
		formatted := sample.Format(layout)
		if _, ok := k.parse(formatted); !ok {
			return nil, fmt.Errorf("%q does not read back the instants it writes, such as %q", layout, formatted)
		}
	}
	if parsed, _ := k.parse(first); parsed.Year() != layoutSamples[0].Year() {
		return nil, fmt.Errorf("%q holds no year, so keys cannot be placed in a window", layout)
	}
	k.sortable = sortsChronologically(layout)
	return k, nil
}

// parse returns the instant at the start of rest, a key with the prefix
// removed, and false when rest does not start with one written in the
// layout. An instant must be written exactly as the layout writes it, so
// that every instant has one spelling and listing by key order finds it.
func (k *keyTime) parse(rest string) (time.Time, bool) {
	if len(rest) < k.width {
		return time.Time{}, false
	}
	written := rest[:k.width]
	// Without a zone in the key, the instant is in UTC.
	t, err := time.ParseInLocation(k.layout, written, time.UTC)
	if err != nil || t.Format(k.layout) != written {
		return time.Time{}, false
	}
	return t, true
}

// startAfter is the StartAfter of a listing that finds every key of prefix
// whose instant is at or after windowStart, when the layout is sortable:
// such a key starts with an instant that formats to at least that of
// windowStart, so it is at least prefix + that, and therefore after the
// same string with its last character removed.
func (k *keyTime) startAfter(prefix string, windowStart time.Time) string {
	first := prefix + windowStart.UTC().Format(k.layout)
	_, size := utf8.DecodeLastRuneInString(first)
	return first[:len(first)-size]
}

// pastWindow reports whether key, and therefore every key the listing
// returns after it, starts with an instant after windowEnd's, when the
// layout is sortable. A key greater than the bound that does not start with
// it differs from it within the bound, upwards, and so does every greater
// key.
func (k *keyTime) pastWindow(prefix, key string, windowEnd time.Time) bool {
	bound := prefix + windowEnd.UTC().Format(k.layout)
	return key > bound && !strings.HasPrefix(key, bound)
}

// sortsChronologically reports whether layout writes no time zone and
// formats each of a set of instants to a string that sorts no earlier than
// that of the nanosecond before. The instants are the first of each unit
// that a layout may write, from the century to the nanosecond, in every
// position of its enclosing unit where a name or a 12-hour clock could sort
// out of order. For a fixed-width layout (newKeyTime's first check), a field
// written before a more significant one, a month or weekday name, or a
// 12-hour clock shows at one of these boundaries.
func sortsChronologically(layout string) bool {
	// The same wall clock in two zones reads the same without a zone.
	utc := time.Date(2026, time.March, 4, 5, 6, 7, 8, time.UTC)
	elsewhere := time.Date(2026, time.March, 4, 5, 6, 7, 8, time.FixedZone("", 5*3600+45*60))
	if utc.Format(layout) != elsewhere.Format(layout) {
		return false
	}
	var boundaries []time.Time
	for _, year := range []int{2000, 2027, 2100} {
		boundaries = append(boundaries, time.Date(year, time.January, 1, 0, 0, 0, 0, time.UTC))
	}
	for month := time.February; month <= time.December; month++ {
		boundaries = append(boundaries, time.Date(2026, month, 1, 0, 0, 0, 0, time.UTC))
	}
	// 2026-03-01 is a Sunday: a week of days, and every hour of one.
	for day := 2; day <= 8; day++ {
		boundaries = append(boundaries, time.Date(2026, time.March, day, 0, 0, 0, 0, time.UTC))
	}
	for hour := 1; hour < 24; hour++ {
		boundaries = append(boundaries, time.Date(2026, time.March, 1, hour, 0, 0, 0, time.UTC))
	}
	second := time.Date(2026, time.March, 1, 10, 10, 10, 0, time.UTC)
	boundaries = append(boundaries, second.Add(-10*time.Second), second)
	for fraction := time.Duration(10); fraction < time.Second; fraction *= 10 {
		boundaries = append(boundaries, second.Add(fraction))
	}
	for _, boundary := range boundaries {
		if boundary.Add(-time.Nanosecond).Format(layout) > boundary.Format(layout) {
			return false
		}
	}
	return true
}
