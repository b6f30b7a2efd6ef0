// Package kafka counts a query's tuples as they arrive on a Kafka topic and
// cuts them into batches that Spark's Kafka batch source reads by offset.
//
// A window [start, end) covers, on each partition p of the topic, the
// offsets [Start[p], End[p]): Start[p] is the first offset whose record
// timestamp is at or after the window start, End[p] the first at or after the
// window end, as Kafka's ListOffsets by timestamp answers. Offsets, not
// timestamps, delimit the window, because a Spark batch reads an offset
// range: a record written after End[p] is outside the window whatever its
// timestamp, and one written between Start[p] and End[p] is inside. A bound
// is decided once a record at or after it exists; until then the window runs
// on to the partition's high watermark.
//
// The package reads no clock, since the brokers' offsets are the truth, and
// imports no Kubernetes package: ConfigFromSecret takes a Secret's data map.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// brokerCallTimeout bounds every call to the brokers, so that an unreachable
// cluster fails a poll instead of hanging the controller that made it.
const brokerCallTimeout = 10 * time.Second

// Range is the offsets [From, To) of one partition.
type Range struct {
	From, To int64
}

// Offsets is a Range per partition.
type Offsets map[int32]Range

// Source is the arrivals of one query's window on a Kafka topic. It is safe
// for concurrent use.
type Source struct {
	topic string
	admin *kadm.Client
	// startMilli and endMilli are the window's bounds as Kafka timestamps.
	startMilli, endMilli int64

	mu sync.Mutex
	// start and end hold Start[p] and End[p] once decided. Offsets never
	// move, so a decided bound is not looked up again.
	start, end map[int32]int64
	// partitions is the topic's partition count at the last snapshot; the
	// lookups by time are skipped once every partition has both bounds.
	partitions int
	// opts make a client like admin's, for consuming.
	opts []kgo.Opt
	// late is the window's late records counted so far (see Late), and
	// lateFrom, per partition, the offset the count goes on from.
	late     int64
	lateFrom map[int32]int64
}

// New returns the source of the records of cfg.Topic timestamped in
// [windowStart, windowEnd), and connects lazily: a wrong broker address
// shows at the first Snapshot or Arrived, not here. Kafka timestamps are
// whole milliseconds, so a bound between two milliseconds counts from the
// later one. Close the source when done.
func New(cfg Config, windowStart, windowEnd time.Time) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !windowEnd.After(windowStart) {
		return nil, fmt.Errorf("window end: must be after the window start, got %s ≤ %s",
			windowEnd.Format(time.RFC3339Nano), windowStart.Format(time.RFC3339Nano))
	}
	startMilli, err := kafkaMilli(windowStart)
	if err != nil {
		return nil, fmt.Errorf("window start: %w", err)
	}
	endMilli, err := kafkaMilli(windowEnd)
	if err != nil {
		return nil, fmt.Errorf("window end: %w", err)
	}
	opts := []kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.ClientID("laxity")}
	if cfg.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(cfg.TLS))
	}
	if cfg.SASL != nil {
		opts = append(opts, kgo.SASL(cfg.SASL.mechanism()))
	}
	client, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka topic %q: creating client: %w", cfg.Topic, err)
	}
	return &Source{
		topic:      cfg.Topic,
		admin:      kadm.NewClient(client),
		startMilli: startMilli,
		endMilli:   endMilli,
		start:      make(map[int32]int64),
		end:        make(map[int32]int64),
		opts:       opts,
		lateFrom:   make(map[int32]int64),
	}, nil
}

var (
	epoch = time.UnixMilli(0)
	// lastMilli is the latest instant a Kafka timestamp can hold.
	lastMilli = time.UnixMilli(math.MaxInt64)
)

// kafkaMilli is the first Kafka timestamp at or after t. Negative timestamps
// are not instants to Kafka but requests for the earliest or latest offset.
func kafkaMilli(t time.Time) (int64, error) {
	switch {
	case t.Before(epoch):
		return 0, fmt.Errorf("must not be before the Unix epoch, where Kafka timestamps start, got %s", t.Format(time.RFC3339Nano))
	case t.After(lastMilli):
		return 0, fmt.Errorf("must not be after %s, where Kafka timestamps end, got %s", lastMilli.Format(time.RFC3339), t.Format(time.RFC3339))
	}
	milli := t.UnixMilli()
	if time.UnixMilli(milli).Before(t) {
		milli++
	}
	return milli, nil
}

