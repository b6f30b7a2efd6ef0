package spec

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/recurrence"
)

// The label and annotation of every window's IntermittentQuery.
const (
	// LabelRecurringQuery names the RecurringQuery a window belongs to.
	LabelRecurringQuery = "laxity.dev/recurring-query"
	// AnnotationWindowStart is the window's start, RFC 3339.
	AnnotationWindowStart = "laxity.dev/window-start"
)

// RecurringWindow is the IntermittentQuery of window w of rq: the template
// with the window, its deadline, and laxity's label and annotation. The
// operator adds the owner reference.
func RecurringWindow(rq *laxityv1alpha1.RecurringQuery, w recurrence.Window) *laxityv1alpha1.IntermittentQuery {
	t := rq.Spec.Template.DeepCopy()
	labels := make(map[string]string, len(t.Metadata.Labels)+1)
	for k, v := range t.Metadata.Labels {
		labels[k] = string(v)
	}
	labels[LabelRecurringQuery] = rq.Name
	annotations := t.Metadata.Annotations
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AnnotationWindowStart] = w.Start.UTC().Format(time.RFC3339)
	return &laxityv1alpha1.IntermittentQuery{
		TypeMeta:   metav1.TypeMeta{APIVersion: laxityv1alpha1.GroupVersion.String(), Kind: "IntermittentQuery"},
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: rq.Namespace, Labels: labels, Annotations: annotations},
		Spec: laxityv1alpha1.IntermittentQuerySpec{
			ScheduleName: t.ScheduleName,
			Window:       laxityv1alpha1.Window{Start: metav1.NewTime(w.Start), End: metav1.NewTime(w.End)},
			Deadline:     metav1.NewTime(w.End.Add(rq.Spec.DeadlineAfterWindowEnd.Duration)),
			Input:        t.Input, Inputs: t.Inputs, CostModel: t.CostModel, PartialAggregation: t.PartialAggregation,
			SparkApplication: t.SparkApplication, Sharing: t.Sharing,
		},
	}
}

// RecurringWindows are the IntermittentQueries of rq's first
// spec.windowsAhead windows starting at or after from, as laxity plan plans
// them. The error is a *recurrence.SpecError naming the field.
func RecurringWindows(rq *laxityv1alpha1.RecurringQuery, from time.Time) ([]laxityv1alpha1.IntermittentQuery, error) {
	schedule, err := recurrence.Validate(recurrence.Spec{
		Schedule: rq.Spec.Schedule, TimeZone: rq.Spec.TimeZone, WindowLength: rq.Spec.WindowLength.Duration,
	})
	if err != nil {
		return nil, err
	}
	ahead := 2
	if rq.Spec.WindowsAhead != nil {
		ahead = int(*rq.Spec.WindowsAhead)
	}
	var out []laxityv1alpha1.IntermittentQuery
	// Each search is bounded (recurrence.Schedule.NextStart): a schedule
	// with no start within the bound is an error on spec.schedule, never a
	// hang of laxity plan.
	start, err := schedule.NextStart(from.Add(-time.Nanosecond))
	for len(out) < ahead {
		if err != nil {
			return nil, err
		}
		var next time.Time
		next, err = schedule.NextStart(start)
		end := start.Add(rq.Spec.WindowLength.Duration)
		if err == nil && end.After(next) {
			return nil, &recurrence.SpecError{Field: recurrence.FieldWindowLength, Value: rq.Spec.WindowLength.Duration.String(),
				Reason: fmt.Sprintf("the window starting at %s would overlap the next one, %s later", start.Format(time.RFC3339), next.Sub(start))}
		}
		out = append(out, *RecurringWindow(rq, recurrence.Window{Name: recurrence.Name(rq.Name, start), Start: start, End: end}))
		start = next
	}
	return out, nil
}
