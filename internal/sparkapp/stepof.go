package sparkapp

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/laxity-dev/laxity/internal/planner"
)

// StepOf reads back which step of which query a SparkApplication laxity
// created runs, from its labels and annotations, so that the controller can
// rebuild its view of the world after a restart. It recovers Kind, Index,
// Attempt, FromTuple, ToTuple and Slice (batches), Inputs (merges) and Nodes; not
// InputLocations nor ReadyNodes, which the object keeps only in its spec.
// The step's result location is the laxity.dev/result annotation.
//
// app may also be another object that carries a step's name, labels and
// annotations, as the record of an EMR on EKS job run does; an unstructured
// object must be a SparkApplication.
//
// It is an error when app is an unstructured object of another kind, a
// label or annotation is missing or malformed, or app's name is not the
// name Render gives that step, so that an object laxity did not create is
// never taken for a step.
func StepOf(app metav1.Object) (string, Step, error) {
	if app == nil {
		return "", Step{}, errors.New("reading a step: no object")
	}
	kind := GroupVersionKind.Kind
	if _, ok := app.(*unstructured.Unstructured); !ok {
		kind = reflect.Indirect(reflect.ValueOf(app)).Type().Name()
	}
	fail := func(format string, args ...any) (string, Step, error) {
		return "", Step{}, fmt.Errorf("reading the step of %s %s/%s: %s", kind, app.GetNamespace(), app.GetName(), fmt.Sprintf(format, args...))
	}
	if u, ok := app.(*unstructured.Unstructured); ok && u.GroupVersionKind() != GroupVersionKind {
		return fail("it is a %s, not a %s", u.GroupVersionKind(), GroupVersionKind)
	}
	labels, annotations := app.GetLabels(), app.GetAnnotations()
	query := labels[LabelQuery]
	if query == "" {
		return fail("label %s is missing", LabelQuery)
	}
	s := Step{Kind: planner.StepKind(labels[LabelStep])}
	switch s.Kind {
	case planner.StepBatch, planner.StepPartial, planner.StepFinal:
	default:
		return fail("label %s is %q, want %s, %s or %s", LabelStep, s.Kind, planner.StepBatch, planner.StepPartial, planner.StepFinal)
	}

	number := func(key string, required bool, lowest, highest int64) (int64, error) {
		v, ok := annotations[key]
		if !ok {
			if required {
				return 0, fmt.Errorf("annotation %s is missing", key)
			}
			return 0, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lowest || n > highest {
			return 0, fmt.Errorf("annotation %s is %q, want an integer in [%d, %d]", key, v, lowest, highest)
		}
		return n, nil
	}
	var problems []string
	read := func(dst *int64, key string, required bool, lowest, highest int64) {
		n, err := number(key, required, lowest, highest)
		if err != nil {
			problems = append(problems, err.Error())
		}
		*dst = n
	}
	var index, attempt, nodes, inputs, taken, lane int64
	read(&index, AnnotationBatchIndex, true, 0, math.MaxInt32)
	read(&attempt, AnnotationAttempt, false, 0, math.MaxInt32)
	read(&taken, AnnotationNamesTaken, false, 0, math.MaxInt32)
	if len(problems) == 0 && taken > attempt {
		problems = append(problems, fmt.Sprintf("annotation %s is %d, more than the attempt %d", AnnotationNamesTaken, taken, attempt))
	}
	if v, ok := annotations[AnnotationLaunchedAt]; ok {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			problems = append(problems, fmt.Sprintf("annotation %s is %q, want an RFC 3339 time", AnnotationLaunchedAt, v))
		}
		s.LaunchedAt = t
	}
	read(&nodes, AnnotationNodes, true, 1, math.MaxInt32)
	if _, ok := annotations[AnnotationLane]; ok {
		read(&lane, AnnotationLane, true, 0, math.MaxInt32)
		s.SideBySide, s.Lane = true, int(lane)
	}
	if s.Kind == planner.StepBatch {
		read(&s.FromTuple, AnnotationFromTuple, true, 0, math.MaxInt64)
		read(&s.ToTuple, AnnotationToTuple, true, 0, math.MaxInt64)
		if len(problems) == 0 && s.ToTuple <= s.FromTuple {
			problems = append(problems, fmt.Sprintf("tuple range [%d, %d) is empty", s.FromTuple, s.ToTuple))
		}
	} else {
		read(&inputs, AnnotationInputs, true, 1, math.MaxInt32)
	}
	if len(problems) > 0 {
		return fail("%s", strings.Join(problems, "; "))
	}
	s.Index, s.Attempt, s.Nodes, s.Inputs, s.NamesTaken = int(index), int(attempt), int32(nodes), int(inputs), int(taken)
	if s.Kind == planner.StepBatch {
		s.Slice = SliceOf(app)
	}
	members, results, err := membersOf(query, s.Kind, annotations)
	if err != nil {
		return fail("%v", err)
	}
	s.Members, s.MemberResults = members, results

	name, err := Name(query, s)
	if err != nil {
		return fail("%v", err)
	}
	if name != app.GetName() {
		return fail("its labels and annotations describe step %s, not this object", name)
	}
	return query, s, nil
}

// membersOf reads a shared batch's members and their result locations
// back; nil for a step of one query.
func membersOf(query string, kind planner.StepKind, annotations map[string]string) ([]string, map[string]string, error) {
	listed, shared := annotations[AnnotationMembers]
	pairs, hasResults := annotations[AnnotationMemberResults]
	switch {
	case !shared && !hasResults:
		return nil, nil, nil
	case kind != planner.StepBatch:
		return nil, nil, fmt.Errorf("annotation %s is on a %s; only a batch is shared", AnnotationMembers, kind)
	case !shared || !hasResults:
		return nil, nil, fmt.Errorf("annotations %s and %s go together", AnnotationMembers, AnnotationMemberResults)
	}
	members := strings.Split(listed, ",")
	if err := checkMembers(query, members); err != nil {
		return nil, nil, fmt.Errorf("annotation %s: %w", AnnotationMembers, err)
	}
	results := make(map[string]string, len(members))
	for i, pair := range strings.Split(pairs, ",") {
		m, location, ok := strings.Cut(pair, "=")
		if !ok || i >= len(members) || m != members[i] || location == "" {
			return nil, nil, fmt.Errorf("annotation %s is %q, want member=location for each of %s in its order", AnnotationMemberResults, pairs, listed)
		}
		results[m] = location
	}
	if len(results) != len(members) {
		return nil, nil, fmt.Errorf("annotation %s is %q, want member=location for each of %s in its order", AnnotationMemberResults, pairs, listed)
	}
	return members, results, nil
}
