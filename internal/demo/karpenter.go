package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/localcluster"
	"github.com/laxity-dev/laxity/internal/manifest"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/internal/spec"
	"github.com/laxity-dev/laxity/internal/standin"
	"github.com/laxity-dev/laxity/internal/tenancy"
)

// The clusters a demo runs on.
const (
	// ClusterEmbedded is the embedded simulation: a control plane, a
	// simulated node provisioner and Spark stand-in, on a scaled clock.
	ClusterEmbedded = "embedded"
	// ClusterKarpenter is the local cluster of package localcluster:
	// Karpenter provisioning KWOK nodes, kube-scheduler placing the Spark
	// stand-in's pods, all on the wall clock, with the workload compressed
	// in time instead.
	ClusterKarpenter = "karpenter"
)

// DriverNodePool is the static NodePool of one node the demo makes on the
// local cluster for the Spark drivers: laxity pins only the executors to
// the elastic pool.
const DriverNodePool = "laxity-demo-drivers"

// Describe says in a line what the demo ran on, for the summary and the
// report.
func (o *Outcome) Describe() string {
	if o.Compression == nil {
		return "the embedded simulation: a local control plane with a simulated node provisioner and Spark operator, on a clock " + trimFloat(o.Speed) + " times faster than real time"
	}
	return "a local cluster: Karpenter (KWOK provider) provisioning KWOK nodes, kube-scheduler and kube-controller-manager, with a Spark stand-in running each step as pods; the workload compressed " +
		trimFloat(o.Compression.Factor) + " times in time, every time here in workload time"
}

func trimFloat(f float64) string { return fmt.Sprintf("%g", f) }

// onCluster is a workload made ready for the local cluster.
type onCluster struct {
	compression Compression
	// executorTypes are the instance types of each schedule's NodePool,
	// by schedule key; driverType that of DriverNodePool.
	executorTypes map[string]string
	driverType    string
	// nodeReadyDelay is KWOK's delay: the shortest compressed lead time
	// less what Karpenter takes.
	nodeReadyDelay time.Duration
}

// prepareCluster checks that the workload can run compressed on the local
// cluster, and chooses the instance types, before anything starts; errors
// name the object and field.
func prepareCluster(set *manifest.Set, speed float64) (*onCluster, error) {
	for _, rq := range set.Recurring {
		return nil, fmt.Errorf("%s: RecurringQuery %s/%s: spec.schedule: a cron schedule cannot be compressed in time; run RecurringQueries with --cluster %s",
			rq.Source, rq.Object.Namespace, rq.Object.Name, ClusterEmbedded)
	}
	p := &onCluster{compression: Compression{Factor: speed, From: workloadOrigin(set), To: time.Now().Truncate(time.Second)}, executorTypes: map[string]string{}}
	lead := time.Duration(0)
	driver := corev1.ResourceList{}
	for _, es := range set.Schedules {
		trial := es.Object.DeepCopy()
		if err := p.compression.Schedule(trial); err != nil {
			return nil, fmt.Errorf("%s: %w", es.Source, err)
		}
		if l := trial.Spec.NodePool.ProvisioningLeadTime.Duration; lead == 0 || l < lead {
			lead = l
		}
		executor := corev1.ResourceList{}
		for _, q := range set.QueriesFor(es.Object.Namespace, es.Object.Name) {
			if err := p.compression.Query(q.Object.DeepCopy()); err != nil {
				return nil, fmt.Errorf("%s: %w", q.Source, err)
			}
			template, err := sparkTemplate(q.Object)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", q.Source, err)
			}
			for role, into := range map[string]corev1.ResourceList{"driver": driver, "executor": executor} {
				req, err := sparkapp.PodRequests(template, role)
				if err != nil {
					return nil, fmt.Errorf("%s: IntermittentQuery %s/%s: spec.sparkApplication: %w", q.Source, q.Object.Namespace, q.Object.Name, err)
				}
				largest(into, req)
			}
		}
		perNode := max(int64(es.Object.Spec.NodePool.ExecutorsPerNode), 1)
		t, err := localcluster.InstanceTypeFor(executor, perNode)
		if err != nil {
			return nil, fmt.Errorf("%s: ElasticSchedule %s/%s: spec.nodePool.executorsPerNode: %w", es.Source, es.Object.Namespace, es.Object.Name, err)
		}
		p.executorTypes[es.Object.Namespace+"/"+es.Object.Name] = t
	}
	// Two drivers fit its node: one step runs at a time, and the next
	// may start while the last one's driver ends.
	t, err := localcluster.InstanceTypeFor(driver, 2)
	if err != nil {
		return nil, fmt.Errorf("the drivers' node: %w", err)
	}
	p.driverType = t
	p.nodeReadyDelay = (lead - KarpenterLatency).Truncate(time.Second)
	return p, nil
}

