// Package sparkapplication runs a step as the SparkApplication laxity
// renders for it, for the spark-operator to run. The SparkApplication is
// the step: owned by its query, named like the step, observed from its
// status, and deleted when the step is cancelled as stuck, with a record in
// the job-run format written first to stand for the attempt.
package sparkapplication

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/internal/steprun"
)

// Runner runs steps as SparkApplications.
type Runner struct {
	client client.Client
	// records runs the steps among a schedule's that are records of job
	// runs, launched while the schedule ran them on EMR on EKS: they are
	// still read and cancelled through it.
	records steprun.Runner
}

var _ steprun.Runner = (*Runner)(nil)

// New is the runner of a schedule whose steps are SparkApplications;
// records handles the job-run records among its steps.
func New(c client.Client, records steprun.Runner) *Runner {
	return &Runner{client: c, records: records}
}

// Kind lists SparkApplications, for steprun.List.
var Kind steprun.Lister = kind{}

type kind struct{}

func (kind) List(ctx context.Context, c client.Reader, namespace string, labels client.MatchingLabels) ([]steprun.Step, error) {
	apps := sparkapp.NewList()
	if err := c.List(ctx, apps, client.InNamespace(namespace), labels); err != nil {
		return nil, fmt.Errorf("listing SparkApplications: %w", err)
	}
	out := make([]steprun.Step, 0, len(apps.Items))
	for i := range apps.Items {
		out = append(out, steprun.Step{Object: &apps.Items[i], Obs: sparkapp.Observe(&apps.Items[i])})
	}
	return out, nil
}

// Finalizer is none: a SparkApplication is owned by its query and goes
// with it.
func (r *Runner) Finalizer() string { return "" }

// Launch creates app, owned by q. An object of its name already there is
// the step launched before when q owns it, else a squatter.
func (r *Runner) Launch(ctx context.Context, q *laxityv1alpha1.IntermittentQuery, app *unstructured.Unstructured, _ time.Time) (bool, string, error) {
	if err := steprun.Own(q, app, app, r.client.Scheme()); err != nil {
		return false, "", fmt.Errorf("owning %s: %w", app.GetName(), err)
	}
	if err := r.client.Create(ctx, app); err != nil {
		if apierrors.IsAlreadyExists(err) {
			squatter, err := steprun.TakenBy(ctx, r.client, q, sparkapp.New(), app.GetNamespace(), app.GetName())
			return false, squatter, err
		}
		return false, "", fmt.Errorf("launching %s: %w", app.GetName(), err)
	}
	return true, "", nil
}

// Sync has nothing to do for SparkApplications, which the spark-operator
// keeps up to date; job-run records are synced through records.
func (r *Runner) Sync(ctx context.Context, steps []steprun.Step, now time.Time) error {
	return r.records.Sync(ctx, steps, now)
}

// CancelStuck deletes a stuck SparkApplication, a record written first in
// its place (steprun.ReplaceWithRecord).
func (r *Runner) CancelStuck(ctx context.Context, q *laxityv1alpha1.IntermittentQuery, obj metav1.Object, why string, since, now time.Time) (bool, error) {
	if _, ok := obj.(*unstructured.Unstructured); !ok {
		return r.records.CancelStuck(ctx, q, obj, why, since, now)
	}
	return steprun.ReplaceWithRecord(ctx, r.client, q, obj, why, since, now)
}

// CancelUnfinished leaves SparkApplications to go with their query, by
// owner; job runs are cancelled through records.
func (r *Runner) CancelUnfinished(ctx context.Context, steps []steprun.Step, query string) error {
	return r.records.CancelUnfinished(ctx, steps, query)
}
