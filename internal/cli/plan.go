package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/baseline"
	"github.com/laxity-dev/laxity/internal/manifest"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/spec"
	"github.com/laxity-dev/laxity/internal/structured"
)

type planOptions struct {
	files    []string
	output   string
	origin   string
	schedule string
	svg      string
	compare  bool
	// planTimeout bounds the compute time of each schedule: its windows,
	// its search and its comparison, as the operator's --plan-timeout
	// bounds one search.
	planTimeout time.Duration
	cluster     clusterOptions
	// plugin is true when kubectl runs laxity as its plugin: without -f,
	// plan then reads the cluster of the current context, as kubectl would.
	plugin bool
	// stdin is what -f - reads.
	stdin io.Reader
}

func newPlanCommand(plugin bool) *cobra.Command {
	o := &planOptions{plugin: plugin}
	cmd := &cobra.Command{
		Use:   "plan (-f FILE|DIR|- | --kubeconfig FILE [--context NAME] [-n NAMESPACE | -A]) [-o table|json|yaml] [--origin RFC3339] [--schedule [NAMESPACE/]NAME] [--svg FILE] [--compare]",
		Short: "Plan ElasticSchedules and their queries offline, from manifests or as they are in a cluster",
		Long: `plan reads the same ElasticSchedule, IntermittentQuery and RecurringQuery
manifests the operator reads (multi-document YAML files or directories, or
standard input with -f -; other kinds are ignored), validates them with the
CRDs' own schema and CEL rules, and prints the cheapest plan that meets every
deadline for each schedule. A RecurringQuery is planned as its next
windowsAhead windows from --origin (or from the earliest window of the
schedule's IntermittentQueries), each window an IntermittentQuery named
<name>-<yyyymmddhhmm>; a window that already exists as an IntermittentQuery
is planned as that query. With --svg it also draws the plan of one schedule:
a Gantt row per query over the planned and requested node timelines. With
--compare it prints, instead of the plan, what the plan costs against the
usual alternatives to it, each simulated on the same workload: fixed pools
of every size (with and without laxity's batch sizes), a reactive
autoscaler and micro-batch streaming.

-o json and -o yaml print the same keys in the same order: a PlanList (a
PlanComparisonList with --compare), also for one schedule or none, whose
items name their ElasticSchedule in metadata.namespace and metadata.name.
A candidate that misses a deadline has no cost there.

With --kubeconfig, --context, -n or -A instead of -f (or as the kubectl
plugin, kubectl laxity plan, without -f) it reads the objects from a cluster
and plans their specs exactly as it plans files: from their windows' start,
not from what has already run, and without changing anything in the
cluster. It needs only get and list on laxity's three kinds.

Each schedule gets --plan-timeout of compute time (30s by default, the
operator's own search budget) for expanding its RecurringQueries' windows,
its plan search and, with --compare, its comparison. A schedule that needs
longer is not printed: an error names it (NAMESPACE/NAME) and what ran out
of time, and the other schedules are still planned and printed, so that
one object cannot hold up the plans of all the others.

Exit status: 0 when every plan is feasible, 3 when a plan is infeasible (the
plan is still printed, with the query that is late first), 4 when a
schedule ran out of --plan-timeout (the other plans are still printed; it
wins over 3), 1 on bad input.`,
		Example: `  laxity plan -f config/samples/tpch.yaml
  laxity plan -f config/samples/ -o json --schedule analytics/nightly
  kubectl get lxes,lxiq,lxrq -n analytics -o yaml | laxity plan -f -
  laxity plan --kubeconfig ~/.kube/config -n analytics -o yaml
  kubectl laxity plan -A
  laxity plan -f config/samples/tpch.yaml --svg tpch.svg
  laxity plan -f config/samples/tpch.yaml --compare`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.stdin = cmd.InOrStdin()
			return o.run(cmd)
		},
	}
	cmd.Flags().StringSliceVarP(&o.files, "filename", "f", nil, "manifest file or directory (repeatable); - reads standard input")
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "output format: table, json or yaml")
	cmd.Flags().StringVar(&o.origin, "origin", "", "instant the plan measures time from, as RFC 3339 (default: the earliest window start of the schedule's queries); a RecurringQuery's windows are planned from it")
	cmd.Flags().StringVar(&o.schedule, "schedule", "", "plan only this ElasticSchedule, as NAME or NAMESPACE/NAME")
	cmd.Flags().StringVar(&o.svg, "svg", "", "also draw the plan as an SVG figure in this file (one schedule only)")
	cmd.Flags().BoolVar(&o.compare, "compare", false, "print the plan's cost, largest pool and deadlines against the baselines instead of the plan")
	cmd.Flags().DurationVar(&o.planTimeout, "plan-timeout", planner.DefaultSearchBudget, "compute time each schedule may take (its windows, its plan search, its comparison), as the operator's --plan-timeout; a schedule that takes longer is reported by name and not printed, and the others are")
	o.cluster.addFlags(cmd)
	return cmd
}

