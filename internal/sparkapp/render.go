package sparkapp

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/planner"
)

// GroupVersionKind is the kind laxity creates for every step.
var GroupVersionKind = schema.GroupVersionKind{Group: "sparkoperator.k8s.io", Version: "v1beta2", Kind: "SparkApplication"}

// New returns an empty SparkApplication, to read one into with a client.
func New() *unstructured.Unstructured {
	app := &unstructured.Unstructured{}
	app.SetGroupVersionKind(GroupVersionKind)
	return app
}

// NewList returns an empty SparkApplicationList, to list into with a client.
func NewList() *unstructured.UnstructuredList {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(GroupVersionKind.GroupVersion().WithKind(GroupVersionKind.Kind + "List"))
	return list
}

// Labels of every SparkApplication laxity creates, and of its driver and
// executor pods (docs/design.md, "The SparkApplication a step becomes"), so
// that cost tools such as OpenCost and Kubecost, which aggregate by pod
// label, can charge each query and each schedule its share of the pool.
const (
	// LabelManagedBy is the well-known label naming the tool that manages
	// an object; its value is ManagedBy.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedBy is the value of LabelManagedBy on what laxity creates.
	ManagedBy = "laxity"
	// LabelSchedule is the name of the ElasticSchedule whose pool runs the
	// step.
	LabelSchedule = "laxity.dev/schedule"
	// LabelQuery is the name of the IntermittentQuery the step belongs to.
	LabelQuery = "laxity.dev/query"
	// LabelStep is the step's kind: batch, partial or final.
	LabelStep = "laxity.dev/step"
)

// Annotations of every SparkApplication laxity creates. Numbers are decimal.
const (
	// AnnotationBatchIndex is the batch index of a batch, the merge ordinal
	// of a merge.
	AnnotationBatchIndex = "laxity.dev/batch-index"
	// AnnotationFromTuple is the first tuple of a batch (batches only).
	AnnotationFromTuple = "laxity.dev/from-tuple"
	// AnnotationToTuple is the end, exclusive, of a batch's tuple range
	// (batches only).
	AnnotationToTuple = "laxity.dev/to-tuple"
	// AnnotationInputs is the number of intermediate results a merge
	// combines (merges only).
	AnnotationInputs = "laxity.dev/inputs"
	// AnnotationNodes is the pool size the step was planned for.
	AnnotationNodes = "laxity.dev/nodes"
	// AnnotationAttempt is the step's attempt: 0 for the first try.
	AnnotationAttempt = "laxity.dev/attempt"
	// AnnotationResult is where the step writes its result (see
	// ResultLocation).
	AnnotationResult = "laxity.dev/result"
	// AnnotationNamesTaken is how many attempt numbers of the step were
	// passed over because an object laxity does not own already had the
	// attempt's name (see Step.NamesTaken); absent when none were.
	AnnotationNamesTaken = "laxity.dev/names-taken"
	// AnnotationLaunchedAt is when laxity created the step (RFC 3339, on
	// laxity's clock): what a step that never starts is judged stuck from.
	AnnotationLaunchedAt = "laxity.dev/launched-at"
	// AnnotationMembers lists the queries a shared batch serves, separated
	// by commas, the query the step is named by (its laxity.dev/query
	// label) first; absent on a step of one query.
	AnnotationMembers = "laxity.dev/members"
	// AnnotationMemberResults is where a shared batch writes each member's
	// result, as member=location pairs separated by commas, in the order
	// of AnnotationMembers; absent on a step of one query.
	AnnotationMemberResults = "laxity.dev/member-results"
	// AnnotationLane is the lane of a step launched side by side with
	// others (spec.planning.concurrency Concurrent): its executors fill
	// its own nodes only. Absent on a step that runs alone on the pool.
	AnnotationLane = "laxity.dev/lane"
)

// KeyPrefix starts every label and annotation laxity sets; the annotations
// not in contractAnnotations are a batch's slice (Step.Slice).
const KeyPrefix = "laxity.dev/"

var contractAnnotations = map[string]bool{
	AnnotationBatchIndex: true, AnnotationFromTuple: true, AnnotationToTuple: true, AnnotationInputs: true,
	AnnotationNodes: true, AnnotationAttempt: true, AnnotationResult: true,
	AnnotationNamesTaken: true, AnnotationLaunchedAt: true, AnnotationMembers: true, AnnotationMemberResults: true,
	AnnotationLane: true,
}

