package sparkapp

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// PodRequests is what a pod of role ("driver" or "executor") of a
// SparkApplication with this spec asks the scheduler for, as Spark on
// Kubernetes sizes it: CPU is the role's coreRequest when set, else its
// cores (1 when unset); memory is its memory (Spark's 1g when unset) plus
// the memory overhead (memoryOverhead when set, else a tenth of the memory
// for the JVM and four tenths for Python and R, at least 384 MiB). Errors
// name the field under spec.
func PodRequests(spec map[string]any, role string) (corev1.ResourceList, error) {
	return podRequests(spec, role, "spec")
}

// podRequests is PodRequests of the spec at path specField, which errors
// name.
func podRequests(spec map[string]any, role, specField string) (corev1.ResourceList, error) {
	roleSpec, _ := spec[role].(map[string]any)
	field := specField + "." + role
	cpu, err := cpuRequest(roleSpec, field)
	if err != nil {
		return nil, err
	}
	memory, err := memoryRequest(roleSpec, field, stringField(spec, "type"))
	if err != nil {
		return nil, err
	}
	return corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: memory}, nil
}

// requestError is a size of a pod that cannot be read, and its field.
type requestError struct{ field, problem string }

func (e *requestError) Error() string { return e.field + ": " + e.problem }

// cpuRequest is coreRequest when set, else cores (1 when unset), as Spark's
// spark.kubernetes.{driver,executor}.request.cores overrides its cores.
func cpuRequest(roleSpec map[string]any, field string) (resource.Quantity, error) {
	if req := stringField(roleSpec, "coreRequest"); req != "" {
		q, err := resource.ParseQuantity(req)
		if err != nil || q.Sign() <= 0 {
			return resource.Quantity{}, &requestError{field + ".coreRequest", fmt.Sprintf("%q is not a positive CPU quantity", req)}
		}
		return q, nil
	}
	cores := int64(1)
	if v, ok := roleSpec["cores"]; ok && v != nil {
		n, ok := WholeNumber(v)
		if !ok || n < 1 {
			return resource.Quantity{}, &requestError{field + ".cores", fmt.Sprintf("%v is not a positive whole number", v)}
		}
		cores = n
	}
	return *resource.NewQuantity(cores, resource.DecimalSI), nil
}

// Spark's memory overhead: at least 384 MiB, else a fraction of the memory
// (spark.kubernetes.memoryOverheadFactor: 0.1 for the JVM, 0.4 for Python
// and R).
const minOverheadMiB = 384

// memoryRequest is the role's memory plus its overhead, in whole MiB as
// Spark asks for them; memory defaults to Spark's 1g.
func memoryRequest(roleSpec map[string]any, field, appType string) (resource.Quantity, error) {
	memory := int64(1024)
	if m := stringField(roleSpec, "memory"); m != "" {
		v, err := sparkMiB(m)
		if err != nil {
			return resource.Quantity{}, &requestError{field + ".memory", err.Error()}
		}
		memory = v
	}
	factor := 0.1
	if t := strings.ToLower(appType); t == "python" || t == "r" {
		factor = 0.4
	}
	overhead := max(int64(float64(memory)*factor), minOverheadMiB)
	if m := stringField(roleSpec, "memoryOverhead"); m != "" {
		v, err := sparkMiB(m)
		if err != nil {
			return resource.Quantity{}, &requestError{field + ".memoryOverhead", err.Error()}
		}
		overhead = v
	}
	return *resource.NewQuantity((memory+overhead)<<20, resource.BinarySI), nil
}

var sparkSize = regexp.MustCompile(`^([0-9]+)([kmgtp]?)b?$`)

// sparkMiB reads a Spark memory size ("512m", "2g", "1024" in MiB) in
// whole MiB, rounding kibibytes up.
func sparkMiB(s string) (int64, error) {
	m := sparkSize.FindStringSubmatch(strings.ToLower(strings.TrimSpace(s)))
	if m == nil {
		return 0, fmt.Errorf("%q is not a Spark memory size such as 512m or 2g", s)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a Spark memory size: %w", s, err)
	}
	shift := map[string]uint{"": 0, "m": 0, "g": 10, "t": 20, "p": 30}
	if m[2] == "k" {
		return (n + 1023) / 1024, nil
	}
	if n > (1<<40)>>shift[m[2]] {
		return 0, fmt.Errorf("%q is too large", s)
	}
	if n == 0 {
		return 0, fmt.Errorf("%q is no memory", s)
	}
	return n << shift[m[2]], nil
}

// WholeNumber is v, a JSON number as unstructured objects hold it (int64,
// or float64 when decoded without a schema), when it is a whole number.
func WholeNumber(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int32:
		return int64(n), true
	case int:
		return int64(n), true
	case float64:
		if n == float64(int64(n)) {
			return int64(n), true
		}
	}
	return 0, false
}

// stringField is m[key] when it is a string.
func stringField(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}
