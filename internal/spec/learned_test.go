package spec

import (
	"math"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/learn"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/test/builder"
)

func TestObserveLeadTime(t *testing.T) {
	at := func(s int) time.Time { return origin.Add(time.Duration(s) * time.Second) }
	type pass struct {
		at                 int
		requested, ready   int32
		wantObserved       time.Duration
		wantPending        int32 // 0: none
		wantObservations   int
		wantLearnedAtLeast time.Duration
	}
	for _, tc := range []struct {
		name     string
		learning laxityv1alpha1.Learning
		passes   []pass
	}{
		{name: "a request met is one observation", passes: []pass{
			{at: 0, requested: 4, ready: 0, wantPending: 4},
			{at: 100, requested: 4, ready: 2, wantPending: 4},
			{at: 420, requested: 4, ready: 4, wantObserved: 420 * time.Second, wantObservations: 1, wantLearnedAtLeast: 300 * time.Second},
			{at: 500, requested: 4, ready: 4, wantObservations: 1},
		}},
		{name: "a request withdrawn before it was met is no observation", passes: []pass{
			{at: 0, requested: 4, ready: 2, wantPending: 4},
			{at: 60, requested: 2, ready: 2},
		}},
		{name: "a request raised while one is pending is timed from the first", passes: []pass{
			{at: 0, requested: 4, ready: 2, wantPending: 4},
			{at: 60, requested: 6, ready: 2, wantPending: 4},
			{at: 300, requested: 6, ready: 4, wantObserved: 300 * time.Second, wantObservations: 1},
			{at: 310, requested: 6, ready: 4, wantPending: 6, wantObservations: 1},
		}},
		{name: "learning off keeps nothing", learning: laxityv1alpha1.LearningOff, passes: []pass{
			{at: 0, requested: 4, ready: 0},
			{at: 400, requested: 4, ready: 4},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := builder.AnalyticsSchedule()
			es.Spec.Planning.Learning = tc.learning
			for i, p := range tc.passes {
				got := ObserveLeadTime(es, p.requested, p.ready, at(p.at))
				if got != p.wantObserved {
					t.Errorf("pass %d: observed %s, want %s", i, got, p.wantObserved)
				}
				lt := es.Status.LeadTime
				var pending int32
				var observations int
				if lt != nil {
					if lt.Pending != nil {
						pending = lt.Pending.Nodes
					}
					observations = len(lt.Observations)
				}
				if pending != p.wantPending || observations != p.wantObservations {
					t.Errorf("pass %d: pending %d, %d observations; want %d, %d", i, pending, observations, p.wantPending, p.wantObservations)
				}
				if p.wantLearnedAtLeast > 0 && (lt == nil || lt.Learned == nil || lt.Learned.Duration < p.wantLearnedAtLeast) {
					t.Errorf("pass %d: learned lead time %v, want at least %s", i, lt, p.wantLearnedAtLeast)
				}
			}
		})
	}
}

func TestObservationsBounded(t *testing.T) {
	es := builder.AnalyticsSchedule()
	for i := range 2 * laxityv1alpha1.MaxLeadTimeObservations {
		ObserveLeadTime(es, 4, 0, origin.Add(time.Duration(2*i)*time.Hour))
		ObserveLeadTime(es, 4, 4, origin.Add(time.Duration(2*i)*time.Hour+5*time.Minute))
	}
	if n := len(es.Status.LeadTime.Observations); n != laxityv1alpha1.MaxLeadTimeObservations {
		t.Fatalf("%d observations kept, want %d", n, laxityv1alpha1.MaxLeadTimeObservations)
	}
}