// reservedSliceKeys are the names laxity's own arguments use.
var reservedSliceKeys = map[string]bool{
	"query": true, "step": true, "index": true, "attempt": true, "from-tuple": true, "to-tuple": true,
	"input": true, "inputs": true, "output": true, "members": true, "member-results": true,
}

// sliceKey is what a slice key may look like: it is an annotation name, an
// argument name and part of a Spark setting. A query over several inputs
// prefixes each input's keys with the input's name and a dot.
var sliceKey = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// SliceOf is the slice of the batch app runs (Step.Slice), read back from
// its annotations; nil when it has none.
func SliceOf(app metav1.Object) map[string]string {
	var slice map[string]string
	for k, v := range app.GetAnnotations() {
		if key, ok := strings.CutPrefix(k, KeyPrefix); ok && !contractAnnotations[k] {
			if slice == nil {
				slice = map[string]string{}
			}
			slice[key] = v
		}
	}
	return slice
}

// SparkConfPrefix starts the keys of the spec.sparkConf entries laxity sets:
// spark.laxity.query, spark.laxity.step, spark.laxity.index,
// spark.laxity.attempt, spark.laxity.fromTuple and spark.laxity.toTuple
// (batches), spark.laxity.inputs (merges: the number of inputs),
// spark.laxity.input and spark.laxity.output. laxity owns every key with this
// prefix: the template's own are dropped.
const SparkConfPrefix = "spark.laxity."

// ArgumentPrefix starts the arguments laxity appends to spec.arguments, each
// one token of the form --laxity-<name>=<value>: query, step, index,
// attempt, from-tuple and to-tuple (batches), inputs (merges), input (once
// for a batch, when Locations.Input is set; once per merged result, in
// order, for a merge) and output.
const ArgumentPrefix = "--laxity-"

// Locations says where steps read their input and write their results.
type Locations struct {
	// Input is where the query's tuples are read from, passed to batches as
	// is (for example a URI prefix of the stream's files). Batches get no
	// input argument or spark.laxity.input when it is empty, for jobs whose
	// template already names their source.
	Input string
	// ResultRoot is the base URI of every step's result, such as
	// s3a://bucket/laxity/ (see ResultLocation). It is required.
	ResultRoot string
}

// TemplateError is a problem with an IntermittentQuery's
// spec.sparkApplication template that keeps every step of the query from
// running until the template is fixed.
type TemplateError struct {
	// Namespace and Name are the IntermittentQuery's.
	Namespace, Name string
	// Field is the path of the offending field, such as
	// spec.sparkApplication.executor.
	Field string
	// Problem says what is wrong with it.
	Problem string
}

func (e *TemplateError) Error() string {
	return fmt.Sprintf("IntermittentQuery %s/%s: %s: %s", e.Namespace, e.Name, e.Field, e.Problem)
}

// templateField is the path of the template in the IntermittentQuery.
const templateField = "spec.sparkApplication"

