package controllers

import (
	"time"

	"github.com/laxity-dev/laxity/internal/dispatch"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/replan"
)

// Defaults of the stuck-step bound (Options.StuckFactor, StuckMinExtra).
// Three times the modelled duration leaves room for the run-to-run spread
// of Spark jobs (stragglers, a slow executor, garbage collection), which is
// well within 3x for the steps cost models are fitted on; two minutes more
// than modelled covers what the cost model does not see in a short step:
// pulling the image, scheduling the driver and executors, JVM start-up.
const (
	DefaultStuckFactor   = 3.0
	DefaultStuckMinExtra = 2 * time.Minute
)

// Options are the run-time settings shared by both reconcilers.
type Options struct {
	// MaxAttempts bounds the tries of one step; Backoff is the wait before
	// the first retry, doubled for each further one.
	MaxAttempts int
	Backoff     time.Duration
	// ResultRoot is where step results go: <root>/<namespace>/<query>/<step>.
	ResultRoot string
	// Poll is how often a schedule with open windows is looked at again when
	// nothing else wakes it (arrivals are not events).
	Poll time.Duration
	// ClockRate is how many seconds pass on the reconcilers' clock per real
	// second: 1 (or 0) on a cluster, more on the demo's scaled clock. The
	// workqueue waits in real time, so requeue delays shrink to match.
	ClockRate float64
	// NoSparkApplications says that the cluster serves no SparkApplication
	// kind (no spark-operator): steps run only as EMR on EKS job runs, and
	// SparkApplications are neither watched nor listed.
	NoSparkApplications bool
	// StuckFactor and StuckMinExtra bound how long a step may stay pending
	// or running: max(StuckFactor × modelled, modelled + StuckMinExtra),
	// its modelled duration carrying the schedule's runtime margin. Past
	// the bound it is cancelled and retried as a failed attempt. Zero means
	// the default (DefaultStuckFactor, DefaultStuckMinExtra); a negative
	// value leaves that term out, and both negative bound nothing.
	StuckFactor   float64
	StuckMinExtra time.Duration
	// ScheduleWorkers and QueryWorkers are how many schedules, and how many
	// queries, are reconciled at once (0 means 1): a schedule whose plan
	// takes long then holds back no other schedule.
	ScheduleWorkers, QueryWorkers int
	// PlanTimeout bounds one plan search in compute time (0 means
	// DefaultPlanTimeout): a workload whose search would run longer gets a
	// condition instead of holding a worker and the manager's memory.
	PlanTimeout time.Duration
	// SearchBackoff and SearchBackoffCap space the searches of a schedule
	// whose searches of the same specs run out of PlanTimeout: the first
	// waits SearchBackoff, each further one in a row twice as long, at most
	// SearchBackoffCap (0 means replan.DefaultBackoffBase and
	// replan.DefaultBackoffCap). A spec change is searched at once.
	SearchBackoff, SearchBackoffCap time.Duration
	// InlineSearch is the share of PlanTimeout a search may take in a
	// reconcile worker (0 means DefaultInlineSearch, and never more than
	// PlanTimeout). A longer one is cut short and run again, with the whole
	// budget, by the long-search lane, as is every search of a schedule
	// whose last search ran out of its budget (SearchLane).
	InlineSearch time.Duration
	// LongSearchWorkers is how many long searches run at once, outside
	// the reconcile workers (0 means 1).
	LongSearchWorkers int
	// MaxPlanSteps bounds the batches and merges one plan may hold (0 means
	// planner.DefaultMaxSteps).
	MaxPlanSteps int
	// AllowedServiceAccounts may run the SparkApplications of every
	// namespace (each in its own namespace); others need a TenantPolicy's
	// grant, but for the namespace's "default" service account.
	AllowedServiceAccounts []string
}

// DefaultPlanTimeout is Options.PlanTimeout's default, the planner's.
const DefaultPlanTimeout = planner.DefaultSearchBudget

// DefaultInlineSearch is Options.InlineSearch's default: far above the
// search time of a schedule of a few queries (tens of milliseconds), short
// enough that schedules whose searches are long hold the reconcile workers
// only briefly before their searches move to the long-search lane.
const DefaultInlineSearch = 2 * time.Second

// inlineSearch is how long a search may run in a reconcile worker.
func (o Options) inlineSearch() time.Duration {
	d := o.InlineSearch
	if d <= 0 {
		d = DefaultInlineSearch
	}
	return min(d, o.planTimeout())
}

// searchBackoff is the backoff of searches that run out of their budget.
func (o Options) searchBackoff() replan.Backoff {
	return replan.Backoff{Base: o.SearchBackoff, Cap: o.SearchBackoffCap}
}

// planTimeout is the time budget of one plan search.
func (o Options) planTimeout() time.Duration {
	if o.PlanTimeout > 0 {
		return o.PlanTimeout
	}
	return DefaultPlanTimeout
}

// stuckRule is the stuck-step bound the options give.
func (o Options) stuckRule() dispatch.StuckRule {
	r := dispatch.StuckRule{Factor: o.StuckFactor, MinExtra: o.StuckMinExtra}
	if r.Factor == 0 {
		r.Factor = DefaultStuckFactor
	}
	if r.MinExtra == 0 {
		r.MinExtra = DefaultStuckMinExtra
	}
	return dispatch.StuckRule{Factor: max(r.Factor, 0), MinExtra: max(r.MinExtra, 0)}
}

// realDelay is the real time to wait for d to pass on the clock.
func (o Options) realDelay(d time.Duration) time.Duration {
	if o.ClockRate <= 1 {
		return d
	}
	return time.Duration(float64(d) / o.ClockRate)
}
