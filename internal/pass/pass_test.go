package pass

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/dispatch"
	"github.com/laxity-dev/laxity/internal/planner"
)

var origin = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// twoQueries is a window of 10 minutes of two streams, a due 4 minutes
// after it closes and b, given slack, 20 minutes after.
func twoQueries(slackA, slackB float64) planner.Workload {
	model := costmodel.Model{Batch: costmodel.Linear{Overhead: 20, Parallel: 0.002}, Merge: costmodel.Linear{Overhead: 10, Parallel: 1}}
	query := func(name string, slack float64) planner.Query {
		return planner.Query{
			Name: name, WindowStart: 0, WindowEnd: 600, Deadline: 600 + slack,
			Rates: []planner.RateSegment{{TuplesPerSecond: 100}}, Granularity: 100, Cost: model,
		}
	}
	return planner.Workload{
		Origin: origin,
		Pool:   planner.Pool{Sizes: []int{1, 2, 4}, PricePerNodeHour: 1, ProvisioningLeadTime: 60},
		Planning: planner.Planning{
			BatchSizeFactors: []int{1, 2}, BacktrackStep: 1, MaxBatchDuration: 3600, Policy: planner.LeastLaxity, Objective: planner.Executable, GridOnly: true,
		},
		Queries: []planner.Query{query("a", slackA), query("b", slackB)},
	}
}

// midWindow is the snapshot at now of w carried out as planned: every step
// the plan ends by now succeeded as planned, the nodes the plan asks for
// are ready.
func midWindow(t *testing.T, w planner.Workload, now time.Duration) *Snapshot {
	t.Helper()
	doc, err := planner.Plan(w)
	if err != nil {
		t.Fatal(err)
	}
	if !doc.Chosen.Feasible {
		t.Fatalf("the workload has no plan meeting its deadlines: %+v", doc.Chosen)
	}
	at := origin.Add(now)
	s := &Snapshot{
		Now: at, Workload: planner.WithOrigin(w, at), Inputs: "specs",
		Plan: &Plan{Doc: doc, Inputs: "specs", Reason: Initial, Models: ModelsOf(w)},
		Lead: time.Minute,
		Rules: Rules{
			Dispatch: dispatch.Settings{Sizes: w.Pool.Sizes, Policy: w.Planning.Policy, MaxAttempts: 3, Backoff: 30 * time.Second},
		},
	}
	s.Ready = dispatch.RequestAt(doc.Origin, doc.Requests, at)
	s.PreviousReady = s.Ready
	for _, q := range w.Queries {
		pq := Query{
			Name: q.Name, WindowStart: origin, WindowEnd: origin.Add(time.Duration(q.WindowEnd) * time.Second),
			Closed:   origin.Add(time.Duration(q.WindowEnd) * time.Second),
			Deadline: origin.Add(time.Duration(q.Deadline) * time.Second),
			Arrived:  int64(min(now.Seconds(), q.WindowEnd) * 100),
		}
		for _, st := range doc.Steps {
			end := origin.Add(time.Duration(st.End * float64(time.Second)))
			if st.Query != q.Name || end.After(at) {
				continue
			}
			a := dispatch.Attempt{State: dispatch.Succeeded, Started: origin.Add(time.Duration(st.Start * float64(time.Second))), Ended: end, Nodes: st.Nodes, Inputs: st.Inputs}
			switch st.Kind {
			case planner.StepBatch:
				pq.Batches = append(pq.Batches, dispatch.Batch{From: st.FromTuple, To: st.ToTuple, Attempt: a})
			case planner.StepPartial:
				pq.Partials = append(pq.Partials, a)
			default:
				pq.Final = &a
			}
		}
		s.Queries = append(s.Queries, pq)
	}
	return s
}

// fasterBy has query a's stream arrive f times its declared rate, on a
// plan without headroom, measured over a one-minute rate window and, with
// sincePlan, also since the plan was made before the window opened.
func fasterBy(s *Snapshot, f float64, sincePlan bool) {
	s.Rules.RateWindow = time.Minute
	s.Plan.Doc.MaxSupportedRateFactor = 1
	q := &s.Queries[0]
	q.Rate = 100 * f
	q.Arrived = int64(100 * f * s.Now.Sub(q.WindowStart).Seconds())
	if sincePlan {
		s.Plan.Arrivals = &Arrivals{Made: origin.Add(-time.Minute)}
	}
}

