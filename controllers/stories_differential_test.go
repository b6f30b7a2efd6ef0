package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/dispatch"
	"github.com/laxity-dev/laxity/internal/offlinerun"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/pool"
	"github.com/laxity-dev/laxity/internal/source"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/internal/spec"
	"github.com/laxity-dev/laxity/internal/standin"
	"github.com/laxity-dev/laxity/test/builder"
)

// differential drives a world's schedule and an offline operator
// (offlinerun.Operator) side by side: at every pass the operator is given
// what the reconciler is about to read, and both passes' decisions are
// compared.
type differential struct {
	w        *world
	operator *offlinerun.Operator
	// sources reads the queries' inputs for the offline operator, so that
	// the reconciler's own readings (and the rates it measures from them)
	// are left as they would be without it.
	sources *Sources
	// passes is every pass's decisions; mismatches what differed.
	passes     []differentialPass
	mismatches []string
}

// differentialPass is one pass: when, and what the offline operator
// decided.
type differentialPass struct {
	at        time.Time
	decisions offlinerun.Decisions
}

// runDifferential drives the world's reconcilers and an offline operator
// on its schedule and queries as created, pass by pass every step for
// horizon (newDifferential, differential.run), and writes the passes'
// re-plans and the world's report to the spec's output.
func runDifferential(ctx context.Context, w *world, horizon, step time.Duration) *differential {
	d := newDifferential(ctx, w)
	d.run(ctx, horizon, step)
	learned, lead, reasons := d.replans()
	fmt.Fprintf(GinkgoWriter, "%d passes; re-plans %v; %d for what was learned, %d for the lead time\n", len(d.passes), reasons, learned, lead)
	w.report(ctx)
	return d
}

// newDifferential starts an offline operator on the world's schedule and
// queries as created: their specs, as the planner takes them, with nothing
// learned yet, and the manager's settings.
func newDifferential(ctx context.Context, w *world) *differential {
	es := fsSchedule(ctx, w)
	queries, err := queriesOf(ctx, k8sClient, es)
	Expect(err).NotTo(HaveOccurred())
	workload, err := spec.Workload(es, queries, origin)
	Expect(err).NotTo(HaveOccurred())
	declared := map[string]costmodel.Model{}
	for i := range queries {
		declared[queries[i].Name], err = spec.CostModel(&queries[i])
		Expect(err).NotTo(HaveOccurred())
	}
	Expect(spec.Learning(es)).To(Equal(laxityv1alpha1.LearningApply), "the offline operator learns as a schedule that applies what it learns")
	operator, err := offlinerun.NewOperator(offlinerun.OperatorConfig{
		Workload: workload, Rules: rulesOf(es, w.es.Options),
		Learning: &offlinerun.Learning{Declared: declared, DeclaredLead: spec.DeclaredLeadTime(es).Seconds(), Settings: spec.LearnSettings(es)},
	})
	Expect(err).NotTo(HaveOccurred())
	return &differential{w: w, operator: operator, sources: &Sources{}}
}

// run passes every step until every query has finished and the pool is
// back at its idle size, or until the time limit.
func (d *differential) run(ctx context.Context, limit, step time.Duration) {
	for t := origin; !t.After(origin.Add(limit)); t = t.Add(step) {
		d.pass(ctx, t)
		if d.w.settled(ctx) {
			return
		}
	}
}

// pass moves the world to now and makes one pass on both sides.
func (d *differential) pass(ctx context.Context, now time.Time) {
	w := d.w
	w.clock.SetTime(now)
	es := fsSchedule(ctx, w)
	backend, err := pool.New(poolOptions, es)
	Expect(err).NotTo(HaveOccurred())
	requested, err := backend.Requested(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(w.nodes.Tick(ctx, now, w.ns, es.Spec.NodePool.NodeSelector, requested)).To(Succeed())
	Expect(w.spark.Tick(ctx, now, w.ns)).To(Succeed())

	// The IntermittentQuery controller goes before the schedule's pass: it
	// writes status.learned from the steps that have ended, which the pass
	// prices the queries with, while the offline operator learns from the
	// steps the pass observes ended. With the schedule first (as in
	// world.tick), the pass would read what the queries learned a pass
	// earlier, and the two sides would learn a pass apart.
	var queries laxityv1alpha1.IntermittentQueryList
	Expect(k8sClient.List(ctx, &queries, client.InNamespace(w.ns))).To(Succeed())
	for i := range queries.Items {
		_, err := w.iq.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&queries.Items[i])})
		Expect(err).NotTo(HaveOccurred())
	}

	want, err := d.operator.Pass(d.observation(ctx, now))
	Expect(err).NotTo(HaveOccurred())
	d.passes = append(d.passes, differentialPass{at: now, decisions: want})
	before := d.read(ctx)
	result, err := w.es.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(es)})
	Expect(err).NotTo(HaveOccurred())
	after := d.read(ctx)
	d.compare(now, want, before, after, result.RequeueAfter)
	w.observe(ctx, now)
}

