package offlinerun_test

import (
	"strings"
	"testing"
	"time"

	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/dispatch"
	"github.com/laxity-dev/laxity/internal/offlinerun"
	"github.com/laxity-dev/laxity/internal/pass"
	"github.com/laxity-dev/laxity/internal/planner"
)

// sampleOperator is an operator over the sample workload that learns as
// the operator does when its schedule applies what it learns, from nothing
// learned before, with plan in force (nil for none).
func sampleOperator(t *testing.T, plan *planner.Document, stuck dispatch.StuckRule) (*offlinerun.Operator, planner.Workload) {
	t.Helper()
	w, _ := samplePlan(t, 0)
	declared := map[string]costmodel.Model{}
	for _, q := range w.Queries {
		declared[q.Name] = q.Cost
	}
	c := offlinerun.OperatorConfig{
		Workload: w,
		Rules: pass.Rules{
			Dispatch: dispatch.Settings{Sizes: w.Pool.Sizes, Policy: w.Planning.Policy, MaxAttempts: 3, Backoff: 30 * time.Second},
			Stuck:    stuck, Poll: 15 * time.Second,
		},
		Learning: &offlinerun.Learning{Declared: declared, DeclaredLead: w.Pool.ProvisioningLeadTime},
	}
	if plan != nil {
		c.Plan = &pass.Plan{Doc: *plan, Inputs: "specs", Reason: pass.Initial, Models: pass.ModelsOf(w), Arrivals: &pass.Arrivals{Made: plan.Origin}}
	}
	o, err := offlinerun.NewOperator(c)
	if err != nil {
		t.Fatal(err)
	}
	return o, w
}

// arrivedBy is what every query of w has arrived by now (at its declared
// rate), with the launched steps of one query.
func arrivedBy(w planner.Workload, now time.Time, launched offlinerun.QueryObservation) offlinerun.Observation {
	obs := offlinerun.Observation{Now: now}
	for _, q := range w.Queries {
		elapsed := min(max(now.Sub(w.Origin).Seconds()-q.WindowStart, 0), q.WindowEnd-q.WindowStart)
		qo := offlinerun.QueryObservation{Name: q.Name}
		if q.Name == launched.Name {
			qo = launched
		}
		qo.Arrived = int64(elapsed*q.Rates[0].TuplesPerSecond) / q.Granularity * q.Granularity
		obs.Queries = append(obs.Queries, qo)
	}
	return obs
}

func TestOperatorMakesTheFirstPlanAndKeepsIt(t *testing.T) {
	o, w := sampleOperator(t, nil, dispatch.StuckRule{})
	first, err := o.Pass(arrivedBy(w, w.Origin, offlinerun.QueryObservation{}))
	if err != nil {
		t.Fatal(err)
	}
	if first.Verdict.Reason != pass.Initial || first.Plan == nil || first.Plan.Reason != pass.Initial {
		t.Fatalf("first pass: verdict %q, plan %v; want an Initial plan", first.Verdict.Reason, first.Plan)
	}
	if !first.Plan.Arrivals.Made.Equal(w.Origin) || len(first.Plan.Models.Queries) != len(w.Queries) {
		t.Errorf("the plan records arrivals %+v and models of %d queries", first.Plan.Arrivals, len(first.Plan.Models.Queries))
	}
	if want := dispatch.RequestAt(first.Plan.Doc.Origin, first.Plan.Doc.Requests, w.Origin); first.Request != want {
		t.Errorf("asked for %d nodes, the plan for %d", first.Request, want)
	}
	second, err := o.Pass(arrivedBy(w, w.Origin.Add(10*time.Second), offlinerun.QueryObservation{}))
	if err != nil {
		t.Fatal(err)
	}
	if second.Verdict.Reason != "" || second.Plan != nil {
		t.Errorf("second pass re-planned (%q)", second.Verdict.Reason)
	}
}

