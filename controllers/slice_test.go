package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/laxity-dev/laxity/internal/dispatch"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/internal/steprun"
	"github.com/laxity-dev/laxity/test/builder"
)

// recordingSlicer hands out slices numbered by call and records what each
// call continued from.
type recordingSlicer struct {
	taken    int64
	previous []map[string]string
}

func (s *recordingSlicer) Arrived(context.Context, time.Time) (int64, error) { return 0, nil }

func (s *recordingSlicer) Slice(_ context.Context, _ time.Time, previous map[string]string, tuples int64) (map[string]string, int64, error) {
	s.previous = append(s.previous, previous)
	return map[string]string{"cursor": strings.Repeat("x", len(s.previous))}, min(tuples, s.taken), nil
}

// launched renders batch index of the test query over [from, to) with slice.
func launched(t *testing.T, index, attempt int, from, to int64, slice map[string]string) steprun.Step {
	t.Helper()
	q := builder.Query("ns", "q").Rate("10").Slack(time.Minute).Obj()
	es := builder.Schedule("ns", "pool").Sizes(2).LeadTime(time.Minute).Obj()
	app, err := sparkapp.Render(q, es, sparkapp.Step{Kind: planner.StepBatch, Index: index, Attempt: attempt, FromTuple: from, ToTuple: to, Nodes: 2, ReadyNodes: 2, Slice: slice},
		sparkapp.Locations{ResultRoot: "s3a://r"})
	if err != nil {
		t.Fatal(err)
	}
	return steprun.Step{Object: app, Obs: sparkapp.Observe(app)}
}

func TestBatchSlice(t *testing.T) {
	first := map[string]string{"cursor": "a"}
	apps := []steprun.Step{launched(t, 0, 0, 0, 100, first)}
	ctx := context.Background()

	// A new batch continues from the one before it; its range ends where
	// what the slice holds does.
	s := &recordingSlicer{taken: 60}
	slice, to, err := batchSlice(ctx, s, observeSteps(apps)["q"], dispatch.Step{Kind: planner.StepBatch, Index: 1, FromTuple: 100, ToTuple: 200}, origin)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]map[string]string{first}, s.previous); diff != "" {
		t.Errorf("continued from (-want +got):\n%s", diff)
	}
	if to != 160 || slice["cursor"] != "x" {
		t.Errorf("slice %v to %d, want the slicer's, to 160", slice, to)
	}

	// A retry reads what its failed attempt read, without asking the source.
	s = &recordingSlicer{taken: 100}
	slice, to, err = batchSlice(ctx, s, observeSteps(apps)["q"], dispatch.Step{Kind: planner.StepBatch, Index: 0, Attempt: 1, FromTuple: 0, ToTuple: 100}, origin)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.previous) != 0 || !cmp.Equal(slice, first) || to != 100 {
		t.Errorf("retry: slice %v to %d after %d source calls, want %v to 100 and none", slice, to, len(s.previous), first)
	}

	for _, tc := range []struct {
		name string
		apps []steprun.Step
		step dispatch.Step
		want string
	}{
		{"the batch before has no slice", []steprun.Step{launched(t, 0, 0, 0, 100, nil)}, dispatch.Step{Index: 1, FromTuple: 100, ToTuple: 200}, "batch 0 records no input slice"},
		{"the failed attempt has no slice", []steprun.Step{launched(t, 0, 0, 0, 100, nil)}, dispatch.Step{Index: 0, Attempt: 1, ToTuple: 100}, "attempt 0 records no input slice"},
		{"nothing to read", nil, dispatch.Step{Index: 0, ToTuple: 100}, "no tuples of [0, 100)"},
	} {
		_, _, err := batchSlice(ctx, &recordingSlicer{}, observeSteps(tc.apps)["q"], tc.step, origin)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}
