package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A record is late when it is timestamped inside the window but written on
// its partition after the window's end there, End[p], the first record at
// or after the window end: no batch of the window reads it. Late counts
// them, so that they are reported rather than silently lost.

// lateScanBudget bounds one count of late records: a busy topic is read
// on over several passes rather than holding one, since the operator's
// passes are shared by every schedule.
const lateScanBudget = 10 * time.Second

// Late implements source.LateCounter: the window's late records written
// so far, on every partition whose window end is decided. Each call reads
// on from where the last one stopped, up to the high watermarks of the
// moment, within lateScanBudget or ctx's deadline if sooner: what is left
// is read by the next call.
// A new Source (after a restart) reads them all again.
func (s *Source) Late(ctx context.Context) (int64, error) {
	if s == nil {
		return 0, errNotConstructed
	}
	latest, err := s.list(ctx, "end offsets", s.admin.ListEndOffsets)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err != nil && ctx.Err() != nil:
		// The caller's budget is spent: what was counted stands.
		return s.late, nil
	case err != nil:
		return 0, err
	}
	from := map[int32]kgo.Offset{}
	until := map[int32]int64{}
	for p, listed := range latest {
		if _, ended := s.end[p]; !ended {
			continue
		}
		if at := s.lateFromOr(p); listed.Offset > at {
			from[p], until[p] = kgo.NewOffset().At(at), listed.Offset
		}
	}
	if len(from) == 0 {
		return s.late, nil
	}
	client, err := kgo.NewClient(append(s.opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.topic: from}))...)
	if err != nil {
		return 0, fmt.Errorf("kafka topic %q: creating a consumer to count late records: %w", s.topic, err)
	}
	defer client.Close()
	budget, cancel := context.WithTimeout(ctx, lateScanBudget)
	defer cancel()
	read := map[int32]int64{}
	for p := range until {
		read[p] = s.lateFromOr(p)
	}
	late := s.late
	for len(until) > 0 {
		fetches := client.PollFetches(budget)
		if budget.Err() != nil {
			// Out of budget, this one or the caller's: keep what was
			// read, go on next time.
			break
		}
		var fetchErr error
		fetches.EachError(func(_ string, _ int32, err error) { fetchErr = err })
		if fetchErr != nil {
			return 0, fmt.Errorf("kafka topic %q: counting late records: %w", s.topic, fetchErr)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			stop, counting := until[r.Partition]
			if !counting || r.Offset >= stop {
				return
			}
			if milli := r.Timestamp.UnixMilli(); milli >= s.startMilli && milli < s.endMilli {
				late++
			}
			read[r.Partition] = r.Offset + 1
			if r.Offset+1 >= stop {
				delete(until, r.Partition)
			}
		})
		for p, stop := range until {
			// Records deleted or compacted away leave gaps: a partition
			// whose fetch position has reached the mark is done.
			if read[p] >= stop {
				delete(until, p)
			}
		}
	}
	for p, at := range read {
		s.lateFrom[p] = at
	}
	s.late = late
	return s.late, nil
}

// lateFromOr is where the count of late records on partition p goes on
// from: where the last count stopped, or the window's end there.
func (s *Source) lateFromOr(p int32) int64 {
	if at, ok := s.lateFrom[p]; ok {
		return at
	}
	return s.end[p]
}