// workloadOrigin is where the demo's time starts for a workload of
// IntermittentQueries: a lead time and a minute before the first window,
// as on the embedded cluster.
func workloadOrigin(set *manifest.Set) time.Time {
	var first time.Time
	for _, q := range set.Queries {
		if start := q.Object.Spec.Window.Start.Time; first.IsZero() || start.Before(first) {
			first = start
		}
	}
	lead := time.Duration(0)
	for _, es := range set.Schedules {
		lead = max(lead, durationOr(es.Object.Spec.NodePool.ProvisioningLeadTime, spec.DefaultProvisioningLeadTime))
	}
	return first.Add(-lead - time.Minute).Truncate(time.Minute)
}

func largest(into, req corev1.ResourceList) {
	for name, q := range req {
		if cur, ok := into[name]; !ok || q.Cmp(cur) > 0 {
			into[name] = q
		}
	}
}

func sparkTemplate(q *laxityv1alpha1.IntermittentQuery) (map[string]any, error) {
	template := map[string]any{}
	if q.Spec.SparkApplication != nil && len(q.Spec.SparkApplication.Raw) > 0 {
		if err := json.Unmarshal(q.Spec.SparkApplication.Raw, &template); err != nil {
			return nil, fmt.Errorf("IntermittentQuery %s/%s: spec.sparkApplication: %w", q.Namespace, q.Name, err)
		}
	}
	return template, nil
}

// mapToCluster points every schedule of the set at a static NodePool of its
// own, resized through spec.replicas (the scale backend), whose nodes carry
// the schedule's node selector, and pins every query's driver to
// DriverNodePool. It says what it changed.
func mapToCluster(set *manifest.Set) ([]string, error) {
	var notes []string
	for _, es := range set.Schedules {
		np := &es.Object.Spec.NodePool
		name := nodePoolName(es.Object)
		if len(np.NodeSelector) == 0 {
			np.NodeSelector = map[string]string{localcluster.NodePoolLabel: name}
		}
		np.Backend = laxityv1alpha1.PoolBackend{Scale: &laxityv1alpha1.ScaleBackend{
			APIVersion: localcluster.NodePoolKind.GroupVersion().String(), Kind: localcluster.NodePoolKind.Kind, Name: name,
		}}
		notes = append(notes, fmt.Sprintf("ElasticSchedule %s/%s: the demo runs the pool as Karpenter NodePool %s, resized through spec.replicas (backend scale)", es.Object.Namespace, es.Object.Name, name))
	}
	for _, q := range set.Queries {
		template, err := sparkTemplate(q.Object)
		if err != nil {
			return nil, err
		}
		driver, _ := template["driver"].(map[string]any)
		if driver == nil {
			driver = map[string]any{}
		}
		selector, _ := driver["nodeSelector"].(map[string]any)
		if selector == nil {
			selector = map[string]any{}
		}
		selector[localcluster.NodePoolLabel] = DriverNodePool
		driver["nodeSelector"] = selector
		template["driver"] = driver
		raw, err := json.Marshal(template)
		if err != nil {
			return nil, err
		}
		q.Object.Spec.SparkApplication = &runtime.RawExtension{Raw: raw}
	}
	if len(set.Queries) > 0 {
		notes = append(notes, "the demo runs the Spark drivers on NodePool "+DriverNodePool+" (one static node): laxity pins only the executors to the pool")
	}
	return notes, nil
}

func nodePoolName(es *laxityv1alpha1.ElasticSchedule) string {
	return "laxity-" + es.Namespace + "-" + es.Name
}

