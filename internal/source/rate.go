package source

import (
	"math"
	"slices"
	"sync"
	"time"
)

// Sample is one observation of a source: Arrived tuples had arrived by At.
type Sample struct {
	At      time.Time
	Arrived int64
}

// MeasuredRate is the measured arrival rate the rate models compare with
// the planned one (spec.planning.rateWindow, 3 minutes by default): the
// tuples received over the last window before now, divided by the time they took, in tuples per
// second, from a short history of samples (a History keeps one). It is
// Measure's rate; see there for the details and for when ok is false.
func MeasuredRate(samples []Sample, window time.Duration, now time.Time) (perSecond float64, ok bool) {
	m, ok := Measure(samples, window, now)
	return m.PerSecond, ok
}

// Measurement is a measured arrival rate and the interval it covers.
type Measurement struct {
	// From and To delimit the interval: To is the newest sample's instant,
	// From is now − window, or the oldest sample's instant when no sample
	// is that old.
	From, To time.Time
	// PerSecond is the mean rate over [From, To] in tuples per second.
	PerSecond float64
}

// Measure is MeasuredRate with the interval the rate covers, so that a
// caller compares it with the planned rate over the same interval (for a
// declared profile, Synthetic.MeanRate(m.From, m.To)), not with one diluted
// by a part of the window that the samples do not cover yet.
//
// Samples after now are ignored and the rest are taken in time order
// (stably, so of two samples at one instant the later in the slice counts).
// The interval runs from now − window to the newest sample; the count at
// now − window is interpolated linearly between the samples around it, or,
// when no sample is that old, the interval starts at the oldest sample. The
// rate is the difference in arrived tuples divided by the seconds between
// From and To.
//
// ok is false, and the Measurement zero, when the interval covers less than
// half of the window (too short a history, or a newest sample that is
// stale), when window is not positive, and when the arrived count decreases
// anywhere within the interval (a source that restarted; measuring resumes
// once the decrease has left the window).
func Measure(samples []Sample, window time.Duration, now time.Time) (Measurement, bool) {
	if window <= 0 {
		return Measurement{}, false
	}
	seen := make([]Sample, 0, len(samples))
	for _, s := range samples {
		if !s.At.After(now) {
			seen = append(seen, s)
		}
	}
	slices.SortStableFunc(seen, func(a, b Sample) int { return a.At.Compare(b.At) })
	if len(seen) < 2 {
		return Measurement{}, false
	}
	newest := seen[len(seen)-1]
	from := now.Add(-window)
	// j is the newest sample at or before from, -1 when there is none.
	j := newestAtOrBefore(seen, from)
	var baseAt time.Time
	var base float64
	switch {
	case j < 0:
		baseAt, base = seen[0].At, float64(seen[0].Arrived)
	case j == len(seen)-1:
		// Every sample is older than the window.
		return Measurement{}, false
	default:
		a, b := seen[j], seen[j+1]
		frac := float64(from.Sub(a.At)) / float64(b.At.Sub(a.At))
		baseAt, base = from, float64(a.Arrived)+frac*(float64(b.Arrived)-float64(a.Arrived))
	}
	span := newest.At.Sub(baseAt)
	// span ≤ window, so this is span < window/2 without overflow.
	if span <= 0 || span < window-span {
		return Measurement{}, false
	}
	for i := max(j, 0) + 1; i < len(seen); i++ {
		if seen[i].Arrived < seen[i-1].Arrived {
			return Measurement{}, false
		}
	}
	return Measurement{From: baseAt, To: newest.At, PerSecond: (float64(newest.Arrived) - base) / span.Seconds()}, true
}

// newestAtOrBefore is the index of the newest of the time-ordered samples
// at or before t, -1 when there is none.
func newestAtOrBefore(samples []Sample, t time.Time) int {
	i, _ := slices.BinarySearchFunc(samples, t, func(s Sample, t time.Time) int {
		if s.At.After(t) {
			return 1
		}
		return -1
	})
	return i - 1
}

// Defaults of NewHistoryFor: samples per rate window and the capacity, enough
// for a little over two windows.
const (
	historyPerWindow = 16
	historyCapacity  = 2*historyPerWindow + 2
)

// History is a bounded, deterministic record of a source's recent samples,
// for MeasuredRate. It keeps at most its capacity of samples, dropping the
// oldest, and thins them so that however often the controller records, the
// kept samples span a predictable time: a new sample replaces the newest one
// while the newest is less than the spacing after the one before it, and is
// appended otherwise. The newest sample is therefore always the latest one
// recorded, and the others are at least the spacing apart.
//
// A History is safe for concurrent use. Its zero value keeps 34 samples
// without thinning; NewHistoryFor suits rate measurement better.
type History struct {
	mu      sync.Mutex
	spacing time.Duration
	// ring holds n samples from index head, oldest first, wrapping around.
	ring    []Sample
	head, n int
}

// NewHistory returns an empty history of at most size samples (at least 2)
// kept at least spacing apart (a negative spacing counts as 0, which keeps
// every sample).
func NewHistory(size int, spacing time.Duration) *History {
	return &History{ring: make([]Sample, max(size, 2)), spacing: max(spacing, 0)}
}

// NewHistoryFor returns a history for measuring rates over window: 34
// samples window/16 apart, which cover a little over two windows, so that
// MeasuredRate sees the whole window with at most a sixteenth of it between
// the window's start and the samples around it.
func NewHistoryFor(window time.Duration) *History {
	return NewHistory(historyCapacity, window/historyPerWindow)
}

