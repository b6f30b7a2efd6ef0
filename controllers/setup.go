package controllers

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/emr"
	"github.com/laxity-dev/laxity/internal/pool"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/internal/steprun"
	"github.com/laxity-dev/laxity/internal/steprun/jobrun"
	"github.com/laxity-dev/laxity/internal/steprun/sparkapplication"
)

// The capacityBuffer backend applies a PodTemplate, never read back, and a
// CapacityBuffer, read through the manager's cache (internal/pool).
// +kubebuilder:rbac:groups="",resources=podtemplates,verbs=create;patch
// +kubebuilder:rbac:groups=autoscaling.x-k8s.io,resources=capacitybuffers,verbs=get;list;watch;create;patch

// Setup registers the three reconcilers with the manager, with the pool backends
// built from the manager's clients and the input sources they share.
func Setup(_ context.Context, mgr ctrl.Manager, clk clock.PassiveClock, opts Options, placeholderImage string) error {
	poolOptions, err := pool.NewOptions(mgr.GetConfig(), mgr.GetHTTPClient(), mgr.GetClient(), mgr.GetRESTMapper(), placeholderImage)
	if err != nil {
		return err
	}
	jobRuns := &emr.Clients{}
	backend := func(ctx context.Context, es *laxityv1alpha1.ElasticSchedule) (pool.Backend, error) {
		if b := es.Spec.NodePool.Backend.EMRContainers; b != nil {
			return jobRuns.For(ctx, emr.ConfigFrom(b))
		}
		return pool.New(poolOptions, es)
	}
	// A cluster that runs Spark only through EMR on EKS may have no
	// spark-operator, and a watch of a kind it does not serve would keep the
	// manager from starting.
	_, err = mgr.GetRESTMapper().RESTMapping(sparkapp.GroupVersionKind.GroupKind(), sparkapp.GroupVersionKind.Version)
	switch {
	case meta.IsNoMatchError(err):
		opts.NoSparkApplications = true
		ctrl.Log.Info("The cluster serves no SparkApplications: steps can run only as EMR on EKS job runs", "kind", sparkapp.GroupVersionKind)
	case err != nil:
		return fmt.Errorf("looking up the SparkApplication kind: %w", err)
	}
	sources := &Sources{Reader: mgr.GetAPIReader()}
	runner := StepRunners(mgr.GetClient(), jobRuns)
	tenants := &Tenancy{Client: mgr.GetClient(), Targets: mgr.GetAPIReader(), RESTMapper: mgr.GetRESTMapper(), DefaultServiceAccounts: opts.AllowedServiceAccounts}
	// A query's refusal, found by its schedule's pass, is reported by the
	// query's controller at once.
	wake := make(chan event.TypedGenericEvent[*laxityv1alpha1.IntermittentQuery], 1024)
	refusals := &Refusals{Wake: wake}
	// Long plan searches run in a lane of their own, which wakes the
	// schedule when its search has ended.
	searched := make(chan event.TypedGenericEvent[*laxityv1alpha1.ElasticSchedule], 1024)
	lane := &SearchLane{Workers: opts.LongSearchWorkers, Wake: searched}
	if err := mgr.Add(lane); err != nil {
		return fmt.Errorf("adding the long-search lane: %w", err)
	}
	es := &ElasticScheduleReconciler{
		Client: mgr.GetClient(), Clock: clk, Options: opts, Backend: backend, Sources: sources, Runner: runner,
		Recorder: mgr.GetEventRecorder("laxity"), Tenancy: tenants, Refusals: refusals, LongSearches: lane, searched: searched,
	}
	if err := es.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the ElasticSchedule controller: %w", err)
	}
	iq := &IntermittentQueryReconciler{Client: mgr.GetClient(), Clock: clk, Options: opts, Sources: sources, Runner: runner, Recorder: mgr.GetEventRecorder("laxity"), Refusals: refusals, Woken: wake}
	if err := iq.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the IntermittentQuery controller: %w", err)
	}
	rq := &RecurringQueryReconciler{Client: mgr.GetClient(), Clock: clk, Options: opts, Recorder: mgr.GetEventRecorder("laxity")}
	if err := rq.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the RecurringQuery controller: %w", err)
	}
	return nil
}

// StepRunners is the factory of step runners: given a schedule, the runner
// its spec.nodePool.backend names, talking to the cluster through c and to
// EMR on EKS through jobRuns. It is the one place that knows which runner
// a backend means; a new runner is a package under internal/steprun and a
// line here (and one in stepKinds when its steps are a kind of their own).
// Every runner is given the schedule's job-run runner for the job-run
// records among its steps: they stay job runs after a backend change.
func StepRunners(c client.Client, jobRuns *emr.Clients) func(es *laxityv1alpha1.ElasticSchedule) steprun.Runner {
	return func(es *laxityv1alpha1.ElasticSchedule) steprun.Runner {
		runs := jobrun.New(c, jobRuns, es)
		if es.Spec.NodePool.Backend.EMRContainers != nil {
			return runs
		}
		return sparkapplication.New(c, runs)
	}
}

