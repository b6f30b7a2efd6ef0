package localcluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/laxity-dev/laxity/internal/sparkapp"
)

// Labels the stand-in puts on the pods of an application, as spark-operator
// and Spark do on theirs.
const (
	// SparkAppNameLabel names the SparkApplication of a pod.
	SparkAppNameLabel = "sparkoperator.k8s.io/app-name"
	// SparkRoleLabel is "driver" or "executor".
	SparkRoleLabel = "spark-role"
	// SparkLaunchedByLabel marks the pods of an application.
	SparkLaunchedByLabel = "sparkoperator.k8s.io/launched-by-spark-operator"
	// SparkExecutorIDLabel numbers an executor from 1.
	SparkExecutorIDLabel = "spark-exec-id"
)

// defaultExecutors is Spark's spark.executor.instances default, for an
// application that does not say.
const defaultExecutors = 2

// SparkStandIn stands in for spark-operator (and for Spark itself) on the
// local cluster, so that laxity's SparkApplications make real pods that
// kube-scheduler places and Karpenter provisions for. It is a simulation:
// no Spark runs. For each SparkApplication it
//
//   - creates the driver pod <name>-driver and writes SUBMITTED, with
//     lastSubmissionAttemptTime and driverInfo.podName;
//   - once KWOK runs the driver, creates spec.executor.instances executor
//     pods <name>-exec-<n> and writes RUNNING;
//   - once KWOK ends the driver (its run time, see RunSecondsAnnotation),
//     deletes the executors and writes COMPLETED with terminationTime (or
//     FAILED when the driver failed or vanished).
//
// These are the status fields internal/standin.Spark writes, so laxity
// reads both alike (internal/sparkapp.Observe). A spec the stand-in cannot
// turn into pods (a malformed memory size, say) ends SUBMISSION_FAILED with
// the reason, as a spark-submit that fails does.
//
// Each pod asks for the template's cores (coreRequest when set) and memory
// plus Spark's memory overhead (memoryOverhead, else the larger of 384 MiB
// and 10% of the memory, 40% for Python and R), carries the template's
// labels, annotations, tolerations and node selectors (spec.nodeSelector
// under the role's own), and is owned as Spark's are: the driver by the
// SparkApplication, the executors by the driver.
type SparkStandIn struct {
	// Client reads and writes the cluster.
	Client client.Client
	// Scheme resolves owner references; the cluster's Scheme.
	Scheme *runtime.Scheme
	// Duration is how long an application's driver runs once started.
	// When nil, the application's own RunSecondsAnnotation is copied to
	// the driver; an application with neither runs until deleted.
	Duration func(ctx context.Context, app metav1.Object) (time.Duration, error)
	// Image is the pods' image when the spec names none.
	Image string
	// Now is the clock of the status timestamps; nil is the wall clock.
	Now func() time.Time
}

// StartSparkStandIn runs standIn against the cluster (setting its Client
// and Scheme when unset) until the returned stop is called. The cluster
// has the SparkApplication CRD: Start installs it.
func (c *Cluster) StartSparkStandIn(standIn *SparkStandIn) (stop func(), err error) {
	if standIn.Client == nil {
		standIn.Client = c.Client
	}
	if standIn.Scheme == nil {
		standIn.Scheme = c.Scheme
	}
	mgr, err := ctrl.NewManager(c.Config, ctrl.Options{
		Scheme: c.Scheme,
		// Nothing scrapes or probes the stand-in.
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// A suite may start a stand-in per spec in one process.
		Controller: config.Controller{SkipNameValidation: new(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("making the Spark stand-in's manager: %w", err)
	}
	if err := standIn.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			ctrl.Log.Error(err, "the Spark stand-in stopped")
		}
	}()
	return func() { cancel(); <-done }, nil
}

// SetupWithManager makes the stand-in a controller of SparkApplications,
// woken by their driver pods too.
func (s *SparkStandIn) SetupWithManager(mgr ctrl.Manager) error {
	driverOf := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if o.GetLabels()[SparkRoleLabel] != "driver" || o.GetLabels()[SparkAppNameLabel] == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetLabels()[SparkAppNameLabel]}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("spark-stand-in").
		For(sparkapp.New()).
		Watches(&corev1.Pod{}, driverOf).
		Complete(s)
}

// Reconcile moves one SparkApplication on from where its driver pod is.
func (s *SparkStandIn) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	app := sparkapp.New()
	if err := s.Client.Get(ctx, req.NamespacedName, app); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !app.GetDeletionTimestamp().IsZero() {
		return reconcile.Result{}, nil
	}
	state, _, _ := unstructured.NestedString(app.Object, "status", "applicationState", "state")
	switch state {
	case sparkapp.StateNew:
		return reconcile.Result{}, s.submit(ctx, app)
	case sparkapp.StateSubmitted, sparkapp.StateRunning:
		return reconcile.Result{}, s.follow(ctx, app, state)
	default:
		// COMPLETED, FAILED, SUBMISSION_FAILED are final for the stand-in.
		return reconcile.Result{}, nil
	}
}

