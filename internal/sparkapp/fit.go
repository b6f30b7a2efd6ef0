package sparkapp

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/inf.v0"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/laxity-dev/laxity/api/v1alpha1"
)

// FitError is a query whose executors no ready node of its pool can hold:
// the scheduler would leave them Pending, and the step would wait for
// nodes that never come.
type FitError struct {
	// Namespace and Name are the IntermittentQuery's.
	Namespace, Name string
	// Field is what to change: a field of the query's template, such as
	// spec.sparkApplication.executor.cores, or the schedule's
	// spec.nodePool.executorsPerNode.
	Field string
	// Problem says what the executor asks and what the nodes have.
	Problem string
}

func (e *FitError) Error() string {
	return fmt.Sprintf("IntermittentQuery %s/%s: %s: %s", e.Namespace, e.Name, e.Field, e.Problem)
}

// ErrFitUnknown is ExecutorFit's answer when nothing tells whether the
// executors fit: no ready node reports its allocatable CPU and memory, or
// the template cannot be read (the launch reports that).
var ErrFitUnknown = errors.New("whether the executors fit the pool's nodes is not known")

// ExecutorFit reports, as a *FitError, a query q whose executors cannot run
// on the pool of its schedule es: no node, of those whose allocatable
// resources are given (the pool's ready nodes), holds executorsPerNode of
// its executors, sized as PodRequests sizes them. It returns nil when one
// does, and ErrFitUnknown when nothing tells: nodes that report no
// allocatable CPU or memory are passed over. What other pods on a node
// (DaemonSets) already take is not known here and not subtracted.
func ExecutorFit(q *v1alpha1.IntermittentQuery, es *v1alpha1.ElasticSchedule, nodes []corev1.ResourceList) error {
	if q == nil || es == nil || q.Spec.SparkApplication == nil || len(q.Spec.SparkApplication.Raw) == 0 {
		return ErrFitUnknown
	}
	// Nodes first: every pass asks, and a pool without sized nodes needs
	// no template decoded.
	var cpus, memories []resource.Quantity
	for _, n := range nodes {
		cpu, hasCPU := n[corev1.ResourceCPU]
		memory, hasMemory := n[corev1.ResourceMemory]
		if hasCPU && hasMemory {
			cpus, memories = append(cpus, cpu), append(memories, memory)
		}
	}
	if len(cpus) == 0 {
		return ErrFitUnknown
	}
	var spec map[string]any
	if json.Unmarshal(q.Spec.SparkApplication.Raw, &spec) != nil {
		return ErrFitUnknown
	}
	executor, err := PodRequests(spec, "executor")
	if err != nil {
		return ErrFitUnknown
	}
	perNode := int64(executorsPerNode(es))
	cpu, memory := executor[corev1.ResourceCPU], executor[corev1.ResourceMemory]
	holds := func(i int, k int64) bool {
		needCPU, needMemory := times(cpu, k), times(memory, k)
		return needCPU.Cmp(cpus[i]) <= 0 && needMemory.Cmp(memories[i]) <= 0
	}
	one := false
	for i := range cpus {
		if holds(i, perNode) {
			return nil
		}
		one = one || holds(i, 1)
	}
	fail := func(field, format string, args ...any) error {
		return &FitError{Namespace: q.Namespace, Name: q.Name, Field: field, Problem: fmt.Sprintf(format, args...)}
	}
	roleSpec, _ := spec["executor"].(map[string]any)
	largestCPU, largestMemory := largest(cpus), largest(memories)
	pool := poolWords(es, len(cpus))
	switch {
	case one:
		return fail("spec.nodePool.executorsPerNode",
			"ElasticSchedule %s asks for %d executors per node, each of %s CPU and %s memory, but no node of %s holds more than %s CPU and %s memory: they would stay Pending. Lower executorsPerNode, or give the pool larger nodes",
			es.Name, perNode, cpu.String(), memory.String(), pool, largestCPU.String(), largestMemory.String())
	case cpu.Cmp(largestCPU) > 0:
		field := "cores"
		if stringField(roleSpec, "coreRequest") != "" {
			field = "coreRequest"
		}
		return fail(templateField+".executor."+field,
			"an executor asks for %s CPU, but the largest node of %s has %s allocatable: the executors would stay Pending. Ask for at most %s, or give the pool larger nodes",
			cpu.String(), pool, largestCPU.String(), largestCPU.String())
	case memory.Cmp(largestMemory) > 0:
		return fail(templateField+".executor.memory",
			"an executor asks for %s memory (%s), but the largest node of %s has %s allocatable: the executors would stay Pending. Ask for less, or give the pool larger nodes",
			memory.String(), memoryWords(roleSpec), pool, largestMemory.String())
	default:
		return fail(templateField+".executor",
			"an executor asks for %s CPU and %s memory (%s); some node of %s has as much CPU and some as much memory, but none has both: the executors would stay Pending",
			cpu.String(), memory.String(), memoryWords(roleSpec), pool)
	}
}

// times is k × q, exactly.
func times(q resource.Quantity, k int64) resource.Quantity {
	product := new(inf.Dec).Mul(q.AsDec(), inf.NewDec(k, 0))
	return *resource.NewDecimalQuantity(*product, q.Format)
}

// largest is the largest of qs, which is not empty.
func largest(qs []resource.Quantity) resource.Quantity {
	out := qs[0]
	for _, q := range qs[1:] {
		if q.Cmp(out) > 0 {
			out = q
		}
	}
	return out
}

// poolWords names the pool's ready nodes for a message.
func poolWords(es *v1alpha1.ElasticSchedule, n int) string {
	selector := make([]string, 0, len(es.Spec.NodePool.NodeSelector))
	for k, v := range es.Spec.NodePool.NodeSelector {
		selector = append(selector, k+"="+v)
	}
	noun := "nodes"
	if n == 1 {
		noun = "node"
	}
	if len(selector) == 0 {
		return fmt.Sprintf("the pool's %d ready %s", n, noun)
	}
	slices.Sort(selector)
	return fmt.Sprintf("the pool's %d ready %s (%s)", n, noun, strings.Join(selector, ","))
}

// memoryWords says where an executor's memory request comes from.
func memoryWords(roleSpec map[string]any) string {
	memory, overhead := stringField(roleSpec, "memory"), stringField(roleSpec, "memoryOverhead")
	if memory == "" {
		memory = "Spark's default 1g"
	}
	if overhead == "" {
		return "memory " + memory + " plus Spark's memory overhead"
	}
	return "memory " + memory + " plus memoryOverhead " + overhead
}
