package controllers

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/laxity-dev/laxity/internal/planner"
)

// planOfSteps is a plan document with n steps of varied numbers, which
// compress like a real plan's.
func planOfSteps(n int) *planner.Document {
	rng := rand.New(rand.NewPCG(7, uint64(n)))
	doc := &planner.Document{Origin: origin, Chosen: planner.Chosen{InitialNodes: 2, BatchSizeFactor: 1, Feasible: true}}
	at := 0.0
	for i := range n {
		d := 10 + rng.Float64()*100
		doc.Steps = append(doc.Steps, planner.Step{
			Query: "q" + strings.Repeat("x", i%7), Kind: planner.StepBatch, Index: i,
			FromTuple: int64(i) * 1_000_003, ToTuple: int64(i+1) * 1_000_003,
			Ready: at, Start: at + rng.Float64(), End: at + d, Nodes: 2 + rng.IntN(20),
		})
		at += d
	}
	return doc
}

func TestPlanConfigMapEncoding(t *testing.T) {
	for _, tc := range []struct {
		steps      int
		compressed bool
	}{
		{steps: 0},
		{steps: 100},
		// Past about 5,000 steps the plain document would not fit; gzipped,
		// about 25,000 do.
		{steps: 8_000, compressed: true},
		{steps: 20_000, compressed: true},
	} {
		doc := planOfSteps(tc.steps)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "analytics", Name: "big-plan"}}
		if err := encodePlan(cm, doc, nil); err != nil {
			t.Fatalf("%d steps: %v", tc.steps, err)
		}
		size := len(cm.Data[planKey]) + len(cm.BinaryData[compressedPlanKey])
		if _, got := cm.BinaryData[compressedPlanKey]; got != tc.compressed {
			t.Errorf("%d steps: compressed %v, want %v", tc.steps, got, tc.compressed)
		}
		if size > maxPlainPlan || (cm.Data[planKey] == "") == (cm.BinaryData[compressedPlanKey] == nil) {
			t.Errorf("%d steps: %d bytes in data %v and binaryData %v", tc.steps, size, len(cm.Data), len(cm.BinaryData))
		}
		got, err := decodePlan(cm)
		if err != nil {
			t.Fatalf("%d steps: decoding: %v", tc.steps, err)
		}
		if diff := cmp.Diff(doc, got); diff != "" {
			t.Errorf("%d steps: the plan changed on the way through the ConfigMap (-want +got):\n%s", tc.steps, diff)
		}
	}
}

func TestPlanTooLargeEvenCompressed(t *testing.T) {
	cm := &corev1.ConfigMap{}
	err := encodePlan(cm, planOfSteps(200_000), nil)
	if err == nil || !strings.Contains(err.Error(), "200000 steps") || !strings.Contains(err.Error(), "more ElasticSchedules") {
		t.Fatalf("a plan too large for a ConfigMap: error %v, want one naming the steps and what to do", err)
	}
}

// A plan is decoded once per version of its ConfigMap, not on every read.
func TestDecodedPlanIsReusedUntilTheConfigMapChanges(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "analytics", Name: "reuse-plan", UID: "u1", ResourceVersion: "10"}}
	if err := encodePlan(cm, planOfSteps(3), nil); err != nil {
		t.Fatal(err)
	}
	first, _ := decodePlan(cm)
	if again, _ := decodePlan(cm); again != first {
		t.Error("the same resourceVersion was decoded again")
	}
	if err := encodePlan(cm, planOfSteps(4), nil); err != nil {
		t.Fatal(err)
	}
	cm.ResourceVersion = "11"
	if changed, _ := decodePlan(cm); len(changed.Steps) != 4 {
		t.Errorf("a new resourceVersion gave the old plan of %d steps", len(changed.Steps))
	}
	cm.UID = "u2" // deleted and made again: resourceVersions are not comparable
	if err := encodePlan(cm, planOfSteps(5), nil); err != nil {
		t.Fatal(err)
	}
	if remade, _ := decodePlan(cm); len(remade.Steps) != 5 {
		t.Errorf("a new ConfigMap of the same name gave the old plan of %d steps", len(remade.Steps))
	}
	forgetPlan("analytics", "reuse")
	if _, ok := decodedPlans.Load("analytics/reuse-plan"); ok {
		t.Error("forgetPlan kept the decoded plan")
	}
}
