package pool

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/test/builder"
)

// bufferSchedule is an ElasticSchedule with a capacityBuffer backend, as
// read from the API server.
func bufferSchedule() *laxityv1alpha1.ElasticSchedule {
	return builder.Schedule("analytics", "tpch").UID("uid-1").Bare().
		Sizes(2, 4).Price("0.25").NodeSelector(map[string]string{"laxity.dev/pool": "tpch"}).
		Backend(builder.CapacityBufferBackend(corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("7"),
			corev1.ResourceMemory: resource.MustParse("28Gi"),
		})).Obj()
}

// servingMapper is a RESTMapper that serves the CapacityBuffer kind.
func servingMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(CapacityBufferKind, meta.RESTScopeNamespace)
	return m
}

// wantBufferPodTemplate is the PodTemplate bufferPodTemplate should build
// for bufferSchedule, written out field by field.
func wantBufferPodTemplate() *corev1.PodTemplate {
	podLabels := map[string]string{"laxity.dev/schedule": "tpch", "laxity.dev/role": "capacity-buffer"}
	return &corev1.PodTemplate{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodTemplate"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      "tpch-capacity-buffer",
			Namespace: "analytics",
			Labels: map[string]string{
				"laxity.dev/schedule":          "tpch",
				"laxity.dev/role":              "capacity-buffer",
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
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{"laxity.dev/pool": "tpch"},
				Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
						LabelSelector: &metav1.LabelSelector{MatchLabels: podLabels},
						TopologyKey:   "kubernetes.io/hostname",
					}},
				}},
				Containers: []corev1.Container{{
					Name:  "buffer",
					Image: "pause:test",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse("7"),
						corev1.ResourceMemory: resource.MustParse("28Gi"),
					}},
				}},
			},
		},
	}
}

func TestBufferPodTemplate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		schedule func(*laxityv1alpha1.ElasticSchedule)
		want     func(*corev1.PodTemplate)
	}{
		{name: "node-sized pod"},
		{
			name:     "no node selector",
			schedule: func(es *laxityv1alpha1.ElasticSchedule) { es.Spec.NodePool.NodeSelector = nil },
			want:     func(pt *corev1.PodTemplate) { pt.Template.Spec.NodeSelector = nil },
		},
		{
			name: "other resources",
			schedule: func(es *laxityv1alpha1.ElasticSchedule) {
				es.Spec.NodePool.Backend.CapacityBuffer.Resources = corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("15500m"),
					"nvidia.com/gpu":   resource.MustParse("1"),
				}
			},
			want: func(pt *corev1.PodTemplate) {
				pt.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("15500m"),
					"nvidia.com/gpu":   resource.MustParse("1"),
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := bufferSchedule()
			if tc.schedule != nil {
				tc.schedule(es)
			}
			want := wantBufferPodTemplate()
			if tc.want != nil {
				tc.want(want)
			}
			before := es.DeepCopy()
			got := typed[corev1.PodTemplate](t, bufferPodTemplate(es, "pause:test"))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("bufferPodTemplate() mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, es); diff != "" {
				t.Errorf("bufferPodTemplate() changed the schedule (-before +after):\n%s", diff)
			}
		})
	}
}

// TestBufferPodTemplateSharesNoMaps checks that the builder copies the
// schedule's resources: changing the built object must not change the
// schedule.
func TestBufferPodTemplateSharesNoMaps(t *testing.T) {
	es := bufferSchedule()
	pt := bufferPodTemplate(es, "pause:test")
	(*pt.Template.Spec.Containers[0].Resources.Requests)[corev1.ResourceCPU] = resource.MustParse("1")
	if got := es.Spec.NodePool.Backend.CapacityBuffer.Resources[corev1.ResourceCPU]; got.String() != "7" {
		t.Errorf("cpu of the schedule = %s after changing the PodTemplate, want 7", got.String())
	}
}

func TestCapacityBufferObject(t *testing.T) {
	const want = `
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata:
  name: tpch-capacity-buffer
  namespace: analytics
  labels: {laxity.dev/schedule: tpch, laxity.dev/role: capacity-buffer, app.kubernetes.io/managed-by: laxity}
  annotations: {laxity.dev/nodes-requested: "4", laxity.dev/nodes-in-use: "1"}
  ownerReferences:
  - {apiVersion: laxity.dev/v1alpha1, kind: ElasticSchedule, name: tpch, uid: uid-1, controller: true, blockOwnerDeletion: true}
spec:
  podTemplateRef: {name: tpch-capacity-buffer}
  replicas: %d
`
	for _, replicas := range []int32{3, 0} {
		got := capacityBuffer(bufferSchedule(), replicas, map[string]string{AnnotationNodesRequested: "4", AnnotationNodesInUse: "1"})
		if diff := cmp.Diff(decodeYAML(t, fmt.Sprintf(want, replicas)), asJSON(t, got.Object)); diff != "" {
			t.Errorf("capacityBuffer(%d) mismatch (-want +got):\n%s", replicas, diff)
		}
	}
}

