package recurrence

import (
	"cmp"
	"fmt"
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
	// Suspend is spec.suspend.
	Suspend bool
	// StartingDeadline is spec.startingDeadline; nil never skips.
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

// Window is one window to create.
type Window struct {
	// Name is its IntermittentQuery's name.
	Name string
	// Start and End bound it.
	Start, End time.Time
	// Late is how long after its start it is created (0 when ahead).
	Late time.Duration
}

// Decision is what to do now.
type Decision struct {
	// Create are the windows to create, oldest first.
	Create []Window
	// Skipped are the starts missed by more than the starting deadline,
	// oldest first, at most MaxSkippedListed of them (the newest).
	Skipped []time.Time
	// SkippedCount is how many starts were skipped in all.
	SkippedCount int
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

// MaxSkippedListed bounds Decision.Skipped.
const MaxSkippedListed = 20

// MaxLateWindows is the most missed windows created late in one decision
// when spec.startingDeadline is unset; more is an error naming that field,
// as with a CronJob's 100 missed schedules.
const MaxLateWindows = 100

// maxEnumerated bounds the starts one decision walks through.
const maxEnumerated = 100_000

// Decide computes which windows to create, skip and delete now. Its errors
// are *SpecError: a window that would overlap the next (spec.windowLength)
// or too many missed windows to run late (spec.startingDeadline). Nothing
// is created then, but the history limits still apply.
func Decide(in Input) (Decision, error) {
	d := Decision{Since: in.Since}
	for _, inst := range in.Instances {
		if inst.Owned && inst.Start.After(d.Since) {
			d.Since = inst.Start
		}
	}
	d.Delete = history(in.Instances, in.SuccessfulLimit, in.FailedLimit)
	d.WakeAt = in.Schedule.Next(in.Now)
	if in.Suspend {
		d.Next = in.Schedule.Next(later(d.Since, in.Now))
		return d, nil
	}
	var err error
	d, err = in.windows(d)
	if err != nil {
		// Create nothing and move nothing on: the next decision, with the
		// spec fixed, starts from the same place.
		return Decision{Since: in.Since, Delete: d.Delete, WakeAt: d.WakeAt, Next: in.Schedule.Next(later(in.Since, in.Now))}, err
	}
	d.Next = in.Schedule.Next(later(d.Since, in.Now))
	return d, nil
}

// windows fills in the windows to create, skip and report as taken.
func (in Input) windows(d Decision) (Decision, error) {
	byName := map[string]Instance{}
	for _, inst := range in.Instances {
		byName[inst.Name] = inst
	}
	since := d.Since
	var due []time.Time
	// Missed starts: due already, never created.
	s := in.Schedule.Next(since)
	for n := 0; !s.IsZero() && !s.After(in.Now) && n < maxEnumerated; n++ {
		if in.StartingDeadline != nil && in.Now.Sub(s) > *in.StartingDeadline {
			d.SkippedCount++
			d.Skipped = append(d.Skipped, s)
			if len(d.Skipped) > MaxSkippedListed {
				d.Skipped = d.Skipped[1:]
			}
			d.Since = s
		} else {
			due = append(due, s)
		}
		s = in.Schedule.Next(s)
	}
	if len(due) > MaxLateWindows {
		return d, &SpecError{FieldStartingDeadline, "", fmt.Sprintf(
			"%d windows since %s were missed (more than %d) and spec.startingDeadline is unset, so all would run late; set startingDeadline to skip those missed by more than it",
			len(due), due[0].Format(time.RFC3339), MaxLateWindows)}
	}
	// The windows ahead: the next WindowsAhead starts after now.
	ahead := in.Schedule.Starts(in.Now, in.WindowsAhead)
	var wanted []time.Time
	wanted = append(wanted, due...)
	for _, a := range ahead {
		if a.After(since) {
			wanted = append(wanted, a)
		}
	}
	for _, start := range wanted {
		next := in.Schedule.Next(start)
		if !next.IsZero() && start.Add(in.WindowLength).After(next) {
			return d, overlapError(in.WindowLength, next.Sub(start), start)
		}
	}
	// Windows that should exist now, created before or not: a foreign
	// object holding one's name is reported as long as it should exist.
	for _, start := range append(due, ahead...) {
		w := Window{Name: Name(in.Name, start), Start: start, End: start.Add(in.WindowLength)}
		if !start.After(in.Now) {
			w.Late = in.Now.Sub(start)
		}
		inst, exists := byName[w.Name]
		switch {
		case exists && !inst.Owned:
			d.Taken = append(d.Taken, w)
		case !exists && start.After(since):
			d.Create = append(d.Create, w)
		}
		if start.After(d.Since) {
			d.Since = start
		}
	}
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
