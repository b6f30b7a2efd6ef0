package source

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The keys of a batch's slice of a query over several inputs: for every
// input, its name, a dot and one of these (or a key of the input's own
// slice, such as orders.kafka-starting-offsets); and the batch's interval
// of time, the same on every input.
const (
	// SliceFromTuple and SliceToTuple are the input's tuples [from, to) the
	// batch reads, numbered from the window's start on that input.
	SliceFromTuple = "from-tuple"
	SliceToTuple   = "to-tuple"
	// SliceLocation is the input's spec location, when it has one.
	SliceLocation = "input"
	// SliceIntervalEnd is the instant (RFC 3339, nanoseconds) every input
	// is cut at: the batch holds each input's tuples that arrived before
	// it and after the previous batch's.
	SliceIntervalEnd = "interval-end"
)

// JoinedInput is one input of a query over several.
type JoinedInput struct {
	// Name is the input's name: its slice keys start with it and a dot.
	Name string
	// Source is the input's own source. It must say how many of its
	// tuples had arrived at an earlier instant: a *Synthetic does, by the
	// clock, and an InstantSlicer does, by the tuples' timestamps.
	Source Source
	// Location is where a batch reads the input, passed as is; may be
	// empty.
	Location string
}

// InstantSlicer is a Slicer of a stream whose tuples carry their time
// (Kafka's record timestamps): it cuts the stream at an instant, as a batch
// aligned with other streams is cut.
type InstantSlicer interface {
	Slicer
	// ArrivedBefore is how many of the window's tuples timestamped before
	// instant have arrived.
	ArrivedBefore(ctx context.Context, instant time.Time) (int64, error)
	// SliceBefore is the input of the batch after the one whose slice was
	// previous (nil for the window's first batch): its tuples up to the
	// first one timestamped at or after instant. taken is how many it
	// holds.
	SliceBefore(ctx context.Context, previous map[string]string, instant time.Time) (slice map[string]string, taken int64, err error)
}

// Joined is the source of a query over several inputs (a join of orders
// and lineitem). Its tuples are all its inputs' together, which the
// query's batches count; a batch cuts every input at the same instant
// (aligned batches), so that the tuples of one batch only meet those of
// the same batch on the other inputs. Each batch's slice names every
// input's range.
type Joined struct {
	start, end time.Time
	inputs     []JoinedInput
	// resolution is how close the cut instant is found: a nanosecond by
	// the clock, a millisecond when an input's tuples carry Kafka's
	// millisecond timestamps.
	resolution time.Duration
}

// JoinedClock is a Joined source whose inputs all arrive by the clock: it
// can also say when a count will have arrived, and none of its tuples is
// ever late.
type JoinedClock struct {
	joined    *Joined
	synthetic []*Synthetic
}

// Arrived implements Source, as Joined's.
func (j *JoinedClock) Arrived(ctx context.Context, now time.Time) (int64, error) {
	return j.joined.Arrived(ctx, now)
}

// Slice implements Slicer, as Joined's.
func (j *JoinedClock) Slice(ctx context.Context, now time.Time, previous map[string]string, tuples int64) (map[string]string, int64, error) {
	return j.joined.Slice(ctx, now, previous, tuples)
}

var (
	_ LateCounter = (*Joined)(nil)
	_ Slicer      = (*Joined)(nil)
	_ Forecaster  = (*JoinedClock)(nil)
	_ Slicer      = (*JoinedClock)(nil)
)

