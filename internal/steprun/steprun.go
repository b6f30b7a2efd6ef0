// Package steprun is the seam between the ElasticSchedule controller and
// what runs a query's steps. A Runner launches a step, brings the unfinished
// ones up to date, cancels one attempt held past its bound, and cancels a
// query's or a schedule's unfinished steps before they go. The reconcilers
// call only this interface; one factory in the controllers' setup picks a
// schedule's runner from its spec.nodePool.backend.
//
// Two runners exist, each in its own package: sparkapplication runs a step
// as the SparkApplication laxity renders, jobrun as an EMR on EKS job run
// with a record in the cluster. Adding a third (a Kubernetes Job, a Spark
// Connect session) takes a new package implementing Runner — and, when its
// steps are objects of a kind of their own, Lister — plus one line in that
// factory.
//
// What the runners share lives here: Step, the step as read back; List,
// which splits laxity's own steps from foreign objects by owner; the record
// format (record.go), which is both a job run's record and the record that
// stands for an attempt deleted as stuck; and the idempotency rules every
// runner keeps:
//
//   - a step's name is deterministic, so a launch repeated after a crash
//     finds the step there and reports created=false;
//   - an object of the step's name that the query does not own (controller
//     owner reference with the query's UID) is a squatter: nothing is
//     created, and Launch names it;
//   - whatever outlives the cluster's objects (a job run) is recorded in the
//     cluster before it is started, and the query carries the runner's
//     finalizer (Finalizer) until it is cancelled.
package steprun

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/sparkapp"
)

// Labels laxity puts on every step object (the step contract in
// internal/sparkapp).
const (
	LabelSchedule = "laxity.dev/schedule"
	LabelQuery    = "laxity.dev/query"
	LabelStep     = "laxity.dev/step"
)

// Step is one attempt of a step as laxity reads it back: the object that
// stands for it (a SparkApplication, a job-run record) and its state.
type Step struct {
	Object metav1.Object
	Obs    sparkapp.Observation
	// Stuck is why laxity cancelled the attempt as stuck, "" when it did
	// not (a record's RecordStuck).
	Stuck string
}

// Kind is the object's kind, for messages.
func (s Step) Kind() string {
	return kindOf(s.Object)
}

// Describe names the object: kind namespace/name.
func (s Step) Describe() string {
	return fmt.Sprintf("%s %s/%s", s.Kind(), s.Object.GetNamespace(), s.Object.GetName())
}

func kindOf(obj metav1.Object) string {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		return "ConfigMap"
	case *unstructured.Unstructured:
		if kind := o.GetKind(); kind != "" {
			return kind
		}
	}
	return sparkapp.GroupVersionKind.Kind
}

// Runner runs a schedule's steps on one backend. Every method takes the
// steps of the pass (see List) and acts on those it runs.
type Runner interface {
	// Finalizer is the finalizer Launch puts on a query whose steps
	// outlive the objects the query owns, "" when the runner needs none. It
	// is named laxity.dev/<something> (see QueryFinalizers).
	Finalizer() string
	// Launch creates the step app describes, owned by q. created is false
	// when the step was already there (a launch made before) or when the
	// name is taken by an object q does not own, which squatter then names.
	// A launch whose backend failed after the step was recorded returns
	// created=true with a BackendError: Sync carries it on.
	Launch(ctx context.Context, q *laxityv1alpha1.IntermittentQuery, app *unstructured.Unstructured, now time.Time) (created bool, squatter string, err error)
	// Sync brings the unfinished steps among steps up to date with the
	// backend, updating their observations in place.
	Sync(ctx context.Context, steps []Step, now time.Time) error
	// CancelStuck cancels the attempt obj stands for, held past its bound,
	// and makes it a failed attempt whose message and RecordStuck are why.
	// replaced is true when obj was deleted and a record written in its
	// place: until a cache shows that record, the step's name must not be
	// launched again.
	CancelStuck(ctx context.Context, q *laxityv1alpha1.IntermittentQuery, obj metav1.Object, why string, since, now time.Time) (replaced bool, err error)
	// CancelUnfinished cancels the unfinished steps among steps of query,
	// of every query when query is "", before the query or the schedule
	// goes.
	CancelUnfinished(ctx context.Context, steps []Step, query string) error
}

// Lister lists the step objects of one kind in namespace that carry
// labels, from the manager's cache.
type Lister interface {
	List(ctx context.Context, c client.Reader, namespace string, labels client.MatchingLabels) ([]Step, error)
}

// BackendError is a failure of a runner's backend (AWS for job runs): the
// pass goes on with what it knows and reports it.
type BackendError struct{ Err error }

func (e *BackendError) Error() string { return e.Err.Error() }

func (e *BackendError) Unwrap() error { return e.Err }

// IsBackendError reports whether err is, or wraps, a BackendError.
func IsBackendError(err error) bool {
	var b *BackendError
	return errors.As(err, &b)
}