// learnedSlower prices query name f times its planned model from now on, as
// learning does when its steps ran that much slower.
func learnedSlower(s *Snapshot, name string, f float64) {
	s.Workload.Queries = slices.Clone(s.Workload.Queries)
	for i := range s.Workload.Queries {
		if q := &s.Workload.Queries[i]; q.Name == name {
			q.Cost = q.Cost.Scaled(f)
		}
	}
}

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		w      planner.Workload
		at     time.Duration
		change func(*Snapshot)
		want   string
	}{
		{name: "the plan in force holds", w: twoQueries(240, 1200), at: 5 * time.Minute, want: ""},
		{name: "no plan yet", w: twoQueries(240, 1200), at: 5 * time.Minute, change: func(s *Snapshot) { s.Plan = nil }, want: Initial},
		{name: "the specs changed", w: twoQueries(240, 1200), at: 5 * time.Minute, change: func(s *Snapshot) { s.Inputs = "other specs" }, want: SpecChanged},
		{
			name: "a stream measurably faster than the plan supports", w: twoQueries(240, 1200), at: 5 * time.Minute,
			change: func(s *Snapshot) {
				s.Rules.RateWindow = 3 * time.Minute
				s.Queries[0].Rate = 100 * (s.Plan.Doc.MaxSupportedRateFactor + 1)
			},
			want: RateExceeded,
		},
		{
			// 40% faster over the last minute is within the noise of a
			// count of 100-tuple units (65/s at 5σ)...
			name: "a stream 40% faster, within one window's noise", w: twoQueries(240, 1200), at: 5 * time.Minute,
			change: func(s *Snapshot) { fasterBy(s, 1.4, false) }, want: "",
		},
		{
			// ...not over the five minutes since the plan (29/s).
			name: "the same stream counted since the plan was made", w: twoQueries(240, 1200), at: 5 * time.Minute,
			change: func(s *Snapshot) { fasterBy(s, 1.4, true) }, want: RateExceeded,
		},
		{
			name: "steps 3x slower than planned, the tight query made late", w: twoQueries(60, 1200), at: 5 * time.Minute,
			change: func(s *Snapshot) { learnedSlower(s, "a", 3); learnedSlower(s, "b", 3) }, want: ModelLearned,
		},
		{
			// The plan priced the steps 1.8x the declared model and
			// they run 4% slower still: within the tolerance, but the
			// tight query is late on the one node the plan asks for,
			// and would not be on four.
			name: "steps a little slower than a tight plan priced, more nodes can save it", w: twoQueries(60, 1200), at: 5 * time.Minute,
			change: func(s *Snapshot) {
				learnedSlower(s, "a", 1.8)
				learnedSlower(s, "b", 1.8)
				s.Plan.Models = ModelsOf(s.Workload)
				learnedSlower(s, "a", 1.04)
				learnedSlower(s, "b", 1.04)
			},
			want: RunningSlow,
		},
		{
			name: "steps 1.2x slower than planned, absorbed by the slack", w: twoQueries(3000, 3600), at: 5 * time.Minute,
			change: func(s *Snapshot) { learnedSlower(s, "a", 1.2); learnedSlower(s, "b", 1.2) }, want: "",
		},
		{
			name: "steps a little faster than planned", w: twoQueries(240, 1200), at: 5 * time.Minute,
			change: func(s *Snapshot) { learnedSlower(s, "a", 0.9) }, want: "",
		},
		{
			// A model wrong by half is re-made before lateness would show,
			// here to release nodes.
			name: "steps twice as fast as planned", w: twoQueries(240, 1200), at: 9 * time.Minute,
			change: func(s *Snapshot) { learnedSlower(s, "a", 0.5) }, want: ModelLearned,
		},
		{
			name: "steps 1.3x slower than planned: beyond the material change, re-planned before lateness shows", w: twoQueries(3000, 3600), at: 9 * time.Minute,
			change: func(s *Snapshot) { learnedSlower(s, "a", 1.3) }, want: ModelLearned,
		},
		{
			name: "the same move seen in fewer steps than the evidence asks", w: twoQueries(3000, 3600), at: 9 * time.Minute,
			change: func(s *Snapshot) {
				learnedSlower(s, "a", 1.3)
				s.Queries[0].Batches = s.Queries[0].Batches[:MinEvidence-1]
			},
			want: "",
		},
		{
			name: "nodes slower to come than the plan assumed", w: twoQueries(240, 1200), at: 5 * time.Minute,
			change: func(s *Snapshot) { s.Workload.Pool.ProvisioningLeadTime = 120 }, want: ModelLearned,
		},
		{
			name: "every query finished: the plan stays whatever changed", w: twoQueries(240, 1200), at: 5 * time.Minute,
			change: func(s *Snapshot) {
				for i := range s.Queries {
					s.Queries[i].Final = &dispatch.Attempt{State: dispatch.Succeeded}
				}
				s.Inputs = "other specs"
			},
			want: "",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := midWindow(t, tc.w, tc.at)
			if tc.change != nil {
				tc.change(s)
			}
			got, err := Judge(s)
			if err != nil {
				t.Fatal(err)
			}
			if got.Reason != tc.want {
				t.Errorf("Judge = %q (%+v), want %q", got.Reason, got.Learned, tc.want)
			}
		})
	}
}