func (s *SparkStandIn) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// submit creates the driver pod and writes SUBMITTED, or SUBMISSION_FAILED
// when the spec cannot make one.
func (s *SparkStandIn) submit(ctx context.Context, app *unstructured.Unstructured) error {
	now := s.now()
	_ = unstructured.SetNestedField(app.Object, stamp(now), "status", "lastSubmissionAttemptTime")
	// The CRD requires driverInfo, also of a submission that made no driver.
	if _, found, _ := unstructured.NestedFieldNoCopy(app.Object, "status", "driverInfo"); !found {
		_ = unstructured.SetNestedMap(app.Object, map[string]any{}, "status", "driverInfo")
	}
	// Like spark-submit, check the executors' settings before launching
	// the driver, so that a bad spec starts nothing.
	_, err := executorCount(app)
	if err == nil {
		_, err = s.pod(ctx, app, "executor", 1)
	}
	var driver *corev1.Pod
	if err == nil {
		driver, err = s.pod(ctx, app, "driver", 0)
	}
	if err == nil {
		err = controllerutil.SetControllerReference(app, driver, s.Scheme)
	}
	var invalid *invalidSpecError
	switch {
	case errors.As(err, &invalid):
		setState(app, sparkapp.StateSubmissionFailed, invalid.Error())
		_ = unstructured.SetNestedField(app.Object, stamp(now), "status", "terminationTime")
		return s.writeStatus(ctx, app)
	case err != nil:
		return err
	}
	if err := s.Client.Create(ctx, driver); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the driver pod of SparkApplication %s: %w", app.GetName(), err)
	}
	setState(app, sparkapp.StateSubmitted, "")
	_ = unstructured.SetNestedField(app.Object, driver.Name, "status", "driverInfo", "podName")
	return s.writeStatus(ctx, app)
}

// follow moves a submitted or running application along its driver pod.
func (s *SparkStandIn) follow(ctx context.Context, app *unstructured.Unstructured, state string) error {
	driver := &corev1.Pod{}
	err := s.Client.Get(ctx, client.ObjectKey{Namespace: app.GetNamespace(), Name: app.GetName() + "-driver"}, driver)
	switch {
	case apierrors.IsNotFound(err):
		return s.end(ctx, app, nil, sparkapp.StateFailed, "the driver pod was deleted")
	case err != nil:
		return err
	}
	switch driver.Status.Phase {
	case corev1.PodSucceeded:
		return s.end(ctx, app, driver, sparkapp.StateCompleted, "")
	case corev1.PodFailed:
		return s.end(ctx, app, driver, sparkapp.StateFailed, "the driver pod failed: "+driver.Status.Message)
	case corev1.PodRunning:
		if state == sparkapp.StateRunning {
			return nil
		}
		var invalid *invalidSpecError
		if err := s.startExecutors(ctx, app, driver); errors.As(err, &invalid) {
			return s.end(ctx, app, nil, sparkapp.StateFailed, invalid.Error())
		} else if err != nil {
			return err
		}
		setState(app, sparkapp.StateRunning, "")
		return s.writeStatus(ctx, app)
	default:
		return nil
	}
}

// startExecutors creates the executor pods the driver would ask for; an
// *invalidSpecError says the spec cannot make them.
func (s *SparkStandIn) startExecutors(ctx context.Context, app *unstructured.Unstructured, driver *corev1.Pod) error {
	instances, err := executorCount(app)
	if err != nil {
		return err
	}
	for i := int64(1); i <= instances; i++ {
		pod, err := s.pod(ctx, app, "executor", i)
		if err != nil {
			return err
		}
		if err := controllerutil.SetControllerReference(driver, pod, s.Scheme); err != nil {
			return err
		}
		if err := s.Client.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating executor %d of SparkApplication %s: %w", i, app.GetName(), err)
		}
	}
	return nil
}

// executorCount is spec.executor.instances, Spark's default when unset.
func executorCount(app *unstructured.Unstructured) (int64, error) {
	n, found, err := unstructured.NestedFieldNoCopy(app.Object, "spec", "executor", "instances")
	if err != nil || !found || n == nil {
		return defaultExecutors, nil
	}
	v, ok := sparkapp.WholeNumber(n)
	if !ok || v < 0 {
		return 0, invalidf("spec.executor.instances %v is not a count", n)
	}
	return v, nil
}

// end deletes the executors and writes a final state; the termination time
// is when the driver's container ended, when it says.
func (s *SparkStandIn) end(ctx context.Context, app *unstructured.Unstructured, driver *corev1.Pod, state, message string) error {
	if err := s.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(app.GetNamespace()),
		client.MatchingLabels{SparkAppNameLabel: app.GetName(), SparkRoleLabel: "executor"}); err != nil {
		return fmt.Errorf("deleting the executors of SparkApplication %s: %w", app.GetName(), err)
	}
	ended := s.now()
	if driver != nil {
		for _, cs := range driver.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil && !t.FinishedAt.IsZero() {
				ended = t.FinishedAt.Time
			}
		}
	}
	setState(app, state, message)
	_ = unstructured.SetNestedField(app.Object, stamp(ended), "status", "terminationTime")
	return s.writeStatus(ctx, app)
}