// List lists the objects in namespace that carry labels and may be steps:
// those of every kind in kinds, then the records, all from the manager's
// cache. It splits them into laxity's own steps and the foreign ones: a
// step is laxity's only when its controller owner reference is the
// IntermittentQuery its labels name — kind, name and UID. Labels anyone can
// write; an owner reference with the query's UID only someone who read the
// query. A foreign object is never counted as launched, merged or holding
// the pool.
func List(ctx context.Context, c client.Reader, kinds []Lister, namespace string, labels client.MatchingLabels) (owned, foreign []Step, err error) {
	var queries laxityv1alpha1.IntermittentQueryList
	if err := c.List(ctx, &queries, client.InNamespace(namespace)); err != nil {
		return nil, nil, fmt.Errorf("listing queries: %w", err)
	}
	uids := map[string]types.UID{}
	for i := range queries.Items {
		uids[queries.Items[i].Name] = queries.Items[i].UID
	}
	keep := func(s Step) {
		if Owned(s.Object, uids) {
			owned = append(owned, s)
		} else {
			foreign = append(foreign, s)
		}
	}
	for _, kind := range kinds {
		steps, err := kind.List(ctx, c, namespace, labels)
		if err != nil {
			return nil, nil, err
		}
		for _, s := range steps {
			keep(s)
		}
	}
	records, err := listRecords(ctx, c, namespace, labels)
	if err != nil {
		return nil, nil, err
	}
	for _, s := range records {
		keep(s)
	}
	return owned, foreign, nil
}

// OwnedByQuery reports whether obj's controller is the IntermittentQuery
// named query, whose UID is uids[query].
func OwnedByQuery(obj metav1.Object, query string, uids map[string]types.UID) bool {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || query == "" {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	uid, known := uids[query]
	return err == nil && gv.Group == laxityv1alpha1.GroupVersion.Group && ref.Kind == "IntermittentQuery" &&
		ref.Name == query && known && ref.UID == uid
}

// Owned reports whether obj is laxity's step: its controller is the
// IntermittentQuery its labels name (OwnedByQuery), or it is a shared batch
// owned by one of its members at least (SharedOwners). uids are the UIDs
// of the namespace's queries by name.
func Owned(obj metav1.Object, uids map[string]types.UID) bool {
	return OwnedByQuery(obj, obj.GetLabels()[LabelQuery], uids) || len(SharedOwners(obj, uids)) > 0
}

// SharedOwners are the members of shared batch obj that own it: listed in
// its laxity.dev/members annotation and named, with their UID in uids, by
// one of its owner references. A shared batch has no controller: each
// member owns it alike, so that deleting one leaves it to the others.
// None for a step of one query.
func SharedOwners(obj metav1.Object, uids map[string]types.UID) []string {
	if metav1.GetControllerOf(obj) != nil {
		return nil
	}
	var out []string
	for _, m := range Members(obj) {
		uid, known := uids[m]
		if !known {
			continue
		}
		for _, ref := range obj.GetOwnerReferences() {
			gv, err := schema.ParseGroupVersion(ref.APIVersion)
			if err == nil && gv.Group == laxityv1alpha1.GroupVersion.Group && ref.Kind == "IntermittentQuery" && ref.Name == m && ref.UID == uid {
				out = append(out, m)
				break
			}
		}
	}
	return out
}

// OwnMembers makes app, a shared batch, owned by each of its members, none
// of them its controller: the garbage collector deletes it with the last
// member, and deleting any other leaves it running for the rest.
func OwnMembers(app metav1.Object, members []*laxityv1alpha1.IntermittentQuery) {
	refs := make([]metav1.OwnerReference, 0, len(members))
	for _, m := range members {
		refs = append(refs, metav1.OwnerReference{
			APIVersion: laxityv1alpha1.GroupVersion.String(), Kind: "IntermittentQuery", Name: m.Name, UID: m.UID,
		})
	}
	app.SetOwnerReferences(refs)
}

// Own makes obj, the object that stands for step app (app itself, or its
// record), owned as app is meant to be: by q as its controller, or, for a
// shared batch whose members own it (OwnMembers), by each member alike.
func Own(q *laxityv1alpha1.IntermittentQuery, obj, app metav1.Object, scheme *runtime.Scheme) error {
	if len(Members(app)) > 0 && len(app.GetOwnerReferences()) > 0 && metav1.GetControllerOf(app) == nil {
		obj.SetOwnerReferences(app.GetOwnerReferences())
		return nil
	}
	return controllerutil.SetControllerReference(q, obj, scheme)
}

// TakenBy reads the object named name that a create found already there
// into existing and says who has it: "" when it is q's own step (a launch
// made before), else the object's kind, namespace and name.
func TakenBy(ctx context.Context, c client.Reader, q *laxityv1alpha1.IntermittentQuery, existing client.Object, namespace, name string) (string, error) {
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, existing); err != nil {
		return "", fmt.Errorf("reading %s, which is already there: %w", name, err)
	}
	own := map[string]types.UID{q.Name: q.UID}
	if OwnedByQuery(existing, q.Name, own) || len(SharedOwners(existing, own)) > 0 {
		return "", nil
	}
	return fmt.Sprintf("%s %s/%s", kindOf(existing), namespace, name), nil
}

// QueryFinalizers are the runners' finalizers on q: the laxity.dev/ ones,
// as a query carries no other finalizer of laxity's.
func QueryFinalizers(q *laxityv1alpha1.IntermittentQuery) []string {
	var out []string
	for _, f := range q.Finalizers {
		if strings.HasPrefix(f, "laxity.dev/") {
			out = append(out, f)
		}
	}
	return out
}
