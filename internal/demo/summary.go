package demo

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
)

// LearningWindows is how many windows of a RecurringQuery laxity is given
// to learn how the query really runs: from the next one on, every deadline
// should be met.
const LearningWindows = 2

// MissedAfterLearning are the windows, from the third of each
// RecurringQuery on, that missed their deadline, and how many windows were
// judged.
func MissedAfterLearning(windows []Window) (judged int, missed []string) {
	seen := map[string]int{}
	for _, w := range windows {
		seen[w.RecurringQuery]++
		if seen[w.RecurringQuery] <= LearningWindows {
			continue
		}
		judged++
		if !w.Met {
			missed = append(missed, w.Query)
		}
	}
	return judged, missed
}

// WriteWindows prints every window, each RecurringQuery's in turn, with its
// outcome, its finish against its deadline and the slowdown learned by its
// end, then one line saying whether every window from the third on met its
// deadline. Times are from the report's origin, as in the query lines.
func WriteWindows(out io.Writer, windows []Window) {
	if len(windows) == 0 {
		return
	}
	var order []string
	count := map[string]int{}
	for _, w := range windows {
		if count[w.RecurringQuery] == 0 {
			order = append(order, w.RecurringQuery)
		}
		count[w.RecurringQuery]++
	}
	for _, rq := range order {
		fmt.Fprintf(out, "RecurringQuery %s: %d windows\n", rq, count[rq])
		for _, w := range windows {
			if w.RecurringQuery == rq {
				fmt.Fprintf(out, "  %s\n", windowLine(w))
			}
		}
	}
	judged, missed := MissedAfterLearning(windows)
	switch {
	case judged == 0:
		fmt.Fprintf(out, "Learning from the windows: no window after the first %d ran, so none shows what was learned.\n", LearningWindows)
	case len(missed) == 0:
		fmt.Fprintf(out, "Learning from the windows: every deadline from the third window on was met (%d of %d windows).\n", judged, judged)
	default:
		fmt.Fprintf(out, "Learning from the windows: %d of %d windows from the third on missed their deadline: %s.\n", len(missed), judged, strings.Join(missed, ", "))
	}
}

// windowLine is one window's line.
func windowLine(w Window) string {
	learned := "nothing learned yet"
	if w.LearnedSlowdownPercent != nil {
		learned = "learned slowdown " + strconv.FormatFloat(*w.LearnedSlowdownPercent, 'f', 1, 64) + "%"
	}
	var verdict string
	switch {
	case w.Outcome == laxityv1alpha1.WindowSucceeded && w.Met:
		verdict = fmt.Sprintf("finished at t+%s, %s before its deadline", at(w.Finish), at(w.Deadline-w.Finish))
	case w.Outcome == laxityv1alpha1.WindowSucceeded:
		verdict = fmt.Sprintf("finished at t+%s, LATE by %s", at(w.Finish), at(w.Finish-w.Deadline))
	default:
		verdict = fmt.Sprintf("no result by t+%s, due at t+%s: MISSED", at(w.Finish), at(w.Deadline))
	}
	return fmt.Sprintf("%s  window t+%s to t+%s  %s, %s; %s", w.Query, at(w.WindowStart), at(w.WindowEnd), w.Outcome, verdict, learned)
}

// at is a number of seconds as a duration.
func at(seconds float64) string { return (time.Duration(seconds) * time.Second).String() }
