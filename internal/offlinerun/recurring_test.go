package offlinerun_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/experiments"
	"github.com/laxity-dev/laxity/internal/offlinerun"
	"github.com/laxity-dev/laxity/internal/pass"
	"github.com/laxity-dev/laxity/internal/planner"
)

// Nodes that take twice the planned lead time are measured as such, and
// the plan's view of when they come is not changed by it.
func TestTrueLeadIsMeasured(t *testing.T) {
	// With a margin the sample's plan grows the pool (without one it stays
	// on its initial 2 nodes).
	w, doc := samplePlan(t, 0.15)
	w.Planning.RuntimeMargin = 0.15
	lead := time.Duration(2 * w.Pool.ProvisioningLeadTime * float64(time.Second))
	got, err := offlinerun.Run(w, &doc, offlinerun.Options{Seed: 1, TrueLead: lead})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Leads) == 0 {
		t.Fatal("no node arrival was measured")
	}
	for _, l := range got.Leads {
		if math.Abs(l-lead.Seconds()) > 1e-6 {
			t.Errorf("a node took %.1f s, the true lead time is %.1f s", l, lead.Seconds())
		}
	}
	asPlanned, err := offlinerun.Run(w, &doc, offlinerun.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range asPlanned.Leads {
		if math.Abs(l-w.Pool.ProvisioningLeadTime) > 1e-6 {
			t.Errorf("a node took %.1f s, the lead time is %.1f s", l, w.Pool.ProvisioningLeadTime)
		}
	}
}

// A true model other than the plan's is what the steps take.
func TestTrueCostIsWhatRuns(t *testing.T) {
	w, doc := samplePlan(t, 0)
	truth := map[string]planner.Query{}
	for _, q := range w.Queries {
		truth[q.Name] = q
	}
	costs := map[string]costmodel.Model{}
	for _, q := range w.Queries {
		costs[q.Name] = q.Cost.Scaled(0.5)
	}
	got, err := offlinerun.Run(w, &doc, offlinerun.Options{Seed: 1, TrueCost: costs})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range got.Steps {
		q := truth[s.Query]
		want := q.Cost.Scaled(0.5).MergeSeconds(s.Nodes, s.Inputs)
		if s.Kind == planner.StepBatch {
			want = q.Cost.Scaled(0.5).BatchSeconds(s.Nodes, s.ToTuple-s.FromTuple)
		}
		if math.Abs(s.End-s.Start-want) > 1e-6 {
			t.Fatalf("%s %s %d took %.3f s, the true model says %.3f s", s.Query, s.Kind, s.Index, s.End-s.Start, want)
		}
	}
	if _, err := offlinerun.Run(w, &doc, offlinerun.Options{TrueCost: map[string]costmodel.Model{"nope": {}}}); err == nil {
		t.Error("a true model for a query not in the workload was accepted")
	}
}

// Steps 1.4x slower than declared: the first window, planned as declared,
// re-plans for what its steps teach; the windows after it are planned
// from what was learned, meet every deadline without re-planning, and
// learn the slowdown. Without learning (the schedule's learning: Off)
// nothing re-plans for slow steps, and every window misses.
func TestRecurringLearnsASlowdown(t *testing.T) {
	w, err := experiments.Sample()
	if err != nil {
		t.Fatal(err)
	}
	o := offlinerun.RecurringOptions{Windows: 3, Slowdown: 1.4, Learning: true}
	got, err := offlinerun.RunRecurring(w, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Windows[0].Replans) == 0 {
		t.Error("window 1 did not re-plan for the slowdown")
	}
	for k, win := range got.Windows[1:] {
		if len(win.Missed) > 0 || len(win.Replans) > 0 {
			t.Errorf("window %d: missed %v, re-planned at %v", k+2, win.Missed, win.Replans)
		}
	}
	for i, l := range got.Windows[2].Learned {
		declared := w.Queries[i].Cost
		if f := l.Model.BatchSeconds(2, 1e6) / declared.BatchSeconds(2, 1e6); math.Abs(f-1.4) > 0.03 {
			t.Errorf("%s: learned batches %.3f x declared, the truth is 1.4", w.Queries[i].Name, f)
		}
	}
	o.Learning = false
	open, err := offlinerun.RunRecurring(w, o)
	if err != nil {
		t.Fatal(err)
	}
	for k, win := range open.Windows {
		if len(win.Replans) > 0 || len(win.Missed) == 0 {
			t.Errorf("without learning, window %d re-planned at %v and missed %v; want no re-plan and misses", k+1, win.Replans, win.Missed)
		}
	}
}