// stepKinds are the kinds of object steps run as that the cluster serves,
// besides the records every runner may write (steprun.List).
func stepKinds(opts Options) []steprun.Lister {
	if opts.NoSparkApplications {
		return nil
	}
	return []steprun.Lister{sparkapplication.Kind}
}

// listAllSteps lists the objects in namespace that carry labels and may be
// steps, of every kind the cluster serves, split into laxity's own steps
// and the foreign ones (steprun.List).
func listAllSteps(ctx context.Context, c client.Reader, opts Options, namespace string, labels client.MatchingLabels) (owned, foreign []steprun.Step, err error) {
	return steprun.List(ctx, c, stepKinds(opts), namespace, labels)
}

// listSteps lists laxity's own steps in namespace that carry labels.
func listSteps(ctx context.Context, c client.Reader, opts Options, namespace string, labels client.MatchingLabels) ([]steprun.Step, error) {
	owned, _, err := listAllSteps(ctx, c, opts, namespace, labels)
	return owned, err
}

// CacheOptions are the manager's cache settings the controllers rely on:
// the ConfigMaps and Deployments laxity reads are its own, labelled with
// their schedule, so only those are cached rather than every one in the
// cluster.
func CacheOptions() cache.Options {
	ours, err := labels.NewRequirement(LabelSchedule, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant label key
	}
	selector := labels.NewSelector().Add(*ours)
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}:  {Label: selector},
		&appsv1.Deployment{}: {Label: selector},
	}}
}

// ClientOptions make the manager's client read SparkApplications, which it
// handles as unstructured objects, from the cache the controllers' watches
// fill anyway, instead of listing them from the API server on every pass.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{Unstructured: true}}
}

func sparkApplication() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(sparkapp.GroupVersionKind)
	return u
}

// SetupWithManager registers the ElasticSchedule controller: a schedule is
// looked at again when it, one of its queries, one of its SparkApplications,
// its plan, a Node or a TenantPolicy changes.
func (r *ElasticScheduleReconciler) SetupWithManager(mgr ctrl.Manager) error {
	bySchedule := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		name := o.GetLabels()[LabelSchedule]
		if q, ok := o.(*laxityv1alpha1.IntermittentQuery); ok {
			name = q.Spec.ScheduleName
		}
		if name == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
	})
	allSchedules := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list laxityv1alpha1.ElasticScheduleList
		if err := mgr.GetClient().List(ctx, &list); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for _, es := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&es)})
		}
		return out
	})
	b := ctrl.NewControllerManagedBy(mgr).
		For(&laxityv1alpha1.ElasticSchedule{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&corev1.ConfigMap{}).
		Watches(&laxityv1alpha1.IntermittentQuery{}, bySchedule, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Node{}, allSchedules).
		// A grant made or taken back takes effect at once.
		Watches(&laxityv1alpha1.TenantPolicy{}, allSchedules).
		// Who holds a pool is decided again when a schedule on it comes,
		// changes or goes.
		Watches(&laxityv1alpha1.ElasticSchedule{}, samePool(mgr.GetClient()), builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	if !r.Options.NoSparkApplications {
		b = b.Watches(sparkApplication(), bySchedule)
	}
	if r.searched != nil {
		b = b.WatchesRawSource(source.Channel(r.searched, &handler.TypedEnqueueRequestForObject[*laxityv1alpha1.ElasticSchedule]{}))
	}
	return b.Named("elasticschedule").WithOptions(workers(r.Options.ScheduleWorkers)).Complete(r)
}

// SetupWithManager registers the IntermittentQuery controller, woken by the
// query, the SparkApplications and job-run records it owns, and its
// schedule's pass when the query's refusal changes (Woken).
func (r *IntermittentQueryReconciler) SetupWithManager(mgr ctrl.Manager) error {
	// Status writes do not wake the query up again: only spec changes, its
	// SparkApplications, its job-run records and the poll interval do.
	b := ctrl.NewControllerManagedBy(mgr).
		For(&laxityv1alpha1.IntermittentQuery{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&corev1.ConfigMap{}, builder.MatchEveryOwner)
	// Every owner: a shared batch is owned by each of its members, none of
	// them its controller.
	if !r.Options.NoSparkApplications {
		b = b.Owns(sparkApplication(), builder.MatchEveryOwner)
	}
	if r.Woken != nil {
		b = b.WatchesRawSource(source.Channel(r.Woken, &handler.TypedEnqueueRequestForObject[*laxityv1alpha1.IntermittentQuery]{}))
	}
	return b.Named("intermittentquery").WithOptions(workers(r.Options.QueryWorkers)).Complete(r)
}

// workers are the options of a controller that reconciles n objects at
// once. The workqueue never hands the same object to two workers, so each
// reconcile still has its object to itself; what the workers share (the
// decoded plans, Sources, the EMR clients, the metrics) is safe for
// concurrent use.
func workers(n int) controller.Options {
	return controller.Options{MaxConcurrentReconciles: max(n, 1)}
}
