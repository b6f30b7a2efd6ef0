package offlinerun

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/learn"
	"github.com/laxity-dev/laxity/internal/planner"
)

// RecurringOptions say how a run of consecutive windows departs from the
// workload as declared, and how the operator learns from one window for
// the next.
type RecurringOptions struct {
	// Windows is how many consecutive windows run.
	Windows int
	Seed    uint64
	// Slowdown multiplies every true duration: the cluster's steps take the
	// declared model times Slowdown, times 1 + a draw of Noise. 0 means 1.
	Slowdown float64
	Noise    Noise
	// LeadFactor multiplies the declared provisioning lead time into the
	// true one. 0 means 1.
	LeadFactor float64
	// Learning, when set, learns as the operator does when its schedule
	// applies what it learns: every window is planned from what the
	// windows before it observed and learns on from its own steps and
	// nodes (Learning); otherwise every window is planned from the
	// declared workload.
	Learning bool
	// Settings tune the learner; the zero value means learn.Defaults.
	Settings learn.Settings
	// Replan, when set, re-plans for rates as Options.Replan does.
	Replan *Replanning
}

// WindowResult is one window of a recurring run.
type WindowResult struct {
	// Planned is the choice of the plan the window started with.
	Planned planner.Chosen
	// Learned is, by query in the workload's order, the model and margin
	// the window was first planned with (declared, or learned where it
	// applies); LeadTime the provisioning lead time it planned with.
	Learned  []learn.Learned
	LeadTime float64
	// Missed, Cost, MaxNodes, Replans, Reasons and Steps are the window's
	// run (Result); Plan is the plan it started with. Steps and Plan say why
	// a deadline was missed.
	Missed   []string
	Cost     float64
	MaxNodes int
	Replans  []float64
	Reasons  []string
	Steps    []planner.Step
	Plan     *planner.Document
}

// RecurringResult is a recurring run, window by window.
type RecurringResult struct {
	Windows []WindowResult
}

// maxObservations bounds the observations kept per query, the newest:
// older ones weigh next to nothing (learn's half-life) and would only slow
// the fit. The lead times kept are as many as a schedule's status keeps
// (learn.MaxLeadTimes).
const maxObservations = 256

// RunRecurring runs o.Windows consecutive windows of w, whose cost models
// and lead time are the declared ones, as the operator does: every window
// is planned (planner.Plan) with what was learned so far — each query's
// learned model and margin (q.Cost, q.Margin) and the learned lead time —
// and carried out on a cluster that follows the true models (the declared
// ones times o.Slowdown, with o.Noise per step) and lead time (the declared
// one times o.LeadFactor), which the operator is not told. Every step that
// finished is an observation of its query, every node that arrived one of
// the lead time; with o.Learning the next window is planned from them. Each
// window is a fresh copy of w at the same origin with its own seed. As the
// operator plans a window before it starts (its windows exist a few starts
// ahead), each window's initial nodes are asked for the planned lead time
// before its first step and arrive the true lead time after that
// (Options.AskAhead): late, and measured, when the true lead time is
// longer.
func RunRecurring(w planner.Workload, o RecurringOptions) (RecurringResult, error) {
	if o.Windows < 1 {
		return RecurringResult{}, errors.New("offlinerun: a recurring run needs at least one window")
	}
	if o.Settings == (learn.Settings{}) {
		o.Settings = learn.Defaults
	}
	slowdown, leadFactor := o.Slowdown, o.LeadFactor
	if slowdown == 0 {
		slowdown = 1
	}
	if leadFactor == 0 {
		leadFactor = 1
	}
	if !(slowdown > 0) || !(leadFactor > 0) {
		return RecurringResult{}, fmt.Errorf("offlinerun: slowdown %g and lead factor %g must be positive", o.Slowdown, o.LeadFactor)
	}
	truth, declared := map[string]costmodel.Model{}, map[string]costmodel.Model{}
	for _, q := range w.Queries {
		truth[q.Name], declared[q.Name] = q.Cost.Scaled(slowdown), q.Cost
	}
	declaredLead := w.Pool.ProvisioningLeadTime
	trueLead := time.Duration(declaredLead * leadFactor * float64(time.Second))
	inherited := map[string][]learn.Observation{}
	var leads []float64
	var out RecurringResult
	for k := range o.Windows {
		// What the operator knew before the window: it prices the window's
		// first plan, and the window's own steps and nodes refine it.
		var learning *Learning
		planned := w
		if o.Learning {
			learning = &Learning{Declared: declared, Inherited: inherited, DeclaredLead: declaredLead, Leads: leads, Settings: o.Settings}
			planned = learning.Priced(w, nil, nil)
		}
		doc, err := planner.Plan(planned)
		if err != nil {
			return RecurringResult{}, fmt.Errorf("offlinerun: planning window %d: %w", k+1, err)
		}
		r, err := Run(planned, &doc, Options{
			Noise: o.Noise, Seed: windowSeed(o.Seed, k), Replan: o.Replan,
			TrueCost: truth, TrueLead: trueLead, Learning: learning, AskAhead: true,
		})
		if err != nil {
			return RecurringResult{}, fmt.Errorf("offlinerun: window %d: %w", k+1, err)
		}
		learned := make([]learn.Learned, len(planned.Queries))
		for i, q := range planned.Queries {
			learned[i] = learn.Learned{Model: q.Cost, Margin: q.Margin, TailMargin: q.TailMargin}
		}
		out.Windows = append(out.Windows, WindowResult{
			Planned: doc.Chosen, Learned: learned, LeadTime: planned.Pool.ProvisioningLeadTime,
			Missed: r.Missed, Cost: r.Cost, MaxNodes: r.MaxNodes, Replans: r.Replans, Reasons: r.Reasons, Steps: r.Steps, Plan: &doc,
		})
		if !o.Learning {
			continue
		}
		next := make(map[string][]learn.Observation, len(inherited))
		for name, obs := range inherited {
			next[name] = obs
		}
		for _, st := range r.Steps {
			next[st.Query] = newest(append(slices.Clone(next[st.Query]), StepObservation(st)), maxObservations)
		}
		inherited = next
		leads = newest(append(slices.Clone(leads), r.Leads...), learn.MaxLeadTimes)
	}
	return out, nil
}

// newest keeps the last n of xs.
func newest[T any](xs []T, n int) []T {
	if len(xs) > n {
		return append([]T(nil), xs[len(xs)-n:]...)
	}
	return xs
}

// windowSeed is window k's seed of a run seeded seed: the seed mixed with a
// multiplicative hash of k (the golden ratio's), so that the windows of a
// run, and the same window of runs with nearby seeds, draw different
// slowdowns.
func windowSeed(seed uint64, k int) uint64 {
	return seed ^ (uint64(k+1) * 0x9e3779b97f4a7c15)
}