// observation is what the schedule's pass is about to read, as the offline
// operator takes it, read by the reconciler's own functions: every query's
// launched steps, its input (arrivals, the rate over the rate window and
// whether it holds the query back), and the ready nodes.
func (d *differential) observation(ctx context.Context, now time.Time) offlinerun.Observation {
	es := fsSchedule(ctx, d.w)
	queries, err := queriesOf(ctx, k8sClient, es)
	Expect(err).NotTo(HaveOccurred())
	steps, _, err := listAllSteps(ctx, k8sClient, d.w.es.Options, es.Namespace, client.MatchingLabels{LabelSchedule: es.Name})
	Expect(err).NotTo(HaveOccurred())
	launched := observeSteps(steps)
	nodes, err := pool.ObserveNodes(ctx, k8sClient, es.Spec.NodePool.NodeSelector)
	Expect(err).NotTo(HaveOccurred())
	// A reconciler of the test's own reads the inputs and judges whether
	// executors fit as the world's does: with no Refusals, like the world's.
	reader := &ElasticScheduleReconciler{Sources: d.sources}
	unfit := reader.judgeFit(&view{es: es, queries: queries}, nodes, &passResult{})
	obs := offlinerun.Observation{Now: now, Ready: int(nodes.Ready)}
	for i := range queries {
		q := &queries[i]
		var dq dispatch.Query
		withLaunched(&dq, launched[q.Name], now)
		in := reader.readInput(ctx, es, q, now, &passResult{})
		qo := offlinerun.QueryObservation{
			Name: q.Name, Batches: dq.Batches, Partials: dq.Partials, Final: dq.Final, Arrived: in.arrived,
			Held: in.src == nil || unfit[q.Name],
		}
		if f, forecasts := in.src.(source.Forecaster); forecasts {
			qo.ArrivalOf = f.ArrivalOf
		}
		if in.measured {
			qo.Rate = in.rate
		}
		obs.Queries = append(obs.Queries, qo)
	}
	return obs
}

// differentialState is what the comparison reads of the cluster around a
// pass: the plan ConfigMap, the steps' names, the schedule.
type differentialState struct {
	plan     *corev1.ConfigMap
	steps    map[string]client.Object
	schedule *laxityv1alpha1.ElasticSchedule
}

func (d *differential) read(ctx context.Context) differentialState {
	s := differentialState{schedule: fsSchedule(ctx, d.w), steps: map[string]client.Object{}}
	var cm corev1.ConfigMap
	err := k8sClient.Get(ctx, client.ObjectKey{Namespace: d.w.ns, Name: PlanConfigMapName(s.schedule.Name)}, &cm)
	if !apierrors.IsNotFound(err) {
		Expect(err).NotTo(HaveOccurred())
		s.plan = &cm
	}
	steps, err := listSteps(ctx, k8sClient, d.w.es.Options, d.w.ns, nil)
	Expect(err).NotTo(HaveOccurred())
	for _, st := range steps {
		s.steps[st.Object.GetName()] = st.Object.(client.Object)
	}
	return s
}