// Render builds the SparkApplication that runs step s of query q on the pool
// of schedule es, the query's ElasticSchedule. It is pure and deterministic,
// and leaves q untouched.
//
// The SparkApplication's spec starts from a copy of q's
// spec.sparkApplication template; Render then sets:
//
//   - executor.instances to s.ReadyNodes × executorsPerNode (1 when unset);
//   - executor.nodeSelector to the template's merged with the pool's
//     nodeSelector, the pool winning on a shared key (the driver is not
//     pinned; see the package documentation). A template that sets the
//     deprecated spec-level nodeSelector, which spark-operator forbids next
//     to a driver or executor one, has it moved to both driver.nodeSelector
//     and executor.nodeSelector first, which means the same;
//   - arguments: the template's, then laxity's (see ArgumentPrefix);
//   - sparkConf: the template's, without keys starting with SparkConfPrefix,
//     plus laxity's;
//   - the Pod Security values the template leaves unset (SecureDefaults).
//
// The metadata carries the name (see Name), q's namespace, and the labels
// and annotations of the SparkApplication contract. Render sets no owner
// reference; the caller does.
//
// Render returns a *TemplateError, naming q and the field, when the template
// is not a JSON object, lacks a field SparkApplication v1beta2 requires
// (type, sparkVersion, mainApplicationFile, driver, executor), has a field
// Render reads or writes with the wrong type, or asks for something that
// contradicts laxity's contract: a restartPolicy of type Always (it re-runs
// a step that succeeded), dynamic allocation or spark.executor.instances (the
// executors are sized to the pool), or a whole SparkApplication instead of
// its spec. Other errors are the caller's: a step that is not valid for the
// schedule (a size not in sizes, fewer ready nodes than planned, a merge
// without its inputs, ...), a schedule that is not q's, or names too long.
func Render(q *v1alpha1.IntermittentQuery, es *v1alpha1.ElasticSchedule, s Step, loc Locations) (*unstructured.Unstructured, error) {
	if q == nil || es == nil {
		return nil, errors.New("rendering a SparkApplication: IntermittentQuery and ElasticSchedule are required")
	}
	if err := checkStep(q, es, s); err != nil {
		return nil, err
	}
	name, err := Name(q.Name, s)
	if err != nil {
		return nil, err
	}
	result, err := ResultLocation(loc.ResultRoot, q.Namespace, q.Name, s)
	if err != nil {
		return nil, fmt.Errorf("IntermittentQuery %s/%s: %w", q.Namespace, q.Name, err)
	}
	if len(s.Members) > 0 {
		s.MemberResults = make(map[string]string, len(s.Members))
		for _, m := range s.Members {
			if s.MemberResults[m], err = ResultLocation(loc.ResultRoot, q.Namespace, m, s); err != nil {
				return nil, fmt.Errorf("IntermittentQuery %s/%s: member %s: %w", q.Namespace, q.Name, m, err)
			}
		}
	}
	executors := int64(s.ReadyNodes) * int64(executorsPerNode(es))
	if executors > math.MaxInt32 {
		return nil, fmt.Errorf("IntermittentQuery %s/%s: %d ready nodes × %d executors per node is more executors than a SparkApplication holds",
			q.Namespace, q.Name, s.ReadyNodes, executorsPerNode(es))
	}

	t := &template{q: q}
	spec := t.decode()
	if spec != nil {
		t.check(spec)
	}
	if len(t.errs) > 0 {
		return nil, errors.Join(t.errs...)
	}
	SecureDefaults(spec)
	t.setExecutors(spec, executors, es.Spec.NodePool.NodeSelector)
	t.setPodLabels(spec, Labels(es.Name, q.Name, s.Kind))
	t.setArguments(spec, arguments(q.Name, s, loc, result))
	t.setSparkConf(spec, sparkConf(q.Name, s, loc, result))
	if len(t.errs) > 0 {
		return nil, errors.Join(t.errs...)
	}

	app := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	app.SetGroupVersionKind(GroupVersionKind)
	app.SetName(name)
	app.SetNamespace(q.Namespace)
	labels := Labels(es.Name, q.Name, s.Kind)
	app.SetLabels(labels)
	app.SetAnnotations(annotations(s, result))
	return app, nil
}

// Labels are the labels of a step's SparkApplication (or EMR on EKS job
// run) and of its pods: who manages it, and the schedule, query and step
// kind it runs.
func Labels(schedule, query string, kind planner.StepKind) map[string]string {
	return map[string]string{
		LabelManagedBy: ManagedBy,
		LabelSchedule:  schedule,
		LabelQuery:     query,
		LabelStep:      string(kind),
	}
}

// executorsPerNode is the schedule's executorsPerNode, with the API's
// default for objects that never went through an API server.
func executorsPerNode(es *v1alpha1.ElasticSchedule) int32 {
	if n := es.Spec.NodePool.ExecutorsPerNode; n > 0 {
		return n
	}
	return 1
}