func decodeYAML(t *testing.T, doc string) any {
	t.Helper()
	var out any
	if err := yaml.Unmarshal([]byte(doc), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// asJSON is v as it is sent: encoded and decoded again.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBufferRequestedAndHolds(t *testing.T) {
	stored := func(replicas any, annotations map[string]string) *unstructured.Unstructured {
		u := capacityBuffer(bufferSchedule(), 0, annotations)
		if replicas == nil {
			unstructured.RemoveNestedField(u.Object, "spec", "replicas")
		} else {
			u.Object["spec"].(map[string]any)["replicas"] = replicas
		}
		return u
	}
	want := map[string]string{AnnotationNodesRequested: "4", AnnotationNodesInUse: "1", annotationPodTemplateHash: "abc"}
	deleting := stored(int64(3), want)
	deleting.SetDeletionTimestamp(ptr.To(metav1.Now()))
	otherTemplate := stored(int64(3), want)
	otherTemplate.Object["spec"].(map[string]any)["podTemplateRef"] = map[string]any{"name": "theirs"}
	for _, tc := range []struct {
		name      string
		cb        *unstructured.Unstructured
		requested int32
		holds     bool
	}{
		{name: "no buffer"},
		{name: "as asked", cb: stored(int64(3), want), requested: 4, holds: true},
		{name: "other replicas", cb: stored(int64(2), want), requested: 3},
		{name: "no replicas", cb: stored(nil, want), requested: 1},
		{name: "replicas not a number", cb: stored("three", want), requested: 1},
		{name: "no annotations, scaled by hand", cb: stored(int64(5), nil), requested: 5},
		{name: "in use not a number", cb: stored(int64(3), map[string]string{AnnotationNodesInUse: "x"}), requested: 3},
		{name: "other template hash", cb: stored(int64(3), map[string]string{AnnotationNodesRequested: "4", AnnotationNodesInUse: "1", annotationPodTemplateHash: "def"}), requested: 4},
		{name: "being deleted", cb: deleting, requested: 4},
		{name: "refers to another template", cb: otherTemplate, requested: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bufferRequested(tc.cb); got != tc.requested {
				t.Errorf("bufferRequested() = %d, want %d", got, tc.requested)
			}
			if got := bufferHolds(tc.cb, 3, want, "tpch-capacity-buffer"); got != tc.holds {
				t.Errorf("bufferHolds() = %v, want %v", got, tc.holds)
			}
		})
	}
}

func TestNewCapacityBuffer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mapper   meta.RESTMapper
		image    string
		schedule func(*laxityv1alpha1.ElasticSchedule)
		// field is what the error starts with; "" expects no error.
		field     string
		invalid   bool
		notServed bool
	}{
		{name: "served", mapper: servingMapper(), image: "pause:test"},
		{
			name:    "no image",
			mapper:  servingMapper(),
			field:   "spec.nodePool.backend.capacityBuffer:",
			invalid: true,
		},
		{
			name:     "no resources",
			mapper:   servingMapper(),
			image:    "pause:test",
			schedule: func(es *laxityv1alpha1.ElasticSchedule) { es.Spec.NodePool.Backend.CapacityBuffer.Resources = nil },
			field:    "spec.nodePool.backend.capacityBuffer.resources:",
			invalid:  true,
		},
		{
			name:     "schedule name too long for a label",
			mapper:   servingMapper(),
			image:    "pause:test",
			schedule: func(es *laxityv1alpha1.ElasticSchedule) { es.Name = strings.Repeat("a", 64) },
			field:    "spec.nodePool.backend.capacityBuffer:",
			invalid:  true,
		},
		{
			name:     "schedule not from the API server",
			mapper:   servingMapper(),
			image:    "pause:test",
			schedule: func(es *laxityv1alpha1.ElasticSchedule) { es.UID = "" },
			field:    "spec.nodePool.backend.capacityBuffer:",
		},
		{
			name:      "kind not served",
			mapper:    meta.NewDefaultRESTMapper(nil),
			image:     "pause:test",
			field:     "spec.nodePool.backend.capacityBuffer:",
			invalid:   true,
			notServed: true,
		},
		{
			name:  "no RESTMapper",
			image: "pause:test",
			field: "spec.nodePool.backend.capacityBuffer:",
		},
		{
			name:   "mapping fails",
			mapper: failingMapper{},
			image:  "pause:test",
			field:  "spec.nodePool.backend.capacityBuffer:",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := bufferSchedule()
			if tc.schedule != nil {
				tc.schedule(es)
			}
			b, err := New(Options{RESTMapper: tc.mapper, PlaceholderImage: tc.image}, es)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("New() error = %v", err)
				}
				if _, ok := b.(Sharer); !ok {
					t.Errorf("New() = %T, want a Sharer", b)
				}
				if _, ok := b.(Releaser); !ok {
					t.Errorf("New() = %T, want a Releaser", b)
				}
				return
			}
			if err == nil {
				t.Fatal("New() succeeded, want an error")
			}
			if !strings.HasPrefix(err.Error(), tc.field) {
				t.Errorf("New() error = %q, want it to start with %q", err, tc.field)
			}
			if got := errors.Is(err, ErrInvalidBackend); got != tc.invalid {
				t.Errorf("errors.Is(New() error, ErrInvalidBackend) = %v, want %v (error: %v)", got, tc.invalid, err)
			}
			if got := errors.Is(err, ErrKindNotServed); got != tc.notServed {
				t.Errorf("errors.Is(New() error, ErrKindNotServed) = %v, want %v (error: %v)", got, tc.notServed, err)
			}
			if tc.notServed && !strings.Contains(err.Error(), "CapacityBuffer feature gate") {
				t.Errorf("New() error = %q, want it to name Karpenter's feature gate", err)
			}
		})
	}
}

// failingMapper fails every lookup as an unreachable API server would.
type failingMapper struct{ meta.RESTMapper }

func (failingMapper) RESTMapping(schema.GroupKind, ...string) (*meta.RESTMapping, error) {
	return nil, errors.New("connection refused")
}
