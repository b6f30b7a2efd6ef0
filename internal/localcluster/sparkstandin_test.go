package localcluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/laxity-dev/laxity/internal/sparkapp"
)

func application(spec map[string]any) *unstructured.Unstructured {
	app := sparkapp.New()
	app.SetNamespace("ns")
	app.SetName("q-b0")
	app.SetAnnotations(map[string]string{RunSecondsAnnotation: "30"})
	app.Object["spec"] = spec
	return app
}

func TestPods(t *testing.T) {
	app := application(map[string]any{
		"type":         "Scala",
		"image":        "spark-image",
		"nodeSelector": map[string]any{"zone": "a"},
		"driver":       map[string]any{"cores": int64(1), "memory": "1g", "labels": map[string]any{"laxity.dev/query": "q"}},
		"executor": map[string]any{
			"cores": int64(2), "memory": "4g", "instances": int64(3),
			"nodeSelector": map[string]any{NodePoolLabel: "pool", "zone": "b"},
			"tolerations":  []any{map[string]any{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}},
			"annotations":  map[string]any{"a": "b"},
		},
	})
	s := &SparkStandIn{}
	driver, err := s.pod(context.Background(), app, "driver", 0)
	if err != nil {
		t.Fatal(err)
	}
	if driver.Name != "q-b0-driver" || driver.Labels[SparkRoleLabel] != "driver" || driver.Labels[SparkAppNameLabel] != "q-b0" || driver.Labels["laxity.dev/query"] != "q" {
		t.Errorf("driver pod %s labels %v", driver.Name, driver.Labels)
	}
	if driver.Annotations[RunSecondsAnnotation] != "30" {
		t.Errorf("driver annotations %v, want the application's run time", driver.Annotations)
	}
	if driver.Spec.NodeSelector["zone"] != "a" || driver.Spec.Containers[0].Image != "spark-image" {
		t.Errorf("driver selector %v image %s", driver.Spec.NodeSelector, driver.Spec.Containers[0].Image)
	}
	exec, err := s.pod(context.Background(), app, "executor", 2)
	if err != nil {
		t.Fatal(err)
	}
	req := exec.Spec.Containers[0].Resources.Requests
	if exec.Name != "q-b0-exec-2" || exec.Labels[SparkExecutorIDLabel] != "2" || exec.Annotations[RunSecondsAnnotation] != "" || exec.Annotations["a"] != "b" {
		t.Errorf("executor pod %s labels %v annotations %v", exec.Name, exec.Labels, exec.Annotations)
	}
	if !req.Cpu().Equal(resource.MustParse("2")) || !req.Memory().Equal(resource.MustParse("4505Mi")) {
		t.Errorf("executor requests %v, want 2 CPUs and 4g plus 409Mi overhead", req)
	}
	if exec.Spec.NodeSelector[NodePoolLabel] != "pool" || exec.Spec.NodeSelector["zone"] != "b" {
		t.Errorf("executor selector %v: the role's own keys win over spec.nodeSelector", exec.Spec.NodeSelector)
	}
	if len(exec.Spec.Tolerations) != 1 || exec.Spec.Tolerations[0].Key != "dedicated" || exec.Spec.Tolerations[0].Operator != corev1.TolerationOpExists {
		t.Errorf("executor tolerations %v", exec.Spec.Tolerations)
	}

	s.Duration = func(context.Context, metav1.Object) (time.Duration, error) { return 1500 * time.Millisecond, nil }
	driver, err = s.pod(context.Background(), app, "driver", 0)
	if err != nil || driver.Annotations[RunSecondsAnnotation] != "1.5" {
		t.Errorf("driver run time with Duration: %v, %v; want 1.5", driver.Annotations, err)
	}
	s.Duration = func(context.Context, metav1.Object) (time.Duration, error) { return 0, errors.New("no cost model") }
	if _, err := s.pod(context.Background(), app, "driver", 0); err == nil {
		t.Error("a failing Duration makes a driver")
	}
}

