package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/laxity-dev/laxity/internal/source"
)

var _ source.LateCounter = (*Source)(nil)

// Records timestamped inside the window but written after a later one at
// or past the window end are late; records timestamped outside it are not,
// however late they are written. Counting goes on from where it stopped.
func TestLateCountsWindowRecordsWrittenAfterTheWindowEnd(t *testing.T) {
	brokers := newCluster(t)
	src := newSource(t, Config{Brokers: brokers, Topic: testTopic})
	ctx := context.Background()
	produce(t, brokers, []record{
		{0, -time.Minute}, {0, time.Minute}, {1, 2 * time.Minute}, {2, 59 * time.Minute},
		// The window ends on partitions 0 and 1 here.
		{0, time.Hour}, {1, time.Hour + time.Second},
		// Late: inside the window, written after its end.
		{0, 30 * time.Minute}, {1, 59*time.Minute + 59*time.Second},
		// Not late: before the window, and after it.
		{0, -2 * time.Minute}, {1, 2 * time.Hour},
	})
	if _, err := src.Arrived(ctx, time.Time{}); err != nil {
		t.Fatal(err)
	}
	late, err := src.Late(ctx)
	if err != nil || late != 2 {
		t.Fatalf("Late = %d, %v; want 2", late, err)
	}
	// Partition 2's window has not ended: its records are read by batches
	// still to come, not counted late. Once it ends, later records of the
	// window on it are late too.
	produce(t, brokers, []record{{2, time.Hour}, {2, 10 * time.Minute}, {0, 45 * time.Minute}})
	if _, err := src.Arrived(ctx, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if late, err = src.Late(ctx); err != nil || late != 4 {
		t.Fatalf("Late after more records = %d, %v; want 4", late, err)
	}
	// Out of budget before it starts, a count keeps what was counted.
	spent, cancel := context.WithDeadline(ctx, time.Unix(0, 0))
	defer cancel()
	produce(t, brokers, []record{{1, 20 * time.Minute}})
	if late, err = src.Late(spent); err != nil || late != 4 {
		t.Fatalf("Late out of budget = %d, %v; want the 4 counted before", late, err)
	}
	if late, err = src.Late(ctx); err != nil || late != 5 {
		t.Fatalf("Late after the budget = %d, %v; want 5", late, err)
	}
	// A new source (an operator restarted) counts the same.
	again := newSource(t, Config{Brokers: brokers, Topic: testTopic})
	if _, err := again.Arrived(ctx, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if late, err := again.Late(ctx); err != nil || late != 5 {
		t.Fatalf("Late on a new source = %d, %v; want 5", late, err)
	}
}