// createNodePools makes DriverNodePool and, for every schedule, a static
// NodePool of no node that its namespace may resize, labelling its nodes
// with the schedule's node selector.
func (p *onCluster) createNodePools(ctx context.Context, c client.Client, set *manifest.Set) error {
	if err := c.Create(ctx, localcluster.NewNodePool(DriverNodePool, ptr.To[int64](1), p.driverType)); err != nil {
		return fmt.Errorf("creating NodePool %s: %w", DriverNodePool, err)
	}
	for _, es := range set.Schedules {
		name := nodePoolName(es.Object)
		np := localcluster.NewNodePool(name, ptr.To[int64](0), p.executorTypes[es.Object.Namespace+"/"+es.Object.Name])
		// A NodePool is cluster-scoped: the annotation is how its owner
		// lets the schedule's namespace resize it (internal/tenancy).
		np.SetAnnotations(map[string]string{tenancy.AllowedNamespacesAnnotation: es.Object.Namespace})
		labels := map[string]string{}
		for k, v := range es.Object.Spec.NodePool.NodeSelector {
			if k != localcluster.NodePoolLabel {
				labels[k] = v
			}
		}
		if len(labels) > 0 {
			if err := unstructured.SetNestedStringMap(np.Object, labels, "spec", "template", "metadata", "labels"); err != nil {
				return err
			}
		}
		if err := c.Create(ctx, np); err != nil {
			return fmt.Errorf("ElasticSchedule %s/%s: creating NodePool %s: %w", es.Object.Namespace, es.Object.Name, name, err)
		}
	}
	return nil
}

// runOnCluster runs the workload on the local cluster, compressed in time.
func runOnCluster(ctx context.Context, o Options, set *manifest.Set) (*Outcome, error) {
	prepared, err := prepareCluster(set, o.Speed)
	if err != nil {
		return nil, err
	}
	bins, err := localcluster.FindBinaries(o.ClusterBinaries)
	if err != nil {
		return nil, err
	}
	assets, err := findAssets(o.Assets)
	if err != nil {
		return nil, err
	}
	notes, err := mapToCluster(set)
	if err != nil {
		return nil, err
	}
	for _, n := range notes {
		fmt.Fprintln(o.Out, n)
	}
	dir, err := os.MkdirTemp("", "laxity-demo-")
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "manager.log"))
	if err != nil {
		return nil, err
	}
	defer func() { _ = logFile.Close() }()
	ctrl.SetLogger(zap.New(zap.WriteTo(logFile)))

	fmt.Fprintf(o.Out, "Starting a local cluster (kube-apiserver %s, etcd %s, kube-scheduler, kube-controller-manager, KWOK %s, Karpenter %s; nodes Ready %v after creation) ...\n",
		kubeVersion, etcdVersion, localcluster.KWOKVersion, localcluster.KarpenterVersion, prepared.nodeReadyDelay)
	c, err := localcluster.Start(ctx, localcluster.Options{NodeReadyDelay: prepared.nodeReadyDelay, Dir: dir, Binaries: bins, ControlPlane: assets})
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Stop() }()
	if o.Keep {
		fmt.Fprintf(o.Out, "While it runs: kubectl --kubeconfig %s get laxity,nodepools,nodeclaims,nodes -A -o wide\n", c.Kubeconfig)
	}
	if err := prepared.createNodePools(ctx, c.Client, set); err != nil {
		return nil, err
	}
	// The workload starts on the wall clock now, plus a moment to start
	// the manager.
	comp := prepared.compression
	comp.To = time.Now().Add(3 * time.Second).Truncate(time.Second)
	// Read before Query compresses the deadlines in place.
	last := lastDeadline(set)
	for _, es := range set.Schedules {
		if err := comp.Schedule(es.Object); err != nil {
			return nil, err
		}
	}
	for _, q := range set.Queries {
		if err := comp.Query(q.Object); err != nil {
			return nil, err
		}
	}
	fmt.Fprintln(o.Out, comp.Summary(last))

	r, err := newRun(c.Config, set, o)
	if err != nil {
		return nil, err
	}
	r.compression = &comp
	r.start = comp.To
	r.clock = wallClock{}
	stopSpark, err := c.StartSparkStandIn(&localcluster.SparkStandIn{
		Duration: standin.Slower(standin.ModelledDuration(c.Client, spec.CostModel), o.Slowdown, o.NoiseMean, o.NoiseStdDev),
	})
	if err != nil {
		return nil, err
	}
	defer stopSpark()
	out, err := r.execute(ctx, logFile.Name())
	if err != nil {
		return nil, err
	}
	out.Compression = &comp
	if o.Keep {
		fmt.Fprintln(o.Out, "The cluster keeps running; interrupt (Ctrl-C) to stop it.")
		<-ctx.Done()
	}
	return out, nil
}