// checkStep reports a step that cannot run on es's pool for q, or
// parameters that break the SparkApplication contract.
func checkStep(q *v1alpha1.IntermittentQuery, es *v1alpha1.ElasticSchedule, s Step) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("IntermittentQuery %s/%s: %s", q.Namespace, q.Name, fmt.Sprintf(format, args...))
	}
	if es.Namespace != q.Namespace || es.Name != q.Spec.ScheduleName {
		return fail("ElasticSchedule %s/%s is not the query's schedule %q", es.Namespace, es.Name, q.Spec.ScheduleName)
	}
	if errs := validation.IsValidLabelValue(es.Name); len(errs) > 0 {
		return fail("ElasticSchedule name %q cannot be the value of label %s: %s", es.Name, LabelSchedule, strings.Join(errs, "; "))
	}
	if !slices.Contains(es.Spec.NodePool.Sizes, s.Nodes) {
		return fail("step planned for %d nodes, which is not one of the pool's sizes %v", s.Nodes, es.Spec.NodePool.Sizes)
	}
	if s.ReadyNodes < s.Nodes {
		return fail("step planned for %d nodes but only %d are ready", s.Nodes, s.ReadyNodes)
	}
	if s.Index > math.MaxInt32 || s.Attempt > math.MaxInt32 || s.Inputs > math.MaxInt32 {
		return fail("step index %d, attempt %d or inputs %d exceed the int32 the status records them in", s.Index, s.Attempt, s.Inputs)
	}
	if es.Spec.NodePool.ExecutorsPerNode < 0 {
		return fail("ElasticSchedule %s/%s: spec.nodePool.executorsPerNode %d is negative", es.Namespace, es.Name, es.Spec.NodePool.ExecutorsPerNode)
	}
	switch s.Kind {
	case planner.StepBatch:
		if s.FromTuple < 0 || s.ToTuple <= s.FromTuple {
			return fail("batch tuple range [%d, %d) is empty or negative", s.FromTuple, s.ToTuple)
		}
		if s.Inputs != 0 || len(s.InputLocations) != 0 {
			return fail("a batch has no merge inputs, got %d and %d locations", s.Inputs, len(s.InputLocations))
		}
		if err := checkMembers(q.Name, s.Members); err != nil {
			return fail("%v", err)
		}
		for key := range s.Slice {
			if !sliceKey.MatchString(key) || len(key) > 63 || reservedSliceKeys[key] || contractAnnotations[KeyPrefix+key] || strings.HasPrefix(key, "output.") {
				return fail("batch input key %q must be a lower-case name (or an input's name, a dot and a name) of at most 63 characters that laxity's contract does not use", key)
			}
		}
	case planner.StepPartial, planner.StepFinal:
		if s.Inputs < 1 {
			return fail("a merge needs at least one input, got %d", s.Inputs)
		}
		if len(s.Slice) > 0 {
			return fail("a merge reads results, not a slice of the input")
		}
		if len(s.Members) > 0 {
			return fail("a merge is one query's; only a batch is shared")
		}
		if len(s.InputLocations) != s.Inputs {
			return fail("a merge of %d inputs needs %d input locations, got %d", s.Inputs, s.Inputs, len(s.InputLocations))
		}
		for i, l := range s.InputLocations {
			if l == "" || strings.Contains(l, ",") {
				return fail("merge input location %d %q is empty or contains a comma, which spark.laxity.input separates locations with", i, l)
			}
		}
	}
	return nil
}

// annotations are the step's annotations of the SparkApplication contract.
func annotations(s Step, result string) map[string]string {
	a := map[string]string{
		AnnotationBatchIndex: strconv.Itoa(s.Index),
		AnnotationNodes:      strconv.FormatInt(int64(s.Nodes), 10),
		AnnotationAttempt:    strconv.Itoa(s.Attempt),
		AnnotationResult:     result,
	}
	if s.NamesTaken > 0 {
		a[AnnotationNamesTaken] = strconv.Itoa(s.NamesTaken)
	}
	if s.SideBySide {
		a[AnnotationLane] = strconv.Itoa(s.Lane)
	}
	if !s.LaunchedAt.IsZero() {
		a[AnnotationLaunchedAt] = s.LaunchedAt.UTC().Format(time.RFC3339)
	}
	if s.Kind == planner.StepBatch {
		a[AnnotationFromTuple] = strconv.FormatInt(s.FromTuple, 10)
		a[AnnotationToTuple] = strconv.FormatInt(s.ToTuple, 10)
		for k, v := range s.Slice {
			a[KeyPrefix+k] = v
		}
		if len(s.Members) > 0 {
			a[AnnotationMembers] = strings.Join(s.Members, ",")
			a[AnnotationMemberResults] = memberResults(s)
		}
	} else {
		a[AnnotationInputs] = strconv.Itoa(s.Inputs)
	}
	return a
}