// NewJoined is the source of a query over inputs, whose window is [start,
// end). When every input is a *Synthetic it is a *JoinedClock, which
// forecasts arrivals.
func NewJoined(start, end time.Time, inputs []JoinedInput) (Slicer, error) {
	if len(inputs) < 2 {
		return nil, fmt.Errorf("a query over several inputs needs at least two, got %d", len(inputs))
	}
	j := &Joined{start: start, end: end, inputs: inputs, resolution: time.Nanosecond}
	var synthetic []*Synthetic
	seen := map[string]bool{}
	for _, in := range inputs {
		if in.Name == "" || strings.Contains(in.Name, ".") || seen[in.Name] {
			return nil, fmt.Errorf("input %q: each input needs a name of its own without a dot", in.Name)
		}
		seen[in.Name] = true
		switch s := in.Source.(type) {
		case *Synthetic:
			synthetic = append(synthetic, s)
		case InstantSlicer:
			j.resolution = time.Millisecond
		default:
			return nil, fmt.Errorf("input %s: its source cannot be cut at an instant, as an aligned batch needs", in.Name)
		}
	}
	if len(synthetic) == len(inputs) {
		return &JoinedClock{joined: j, synthetic: synthetic}, nil
	}
	return j, nil
}

// Arrived implements Source: every input's arrived tuples together.
func (j *Joined) Arrived(ctx context.Context, now time.Time) (int64, error) {
	var sum int64
	for _, in := range j.inputs {
		n, err := in.Source.Arrived(ctx, now)
		if err != nil {
			return 0, fmt.Errorf("input %s: %w", in.Name, err)
		}
		sum += n
	}
	return sum, nil
}

// before is how many of input i's tuples arrived before instant, by the
// clock or by their timestamps.
func (j *Joined) before(ctx context.Context, i int, instant time.Time) (int64, error) {
	var n int64
	var err error
	switch s := j.inputs[i].Source.(type) {
	case InstantSlicer:
		n, err = s.ArrivedBefore(ctx, instant)
	default:
		n, err = s.Arrived(ctx, instant)
	}
	if err != nil {
		return 0, fmt.Errorf("input %s: %w", j.inputs[i].Name, err)
	}
	return n, nil
}

// beforeAll is every input's count before instant, and their sum.
func (j *Joined) beforeAll(ctx context.Context, instant time.Time) ([]int64, int64, error) {
	counts := make([]int64, len(j.inputs))
	var sum int64
	for i := range j.inputs {
		n, err := j.before(ctx, i, instant)
		if err != nil {
			return nil, 0, err
		}
		counts[i], sum = n, sum+n
	}
	return counts, sum, nil
}

// sliceBudget bounds cutting one batch: the search asks every input what
// had arrived by many instants, which must not hold a pass for long on
// slow brokers.
const sliceBudget = time.Minute

