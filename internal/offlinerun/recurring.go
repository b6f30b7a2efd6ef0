package offlinerun

import (
	"errors"
	"fmt"
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
	// Learning, when set, plans every window from what the windows before
	// it observed (learn.Fit, learn.LeadTime); otherwise every window is
	// planned from the declared workload.
	Learning bool
	// Settings tune the learner; the zero value means learn.Defaults.
	Settings learn.Settings
	// Window, when set, keeps the in-window deadline rule in every window.
	Window *WindowControl
	// Replan, when set, re-plans for rates as Options.Replan does.
	Replan *Replanning
}

// WindowResult is one window of a recurring run.
type WindowResult struct {
	// Planned is the choice of the plan the window started with.
	Planned planner.Chosen
	// Learned is, by query in the workload's order, what the window was
	// planned with; LeadTime the provisioning lead time it planned with.
	Learned  []learn.Learned
	LeadTime float64
	// Missed, Cost, MaxNodes, Replans and Steps are the window's run
	// (Result); Plan is the plan it started with. Steps and Plan say why a
	// deadline was missed.
	Missed   []string
	Cost     float64
	MaxNodes int
	Replans  []float64
	Steps    []planner.Step
	Plan     *planner.Document
}

// RecurringResult is a recurring run, window by window.
type RecurringResult struct {
	Windows []WindowResult
}

// maxObservations bounds the observations kept per query, and the lead
// times kept, the newest: older ones weigh next to nothing (learn's
// half-life) and would only slow the fit.
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
	truth := map[string]costmodel.Model{}
	for _, q := range w.Queries {
		truth[q.Name] = q.Cost.Scaled(slowdown)
	}
	declaredLead := w.Pool.ProvisioningLeadTime
	trueLead := time.Duration(declaredLead * leadFactor * float64(time.Second))
	learned := make([]learn.Learned, len(w.Queries))
	observed := make([][]learn.Observation, len(w.Queries))
	for i, q := range w.Queries {
		learned[i] = learn.Fit(q.Cost, nil, o.Settings)
	}
	lead := declaredLead
	var leads []float64
	var out RecurringResult
	for k := range o.Windows {
		planned := w
		planned.Queries = append([]planner.Query(nil), w.Queries...)
		planned.Pool.ProvisioningLeadTime = lead
		for i := range planned.Queries {
			planned.Queries[i].Cost, planned.Queries[i].Margin = learned[i].Model, learned[i].Margin
		}
		doc, err := planner.Plan(planned)
		if err != nil {
			return RecurringResult{}, fmt.Errorf("offlinerun: planning window %d: %w", k+1, err)
		}
		r, err := Run(planned, &doc, Options{
			Noise: o.Noise, Seed: windowSeed(o.Seed, k), Replan: o.Replan,
			TrueCost: truth, TrueLead: trueLead, Window: o.Window, AskAhead: true,
		})
		if err != nil {
			return RecurringResult{}, fmt.Errorf("offlinerun: window %d: %w", k+1, err)
		}
		out.Windows = append(out.Windows, WindowResult{
			Planned: doc.Chosen, Learned: append([]learn.Learned(nil), learned...), LeadTime: lead,
			Missed: r.Missed, Cost: r.Cost, MaxNodes: r.MaxNodes, Replans: r.Replans, Steps: r.Steps, Plan: &doc,
		})
		if !o.Learning {
			continue
		}
		index := map[string]int{}
		for i, q := range w.Queries {
			index[q.Name] = i
		}
		for _, st := range r.Steps {
			i := index[st.Query]
			observed[i] = newest(append(observed[i], StepObservation(st)))
		}
		for i, q := range w.Queries {
			learned[i] = learn.Fit(q.Cost, observed[i], o.Settings)
		}
		leads = newest(append(leads, r.Leads...))
		lead = learn.LeadTime(declaredLead, leads, o.Settings)
	}
	return out, nil
}

// newest keeps the last maxObservations of xs.
func newest[T any](xs []T) []T {
	if len(xs) > maxObservations {
		return append([]T(nil), xs[len(xs)-maxObservations:]...)
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