func TestJudgeNodesLost(t *testing.T) {
	w := twoQueries(240, 1200)
	doc, err := planner.Plan(w)
	if err != nil {
		t.Fatal(err)
	}
	// The moment the plan runs on its largest pool: losing nodes then is
	// losing what the work needs.
	var busiest planner.Step
	for _, st := range doc.Steps {
		if st.Nodes > busiest.Nodes {
			busiest = st
		}
	}
	s := midWindow(t, w, time.Duration((busiest.Start+busiest.End)/2*float64(time.Second)))
	s.PreviousReady, s.Ready = busiest.Nodes, busiest.Nodes-1
	got, err := Judge(s)
	if err != nil {
		t.Fatal(err)
	}
	if got.Reason != NodesLost || got.Lost == nil || got.Lost.To != busiest.Nodes-1 {
		t.Errorf("Judge = %+v, want NodesLost down to %d", got, busiest.Nodes-1)
	}
}

func TestJudgeNamesAQueryThatCannotBePlanned(t *testing.T) {
	s := midWindow(t, twoQueries(240, 1200), 5*time.Minute)
	s.Workload.Queries = s.Workload.Queries[:1]
	_, err := Judge(s)
	var np *NotPlannable
	if !errors.As(err, &np) || np.Query != "b" {
		t.Errorf("Judge = %v, want query b named as not plannable", err)
	}
}

func TestActFollowsThePlan(t *testing.T) {
	w := twoQueries(240, 1200)
	s := midWindow(t, w, 0)
	dqs, err := RunTime(s)
	if err != nil {
		t.Fatal(err)
	}
	a := Act(s, dqs)
	if want := s.Plan.Doc.Requests[0].Nodes; a.Request != want {
		t.Errorf("asked for %d nodes at the origin, the plan asks for %d", a.Request, want)
	}
	if a.Decision.Launch != nil {
		t.Errorf("launched %+v before any tuple arrived", a.Decision.Launch)
	}
	if !a.Next.After(s.Now) {
		t.Errorf("looks again at %v, not after now %v", a.Next, s.Now)
	}
	// A polled stream is looked at every poll while its window is open.
	s.Rules.Poll = 10 * time.Second
	if got := Act(s, dqs).Next; got.After(s.Now.Add(10 * time.Second)) {
		t.Errorf("with a polled stream the pass looks again at %v, after the poll", got)
	}
}

func TestPricePoints(t *testing.T) {
	if got := PricePoints(&planner.QueryPlan{BatchSize: 5000, Batches: 4}, []int{2, 4}); len(got) != 4 {
		t.Fatalf("%d points, want a batch and a merge on each of 2 sizes", len(got))
	}
	if got := PricePoints(nil, []int{2}); got != nil {
		t.Errorf("a query the plan does not cover has points %v", got)
	}
}