// Slice implements Slicer: the next batch holds tuples of all the inputs
// together, or all that have arrived by now when fewer have. It is cut at
// the earliest instant by which that many have arrived after the previous
// batch's cut, on every input at once.
func (j *Joined) Slice(ctx context.Context, now time.Time, previous map[string]string, tuples int64) (map[string]string, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, sliceBudget)
	defer cancel()
	from := make([]int64, len(j.inputs))
	lo := j.start
	if previous != nil {
		end, err := time.Parse(time.RFC3339Nano, previous[SliceIntervalEnd])
		if err != nil {
			return nil, 0, fmt.Errorf("previous batch's %s: %w", SliceIntervalEnd, err)
		}
		if end.After(now) {
			return nil, 0, fmt.Errorf("previous batch's %s: %s is later than now, %s", SliceIntervalEnd, previous[SliceIntervalEnd], now.UTC().Format(time.RFC3339Nano))
		}
		if end.After(lo) {
			lo = end
		}
		for i, in := range j.inputs {
			key := in.Name + "." + SliceToTuple
			if from[i], err = strconv.ParseInt(previous[key], 10, 64); err != nil || from[i] < 0 {
				return nil, 0, fmt.Errorf("previous batch's %s: %q is not a tuple count", key, previous[key])
			}
		}
	}
	var already int64
	for i, n := range from {
		if n > math.MaxInt64-already {
			return nil, 0, fmt.Errorf("previous batch's %s.%s: the inputs' tuple counts add up past what a count holds", j.inputs[i].Name, SliceToTuple)
		}
		already += n
	}
	want := int64(math.MaxInt64)
	if tuples < want-already {
		want = already + tuples
	}
	hi := now
	if j.end.Before(hi) {
		hi = j.end
	}
	if hi.Before(lo) {
		hi = lo
	}
	counts, sum, err := j.beforeAll(ctx, hi)
	if err != nil {
		return nil, 0, err
	}
	cut := hi
	if sum > want {
		// The earliest instant in (lo, hi] by which want have arrived: the
		// counts only grow with the instant.
		for hi.Sub(lo) > j.resolution {
			mid := lo.Add(hi.Sub(lo) / 2)
			_, n, err := j.beforeAll(ctx, mid)
			if err != nil {
				return nil, 0, err
			}
			if n >= want {
				hi = mid
			} else {
				lo = mid
			}
		}
		// On the resolution's grid: a Kafka cut is a whole millisecond.
		if cut = hi.Truncate(j.resolution); cut.Before(hi) {
			cut = cut.Add(j.resolution)
		}
		if counts, sum, err = j.beforeAll(ctx, cut); err != nil {
			return nil, 0, err
		}
	}
	slice := map[string]string{SliceIntervalEnd: cut.UTC().Format(time.RFC3339Nano)}
	for i, in := range j.inputs {
		if counts[i] < from[i] {
			return nil, 0, fmt.Errorf("input %s: %d tuples arrived before %s, fewer than the previous batches read (%d)", in.Name, counts[i], cut.UTC().Format(time.RFC3339Nano), from[i])
		}
		to := counts[i]
		if s, ok := in.Source.(InstantSlicer); ok {
			own, taken, err := s.SliceBefore(ctx, prefixed(previous, in.Name), cut)
			if err != nil {
				return nil, 0, fmt.Errorf("input %s: %w", in.Name, err)
			}
			to = from[i] + taken
			for k, v := range own {
				slice[in.Name+"."+k] = v
			}
		}
		slice[in.Name+"."+SliceFromTuple] = strconv.FormatInt(from[i], 10)
		slice[in.Name+"."+SliceToTuple] = strconv.FormatInt(to, 10)
		if in.Location != "" {
			slice[in.Name+"."+SliceLocation] = in.Location
		}
		sum += to - counts[i]
	}
	return slice, sum - already, nil
}

// prefixed is the part of a joined slice that is input name's own slice,
// without the name; nil for nil.
func prefixed(slice map[string]string, name string) map[string]string {
	if slice == nil {
		return nil
	}
	out := map[string]string{}
	for k, v := range slice {
		if own, ok := strings.CutPrefix(k, name+"."); ok {
			out[own] = v
		}
	}
	return out
}

// ArrivalOf implements Forecaster: the earliest instant by which tuples of
// all the inputs together have arrived.
func (j *JoinedClock) ArrivalOf(tuples int64) (time.Time, bool) {
	var total int64
	hi := j.joined.start
	for _, s := range j.synthetic {
		total += s.Total()
		if t, ok := s.ArrivalOf(s.Total()); ok && t.After(hi) {
			hi = t
		}
	}
	if tuples > total {
		return time.Time{}, false
	}
	arrived := func(t time.Time) int64 {
		var n int64
		for _, s := range j.synthetic {
			a, _ := s.Arrived(context.Background(), t)
			n += a
		}
		return n
	}
	lo := j.joined.start
	if arrived(lo) >= tuples {
		return lo, true
	}
	for hi.Sub(lo) > time.Nanosecond {
		mid := lo.Add(hi.Sub(lo) / 2)
		if arrived(mid) >= tuples {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true
}

// lateBudget bounds one count of a join's late tuples over all its
// inputs, as one input's count is bounded: a query of many topics gets no
// more of the shared passes than a query of one.
const lateBudget = 10 * time.Second

// Late implements LateCounter: the late tuples of the inputs that can have
// them, together, counted within lateBudget.
func (j *Joined) Late(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, lateBudget)
	defer cancel()
	var sum int64
	for _, in := range j.inputs {
		if c, ok := in.Source.(LateCounter); ok {
			n, err := c.Late(ctx)
			if err != nil {
				return 0, fmt.Errorf("input %s: %w", in.Name, err)
			}
			sum += n
		}
	}
	return sum, nil
}
