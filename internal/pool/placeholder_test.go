package pool

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/test/builder"
)

// placeholderSchedule is an ElasticSchedule with a placeholder backend, as
// read from the API server.
func placeholderSchedule() *laxityv1alpha1.ElasticSchedule {
	return builder.Schedule("analytics", "tpch").UID("uid-1").Bare().
		Sizes(2, 4).Price("0.25").NodeSelector(map[string]string{"laxity.dev/pool": "tpch"}).
		Backend(builder.PlaceholderBackend(corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("7"),
			corev1.ResourceMemory: resource.MustParse("28Gi"),
		})).Obj()
}

// wantPlaceholderDeployment is the Deployment placeholderDeployment should
// build for placeholderSchedule, written out field by field.
func wantPlaceholderDeployment() *appsv1.Deployment {
	podLabels := map[string]string{"laxity.dev/schedule": "tpch", "laxity.dev/role": "placeholder"}
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("7"),
		corev1.ResourceMemory: resource.MustParse("28Gi"),
	}
	return &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      "tpch-placeholder",
			Namespace: "analytics",
			Labels: map[string]string{
				"laxity.dev/schedule":          "tpch",
				"laxity.dev/role":              "placeholder",
				"app.kubernetes.io/managed-by": "laxity",
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         "laxity.dev/v1alpha1",
				Kind:               "ElasticSchedule",
				Name:               "tpch",
				UID:                "uid-1",
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					PriorityClassName: "laxity-placeholder",
					NodeSelector:      map[string]string{"laxity.dev/pool": "tpch"},
					Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
							LabelSelector: &metav1.LabelSelector{MatchLabels: podLabels},
							TopologyKey:   "kubernetes.io/hostname",
						}},
					}},
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					AutomountServiceAccountToken:  ptr.To(false),
					EnableServiceLinks:            ptr.To(false),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To[int64](65535),
						RunAsGroup:     ptr.To[int64](65535),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:      "pause",
						Image:     "pause:test",
						Resources: corev1.ResourceRequirements{Requests: resources, Limits: resources},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
				},
			},
		},
	}
}

// typed decodes an apply configuration into the typed object it describes,
// which is also what is sent to the API server.
func typed[T any](t *testing.T, applyConfiguration any) *T {
	t.Helper()
	data, err := json.Marshal(applyConfiguration)
	if err != nil {
		t.Fatalf("encoding the apply configuration: %v", err)
	}
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatalf("decoding the apply configuration: %v", err)
	}
	return out
}

func TestPlaceholderDeployment(t *testing.T) {
	for _, tc := range []struct {
		name     string
		schedule func(*laxityv1alpha1.ElasticSchedule)
		replicas int32
		want     func(*appsv1.Deployment)
	}{
		{
			name:     "two nodes",
			replicas: 2,
		},
		{
			name:     "zero nodes keeps an explicit zero",
			replicas: 0,
			want:     func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](0) },
		},
		{
			name:     "named priority class",
			replicas: 2,
			schedule: func(es *laxityv1alpha1.ElasticSchedule) {
				es.Spec.NodePool.Backend.Placeholder.PriorityClassName = "team-low"
			},
			want: func(d *appsv1.Deployment) { d.Spec.Template.Spec.PriorityClassName = "team-low" },
		},
		{
			name:     "no node selector",
			replicas: 2,
			schedule: func(es *laxityv1alpha1.ElasticSchedule) { es.Spec.NodePool.NodeSelector = nil },
			want:     func(d *appsv1.Deployment) { d.Spec.Template.Spec.NodeSelector = nil },
		},
		{
			name:     "other resources",
			replicas: 2,
			schedule: func(es *laxityv1alpha1.ElasticSchedule) {
				es.Spec.NodePool.Backend.Placeholder.Resources = corev1.ResourceList{
					corev1.ResourceCPU:              resource.MustParse("15500m"),
					"nvidia.com/gpu":                resource.MustParse("1"),
					corev1.ResourceMemory:           resource.MustParse("60Gi"),
					corev1.ResourceStorage:          resource.MustParse("0"),
					corev1.ResourceEphemeralStorage: resource.MustParse("10Gi"),
				}
			},
			want: func(d *appsv1.Deployment) {
				r := corev1.ResourceList{
					corev1.ResourceCPU:              resource.MustParse("15500m"),
					"nvidia.com/gpu":                resource.MustParse("1"),
					corev1.ResourceMemory:           resource.MustParse("60Gi"),
					corev1.ResourceStorage:          resource.MustParse("0"),
					corev1.ResourceEphemeralStorage: resource.MustParse("10Gi"),
				}
				d.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: r, Limits: r}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := placeholderSchedule()
			if tc.schedule != nil {
				tc.schedule(es)
			}
			want := wantPlaceholderDeployment()
			want.Spec.Replicas = ptr.To(tc.replicas)
			if tc.want != nil {
				tc.want(want)
			}
			before := es.DeepCopy()
			got := typed[appsv1.Deployment](t, placeholderDeployment(es, "pause:test", tc.replicas))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("placeholderDeployment() mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, es); diff != "" {
				t.Errorf("placeholderDeployment() changed the schedule (-before +after):\n%s", diff)
			}
		})
	}
}