func (o *planOptions) run(cmd *cobra.Command) error {
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	live := o.cluster.given(cmd) || (o.plugin && len(o.files) == 0)
	switch {
	case len(o.files) > 0 && live:
		return &usageError{err: errors.New("plan: -f reads manifests and --kubeconfig, --context, -n and -A a cluster: give one or the other")}
	case len(o.files) == 0 && !live:
		return invalid("plan: -f FILE|DIR|- or --kubeconfig FILE is required: the manifests to plan, or the cluster to read them from")
	}
	if o.output != "table" && o.output != "json" && o.output != "yaml" {
		return invalid("plan: -o must be table, json or yaml, got %q", o.output)
	}
	if o.planTimeout <= 0 {
		return invalid("plan: --plan-timeout must be a positive duration such as 30s, got %s", o.planTimeout)
	}
	var origin *time.Time
	if o.origin != "" {
		t, err := time.Parse(time.RFC3339, o.origin)
		if err != nil {
			return invalid("plan: --origin: %q is not an RFC 3339 time such as 2026-12-01T00:00:00Z", o.origin)
		}
		origin = &t
	}
	var (
		set *manifest.Set
		err error
	)
	// Every step template is checked against the SparkApplication CRD
	// once the manifests are read; its validator is built meanwhile, on
	// the other core.
	go prepareSparkApplications()
	if live {
		set, err = o.cluster.read(cmd.Context())
	} else {
		set, err = o.readFiles()
	}
	if err != nil {
		return &exitError{code: exitInvalid, err: err}
	}
	schedules, err := o.selectSchedules(set)
	if err != nil {
		return err
	}
	if o.svg != "" && len(schedules) > 1 {
		return invalid("plan: --svg draws one schedule, but %s hold %d; choose one with --schedule", o.sources(), len(schedules))
	}
	docs := []planner.Document{} // [] rather than null when no schedule is planned
	comparisons := []comparison{}
	if origin == nil && len(schedules) > 1 {
		// Only --origin says from when to plan the windows of a schedule
		// that only RecurringQueries name; among several, it is left out
		// (alone it is an error naming the flag).
		schedules = slices.DeleteFunc(schedules, func(s manifest.ElasticSchedule) bool {
			es := s.Object
			if len(set.QueriesFor(es.Namespace, es.Name)) > 0 || len(set.RecurringFor(es.Namespace, es.Name)) == 0 {
				return false
			}
			fmt.Fprintf(errOut, "laxity: %s: ElasticSchedule %s/%s: not planned: only RecurringQueries name it; give --origin to plan their windows from then\n", s.Source, es.Namespace, es.Name)
			return true
		})
	}
	var planned []manifest.ElasticSchedule
	var alts []alternatives
	var overBudget int
	for _, s := range schedules {
		w, doc, alt, results, err := o.planWithin(cmd.Context(), set, s, origin)
		var be *budgetError
		if errors.As(err, &be) {
			// One schedule out of time does not hold up the others.
			fmt.Fprintf(errOut, "laxity: %v\n", be)
			overBudget++
			continue
		}
		if err != nil {
			return err
		}
		planned = append(planned, s)
		docs = append(docs, doc)
		alts = append(alts, alt)
		if o.svg != "" {
			if err := writeSVG(o.svg, s.Object, w, doc); err != nil {
				return err
			}
		}
		if o.compare {
			comparisons = append(comparisons, comparison{schedule: s.Object, origin: doc.Origin, results: results, pool: w.Pool})
		}
	}
	schedules = planned
	if o.compare {
		if err := writeComparisons(out, o.output, comparisons); err != nil {
			return fmt.Errorf("writing the comparison: %w", err)
		}
	} else if err := write(out, o.output, schedules, docs, alts); err != nil {
		return fmt.Errorf("writing the plan: %w", err)
	}
	if overBudget > 0 {
		// Each schedule was named on standard error as it ran out.
		return &exitError{code: exitBudget, err: fmt.Errorf("plan: %d of %d schedules ran out of --plan-timeout %s and were not planned", overBudget, overBudget+len(docs), o.planTimeout)}
	}
	for _, d := range docs {
		if !d.Chosen.Feasible {
			return &exitError{code: exitInfeasible, err: errors.New("a plan is infeasible")}
		}
	}
	return nil
}

