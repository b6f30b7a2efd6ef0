package controllers

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/pass"
	"github.com/laxity-dev/laxity/internal/planner"
)

func TestPlannedModelsRoundTrip(t *testing.T) {
	w := planner.Workload{Pool: planner.Pool{ProvisioningLeadTime: 360}, Queries: []planner.Query{{
		Name:   "q1",
		Cost:   costmodel.Model{Batch: costmodel.Linear{Overhead: 12.5, Serial: 1e-9, Parallel: 1.0 / 3}, Merge: costmodel.Linear{Overhead: 5, Parallel: 0.5}},
		Margin: 0.125,
	}}}
	cm := &corev1.ConfigMap{}
	if err := encodePlan(cm, &planner.Document{}, pass.ModelsOf(w)); err != nil {
		t.Fatal(err)
	}
	var back pass.Models
	if err := json.Unmarshal([]byte(cm.Data[modelsKey]), &back); err != nil {
		t.Fatal(err)
	}
	if back.LeadTimeSeconds != 360 || back.Queries["q1"].Cost != w.Queries[0].Cost || back.Queries["q1"].Margin != 0.125 {
		t.Errorf("models.json gave back %+v, want the workload's prices to the bit", back)
	}
}
