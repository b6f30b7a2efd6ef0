package controllers

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/planner"
)

func TestSlowerBy(t *testing.T) {
	was := costmodel.Model{Batch: costmodel.Linear{Overhead: 10, Parallel: 0.004}, Merge: costmodel.Linear{Overhead: 5, Parallel: 0.5}}
	points := pricePoints(&planner.QueryPlan{BatchSize: 5000, Batches: 4}, []int{2, 4})
	if len(points) != 4 {
		t.Fatalf("%d points, want a batch and a merge on each of 2 sizes", len(points))
	}
	for _, tc := range []struct {
		name string
		now  costmodel.Model
		want float64
	}{
		{"the same prices", was, 1},
		{"every step 30% slower", was.Scaled(1.3), 1.3},
		{"faster is no slowdown", was.Scaled(0.5), 1},
		{"only merges slower", costmodel.Model{Batch: was.Batch, Merge: costmodel.Linear{Overhead: 10, Parallel: 1}}, 2},
	} {
		if got := slowerBy(was, tc.now, points); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("%s: slowerBy = %g, want %g", tc.name, got, tc.want)
		}
	}
	if got := pricePoints(nil, []int{2}); got != nil {
		t.Errorf("a query the plan does not cover has points %v", got)
	}
	if got := slowerBy(was, was.Scaled(2), nil); got != 1 {
		t.Errorf("no points: slowerBy = %g, want 1", got)
	}
}

func TestPlannedModelsRoundTrip(t *testing.T) {
	w := planner.Workload{Pool: planner.Pool{ProvisioningLeadTime: 360}, Queries: []planner.Query{{
		Name:   "q1",
		Cost:   costmodel.Model{Batch: costmodel.Linear{Overhead: 12.5, Serial: 1e-9, Parallel: 1.0 / 3}, Merge: costmodel.Linear{Overhead: 5, Parallel: 0.5}},
		Margin: 0.125,
	}}}
	cm := &corev1.ConfigMap{}
	if err := encodePlan(cm, &planner.Document{}, modelsOf(w)); err != nil {
		t.Fatal(err)
	}
	var back plannedModels
	if err := json.Unmarshal([]byte(cm.Data[modelsKey]), &back); err != nil {
		t.Fatal(err)
	}
	if back.LeadTimeSeconds != 360 || back.Queries["q1"].Cost != w.Queries[0].Cost || back.Queries["q1"].Margin != 0.125 {
		t.Errorf("models.json gave back %+v, want the workload's prices to the bit", back)
	}
}