// lastDeadline is the latest deadline of the set's queries, before
// compression.
func lastDeadline(set *manifest.Set) time.Time {
	var last time.Time
	for _, q := range set.Queries {
		if d := q.Object.Spec.Deadline.Time; d.After(last) {
			last = d
		}
	}
	return last
}

// wallClock is the reconcilers' clock on the local cluster: real time,
// which the demo cannot hold while laxity reacts, as Karpenter and KWOK
// run on it too.
type wallClock struct{ clock.RealClock }

func (wallClock) hold() {}
func (wallClock) run()  {}

// expand turns a report of the compressed run into workload time: every
// instant from the workload's start, every span and cost times the factor
// (a cost is node-seconds at the pool's price, with the billing minimum
// compressed too).
func (c Compression) expand(r *Report) {
	if r.Plan != nil {
		plan := c.expandDocument(*r.Plan)
		r.Plan = &plan
	}
	r.Executed = c.expandDocument(r.Executed)
	for q, w := range r.Windows {
		r.Windows[q] = [2]float64{c.WorkloadSeconds(w[0]), c.WorkloadSeconds(w[1])}
	}
	for i := range r.ObservedLeadTimes {
		r.ObservedLeadTimes[i] = time.Duration(c.WorkloadSeconds(float64(r.ObservedLeadTimes[i])))
	}
	r.DeclaredLeadTime = time.Duration(c.WorkloadSeconds(float64(r.DeclaredLeadTime)))
}

func (c Compression) expandDocument(d planner.Document) planner.Document {
	f := c.WorkloadSeconds
	d.Origin = c.WorkloadInstant(d.Origin)
	d.Steps = append([]planner.Step{}, d.Steps...)
	for i := range d.Steps {
		s := &d.Steps[i]
		s.Ready, s.Start, s.End = f(s.Ready), f(s.Start), f(s.End)
	}
	d.Nodes, d.Requests = expandLevels(d.Nodes, f), expandLevels(d.Requests, f)
	d.Queries = append([]planner.QueryPlan{}, d.Queries...)
	for i := range d.Queries {
		q := &d.Queries[i]
		q.Finish, q.Deadline, q.Slack = f(q.Finish), f(q.Deadline), f(q.Slack)
	}
	d.Candidates = append([]planner.Candidate{}, d.Candidates...)
	for i := range d.Candidates {
		d.Candidates[i].Cost, d.Candidates[i].ExecutableCost = f(d.Candidates[i].Cost), f(d.Candidates[i].ExecutableCost)
	}
	d.Chosen.Cost, d.Chosen.ExecutableCost = f(d.Chosen.Cost), f(d.Chosen.ExecutableCost)
	if d.Chosen.Failure != nil {
		failure := *d.Chosen.Failure
		failure.LateSeconds = f(failure.LateSeconds)
		d.Chosen.Failure = &failure
	}
	return d
}

func expandLevels(levels []planner.NodeLevel, f func(float64) float64) []planner.NodeLevel {
	out := make([]planner.NodeLevel, len(levels))
	for i, l := range levels {
		out[i] = planner.NodeLevel{At: f(l.At), Nodes: l.Nodes}
	}
	return out
}

// leadTimes are the provisioning lead times the schedule declares and
// laxity measured (status.leadTime.observations).
func leadTimes(es *laxityv1alpha1.ElasticSchedule) (declared time.Duration, observed []time.Duration) {
	declared = durationOr(es.Spec.NodePool.ProvisioningLeadTime, spec.DefaultProvisioningLeadTime)
	if lt := es.Status.LeadTime; lt != nil {
		for _, o := range lt.Observations {
			observed = append(observed, o.Duration)
		}
	}
	return declared, observed
}

// FormatLeadTimes is the lead-time line of a schedule's summary.
func FormatLeadTimes(r Report) string {
	if len(r.ObservedLeadTimes) == 0 {
		return fmt.Sprintf("provisioning lead time: declared %v; none measured", r.DeclaredLeadTime.Round(time.Second))
	}
	parts := make([]string, len(r.ObservedLeadTimes))
	for i, d := range r.ObservedLeadTimes {
		parts[i] = d.Round(time.Second).String()
	}
	return fmt.Sprintf("provisioning lead time: declared %v; measured from request to Ready nodes: %s", r.DeclaredLeadTime.Round(time.Second), strings.Join(parts, ", "))
}
