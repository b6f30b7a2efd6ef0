package recurrence

import (
	"cmp"
	"slices"
	"time"
)

// NameLayout is the UTC layout of a window's start in its name.
const NameLayout = "200601021504"

// Name is the name of the IntermittentQuery of the window of recurring
// query rq starting at start: "<rq>-<yyyymmddhhmm>" with the start in UTC.
// Starts are at least a minute apart, so names are unique, and they sort
// as their starts do.
func Name(rq string, start time.Time) string {
	return rq + "-" + start.UTC().Format(NameLayout)
}

// Instance is an existing IntermittentQuery that claims to be one of the
// recurring query's windows: its name or labels say so.
type Instance struct {
	// Name is the IntermittentQuery's name.
	Name string
	// Start is its window's start.
	Start time.Time
	// Owned is true when the recurring query is its controller owner (by
	// UID); everything else is foreign and never touched.
	Owned bool
	// Finished is true when nothing of it runs any more: its final merge
	// succeeded, or it failed (a step failed on every attempt, or its
	// deadline passed) and no step is pending or running.
	Finished bool
	// Succeeded is true when it finished with a succeeded final merge.
	Succeeded bool
}

// Input is what one decision is made from.
type Input struct {
	// Name is the recurring query's name.
	Name string
	// Schedule is the parsed spec.schedule.
	Schedule *Schedule
	// WindowLength is spec.windowLength.
	WindowLength time.Duration
	// WindowsAhead is spec.windowsAhead.
	WindowsAhead int
	// MaxActive is spec.maxActiveWindows: at most this many owned windows
	// are unfinished at once; 0 or less is DefaultMaxActive(WindowsAhead).
	MaxActive int
	// Suspend is spec.suspend.
	Suspend bool
	// Blocked is true when the windows could not run if they were created:
	// the schedule is stalled, or the template is refused. Nothing is
	// created, as when suspended; the starts it misses are missed starts.
	Blocked bool
	// StartingDeadline is spec.startingDeadline; nil never skips the most
	// recent missed start for being late.
	StartingDeadline *time.Duration
	// SuccessfulLimit and FailedLimit are the history limits.
	SuccessfulLimit, FailedLimit int
	// Since is the start of the newest window created or skipped before
	// (status.lastScheduleTime), or the recurring query's creation when
	// none was: no window starting at or before it is created again.
	Since time.Time
	// Instances are the IntermittentQueries claiming to be windows.
	Instances []Instance
	// Now is the instant of the decision.
	Now time.Time
}

// DefaultMaxActive is the bound on unfinished windows when
// spec.maxActiveWindows is unset: the windows ahead, the one running and
// one finishing its final merge after the next has started.
func DefaultMaxActive(windowsAhead int) int { return windowsAhead + 2 }

// Window is one window to create.
type Window struct {
	// Name is its IntermittentQuery's name.
	Name string
	// Start and End bound it.
	Start, End time.Time
	// Late is how long after its start it is created (0 when ahead).
	Late time.Duration
}

// SkipReason says why starts were skipped.
type SkipReason string

const (
	// SkipMissed is a start missed (while suspended, blocked, or with the
	// manager down) that is not the most recent one, or that is, but was
	// missed by more than spec.startingDeadline. Only the most recent
	// missed start may still run, as with a CronJob.
	SkipMissed SkipReason = "Missed"
	// SkipMaxActive is the most recent missed start, skipped because
	// spec.maxActiveWindows windows were unfinished when it would have run
	// late.
	SkipMaxActive SkipReason = "MaxActiveWindows"
)

// Skip is a run of skipped starts, reported once however many it holds.
type Skip struct {
	// Reason says why they were skipped.
	Reason SkipReason
	// First and Last are the oldest and newest skipped start.
	First, Last time.Time
	// Count is how many starts were skipped; AtLeast is true when there
	// were more than the decision counts (MaxCounted).
	Count   int
	AtLeast bool
}

