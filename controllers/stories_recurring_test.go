package controllers

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/test/builder"
)

// A RecurringQuery on a fake clock: its reconciler called directly, the
// windows' progress written into their status by hand.
var _ = Describe("Recurring queries", func() {
	type rqWorld struct {
		ns     string
		clock  *clocktesting.FakeClock
		r      *RecurringQueryReconciler
		events *events.FakeRecorder
	}
	newRQWorld := func(ctx context.Context, name string) *rqWorld {
		GinkgoHelper()
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-"}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		w := &rqWorld{ns: ns.Name, clock: clocktesting.NewFakeClock(origin.Add(time.Minute)), events: events.NewFakeRecorder(1000)}
		w.r = &RecurringQueryReconciler{Client: k8sClient, Clock: w.clock, Recorder: w.events}
		Expect(k8sClient.Create(ctx, builder.Schedule(w.ns, "pool").Obj())).To(Succeed())
		return w
	}
	reconcileAt := func(ctx context.Context, w *rqWorld, rq *laxityv1alpha1.RecurringQuery, at time.Time) ctrl.Result {
		GinkgoHelper()
		w.clock.SetTime(at)
		res, err := w.r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(rq)})
		Expect(err).NotTo(HaveOccurred())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(rq), rq)).To(Succeed())
		return res
	}
	windowNames := func(ctx context.Context, w *rqWorld) []string {
		GinkgoHelper()
		var list laxityv1alpha1.IntermittentQueryList
		Expect(k8sClient.List(ctx, &list, client.InNamespace(w.ns))).To(Succeed())
		var out []string
		for _, q := range list.Items {
			out = append(out, q.Name)
		}
		return out
	}
	drain := func(w *rqWorld) []string {
		var out []string
		for {
			select {
			case e := <-w.events.Events:
				out = append(out, e)
			default:
				return out
			}
		}
	}
	// finish marks a window's IntermittentQuery as its controller would
	// once it succeeded, or failed on every attempt of a step.
	finish := func(ctx context.Context, w *rqWorld, name string, succeeded bool) {
		GinkgoHelper()
		var q laxityv1alpha1.IntermittentQuery
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &q)).To(Succeed())
		end := metav1.NewTime(q.Spec.Window.End.Add(time.Minute))
		start := metav1.NewTime(q.Spec.Window.Start.Add(time.Minute))
		if succeeded {
			q.Status.Batches = []laxityv1alpha1.BatchStatus{{Index: 0, Nodes: 2, Start: &start, End: &end, Outcome: laxityv1alpha1.StepSucceeded}}
			q.Status.Final = &laxityv1alpha1.FinalStatus{Nodes: 2, Start: &end, End: &end, Outcome: laxityv1alpha1.StepSucceeded, ResultLocation: "s3a://results/" + name}
			meta.SetStatusCondition(&q.Status.Conditions, metav1.Condition{Type: laxityv1alpha1.IntermittentQuerySucceededCondition, Status: metav1.ConditionTrue, Reason: laxityv1alpha1.FinalMergeSucceededReason})
		} else {
			q.Status.Batches = []laxityv1alpha1.BatchStatus{{Index: 0, Nodes: 2, Start: &start, End: &end, Outcome: laxityv1alpha1.StepFailed, Attempt: 2}}
			meta.SetStatusCondition(&q.Status.Conditions, metav1.Condition{Type: laxityv1alpha1.IntermittentQueryStalledCondition, Status: metav1.ConditionTrue, Reason: laxityv1alpha1.StepFailedReason})
		}
		Expect(k8sClient.Status().Update(ctx, &q)).To(Succeed())
	}

	It("keeps windowsAhead windows as IntermittentQueries with deterministic names, owner references and labels", func(ctx SpecContext) {
		w := newRQWorld(ctx, "recurring-ahead")
		rq := builder.Recurring(w.ns, "orders").Obj()
		Expect(k8sClient.Create(ctx, rq)).To(Succeed())

		res := reconcileAt(ctx, w, rq, origin.Add(time.Minute))
		Expect(windowNames(ctx, w)).To(ConsistOf("orders-202612010010", "orders-202612010020"))
		Expect(res.RequeueAfter).To(Equal(9*time.Minute), "woken when the first window starts")
		var q laxityv1alpha1.IntermittentQuery
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "orders-202612010010"}, &q)).To(Succeed())
		Expect(metav1.IsControlledBy(&q, rq)).To(BeTrue())
		Expect(q.Labels).To(HaveKeyWithValue(LabelRecurringQuery, "orders"))
		Expect(q.Annotations).To(HaveKeyWithValue(AnnotationWindowStart, "2026-12-01T00:10:00Z"))
		Expect(q.Spec.Window.Start.Time).To(BeTemporally("==", origin.Add(10*time.Minute)))
		Expect(q.Spec.Window.End.Time).To(BeTemporally("==", origin.Add(15*time.Minute)))
		Expect(q.Spec.Deadline.Time).To(BeTemporally("==", origin.Add(19*time.Minute)))
		Expect(q.Spec.ScheduleName).To(Equal("pool"))
		Expect(rq.Status.Windows).To(HaveLen(2))
		Expect(rq.Status.Windows[0].Query).To(Equal("orders-202612010020"), "newest first")
		Expect(rq.Status.Windows[0].Outcome).To(Equal(laxityv1alpha1.WindowPending))
		Expect(rq.Status.NextWindow.Time).To(BeTemporally("==", origin.Add(30*time.Minute)))
		Expect(rq.Status.LastScheduleTime.Time).To(BeTemporally("==", origin.Add(20*time.Minute)))
		Expect(meta.IsStatusConditionTrue(rq.Status.Conditions, laxityv1alpha1.RecurringQueryReadyCondition)).To(BeTrue())
		Expect(drain(w)).To(HaveLen(2))

		// Again at the same instant: nothing new. When the first window
		// starts, the next one is created.
		reconcileAt(ctx, w, rq, origin.Add(time.Minute))
		Expect(drain(w)).To(BeEmpty())
		reconcileAt(ctx, w, rq, origin.Add(10*time.Minute))
		Expect(windowNames(ctx, w)).To(ConsistOf("orders-202612010010", "orders-202612010020", "orders-202612010030"))
		Expect(drain(w)).To(ConsistOf(ContainSubstring("WindowCreated")))
	})

	It("leaves a foreign IntermittentQuery holding a window's name alone and says so", func(ctx SpecContext) {
		w := newRQWorld(ctx, "recurring-taken")
		squatter := builder.Query(w.ns, "orders-202612010010").Obj()
		Expect(k8sClient.Create(ctx, squatter)).To(Succeed())
		rq := builder.Recurring(w.ns, "orders").Obj()
		Expect(k8sClient.Create(ctx, rq)).To(Succeed())
		reconcileAt(ctx, w, rq, origin.Add(time.Minute))

		var q laxityv1alpha1.IntermittentQuery
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(squatter), &q)).To(Succeed())
		Expect(q.OwnerReferences).To(BeEmpty())
		Expect(q.Spec.Window.Start.Time).To(BeTemporally("==", squatter.Spec.Window.Start.Time), "not overwritten")
		ready := meta.FindStatusCondition(rq.Status.Conditions, laxityv1alpha1.RecurringQueryReadyCondition)
		Expect(ready).NotTo(BeNil())
		Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		Expect(ready.Reason).To(Equal(laxityv1alpha1.WindowNameTakenReason))
		Expect(ready.Message).To(ContainSubstring("orders-202612010010"))
		Expect(drain(w)).To(ContainElement(And(ContainSubstring("Warning"), ContainSubstring("orders-202612010010"))))
		Expect(windowNames(ctx, w)).To(ContainElement("orders-202612010020"))
	})

	It("runs only the most recent missed window, within startingDeadline, and records the older ones as one skipped run", func(ctx SpecContext) {
		w := newRQWorld(ctx, "recurring-missed")
		rq := builder.Recurring(w.ns, "orders").StartingDeadline(2 * time.Minute).Obj()
		Expect(k8sClient.Create(ctx, rq)).To(Succeed())
		reconcileAt(ctx, w, rq, origin.Add(time.Minute))
		drain(w)
		finish(ctx, w, "orders-202612010010", true)
		finish(ctx, w, "orders-202612010020", true)

		// The manager was down from 00:01 to 00:51: of the missed starts
		// 00:30, 00:40 and 00:50 only the most recent runs (started less
		// than 2 minutes ago); the two before it are skipped.
		reconcileAt(ctx, w, rq, origin.Add(51*time.Minute))
		Expect(windowNames(ctx, w)).To(ConsistOf("orders-202612010010", "orders-202612010020",
			"orders-202612010050", "orders-202612010100", "orders-202612010110"))
		var skipped []time.Time
		for _, win := range rq.Status.Windows {
			if win.Outcome == laxityv1alpha1.WindowSkipped {
				skipped = append(skipped, win.Start.UTC())
				Expect(win.Query).To(BeEmpty())
				Expect(win.Message).To(And(ContainSubstring("Skipped 2 window(s)"), ContainSubstring("spec.startingDeadline")))
			}
		}
		Expect(skipped).To(Equal([]time.Time{origin.Add(40 * time.Minute)}))
		Expect(drain(w)).To(ContainElement(And(ContainSubstring("WindowSkipped"), ContainSubstring("2026-12-01T00:30:00Z"), ContainSubstring("2026-12-01T00:40:00Z"))))

		// The record outlives the pass that skipped them.
		reconcileAt(ctx, w, rq, origin.Add(52*time.Minute))
		Expect(rq.Status.Windows).To(ContainElement(HaveField("Outcome", laxityv1alpha1.WindowSkipped)))
	})

	It("creates no window while suspended", func(ctx SpecContext) {
		w := newRQWorld(ctx, "recurring-suspend")
		rq := builder.Recurring(w.ns, "orders").Obj()
		Expect(k8sClient.Create(ctx, rq)).To(Succeed())
		reconcileAt(ctx, w, rq, origin.Add(time.Minute))
		rq.Spec.Suspend = true
		Expect(k8sClient.Update(ctx, rq)).To(Succeed())
		reconcileAt(ctx, w, rq, origin.Add(25*time.Minute))
		Expect(windowNames(ctx, w)).To(ConsistOf("orders-202612010010", "orders-202612010020"))
		ready := meta.FindStatusCondition(rq.Status.Conditions, laxityv1alpha1.RecurringQueryReadyCondition)
		Expect(ready.Reason).To(Equal(laxityv1alpha1.SuspendedReason))
		Expect(rq.Status.NextWindow.Time).To(BeTemporally("==", origin.Add(30*time.Minute)))
	})

	It("deletes finished windows beyond the history limits and nothing else", func(ctx SpecContext) {
		w := newRQWorld(ctx, "recurring-history")
		rq := builder.Recurring(w.ns, "orders").Limits(1, 0).Obj()
		rq.Spec.MaxActiveWindows = ptr.To[int32](10) // every window stays unfinished until finished by hand
		Expect(k8sClient.Create(ctx, rq)).To(Succeed())
		for m := 1; m <= 41; m += 10 {
			reconcileAt(ctx, w, rq, origin.Add(time.Duration(m)*time.Minute))
		}
		// Windows 00:10 … 01:00 exist; 00:10 and 00:20 succeeded, 00:30
		// failed, 00:40 runs on, and a foreign query that claims the
		// recurring query's label has succeeded.
		Expect(windowNames(ctx, w)).To(HaveLen(6))
		finish(ctx, w, "orders-202612010010", true)
		finish(ctx, w, "orders-202612010020", true)
		finish(ctx, w, "orders-202612010030", false)
		foreign := builder.Query(w.ns, "imposter").Obj()
		foreign.Labels = map[string]string{LabelRecurringQuery: "orders"}
		Expect(k8sClient.Create(ctx, foreign)).To(Succeed())
		finish(ctx, w, "imposter", true)

		reconcileAt(ctx, w, rq, origin.Add(42*time.Minute))
		Expect(windowNames(ctx, w)).To(ConsistOf("imposter", "orders-202612010020", "orders-202612010040",
			"orders-202612010050", "orders-202612010100"))
		Expect(drain(w)).To(ContainElement(And(ContainSubstring("WindowsDeleted"), ContainSubstring("orders-202612010010"), ContainSubstring("orders-202612010030"))))
		Expect(rq.Status.LastOutcome).To(Equal(laxityv1alpha1.WindowSucceeded))
		newestDone := rq.Status.Windows[len(rq.Status.Windows)-1]
		Expect(newestDone.Query).To(Equal("orders-202612010020"))
		Expect(newestDone.Met).To(BeTrue())
		// Two nodes for the 5-minute batch at 1 per node-hour (the
		// builder's price) and a final merge of no length.
		Expect(newestDone.ExecutedCost).To(Equal(laxityv1alpha1.Decimal("0.1667")))
		Expect(newestDone.ResultLocation).To(Equal("s3a://results/orders-202612010020"))

		// Deleted windows are not created again.
		reconcileAt(ctx, w, rq, origin.Add(43*time.Minute))
		Expect(windowNames(ctx, w)).NotTo(ContainElement("orders-202612010010"))
	})

	It("is stalled, naming the field, when the spec cannot be honoured", func(ctx SpecContext) {
		w := newRQWorld(ctx, "recurring-stalled")
		overlap := builder.Recurring(w.ns, "overlap").Cron("0 9,17 * * *", 9*time.Hour).Obj()
		orphan := builder.Recurring(w.ns, "orphan").Schedule("nope").Obj()
		Expect(k8sClient.Create(ctx, overlap)).To(Succeed())
		Expect(k8sClient.Create(ctx, orphan)).To(Succeed())
		for rq, field := range map[*laxityv1alpha1.RecurringQuery]string{overlap: "spec.windowLength", orphan: "spec.template.scheduleName"} {
			reconcileAt(ctx, w, rq, origin.Add(time.Minute))
			stalled := meta.FindStatusCondition(rq.Status.Conditions, laxityv1alpha1.RecurringQueryStalledCondition)
			Expect(stalled).NotTo(BeNil(), rq.Name)
			Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
			Expect(stalled.Message).To(ContainSubstring(field))
		}
		Expect(windowNames(ctx, w)).To(BeEmpty())
	})
})
