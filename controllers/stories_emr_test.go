package controllers

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/emr"
	"github.com/laxity-dev/laxity/internal/emr/emrfake"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/pool"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/internal/spec"
	"github.com/laxity-dev/laxity/internal/standin"
	"github.com/laxity-dev/laxity/internal/steprun"
	"github.com/laxity-dev/laxity/internal/steprun/jobrun"
	"github.com/laxity-dev/laxity/test/builder"
	"github.com/laxity-dev/laxity/test/builder/emrbuilder"
)

// useEMR makes w's schedule run its steps on aws, an in-process EMR on EKS
// and EKS: the reconcilers talk to it through the real AWS SDK client, and
// tick moves its job runs on (runJobRuns) and grows the node group's Nodes
// to its desired size a lead time later.
func (w *world) useEMR(aws *emrfake.Server) {
	w.aws = aws
	aws.SetClock(w.clock.Now)
	aws.SetUpdatesCompleteAtOnce(true)
	aws.SetScaling(0, 20, 0)
	jobRuns := &emr.Clients{Options: []emr.Option{emr.WithCredentials(aws.Credentials()), emr.WithRetries(emr.DefaultMaxAttempts, time.Millisecond)}}
	w.es.Runner = StepRunners(w.es.Client, jobRuns)
	w.es.Backend = func(ctx context.Context, es *laxityv1alpha1.ElasticSchedule) (pool.Backend, error) {
		return jobRuns.For(ctx, emr.ConfigFrom(es.Spec.NodePool.Backend.EMRContainers))
	}
}

// runJobRuns moves the fake's job runs on as EMR on EKS would: a new run
// starts running at once and ends its step's modelled duration after it
// was created, completing unless w.failRun says it fails; a cancelled run
// is gone on the next tick. The world wakes when a running run ends.
func (w *world) runJobRuns(ctx context.Context, now time.Time) {
	for _, run := range w.aws.Runs() {
		switch run.State {
		case emr.StatePending, emr.StateSubmitted:
			w.aws.SetState(run.ID, emr.StateRunning, "", "")
			fallthrough // and may end as a running run does
		case emr.StateRunning:
			w.endJobRun(ctx, run, now)
		case emr.StateCancelPending:
			w.aws.SetState(run.ID, emr.StateCancelled, "Job run cancelled by the user.", "USER_ERROR")
		}
	}
}

// endJobRun ends a running job run whose step's modelled duration has
// passed since it was created; the world wakes when one has not.
func (w *world) endJobRun(ctx context.Context, run emrfake.Run, now time.Time) {
	var record corev1.ConfigMap
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: run.Name}, &record)).To(Succeed())
	d, err := standin.ModelledDuration(k8sClient, spec.CostModel)(ctx, &record)
	Expect(err).NotTo(HaveOccurred())
	if end := run.CreatedAt.Add(d); now.Before(end) {
		w.wake(end)
		return
	}
	if w.failRun != nil && w.failRun(run.Name) {
		w.aws.SetState(run.ID, emr.StateFailed, "Driver exited with code 1.", "USER_ERROR")
	} else {
		w.aws.SetState(run.ID, emr.StateCompleted, "", "")
	}
}

// jobRunsMoving reports whether a job run waits for EMR's next look: one
// just started, or one being cancelled.
func (w *world) jobRunsMoving() bool {
	for _, run := range w.aws.Runs() {
		switch run.State {
		case emr.StatePending, emr.StateSubmitted, emr.StateCancelPending:
			return true
		}
	}
	return false
}

// jobRunRecords are the job-run records in w's namespace, by name.
func (w *world) jobRunRecords(ctx context.Context) map[string]corev1.ConfigMap {
	var list corev1.ConfigMapList
	Expect(k8sClient.List(ctx, &list, client.InNamespace(w.ns), client.HasLabels{LabelStep})).To(Succeed())
	out := map[string]corev1.ConfigMap{}
	for _, r := range list.Items {
		out[r.Name] = r
	}
	return out
}