// Decision is what to do now.
type Decision struct {
	// Create are the windows to create, oldest first.
	Create []Window
	// Skipped are the runs of skipped starts, at most one per reason.
	Skipped []Skip
	// Waiting is how many of the windows ahead wait for an unfinished
	// window to finish (spec.maxActiveWindows); they are created when one
	// does, or skipped if their start passes first.
	Waiting int
	// Active is how many owned windows are unfinished, with the ones to
	// create.
	Active int
	// Taken are windows whose name is held by an IntermittentQuery the
	// recurring query does not own: they are not created.
	Taken []Window
	// Delete are the names of the owned, finished instances beyond the
	// history limits, oldest first.
	Delete []string
	// Since is the new status.lastScheduleTime.
	Since time.Time
	// Next is the start of the next window not created yet (zero when the
	// schedule starts no more windows).
	Next time.Time
	// WakeAt is when to decide again: the next start after Now, when the
	// horizon of windows ahead moves (zero when there is none).
	WakeAt time.Time
}

// SkippedCount is how many starts were skipped in all.
func (d Decision) SkippedCount() int {
	n := 0
	for _, s := range d.Skipped {
		n += s.Count
	}
	return n
}

// MaxCounted bounds the missed starts one decision counts: after a long
// outage of a schedule that starts every minute, the skipped run is
// reported as "more than MaxCounted".
const MaxCounted = 100_000

// Decide computes which windows to create, skip and delete now. After a
// suspension, a blocked spell or an outage only the most recent missed
// start may run late (not when missed by more than startingDeadline, nor
// when maxActiveWindows windows are unfinished); every older one is
// skipped, counted in one Skip. Its errors are *SpecError: a window that
// would overlap the next (spec.windowLength). Nothing is created then, but
// the history limits still apply.
func Decide(in Input) (Decision, error) {
	d := Decision{Since: in.Since}
	for _, inst := range in.Instances {
		if inst.Owned && inst.Start.After(d.Since) {
			d.Since = inst.Start
		}
		if inst.Owned && !inst.Finished {
			d.Active++
		}
	}
	d.Delete = history(in.Instances, in.SuccessfulLimit, in.FailedLimit)
	d.WakeAt = in.Schedule.Next(in.Now)
	if in.Suspend || in.Blocked {
		d.Next = in.Schedule.Next(later(d.Since, in.Now))
		return d, nil
	}
	var err error
	d, err = in.windows(d)
	if err != nil {
		// Create nothing and move nothing on: the next decision, with the
		// spec fixed, starts from the same place.
		return Decision{Since: in.Since, Delete: d.Delete, WakeAt: d.WakeAt, Active: d.Active, Next: in.Schedule.Next(later(in.Since, in.Now))}, err
	}
	d.Next = in.Schedule.Next(later(d.Since, in.Now))
	return d, nil
}

// missed counts the starts in (since, now] and finds the most recent one
// and the one before it (zero when there is none), walking at most
// MaxCounted starts, then looking back from now for the most recent.
func (in Input) missed(since time.Time) (first, prev, last time.Time, count int, atLeast bool) {
	s := in.Schedule.Next(since)
	for ; !s.IsZero() && !s.After(in.Now); s = in.Schedule.Next(s) {
		if count == MaxCounted {
			atLeast = true
			break
		}
		if count == 0 {
			first = s
		}
		prev, last = last, s
		count++
	}
	if !atLeast {
		return first, prev, last, count, false
	}
	// Look back from now over longer and longer spans until one holds a
	// start (a schedule whose starts are that dense finds one in the
	// first span).
	for _, span := range []time.Duration{time.Hour, 25 * time.Hour, 32 * 24 * time.Hour, 367 * 24 * time.Hour, SearchYears * 366 * 24 * time.Hour} {
		from := in.Now.Add(-span)
		if from.Before(last) {
			from = last
		}
		found := false
		for s := in.Schedule.Next(from); !s.IsZero() && !s.After(in.Now); s = in.Schedule.Next(s) {
			if found {
				prev = last
			}
			last, found = s, true
		}
		if found {
			break
		}
	}
	return first, prev, last, count, true
}