// Close releases the source's connections.
func (s *Source) Close() {
	if s != nil {
		s.admin.Close()
	}
}

// errNotConstructed is returned by the methods of a nil Source.
var errNotConstructed = errors.New("kafka: source not built by New")

// Arrived implements source.Source: the window's records the brokers hold,
// summed over the partitions. now is not used: the brokers, not the clock,
// say what has arrived, and records keep arriving late.
func (s *Source) Arrived(ctx context.Context, _ time.Time) (int64, error) {
	offsets, err := s.Snapshot(ctx)
	if err != nil {
		return 0, err
	}
	return Total(offsets), nil
}

// Snapshot returns, for every partition of the topic, the offsets within the
// window that the partition holds now: [Start[p], End[p]) once both are
// decided, [Start[p], high watermark) while End[p] is not, and an empty range
// at the high watermark while Start[p] is not. From one snapshot to the
// next, a range's To never decreases and its From moves only while the range
// is empty, so Total never decreases; and neither passes the bound it stands
// in for, so batches cut from successive snapshots stay inside the window.
// Each broker call is bounded by a 10 s timeout within ctx.
func (s *Source) Snapshot(ctx context.Context) (Offsets, error) {
	if s == nil {
		return nil, errNotConstructed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// The high watermarks are read before the lookups by time. A lookup that
	// finds no record at or after a bound has seen at least up to the
	// watermark, so the bound, once decided, is not below it: undecided
	// ranges end where the window may still begin or end.
	latest, err := s.list(ctx, "end offsets", s.admin.ListEndOffsets)
	if err != nil {
		return nil, err
	}
	if len(latest) == 0 {
		return nil, fmt.Errorf("kafka topic %q: the brokers listed no partitions", s.topic)
	}
	s.partitions = len(latest)
	if err := s.decide(ctx, "window start", s.startMilli, s.start); err != nil {
		return nil, err
	}
	if err := s.decide(ctx, "window end", s.endMilli, s.end); err != nil {
		return nil, err
	}
	offsets := make(Offsets, len(latest))
	for p, listed := range latest {
		watermark := listed.Offset
		start, started := s.start[p]
		if !started {
			offsets[p] = Range{From: watermark, To: watermark}
			continue
		}
		to := watermark
		if end, ended := s.end[p]; ended {
			to = min(to, end)
		}
		// The start lies past the watermark when its record arrived after
		// the watermark was read, or when the partition lost records (an
		// unclean leader election): the range is then empty, not negative.
		offsets[p] = Range{From: start, To: max(to, start)}
	}
	return offsets, nil
}

// decide looks up the first offset at or after milli on the partitions whose
// bound is still unknown, and records those that a record now decides.
func (s *Source) decide(ctx context.Context, bound string, milli int64, decided map[int32]int64) error {
	if len(decided) >= s.partitions {
		return nil
	}
	found, err := s.list(ctx, "offsets at the "+bound, func(ctx context.Context, topics ...string) (kadm.ListedOffsets, error) {
		return s.admin.ListOffsetsAfterMilli(ctx, milli, topics...)
	})
	if err != nil {
		return err
	}
	for p, listed := range found {
		// Without a record at or after milli, kadm answers the end offset
		// with timestamp -1: the bound is not decided yet.
		if listed.Timestamp >= milli {
			decided[p] = listed.Offset
		}
	}
	return nil
}

// list calls one kadm listing for the topic within the broker call timeout
// and returns its offsets by partition.
func (s *Source) list(ctx context.Context, what string,
	listing func(context.Context, ...string) (kadm.ListedOffsets, error),
) (map[int32]kadm.ListedOffset, error) {
	ctx, cancel := context.WithTimeout(ctx, brokerCallTimeout)
	defer cancel()
	listed, err := listing(ctx, s.topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("kafka topic %q: listing %s: %w", s.topic, what, err)
	}
	return listed[s.topic], nil
}

// Total is the number of records in ranges, the tuples of a batch Cut
// returned or, for a Snapshot, the tuples arrived.
func Total(ranges map[int32]Range) int64 {
	var total int64
	for _, r := range ranges {
		total += max(r.To-r.From, 0)
	}
	return total
}