// memberResults is a shared batch's AnnotationMemberResults.
func memberResults(s Step) string {
	pairs := make([]string, len(s.Members))
	for i, m := range s.Members {
		pairs[i] = m + "=" + s.MemberResults[m]
	}
	return strings.Join(pairs, ",")
}

// checkMembers reports members that cannot be a shared batch's: fewer
// than two, not led by query (the query the step is named by), a name
// twice, or a name that is no query's.
func checkMembers(query string, members []string) error {
	if len(members) == 0 {
		return nil
	}
	if len(members) < 2 || members[0] != query {
		return fmt.Errorf("a shared batch's members are two queries or more, %s first, got %q", query, members)
	}
	for i, m := range members {
		if errs := validation.IsDNS1035Label(m); len(errs) > 0 {
			return fmt.Errorf("member %q is not a query name: %s", m, strings.Join(errs, "; "))
		}
		if slices.Contains(members[:i], m) {
			return fmt.Errorf("member %s is listed twice", m)
		}
	}
	return nil
}

// arguments are the step's parameters as the arguments appended to the
// template's.
func arguments(query string, s Step, loc Locations, result string) []string {
	arg := func(name, value string) string { return ArgumentPrefix + name + "=" + value }
	args := []string{
		arg("query", query),
		arg("step", string(s.Kind)),
		arg("index", strconv.Itoa(s.Index)),
		arg("attempt", strconv.Itoa(s.Attempt)),
	}
	if s.Kind == planner.StepBatch {
		args = append(args,
			arg("from-tuple", strconv.FormatInt(s.FromTuple, 10)),
			arg("to-tuple", strconv.FormatInt(s.ToTuple, 10)))
		if loc.Input != "" {
			args = append(args, arg("input", loc.Input))
		}
		for _, k := range slices.Sorted(maps.Keys(s.Slice)) {
			args = append(args, arg(k, s.Slice[k]))
		}
		if len(s.Members) > 0 {
			args = append(args, arg("members", strings.Join(s.Members, ",")))
			for _, m := range s.Members {
				args = append(args, arg("output-"+m, s.MemberResults[m]))
			}
		}
	} else {
		args = append(args, arg("inputs", strconv.Itoa(s.Inputs)))
		for _, l := range s.InputLocations {
			args = append(args, arg("input", l))
		}
	}
	return append(args, arg("output", result))
}

// sparkConf are the step's parameters as Spark configuration.
func sparkConf(query string, s Step, loc Locations, result string) map[string]string {
	c := map[string]string{
		SparkConfPrefix + "query":   query,
		SparkConfPrefix + "step":    string(s.Kind),
		SparkConfPrefix + "index":   strconv.Itoa(s.Index),
		SparkConfPrefix + "attempt": strconv.Itoa(s.Attempt),
		SparkConfPrefix + "output":  result,
	}
	if s.Kind == planner.StepBatch {
		c[SparkConfPrefix+"fromTuple"] = strconv.FormatInt(s.FromTuple, 10)
		c[SparkConfPrefix+"toTuple"] = strconv.FormatInt(s.ToTuple, 10)
		if loc.Input != "" {
			c[SparkConfPrefix+"input"] = loc.Input
		}
		for k, v := range s.Slice {
			c[SparkConfPrefix+k] = v
		}
		if len(s.Members) > 0 {
			c[SparkConfPrefix+"members"] = strings.Join(s.Members, ",")
			for _, m := range s.Members {
				c[SparkConfPrefix+"output."+m] = s.MemberResults[m]
			}
		}
	} else {
		c[SparkConfPrefix+"inputs"] = strconv.Itoa(s.Inputs)
		c[SparkConfPrefix+"input"] = strings.Join(s.InputLocations, ",")
	}
	return c
}

// template reads and edits one query's template, collecting problems as
// *TemplateErrors.
type template struct {
	q    *v1alpha1.IntermittentQuery
	errs []error
}

func (t *template) fail(field, format string, args ...any) {
	t.errs = append(t.errs, &TemplateError{
		Namespace: t.q.Namespace, Name: t.q.Name,
		Field: field, Problem: fmt.Sprintf(format, args...),
	})
}