// windows fills in the windows to create, skip and report as taken.
func (in Input) windows(d Decision) (Decision, error) {
	byName := map[string]Instance{}
	for _, inst := range in.Instances {
		byName[inst.Name] = inst
	}
	maxActive := in.MaxActive
	if maxActive <= 0 {
		maxActive = DefaultMaxActive(in.WindowsAhead)
	}
	since := d.Since
	var create []Window
	window := func(start time.Time) Window {
		w := Window{Name: Name(in.Name, start), Start: start, End: start.Add(in.WindowLength)}
		if !start.After(in.Now) {
			w.Late = in.Now.Sub(start)
		}
		return w
	}
	// Missed starts: due already, never created. Only the most recent may
	// still run.
	if first, prev, last, count, atLeast := in.missed(since); count > 0 {
		older := Skip{Reason: SkipMissed, First: first, Count: count - 1, AtLeast: atLeast}
		w := window(last)
		inst, exists := byName[w.Name]
		switch {
		case in.StartingDeadline != nil && w.Late > *in.StartingDeadline:
			older.Count++
		case exists && !inst.Owned:
			d.Taken = append(d.Taken, w)
		case exists:
		case d.Active >= maxActive:
			d.Skipped = append(d.Skipped, Skip{Reason: SkipMaxActive, First: last, Last: last, Count: 1})
		default:
			create = append(create, w)
			d.Active++
		}
		if older.Count > 0 {
			older.Last = last
			if older.Count == count-1 {
				// The most recent was not skipped for being missed.
				older.Last = prev
			}
			d.Skipped = append([]Skip{older}, d.Skipped...)
		}
		d.Since = last
	}
	// The windows ahead: the next WindowsAhead starts after now, created
	// in order while fewer than maxActive windows are unfinished.
	for _, start := range in.Schedule.Starts(in.Now, in.WindowsAhead) {
		w := window(start)
		inst, exists := byName[w.Name]
		switch {
		case exists && !inst.Owned:
			// A foreign object holding its name is reported as long as
			// the window should exist.
			d.Taken = append(d.Taken, w)
		case exists || !start.After(since):
			// Created (or skipped) before.
		case d.Active >= maxActive:
			d.Waiting++
			continue
		default:
			if d.Waiting > 0 {
				d.Waiting++
				continue // windows are created in order
			}
			create = append(create, w)
			d.Active++
		}
		if d.Waiting == 0 && start.After(d.Since) {
			d.Since = start
		}
	}
	for _, w := range create {
		next := in.Schedule.Next(w.Start)
		if !next.IsZero() && w.End.After(next) {
			return d, overlapError(in.WindowLength, next.Sub(w.Start), w.Start)
		}
	}
	d.Create = create
	return d, nil
}

// history are the names of the owned, finished instances beyond the
// limits: the newest successfulLimit succeeded and failedLimit failed ones
// are kept.
func history(instances []Instance, successfulLimit, failedLimit int) []string {
	var finished []Instance
	for _, inst := range instances {
		if inst.Owned && inst.Finished {
			finished = append(finished, inst)
		}
	}
	slices.SortFunc(finished, func(a, b Instance) int {
		return cmp.Or(b.Start.Compare(a.Start), cmp.Compare(b.Name, a.Name))
	})
	var out []string
	kept := map[bool]int{}
	for _, inst := range finished {
		limit := failedLimit
		if inst.Succeeded {
			limit = successfulLimit
		}
		if kept[inst.Succeeded] < limit {
			kept[inst.Succeeded]++
			continue
		}
		out = append(out, inst.Name)
	}
	slices.Reverse(out)
	return out
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Step is a succeeded step of a window: how many nodes it held and for how
// long.
type Step struct {
	Nodes   int32
	Seconds float64
}

// ExecutedCost is a window's share of the pool's bill: the node-seconds of
// its succeeded steps priced at pricePerNodeHour. Idle nodes, billing
// minimums and failed attempts are the pool's, not the window's.
func ExecutedCost(steps []Step, pricePerNodeHour float64) float64 {
	nodeSeconds := 0.0
	for _, s := range steps {
		if s.Seconds > 0 && s.Nodes > 0 {
			nodeSeconds += float64(s.Nodes) * s.Seconds
		}
	}
	return nodeSeconds * pricePerNodeHour / 3600
}
