package source

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

func mustSynthetic(t *testing.T, length time.Duration, granularity int64, segments ...Segment) *Synthetic {
	t.Helper()
	s, err := NewSynthetic(t0, t0.Add(length), granularity, segments)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustJoined(t *testing.T, length time.Duration, inputs ...JoinedInput) Slicer {
	t.Helper()
	j, err := NewJoined(t0, t0.Add(length), inputs)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func sliceInt(t *testing.T, slice map[string]string, key string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(slice[key], 10, 64)
	if err != nil {
		t.Fatalf("slice key %s: %v (slice %v)", key, err, slice)
	}
	return n
}

func TestJoinedSliceCutsEveryInputAtOneInstant(t *testing.T) {
	ctx := context.Background()
	orders := mustSynthetic(t, 100*time.Second, 1, Segment{PerSecond: 10})
	lineitem := mustSynthetic(t, 100*time.Second, 1, Segment{PerSecond: 30})
	j := mustJoined(t, 100*time.Second,
		JoinedInput{Name: "orders", Source: orders, Location: "s3a://tpch/orders/"},
		JoinedInput{Name: "lineitem", Source: lineitem})
	if _, clocked := j.(Forecaster); !clocked {
		t.Fatal("inputs that all arrive by the clock make a source that forecasts")
	}
	if _, late := j.(LateCounter); late {
		t.Fatal("inputs that all arrive by the clock have no late tuples to count")
	}

	if n, err := j.Arrived(ctx, at(10*time.Second)); err != nil || n != 400 {
		t.Fatalf("Arrived at 10s = %d, %v; want 100 + 300", n, err)
	}
	// 100 tuples of both together have arrived by 2.5 s: 25 orders, 75
	// lineitems.
	first, taken, err := j.Slice(ctx, at(50*time.Second), nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"interval-end":      at(2500 * time.Millisecond).Format(time.RFC3339Nano),
		"orders.from-tuple": "0", "orders.to-tuple": "25", "orders.input": "s3a://tpch/orders/",
		"lineitem.from-tuple": "0", "lineitem.to-tuple": "75",
	}
	if taken != 100 || !equalMaps(first, want) {
		t.Fatalf("first slice = %v (taken %d), want %v (taken 100)", first, taken, want)
	}
	// The next batch continues on each input where the first ended.
	second, taken, err := j.Slice(ctx, at(50*time.Second), first, 200)
	if err != nil {
		t.Fatal(err)
	}
	if taken != 200 || second["orders.from-tuple"] != "25" || second["orders.to-tuple"] != "75" ||
		second["lineitem.from-tuple"] != "75" || second["lineitem.to-tuple"] != "225" ||
		second["interval-end"] != at(7500*time.Millisecond).Format(time.RFC3339Nano) {
		t.Fatalf("second slice = %v (taken %d)", second, taken)
	}
	// Asked for more than has arrived, a batch takes what has, cut at now.
	third, taken, err := j.Slice(ctx, at(10*time.Second), second, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if taken != 100 || third["orders.to-tuple"] != "100" || third["lineitem.to-tuple"] != "300" ||
		third["interval-end"] != at(10*time.Second).Format(time.RFC3339Nano) {
		t.Fatalf("third slice = %v (taken %d)", third, taken)
	}
	if at, ok := j.(Forecaster).ArrivalOf(100); !ok || !at.Equal(t0.Add(2500*time.Millisecond)) {
		t.Fatalf("ArrivalOf(100) = %v, %v; want 2.5 s after the window start", at, ok)
	}
	if _, ok := j.(Forecaster).ArrivalOf(4001); ok {
		t.Fatal("ArrivalOf past both inputs' totals must say never")
	}
}

func TestJoinedSliceRefusesAPreviousSliceItCannotContinue(t *testing.T) {
	ctx := context.Background()
	j := mustJoined(t, 100*time.Second,
		JoinedInput{Name: "a", Source: mustSynthetic(t, 100*time.Second, 1, Segment{PerSecond: 1})},
		JoinedInput{Name: "b", Source: mustSynthetic(t, 100*time.Second, 1, Segment{PerSecond: 1})})
	end := at(time.Second).Format(time.RFC3339Nano)
	for name, previous := range map[string]map[string]string{
		"no interval end":     {"a.to-tuple": "1", "b.to-tuple": "1"},
		"an input's end gone": {"interval-end": end, "a.to-tuple": "1"},
		"a negative end":      {"interval-end": end, "a.to-tuple": "-1", "b.to-tuple": "1"},
		"more than arrived":   {"interval-end": end, "a.to-tuple": "500", "b.to-tuple": "1"},
	} {
		if _, _, err := j.Slice(ctx, at(50*time.Second), previous, 10); err == nil {
			t.Errorf("%s: Slice continued from %v", name, previous)
		}
	}
}

func TestNewJoinedRefusesInputsItCannotAlign(t *testing.T) {
	s := mustSynthetic(t, time.Minute, 1, Segment{PerSecond: 1})
	for name, inputs := range map[string][]JoinedInput{
		"one input":         {{Name: "a", Source: s}},
		"a name twice":      {{Name: "a", Source: s}, {Name: "a", Source: s}},
		"a name with a dot": {{Name: "a.b", Source: s}, {Name: "c", Source: s}},
		"an unnamed input":  {{Source: s}, {Name: "c", Source: s}},
		"a source by count": {{Name: "a", Source: s}, {Name: "b", Source: countOnly{}}},
	} {
		if _, err := NewJoined(t0, t0.Add(time.Minute), inputs); err == nil {
			t.Errorf("%s: NewJoined accepted %v", name, inputs)
		}
	}
}

// countOnly is a source that only counts: it cannot say what had arrived
// at an earlier instant.
type countOnly struct{}

func (countOnly) Arrived(context.Context, time.Time) (int64, error) { return 0, nil }
func (countOnly) Slice(context.Context, time.Time, map[string]string, int64) (map[string]string, int64, error) {
	return nil, 0, nil
}

// TestJoinedBatchesCoverEveryInputOnceProperty cuts random windows of
// random inputs into batches of random sizes, launched at random instants,
// and checks the aligned-batch invariants: each input read once, in
// order, to its last tuple; each batch cut at one instant on every input;
// a batch's size what its inputs' ranges hold.
func TestJoinedBatchesCoverEveryInputOnceProperty(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(30, 2))
	for trial := range 300 {
		length := time.Duration(1+rng.IntN(3600)) * time.Second
		granularity := int64(1 + rng.IntN(3))
		var inputs []JoinedInput
		var synthetic []*Synthetic
		for i := range 2 + rng.IntN(3) {
			var segments []Segment
			for k := range 1 + rng.IntN(3) {
				after := time.Duration(0)
				if k > 0 {
					after = segments[k-1].After + time.Duration(1+rng.IntN(int(length/time.Second)))*time.Second/4
					if after >= length {
						break
					}
				}
				segments = append(segments, Segment{After: after, PerSecond: float64(rng.IntN(40))})
			}
			segments[0].PerSecond++
			s := mustSynthetic(t, length, granularity, segments...)
			synthetic = append(synthetic, s)
			inputs = append(inputs, JoinedInput{Name: "in" + strconv.Itoa(i), Source: s})
		}
		j := mustJoined(t, length, inputs...)
		var total int64
		for _, s := range synthetic {
			total += s.Total()
		}
		var previous map[string]string
		var read int64
		now := t0
		for batch := 0; read < total; batch++ {
			if batch > 10_000 {
				t.Fatalf("trial %d: no end after %d batches", trial, batch)
			}
			now = now.Add(time.Duration(rng.IntN(int(length/10) + 1)))
			if now.After(t0.Add(length)) {
				now = t0.Add(length)
			}
			arrived, err := j.Arrived(ctx, now)
			if err != nil {
				t.Fatal(err)
			}
			if arrived == read {
				continue
			}
			slice, taken, err := j.Slice(ctx, now, previous, 1+rng.Int64N(total/5+1))
			if err != nil {
				t.Fatalf("trial %d batch %d: %v", trial, batch, err)
			}
			end, err := time.Parse(time.RFC3339Nano, slice[SliceIntervalEnd])
			if err != nil || end.After(now) {
				t.Fatalf("trial %d batch %d: interval end %q after now %s", trial, batch, slice[SliceIntervalEnd], now)
			}
			var held int64
			for i, in := range inputs {
				from, to := sliceInt(t, slice, in.Name+".from-tuple"), sliceInt(t, slice, in.Name+".to-tuple")
				if previous != nil && from != sliceInt(t, previous, in.Name+".to-tuple") || previous == nil && from != 0 {
					t.Fatalf("trial %d batch %d: input %s starts at %d, not where the batch before ended", trial, batch, in.Name, from)
				}
				// Aligned: each input holds exactly what it had by the cut.
				if by, _ := synthetic[i].Arrived(ctx, end); to != by || to < from {
					t.Fatalf("trial %d batch %d: input %s ends at %d, but %d had arrived by the cut", trial, batch, in.Name, to, by)
				}
				held += to - from
			}
			if held != taken || taken <= 0 {
				t.Fatalf("trial %d batch %d: taken %d, ranges hold %d", trial, batch, taken, held)
			}
			read += taken
			previous = slice
		}
		for i, in := range inputs {
			if got, want := sliceInt(t, previous, in.Name+".to-tuple"), synthetic[i].Total(); got != want {
				t.Fatalf("trial %d: input %s read to %d of %d", trial, in.Name, got, want)
			}
		}
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// FuzzJoinedSlicePrevious continues a join's batches from arbitrary
// recorded slices (the annotations of the batch before, which anyone who
// may edit the SparkApplication could change): Slice never panics, and a
// slice it returns starts every input where the previous one says and
// holds what it took.
func FuzzJoinedSlicePrevious(f *testing.F) {
	f.Add("2026-12-01T00:00:02.5Z", "25", "75", int64(100), int64(50))
	f.Add("", "", "", int64(1), int64(0))
	f.Add("2026-12-01T00:01:40Z", "1000", "3000", int64(1), int64(100))
	f.Add("1969-12-31T23:59:59Z", "-1", "9223372036854775807", int64(9223372036854775807), int64(-5))
	f.Add("2026-12-01T00:00:01Z", "999999", "1", int64(10), int64(10))
	f.Fuzz(func(t *testing.T, end, orders, lineitem string, tuples, nowSeconds int64) {
		j, err := NewJoined(t0, t0.Add(100*time.Second), []JoinedInput{
			{Name: "orders", Source: mustSynthetic(t, 100*time.Second, 1, Segment{PerSecond: 10})},
			{Name: "lineitem", Source: mustSynthetic(t, 100*time.Second, 1, Segment{PerSecond: 30})},
		})
		if err != nil {
			t.Fatal(err)
		}
		previous := map[string]string{SliceIntervalEnd: end, "orders.to-tuple": orders, "lineitem.to-tuple": lineitem}
		now := t0.Add(time.Duration(nowSeconds%1000) * time.Second)
		slice, taken, err := j.Slice(context.Background(), now, previous, tuples)
		if err != nil {
			return
		}
		var held int64
		for _, name := range []string{"orders", "lineitem"} {
			from, to := slice[name+".from-tuple"], slice[name+".to-tuple"]
			f, err1 := strconv.ParseInt(from, 10, 64)
			e, err2 := strconv.ParseInt(to, 10, 64)
			was, _ := strconv.ParseInt(previous[name+".to-tuple"], 10, 64)
			if err1 != nil || err2 != nil || e < f || f != was {
				t.Fatalf("%s: range [%s, %s), the previous batch ended at %s", name, from, to, previous[name+".to-tuple"])
			}
			if by, _ := j.Arrived(context.Background(), now); e > by {
				t.Fatalf("%s: range [%s, %s) reads past what has arrived by now (%d of both)", name, from, to, by)
			}
			held += e - f
		}
		if held != taken {
			t.Fatalf("taken %d, the ranges hold %d", taken, held)
		}
	})
}

// BenchmarkJoinedSlice cuts a day of two clock-driven streams, orders at
// 1,900 tuples a second and lineitem at 7,600 in units of 950, into 500
// batches: what one batch's cut costs the pass that launches it.
func BenchmarkJoinedSlice(b *testing.B) {
	const day = 24 * time.Hour
	orders, err := NewSynthetic(t0, t0.Add(day), 950, []Segment{{PerSecond: 1900}})
	if err != nil {
		b.Fatal(err)
	}
	lineitem, err := NewSynthetic(t0, t0.Add(day), 950, []Segment{{PerSecond: 7600}})
	if err != nil {
		b.Fatal(err)
	}
	j, err := NewJoined(t0, t0.Add(day), []JoinedInput{{Name: "orders", Source: orders}, {Name: "lineitem", Source: lineitem}})
	if err != nil {
		b.Fatal(err)
	}
	const batches = 500
	size := (orders.Total() + lineitem.Total()) / batches
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		var previous map[string]string
		for range batches {
			slice, _, err := j.Slice(ctx, t0.Add(day), previous, size)
			if err != nil {
				b.Fatal(err)
			}
			previous = slice
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batches)/1e3, "µs/batch")
}
