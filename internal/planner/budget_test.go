package planner

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestPlanContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := PlanContext(ctx, tpchWorkload(1, 1))
	if !errors.Is(err, ErrSearchBudget) || !errors.Is(err, context.Canceled) {
		t.Fatalf("PlanContext with a cancelled context: got %v, want ErrSearchBudget wrapping context.Canceled", err)
	}
}

// TestPlanContextDeadline stops a search that takes most of a minute (the
// three-queries sample with week-long windows) within a short budget.
func TestPlanContextDeadline(t *testing.T) {
	w := stretchedWorkload(goldenWorkload(t, "three-queries-events"), 7*86400)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := PlanContext(ctx, w)
	if !errors.Is(err, ErrSearchBudget) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want ErrSearchBudget wrapping context.DeadlineExceeded", err)
	}
}

// TestPlanContextInvalidFirst: an invalid workload is reported as invalid
// whatever the budget.
func TestPlanContextInvalidFirst(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w := tpchWorkload(1, 1)
	w.Pool.Sizes = nil
	var ie *InvalidError
	if _, err := PlanContext(ctx, w); !errors.As(err, &ie) {
		t.Fatalf("got %v, want an *InvalidError", err)
	}
}

func TestPlanContextMatchesPlan(t *testing.T) {
	w := generatedWorkload(60, 9)
	want, err := Plan(w)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	got, err := PlanContext(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("PlanContext with a generous budget differs from Plan")
	}
}