func TestLeadTimeUsesWhatWasLearnedOnlyWhenMateriallyLonger(t *testing.T) {
	for _, tc := range []struct {
		name     string
		learned  time.Duration
		learning laxityv1alpha1.Learning
		want     time.Duration
	}{
		{name: "nothing learned", want: 5 * time.Minute},
		{name: "a little late is planned as declared", learned: 5*time.Minute + 10*time.Second, want: 5 * time.Minute},
		{name: "twice as long is planned as measured", learned: 10 * time.Minute, want: 10 * time.Minute},
		{name: "observe only", learned: 10 * time.Minute, learning: laxityv1alpha1.LearningObserve, want: 5 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := builder.AnalyticsSchedule()
			es.Spec.Planning.Learning = tc.learning
			if tc.learned > 0 {
				es.Status.LeadTime = &laxityv1alpha1.LearnedLeadTime{Learned: &metav1.Duration{Duration: tc.learned}}
			}
			if got := LeadTime(es); got != tc.want {
				t.Errorf("LeadTime = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestObservationsOfFinishedSteps(t *testing.T) {
	q := builder.AnalyticsQuery("q1", nil)
	ts := func(s int) *metav1.Time { return &metav1.Time{Time: origin.Add(time.Duration(s) * time.Second)} }
	q.Status.Batches = []laxityv1alpha1.BatchStatus{
		{Index: 0, FromTuple: 0, ToTuple: 1000, Nodes: 2, Start: ts(0), End: ts(30), Outcome: laxityv1alpha1.StepSucceeded},
		{Index: 1, FromTuple: 1000, ToTuple: 2000, Nodes: 2, Start: ts(40), End: ts(50), Outcome: laxityv1alpha1.StepFailed},
		{Index: 2, FromTuple: 2000, ToTuple: 3000, Nodes: 2, Start: ts(60), Outcome: laxityv1alpha1.StepRunning},
	}
	q.Status.Partials = []laxityv1alpha1.PartialStatus{{Index: 0, Inputs: 3, Nodes: 4, Start: ts(100), End: ts(112), Outcome: laxityv1alpha1.StepSucceeded}}
	q.Status.Final = &laxityv1alpha1.FinalStatus{Inputs: 2, Nodes: 0, Start: ts(200), End: ts(210), Outcome: laxityv1alpha1.StepSucceeded}
	got := Observations(&q)
	if len(got) != 2 {
		t.Fatalf("got %d observations, want the succeeded batch and the partial merge (a final merge without a node count is left out): %+v", len(got), got)
	}
	learned := ToLearn(got)
	want := []learn.Observation{{Kind: learn.Batch, Work: 1000, Nodes: 2, Seconds: 30}, {Kind: learn.Merge, Work: 3, Nodes: 4, Seconds: 12}}
	for i := range want {
		if learned[i] != want[i] {
			t.Errorf("observation %d = %+v, want %+v", i, learned[i], want[i])
		}
	}
	if got[0].WindowStart != q.Spec.Window.Start {
		t.Errorf("window start %v, want the query's %v", got[0].WindowStart, q.Spec.Window.Start)
	}
}

func TestToLearnSkipsWhatDoesNotParse(t *testing.T) {
	got := ToLearn([]laxityv1alpha1.StepObservation{
		{Kind: laxityv1alpha1.StepKindBatch, Work: 10, Nodes: 1, Seconds: "NaN"},
		{Kind: laxityv1alpha1.StepKindBatch, Work: 10, Nodes: 0, Seconds: "5"},
		{Kind: laxityv1alpha1.StepKindBatch, Work: 10, Nodes: 1, Seconds: "-5"},
		{Kind: laxityv1alpha1.StepKindBatch, Work: 10, Nodes: 1, Seconds: "1e400"},
		{Kind: laxityv1alpha1.StepKindFinal, Work: 3, Nodes: 2, Seconds: "7.5"},
	})
	if len(got) != 1 || got[0] != (learn.Observation{Kind: learn.Merge, Work: 3, Nodes: 2, Seconds: 7.5}) {
		t.Fatalf("ToLearn = %+v, want only the final merge", got)
	}
}

func TestLearnedStatusRoundTrips(t *testing.T) {
	l := learn.Learned{
		Model: costmodel.Model{
			Batch: costmodel.Linear{Overhead: 25.5, Serial: 2.3e-8, Parallel: 1.7e-5},
			Merge: costmodel.Linear{Overhead: 10, Serial: 0.1, Parallel: 1.0 / 3},
		},
		Slowdown: 1.3, Margin: 0.125, TailMargin: 0.25, Batches: 7, Merges: 2,
	}
	status := LearnedStatus(l, nil, true)
	back, ok := ParseLearned(status)
	if !ok || back.Model != l.Model {
		t.Fatalf("ParseLearned(LearnedStatus(m)) = %+v, %v; want the model back to the bit", back.Model, ok)
	}
	if margin := back.Margin; margin != 0.125 || back.TailMargin != 0.25 || status.SlowdownPercent != "30" || status.BatchObservations != 7 || status.MergeObservations != 2 {
		t.Errorf("margin %g, slowdown %q, observations %d+%d", margin, status.SlowdownPercent, status.BatchObservations, status.MergeObservations)
	}
	q := builder.AnalyticsQuery("q1", nil)
	q.Status.Learned = status
	pq, err := Query(&q, origin)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		learning laxityv1alpha1.Learning
		applied  bool
		want     costmodel.Model
		tail     float64
	}{
		{laxityv1alpha1.LearningApply, true, l.Model, 0.25},
		{laxityv1alpha1.LearningApply, false, pq.Cost, 0},
		{laxityv1alpha1.LearningObserve, true, pq.Cost, 0},
	} {
		es := builder.AnalyticsSchedule()
		es.Spec.Planning.Learning = tc.learning
		status.Applied = tc.applied
		got := pq
		WithLearned(es, &q, &got)
		if got.Cost != tc.want || got.TailMargin != tc.tail {
			t.Errorf("%s, applied %v: planned with %+v and tail margin %g, want %+v and %g", tc.learning, tc.applied, got.Cost, got.TailMargin, tc.want, tc.tail)
		}
	}
}

// The learner's absolute bound on a lead time is the API's bound on the
// pool's durations: a learned lead time is always one the spec could
// declare.
func TestMaxLeadTimeIsTheAPIBound(t *testing.T) {
	if got, want := float64(learn.MaxLeadTimeSeconds), laxityv1alpha1.MaxDuration.Seconds(); got != want {
		t.Errorf("learn.MaxLeadTimeSeconds = %v, the API's MaxDuration %v s", got, want)
	}
}

// The lead times the offline run keeps are as many as a schedule's status
// holds, so that both learn the lead time from the same measurements.
func TestMaxLeadTimesIsWhatTheStatusKeeps(t *testing.T) {
	if learn.MaxLeadTimes != laxityv1alpha1.MaxLeadTimeObservations {
		t.Errorf("learn.MaxLeadTimes = %d, the status keeps %d", learn.MaxLeadTimes, laxityv1alpha1.MaxLeadTimeObservations)
	}
}

// What the offline run prices a query with is what the operator's plans
// read back from its status: the margin to a tenth of a percent, the
// coefficients within the API's bound.
func TestAsRecorded(t *testing.T) {
	l := learn.Learned{
		Model: costmodel.Model{
			Batch: costmodel.Linear{Overhead: 2e6, Serial: 2.3e-8, Parallel: 1.7e-5},
			Merge: costmodel.Linear{Overhead: 10.123456789, Serial: 0.1, Parallel: 1.0 / 3},
		},
		Margin: 0.123456, TailMargin: 0.23456,
	}
	recorded := AsRecorded(l)
	model, margin := recorded.Model, recorded.Margin
	if math.Abs(recorded.TailMargin-0.235) > 1e-12 {
		t.Errorf("tail margin %v, want 23.5%%", recorded.TailMargin)
	}
	want := l.Model
	want.Batch.Overhead = laxityv1alpha1.MaxCoefficientSeconds
	if model != want {
		t.Errorf("model %+v, want %+v", model, want)
	}
	if math.Abs(margin-0.123) > 1e-12 {
		t.Errorf("margin %v, want 12.3%%", margin)
	}
	es := builder.AnalyticsSchedule()
	q := builder.AnalyticsQuery("q1", nil)
	q.Status.Learned = LearnedStatus(l, nil, true)
	pq, err := Query(&q, origin)
	if err != nil {
		t.Fatal(err)
	}
	WithLearned(es, &q, &pq)
	if pq.Cost != model || pq.Margin != margin {
		t.Errorf("the operator plans with %+v and %v, the offline run with %+v and %v", pq.Cost, pq.Margin, model, margin)
	}
}

// A join priced with what was learned of it adds no late share on top of
// the fitted model, and the query it was made from keeps its own.
func TestPriceWithDropsTheLateShareOfAJoin(t *testing.T) {
	inputs := []planner.Input{{Name: "orders", LateFraction: 0.05}, {Name: "lineitem", LateFraction: 0.1}}
	pq := planner.Query{Name: "q12", Inputs: inputs}
	fitted := costmodel.Model{Batch: costmodel.Linear{Overhead: 11, Parallel: 2e-5}}
	PriceWith(&pq, learn.Learned{Model: fitted, Margin: 0.1})
	if pq.Cost != fitted || pq.Margin != 0.1 {
		t.Errorf("priced with %+v, margin %g; want the fitted model and margin 0.1", pq.Cost, pq.Margin)
	}
	for _, in := range pq.Inputs {
		if in.LateFraction != 0 {
			t.Errorf("input %s keeps a late share of %g on top of the fitted model", in.Name, in.LateFraction)
		}
	}
	if inputs[0].LateFraction != 0.05 || inputs[1].LateFraction != 0.1 {
		t.Errorf("the declared inputs changed: %+v", inputs)
	}
}