// decode returns a fresh copy of the template as JSON values (numbers as
// int64 or float64, as unstructured objects hold them), or nil after
// recording why it is not an object.
func (t *template) decode() map[string]any {
	raw := t.q.Spec.SparkApplication
	var data []byte
	switch {
	case raw == nil:
	case len(raw.Raw) > 0:
		data = raw.Raw
	case raw.Object != nil:
		var err error
		if data, err = json.Marshal(raw.Object); err != nil {
			t.fail(templateField, "encoding the template: %v", err)
			return nil
		}
	}
	if len(data) == 0 {
		t.fail(templateField, "required: the spec of the SparkApplication that runs each step")
		return nil
	}
	var v any
	if err := utiljson.Unmarshal(data, &v); err != nil {
		t.fail(templateField, "not valid JSON: %v", err)
		return nil
	}
	if v == nil {
		t.fail(templateField, "required: the spec of the SparkApplication that runs each step")
		return nil
	}
	spec, ok := v.(map[string]any)
	if !ok {
		t.fail(templateField, "must be an object (a SparkApplication spec), got %s", jsonType(v))
		return nil
	}
	return spec
}

// check records every problem with the fields Render relies on or touches,
// in a fixed order.
func (t *template) check(spec map[string]any) {
	for _, k := range []string{"apiVersion", "kind", "metadata", "spec", "status"} {
		if _, ok := spec[k]; ok {
			t.fail(templateField+"."+k, "not a field of a SparkApplication spec: spec.sparkApplication holds the spec only, not a whole SparkApplication")
		}
	}
	for _, k := range []string{"type", "sparkVersion", "mainApplicationFile"} {
		if v, ok := spec[k]; !ok || v == nil {
			t.fail(templateField+"."+k, "required by SparkApplication %s", GroupVersionKind.Version)
		} else if _, ok := v.(string); !ok {
			t.fail(templateField+"."+k, "must be a string, got %s", jsonType(v))
		}
	}
	podSelector := false
	for _, k := range []string{"driver", "executor"} {
		if v, ok := spec[k]; !ok || v == nil {
			t.fail(templateField+"."+k, "required by SparkApplication %s", GroupVersionKind.Version)
		} else if pod, ok := t.object(spec, k, templateField+"."+k); ok {
			if _, ok := t.stringMap(pod, "nodeSelector", templateField+"."+k+".nodeSelector"); ok {
				podSelector = true
			}
			// Spark would fail the application on a size it cannot read;
			// found here, it is the query's to fix.
			var bad *requestError
			if _, err := podRequests(spec, k, templateField); errors.As(err, &bad) {
				t.fail(bad.field, "%s", bad.problem)
			}
		}
	}
	if _, ok := t.stringMap(spec, "nodeSelector", templateField+".nodeSelector"); ok && podSelector {
		t.fail(templateField+".nodeSelector", "must not be set together with driver.nodeSelector or executor.nodeSelector: spark-operator rejects both")
	}
	t.stringSlice(spec, "arguments", templateField+".arguments")
	if conf, _ := t.stringMap(spec, "sparkConf", templateField+".sparkConf"); conf != nil {
		if _, ok := conf["spark.executor.instances"]; ok {
			t.fail(templateField+".sparkConf", "must not set spark.executor.instances: laxity sizes the executors to the pool's ready nodes")
		}
		if strings.EqualFold(strings.TrimSpace(conf["spark.dynamicAllocation.enabled"]), "true") {
			t.fail(templateField+".sparkConf", "must not enable spark.dynamicAllocation: laxity sizes the executors to the pool's ready nodes")
		}
	}
	if da, ok := t.object(spec, "dynamicAllocation", templateField+".dynamicAllocation"); ok {
		switch v := da["enabled"].(type) {
		case nil:
		case bool:
			if v {
				t.fail(templateField+".dynamicAllocation.enabled", "must not be true: laxity sizes the executors to the pool's ready nodes")
			}
		default:
			t.fail(templateField+".dynamicAllocation.enabled", "must be a boolean, got %s", jsonType(v))
		}
	}
	if rp, ok := t.object(spec, "restartPolicy", templateField+".restartPolicy"); ok {
		switch v := rp["type"].(type) {
		case nil:
		case string:
			if v == "Always" {
				t.fail(templateField+".restartPolicy.type", "must not be Always: spark-operator would re-run a step that succeeded; use Never or OnFailure (laxity retries a failed step as a new SparkApplication)")
			}
		default:
			t.fail(templateField+".restartPolicy.type", "must be a string, got %s", jsonType(v))
		}
	}
}

