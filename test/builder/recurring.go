package builder

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
)

// RecurringBuilder builds a RecurringQuery.
type RecurringBuilder struct {
	rq laxityv1alpha1.RecurringQuery
}

// Recurring is a RecurringQuery ns/name of schedule "pool" whose windows
// start every 10 minutes, last 5 and are due 4 minutes after they end,
// two of them ahead, with Query's input, cost model and DefaultTemplate.
func Recurring(ns, name string) *RecurringBuilder {
	q := Query(ns, name).Obj()
	return &RecurringBuilder{rq: laxityv1alpha1.RecurringQuery{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: laxityv1alpha1.RecurringQuerySpec{
			Schedule:               "*/10 * * * *",
			TimeZone:               "UTC",
			WindowLength:           metav1.Duration{Duration: 5 * time.Minute},
			DeadlineAfterWindowEnd: metav1.Duration{Duration: 4 * time.Minute},
			WindowsAhead:           ptr.To[int32](2),
			Template: laxityv1alpha1.RecurringQueryTemplate{
				ScheduleName: q.Spec.ScheduleName, Input: q.Spec.Input, CostModel: q.Spec.CostModel,
				SparkApplication: &runtime.RawExtension{Raw: []byte(DefaultTemplate)},
			},
		},
	}}
}

// Cron sets the schedule and the window length.
func (b *RecurringBuilder) Cron(schedule string, windowLength time.Duration) *RecurringBuilder {
	b.rq.Spec.Schedule, b.rq.Spec.WindowLength = schedule, metav1.Duration{Duration: windowLength}
	return b
}

// StartingDeadline sets how late a window may still be created.
func (b *RecurringBuilder) StartingDeadline(d time.Duration) *RecurringBuilder {
	b.rq.Spec.StartingDeadline = &metav1.Duration{Duration: d}
	return b
}

// Limits sets the history limits.
func (b *RecurringBuilder) Limits(successful, failed int32) *RecurringBuilder {
	b.rq.Spec.SuccessfulWindowsHistoryLimit, b.rq.Spec.FailedWindowsHistoryLimit = &successful, &failed
	return b
}

// Schedule sets the ElasticSchedule the windows run on.
func (b *RecurringBuilder) Schedule(name string) *RecurringBuilder {
	b.rq.Spec.Template.ScheduleName = name
	return b
}

// Obj returns a copy of the RecurringQuery.
func (b *RecurringBuilder) Obj() *laxityv1alpha1.RecurringQuery { return b.rq.DeepCopy() }