// budgetError is a schedule whose windows, search or comparison took longer
// than --plan-timeout.
type budgetError struct {
	source          manifest.Source
	namespace, name string
	// what ran out of time, and what to do about it, for the message.
	what, advice string
	timeout      time.Duration
}

func (e *budgetError) Error() string {
	return fmt.Sprintf("%s: ElasticSchedule %s/%s: not planned: %s ran longer than the %s --plan-timeout gives each schedule; %s",
		e.source, e.namespace, e.name, e.what, e.timeout, e.advice)
}

// planWithin plans one schedule, and with --compare compares it, within
// --plan-timeout of compute time: a search that runs longer gives up at its
// next look at the budget, and any other step (a window expansion, the
// comparison) is left behind when the budget ends, to end with the process.
func (o *planOptions) planWithin(ctx context.Context, set *manifest.Set, s manifest.ElasticSchedule, origin *time.Time) (planner.Workload, planner.Document, alternatives, []baseline.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, o.planTimeout)
	defer cancel()
	es := s.Object
	over := func(what, advice string) error {
		return &budgetError{source: s.Source, namespace: es.Namespace, name: es.Name, what: what, advice: advice, timeout: o.planTimeout}
	}
	w, doc, alt, err := planSchedule(ctx, set, s, origin, over)
	if err != nil || !o.compare {
		return w, doc, alt, nil, err
	}
	results, err := within(ctx, func() ([]baseline.Result, error) { return baseline.Compare(w, doc) })
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return w, doc, alt, nil, over("the comparison with the baselines (--compare)", "raise --plan-timeout, or plan without --compare")
	case err != nil:
		return w, doc, alt, nil, &exitError{code: exitInvalid, err: fmt.Errorf("plan: --compare: ElasticSchedule %s/%s: %w", es.Namespace, es.Name, err)}
	}
	return w, doc, alt, results, nil
}

// within runs f and returns what it returns, or ctx's error as soon as ctx
// ends first. f then goes on in the background until it returns or the
// process exits: within bounds the wait for code that cannot be
// interrupted, such as a cron library's search for the next start.
func within[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		select {
		case r := <-done:
			return r.v, r.err
		default:
		}
		var zero T
		return zero, ctx.Err()
	}
}

// readFiles reads and validates the manifests of -f.
func (o *planOptions) readFiles() (*manifest.Set, error) {
	files, err := readManifests(o.files, o.stdin)
	if err != nil {
		return nil, err
	}
	return manifest.Read(files...)
}

// sources names where the objects were read from, for messages.
func (o *planOptions) sources() string {
	if len(o.files) == 0 {
		return o.cluster.describe()
	}
	names := make([]string, len(o.files))
	for i, f := range o.files {
		names[i] = f
		if f == stdinPath {
			names[i] = stdinName
		}
	}
	return strings.Join(names, ", ")
}

// selectSchedules picks the schedules to plan and checks that every query
// they could need is accounted for.
func (o *planOptions) selectSchedules(set *manifest.Set) ([]manifest.ElasticSchedule, error) {
	if o.schedule != "" {
		namespace, name := scheduleRef(o.schedule)
		if !strings.Contains(o.schedule, "/") && o.cluster.namespace != "" {
			namespace = o.cluster.namespace
		}
		s := set.Schedule(namespace, name)
		if s == nil {
			return nil, invalid("plan: --schedule: no ElasticSchedule %s/%s in %s", namespace, name, o.sources())
		}
		return []manifest.ElasticSchedule{*s}, nil
	}
	if len(set.Schedules) == 0 {
		return nil, invalid("plan: no ElasticSchedule (laxity.dev/v1alpha1) in %s", o.sources())
	}
	var errs []error
	for _, q := range set.Queries {
		if set.Schedule(q.Object.Namespace, q.Object.Spec.ScheduleName) == nil {
			errs = append(errs, fmt.Errorf("%s: IntermittentQuery %s/%s: spec.scheduleName: no ElasticSchedule %q in namespace %q",
				q.Source, q.Object.Namespace, q.Object.Name, q.Object.Spec.ScheduleName, q.Object.Namespace))
		}
	}
	for _, q := range set.Recurring {
		if set.Schedule(q.Object.Namespace, q.Object.Spec.Template.ScheduleName) == nil {
			errs = append(errs, fmt.Errorf("%s: RecurringQuery %s/%s: spec.template.scheduleName: no ElasticSchedule %q in namespace %q",
				q.Source, q.Object.Namespace, q.Object.Name, q.Object.Spec.Template.ScheduleName, q.Object.Namespace))
		}
	}
	if len(errs) > 0 {
		return nil, &exitError{code: exitInvalid, err: errors.Join(errs...)}
	}
	return set.Schedules, nil
}

