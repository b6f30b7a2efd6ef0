package sparkapplication_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/internal/steprun"
	"github.com/laxity-dev/laxity/internal/steprun/sparkapplication"
	"github.com/laxity-dev/laxity/internal/steprun/steprunfake"
	"github.com/laxity-dev/laxity/test/builder"
)

func newRunner(t *testing.T, objects ...client.Object) (client.Client, *sparkapplication.Runner, *laxityv1alpha1.IntermittentQuery) {
	t.Helper()
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(laxityv1alpha1.AddToScheme(scheme))
	q := builder.Query("ns", "q").UID("query-uid").Obj()
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(objects, q)...).Build()
	return c, sparkapplication.New(c, &steprunfake.Runner{}), q
}

func app(name string) *unstructured.Unstructured {
	a := sparkapp.New()
	a.SetNamespace("ns")
	a.SetName(name)
	return a
}

// A launch creates the SparkApplication owned by its query; the same launch
// repeated (after a crash) finds it and creates nothing; a name held by an
// object the query does not own is a squatter, left alone.
func TestLaunchIsIdempotentAndNeverTakesOver(t *testing.T) {
	ctx := context.Background()
	squatted := app("q-b1")
	c, r, q := newRunner(t, squatted)

	created, squatter, err := r.Launch(ctx, q, app("q-b0"), time.Time{})
	if err != nil || !created || squatter != "" {
		t.Fatalf("first launch = %v, %q, %v; want created", created, squatter, err)
	}
	got := sparkapp.New()
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "q-b0"}, got); err != nil {
		t.Fatal(err)
	}
	if owner := metav1.GetControllerOf(got); owner == nil || owner.UID != q.UID || owner.Kind != "IntermittentQuery" {
		t.Errorf("owner = %+v; want the query, by UID", owner)
	}

	created, squatter, err = r.Launch(ctx, q, app("q-b0"), time.Time{})
	if err != nil || created || squatter != "" {
		t.Errorf("repeated launch = %v, %q, %v; want found, not created", created, squatter, err)
	}

	created, squatter, err = r.Launch(ctx, q, app("q-b1"), time.Time{})
	if err != nil || created || !strings.Contains(squatter, "SparkApplication ns/q-b1") {
		t.Errorf("launch onto a squatted name = %v, %q, %v; want the squatter named", created, squatter, err)
	}
}

// A stuck SparkApplication is replaced by a CANCELLED record that stands for
// the attempt, written before the application is deleted.
func TestCancelStuckLeavesARecord(t *testing.T) {
	ctx := context.Background()
	c, r, q := newRunner(t)
	if _, _, err := r.Launch(ctx, q, app("q-b0"), time.Time{}); err != nil {
		t.Fatal(err)
	}
	launched := sparkapp.New()
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "q-b0"}, launched); err != nil {
		t.Fatal(err)
	}
	since, now := builder.Origin, builder.Origin.Add(time.Hour)
	replaced, err := r.CancelStuck(ctx, q, launched, "held the pool too long", since, now)
	if err != nil || !replaced {
		t.Fatalf("CancelStuck = %v, %v; want replaced", replaced, err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "q-b0"}, sparkapp.New()); !apierrors.IsNotFound(err) {
		t.Errorf("the stuck SparkApplication is still there: %v", err)
	}
	var record corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "q-b0"}, &record); err != nil {
		t.Fatalf("no record stands for the cancelled attempt: %v", err)
	}
	if record.Data[steprun.RecordStuck] != "held the pool too long" || record.Data[steprun.RecordState] != "CANCELLED" {
		t.Errorf("record data = %v; want CANCELLED with why", record.Data)
	}
	if owner := metav1.GetControllerOf(&record); owner == nil || owner.UID != q.UID {
		t.Errorf("record owner = %+v; want the query", owner)
	}
}
