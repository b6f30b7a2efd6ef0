package kafka

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/laxity-dev/laxity/internal/source"
)

var _ source.InstantSlicer = (*Source)(nil)

// Two topics joined, cut in batches at instants: on each topic every
// window record is read once, in offset order; a batch holds, on every
// partition, the records before its cut, except records written after a
// later-timestamped one (late), which the next batch holds.
func TestJoinedTopicsAreCutAtOneInstant(t *testing.T) {
	brokers := newCluster(t, kfake.SeedTopics(2, "orders"))
	ctx := context.Background()
	orders, err := New(Config{Brokers: brokers, Topic: "orders"}, windowStart, windowEnd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(orders.Close)
	lineitem := newSource(t, Config{Brokers: brokers, Topic: testTopic})

	var lines, ords []record
	for s := range 60 {
		lines = append(lines, record{int32(s % 3), time.Duration(s) * time.Minute})
		if s%4 == 0 {
			ords = append(ords, record{int32(s % 2), time.Duration(s)*time.Minute + 30*time.Second})
		}
	}
	// Late: written after the 10-minute record on partition 0, timestamped
	// at 2 minutes.
	ords = append(ords[:4], append([]record{{0, 2 * time.Minute}}, ords[4:]...)...)
	produce(t, brokers, lines)
	produce(t, brokers, ords, kgo.DefaultProduceTopic("orders"))

	j, err := source.NewJoined(windowStart, windowEnd, []source.JoinedInput{
		{Name: "orders", Source: orders}, {Name: "lineitem", Source: lineitem},
	})
	if err != nil {
		t.Fatal(err)
	}
	total, err := j.Arrived(ctx, windowEnd)
	if err != nil || total != int64(len(lines)+len(ords)) {
		t.Fatalf("Arrived = %d, %v; want %d", total, err, len(lines)+len(ords))
	}
	var previous map[string]string
	read := map[string]int64{}
	ends := map[string]map[int32]int64{"orders": {}, "lineitem": {}}
	for batch := 0; read["orders"]+read["lineitem"] < total; batch++ {
		if batch > 20 {
			t.Fatal("no end after 20 batches")
		}
		slice, taken, err := j.Slice(ctx, windowEnd, previous, 10)
		if err != nil {
			t.Fatalf("batch %d: %v", batch, err)
		}
		cut, err := time.Parse(time.RFC3339Nano, slice[source.SliceIntervalEnd])
		if err != nil {
			t.Fatal(err)
		}
		var held int64
		for _, name := range []string{"orders", "lineitem"} {
			ranges, err := ParseOffsetsJSON(slice[name+"."+SliceTopic], slice[name+"."+SliceStartingOffsets], slice[name+"."+SliceEndingOffsets])
			if err != nil {
				t.Fatalf("batch %d, %s: %v (slice %v)", batch, name, err, slice)
			}
			for p, r := range ranges {
				if r.From != ends[name][p] {
					t.Errorf("batch %d, %s partition %d: starts at %d, the batch before ended at %d", batch, name, p, r.From, ends[name][p])
				}
				ends[name][p] = r.To
				held += r.To - r.From
			}
			from, _ := strconv.ParseInt(slice[name+".from-tuple"], 10, 64)
			to, _ := strconv.ParseInt(slice[name+".to-tuple"], 10, 64)
			if from != read[name] || to < from {
				t.Errorf("batch %d, %s: tuples [%d, %d), the batch before ended at %d", batch, name, from, to, read[name])
			}
			read[name] = to
		}
		if held != taken {
			t.Errorf("batch %d: taken %d, offsets hold %d", batch, taken, held)
		}
		// Every record of lineitem before the cut is in: its timestamps
		// grow with its offsets.
		var before int64
		for _, r := range lines {
			if windowStart.Add(r.at).Before(cut) {
				before++
			}
		}
		if read["lineitem"] != before {
			t.Errorf("batch %d: lineitem read to %d, but %d records are before the cut %s", batch, read["lineitem"], before, cut)
		}
		previous = slice
	}
	if read["orders"] != int64(len(ords)) || read["lineitem"] != int64(len(lines)) {
		t.Fatalf("read %v, want %d orders and %d lineitems", read, len(ords), len(lines))
	}
}
