package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/spec"
	"github.com/laxity-dev/laxity/test/builder"
)

// A RecurringQuery learns only from the IntermittentQueries it controls,
// by UID, and from what each observed of its own window.
func TestLearnAcrossWindowsOnlyFromOwnedWindows(t *testing.T) {
	rq := builder.Recurring("team-a", "orders").Obj()
	rq.UID = "rq-now"
	start := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	window := func(name string, owner types.UID, at time.Time, observedAt time.Time) laxityv1alpha1.IntermittentQuery {
		q := builder.Query("team-a", name).Window(at, 5*time.Minute).Obj()
		q.Labels = map[string]string{spec.LabelRecurringQuery: rq.Name}
		if owner != "" {
			q.OwnerReferences = []metav1.OwnerReference{{
				APIVersion: laxityv1alpha1.GroupVersion.String(), Kind: "RecurringQuery", Name: rq.Name, UID: owner, Controller: ptr.To(true),
			}}
		}
		q.Status.Learned = &laxityv1alpha1.LearnedModel{Observations: []laxityv1alpha1.StepObservation{{
			Kind: laxityv1alpha1.StepKindBatch, WindowStart: metav1.NewTime(observedAt), Work: 1000, Nodes: 2, Seconds: "30",
		}}}
		return *q
	}
	children := []laxityv1alpha1.IntermittentQuery{
		window("orders-202612060400", "rq-now", start, start),
		window("orders-labelled", "", start.Add(10*time.Minute), start.Add(10*time.Minute)),
		window("orders-202612060420", "rq-before", start.Add(20*time.Minute), start.Add(20*time.Minute)),
		window("orders-202612060430", "rq-now", start.Add(30*time.Minute), start.Add(40*time.Minute)),
	}
	learnAcrossWindows(rq, children, laxityv1alpha1.LearningApply, metav1.Now())
	if rq.Status.Learned == nil {
		t.Fatal("nothing learned from the owned window")
	}
	got := rq.Status.Learned.Observations
	if len(got) != 1 || !got[0].WindowStart.Time.Equal(start) {
		t.Errorf("learned from %+v, want the one observation of the owned window of %s", got, start)
	}
}
