package controllers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/steprun"
	"github.com/laxity-dev/laxity/internal/steprun/steprunfake"
	"github.com/laxity-dev/laxity/test/builder"
)

// A deleted query keeps its runner's finalizer while its steps cannot be
// cancelled, as a backend error that does not hold the other queries; the
// others go once cancelled, and a live query is kept to be planned.
func TestReleaseDeletedCancelsThroughTheRunner(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	utilruntime.Must(laxityv1alpha1.AddToScheme(scheme))
	const finalizer = "laxity.dev/fake-runs"
	deleted := func(name string) *laxityv1alpha1.IntermittentQuery {
		q := builder.Query("ns", name).Rate("10").Slack(time.Minute).Obj()
		q.Finalizers = []string{finalizer}
		q.DeletionTimestamp = &metav1.Time{Time: origin}
		return q
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(deleted("gone"), deleted("stuck"), builder.Query("ns", "live").Rate("10").Slack(time.Minute).Obj()).Build()
	var queries laxityv1alpha1.IntermittentQueryList
	if err := c.List(ctx, &queries, client.InNamespace("ns")); err != nil {
		t.Fatal(err)
	}
	runner := &steprunfake.Runner{QueryFinalizer: finalizer, CancelErrs: map[string]error{"stuck": errors.New("throttled")}}
	r := &ElasticScheduleReconciler{Client: c, Runner: func(*laxityv1alpha1.ElasticSchedule) steprun.Runner { return runner }}

	live, err := r.releaseDeleted(ctx, builder.Schedule("ns", "pool").Sizes(2).LeadTime(time.Minute).Obj(), queries.Items, nil)
	var backend *backendError
	if !errors.As(err, &backend) {
		t.Fatalf("releaseDeleted = %v, want a backend error for the query whose cancel failed", err)
	}
	if len(live) != 1 || live[0].Name != "live" {
		t.Errorf("live queries = %v, want [live]", live)
	}
	if diff := cmp.Diff([]string{"gone", "stuck"}, runner.Cancelled()); diff != "" {
		t.Errorf("cancelled (-want +got):\n%s", diff)
	}
	var stuck laxityv1alpha1.IntermittentQuery
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "stuck"}, &stuck); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{finalizer}, stuck.Finalizers); diff != "" {
		t.Errorf("the query whose cancel failed lost its finalizer (-want +got):\n%s", diff)
	}
	var gone laxityv1alpha1.IntermittentQuery
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "gone"}, &gone); err == nil {
		t.Errorf("the cancelled query is still there with finalizers %v", gone.Finalizers)
	}
}