// scheduleRef splits a --schedule value, NAME or NAMESPACE/NAME.
func scheduleRef(ref string) (namespace, name string) {
	if ns, n, ok := strings.Cut(ref, "/"); ok {
		return ns, n
	}
	return manifest.DefaultNamespace, ref
}

// planSchedule plans one schedule and returns the workload it planned with
// the plan.
// Its windows and its search stop when ctx ends, with the error over makes
// from what ran out of time and what to do about it.
func planSchedule(ctx context.Context, set *manifest.Set, s manifest.ElasticSchedule, origin *time.Time, over func(what, advice string) error) (planner.Workload, planner.Document, alternatives, error) {
	es := s.Object
	found := set.QueriesFor(es.Namespace, es.Name)
	recurring := set.RecurringFor(es.Namespace, es.Name)
	if len(found)+len(recurring) == 0 {
		return planner.Workload{}, planner.Document{}, alternatives{}, invalid("%s: ElasticSchedule %s/%s: no IntermittentQuery or RecurringQuery names it (spec.scheduleName, spec.template.scheduleName %q)", s.Source, es.Namespace, es.Name, es.Name)
	}
	queries := make([]laxityv1alpha1.IntermittentQuery, 0, len(found))
	sources := map[string]manifest.Source{}
	kinds := map[string]string{}
	for _, q := range found {
		queries = append(queries, *q.Object)
		sources[q.Object.Name] = q.Source
	}
	// A RecurringQuery plans as its next windowsAhead windows from
	// --origin, or from the earliest window of the schedule's
	// IntermittentQueries: never from the clock, so that the same files
	// plan the same.
	if len(recurring) > 0 {
		from := origin
		if from == nil && len(queries) > 0 {
			earliest := queries[0].Spec.Window.Start.Time
			for _, q := range queries {
				if start := q.Spec.Window.Start.Time; start.Before(earliest) {
					earliest = start
				}
			}
			from = &earliest
		}
		for _, rq := range recurring {
			if from == nil {
				return planner.Workload{}, planner.Document{}, alternatives{}, invalid("%s: RecurringQuery %s/%s: --origin is required to plan its windows: it says from when (no IntermittentQuery of the schedule has a window to start from)",
					rq.Source, es.Namespace, rq.Object.Name)
			}
			windows, err := within(ctx, func() ([]laxityv1alpha1.IntermittentQuery, error) { return spec.RecurringWindows(rq.Object, *from) })
			if errors.Is(err, context.DeadlineExceeded) {
				return planner.Workload{}, planner.Document{}, alternatives{}, over(fmt.Sprintf("expanding the windows of RecurringQuery %s/%s (%s: spec.schedule %q, spec.timeZone %q)",
					es.Namespace, rq.Object.Name, rq.Source, rq.Object.Spec.Schedule, rq.Object.Spec.TimeZone),
					"the schedule may never reach its next start in that time zone (a local day the zone skipped): change spec.schedule or spec.timeZone")
			}
			if err != nil {
				return planner.Workload{}, planner.Document{}, alternatives{}, &exitError{code: exitInvalid, err: fmt.Errorf("%s: RecurringQuery %s/%s: %w", rq.Source, es.Namespace, rq.Object.Name, err)}
			}
			for _, w := range windows {
				if _, exists := sources[w.Name]; exists {
					// The window's IntermittentQuery, read with the
					// rest (from a cluster, or kubectl get -o yaml),
					// stands for it.
					continue
				}
				queries = append(queries, w)
				sources[w.Name] = rq.Source
				kinds[w.Name] = "RecurringQuery " + rq.Object.Name + ": window IntermittentQuery"
			}
		}
	}
	t0 := queries[0].Spec.Window.Start.Time
	for _, q := range queries {
		if start := q.Spec.Window.Start.Time; start.Before(t0) {
			t0 = start
		}
	}
	if origin != nil {
		t0 = *origin
	}
	t0 = t0.UTC()

	located := func(kind, name string, err error) error {
		source := s.Source
		if kind == "IntermittentQuery" {
			source = sources[name]
			if k, ok := kinds[name]; ok {
				kind = k
			}
		}
		return fmt.Errorf("%s: %s %s/%s: %w", source, kind, es.Namespace, name, err)
	}
	w, notes, err := spec.WorkloadNotes(es, queries, t0)
	for i := range queries {
		if terr := checkTemplate(&queries[i], es); terr != nil {
			err = errors.Join(err, &spec.ObjectError{Kind: "IntermittentQuery", Name: queries[i].Name, Err: terr})
		}
	}
	if err != nil {
		var errs []error
		for _, e := range unjoin(err) {
			var oe *spec.ObjectError
			if errors.As(e, &oe) {
				e = located(oe.Kind, oe.Name, oe.Err)
			}
			errs = append(errs, e)
		}
		return planner.Workload{}, planner.Document{}, alternatives{}, &exitError{code: exitInvalid, err: errors.Join(errs...)}
	}
	if w.Planning.Concurrent {
		// The bill one step at a time below reuses the plans one step at
		// a time that this search makes.
		ctx = planner.RememberOneAtATime(ctx)
	}
	started := time.Now()
	doc, err := within(ctx, func() (planner.Document, error) { return planner.PlanContext(ctx, w) })
	if errors.Is(err, planner.ErrSearchBudget) || errors.Is(err, context.DeadlineExceeded) {
		queries := fmt.Sprintf("%d queries", len(w.Queries))
		if len(w.Queries) == 1 {
			queries = "its query"
		}
		return planner.Workload{}, planner.Document{}, alternatives{}, over("the plan search of "+queries,
			"raise --plan-timeout, shorten the windows, use fewer spec.planning.batchSizeFactors or pool sizes, or split the queries over several schedules")
	}
	if err != nil {
		var ie *planner.InvalidError
		if errors.As(err, &ie) {
			if ie.Query != "" {
				err = located("IntermittentQuery", ie.Query, ie.Err)
			} else {
				err = located("ElasticSchedule", es.Name, ie.Err)
			}
		}
		return planner.Workload{}, planner.Document{}, alternatives{}, &exitError{code: exitInvalid, err: err}
	}
	doc.SearchSeconds = time.Since(started).Seconds()
	shared, err := within(ctx, func() (*sharing, error) { return planSharing(ctx, es, notes, w, doc) })
	if errors.Is(err, planner.ErrSearchBudget) || errors.Is(err, context.DeadlineExceeded) {
		return planner.Workload{}, planner.Document{}, alternatives{}, over("the plan search without sharing, for its bill",
			"raise --plan-timeout, or set spec.planning.sharing: None")
	}
	if err != nil {
		return planner.Workload{}, planner.Document{}, alternatives{}, &exitError{code: exitInvalid, err: err}
	}
	alt := alternatives{sharing: shared}
	if w.Planning.Concurrent {
		side, err := within(ctx, func() (*sideBySide, error) { return planOneAtATime(ctx, w, doc) })
		if errors.Is(err, planner.ErrSearchBudget) || errors.Is(err, context.DeadlineExceeded) {
			return planner.Workload{}, planner.Document{}, alternatives{}, over("the plan search one step at a time, for its bill",
				"raise --plan-timeout, or set spec.planning.concurrency: Sequential")
		}
		if err != nil {
			return planner.Workload{}, planner.Document{}, alternatives{}, &exitError{code: exitInvalid, err: err}
		}
		alt.sideBySide = side
	}
	return w, doc, alt, nil
}