// A lead time measured in a pass is planned with from the next one, as the
// operator's next pass reads it from the schedule's status.
func TestOperatorRePlansForALeadTimeMeasuredAtTheNextPass(t *testing.T) {
	_, doc := samplePlan(t, 0)
	o, w := sampleOperator(t, &doc, dispatch.StuckRule{})
	asked, err := o.Pass(arrivedBy(w, w.Origin, offlinerun.QueryObservation{}))
	if err != nil {
		t.Fatal(err)
	}
	if asked.Request < 1 || asked.Measured {
		t.Fatalf("asked for %d nodes, measured %v", asked.Request, asked.Measured)
	}
	arrived := w.Origin.Add(15 * time.Minute)
	obs := arrivedBy(w, arrived, offlinerun.QueryObservation{})
	obs.Ready = asked.Request
	met, err := o.Pass(obs)
	if err != nil {
		t.Fatal(err)
	}
	if !met.Measured || met.Lead != 15*time.Minute {
		t.Fatalf("measured %s (%v), want 15m", met.Lead, met.Measured)
	}
	if met.Verdict.Reason != "" {
		t.Errorf("re-planned (%q) in the pass that measured the lead time", met.Verdict.Reason)
	}
	obs.Now = arrived.Add(5 * time.Second)
	next, err := o.Pass(obs)
	if err != nil {
		t.Fatal(err)
	}
	l := next.Verdict.Learned
	if next.Verdict.Reason != pass.ModelLearned || l == nil || l.Query != "" || l.Lead != 900 || l.PlannedLead != w.Pool.ProvisioningLeadTime {
		t.Fatalf("next pass: verdict %+v, want ModelLearned for the 900 s lead time", next.Verdict)
	}
	if got := next.Plan.Models.LeadTimeSeconds; got != 900 {
		t.Errorf("the new plan priced the lead time at %v s", got)
	}
	if got := o.LeadTimes(); len(got) != 1 || got[0] != 900 {
		t.Errorf("lead times kept %v", got)
	}
}

// Three batches of a query that ran three times as long as declared
// re-plan the pass that sees them, priced with what they taught.
func TestOperatorLearnsFromTheWindowsSteps(t *testing.T) {
	_, doc := samplePlan(t, 0)
	o, w := sampleOperator(t, &doc, dispatch.StuckRule{})
	q := w.Queries[0]
	size := doc.Queries[0].BatchSize
	ran := offlinerun.QueryObservation{Name: q.Name}
	start := w.Origin.Add(450 * time.Second)
	for k := range int64(3) {
		took := costmodel.Duration(3 * q.Cost.BatchSeconds(2, size)).Round(time.Second)
		ran.Batches = append(ran.Batches, dispatch.Batch{From: k * size, To: (k + 1) * size, Attempt: dispatch.Attempt{
			State: dispatch.Succeeded, Launched: start, Started: start, Ended: start.Add(took), Nodes: 2,
		}})
		start = start.Add(took + 5*time.Minute)
	}
	obs := arrivedBy(w, start, ran)
	obs.Ready = 2
	got, err := o.Pass(obs)
	if err != nil {
		t.Fatal(err)
	}
	l := got.Verdict.Learned
	if got.Verdict.Reason != pass.ModelLearned || l == nil || l.Query != q.Name {
		t.Fatalf("verdict %+v, want ModelLearned for %s", got.Verdict, q.Name)
	}
	priced := got.Plan.Models.Queries[q.Name].Cost
	if r := priced.BatchSeconds(2, size) / q.Cost.BatchSeconds(2, size); r < 2 {
		t.Errorf("the new plan prices %s's batches at %.2f times the declared model", q.Name, r)
	}
}

// A step past its stuck bound is cancelled and its retry waits for the
// backoff, as the operator's pass does.
func TestOperatorCancelsStuckSteps(t *testing.T) {
	_, doc := samplePlan(t, 0)
	o, w := sampleOperator(t, &doc, dispatch.StuckRule{Factor: 3, MinExtra: 2 * time.Minute})
	q := w.Queries[0]
	size := doc.Queries[0].BatchSize
	launched := w.Origin.Add(450 * time.Second)
	now := launched.Add(20 * time.Minute)
	obs := arrivedBy(w, now, offlinerun.QueryObservation{Name: q.Name, Batches: []dispatch.Batch{{To: size, Attempt: dispatch.Attempt{
		State: dispatch.Running, Launched: launched, Started: launched, Nodes: 2,
	}}}})
	obs.Ready = 2
	got, err := o.Pass(obs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Cancel) != 1 || got.Cancel[0].Query != q.Name || got.Cancel[0].Kind != planner.StepBatch || got.Cancel[0].Index != 0 {
		t.Fatalf("cancelled %+v, want %s's batch 0", got.Cancel, q.Name)
	}
	if l := got.Launch; l != nil && l.Query == q.Name && l.Index == 0 {
		t.Errorf("retried %s's batch 0 at once: %+v", q.Name, l)
	}
	if got.Next.After(now.Add(30 * time.Second)) {
		t.Errorf("looks again at %s, after the retry's backoff ends", got.Next)
	}
}

func TestOperatorObservesOnlyItsQueries(t *testing.T) {
	o, w := sampleOperator(t, nil, dispatch.StuckRule{})
	obs := arrivedBy(w, w.Origin, offlinerun.QueryObservation{})
	obs.Queries = append(obs.Queries, offlinerun.QueryObservation{Name: "nope"})
	if _, err := o.Pass(obs); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("error %v, want one naming the query", err)
	}
}
