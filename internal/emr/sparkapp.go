package emr

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/laxity-dev/laxity/internal/sparkapp"
)

// AWS limits on job-run tags.
const (
	maxTags           = 50
	maxTagKeyLength   = 128
	maxTagValueLength = 256
)

// JobRunOf is the job run that runs app, a SparkApplication sparkapp.Render
// built, on EMR on EKS: so the query's one template describes its steps on
// either backend. The entry point is spec.mainApplicationFile and the
// arguments spec.arguments (laxity's --laxity-* ones included); spec.mainClass,
// spec.deps, spec.image, the driver's and executors' cores and memory and
// spec.sparkConf (laxity's spark.laxity.* settings included) become
// spark-submit parameters, and the driver's and executors' labels the
// spark.kubernetes.driver.label.* and spark.kubernetes.executor.label.*
// settings that label their pods; spec.executor.instances is the executor
// count. The tags are app's app.kubernetes.io/managed-by label and its
// laxity.dev/ labels and annotations (the step contract of docs/design.md),
// except values longer than AWS allows, such as a Kafka batch's offsets,
// which the arguments carry anyway.
//
// Fields are named as in the query, spec.sparkApplication.<field>, when they
// cannot be expressed.
func JobRunOf(app *unstructured.Unstructured, clientToken string) (JobRun, error) {
	spec, _, err := unstructured.NestedMap(app.Object, "spec")
	if err != nil {
		return JobRun{}, rejectf("SparkApplication %s: spec: %v", app.GetName(), err)
	}
	t := translation{spec: spec}
	run := JobRun{
		Name:                app.GetName(),
		ClientToken:         clientToken,
		EntryPoint:          t.str("mainApplicationFile"),
		EntryPointArguments: t.strings("arguments"),
		Tags:                tagsOf(app),
	}
	if run.EntryPoint == "" {
		t.problem("mainApplicationFile", "must be set: it is the job run's entry point")
	}
	if class := t.str("mainClass"); class != "" {
		t.add("mainClass", "--class", class)
	}
	for _, deps := range []struct{ field, flag string }{{"jars", "--jars"}, {"files", "--files"}, {"pyFiles", "--py-files"}, {"packages", "--packages"}} {
		if list := t.strings("deps", deps.field); len(list) > 0 {
			t.add("deps."+deps.field, deps.flag, strings.Join(list, ","))
		}
	}
	if image := t.str("image"); image != "" {
		t.conf("image", "spark.kubernetes.container.image", image)
	}
	for _, role := range []string{"driver", "executor"} {
		if cores, ok := t.number(role, "cores"); ok {
			t.conf(role+".cores", "spark."+role+".cores", cores)
		}
		if memory := t.str(role, "memory"); memory != "" {
			t.conf(role+".memory", "spark."+role+".memory", memory)
		}
	}
	conf, _, err := unstructured.NestedStringMap(spec, "sparkConf")
	if err != nil {
		t.problem("sparkConf", "%v", err)
	}
	for _, key := range slices.Sorted(maps.Keys(conf)) {
		t.conf("sparkConf."+key, key, conf[key])
	}
	// The pods' labels (laxity's among them, see sparkapp.Labels) are Spark
	// settings on EMR on EKS; after sparkConf, so that laxity's win there
	// too.
	for _, role := range []string{"driver", "executor"} {
		labels, _, err := unstructured.NestedStringMap(spec, role, "labels")
		if err != nil {
			t.problem(role+".labels", "%v", err)
		}
		for _, key := range slices.Sorted(maps.Keys(labels)) {
			t.conf(role+".labels."+key, "spark.kubernetes."+role+".label."+key, labels[key])
		}
	}
	instances, ok := t.number("executor", "instances")
	if !ok {
		t.problem("executor.instances", "must be set: laxity sizes the executors to the ready nodes")
	}
	if len(t.problems) > 0 {
		return JobRun{}, rejectf("SparkApplication %s as an EMR on EKS job run: %s", app.GetName(), strings.Join(t.problems, "; "))
	}
	var executors int32
	if _, err := fmt.Sscan(instances, &executors); err != nil || executors < 1 {
		return JobRun{}, rejectf("SparkApplication %s: spec.sparkApplication.executor.instances is %s, want at least 1", app.GetName(), instances)
	}
	run.Executors = executors
	run.SparkSubmitParameters = strings.Join(t.params, " ")
	return run, nil
}

// translation collects spark-submit parameters and the problems found on the
// way, so that one error names every field that cannot be expressed.
type translation struct {
	spec     map[string]any
	params   []string
	problems []string
}

func (t *translation) problem(field, format string, args ...any) {
	t.problems = append(t.problems, "spec.sparkApplication."+field+": "+fmt.Sprintf(format, args...))
}

func (t *translation) str(path ...string) string {
	v, _, err := unstructured.NestedString(t.spec, path...)
	if err != nil {
		t.problem(strings.Join(path, "."), "%v", err)
	}
	return v
}

func (t *translation) strings(path ...string) []string {
	v, _, err := unstructured.NestedStringSlice(t.spec, path...)
	if err != nil {
		t.problem(strings.Join(path, "."), "%v", err)
	}
	return v
}

// number reads an integer field, which JSON may decode as int64 or float64.
func (t *translation) number(path ...string) (string, bool) {
	v, found, err := unstructured.NestedFieldNoCopy(t.spec, path...)
	if err != nil || !found {
		return "", false
	}
	switch n := v.(type) {
	case int64:
		return fmt.Sprint(n), true
	case float64:
		if n == float64(int64(n)) {
			return fmt.Sprint(int64(n)), true
		}
	}
	t.problem(strings.Join(path, "."), "%v is not an integer", v)
	return "", false
}

func (t *translation) conf(field, key, value string) {
	t.add(field, "--conf", key+"="+value)
}

// add appends a flag and its value from field, quoted when it holds
// spaces, as spark-submit's parameter string is split like a shell's words.
func (t *translation) add(field, flag, value string) {
	if strings.ContainsAny(value, " \t\r\n\"'") {
		if strings.Contains(value, "'") {
			t.problem(field, "%q holds a single quote, which spark-submit parameters cannot carry", value)
			return
		}
		value = "'" + value + "'"
	}
	t.params = append(t.params, flag, value)
}

// tagsOf is app's managed-by label and its laxity.dev/ labels and
// annotations that fit AWS's tag limits, at most 50 of them in key order.
func tagsOf(app *unstructured.Unstructured) map[string]string {
	all := map[string]string{}
	for _, m := range []map[string]string{app.GetLabels(), app.GetAnnotations()} {
		for k, v := range m {
			ours := strings.HasPrefix(k, sparkapp.KeyPrefix) || k == sparkapp.LabelManagedBy
			if ours && len(k) <= maxTagKeyLength && len(v) <= maxTagValueLength {
				all[k] = v
			}
		}
	}
	tags := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(all)) {
		if len(tags) == maxTags {
			break
		}
		tags[k] = all[k]
	}
	return tags
}
