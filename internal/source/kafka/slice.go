package kafka

import (
	"context"
	"fmt"
	"time"
)

// The keys of a Kafka batch's slice (see Slice): with the prefix
// laxity.dev/ they are the SparkApplication's annotations, and the starting
// and ending offsets are what the job passes to Spark's Kafka batch source
// as startingOffsets and endingOffsets.
const (
	SliceTopic           = "kafka-topic"
	SliceStartingOffsets = "kafka-starting-offsets"
	SliceEndingOffsets   = "kafka-ending-offsets"
)

// Slice is the next batch's records: tuples records from where the batch of
// previous ended on every partition (the window's start for the first
// batch), or all that have arrived when fewer have, cut as Cut does. It reads
// no clock.
func (s *Source) Slice(ctx context.Context, _ time.Time, previous map[string]string, tuples int64) (map[string]string, int64, error) {
	after, err := s.previousEnds(previous)
	if err != nil {
		return nil, 0, err
	}
	available, err := s.Snapshot(ctx)
	if err != nil {
		return nil, 0, err
	}
	batch, err := Cut(after, available, tuples)
	if err != nil {
		return nil, 0, fmt.Errorf("topic %s: %w", s.topic, err)
	}
	starting, ending := OffsetsJSON(s.topic, batch)
	return map[string]string{SliceTopic: s.topic, SliceStartingOffsets: starting, SliceEndingOffsets: ending}, Total(batch), nil
}

// previousEnds is where the batch of previous ended on every partition;
// empty for nil, the window's first batch.
func (s *Source) previousEnds(previous map[string]string) (map[int32]int64, error) {
	after := map[int32]int64{}
	if previous == nil {
		return after, nil
	}
	if topic := previous[SliceTopic]; topic != s.topic {
		return nil, fmt.Errorf("previous batch's %s: %q, want %q", SliceTopic, topic, s.topic)
	}
	ranges, err := ParseOffsetsJSON(s.topic, previous[SliceStartingOffsets], previous[SliceEndingOffsets])
	if err != nil {
		return nil, fmt.Errorf("previous batch's offsets: %w", err)
	}
	for p, r := range ranges {
		after[p] = r.To
	}
	return after, nil
}