// TestPlaceholderDeploymentSharesNoMaps checks that the builder copies the
// schedule's maps: changing the built object must not change the schedule.
func TestPlaceholderDeploymentSharesNoMaps(t *testing.T) {
	es := placeholderSchedule()
	d := placeholderDeployment(es, "pause:test", 1)
	d.Spec.Template.Spec.NodeSelector["laxity.dev/pool"] = "changed"
	(*d.Spec.Template.Spec.Containers[0].Resources.Requests)[corev1.ResourceCPU] = resource.MustParse("1")
	if got := es.Spec.NodePool.NodeSelector["laxity.dev/pool"]; got != "tpch" {
		t.Errorf("nodeSelector of the schedule = %q after changing the Deployment, want tpch", got)
	}
	if got := es.Spec.NodePool.Backend.Placeholder.Resources[corev1.ResourceCPU]; got.String() != "7" {
		t.Errorf("cpu of the schedule = %s after changing the Deployment, want 7", got.String())
	}
}

func TestPlaceholderPriorityClass(t *testing.T) {
	for _, name := range []string{DefaultPriorityClassName} {
		t.Run(name, func(t *testing.T) {
			never := corev1.PreemptNever
			want := &schedulingv1.PriorityClass{
				TypeMeta: metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass"},
				ObjectMeta: metav1.ObjectMeta{
					Name:   name,
					Labels: map[string]string{"app.kubernetes.io/managed-by": "laxity"},
				},
				Value:            -10,
				GlobalDefault:    false,
				Description:      placeholderPriorityDescription,
				PreemptionPolicy: &never,
			}
			pc := placeholderPriorityClass(name)
			if diff := cmp.Diff(want, typed[schedulingv1.PriorityClass](t, pc)); diff != "" {
				t.Errorf("placeholderPriorityClass() mismatch (-want +got):\n%s", diff)
			}
			// globalDefault: false is sent explicitly, so that laxity's
			// class is never made the cluster's default by a later apply.
			if pc.GlobalDefault == nil || *pc.GlobalDefault {
				t.Errorf("globalDefault = %v, want an explicit false", pc.GlobalDefault)
			}
		})
	}
}

func TestNewPlaceholderErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		image    string
		schedule func(*laxityv1alpha1.ElasticSchedule)
		field    string
		invalid  bool
	}{
		{
			name:    "no image",
			field:   "spec.nodePool.backend.placeholder:",
			invalid: true,
		},
		{
			name:     "no resources",
			image:    "pause:test",
			schedule: func(es *laxityv1alpha1.ElasticSchedule) { es.Spec.NodePool.Backend.Placeholder.Resources = nil },
			field:    "spec.nodePool.backend.placeholder.resources:",
			invalid:  true,
		},
		{
			name:     "schedule name too long for a label",
			image:    "pause:test",
			schedule: func(es *laxityv1alpha1.ElasticSchedule) { es.Name = strings.Repeat("a", 64) },
			field:    "spec.nodePool.backend.placeholder:",
			invalid:  true,
		},
		{
			name:     "schedule not from the API server",
			image:    "pause:test",
			schedule: func(es *laxityv1alpha1.ElasticSchedule) { es.UID = "" },
			field:    "spec.nodePool.backend.placeholder:",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := placeholderSchedule()
			if tc.schedule != nil {
				tc.schedule(es)
			}
			_, err := New(Options{PlaceholderImage: tc.image}, es)
			if err == nil {
				t.Fatal("New() succeeded, want an error")
			}
			if !strings.HasPrefix(err.Error(), tc.field) {
				t.Errorf("New() error = %q, want it to start with %q", err, tc.field)
			}
			if got := errors.Is(err, ErrInvalidBackend); got != tc.invalid {
				t.Errorf("errors.Is(New() error, ErrInvalidBackend) = %v, want %v (error: %v)", got, tc.invalid, err)
			}
		})
	}
}

func TestNewWithoutBackend(t *testing.T) {
	es := placeholderSchedule()
	es.Spec.NodePool.Backend = laxityv1alpha1.PoolBackend{}
	_, err := New(Options{}, es)
	if !errors.Is(err, ErrInvalidBackend) || !strings.HasPrefix(err.Error(), "spec.nodePool.backend:") {
		t.Errorf("New() error = %v, want ErrInvalidBackend naming spec.nodePool.backend", err)
	}

	es.Spec.NodePool.Backend = laxityv1alpha1.PoolBackend{EMRContainers: &laxityv1alpha1.EMRContainersBackend{}}
	_, err = New(Options{}, es)
	if !errors.Is(err, errors.ErrUnsupported) || !strings.HasPrefix(err.Error(), "spec.nodePool.backend.emrContainers:") {
		t.Errorf("New() error = %v, want ErrUnsupported naming spec.nodePool.backend.emrContainers", err)
	}
}

func TestNodeReady(t *testing.T) {
	for _, tc := range []struct {
		name       string
		conditions []corev1.NodeCondition
		want       bool
	}{
		{name: "no conditions"},
		{name: "ready", conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}, want: true},
		{name: "not ready", conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}},
		{name: "unknown", conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}},
		{
			name: "ready among others",
			conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
			},
			want: true,
		},
		{name: "only other conditions true", conditions: []corev1.NodeCondition{{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &corev1.Node{Status: corev1.NodeStatus{Conditions: tc.conditions}}
			if got := nodeReady(n); got != tc.want {
				t.Errorf("nodeReady() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPinnedVersion(t *testing.T) {
	// The mapper answers with whatever version it is asked for; pinning must
	// fill in the named version and keep an explicit one.
	m := echoMapper{}
	p := pinnedVersion{mapper: m, version: "v1beta1"}
	gr := "machinedeployments.cluster.x-k8s.io"
	for _, tc := range []struct {
		in, want string
	}{
		{in: "", want: "v1beta1"},
		{in: "v1beta2", want: "v1beta2"},
	} {
		in := schemaGVR(gr, tc.in)
		got, err := p.ResourceFor(in)
		if err != nil {
			t.Fatalf("ResourceFor(%v) error: %v", in, err)
		}
		if got.Version != tc.want {
			t.Errorf("ResourceFor(%v) version = %q, want %q", in, got.Version, tc.want)
		}
	}
}

// echoMapper is a RESTMapper whose ResourceFor returns its input; its other
// methods are not used.
type echoMapper struct{ meta.RESTMapper }

func (echoMapper) ResourceFor(in schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	return in, nil
}

// schemaGVR parses "resource.group" and adds version.
func schemaGVR(groupResource, version string) schema.GroupVersionResource {
	return schema.ParseGroupResource(groupResource).WithVersion(version)
}
