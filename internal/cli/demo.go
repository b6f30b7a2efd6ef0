//go:build !lean

package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/laxity-dev/laxity/config/samples"
	"github.com/laxity-dev/laxity/internal/demo"
	"github.com/laxity-dev/laxity/internal/gantt"
	"github.com/laxity-dev/laxity/internal/localcluster"
	"github.com/laxity-dev/laxity/internal/manifest"
	"github.com/laxity-dev/laxity/internal/planner"
)

// Named speeds of the demo's clock, in simulated seconds per real second.
// At the default the 75-minute sample, with its lead time before and its
// deadlines and node release after, takes about a minute.
var demoSpeeds = map[string]float64{"normal": 100, "high": 400}

// On the local cluster the speed compresses the workload in time instead:
// at the default the three-query sample's 40 minutes take 4, with nodes
// Ready 16 s after Karpenter creates them and every step's pods a second
// to start, which its cost model does not see. Faster runs leave those
// seconds less slack (at 15 the sample's pool was not released in time).
var clusterSpeeds = map[string]float64{"normal": 10}

// maxClusterSpeed bounds --speed on the local cluster: Karpenter, KWOK and
// the pods take seconds whatever the workload.
const maxClusterSpeed = 60

// clusterDemo is the sample `laxity demo --cluster karpenter` runs when
// given no workload: three queries, one pool, minutes long.
const clusterDemo = "three-queries.yaml"

type demoOptions struct {
	workload []string
	speed    string
	report   string
	svg      string
	schedule string
	keep     bool
	assets   string
	slowdown float64
	noise    string
	windows  int
	cluster  string
	binaries string
}

