package source

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"time"
)

// Segment is one piece of a piecewise-constant arrival rate: PerSecond tuples
// per second from After, an offset from the window start, until the next
// segment's After (the last segment until the window end). A PerSecond of 0
// is a pause in the stream.
type Segment struct {
	After     time.Duration
	PerSecond float64
}

// Synthetic is a Source whose tuples arrive by the clock at a
// piecewise-constant rate r(t) over the window [start, end], the arrival
// model of docs/design.md: A(t) = ∫ r from start to t, the window's total is
// N = floor(A(end)), and with granularity g
//
//	Arrived(t) = 0                   for t < start
//	           = floor(A(t)/g) * g   for start <= t < end
//	           = N                   for t >= end (the last unit may be partial)
//
// It is built from the query's declared input (FromSpec with no actual
// profile), which is what the planner assumes, or from an actual profile that
// differs from it, to exercise re-planning on streams that turn busier or
// quieter than declared (the variable-rate runs of docs/experiments.md).
//
// The arithmetic is exact, so that Arrived is deterministic and never
// decreases, also at segment boundaries: instants are whole nanoseconds,
// every rate is the rational number described at NewSynthetic, and A is
// evaluated as a rational from the cumulative count at the start of the
// segment that holds t. A Synthetic is immutable and safe for concurrent use.
type Synthetic struct {
	start, end  time.Time
	granularity int64
	// total is N = floor(A(end)).
	total int64
	// segs are the exact segments, ascending by after; segs[0].after is 0.
	segs []exactSegment
	// final is A(end), exactly.
	final *big.Rat
}

var _ Source = (*Synthetic)(nil)

// exactSegment is a segment with its rate per nanosecond and the tuples
// arrived before it, both exact.
type exactSegment struct {
	after time.Duration
	// perNanosecond is the rate in tuples per nanosecond.
	perNanosecond *big.Rat
	// before is A(start + after).
	before *big.Rat
}

// fieldNames name the constructor's inputs in its errors, so that FromSpec
// can point at the API fields it read them from.
type fieldNames struct {
	end, start, granularity string
	// segments names the list; after and rate the fields of one entry.
	segments, after, rate string
	// total names NewUniform's total.
	total string
}

var plainNames = fieldNames{
	end: "end", start: "start", granularity: "granularity",
	segments: "segments", after: "After", rate: "PerSecond", total: "total",
}

// NewSynthetic returns the source whose tuples arrive over [start, end] at
// the piecewise-constant rate segments, in arrival units of granularity
// tuples.
//
// The first segment starts at 0 and the offsets strictly increase, all
// inside the window (below end − start); rates are finite and non-negative,
// and may all be zero (a stream that delivers nothing). Each rate is taken to
// be the shortest decimal that rounds to it (what strconv.FormatFloat(r, 'g',
// -1, 64) prints), so a rate written as 0.3 is exactly 3/10 tuples per
// second and 0.3 tuples per second for 10 s are exactly 3 tuples, as a
// reader of the spec expects, not the 2.999… of the nearest float64. The
// window's total must fit in an int64.
//
// It returns an error, never panics, for end ≤ start, a window longer than a
// time.Duration holds, granularity < 1, no segments, a first offset other
// than 0, offsets that do not increase or leave the window, and negative,
// NaN or infinite rates.
func NewSynthetic(start, end time.Time, granularity int64, segments []Segment) (*Synthetic, error) {
	return newSynthetic(start, end, granularity, segments, plainNames)
}

// NewUniform returns the source whose total tuples arrive at a uniform rate
// over [start, end], in arrival units of granularity tuples: exactly total
// tuples by end (the rate total/(end − start) is kept as an exact fraction,
// where a float64 rate could lose the last tuple to rounding). It returns an
// error for a negative total and for the window and granularity errors of
// NewSynthetic.
func NewUniform(start, end time.Time, granularity, total int64) (*Synthetic, error) {
	return newUniform(start, end, granularity, total, plainNames)
}