var _ = Describe("A schedule running three queries as EMR on EKS job runs", concurrent, Ordered, func() {
	var (
		w    *world
		aws  *emrfake.Server
		doc  planner.Document
		rate = map[string]int64{"alpha": 50, "bravo": 40, "charlie": 30}
	)
	const lead = 2 * time.Minute
	BeforeAll(func(ctx SpecContext) {
		w = newWorld(ctx, "emr", lead)
		aws = emrfake.New(GinkgoT())
		w.useEMR(aws)
		// AWS throttles two starts and a resize; the client's retries take
		// them within the call.
		aws.Fail(emrfake.OpStartJobRun, 2, http.StatusTooManyRequests, "ThrottlingException", "Rate exceeded")
		aws.Fail(emrfake.OpUpdateNodegroupConfig, 1, http.StatusTooManyRequests, "ThrottlingException", "Rate exceeded")
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4, 8).LeadTime(lead).Backend(emrbuilder.Backend(aws.Config())).Obj()
		// The fake AWS ends a job run on the story's next 5 s tick, which
		// learning rightly sees as steps slower than modelled and re-plans
		// for; this story is about how job runs are launched, against one
		// plan.
		w.schedule.Spec.Planning.Learning = laxityv1alpha1.LearningOff
		w.create(ctx, w.schedule)
		w.create(ctx, threeQueries(w.ns)...)
		w.run(ctx, 30*time.Minute)
		w.report(ctx)
		stored, err := loadPlan(ctx, k8sClient, w.schedule)
		Expect(err).NotTo(HaveOccurred())
		Expect(stored).NotTo(BeNil())
		doc = stored.doc
	})

	It("meets every deadline, every tuple processed once", func(ctx SpecContext) {
		for name, r := range rate {
			q := w.finishedInTime(ctx, name)
			Expect(*q.Status.ProcessedTuples).To(Equal(r*600), name)
			Expect(q.Status.Final.Outcome).To(Equal(laxityv1alpha1.StepSucceeded))
		}
	})

	It("starts one job run per step, with the contract's tags, the template's entry point and executors sized to the ready nodes", func(ctx SpecContext) {
		runs := aws.Runs()
		Expect(runs).To(HaveLen(len(w.launches)))
		records := w.jobRunRecords(ctx)
		tokens := map[string]bool{}
		for _, run := range runs {
			Expect(tokens).NotTo(HaveKey(run.ClientToken), "%s reuses a client token", run.Name)
			tokens[run.ClientToken] = true
			Expect(run.State).To(Equal(emr.StateCompleted), run.Name)
			record, ok := records[run.Name]
			Expect(ok).To(BeTrue(), "job run %s has no record", run.Name)
			Expect(record.Data[steprun.RecordJobRunID]).To(Equal(run.ID))
			Expect(record.OwnerReferences).To(HaveLen(1))

			query, step, err := sparkapp.StepOf(&record)
			Expect(err).NotTo(HaveOccurred())
			Expect(run.Request.Tags).To(HaveKeyWithValue(LabelSchedule, "pool"))
			Expect(run.Request.Tags).To(HaveKeyWithValue(LabelQuery, query))
			Expect(run.Request.Tags).To(HaveKeyWithValue(LabelStep, string(step.Kind)))
			Expect(run.Request.Tags).To(HaveKeyWithValue(sparkapp.AnnotationNodes, fmt.Sprint(step.Nodes)))
			driver := run.Request.JobDriver.SparkSubmitJobDriver
			Expect(driver.EntryPoint).To(Equal("local:///opt/job.jar"))
			Expect(driver.EntryPointArguments).To(ContainElement("--laxity-query=" + query))
			Expect(driver.SparkSubmitParameters).To(HavePrefix("--class dev.laxity.Batch "))
			Expect(driver.SparkSubmitParameters).To(ContainSubstring("--conf spark.executor.memory=4g"))
			Expect(driver.SparkSubmitParameters).To(MatchRegexp(`--conf spark\.executor\.instances=\d+$`))
			Expect(run.Request.ExecutionRoleArn).To(Equal(emrfake.ExecutionRoleARN))
			Expect(run.Request.ReleaseLabel).To(Equal(emrfake.ReleaseLabel))
		}
		// The throttled starts were tried again within their calls.
		Expect(aws.CallCount(emrfake.OpStartJobRun)).To(Equal(len(runs) + 2))
	})

	It("launches the job runs in least-laxity order, each batch after its tuples arrived", func(ctx SpecContext) {
		// threeQueries' slack ranks alpha, bravo, charlie throughout. So no
		// batch may start while a batch of a query ranked before it had all
		// its tuples and waited. (The plan's own order can
		// differ by a tick: it starts a batch the instant it fills up, the
		// story looks every 5 s.)
		rank := []string{"alpha", "bravo", "charlie"}
		next := map[string][]launch{}
		for _, l := range w.launches {
			next[l.query] = append(next[l.query], l)
		}
		for _, l := range w.launches {
			if l.step.Kind == planner.StepBatch {
				Expect(l.arrived).To(BeNumerically(">=", l.step.ToTuple), "%s launched before its tuples arrived", l.name)
			}
			for _, tighter := range rank[:slices.Index(rank, l.query)] {
				var q laxityv1alpha1.IntermittentQuery
				Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: tighter}, &q)).To(Succeed())
				src, err := spec.SyntheticSource(ctx, &q)
				Expect(err).NotTo(HaveOccurred())
				arrived, err := src.Arrived(context.Background(), l.at)
				Expect(err).NotTo(HaveOccurred())
				for _, t := range next[tighter] {
					if t.at.After(l.at) && t.step.Kind == planner.StepBatch {
						Expect(arrived).To(BeNumerically("<", t.step.ToTuple), "%s launched at %s while %s's tuples had all arrived", l.name, l.at.Sub(origin), t.name)
						break
					}
				}
			}
		}
		// And the executed order is the plan's but for such ties.
		Expect(w.launches).To(HaveLen(len(doc.Steps)))
		Expect(w.maxRunning).To(Equal(1))
	})

	It("resizes the node group a lead time ahead, so every job run starts on nodes that are ready", func() {
		updates := aws.Updates()
		Expect(updates).NotTo(BeEmpty())
		for _, l := range w.launches {
			Expect([]int32{2, 4, 8}).To(ContainElement(l.step.Nodes), l.name)
			Expect(l.step.Nodes).To(BeNumerically("<=", l.ready), "%s planned for more nodes than were ready", l.name)
			// The size it runs on was asked for at least a lead time before.
			asked := false
			for _, u := range updates {
				asked = asked || (u.DesiredSize >= l.step.Nodes && !u.At.After(l.at.Add(-lead)))
			}
			Expect(asked).To(BeTrue(), "%s on %d nodes: no resize a lead time before", l.name, l.step.Nodes)
		}
		// Every increase of the executable timeline went out when the plan
		// said, within a tick; a decrease no earlier, and later while steps
		// still run behind the plan. The node group starts empty.
		previous := 0
		for _, r := range doc.Requests {
			if r.Nodes == previous {
				continue
			}
			increase := r.Nodes > previous
			previous = r.Nodes
			at := doc.Origin.Add(time.Duration(r.At * float64(time.Second)))
			found := false
			for _, u := range updates {
				found = found || (u.DesiredSize == int32(r.Nodes) && !u.At.Before(at) && (!increase || u.At.Sub(at) <= 5*time.Second))
			}
			Expect(found).To(BeTrue(), "request of %d nodes at %s", r.Nodes, at.Sub(origin))
		}
		Expect(aws.DesiredSize()).To(BeZero(), "the node group is released at the end")
		Expect(aws.CallCount(emrfake.OpUpdateNodegroupConfig)).To(Equal(len(updates)+1), "the throttled resize was tried again")
		fmt.Fprintf(GinkgoWriter, "node group updates: %+v\n", updates)
	})

	It("shows the job runs in the queries' status as it shows SparkApplications", func(ctx SpecContext) {
		var q laxityv1alpha1.IntermittentQuery
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "alpha"}, &q)).To(Succeed())
		Expect(q.Status.Batches).NotTo(BeEmpty())
		for _, b := range q.Status.Batches {
			Expect(b.Outcome).To(Equal(laxityv1alpha1.StepSucceeded))
			Expect(b.Start).NotTo(BeNil())
			Expect(b.End).NotTo(BeNil())
			Expect(b.ResultLocation).NotTo(BeEmpty())
			Expect(b.SparkApplication).To(Equal(fmt.Sprintf("alpha-b%d", b.Index)), "the job run's name")
		}
		Expect(q.Finalizers).To(ContainElement(jobrun.Finalizer))
	})

	It("calls AWS little: one poll per pass of the one run in flight, one node group read per pass", func() {
		passes := w.passes
		calls := map[string]int{}
		for _, op := range []string{emrfake.OpStartJobRun, emrfake.OpDescribeJobRun, emrfake.OpListJobRuns, emrfake.OpCancelJobRun, emrfake.OpDescribeNodegroup, emrfake.OpUpdateNodegroupConfig} {
			calls[op] = aws.CallCount(op)
		}
		fmt.Fprintf(GinkgoWriter, "%d passes, %d job runs, AWS calls %v\n", passes, len(aws.Runs()), calls)
		Expect(calls[emrfake.OpDescribeJobRun]).To(BeNumerically("<=", passes+len(aws.Runs())), "a run is read once a pass, and once more when started")
		Expect(calls[emrfake.OpDescribeNodegroup]).To(BeNumerically("<=", passes+len(aws.Updates())))
		Expect(calls[emrfake.OpListJobRuns]).To(BeZero(), "no run is looked up by name when every start was answered")
	})
})