// Whatever a spec holds, pod answers a pod or an invalid-spec error.
func TestPodsOfMalformedSpecs(t *testing.T) {
	for _, spec := range []map[string]any{
		{},
		{"driver": "x", "executor": int64(3)},
		{"driver": map[string]any{"cores": "x"}},
		{"driver": map[string]any{"memory": int64(3)}},
		{"driver": map[string]any{"tolerations": []any{"x"}}},
		{"driver": map[string]any{"tolerations": []any{map[string]any{"tolerationSeconds": "soon"}}}},
		{"driver": map[string]any{"labels": map[string]any{"a": int64(1)}, "nodeSelector": "x"}},
		{"nodeSelector": []any{}, "image": int64(1)},
	} {
		_, err := (&SparkStandIn{}).pod(context.Background(), application(spec), "driver", 0)
		var invalid *invalidSpecError
		if err != nil && !errors.As(err, &invalid) {
			t.Errorf("spec %v: %v, want a pod or an invalid-spec error", spec, err)
		}
	}
}

func TestExecutorCount(t *testing.T) {
	for _, c := range []struct {
		executor any
		want     int64
		ok       bool
	}{
		{nil, defaultExecutors, true},
		{map[string]any{}, defaultExecutors, true},
		{map[string]any{"instances": int64(5)}, 5, true},
		{map[string]any{"instances": float64(4)}, 4, true},
		{map[string]any{"instances": int64(0)}, 0, true},
		{map[string]any{"instances": int64(-1)}, 0, false},
		{map[string]any{"instances": "many"}, 0, false},
		{"not an object", defaultExecutors, true},
	} {
		spec := map[string]any{}
		if c.executor != nil {
			spec["executor"] = c.executor
		}
		got, err := executorCount(application(spec))
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("executorCount of executor %v = %d, %v; want %d (ok %v)", c.executor, got, err, c.want, c.ok)
		}
	}
}

func TestInstanceTypeFor(t *testing.T) {
	for _, tc := range []struct {
		spec map[string]any
		role string
		n    int64
		want string
	}{
		// 3 CPUs and 4506Mi: a c-4x holds one (3900m, 8182Mi allocatable).
		{spec: map[string]any{"executor": map[string]any{"cores": int64(3), "memory": "4g"}}, role: "executor", n: 1, want: "c-4x-amd64-linux"},
		// The three-query sample's executor, 4 CPUs and 13516Mi: 4 CPUs leave 3900m.
		{spec: map[string]any{"executor": map[string]any{"cores": int64(4), "memory": "12g"}}, role: "executor", n: 1, want: "c-8x-amd64-linux"},
		// Two of its drivers, 1 CPU and 2432Mi each: 2 CPUs leave 1900m.
		{spec: map[string]any{"driver": map[string]any{"cores": int64(1), "memory": "2g"}}, role: "driver", n: 2, want: "c-4x-amd64-linux"},
		{spec: map[string]any{"driver": map[string]any{"cores": int64(1), "memory": "1000g"}}, role: "driver", n: 1, want: "m-192x-amd64-linux"},
	} {
		req, err := sparkapp.PodRequests(tc.spec, tc.role)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := InstanceTypeFor(req, tc.n); err != nil || got != tc.want {
			t.Errorf("InstanceTypeFor(%v × %d) = %q, %v; want %s", req, tc.n, got, err, tc.want)
		}
	}
	req, _ := sparkapp.PodRequests(map[string]any{"executor": map[string]any{"cores": int64(300)}}, "executor")
	if _, err := InstanceTypeFor(req, 1); err == nil {
		t.Error("InstanceTypeFor of 300 CPUs found a type")
	}
	if _, err := sparkapp.PodRequests(map[string]any{"executor": map[string]any{"memory": "lots"}}, "executor"); err == nil || !strings.Contains(err.Error(), "spec.executor.memory") {
		t.Errorf("PodRequests of a bad memory: %v, want an error naming spec.executor.memory", err)
	}
}