// Nodes that arrive late are learned: the window after plans with the
// measured lead time. (Steps 15% slower make the sample's plan ask for
// nodes at all.)
func TestRecurringLearnsALeadTime(t *testing.T) {
	w, err := experiments.Sample()
	if err != nil {
		t.Fatal(err)
	}
	got, err := offlinerun.RunRecurring(w, offlinerun.RecurringOptions{Windows: 2, Slowdown: 1.15, LeadFactor: 2, Learning: true})
	if err != nil {
		t.Fatal(err)
	}
	if first, second := got.Windows[0].LeadTime, got.Windows[1].LeadTime; first != w.Pool.ProvisioningLeadTime || second != 2*w.Pool.ProvisioningLeadTime {
		t.Errorf("planned with lead times %v then %v, want %v then %v", first, second, w.Pool.ProvisioningLeadTime, 2*w.Pool.ProvisioningLeadTime)
	}
	if _, err := offlinerun.RunRecurring(w, offlinerun.RecurringOptions{}); err == nil {
		t.Error("a run of no windows was accepted")
	}
}

// The initial nodes of a window planned ahead are asked for the planned
// lead time before its first step: on time when they take that long, so
// the plan runs as without asking ahead, and measured; late by the
// difference when they take twice as long, which holds the first step back
// by as much.
func TestAskAheadAsksALeadTimeBeforeTheFirstStep(t *testing.T) {
	w, doc := samplePlan(t, 0)
	planned := time.Duration(w.Pool.ProvisioningLeadTime * float64(time.Second))
	first := doc.Steps[0].Start
	for _, st := range doc.Steps {
		first = math.Min(first, st.Start)
	}
	ready, err := offlinerun.Run(w, &doc, offlinerun.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		lead  time.Duration
		delay float64
	}{
		{name: "on time", lead: planned, delay: 0},
		{name: "twice the lead time", lead: 2 * planned, delay: planned.Seconds()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := offlinerun.Run(w, &doc, offlinerun.Options{Seed: 1, TrueLead: tc.lead, AskAhead: true})
			if err != nil {
				t.Fatal(err)
			}
			if start := got.Steps[0].Start; math.Abs(start-(first+tc.delay)) > 1e-6 {
				t.Errorf("the first step started at %.3f s, want %.3f s", start, first+tc.delay)
			}
			initial := doc.Requests[0].Nodes
			if len(got.Leads) < initial {
				t.Fatalf("measured %d lead times, want the %d initial nodes' at least", len(got.Leads), initial)
			}
			for _, l := range got.Leads[:initial] {
				if math.Abs(l-tc.lead.Seconds()) > 1e-6 {
					t.Errorf("an initial node took %.1f s, the true lead time is %.1f s", l, tc.lead.Seconds())
				}
			}
			if tc.delay == 0 && (len(got.Missed) != len(ready.Missed) || math.Abs(got.Cost-ready.Cost) > 1e-9 || len(got.Steps) != len(ready.Steps)) {
				t.Errorf("on time, the run differs from one with the nodes ready at the origin: missed %v, cost %.4f; want %v, %.4f",
					got.Missed, got.Cost, ready.Missed, ready.Cost)
			}
		})
	}
}

// Nodes twice as slow to come as declared make the first window, whose
// initial nodes are asked for the declared lead time ahead, start late; it
// re-plans as soon as it has measured them (ModelLearned) and misses no
// deadline; the window after plans with the measured lead time from the
// start, asks that much earlier, and misses none either.
func TestRecurringAsksEarlierOnceNodesCameLate(t *testing.T) {
	w, err := experiments.Sample()
	if err != nil {
		t.Fatal(err)
	}
	got, err := offlinerun.RunRecurring(w, offlinerun.RecurringOptions{Windows: 2, LeadFactor: 2, Learning: true})
	if err != nil {
		t.Fatal(err)
	}
	first, second := got.Windows[0], got.Windows[1]
	if len(first.Missed) > 0 || !slices.Contains(first.Reasons, pass.ModelLearned) {
		t.Errorf("window 1 re-planned for %v and missed %v; want a re-plan for the measured lead time and no miss", first.Reasons, first.Missed)
	}
	if second.LeadTime != 2*w.Pool.ProvisioningLeadTime || len(second.Missed) > 0 {
		t.Errorf("window 2 planned with a lead time of %v s and missed %v; want %v s and none", second.LeadTime, second.Missed, 2*w.Pool.ProvisioningLeadTime)
	}
}

// BenchmarkRecurringWindow is one window of the sample at 4x its rate,
// learning from the one before.
func BenchmarkRecurringWindow(b *testing.B) {
	w, err := experiments.Sample()
	if err != nil {
		b.Fatal(err)
	}
	for i := range w.Queries {
		q := &w.Queries[i]
		rates := append([]planner.RateSegment(nil), q.Rates...)
		for j := range rates {
			rates[j].TuplesPerSecond *= 4
		}
		q.Rates = rates
	}
	o := offlinerun.RecurringOptions{Windows: 1, Noise: offlinerun.BCFramework, Learning: true}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := offlinerun.RunRecurring(w, o); err != nil {
			b.Fatal(err)
		}
	}
}