// Record adds a sample. A sample older than the newest one is ignored
// (Record returns false); one at the same instant replaces it.
func (h *History) Record(s Sample) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ring == nil {
		h.ring = make([]Sample, historyCapacity)
	}
	if h.n > 0 {
		newest := h.index(h.n - 1)
		switch {
		case s.At.Before(h.ring[newest].At):
			return false
		case s.At.Equal(h.ring[newest].At),
			h.n >= 2 && h.ring[newest].At.Sub(h.ring[h.index(h.n-2)].At) < h.spacing:
			h.ring[newest] = s
			return true
		}
	}
	if h.n == len(h.ring) {
		h.ring[h.head] = s
		h.head = (h.head + 1) % len(h.ring)
		return true
	}
	h.ring[h.index(h.n)] = s
	h.n++
	return true
}

// index is the ring index of the i-th oldest sample.
func (h *History) index(i int) int { return (h.head + i) % len(h.ring) }

// Samples returns a copy of the kept samples, oldest first.
func (h *History) Samples() []Sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Sample, h.n)
	for i := range out {
		out[i] = h.ring[h.index(i)]
	}
	return out
}

// Len is the number of kept samples.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// MeasuredRate is MeasuredRate over the kept samples.
func (h *History) MeasuredRate(window time.Duration, now time.Time) (perSecond float64, ok bool) {
	return MeasuredRate(h.Samples(), window, now)
}

// Measure is Measure over the kept samples.
func (h *History) Measure(window time.Duration, now time.Time) (Measurement, bool) {
	return Measure(h.Samples(), window, now)
}

// ExceedsSupported reports whether a measured arrival rate exceeds the plan's
// maximum supported rate, planned × maxFactor (the plan's
// maxSupportedRateFactor), by more than tolerancePercent percent:
//
//	measured > planned × maxFactor × (1 + tolerancePercent/100)
//
// evaluated as measured × 100 > planned × maxFactor × (100 + tolerancePercent),
// so that a rate exactly at the tolerance does not count. With maxFactor 1 it
// is the rule of the variable-rate runs in docs/experiments.md: re-plan when
// the measured rate is more than 2% above the estimate.
//
// A maxFactor below 1 counts as 1: an infeasible plan reports 0, and every
// plan was made for its planned rate. A negative tolerance counts as 0, a
// negative planned rate as 0 (so any positive measured rate exceeds it), and
// any NaN argument gives false.
func ExceedsSupported(measured, planned float64, maxFactor float64, tolerancePercent int32) bool {
	if math.IsNaN(measured) || math.IsNaN(planned) || math.IsNaN(maxFactor) {
		return false
	}
	supported := max(planned, 0) * max(maxFactor, 1)
	return measured*100 > supported*float64(100+int64(max(tolerancePercent, 0)))
}

// The rate models, the values of an ElasticSchedule's
// spec.planning.rateModel.
const (
	// Pessimistic: "if we see a higher input rate, we assume the higher input
	// rate will continue, resulting in an increase in the number of tuples
	// in the window; if the input rate is slower, we assume that more tuples
	// will arrive later for the same window, and the total number of tuples
	// in the window remains the same."
	Pessimistic = "Pessimistic"
	// Optimistic: "if the input rate is faster, we assume that tuples arrive
	// early, but the total number of tuples in the window remains the same;
	// if the input rate is slower, we assume that the total number of tuples
	// in the window is smaller."
	Optimistic = "Optimistic"
)

// ProjectedTotal is the window's total number of tuples that a rate model of
// expects, given the tuples arrived by now, the measured rate
// and the planned total. Let continued = arrived + floor(measured ×
// remaining), where remaining is the seconds from now to the window end (0
// once the window has closed): the total if the measured rate holds to the
// end.
//
//   - Pessimistic (also for an empty or unknown model, the API's default):
//     max(plannedTotal, continued). A higher rate continues and the total
//     grows with it; a slower one means tuples come later, by the window
//     end, and the total stays plannedTotal.
//   - Optimistic: max(arrived, min(plannedTotal, continued)). A higher rate
//     means tuples arrive early and the total stays plannedTotal; a slower
//     one means fewer tuples in the window, down to continued. It is never
//     below what has already arrived.
//
// A negative or NaN measured rate counts as 0, a negative arrived count as
// 0; the result saturates at the largest int64.
func ProjectedTotal(model string, arrived int64, measured float64, now, end time.Time, plannedTotal int64) int64 {
	arrived = max(arrived, 0)
	rate := measured
	if !(rate > 0) {
		rate = 0
	}
	remaining := 0.0
	if now.Before(end) {
		remaining = end.Sub(now).Seconds()
	}
	continued := addTuples(arrived, rate*remaining)
	if model == Optimistic {
		return max(arrived, min(plannedTotal, continued))
	}
	return max(plannedTotal, continued)
}

// addTuples is arrived + floor(more), saturating at the largest int64;
// arrived ≥ 0 and more ≥ 0 (possibly +Inf).
func addTuples(arrived int64, more float64) int64 {
	more = math.Floor(more)
	// float64(math.MaxInt64) is 2^63, the first float64 that does not fit.
	if more >= float64(math.MaxInt64) {
		return math.MaxInt64
	}
	m := int64(more)
	if m > math.MaxInt64-arrived {
		return math.MaxInt64
	}
	return arrived + m
}