func newSynthetic(start, end time.Time, granularity int64, segments []Segment, names fieldNames) (*Synthetic, error) {
	length, err := validateWindow(start, end, granularity, names)
	if err != nil {
		return nil, err
	}
	if len(segments) == 0 {
		return nil, fmt.Errorf("%s: at least one segment is required", names.segments)
	}
	exact := make([]exactSegment, 0, len(segments))
	for i, seg := range segments {
		switch {
		case i == 0 && seg.After != 0:
			return nil, fmt.Errorf("%s[0].%s: the first segment must start at 0s, got %v", names.segments, names.after, seg.After)
		case i > 0 && seg.After <= segments[i-1].After:
			return nil, fmt.Errorf("%s[%d].%s: offsets must strictly increase, got %v after %v",
				names.segments, i, names.after, seg.After, segments[i-1].After)
		case seg.After >= length:
			return nil, fmt.Errorf("%s[%d].%s: must be inside the window (below %v), got %v",
				names.segments, i, names.after, length, seg.After)
		case math.IsNaN(seg.PerSecond) || math.IsInf(seg.PerSecond, 0) || seg.PerSecond < 0:
			return nil, fmt.Errorf("%s[%d].%s: must be a finite non-negative number, got %v",
				names.segments, i, names.rate, seg.PerSecond)
		}
		exact = append(exact, exactSegment{after: seg.After, perNanosecond: perNanosecond(decimalRat(seg.PerSecond))})
	}
	return build(start, end, granularity, exact, names)
}

func newUniform(start, end time.Time, granularity, total int64, names fieldNames) (*Synthetic, error) {
	length, err := validateWindow(start, end, granularity, names)
	if err != nil {
		return nil, err
	}
	if total < 0 {
		return nil, fmt.Errorf("%s: must not be negative, got %d", names.total, total)
	}
	rate := new(big.Rat).SetFrac(big.NewInt(total), big.NewInt(int64(length)))
	return build(start, end, granularity, []exactSegment{{perNanosecond: rate}}, names)
}

// validateWindow checks the window and the granularity and returns the
// window's length.
func validateWindow(start, end time.Time, granularity int64, names fieldNames) (time.Duration, error) {
	if !end.After(start) {
		return 0, fmt.Errorf("%s: must be after %s, got %s ≤ %s", names.end, names.start,
			end.Format(time.RFC3339Nano), start.Format(time.RFC3339Nano))
	}
	length := end.Sub(start)
	// Sub saturates at the largest Duration (about 292 years).
	if !start.Add(length).Equal(end) {
		return 0, fmt.Errorf("%s: the window must be shorter than %v", names.end, time.Duration(math.MaxInt64))
	}
	if granularity < 1 {
		return 0, fmt.Errorf("%s: must be at least 1, got %d", names.granularity, granularity)
	}
	return length, nil
}

// build fills in the cumulative counts of validated segments.
func build(start, end time.Time, granularity int64, segs []exactSegment, names fieldNames) (*Synthetic, error) {
	length := end.Sub(start)
	cum := new(big.Rat)
	for i := range segs {
		segs[i].before = new(big.Rat).Set(cum)
		until := length
		if i+1 < len(segs) {
			until = segs[i+1].after
		}
		cum.Add(cum, spanTuples(segs[i].perNanosecond, until-segs[i].after))
	}
	total := new(big.Int).Quo(cum.Num(), cum.Denom())
	if !total.IsInt64() {
		return nil, fmt.Errorf("%s: the window's total of %s tuples does not fit in an int64", names.segments, total)
	}
	return &Synthetic{start: start, end: end, granularity: granularity, total: total.Int64(), segs: segs, final: cum}, nil
}

// decimalRat is r as the shortest decimal that rounds to it. r is finite.
func decimalRat(r float64) *big.Rat {
	x, ok := new(big.Rat).SetString(strconv.FormatFloat(r, 'g', -1, 64))
	if !ok {
		// Not reached for finite r; the binary value is exact too.
		return new(big.Rat).SetFloat64(r)
	}
	return x
}

var nanosecondsPerSecond = big.NewRat(int64(time.Second), 1)

// perNanosecond converts a rate per second to one per nanosecond.
func perNanosecond(perSecond *big.Rat) *big.Rat {
	return perSecond.Quo(perSecond, nanosecondsPerSecond)
}

// spanTuples is the tuples arriving in d at rate perNanosecond, a new value.
func spanTuples(perNanosecond *big.Rat, d time.Duration) *big.Rat {
	x := new(big.Rat).SetInt64(int64(d))
	return x.Mul(x, perNanosecond)
}

// errNotConstructed is returned by the methods of a nil Synthetic.
var errNotConstructed = errors.New("source: synthetic source not built by NewSynthetic, NewUniform or FromSpec")

