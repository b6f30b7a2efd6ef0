package kafka

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/laxity-dev/laxity/internal/source"
)

var _ source.Slicer = (*Source)(nil)

// Slices over a growing topic, each from the previous one as read back from
// its SparkApplication, read every window record exactly once; a short
// slice takes what has arrived.
func TestSliceContinuesFromThePreviousBatch(t *testing.T) {
	brokers := newCluster(t)
	src := newSource(t, Config{Brokers: brokers, Topic: testTopic})
	ctx := context.Background()
	var previous map[string]string
	read := map[int32]int64{} // records read per partition
	for step := range 4 {
		var records []record
		for i := range 5 {
			records = append(records, record{int32(i % 3), time.Duration(step*10+i) * time.Minute})
		}
		produce(t, brokers, records)
		slice, taken, err := src.Slice(ctx, time.Time{}, previous, 4)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if taken != 4 {
			t.Errorf("step %d: took %d records, want 4", step, taken)
		}
		ranges, err := ParseOffsetsJSON(testTopic, slice[SliceStartingOffsets], slice[SliceEndingOffsets])
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		for p, r := range ranges {
			if r.From != read[p] {
				t.Errorf("step %d: partition %d starts at %d, the batch before ended at %d", step, p, r.From, read[p])
			}
			read[p] = r.To
		}
		previous = slice
	}
	// 20 records produced, 16 read: the last slice takes the 4 left.
	slice, taken, err := src.Slice(ctx, time.Time{}, previous, 10)
	if err != nil {
		t.Fatal(err)
	}
	if taken != 4 || slice[SliceTopic] != testTopic {
		t.Errorf("last slice took %d records of topic %q, want the 4 left of %s", taken, slice[SliceTopic], testTopic)
	}
}

func TestSliceRejectsAnotherTopicsBatch(t *testing.T) {
	src := newSource(t, Config{Brokers: newCluster(t), Topic: testTopic})
	_, _, err := src.Slice(context.Background(), time.Time{}, map[string]string{SliceTopic: "other"}, 1)
	if err == nil || !strings.Contains(err.Error(), SliceTopic) {
		t.Errorf("error %v, want one naming %s", err, SliceTopic)
	}
}
