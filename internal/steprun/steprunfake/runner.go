// Package steprunfake is a step runner for unit tests: it runs nothing,
// records what it was asked, and fails as told.
package steprunfake

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/steprun"
)

// Runner is a steprun.Runner that creates nothing. Its fields are set
// before use; the calls it records are read with Launched and Cancelled.
type Runner struct {
	// QueryFinalizer is what Finalizer returns.
	QueryFinalizer string
	// CancelErrs are the errors CancelUnfinished returns, by query.
	CancelErrs map[string]error

	mu        sync.Mutex
	launched  []string
	cancelled []string
}

var _ steprun.Runner = (*Runner)(nil)

// Finalizer is QueryFinalizer.
func (r *Runner) Finalizer() string { return r.QueryFinalizer }

// Launch records app's name and reports it created.
func (r *Runner) Launch(_ context.Context, _ *laxityv1alpha1.IntermittentQuery, app *unstructured.Unstructured, _ time.Time) (bool, string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.launched = append(r.launched, app.GetName())
	return true, "", nil
}

// Sync has nothing to bring up to date.
func (r *Runner) Sync(context.Context, []steprun.Step, time.Time) error { return nil }

// CancelStuck cancels nothing and reports no object replaced.
func (r *Runner) CancelStuck(context.Context, *laxityv1alpha1.IntermittentQuery, metav1.Object, string, time.Time, time.Time) (bool, error) {
	return false, nil
}

// CancelUnfinished records query and returns CancelErrs[query].
func (r *Runner) CancelUnfinished(_ context.Context, _ []steprun.Step, query string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cancelled = append(r.cancelled, query)
	return r.CancelErrs[query]
}

// Launched are the names Launch was called with, in order.
func (r *Runner) Launched() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.launched...)
}

// Cancelled are the queries CancelUnfinished was called for, in order.
func (r *Runner) Cancelled() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.cancelled...)
}
