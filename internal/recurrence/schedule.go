// Package recurrence holds the pure decisions of a RecurringQuery: when its
// windows start, which windows should exist as IntermittentQueries at a
// given instant, which were missed by more than the starting deadline and
// are skipped, what each window's IntermittentQuery is named, and which
// finished ones the history limits delete. It imports no Kubernetes package
// and reads no clock: the caller passes the instant.
package recurrence

import (
	"errors"
	"fmt"
	"strings"
	"time"

	// The manager's image and laxity plan must know every IANA zone
	// whether or not the machine has a zone database.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
)

// SpecError is a spec field that cannot be honoured, named by its path.
type SpecError struct {
	// Field is the field's path, such as spec.windowLength.
	Field string
	// Value is the field's value as written.
	Value string
	// Reason says what is wrong, as a sentence fragment.
	Reason string
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("%s: %s", e.Field, e.Reason)
}

// Field paths of the errors.
const (
	FieldSchedule         = "spec.schedule"
	FieldTimeZone         = "spec.timeZone"
	FieldWindowLength     = "spec.windowLength"
	FieldStartingDeadline = "spec.startingDeadline"
)

// MinEvery is the shortest @every interval: names carry the start to the
// minute, so two starts must never share one.
const MinEvery = time.Minute

// Schedule is a parsed spec.schedule read in its time zone.
type Schedule struct {
	spec  *cron.SpecSchedule
	every time.Duration
	// expr is spec.schedule as written, for errors.
	expr string
}

var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Parse reads a schedule in the IANA zone timeZone ("" is UTC). Errors are
// *SpecError naming spec.schedule or spec.timeZone.
func Parse(expr, timeZone string) (*Schedule, error) {
	if timeZone == "" {
		timeZone = "UTC"
	}
	// time.LoadLocation reads "Local" as the machine's zone, which would
	// make the same object start windows at different instants on
	// different machines.
	if timeZone == "Local" {
		return nil, &SpecError{FieldTimeZone, timeZone, `"Local" is not an IANA time zone`}
	}
	loc, err := time.LoadLocation(timeZone)
	if err != nil {
		return nil, &SpecError{FieldTimeZone, timeZone, fmt.Sprintf("unknown time zone %q", timeZone)}
	}
	trimmed := strings.TrimSpace(expr)
	if rest, ok := strings.CutPrefix(trimmed, "@every "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			return nil, &SpecError{FieldSchedule, expr, fmt.Sprintf("@every takes a Go duration such as 15m: %v", err)}
		}
		if d < MinEvery {
			return nil, &SpecError{FieldSchedule, expr, fmt.Sprintf("@every must be at least %s", MinEvery)}
		}
		return &Schedule{every: d, expr: expr}, nil
	}
	// A zone in the expression would override spec.timeZone.
	if strings.HasPrefix(trimmed, "TZ=") || strings.HasPrefix(trimmed, "CRON_TZ=") {
		return nil, &SpecError{FieldSchedule, expr, "set the time zone in spec.timeZone, not in the schedule"}
	}
	parsed, err := parser.Parse(trimmed)
	if err != nil {
		return nil, &SpecError{FieldSchedule, expr, fmt.Sprintf("not a cron schedule: %v", err)}
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, &SpecError{FieldSchedule, expr, "not a cron schedule"}
	}
	spec.Location = loc
	return &Schedule{spec: spec, expr: expr}, nil
}

// epoch anchors @every: its starts are whole multiples of the interval
// since then, whenever the object was created.
var epoch = time.Unix(0, 0).UTC()

// SearchYears is how far after an instant Next looks for a start, as the
// cron library does: a schedule with no start in that span starts none.
const SearchYears = 5

// maxSearchSteps bounds the steps of one search, whatever the zone's
// transitions: each step moves to the next local midnight, hour or
// matching minute, or to the zone's next transition, so five years take
// at most a few hundred thousand steps (1,830 days of 24 hours of at most
// 60 minutes, plus the transitions). The bound is never reached by a
// schedule of five fields; reaching it is an error, never a hang.
const maxSearchSteps = 400_000

// starBit marks a cron field written as "*" or "?" (the cron library's
// own convention): the day of month and day of week then combine with
// "and", not "or".
const starBit = 1 << 63

// ErrSearchBound is the error of a search that reached maxSearchSteps.
var ErrSearchBound = errors.New("the search for the next start exceeded its bound")

// Next is the first window start strictly after t, in UTC, or the zero time
// when the schedule starts no window in the SearchYears years after t.
func (s *Schedule) Next(t time.Time) time.Time {
	next, _ := s.NextStart(t)
	return next
}

// NextStart is Next with the reason when there is no start: a *SpecError
// naming spec.schedule when the schedule starts no window in the
// SearchYears years after t, or when the search exceeded its bound. It
// never calls the cron library's Next, which loops forever in zones that
// skip a whole local day (Pacific/Apia skipped 2011-12-30): it walks the
// local calendar itself, one constant-offset span of the zone at a time,
// so it always returns.
func (s *Schedule) NextStart(t time.Time) (time.Time, error) {
	if s.every > 0 {
		since := t.Sub(epoch)
		k := since / s.every
		if since < 0 && since%s.every != 0 {
			k-- // floor, not truncation towards zero
		}
		return epoch.Add((k + 1) * s.every), nil
	}
	next, err := s.search(t)
	switch {
	case errors.Is(err, ErrSearchBound):
		return time.Time{}, &SpecError{FieldSchedule, s.expr, fmt.Sprintf("%v after %s", err, t.UTC().Format(time.RFC3339))}
	case next.IsZero():
		return time.Time{}, &SpecError{FieldSchedule, s.expr, fmt.Sprintf("the schedule starts no window in the %d years after %s", SearchYears, t.UTC().Format(time.RFC3339))}
	}
	return next, nil
}

