package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// A query over several inputs cuts each of its batches at one instant on
// every input (aligned batches). On a topic, the cut at an instant is, on
// every partition, the first offset whose record is timestamped at or after
// it, as ListOffsets by timestamp answers: the batch holds the records
// before that offset. A record timestamped before the instant but written
// after a later one is past the cut, and goes to the next batch: it is late
// on that partition.

// before is, on every partition, the window's records the brokers hold
// up to the cut at instant.
func (s *Source) before(ctx context.Context, instant time.Time) (Offsets, error) {
	held, err := s.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	if !instant.After(epoch) {
		instant = epoch
	}
	milli, err := kafkaMilli(instant)
	if err != nil {
		return nil, fmt.Errorf("cutting at %s: %w", instant.UTC().Format(time.RFC3339Nano), err)
	}
	found, err := s.list(ctx, "offsets at "+instant.UTC().Format(time.RFC3339Nano), func(ctx context.Context, topics ...string) (kadm.ListedOffsets, error) {
		return s.admin.ListOffsetsAfterMilli(ctx, milli, topics...)
	})
	if err != nil {
		return nil, err
	}
	out := make(Offsets, len(held))
	for p, r := range held {
		to := r.To
		// Without a record at or after the instant, every record held is
		// before it: kadm then answers the end offset with timestamp -1.
		if listed, ok := found[p]; ok && listed.Timestamp >= milli {
			to = min(to, listed.Offset)
		}
		out[p] = Range{From: r.From, To: max(to, r.From)}
	}
	return out, nil
}

// ArrivedBefore implements source.InstantSlicer: the window's records held
// now that lie before the cut at instant, summed over the partitions.
func (s *Source) ArrivedBefore(ctx context.Context, instant time.Time) (int64, error) {
	offsets, err := s.before(ctx, instant)
	if err != nil {
		return 0, err
	}
	return Total(offsets), nil
}

// SliceBefore implements source.InstantSlicer: from where the batch of
// previous ended on every partition (the window's start for the first
// batch) up to the cut at instant.
func (s *Source) SliceBefore(ctx context.Context, previous map[string]string, instant time.Time) (map[string]string, int64, error) {
	after, err := s.previousEnds(previous)
	if err != nil {
		return nil, 0, err
	}
	cut, err := s.before(ctx, instant)
	if err != nil {
		return nil, 0, err
	}
	batch := make(Offsets, len(cut))
	for p, r := range cut {
		from := r.From
		if end, ok := after[p]; ok {
			from = end
		}
		batch[p] = Range{From: from, To: max(r.To, from)}
	}
	starting, ending := OffsetsJSON(s.topic, batch)
	return map[string]string{SliceTopic: s.topic, SliceStartingOffsets: starting, SliceEndingOffsets: ending}, Total(batch), nil
}
