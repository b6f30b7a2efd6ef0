package controllers

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/test/builder"
)

// What GitOps tools see: kstatus (which Flux uses, and Argo CD can) computed
// from the objects as the API server stores them, at each stage of a run.
var _ = Describe("GitOps health: kstatus of schedules and queries", Ordered, func() {
	const lead = 2 * time.Minute
	kstatusOf := func(ctx context.Context, obj client.Object) status.Status {
		GinkgoHelper()
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		Expect(err).NotTo(HaveOccurred())
		result, err := status.Compute(&unstructured.Unstructured{Object: content})
		Expect(err).NotTo(HaveOccurred())
		return result.Status
	}

	// firstRequest is when the schedule's plan first asks for nodes, as the
	// schedule last read shows it.
	firstRequest := func(es *laxityv1alpha1.ElasticSchedule) time.Time {
		GinkgoHelper()
		for _, r := range es.Status.NodeRequests {
			if r.Nodes > 0 {
				return r.At.Time
			}
		}
		Fail("the plan asks for no node")
		return time.Time{}
	}

	It("shows a feasible schedule current while its nodes come as planned; its queries current while on track and when done", func(ctx SpecContext) {
		w := newWorld(ctx, "kstatus", lead)
		// Small batches: the spec change below re-plans while a batch runs,
		// and a re-plan prices the running batch again when it is the
		// query's last (internal/replan's Remaining), which a batch of the
		// whole window would not leave room for.
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4).LeadTime(lead).SmallBatches().Obj()
		query := builder.Query(w.ns, "alpha").Rate("50").Slack(3 * time.Minute).Obj()
		w.create(ctx, w.schedule, query)

		w.tick(ctx, origin)
		Expect(kstatusOf(ctx, w.schedule)).To(Equal(status.CurrentStatus), "planned; no node needed before the window")
		Expect(kstatusOf(ctx, query)).To(Equal(status.CurrentStatus), "planned and on track")

		// The plan asks for its nodes a lead time before its first step.
		asked := firstRequest(fsSchedule(ctx, w))
		Expect(asked).To(BeTemporally(">=", windowStart.Add(-lead)), "no node before the window needs one")
		w.tick(ctx, asked)
		w.tick(ctx, asked.Add(5*time.Second))
		Expect(kstatusOf(ctx, w.schedule)).To(Equal(status.CurrentStatus), "nodes requested, none ready yet, within their lead time: a routine scale-up")
		Expect(w.schedule.Status.Conditions).To(ContainElement(And(
			HaveField("Type", laxityv1alpha1.ElasticScheduleReadyCondition), HaveField("Reason", laxityv1alpha1.ScalingUpReason))))
		w.tick(ctx, asked.Add(lead+10*time.Second))
		Expect(kstatusOf(ctx, w.schedule)).To(Equal(status.CurrentStatus), "the nodes are ready")

		// A spec change is in progress until the controller has seen it.
		w.schedule.Spec.NodePool.PricePerNodeHour = "2"
		Expect(k8sClient.Update(ctx, w.schedule)).To(Succeed())
		Expect(kstatusOf(ctx, w.schedule)).To(Equal(status.InProgressStatus), "generation not observed yet")
		w.tick(ctx, asked.Add(lead+15*time.Second))
		Expect(kstatusOf(ctx, w.schedule)).To(Equal(status.CurrentStatus))

		for t := asked.Add(lead + 20*time.Second); !w.settled(ctx); t = w.next(t) {
			Expect(t.Before(origin.Add(30*time.Minute))).To(BeTrue(), "the query should have finished")
			w.tick(ctx, t)
		}
		Expect(kstatusOf(ctx, w.schedule)).To(Equal(status.CurrentStatus))
		Expect(kstatusOf(ctx, query)).To(Equal(status.CurrentStatus))
		Expect(query.Status.Final).NotTo(BeNil())

		// The query's own events: each step launched once, the result once,
		// and a reconcile run again announces nothing more.
		var evs []string
		for drained := false; !drained; {
			select {
			case e := <-w.iq.Recorder.(*events.FakeRecorder).Events:
				evs = append(evs, e)
			default:
				drained = true
			}
		}
		steps := len(query.Status.Batches) + len(query.Status.Partials) + 1
		Expect(fsCount(evs, "Normal Launched", "launched as")).To(Equal(steps), "%v", evs)
		Expect(fsCount(evs, "Normal Succeeded", query.Status.Final.SparkApplication)).To(Equal(1), "%v", evs)
		Expect(evs).To(HaveLen(steps+1), "nothing else happened to the query: %v", evs)
		Expect(evs).To(ContainElement(ContainSubstring("Batch 0 launched as")))
		_, err := w.iq.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(query)})
		Expect(err).NotTo(HaveOccurred())
		Expect(w.iq.Recorder.(*events.FakeRecorder).Events).To(BeEmpty())
	})

	It("shows a schedule whose nodes are late in progress, naming them overdue, and current once they come", func(ctx SpecContext) {
		// The pool takes 5 minutes where the schedule declares 2.
		w := newWorld(ctx, "kstatus-overdue", 5*time.Minute)
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4).LeadTime(lead).Obj()
		// Not learning the longer lead time keeps the plan, so that what is
		// due stays what the first plan asked for.
		w.schedule.Spec.Planning.Learning = laxityv1alpha1.LearningOff
		w.create(ctx, w.schedule, builder.Query(w.ns, "alpha").Rate("50").Slack(10*time.Minute).Obj())
		w.tick(ctx, origin)
		asked := firstRequest(fsSchedule(ctx, w))
		for t := origin; !t.After(asked.Add(lead + overdueGrace - 5*time.Second)); t = t.Add(5 * time.Second) {
			w.tick(ctx, t)
			Expect(kstatusOf(ctx, w.schedule)).To(Equal(status.CurrentStatus), "at %s: within the lead time", t.Sub(origin))
		}
		w.tick(ctx, asked.Add(lead+overdueGrace+5*time.Second))
		Expect(kstatusOf(ctx, w.schedule)).To(Equal(status.InProgressStatus), "nodes overdue")
		ready := meta.FindStatusCondition(w.schedule.Status.Conditions, laxityv1alpha1.ElasticScheduleReadyCondition)
		Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		Expect(ready.Reason).To(Equal(laxityv1alpha1.NodesOverdueReason))
		Expect(ready.Message).To(ContainSubstring("lead time ago"))
		current := false
		for t := asked.Add(lead + overdueGrace + 10*time.Second); !current; t = t.Add(5 * time.Second) {
			Expect(t.Before(origin.Add(30*time.Minute))).To(BeTrue(), "the schedule should be current again once its nodes came")
			w.tick(ctx, t)
			current = kstatusOf(ctx, w.schedule) == status.CurrentStatus
			if current {
				Expect(t).To(BeTemporally(">=", asked.Add(5*time.Minute)), "not before the nodes came")
			}
		}
	})

	It("shows an infeasible schedule and its doomed query as failed, naming why", func(ctx SpecContext) {
		w := newWorld(ctx, "kstatus-infeasible", lead)
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2).LeadTime(lead).Obj()
		tight := builder.Query(w.ns, "tight").Rate("50").Slack(5 * time.Second).Obj()
		w.create(ctx, w.schedule, tight)
		w.tick(ctx, origin)
		Expect(kstatusOf(ctx, w.schedule)).To(Equal(status.FailedStatus))
		Expect(kstatusOf(ctx, tight)).To(Equal(status.FailedStatus))
		var es laxityv1alpha1.ElasticSchedule
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(w.schedule), &es)).To(Succeed())
		Expect(es.Status.Conditions).To(ContainElement(And(
			HaveField("Type", laxityv1alpha1.ElasticScheduleStalledCondition),
			HaveField("Reason", laxityv1alpha1.NoFeasiblePlanReason),
			HaveField("Message", ContainSubstring("tight")))))
	})
})