var _ = Describe("EMR on EKS job runs that fail, are throttled and are cancelled", concurrent, Ordered, func() {
	var (
		w           *world
		aws         *emrfake.Server
		errs        []reconcileError
		echoID      string
		echoDeleted time.Time
	)
	const lead = 2 * time.Minute
	BeforeAll(func(ctx SpecContext) {
		w = newWorld(ctx, "emr-faults", lead)
		aws = emrfake.New(GinkgoT())
		w.useEMR(aws)
		w.failRun = func(name string) bool { return name == "delta-b1" }
		w.reconcileErrors = &errs
		// The first start is throttled past the client's retries: the pass
		// fails, and the next one starts the run its record describes.
		aws.Fail(emrfake.OpStartJobRun, emr.DefaultMaxAttempts, http.StatusTooManyRequests, "ThrottlingException", "Rate exceeded")
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4).LeadTime(lead).Backend(emrbuilder.Backend(aws.Config())).SmallBatches().Obj()
		w.create(ctx, w.schedule,
			builder.Query(w.ns, "delta").Rate("40").Slack(3*time.Minute).Obj(),
			builder.Query(w.ns, "echo").Rate("30").Slack(5*time.Minute).Obj(),
		)
		// echo is deleted while its first job run runs.
		w.runFeeding(ctx, 30*time.Minute, func(ctx context.Context, now time.Time) {
			if echoID != "" {
				return
			}
			for _, run := range aws.Runs() {
				if !strings.HasPrefix(run.Name, "echo-") {
					continue
				}
				if run.State == emr.StatePending || run.State == emr.StateSubmitted {
					// A look while it runs, before it can end: it starts
					// on EMR's next look.
					w.at(now.Add(reactWithin + time.Second))
				}
				if run.State == emr.StateRunning {
					echoID, echoDeleted = run.ID, now
					// The first cancellation is throttled past the client's
					// retries: echo stays until the next pass cancels it.
					aws.Fail(emrfake.OpCancelJobRun, emr.DefaultMaxAttempts, http.StatusTooManyRequests, "ThrottlingException", "Rate exceeded")
					var q laxityv1alpha1.IntermittentQuery
					Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "echo"}, &q)).To(Succeed())
					Expect(k8sClient.Delete(ctx, &q)).To(Succeed())
				}
			}
		})
		w.report(ctx)
	})

	It("retries a start throttled past the client's retries on the next pass, with the same token: one run", func(ctx SpecContext) {
		Expect(errs).To(HaveLen(2), "the throttled start, then the throttled cancellation")
		const throttled = "StartJobRun: ThrottlingException: Rate exceeded (gave up after 4 attempts)"
		Expect(errs[0].err.Error()).To(ContainSubstring(throttled))
		// Meanwhile the schedule said so, with AWS's message.
		Expect(errs[0].ready).NotTo(BeNil())
		Expect(errs[0].ready.Status).To(Equal(metav1.ConditionFalse))
		Expect(errs[0].ready.Reason).To(Equal(laxityv1alpha1.BackendErrorReason))
		Expect(errs[0].ready.Message).To(ContainSubstring(throttled))
		runs := aws.Runs()
		Expect(aws.CallCount(emrfake.OpStartJobRun)).To(Equal(len(runs) + emr.DefaultMaxAttempts))
		names := map[string]bool{}
		for _, run := range runs {
			Expect(names).NotTo(HaveKey(run.Name), "a second run of %s", run.Name)
			names[run.Name] = true
		}
		Expect(w.jobRunRecords(ctx)).To(HaveLen(len(runs)))
	})

	It("retries a failed job run like a failed SparkApplication, and the query still meets its deadline", func(ctx SpecContext) {
		records := w.jobRunRecords(ctx)
		failed, retried := records["delta-b1"], records["delta-b1-r1"]
		Expect(failed.Data[steprun.RecordState]).To(Equal(emr.StateFailed))
		Expect(failed.Data[steprun.RecordMessage]).To(Equal("USER_ERROR: Driver exited with code 1."))
		Expect(retried.Data[steprun.RecordState]).To(Equal(emr.StateCompleted))
		q := w.finishedInTime(ctx, "delta")
		Expect(q.Status.Batches[1].Attempt).To(Equal(int32(1)))
		Expect(q.Status.Batches[1].Outcome).To(Equal(laxityv1alpha1.StepSucceeded))
		Expect(*q.Status.ProcessedTuples).To(Equal(int64(40 * 600)))
	})

	It("cancels a deleted query's running job run and lets the query go", func(ctx SpecContext) {
		Expect(echoID).NotTo(BeEmpty(), "echo ran a job")
		Expect(aws.CallCount(emrfake.OpCancelJobRun)).To(Equal(emr.DefaultMaxAttempts+1), "one cancellation, on the pass after the throttled one")
		Expect(errs[1].err.Error()).To(ContainSubstring("IntermittentQuery echo: cancelling its job runs: cancelling job run %s: emr-containers CancelJobRun: ThrottlingException", echoID))
		Expect(errs[1].ready.Reason).To(Equal(laxityv1alpha1.BackendErrorReason))
		for _, run := range aws.Runs() {
			if run.ID == echoID {
				Expect(run.State).To(Equal(emr.StateCancelled))
			}
			if strings.HasPrefix(run.Name, "echo-") {
				Expect(run.CreatedAt).NotTo(BeTemporally(">", echoDeleted), "%s started after echo was deleted", run.Name)
			}
		}
		var q laxityv1alpha1.IntermittentQuery
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "echo"}, &q)
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "echo is gone: %v", err)
		var es laxityv1alpha1.ElasticSchedule
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(w.schedule), &es)).To(Succeed())
		Expect(meta.IsStatusConditionTrue(es.Status.Conditions, laxityv1alpha1.ElasticScheduleFeasibleCondition)).To(BeTrue())
		Expect(ptr.Deref(es.Status.NodesRequested, -1)).To(BeZero())
	})
})