// search finds the first instant strictly after t whose wall clock in the
// schedule's zone matches every field, at a whole local minute. Within one
// span of the zone's constant offset the wall clock is the instant plus
// the offset, so each step jumps straight to the next instant that may
// match (the next matching minute, the next hour, the next local
// midnight), or to the end of the span when that comes first. Wall times
// a transition skips are never matched; wall times it repeats are matched
// at each of their instants, as the cron library does.
func (s *Schedule) search(t time.Time) (time.Time, error) {
	spec := s.spec
	loc := spec.Location
	limit := t.AddDate(SearchYears, 0, 0)
	// The first whole local minute after t.
	w := t.In(loc)
	x := t.Add(-time.Duration(w.Second())*time.Second - time.Duration(w.Nanosecond())).Add(time.Minute)
	for range maxSearchSteps {
		if x.After(limit) {
			return time.Time{}, nil
		}
		w := x.In(loc)
		_, end := w.ZoneBounds()
		var step time.Duration
		sinceMidnight := time.Duration(w.Hour())*time.Hour + time.Duration(w.Minute())*time.Minute +
			time.Duration(w.Second())*time.Second + time.Duration(w.Nanosecond())
		switch {
		case spec.Month&(1<<uint(w.Month())) == 0 || !dayMatches(spec, w):
			step = 24*time.Hour - sinceMidnight
		case spec.Hour&(1<<uint(w.Hour())) == 0:
			step = time.Hour - time.Duration(w.Minute())*time.Minute - time.Duration(w.Second())*time.Second - time.Duration(w.Nanosecond())
		case w.Second() != 0 || w.Nanosecond() != 0:
			// An offset of seconds (local mean time, before zones had
			// whole minutes): on to the next whole local minute.
			step = time.Minute - time.Duration(w.Second())*time.Second - time.Duration(w.Nanosecond())
		case spec.Minute&(1<<uint(w.Minute())) == 0:
			m := w.Minute() + 1
			for m < 60 && spec.Minute&(1<<uint(m)) == 0 {
				m++
			}
			step = time.Duration(m-w.Minute()) * time.Minute
		default:
			return x.UTC(), nil
		}
		next := x.Add(step)
		if !end.IsZero() && next.After(end) {
			next = end // the offset changes: read the wall clock again there
		}
		if !next.After(x) {
			next = x.Add(time.Minute) // never stand still
		}
		x = next
	}
	return time.Time{}, ErrSearchBound
}

// dayMatches is the cron library's rule: with either day field a star both
// must match, else either.
func dayMatches(spec *cron.SpecSchedule, t time.Time) bool {
	dom := spec.Dom&(1<<uint(t.Day())) != 0
	dow := spec.Dow&(1<<uint(t.Weekday())) != 0
	if spec.Dom&starBit != 0 || spec.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}

// Starts are the first n window starts strictly after t (fewer when the
// schedule stops starting windows).
func (s *Schedule) Starts(t time.Time, n int) []time.Time {
	var out []time.Time
	for len(out) < n {
		t = s.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

// Reference is the instant Validate measures intervals from: a fixed one,
// so that the same spec is judged the same everywhere.
var Reference = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// checkedStarts bounds the starts Validate looks at: a year of an hourly
// schedule, three days of one that starts every minute.
const checkedStarts = 9000

// MinInterval is the shortest interval between two consecutive starts
// among the first checkedStarts starts (or one year and a day of starts)
// after from, and the start that opens it. ok is false when fewer than two
// starts exist in that span.
func (s *Schedule) MinInterval(from time.Time) (gap time.Duration, at time.Time, ok bool) {
	if s.every > 0 {
		return s.every, s.Next(from), true
	}
	until := from.Add(367 * 24 * time.Hour)
	prev := s.Next(from)
	for i := 0; i < checkedStarts && !prev.IsZero() && prev.Before(until); i++ {
		next := s.Next(prev)
		if next.IsZero() {
			break
		}
		if d := next.Sub(prev); !ok || d < gap {
			gap, at, ok = d, prev, true
		}
		prev = next
	}
	return gap, at, ok
}

// Spec is what the decisions read of a RecurringQuery's spec.
type Spec struct {
	// Schedule and TimeZone are spec.schedule and spec.timeZone.
	Schedule, TimeZone string
	// WindowLength is spec.windowLength.
	WindowLength time.Duration
}

// Validate parses the schedule and checks that it starts windows and that
// no window reaches past the next one's start. It returns the schedule, or
// a *SpecError naming the field.
func Validate(spec Spec) (*Schedule, error) {
	s, err := Parse(spec.Schedule, spec.TimeZone)
	if err != nil {
		return nil, err
	}
	if s.Next(Reference).IsZero() {
		return nil, &SpecError{FieldSchedule, spec.Schedule, "the schedule never starts a window"}
	}
	if err := checkOverlap(s, spec.WindowLength, Reference); err != nil {
		return nil, err
	}
	return s, nil
}

func checkOverlap(s *Schedule, length time.Duration, from time.Time) error {
	gap, at, ok := s.MinInterval(from)
	if ok && length > gap {
		return overlapError(length, gap, at)
	}
	return nil
}

func overlapError(length, gap time.Duration, at time.Time) *SpecError {
	return &SpecError{FieldWindowLength, length.String(), fmt.Sprintf(
		"a window of %s would overlap the next one: the window starting at %s is followed by the next start %s later; windowLength must be at most the interval between two starts",
		length, at.UTC().Format(time.RFC3339), gap)}
}

// IsSpecError reports whether err is a *SpecError, and returns it.
func IsSpecError(err error) (*SpecError, bool) {
	var se *SpecError
	ok := errors.As(err, &se)
	return se, ok
}
