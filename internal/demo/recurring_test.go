package demo

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/recurrence"
)

// window is a window's IntermittentQuery opening minutes after origin,
// five minutes long, due four after its end, with the given condition true.
func window(name string, minutes int, condition string) *laxityv1alpha1.IntermittentQuery {
	start := origin.Add(time.Duration(minutes) * time.Minute)
	q := &laxityv1alpha1.IntermittentQuery{ObjectMeta: metav1.ObjectMeta{Name: name}}
	q.Spec.Window = laxityv1alpha1.Window{Start: metav1.NewTime(start), End: metav1.NewTime(start.Add(5 * time.Minute))}
	q.Spec.Deadline = metav1.NewTime(start.Add(9 * time.Minute))
	if condition != "" {
		meta.SetStatusCondition(&q.Status.Conditions, metav1.Condition{Type: condition, Status: metav1.ConditionTrue, Reason: "Test"})
	}
	return q
}

func TestWindowOf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		q       *laxityv1alpha1.IntermittentQuery
		eq      executedQuery
		learned string
		want    Window
	}{{
		name: "met, with a slowdown learned", q: window("rq-1", 10, laxityv1alpha1.IntermittentQuerySucceededCondition),
		eq: executedQuery{deadline: 1140, finish: 930, finished: true}, learned: "38.5",
		want: Window{RecurringQuery: "rq", Query: "rq-1", Outcome: laxityv1alpha1.WindowSucceeded,
			WindowStart: 600, WindowEnd: 900, Deadline: 1140, Finish: 930, Met: true, LearnedSlowdownPercent: ptr.To(38.5)},
	}, {
		name: "finished one second late, nothing learned", q: window("rq-2", 10, laxityv1alpha1.IntermittentQuerySucceededCondition),
		eq: executedQuery{deadline: 1140, finish: 1141, finished: true},
		want: Window{RecurringQuery: "rq", Query: "rq-2", Outcome: laxityv1alpha1.WindowSucceeded,
			WindowStart: 600, WindowEnd: 900, Deadline: 1140, Finish: 1141},
	}, {
		name: "at its deadline is in time", q: window("rq-3", 10, laxityv1alpha1.IntermittentQuerySucceededCondition),
		eq: executedQuery{deadline: 1140, finish: 1140, finished: true}, learned: "-2.0",
		want: Window{RecurringQuery: "rq", Query: "rq-3", Outcome: laxityv1alpha1.WindowSucceeded,
			WindowStart: 600, WindowEnd: 900, Deadline: 1140, Finish: 1140, Met: true, LearnedSlowdownPercent: ptr.To(-2.0)},
	}, {
		name: "no result: the run's end is its finish", q: window("rq-4", 20, laxityv1alpha1.IntermittentQueryDeadlineMissedCondition),
		eq: executedQuery{deadline: 1740}, learned: "not a number",
		want: Window{RecurringQuery: "rq", Query: "rq-4", Outcome: laxityv1alpha1.WindowMissed,
			WindowStart: 1200, WindowEnd: 1500, Deadline: 1740, Finish: 2000},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := windowOf("rq", tc.q, tc.eq, tc.learned, origin, 2000)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("window (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWindowOutcome(t *testing.T) {
	running := window("r", 0, "")
	running.Status.Batches = []laxityv1alpha1.BatchStatus{{Outcome: laxityv1alpha1.StepRunning}}
	for _, tc := range []struct {
		q    *laxityv1alpha1.IntermittentQuery
		want laxityv1alpha1.WindowOutcome
	}{
		{window("p", 0, ""), laxityv1alpha1.WindowPending},
		{running, laxityv1alpha1.WindowRunning},
		{window("s", 0, laxityv1alpha1.IntermittentQuerySucceededCondition), laxityv1alpha1.WindowSucceeded},
		{window("f", 0, laxityv1alpha1.IntermittentQueryStalledCondition), laxityv1alpha1.WindowFailed},
		{window("m", 0, laxityv1alpha1.IntermittentQueryDeadlineMissedCondition), laxityv1alpha1.WindowMissed},
	} {
		if got := windowOutcome(tc.q); got != tc.want {
			t.Errorf("windowOutcome(%s) = %s, want %s", tc.q.Name, got, tc.want)
		}
	}
}

func TestMarshalDocument(t *testing.T) {
	doc := executedDocument(origin, nil, nil, 0, nil, nil, planner.Pool{})
	t.Run("no RecurringQuery: an empty windows list", func(t *testing.T) {
		data, err := Report{Executed: doc}.MarshalDocument()
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		if string(got["windows"]) != "[]" || got["steps"] == nil || got["origin"] == nil {
			t.Errorf("document %s, want the plan document's fields and windows: []", data)
		}
	})
	t.Run("one entry per window, in the report's seconds", func(t *testing.T) {
		windows := []Window{
			{RecurringQuery: "rq", Query: "rq-1", Outcome: laxityv1alpha1.WindowSucceeded, WindowStart: 600, WindowEnd: 900, Deadline: 1140, Finish: 930, Met: true, LearnedSlowdownPercent: ptr.To(38.5)},
			{RecurringQuery: "rq", Query: "rq-2", Outcome: laxityv1alpha1.WindowMissed, WindowStart: 1200, WindowEnd: 1500, Deadline: 1740, Finish: 2000},
		}
		data, err := Report{Executed: doc, Recurring: windows}.MarshalDocument()
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			planner.Document
			Windows []map[string]any `json:"windows"`
		}
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		want := []map[string]any{
			{"recurringQuery": "rq", "query": "rq-1", "outcome": "Succeeded", "windowStart": 600.0, "windowEnd": 900.0, "deadline": 1140.0, "finish": 930.0, "met": true, "learnedSlowdownPercent": 38.5},
			{"recurringQuery": "rq", "query": "rq-2", "outcome": "Missed", "windowStart": 1200.0, "windowEnd": 1500.0, "deadline": 1740.0, "finish": 2000.0, "met": false, "learnedSlowdownPercent": nil},
		}
		if diff := cmp.Diff(want, got.Windows); diff != "" {
			t.Errorf("windows (-want +got):\n%s", diff)
		}
		if !got.Origin.Equal(origin) {
			t.Errorf("origin %s, want %s: the plan document's fields are kept", got.Origin, origin)
		}
	})
}

func TestMissedAfterLearning(t *testing.T) {
	w := func(rq, q string, met bool) Window { return Window{RecurringQuery: rq, Query: q, Met: met} }
	for _, tc := range []struct {
		name    string
		windows []Window
		judged  int
		missed  []string
	}{
		{name: "none"},
		{name: "two windows, both late: learning", windows: []Window{w("a", "a1", false), w("a", "a2", false)}},
		{name: "the third late", windows: []Window{w("a", "a1", false), w("a", "a2", true), w("a", "a3", false), w("a", "a4", true)}, judged: 2, missed: []string{"a3"}},
		{
			name:    "each RecurringQuery learns from its own first two",
			windows: []Window{w("a", "a1", true), w("b", "b1", false), w("a", "a2", true), w("b", "b2", false), w("a", "a3", true), w("b", "b3", false)},
			judged:  2, missed: []string{"b3"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			judged, missed := MissedAfterLearning(tc.windows)
			if judged != tc.judged || !cmp.Equal(tc.missed, missed) {
				t.Errorf("MissedAfterLearning = %d, %v; want %d, %v", judged, missed, tc.judged, tc.missed)
			}
		})
	}
}

func TestWriteWindows(t *testing.T) {
	windows := []Window{
		{RecurringQuery: "rq", Query: "rq-1", Outcome: laxityv1alpha1.WindowSucceeded, WindowStart: 160, WindowEnd: 460, Deadline: 700, Finish: 730, LearnedSlowdownPercent: ptr.To(27.54)},
		{RecurringQuery: "rq", Query: "rq-2", Outcome: laxityv1alpha1.WindowSucceeded, WindowStart: 760, WindowEnd: 1060, Deadline: 1300, Finish: 1090, Met: true},
		{RecurringQuery: "rq", Query: "rq-3", Outcome: laxityv1alpha1.WindowSucceeded, WindowStart: 1360, WindowEnd: 1660, Deadline: 1900, Finish: 1686, Met: true, LearnedSlowdownPercent: ptr.To(30.8)},
	}
	for _, tc := range []struct {
		name    string
		windows []Window
		want    string
	}{{
		name: "no window", want: "",
	}, {
		name: "learned by the third", windows: windows, want: `RecurringQuery rq: 3 windows
  rq-1  window t+2m40s to t+7m40s  Succeeded, finished at t+12m10s, LATE by 30s; learned slowdown 27.5%
  rq-2  window t+12m40s to t+17m40s  Succeeded, finished at t+18m10s, 3m30s before its deadline; nothing learned yet
  rq-3  window t+22m40s to t+27m40s  Succeeded, finished at t+28m6s, 3m34s before its deadline; learned slowdown 30.8%
Learning from the windows: every deadline from the third window on was met (1 of 1 windows).
`,
	}, {
		name: "the third without a result",
		windows: append(windows[:2:2], Window{
			RecurringQuery: "rq", Query: "rq-3", Outcome: laxityv1alpha1.WindowMissed, WindowStart: 1360, WindowEnd: 1660, Deadline: 1900, Finish: 2000,
		}),
		want: `RecurringQuery rq: 3 windows
  rq-1  window t+2m40s to t+7m40s  Succeeded, finished at t+12m10s, LATE by 30s; learned slowdown 27.5%
  rq-2  window t+12m40s to t+17m40s  Succeeded, finished at t+18m10s, 3m30s before its deadline; nothing learned yet
  rq-3  window t+22m40s to t+27m40s  Missed, no result by t+33m20s, due at t+31m40s: MISSED; nothing learned yet
Learning from the windows: 1 of 1 windows from the third on missed their deadline: rq-3.
`,
	}, {
		name: "too few windows to judge", windows: windows[:1], want: `RecurringQuery rq: 1 windows
  rq-1  window t+2m40s to t+7m40s  Succeeded, finished at t+12m10s, LATE by 30s; learned slowdown 27.5%
Learning from the windows: no window after the first 2 ran, so none shows what was learned.
`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			WriteWindows(&out, tc.windows)
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClockStart(t *testing.T) {
	parse := func(schedule string) *recurring {
		s, err := recurrence.Validate(recurrence.Spec{Schedule: schedule, TimeZone: "UTC", WindowLength: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return &recurring{schedule: s}
	}
	at := func(hhmm string) time.Time {
		t, _ := time.Parse("15:04", hhmm)
		return recurringEpoch.Add(time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute)
	}
	for _, tc := range []struct {
		schedules []string
		lead      time.Duration
		want      time.Time
	}{
		// The sample: the first window at 00:10, a 2-minute lead time.
		{[]string{"*/10 * * * *"}, 2 * time.Minute, at("00:07")},
		// A lead time longer than the gap to the first start: the next.
		{[]string{"*/10 * * * *"}, 9 * time.Minute, at("00:10")},
		{[]string{"@hourly", "30 * * * *"}, 2 * time.Minute, at("00:27")},
		{[]string{"@every 15m"}, 90 * time.Second, at("00:12")},
	} {
		var rqs []*recurring
		for _, s := range tc.schedules {
			rqs = append(rqs, parse(s))
		}
		got := clockStart(rqs, tc.lead)
		if !got.Equal(tc.want) {
			t.Errorf("clockStart(%v, %s) = %s, want %s", tc.schedules, tc.lead, got.Format(time.RFC3339), tc.want.Format(time.RFC3339))
		}
		for _, rq := range rqs {
			if first := rq.schedule.Next(got); first.Sub(got) < tc.lead {
				t.Errorf("clockStart(%v, %s) = %s: the first window at %s starts within the lead time", tc.schedules, tc.lead, got.Format(time.RFC3339), first.Format(time.RFC3339))
			}
		}
	}
}

func TestPrepareRecurring(t *testing.T) {
	rq := &laxityv1alpha1.RecurringQuery{}
	rq.Spec.Template.Input.Kafka = &laxityv1alpha1.KafkaInput{}
	rq.Spec.SuccessfulWindowsHistoryLimit = ptr.To[int32](3)
	rq.Spec.FailedWindowsHistoryLimit = ptr.To[int32](10)
	changed := prepareRecurring(rq, 6)
	if rq.Spec.Template.Input.Kafka != nil || *rq.Spec.SuccessfulWindowsHistoryLimit != 6 || *rq.Spec.FailedWindowsHistoryLimit != 10 {
		t.Errorf("spec %+v: want the synthetic input and both limits at least 6", rq.Spec)
	}
	if len(changed) != 2 || !strings.Contains(changed[0], "spec.template.input.kafka") || !strings.Contains(changed[1], "successfulWindowsHistoryLimit") {
		t.Errorf("changes said %q, want the input and the limits named", changed)
	}
	if again := prepareRecurring(rq, 6); len(again) != 0 {
		t.Errorf("a ready RecurringQuery was changed again: %q", again)
	}
}