func (s *SparkStandIn) writeStatus(ctx context.Context, app *unstructured.Unstructured) error {
	err := s.Client.Status().Update(ctx, app)
	if apierrors.IsConflict(err) {
		// Read stale: the update that moved it wakes the stand-in again.
		return nil
	}
	if err != nil {
		return fmt.Errorf("writing the status of SparkApplication %s: %w", app.GetName(), err)
	}
	return nil
}

func setState(app *unstructured.Unstructured, state, message string) {
	_ = unstructured.SetNestedField(app.Object, state, "status", "applicationState", "state")
	if message != "" {
		_ = unstructured.SetNestedField(app.Object, message, "status", "applicationState", "errorMessage")
	}
}

// invalidSpecError is a SparkApplication spec the stand-in cannot turn into
// pods.
type invalidSpecError struct{ msg string }

func (e *invalidSpecError) Error() string { return e.msg }

func invalidf(format string, args ...any) error {
	return &invalidSpecError{msg: fmt.Sprintf(format, args...)}
}

// pod is the driver pod (role "driver") or executor n (role "executor") of
// app, built from the spec as Spark would.
func (s *SparkStandIn) pod(ctx context.Context, app *unstructured.Unstructured, role string, n int64) (*corev1.Pod, error) {
	spec, _, _ := unstructured.NestedMap(app.Object, "spec")
	roleSpec, _, _ := unstructured.NestedMap(app.Object, "spec", role)
	requests, err := sparkapp.PodRequests(spec, role)
	if err != nil {
		return nil, invalidf("%v", err)
	}
	labels := map[string]string{}
	maps.Copy(labels, stringMap(roleSpec, "labels"))
	labels[SparkAppNameLabel] = app.GetName()
	labels[SparkRoleLabel] = role
	labels[SparkLaunchedByLabel] = "true"
	annotations := map[string]string{}
	maps.Copy(annotations, stringMap(roleSpec, "annotations"))
	selector := map[string]string{}
	maps.Copy(selector, stringMap(spec, "nodeSelector"))
	maps.Copy(selector, stringMap(roleSpec, "nodeSelector"))
	tolerations, err := tolerationsOf(roleSpec, "spec."+role)
	if err != nil {
		return nil, err
	}
	image := str(roleSpec, "image")
	if image == "" {
		image = str(spec, "image")
	}
	if image == "" {
		image = s.Image
	}
	if image == "" {
		image = "stand-in"
	}

	name := app.GetName() + "-driver"
	container := "spark-kubernetes-driver"
	if role == "executor" {
		name = fmt.Sprintf("%s-exec-%d", app.GetName(), n)
		container = "spark-kubernetes-executor"
		labels[SparkExecutorIDLabel] = strconv.FormatInt(n, 10)
	} else {
		run, err := s.runSeconds(ctx, app)
		if err != nil {
			return nil, err
		}
		if run != "" {
			annotations[RunSecondsAnnotation] = run
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: app.GetNamespace(), Name: name, Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			NodeSelector:  selector,
			Tolerations:   tolerations,
			Containers: []corev1.Container{{
				Name:      container,
				Image:     image,
				Resources: corev1.ResourceRequirements{Requests: requests},
			}},
		},
	}, nil
}

// runSeconds is the driver's RunSecondsAnnotation: from Duration when set,
// else the application's own.
func (s *SparkStandIn) runSeconds(ctx context.Context, app *unstructured.Unstructured) (string, error) {
	if s.Duration == nil {
		return app.GetAnnotations()[RunSecondsAnnotation], nil
	}
	d, err := s.Duration(ctx, app)
	if err != nil {
		return "", invalidf("the run time of SparkApplication %s: %v", app.GetName(), err)
	}
	return strconv.FormatFloat(max(d, 0).Seconds(), 'f', -1, 64), nil
}

func tolerationsOf(roleSpec map[string]any, field string) ([]corev1.Toleration, error) {
	raw, ok := roleSpec["tolerations"].([]any)
	if !ok {
		return nil, nil
	}
	out := make([]corev1.Toleration, 0, len(raw))
	for i, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			return nil, invalidf("%s.tolerations[%d] is not an object", field, i)
		}
		var t corev1.Toleration
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &t); err != nil {
			return nil, invalidf("%s.tolerations[%d]: %v", field, i, err)
		}
		out = append(out, t)
	}
	return out, nil
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func stringMap(m map[string]any, key string) map[string]string {
	raw, _ := m[key].(map[string]any)
	out := map[string]string{}
	for k, v := range raw {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}
