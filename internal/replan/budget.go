package replan

import "time"

// Defaults of the search backoff (Backoff).
const (
	// DefaultBackoffBase is the wait after a schedule's first search that
	// ran out of its budget: the same inputs would run out again, and a
	// window's plan in force goes on meanwhile.
	DefaultBackoffBase = 5 * time.Minute
	// DefaultBackoffCap bounds the wait however many searches ran out in a
	// row, so that a workload that shrinks as its windows pass (finished
	// queries are not planned again) is planned within an hour of fitting.
	DefaultBackoffCap = time.Hour
)

// Backoff is how long a schedule whose plan searches ran out of their time
// budget waits before the next search of the same inputs: Base after the
// first, doubled after each further one in a row, never more than Cap.
// Zero fields take the defaults.
type Backoff struct {
	Base, Cap time.Duration
}

// BudgetState is what a schedule's searches that ran out of their budget
// leave behind (the schedule's status.searchBudget): the inputs they were
// made from (the hash of the specs), how many in a row ran out, and when
// the next search of those inputs may start. The zero value is a schedule
// whose last search, if any, finished in time.
type BudgetState struct {
	Inputs   string
	Exceeded int
	Next     time.Time
}

// Long says whether the schedule's searches are known to be long: its last
// search ran out of its budget, whatever its inputs were. A long search
// runs in a lane of its own, never in a reconcile worker.
func (s BudgetState) Long() bool { return s.Exceeded > 0 }

// Wait says whether a search of inputs must wait at now, and until when:
// only while the searches of the same inputs are backing off. A change of
// the inputs (a spec change) is a new try at once.
func (s BudgetState) Wait(inputs string, now time.Time) (bool, time.Time) {
	if s.Exceeded == 0 || s.Inputs != inputs || !now.Before(s.Next) {
		return false, time.Time{}
	}
	return true, s.Next
}

// RanOut is the state after a search of inputs ran out of its budget at
// now: one more in a row when the inputs are the same, the first of a new
// series when they changed, the next try that series' delay later.
func (s BudgetState) RanOut(inputs string, now time.Time, b Backoff) BudgetState {
	n := 1
	if s.Inputs == inputs {
		n = s.Exceeded + 1
	}
	return BudgetState{Inputs: inputs, Exceeded: n, Next: now.Add(b.Delay(n))}
}

// Delay is the wait after the n-th search in a row that ran out of its
// budget: Base × 2^(n-1), at most Cap, and 0 for n < 1.
func (b Backoff) Delay(n int) time.Duration {
	base, ceiling := b.Base, b.Cap
	if base <= 0 {
		base = DefaultBackoffBase
	}
	if ceiling <= 0 {
		ceiling = DefaultBackoffCap
	}
	if n < 1 {
		return 0
	}
	d := min(base, ceiling)
	for i := 1; i < n && d < ceiling; i++ {
		if d > ceiling/2 {
			d = ceiling
		} else {
			d *= 2
		}
	}
	return d
}