func newDemoCommand() *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo [--cluster embedded|karpenter] [--workload FILE|DIR] [--speed normal|high|N] [--report FILE] [--svg FILE] [--keep]",
		Short: "Run a workload end to end on a local control plane, with a simulated node pool and Spark",
		Long: `demo starts a local kube-apiserver and etcd (built once by ` + "`make envtest`" + `),
installs laxity's CRDs and the SparkApplication CRD, runs laxity's manager
in-process on a scaled clock, and applies a workload (the 13-query TPC-H
sample unless --workload says otherwise). Two SIMULATIONS stand in for the
cluster: a node provisioner that makes Nodes Ready a provisioning lead time
after the pool asks for them, and a Spark operator stand-in that runs every
SparkApplication for its query's cost-model duration. Nothing runs Spark and
no machine is provisioned.

A RecurringQuery's windows appear as the operator creates them; once it has
created --windows of them the demo sets its spec.suspend, deletes any window
created beyond them before it starts, and finishes when they are done. The
summary lists every window with the slowdown laxity had learned by its end.

With --cluster karpenter it runs on a local cluster instead (built once by
` + "`make cluster-binaries`" + `): kube-scheduler, kube-controller-manager,
Karpenter with its KWOK provider and KWOK, whose fake nodes become Ready a
provisioning lead time after Karpenter creates them and run the pods of a
Spark stand-in (one driver and the executors per step, for the step's
cost-model duration). Karpenter and KWOK run on the wall clock, so the
workload is compressed in time instead: windows, deadlines, lead time,
keep-alive and cost models --speed times shorter (default 10), arrival rates
--speed times higher, so every window holds the same tuples; the summary and
--report give every time back in workload time. Each schedule's pool becomes
a Karpenter NodePool resized through spec.replicas, and the drivers run on a
NodePool of one node of their own. The default workload there is the
three-query sample; RecurringQueries run only on the embedded cluster.

It shows each query's progress and the pool as it goes, and exits 0 only if
every query met its deadline (3 if one did not); of a RecurringQuery's
windows, learning takes the first two, and only those from the third on
must meet theirs.`,
		Example: `  laxity demo
  laxity demo --workload config/samples/partial-aggregation.yaml --speed high --report run.json --svg run.svg
  laxity demo --workload config/samples/recurring.yaml --slowdown 40 --windows 6
  laxity demo --keep     # then kubectl --kubeconfig <printed path> get laxity -A -o wide
  laxity demo --cluster karpenter --report run.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringSliceVarP(&o.workload, "workload", "f", nil, "manifests to run (files or directories, - for standard input; default: the embedded "+samples.Demo+" sample)")
	f.StringVar(&o.speed, "speed", "normal", "simulated seconds per real second: normal (100), high (400) or a number; with --cluster karpenter how many times the workload is compressed in time: normal (10) or a number up to 60")
	f.StringVar(&o.report, "report", "", "write what ran, in the plan document's JSON format, to this file")
	f.StringVar(&o.svg, "svg", "", "draw what ran as an SVG figure in this file")
	f.StringVar(&o.schedule, "schedule", "", "the ElasticSchedule (NAME or NAMESPACE/NAME) --report and --svg describe, when the workload has several")
	f.BoolVar(&o.keep, "keep", false, "print a kubeconfig and keep the control plane running after the workload, until interrupted")
	f.Float64Var(&o.slowdown, "slowdown", 0, "every simulated step takes this many percent longer than its declared cost model says (laxity is not told; it learns it)")
	f.StringVar(&o.noise, "noise", "", "MEAN,SD: every simulated step also takes 1+s times as long, s drawn per step from a normal distribution with this mean and standard deviation in percent (for example 15,10)")
	f.IntVar(&o.windows, "windows", demo.DefaultWindows, fmt.Sprintf("how many windows of each RecurringQuery to run, from 1 to %d; the first two are for learning", demo.MaxWindows))
	f.StringVar(&o.assets, "control-plane", "", "directory holding the kube-apiserver and etcd binaries (default: KUBEBUILDER_ASSETS, bin/k8s, the build cache)")
	f.StringVar(&o.cluster, "cluster", demo.ClusterEmbedded, "what the workload runs on: embedded (a simulated node pool and Spark on a scaled clock) or karpenter (a local cluster of Karpenter, KWOK nodes and kube-scheduler on the wall clock, the workload compressed in time)")
	f.StringVar(&o.binaries, "cluster-binaries", "", "with --cluster karpenter, the directory `DIR` holding kube-scheduler, kube-controller-manager, kwok, karpenter-kwok and crds/ (default: "+localcluster.BinariesEnv+", bin/cluster, the build cache of make cluster-binaries)")
	return cmd
}

func (o *demoOptions) run(cmd *cobra.Command) error {
	out := cmd.OutOrStdout()
	speed, err := o.parseSpeed()
	if err != nil {
		return err
	}
	if !(o.slowdown > -90 && o.slowdown <= 1000) {
		return invalid("demo: --slowdown: %g%% is not between -90 and 1000", o.slowdown)
	}
	if o.binaries != "" && o.cluster != demo.ClusterKarpenter {
		return invalid("demo: --cluster-binaries: only --cluster %s runs the local cluster's binaries", demo.ClusterKarpenter)
	}
	mean, sd, err := parseNoise(o.noise)
	if err != nil {
		return err
	}
	if err := checkWindows(o.windows); err != nil {
		return err
	}
	files, err := o.files(cmd.InOrStdin())
	if err != nil {
		return err
	}
	live := false
	if f, ok := out.(*os.File); ok {
		live = term.IsTerminal(int(f.Fd()))
	}
	started := time.Now()
	// An interrupt stops the demo through its context, so that the control
	// plane it started is stopped too rather than left running.
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	outcome, err := demo.Run(ctx, demo.Options{
		Workload: files, Speed: speed, Assets: o.assets, Keep: o.keep, Out: out, Live: live,
		Slowdown: o.slowdown / 100, NoiseMean: mean, NoiseStdDev: sd, Windows: o.windows,
		Cluster: o.cluster, ClusterBinaries: o.binaries,
	})
	if err != nil {
		return &exitError{code: exitInvalid, err: fmt.Errorf("demo: %w", err)}
	}
	summarize(out, outcome, time.Since(started))
	if o.report != "" || o.svg != "" {
		report, err := o.chosen(outcome)
		if err != nil {
			return err
		}
		if err := writeReport(o.report, o.svg, report, outcome.Compression != nil); err != nil {
			return err
		}
	}
	if err := missed(outcome); err != nil {
		return &exitError{code: exitInfeasible, err: err}
	}
	return nil
}

// parseSpeed reads --speed for --cluster (checked here too): a clock rate
// on the embedded cluster, a compression of the workload on the local one.
func (o *demoOptions) parseSpeed() (float64, error) {
	names, most := demoSpeeds, 10000.0
	switch o.cluster {
	case demo.ClusterEmbedded:
	case demo.ClusterKarpenter:
		names, most = clusterSpeeds, maxClusterSpeed
	default:
		return 0, invalid("demo: --cluster: %q is neither %s nor %s", o.cluster, demo.ClusterEmbedded, demo.ClusterKarpenter)
	}
	if speed, ok := names[o.speed]; ok {
		return speed, nil
	}
	v, err := strconv.ParseFloat(o.speed, 64)
	if err != nil || !(v >= 1 && v <= most) {
		if o.cluster == demo.ClusterKarpenter {
			return 0, invalid("demo: --speed: %q is neither normal nor a number from 1 to %g (--cluster %s)", o.speed, most, o.cluster)
		}
		return 0, invalid("demo: --speed: %q is neither normal, high nor a number from 1 to %g (--cluster %s)", o.speed, most, o.cluster)
	}
	return v, nil
}

// checkWindows checks --windows.
func checkWindows(n int) error {
	if n < 1 || n > demo.MaxWindows {
		return invalid("demo: --windows: %d is not from 1 to %d", n, demo.MaxWindows)
	}
	return nil
}

// missed says which deadline the exit code fails on: any IntermittentQuery
// of the workload, and any window of a RecurringQuery from the third on
// (learning takes the first two).
func missed(outcome *demo.Outcome) error {
	for _, r := range outcome.Reports {
		windows := map[string]bool{}
		for _, w := range r.Recurring {
			windows[w.Query] = true
		}
		for _, q := range r.Missed {
			if !windows[q] {
				return fmt.Errorf("IntermittentQuery %s/%s missed its deadline", r.Schedule.Namespace, q)
			}
		}
		if _, late := demo.MissedAfterLearning(r.Recurring); len(late) > 0 {
			return fmt.Errorf("a window from the third on missed its deadline: %s", strings.Join(late, ", "))
		}
	}
	return nil
}

// parseNoise reads --noise MEAN,SD (percent) as fractions.
func parseNoise(s string) (mean, sd float64, err error) {
	if s == "" {
		return 0, 0, nil
	}
	m, d, ok := strings.Cut(s, ",")
	mean, errMean := strconv.ParseFloat(strings.TrimSpace(m), 64)
	sd, errSD := strconv.ParseFloat(strings.TrimSpace(d), 64)
	switch {
	case !ok || errMean != nil || errSD != nil:
		return 0, 0, invalid("demo: --noise: %q is not MEAN,SD in percent, such as 15,10", s)
	case !(mean > -90 && mean <= 1000):
		return 0, 0, invalid("demo: --noise: the mean %g%% is not between -90 and 1000", mean)
	case !(sd >= 0 && sd <= 100):
		return 0, 0, invalid("demo: --noise: the standard deviation %g%% is not between 0 and 100", sd)
	}
	return mean / 100, sd / 100, nil
}

// files are the workload's manifests: the named files and directories, or
// the embedded sample.
func (o *demoOptions) files(stdin io.Reader) ([]manifest.File, error) {
	if len(o.workload) > 0 {
		files, err := readManifests(o.workload, stdin)
		if err != nil {
			return nil, &exitError{code: exitInvalid, err: fmt.Errorf("demo: --workload: %w", err)}
		}
		return files, nil
	}
	sample := samples.Demo
	if o.cluster == demo.ClusterKarpenter {
		sample = clusterDemo
	}
	data, err := samples.FS.ReadFile(sample)
	if err != nil {
		return nil, err
	}
	return []manifest.File{{Name: "sample " + sample, Data: data}}, nil
}

// chosen is the report --report and --svg describe.
func (o *demoOptions) chosen(outcome *demo.Outcome) (demo.Report, error) {
	if o.schedule == "" {
		if len(outcome.Reports) != 1 {
			return demo.Report{}, invalid("demo: --report and --svg describe one schedule, but the workload has %d; choose one with --schedule", len(outcome.Reports))
		}
		return outcome.Reports[0], nil
	}
	namespace, name := scheduleRef(o.schedule)
	for _, r := range outcome.Reports {
		if r.Schedule.Namespace == namespace && r.Schedule.Name == name {
			return r, nil
		}
	}
	return demo.Report{}, invalid("demo: --schedule: no ElasticSchedule %s/%s in the workload", namespace, name)
}

func writeReport(reportPath, svgPath string, r demo.Report, onCluster bool) error {
	if reportPath != "" {
		data, err := r.MarshalDocument()
		if err != nil {
			return err
		}
		if err := os.WriteFile(reportPath, data, 0o666); err != nil {
			return invalid("demo: --report: %v", err)
		}
	}
	if svgPath != "" {
		windows := map[string]gantt.Window{}
		for q, w := range r.Windows {
			windows[q] = gantt.Window{Start: max(w[0], 0), End: max(w[1], 0)}
		}
		// The steps and the requested and ready nodes are what ran; the
		// planned nodes are the first plan's, for comparison.
		executed := r.Executed
		executed.Nodes = nil
		if r.Plan != nil {
			shift := r.Plan.Origin.Sub(executed.Origin).Seconds()
			for _, l := range r.Plan.Nodes {
				executed.Nodes = append(executed.Nodes, planner.NodeLevel{At: l.At + shift, Nodes: l.Nodes})
			}
		}
		var svg bytes.Buffer
		title := fmt.Sprintf("What ran: ElasticSchedule %s/%s (laxity demo, simulated cluster)", r.Schedule.Namespace, r.Schedule.Name)
		if onCluster {
			title = fmt.Sprintf("What ran: ElasticSchedule %s/%s (laxity demo on Karpenter and KWOK, in workload time)", r.Schedule.Namespace, r.Schedule.Name)
		}
		if err := gantt.Render(&svg, gantt.Figure{Title: title, Plan: executed, Windows: windows, Ready: r.Executed.Nodes}); err != nil {
			return invalid("demo: --svg %s: drawing what ran: %v", svgPath, err)
		}
		if err := os.WriteFile(svgPath, svg.Bytes(), 0o666); err != nil {
			return invalid("demo: --svg: %v", err)
		}
	}
	return nil
}

// summarize prints, per schedule, the queries against their deadlines and
// the executed cost against the planned one, then its RecurringQueries'
// windows.
func summarize(out io.Writer, outcome *demo.Outcome, took time.Duration) {
	fmt.Fprintf(out, "\nFinished in %s (real time).\n", took.Round(time.Second))
	fmt.Fprintf(out, "Ran on %s.\n", outcome.Describe())
	for _, r := range outcome.Reports {
		doc := r.Executed
		met := len(doc.Queries) - len(r.Missed)
		fmt.Fprintf(out, "ElasticSchedule %s/%s: %d of %d queries met their deadline.\n", r.Schedule.Namespace, r.Schedule.Name, met, len(doc.Queries))
		if r.Plan != nil {
			planned := r.Plan.Chosen.ExecutableCost
			change := 0.0
			if planned > 0 {
				change = 100 * (doc.Chosen.ExecutableCost - planned) / planned
			}
			if len(r.Recurring) > 0 {
				// The first plan knew only the windows that existed then.
				fmt.Fprintf(out, "  cost: executed %.2f (the first plan priced the windows it knew of at %.2f); %d re-plans after the first plan\n", doc.Chosen.ExecutableCost, planned, r.Replans)
			} else {
				fmt.Fprintf(out, "  cost: planned %.2f, executed %.2f (%+.1f%%); %d re-plans after the first plan\n", planned, doc.Chosen.ExecutableCost, change, r.Replans)
			}
		}
		if outcome.Compression != nil {
			fmt.Fprintf(out, "  %s\n", demo.FormatLeadTimes(r))
		}
		windows := map[string]bool{}
		for _, w := range r.Recurring {
			windows[w.Query] = true
		}
		for _, q := range doc.Queries {
			if windows[q.Name] {
				continue // listed with its RecurringQuery below
			}
			verdict := fmt.Sprintf("%s before its deadline", (time.Duration(q.Slack) * time.Second).String())
			if q.Slack < 0 {
				verdict = fmt.Sprintf("LATE by %s", (time.Duration(-q.Slack) * time.Second).String())
			}
			fmt.Fprintf(out, "  %-12s %3d batches, finished at t+%s, %s\n", q.Name, q.Batches, (time.Duration(q.Finish) * time.Second).String(), verdict)
		}
		demo.WriteWindows(out, r.Recurring)
	}
	fmt.Fprintf(out, "The manager's log: %s\n", outcome.LogFile)
}