// setExecutors sizes the executors and pins them to the pool.
func (t *template) setExecutors(spec map[string]any, instances int64, pool map[string]string) {
	driver, _ := t.object(spec, "driver", templateField+".driver")
	executor, _ := t.object(spec, "executor", templateField+".executor")
	executor["instances"] = instances
	if len(pool) == 0 {
		return
	}
	selector, _ := t.stringMap(executor, "nodeSelector", templateField+".executor.nodeSelector")
	if top, ok := t.stringMap(spec, "nodeSelector", templateField+".nodeSelector"); ok {
		// check has made sure that neither pod sets its own.
		delete(spec, "nodeSelector")
		driver["nodeSelector"] = toJSONMap(top)
		selector = top
	}
	merged := maps.Clone(selector)
	if merged == nil {
		merged = map[string]string{}
	}
	maps.Copy(merged, pool)
	executor["nodeSelector"] = toJSONMap(merged)
}

// setPodLabels adds laxity's labels to the driver's and the executors'
// labels, which spark-operator puts on their pods; where the template sets
// one of laxity's keys, laxity's value wins, so that a step's pods are
// always charged to its own query and schedule.
func (t *template) setPodLabels(spec map[string]any, ours map[string]string) {
	for _, role := range []string{"driver", "executor"} {
		pod, _ := t.object(spec, role, templateField+"."+role)
		labels, _ := t.stringMap(pod, "labels", templateField+"."+role+".labels")
		if labels == nil {
			labels = map[string]string{}
		}
		maps.Copy(labels, ours)
		pod["labels"] = toJSONMap(labels)
	}
}

// setArguments appends laxity's arguments to the template's.
func (t *template) setArguments(spec map[string]any, ours []string) {
	args := t.stringSlice(spec, "arguments", templateField+".arguments")
	all := make([]any, 0, len(args)+len(ours))
	for _, a := range args {
		all = append(all, a)
	}
	for _, a := range ours {
		all = append(all, a)
	}
	spec["arguments"] = all
}

// setSparkConf replaces the template's spark.laxity.* entries with laxity's.
func (t *template) setSparkConf(spec map[string]any, ours map[string]string) {
	conf, _ := t.stringMap(spec, "sparkConf", templateField+".sparkConf")
	maps.DeleteFunc(conf, func(k, _ string) bool { return strings.HasPrefix(k, SparkConfPrefix) })
	if conf == nil {
		conf = map[string]string{}
	}
	maps.Copy(conf, ours)
	spec["sparkConf"] = toJSONMap(conf)
}

// object returns m[key] as an object; ok is false when it is absent or null.
// A value of another type is recorded as a problem.
func (t *template) object(m map[string]any, key, field string) (map[string]any, bool) {
	switch v := m[key].(type) {
	case nil:
		return nil, false
	case map[string]any:
		return v, true
	default:
		t.fail(field, "must be an object, got %s", jsonType(v))
		return nil, false
	}
}

// stringMap returns a copy of m[key] as a map of strings; ok is false when it
// is absent or null (an empty object is present). A value of another type is
// recorded as a problem.
func (t *template) stringMap(m map[string]any, key, field string) (map[string]string, bool) {
	obj, ok := t.object(m, key, field)
	if !ok {
		return nil, false
	}
	out := make(map[string]string, len(obj))
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		s, ok := obj[k].(string)
		if !ok {
			t.fail(field+"."+k, "must be a string, got %s", jsonType(obj[k]))
			continue
		}
		out[k] = s
	}
	return out, true
}

// stringSlice returns m[key] as a list of strings, nil when it is absent or
// null. A value of another type is recorded as a problem.
func (t *template) stringSlice(m map[string]any, key, field string) []string {
	switch v := m[key].(type) {
	case nil:
		return nil
	case []any:
		out := make([]string, 0, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				t.fail(fmt.Sprintf("%s[%d]", field, i), "must be a string, got %s", jsonType(e))
				continue
			}
			out = append(out, s)
		}
		return out
	default:
		t.fail(field, "must be a list of strings, got %s", jsonType(v))
		return nil
	}
}

// toJSONMap converts a map of strings to the map type unstructured objects
// hold.
func toJSONMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// jsonType names the JSON type of a decoded value, for error messages.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case int64, float64, json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}