// unjoin flattens errors.Join.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func write(out io.Writer, format string, schedules []manifest.ElasticSchedule, docs []planner.Document, alts []alternatives) error {
	if format != "table" {
		return structured.Write(out, format, planList(schedules, docs, alts))
	}
	for i, d := range docs {
		if i > 0 {
			fmt.Fprintln(out)
		}
		es := schedules[i].Object
		if err := writeTable(out, es.Namespace+"/"+es.Name, d); err != nil {
			return err
		}
		if err := writeSharing(out, alts[i].sharing); err != nil {
			return err
		}
		if err := writeSideBySide(out, alts[i].sideBySide); err != nil {
			return err
		}
	}
	return nil
}

// comparison is one schedule's plan against the baselines, for the
// table or, as a comparisonItem, for -o json|yaml.
type comparison struct {
	schedule *laxityv1alpha1.ElasticSchedule
	// origin is t0.
	origin time.Time
	// results are the elastic plan first, then the fixed pools, LLF
	// without batching at each size, the reactive autoscaler and
	// micro-batch streaming.
	results []baseline.Result
	// pool is the schedule's node pool, for the table's legend.
	pool planner.Pool
}

func writeComparisons(out io.Writer, format string, comparisons []comparison) error {
	if format != "table" {
		return structured.Write(out, format, comparisonList(comparisons))
	}
	for i, c := range comparisons {
		if i > 0 {
			fmt.Fprintln(out)
		}
		if err := writeComparisonTable(out, c); err != nil {
			return err
		}
	}
	return nil
}