// compare records where the reconciler's pass decided otherwise than the
// offline operator's (want): whether it re-planned, why, and the plan
// document and what it was made from, byte for byte; the pool size asked
// for; the step launched; when to look again; the lead times measured.
func (d *differential) compare(now time.Time, want offlinerun.Decisions, before, after differentialState, requeue time.Duration) {
	differs := func(format string, args ...any) {
		d.mismatches = append(d.mismatches, fmt.Sprintf("%6.0fs: ", now.Sub(origin).Seconds())+fmt.Sprintf(format, args...))
	}
	replanned := after.plan != nil && (before.plan == nil || before.plan.ResourceVersion != after.plan.ResourceVersion)
	switch {
	case replanned != (want.Plan != nil):
		differs("the reconciler re-planned: %v; the offline operator: %v (%q)", replanned, want.Plan != nil, want.Verdict.Reason)
	case replanned:
		got := after.plan
		if reason := got.Annotations[reasonAnnotation]; reason != want.Verdict.Reason {
			differs("re-planned for %s; the offline operator for %s", reason, want.Verdict.Reason)
		}
		doc, err := json.Marshal(&want.Plan.Doc)
		Expect(err).NotTo(HaveOccurred())
		models, err := json.Marshal(want.Plan.Models)
		Expect(err).NotTo(HaveOccurred())
		arrivals, err := json.Marshal(want.Plan.Arrivals)
		Expect(err).NotTo(HaveOccurred())
		rates := ""
		if len(want.Plan.Assumed) > 0 {
			encoded, err := json.Marshal(want.Plan.Assumed)
			Expect(err).NotTo(HaveOccurred())
			rates = string(encoded)
		}
		Expect(got.Data).To(HaveKey(planKey), "the story's plans are small enough to be kept as plain JSON")
		if got.Data[planKey] != string(doc) {
			differs("the plans differ:\n  reconciler %s\n  offline    %s", got.Data[planKey], doc)
		}
		if got.Data[modelsKey] != string(models) {
			differs("the plans' models differ:\n  reconciler %s\n  offline    %s", got.Data[modelsKey], models)
		}
		if got.Annotations[arrivalsAnnotation] != string(arrivals) || got.Annotations[ratesAnnotation] != rates {
			differs("the plans' arrivals or assumed rates differ: %s %s; offline %s %s",
				got.Annotations[arrivalsAnnotation], got.Annotations[ratesAnnotation], arrivals, rates)
		}
	}
	if got := ptr.Deref(after.schedule.Status.NodesRequested, -1); int(got) != want.Request {
		differs("requested %d nodes; the offline operator %d", got, want.Request)
	}
	var created []string
	for name := range after.steps {
		if _, seen := before.steps[name]; !seen {
			created = append(created, name)
		}
	}
	switch {
	case len(created) > 1:
		differs("launched %v in one pass", created)
	case len(created) == 1:
		query, step, err := sparkapp.StepOf(after.steps[created[0]])
		Expect(err).NotTo(HaveOccurred())
		l := want.Launch
		// A merge's SparkApplication records its inputs, not the tuples
		// they cover.
		sameRange := step.Kind != planner.StepBatch || l != nil && step.FromTuple == l.FromTuple && step.ToTuple == l.ToTuple
		if l == nil || query != l.Query || step.Kind != l.Kind || step.Index != l.Index || step.Attempt != l.Attempt ||
			!sameRange || step.Inputs != l.Inputs || int(step.Nodes) != l.Nodes {
			differs("launched %s %s %d attempt %d [%d, %d) of %d inputs on %d nodes; the offline operator %+v",
				query, step.Kind, step.Index, step.Attempt, step.FromTuple, step.ToTuple, step.Inputs, step.Nodes, l)
		}
	case want.Launch != nil:
		differs("launched nothing; the offline operator %+v", *want.Launch)
	}
	if expected := d.w.es.requeueAfter(now, want.Next); requeue != expected {
		differs("looks again after %s; the offline operator after %s (at %s)", requeue, expected, want.Next.Sub(origin))
	}
	var leads []float64
	if lt := after.schedule.Status.LeadTime; lt != nil {
		for _, o := range lt.Observations {
			leads = append(leads, o.Seconds())
		}
	}
	if got := d.operator.LeadTimes(); !slices.Equal(leads, got) {
		differs("measured lead times %v s; the offline operator %v s", leads, got)
	}
}

// replans counts the offline operator's re-plans for what the steps taught
// (a query's model, ModelLearned or RunningSlow) and for the pool's lead
// time.
func (d *differential) replans() (learned, lead int, reasons []string) {
	for _, p := range d.passes {
		v := p.decisions.Verdict
		if p.decisions.Plan == nil {
			continue
		}
		what := ""
		switch {
		case v.Learned == nil:
		case v.Learned.Query == "":
			lead++
			what = " (lead time)"
		default:
			learned++
			what = " (" + v.Learned.Query + ")"
		}
		reasons = append(reasons, fmt.Sprintf("%.0fs %s%s", p.at.Sub(origin).Seconds(), v.Reason, what))
	}
	return learned, lead, reasons
}

var _ = Describe("The operator and the offline run, pass by pass", Ordered, func() {
	// Spark runs 40% slower than the queries' cost models say, and nodes
	// take half as long again as the declared lead time: the window
	// re-plans for both.
	const declaredLead, trueLead = 2 * time.Minute, 3 * time.Minute
	var d *differential
	BeforeAll(func(ctx SpecContext) {
		w := newWorld(ctx, "differential", trueLead)
		w.spark.Duration = standin.Slower(standin.ModelledDuration(k8sClient, spec.CostModel), 0.4, 0, 0)
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4, 8).LeadTime(declaredLead).SmallBatches().Obj()
		w.create(ctx, w.schedule)
		w.create(ctx, threeQueries(w.ns)...)
		d = runDifferential(ctx, w, 40*time.Minute, 5*time.Second)
	})

	It("decides as the offline operator at every pass", func() {
		Expect(d.passes).NotTo(BeEmpty())
		Expect(d.mismatches).To(BeEmpty())
	})

	It("re-plans for what the steps taught and for the lead time", func() {
		learned, lead, reasons := d.replans()
		Expect(learned).To(BeNumerically(">=", 1), "re-plans %v", reasons)
		Expect(lead).To(BeNumerically(">=", 1), "re-plans %v", reasons)
	})

	It("runs the window to its end", func(ctx SpecContext) {
		Expect(d.w.settled(ctx)).To(BeTrue())
	})
})
