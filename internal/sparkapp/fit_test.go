package sparkapp

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/laxity-dev/laxity/test/builder"
)

// node is a node's allocatable CPU and memory ("" leaves it out).
func node(cpu, memory string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		l[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return l
}

func TestExecutorFit(t *testing.T) {
	// executor asks for 2 CPUs and 4g + 409Mi of overhead (4505Mi).
	const scala = `{"type": "Scala", "driver": {}, "executor": {"cores": 2, "memory": "4g"}}`
	for _, tc := range []struct {
		name     string
		template string
		perNode  int32
		nodes    []corev1.ResourceList
		// field is the FitError's field, "" for none; words are in its
		// message. unknown wants ErrFitUnknown.
		field   string
		words   []string
		unknown bool
	}{
		{name: "no ready node tells nothing", template: scala, perNode: 1, unknown: true},
		{name: "nodes without allocatable tell nothing", template: scala, perNode: 1, nodes: []corev1.ResourceList{{}, node("8", "")}, unknown: true},
		{name: "fits exactly", template: scala, perNode: 1, nodes: []corev1.ResourceList{node("2", "4505Mi")}},
		{name: "fits on a larger node", template: scala, perNode: 1, nodes: []corev1.ResourceList{node("16", "64Gi")}},
		{name: "one node of several is enough", template: scala, perNode: 1, nodes: []corev1.ResourceList{node("1", "2Gi"), node("4", "8Gi")}},
		{name: "two per node fit", template: scala, perNode: 2, nodes: []corev1.ResourceList{node("4", "9012Mi")}},
		{name: "a template that does not decode is the launch's to report", template: `{"executor": `, perNode: 1, nodes: []corev1.ResourceList{node("1", "1Gi")}, unknown: true},
		{name: "malformed cores are the launch's to report", template: `{"executor": {"cores": "two"}}`, perNode: 1, nodes: []corev1.ResourceList{node("1", "1Gi")}, unknown: true},
		{
			name: "too many cores", template: scala, perNode: 1, nodes: []corev1.ResourceList{node("1900m", "16Gi")},
			field: "spec.sparkApplication.executor.cores", words: []string{"asks for 2 CPU", "has 1900m allocatable", "ready node (laxity.dev/pool=tpch)"},
		},
		{
			name: "too large a coreRequest", template: `{"executor": {"cores": 1, "coreRequest": "2500m"}}`, perNode: 1, nodes: []corev1.ResourceList{node("2", "16Gi"), node("1", "16Gi")},
			field: "spec.sparkApplication.executor.coreRequest", words: []string{"asks for 2500m CPU", "largest node of the pool's 2 ready nodes", "has 2 allocatable"},
		},
		{
			name: "too much memory", template: scala, perNode: 1, nodes: []corev1.ResourceList{node("8", "4Gi")},
			field: "spec.sparkApplication.executor.memory", words: []string{"4505Mi memory", "memory 4g plus Spark's memory overhead", "has 4Gi allocatable"},
		},
		{
			name: "Python's larger overhead does not fit", template: `{"type": "Python", "executor": {"memory": "2g"}}`, perNode: 1, nodes: []corev1.ResourceList{node("8", "2560Mi")},
			field: "spec.sparkApplication.executor.memory", words: []string{"2867Mi"},
		},
		{
			name: "an explicit memoryOverhead is named", template: `{"executor": {"memory": "2g", "memoryOverhead": "3g"}}`, perNode: 1, nodes: []corev1.ResourceList{node("8", "4Gi")},
			field: "spec.sparkApplication.executor.memory", words: []string{"5Gi memory", "memory 2g plus memoryOverhead 3g"},
		},
		{
			name: "the default executor does not fit a tiny node", template: `{"executor": {}}`, perNode: 1, nodes: []corev1.ResourceList{node("4", "1Gi")},
			field: "spec.sparkApplication.executor.memory", words: []string{"1408Mi", "Spark's default 1g"},
		},
		{
			name: "one fits but not executorsPerNode", template: scala, perNode: 2, nodes: []corev1.ResourceList{node("3", "16Gi")},
			field: "spec.nodePool.executorsPerNode", words: []string{"ElasticSchedule tpch asks for 2 executors per node", "holds more than 3 CPU and 16Gi memory"},
		},
		{
			name: "CPU on one node, memory on another", template: scala, perNode: 1, nodes: []corev1.ResourceList{node("8", "1Gi"), node("1", "16Gi")},
			field: "spec.sparkApplication.executor", words: []string{"none has both"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := query(tc.template)
			es := builder.Schedule("analytics", "tpch").Bare().Sizes(2).ExecutorsPerNode(tc.perNode).
				NodeSelector(map[string]string{"laxity.dev/pool": "tpch"}).Obj()
			err := ExecutorFit(q, es, tc.nodes)
			if tc.unknown {
				if !errors.Is(err, ErrFitUnknown) {
					t.Fatalf("ExecutorFit = %v, want ErrFitUnknown", err)
				}
				return
			}
			if tc.field == "" {
				if err != nil {
					t.Fatalf("ExecutorFit = %v, want nil", err)
				}
				return
			}
			var fe *FitError
			if !errors.As(err, &fe) {
				t.Fatalf("ExecutorFit = %v, want a *FitError", err)
			}
			if fe.Field != tc.field || fe.Namespace != "analytics" || fe.Name != "q1" {
				t.Errorf("FitError names %s/%s %s, want analytics/q1 %s", fe.Namespace, fe.Name, fe.Field, tc.field)
			}
			for _, w := range tc.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestExecutorFitWithoutTemplate(t *testing.T) {
	if err := ExecutorFit(query(""), schedule(), []corev1.ResourceList{node("1", "1Gi")}); !errors.Is(err, ErrFitUnknown) {
		t.Errorf("ExecutorFit of a query without a template = %v, want ErrFitUnknown (the launch reports it)", err)
	}
	if err := ExecutorFit(nil, nil, nil); !errors.Is(err, ErrFitUnknown) {
		t.Errorf("ExecutorFit(nil) = %v, want ErrFitUnknown", err)
	}
}