// Arrived implements Source: the tuples arrived by now in whole units, the
// window's total N from the window end on. Its error is always nil for a
// Synthetic from one of the constructors.
func (s *Synthetic) Arrived(_ context.Context, now time.Time) (int64, error) {
	if s == nil {
		return 0, errNotConstructed
	}
	switch {
	case now.Before(s.start):
		return 0, nil
	case !now.Before(s.end):
		return s.total, nil
	}
	a := s.at(now.Sub(s.start))
	unit := new(big.Int).Mul(a.Denom(), big.NewInt(s.granularity))
	// a ≥ 0, so truncation is the floor.
	units := new(big.Int).Quo(a.Num(), unit)
	// units*g ≤ A(t) ≤ A(end), whose floor N fits in an int64.
	return units.Int64() * s.granularity, nil
}

// at is A(start + e) for 0 ≤ e ≤ end − start, exactly: the tuples arrived
// before the segment that holds e, plus those of the segment so far.
func (s *Synthetic) at(e time.Duration) *big.Rat {
	if len(s.segs) == 0 {
		return new(big.Rat)
	}
	i := sort.Search(len(s.segs), func(i int) bool { return s.segs[i].after > e }) - 1
	seg := s.segs[i]
	a := spanTuples(seg.perNanosecond, e-seg.after)
	return a.Add(a, seg.before)
}

// continuous is A(t) without rounding to whole tuples: 0 before the window
// and A(end) after it.
func (s *Synthetic) continuous(t time.Time) *big.Rat {
	switch {
	case !t.After(s.start):
		return new(big.Rat)
	case !t.Before(s.end):
		return new(big.Rat).Set(s.final)
	}
	return s.at(t.Sub(s.start))
}

// MeanRate is the source's mean arrival rate in tuples per second over
// [from, to] by its rate profile (not rounded to whole tuples or units; the
// rate is 0 outside the window): the planned rate to compare a measured one
// with when the declared input is a profile. It is 0 when to is not after
// from, and for a nil Synthetic.
func (s *Synthetic) MeanRate(from, to time.Time) float64 {
	if s == nil || !to.After(from) {
		return 0
	}
	d := s.continuous(to)
	d.Sub(d, s.continuous(from))
	// For instants centuries apart the divisor saturates at the largest
	// Duration.
	seconds := new(big.Rat).SetFrac(big.NewInt(int64(to.Sub(from))), big.NewInt(int64(time.Second)))
	f, _ := d.Quo(d, seconds).Float64()
	return f
}

// Total is the window's total N = floor(A(end)), what Arrived reports from
// the window end on. It is 0 for a nil Synthetic.
func (s *Synthetic) Total() int64 {
	if s == nil {
		return 0
	}
	return s.total
}

// Granularity is the number of tuples in one arrival unit.
func (s *Synthetic) Granularity() int64 {
	if s == nil {
		return 0
	}
	return s.granularity
}

// Window is the window [start, end] the tuples arrive in.
func (s *Synthetic) Window() (start, end time.Time) {
	if s == nil {
		return time.Time{}, time.Time{}
	}
	return s.start, s.end
}

var _ Forecaster = (*Synthetic)(nil)

// ArrivalOf implements Forecaster, exactly: the first whole nanosecond at
// which the whole units holding tuples have arrived.
func (s *Synthetic) ArrivalOf(tuples int64) (time.Time, bool) {
	switch {
	case s == nil || tuples > s.total:
		return time.Time{}, false
	case tuples <= 0:
		return s.start, true
	}
	units := (tuples + s.granularity - 1) / s.granularity
	target := new(big.Rat).SetInt64(units * s.granularity)
	if target.Cmp(s.final) > 0 {
		// The last, partial unit counts only at the window end.
		return s.end, true
	}
	window := s.end.Sub(s.start)
	for i, seg := range s.segs {
		next := window
		if i+1 < len(s.segs) {
			next = s.segs[i+1].after
		}
		if seg.perNanosecond.Sign() == 0 {
			continue
		}
		reached := spanTuples(seg.perNanosecond, next-seg.after)
		reached.Add(reached, seg.before)
		if reached.Cmp(target) < 0 {
			continue
		}
		// The smallest whole e with before + rate·e ≥ target.
		need := new(big.Rat).Sub(target, seg.before)
		need.Quo(need, seg.perNanosecond)
		e := new(big.Int).Quo(need.Num(), need.Denom())
		if new(big.Rat).SetInt(e).Cmp(need) < 0 {
			e.Add(e, big.NewInt(1))
		}
		return s.start.Add(seg.after + time.Duration(e.Int64())), true
	}
	return s.end, true
}
