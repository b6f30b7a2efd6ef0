package emrfake_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/laxity-dev/laxity/internal/emr"
	"github.com/laxity-dev/laxity/internal/emr/emrfake"
)

// clock is a settable time, read by the fake from its server goroutines.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func newClient(t *testing.T, f *emrfake.Server) *emr.Client {
	t.Helper()
	c, err := emr.New(context.Background(), f.Config(), emr.WithCredentials(f.Credentials()), emr.WithRetries(2, time.Millisecond))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func run(name string) emr.JobRun {
	return emr.JobRun{Name: name, ClientToken: name + "-r1", EntryPoint: "s3://analytics/jobs/q1.py", Executors: 2}
}

// TestClockDatesRuns follows two runs under a clock: created at StartJobRun,
// finished when SetState ends one and when CancelJobRun cancels the other,
// to the nanosecond.
func TestClockDatesRuns(t *testing.T) {
	ctx := context.Background()
	f := emrfake.New(t)
	clk := &clock{now: time.Date(2027, 3, 4, 5, 6, 7, 123456789, time.UTC)}
	f.SetClock(clk.Now)
	c := newClient(t, f)

	t0 := clk.Now()
	done, err := c.StartJob(ctx, run("a"))
	if err != nil {
		t.Fatalf("StartJob: %v", err)
	}
	t1 := t0.Add(90 * time.Second)
	clk.Set(t1)
	f.SetState(done, emr.StateRunning, "", "")
	if got, err := c.DescribeJob(ctx, done); err != nil || got.FinishedAt != nil {
		t.Fatalf("DescribeJob while running = %+v, %v; want no finishedAt", got, err)
	}
	f.SetState(done, emr.StateCompleted, "", "")
	got, err := c.DescribeJob(ctx, done)
	if err != nil {
		t.Fatalf("DescribeJob: %v", err)
	}
	if got.CreatedAt == nil || !got.CreatedAt.Equal(t0) || got.FinishedAt == nil || !got.FinishedAt.Equal(t1) {
		t.Errorf("DescribeJob = created %v, finished %v; want %v, %v", got.CreatedAt, got.FinishedAt, t0, t1)
	}

	cancelled, err := c.StartJob(ctx, run("b"))
	if err != nil {
		t.Fatalf("StartJob: %v", err)
	}
	t2 := t1.Add(time.Minute)
	clk.Set(t2)
	if err := c.CancelJob(ctx, cancelled); err != nil {
		t.Fatalf("CancelJob: %v", err)
	}

	runs := f.Runs()
	if len(runs) != 2 || f.RunCount() != 2 {
		t.Fatalf("Runs = %+v, want 2", runs)
	}
	want := []struct {
		id, state         string
		created, finished time.Time
	}{{done, emr.StateCompleted, t0, t1}, {cancelled, emr.StateCancelPending, t1, t2}}
	for i, w := range want {
		r := runs[i]
		if r.ID != w.id || r.State != w.state || !r.CreatedAt.Equal(w.created) || r.FinishedAt == nil || !r.FinishedAt.Equal(w.finished) {
			t.Errorf("Runs()[%d] = %+v, want ID %s, state %s, created %v, finished %v", i, r, w.id, w.state, w.created, w.finished)
		}
	}
	if runs[1].Request.Name != "b" || runs[1].ClientToken != "b-r1" {
		t.Errorf("Runs()[1] request = %+v, want run b", runs[1].Request)
	}
	*runs[0].FinishedAt = time.Time{}
	if again := f.Runs(); !again[0].FinishedAt.Equal(t1) {
		t.Error("changing a run Runs returned changed the fake's")
	}
}

// TestUpdatesCompleteAtOnce resizes a group set up with SetScaling twice
// in a row, which the default fake would refuse, and reads the resizes back.
func TestUpdatesCompleteAtOnce(t *testing.T) {
	ctx := context.Background()
	f := emrfake.New(t)
	clk := &clock{now: time.Date(2027, 3, 4, 5, 0, 0, 0, time.UTC)}
	f.SetClock(clk.Now)
	f.SetScaling(1, 30, 5)
	f.SetUpdatesCompleteAtOnce(true)
	c := newClient(t, f)

	if got, err := c.Requested(ctx); err != nil || got != 5 {
		t.Fatalf("Requested = %d, %v; want 5", got, err)
	}
	t0 := clk.Now()
	if err := c.Request(ctx, 25); err != nil {
		t.Fatalf("Request(25): %v", err)
	}
	t1 := t0.Add(time.Minute)
	clk.Set(t1)
	if err := c.Request(ctx, 3); err != nil {
		t.Fatalf("Request(3) right after Request(25): %v", err)
	}
	if err := c.Request(ctx, 0); !emr.IsInvalid(err) {
		t.Errorf("Request(0) under the minimum 1 = %v, want invalid", err)
	}
	want := []emrfake.Update{
		{At: t0, DesiredSize: 25, MinSize: 1, MaxSize: 30},
		{At: t1, DesiredSize: 3, MinSize: 1, MaxSize: 30},
	}
	if diff := cmp.Diff(want, f.Updates()); diff != "" {
		t.Errorf("Updates (-want +got):\n%s", diff)
	}
	if got := f.DesiredSize(); got != 3 {
		t.Errorf("DesiredSize = %d, want 3", got)
	}
}

// TestUpdatesWithoutClock keeps the default: an update leaves the group
// updating, the refused call is still an Update, and none is dated.
func TestUpdatesWithoutClock(t *testing.T) {
	ctx := context.Background()
	f := emrfake.New(t)
	c := newClient(t, f)
	if err := c.Request(ctx, 4); err != nil {
		t.Fatalf("Request(4): %v", err)
	}
	if err := c.Request(ctx, 6); !emr.IsRetryable(err) {
		t.Fatalf("Request(6) during an update = %v, want retryable", err)
	}
	want := []emrfake.Update{{DesiredSize: 4, MaxSize: 20}, {DesiredSize: 6, MaxSize: 20}}
	if diff := cmp.Diff(want, f.Updates()); diff != "" {
		t.Errorf("Updates (-want +got):\n%s", diff)
	}
	if got := f.CallCount(emrfake.OpUpdateNodegroupConfig); got != 2 {
		t.Errorf("UpdateNodegroupConfig calls = %d, want 2", got)
	}
}

// TestConcurrentReads reads the fake while clients call it, for the race
// detector.
func TestConcurrentReads(t *testing.T) {
	ctx := context.Background()
	f := emrfake.New(t)
	f.SetUpdatesCompleteAtOnce(true)
	c := newClient(t, f)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				_, _, _ = f.Runs(), f.Updates(), f.DesiredSize()
			}
		}
	}()
	for i := range 5 {
		if _, err := c.StartJob(ctx, run(string(rune('a'+i)))); err != nil {
			t.Errorf("StartJob: %v", err)
		}
		if err := c.Request(ctx, int32(i+3)); err != nil {
			t.Errorf("Request: %v", err)
		}
	}
	close(stop)
	wg.Wait()
	if f.RunCount() != 5 || len(f.Updates()) != 5 {
		t.Errorf("%d runs and %d updates, want 5 and 5", f.RunCount(), len(f.Updates()))
	}
}
