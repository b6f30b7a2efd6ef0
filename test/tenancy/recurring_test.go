package tenancy_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/test/builder"
)

// recurringEveryMinute is a RecurringQuery of tenant namespace ns whose
// windows start every minute, last a minute and are due an hour after
// they end, one of them ahead.
func recurringEveryMinute(ns, name, schedule string) *laxityv1alpha1.RecurringQuery {
	rq := builder.Recurring(ns, name).Schedule(schedule).Cron("@every 1m", time.Minute).Obj()
	rq.Spec.DeadlineAfterWindowEnd = metav1.Duration{Duration: time.Hour}
	rq.Spec.WindowsAhead = ptr.To[int32](1)
	return rq
}

// recurringCondition is the recurring query's condition of type t, read
// by the administrator (nil when it is not set).
func recurringCondition(ctx context.Context, rq *laxityv1alpha1.RecurringQuery, t string) func(Gomega) *metav1.Condition {
	return condition(ctx, rq, func() []metav1.Condition { return rq.Status.Conditions }, t)
}

// recurringWindows are the names of the IntermittentQueries in ns that
// the recurring query controls.
func recurringWindows(ctx context.Context, rq *laxityv1alpha1.RecurringQuery) func(Gomega) []string {
	return func(g Gomega) []string {
		var owner laxityv1alpha1.RecurringQuery
		g.Expect(asCarol.Get(ctx, client.ObjectKeyFromObject(rq), &owner)).To(Succeed())
		var list laxityv1alpha1.IntermittentQueryList
		g.Expect(asCarol.List(ctx, &list, client.InNamespace(rq.Namespace))).To(Succeed())
		var names []string
		for i := range list.Items {
			if metav1.IsControlledBy(&list.Items[i], &owner) {
				names = append(names, list.Items[i].Name)
			}
		}
		return names
	}
}

// recurringEvents are the messages of the events about the recurring
// query with reason.
func recurringEvents(ctx context.Context, rq *laxityv1alpha1.RecurringQuery, reason string) func(Gomega) []string {
	return func(g Gomega) []string {
		var list eventsv1.EventList
		g.Expect(asCarol.List(ctx, &list, client.InNamespace(rq.Namespace))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "RecurringQuery" && e.Regarding.Name == rq.Name && e.Reason == reason {
				out = append(out, e.Note)
			}
		}
		return out
	}
}

// recurringSetLastSchedule has the administrator write
// status.lastScheduleTime, as a restore from a backup taken long ago
// would: a tenant cannot write the status.
func recurringSetLastSchedule(ctx context.Context, rq *laxityv1alpha1.RecurringQuery, at time.Time) {
	GinkgoHelper()
	var current laxityv1alpha1.RecurringQuery
	Expect(asCarol.Get(ctx, client.ObjectKeyFromObject(rq), &current)).To(Succeed())
	before := current.DeepCopy()
	current.Status.LastScheduleTime = &metav1.Time{Time: at}
	Expect(asCarol.Status().Patch(ctx, &current, client.MergeFrom(before))).To(Succeed())
}

// recurringSpec has alice change the recurring query's spec.
func recurringSpec(ctx context.Context, rq *laxityv1alpha1.RecurringQuery, change func(*laxityv1alpha1.RecurringQuery)) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		var current laxityv1alpha1.RecurringQuery
		g.Expect(asAlice.Get(ctx, client.ObjectKeyFromObject(rq), &current)).To(Succeed())
		change(&current)
		g.Expect(asAlice.Update(ctx, &current)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

var _ = Describe("the tenancy boundary for recurring queries", func() {
	It("runs only the most recent missed window after a long suspension, and counts the others once", func(ctx SpecContext) {
		create(ctx, asAlice, builder.Schedule(teamA, "rq-catchup").Obj())
		rq := recurringEveryMinute(teamA, "catchup", "rq-catchup")
		rq.Spec.Suspend = true
		create(ctx, asAlice, rq)
		Eventually(recurringCondition(ctx, rq, laxityv1alpha1.RecurringQueryReadyCondition)).WithTimeout(timeout).WithPolling(poll).
			Should(And(Not(BeNil()), HaveField("Reason", laxityv1alpha1.SuspendedReason)))

		By("suspended 99 minutes ago, without a startingDeadline, then resumed")
		recurringSetLastSchedule(ctx, rq, time.Now().Add(-99*time.Minute))
		recurringSpec(ctx, rq, func(rq *laxityv1alpha1.RecurringQuery) { rq.Spec.Suspend = false })

		By("one window runs late and one is ahead; the other 98 or so are one Skipped entry")
		skipped := func(g Gomega) []laxityv1alpha1.RecurringWindow {
			var current laxityv1alpha1.RecurringQuery
			g.Expect(asCarol.Get(ctx, client.ObjectKeyFromObject(rq), &current)).To(Succeed())
			var out []laxityv1alpha1.RecurringWindow
			for _, w := range current.Status.Windows {
				if w.Outcome == laxityv1alpha1.WindowSkipped {
					out = append(out, w)
				}
			}
			return out
		}
		Eventually(skipped).WithTimeout(timeout).WithPolling(poll).Should(ConsistOf(
			HaveField("Message", MatchRegexp(`Skipped 9[6-9] window\(s\) starting from .* only the most recent missed start runs late`))))
		Eventually(recurringWindows(ctx, rq)).WithTimeout(timeout).WithPolling(poll).ShouldNot(BeEmpty())
		Consistently(recurringWindows(ctx, rq)).WithTimeout(3 * time.Second).WithPolling(poll).Should(WithTransform(func(names []string) int { return len(names) }, BeNumerically("<=", 3)))
		Expect(recurringEvents(ctx, rq, "WindowSkipped")(Default)).To(HaveLen(1))
	})

	It("creates no window while its schedule is refused, says so, and resumes once the schedule is granted", func(ctx SpecContext) {
		create(ctx, asCarol, nodePool("rq-pool", 0, ""))
		es := builder.Schedule(teamA, "rq-refused").Backend(builder.ScaleBackend("karpenter.sh/v1", "NodePool", "rq-pool")).Obj()
		create(ctx, asAlice, es)
		create(ctx, asAlice, query(teamA, "rq-refused-q", "rq-refused", time.Hour).Obj())
		Eventually(scheduleStalled(ctx, es)).WithTimeout(timeout).WithPolling(poll).Should(refusedFor(laxityv1alpha1.NotPermittedReason))

		rq := recurringEveryMinute(teamA, "on-refused", "rq-refused")
		rq.Spec.StartingDeadline = &metav1.Duration{Duration: time.Hour}
		create(ctx, asAlice, rq)
		Eventually(recurringCondition(ctx, rq, laxityv1alpha1.RecurringQueryReadyCondition)).WithTimeout(timeout).WithPolling(poll).Should(And(
			Not(BeNil()), HaveField("Status", metav1.ConditionFalse), HaveField("Reason", laxityv1alpha1.ScheduleStalledReason),
			HaveField("Message", ContainSubstring("ElasticSchedule rq-refused is Stalled with reason NotPermitted"))))
		Consistently(recurringWindows(ctx, rq)).WithTimeout(3 * time.Second).WithPolling(poll).Should(BeEmpty())
		Eventually(recurringEvents(ctx, rq, laxityv1alpha1.ScheduleStalledReason)).WithTimeout(timeout).WithPolling(poll).ShouldNot(BeEmpty())

		By("carol grants the pool: the schedule runs, and the windows come")
		grant(ctx, builder.TenantPolicy("rq-pool-for-team-a").Namespaces(teamA).Pool("karpenter.sh", "NodePool", "rq-pool").Obj())
		Eventually(scheduleStalled(ctx, es)).WithTimeout(timeout).WithPolling(poll).Should(BeNil())
		Eventually(recurringWindows(ctx, rq)).WithTimeout(2 * timeout).WithPolling(poll).ShouldNot(BeEmpty())
		// The windows are created in the pass whose one status write, at its
		// end, says so: a read between the two sees the windows first.
		Eventually(recurringCondition(ctx, rq, laxityv1alpha1.RecurringQueryReadyCondition)).WithTimeout(timeout).WithPolling(poll).Should(HaveField("Status", metav1.ConditionTrue))
	})

	It("refuses template metadata that no window could carry, naming the field", func(ctx SpecContext) {
		create(ctx, asAlice, builder.Schedule(teamA, "rq-labels").Obj())
		for _, tc := range []struct {
			field    string
			metadata laxityv1alpha1.TemplateMetadata
		}{
			{"spec.template.metadata.labels: every key", laxityv1alpha1.TemplateMetadata{Labels: map[string]laxityv1alpha1.LabelValue{"bad key!": "x"}}},
			{"spec.template.metadata.labels: every value", laxityv1alpha1.TemplateMetadata{Labels: map[string]laxityv1alpha1.LabelValue{"ok": "not a value!"}}},
			{"spec.template.metadata.annotations: every key", laxityv1alpha1.TemplateMetadata{Annotations: map[string]string{"-bad/": "x"}}},
		} {
			rq := recurringEveryMinute(teamA, "bad-labels", "rq-labels")
			rq.Spec.Template.Metadata = tc.metadata
			err := asAlice.Create(ctx, rq)
			if err == nil {
				DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(asCarol.Delete(ctx, rq))).To(Succeed()) })
			}
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", tc.field, err)
			Expect(err.Error()).To(ContainSubstring(tc.field))
		}
	})

	It("does not hang on a zone that skipped a day, and a tenant cannot plant the instant it would hang on", func(ctx SpecContext) {
		create(ctx, asAlice, builder.Schedule(teamA, "rq-apia").Obj())
		rq := builder.Recurring(teamA, "apia").Schedule("rq-apia").Cron("0 0 * * FRI", 5*time.Minute).Obj()
		rq.Spec.TimeZone = "Pacific/Apia"
		rq.Spec.StartingDeadline = &metav1.Duration{Duration: time.Minute}
		rq.Spec.Suspend = true // so that no window exists to start from
		create(ctx, asAlice, rq)
		Eventually(recurringCondition(ctx, rq, laxityv1alpha1.RecurringQueryReadyCondition)).WithTimeout(timeout).WithPolling(poll).
			Should(And(Not(BeNil()), HaveField("Reason", laxityv1alpha1.SuspendedReason)))

		By("alice may not write the status")
		var mine laxityv1alpha1.RecurringQuery
		Expect(asAlice.Get(ctx, client.ObjectKeyFromObject(rq), &mine)).To(Succeed())
		before := mine.DeepCopy()
		mine.Status.LastScheduleTime = &metav1.Time{Time: time.Date(2011, 12, 29, 0, 0, 0, 0, time.UTC)}
		Expect(apierrors.IsForbidden(asAlice.Status().Patch(ctx, &mine, client.MergeFrom(before)))).To(BeTrue())

		By("restored from a backup of 2011 and resumed: the starts since are walked past the day Apia skipped")
		recurringSetLastSchedule(ctx, rq, time.Date(2011, 12, 29, 0, 0, 0, 0, time.UTC))
		recurringSpec(ctx, rq, func(rq *laxityv1alpha1.RecurringQuery) { rq.Spec.Suspend = false })
		Eventually(func(g Gomega) time.Time {
			var current laxityv1alpha1.RecurringQuery
			g.Expect(asCarol.Get(ctx, client.ObjectKeyFromObject(rq), &current)).To(Succeed())
			g.Expect(current.Status.LastScheduleTime).NotTo(BeNil())
			return current.Status.LastScheduleTime.Time
		}).WithTimeout(timeout).WithPolling(poll).Should(BeTemporally(">", time.Now().Add(-8*24*time.Hour)))
		// Friday 2011-12-30 never happened in Apia: the first missed
		// start is Friday 2012-01-06 00:00 +14:00.
		Eventually(recurringEvents(ctx, rq, "WindowSkipped")).WithTimeout(timeout).WithPolling(poll).Should(ContainElement(ContainSubstring("from 2012-01-05T10:00:00Z")))
		Eventually(recurringWindows(ctx, rq)).WithTimeout(timeout).WithPolling(poll).ShouldNot(BeEmpty())
	})

	It("keeps a recurring query's windows in its own namespace, on its own namespace's schedule, and off others' objects", func(ctx SpecContext) {
		By("the template names a schedule by name only: a strict create naming a namespace is refused")
		create(ctx, asBob, builder.Schedule(teamB, "bobs-pool").Obj())
		rq := recurringEveryMinute(teamA, "elsewhere", "bobs-pool")
		raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rq)
		Expect(err).NotTo(HaveOccurred())
		u := &unstructured.Unstructured{Object: raw}
		u.SetGroupVersionKind(laxityv1alpha1.GroupVersion.WithKind("RecurringQuery"))
		Expect(unstructured.SetNestedField(u.Object, teamB, "spec", "template", "scheduleNamespace")).To(Succeed())
		Expect(asAlice.Create(ctx, u, client.FieldValidation("Strict"))).To(MatchError(ContainSubstring(`unknown field "spec.template.scheduleNamespace"`)))

		By("so bob's schedule's name is looked up in team-a, where there is none")
		create(ctx, asAlice, rq)
		Eventually(recurringCondition(ctx, rq, laxityv1alpha1.RecurringQueryStalledCondition)).WithTimeout(timeout).WithPolling(poll).Should(
			refusedFor(laxityv1alpha1.ScheduleNotFoundReason, `spec.template.scheduleName: ElasticSchedule "bobs-pool" not found in namespace team-a`))
		var inB laxityv1alpha1.IntermittentQueryList
		Expect(asCarol.List(ctx, &inB, client.InNamespace(teamB))).To(Succeed())
		for _, q := range inB.Items {
			Expect(q.Labels).NotTo(HaveKeyWithValue("laxity.dev/recurring-query", "elsewhere"))
		}

		By("alice and bob both have a recurring query named orders: each one's windows are its own")
		create(ctx, asAlice, builder.Schedule(teamA, "orders-pool").Obj())
		mineA := recurringEveryMinute(teamA, "orders", "orders-pool")
		theirs := recurringEveryMinute(teamB, "orders", "bobs-pool")
		create(ctx, asAlice, mineA)
		create(ctx, asBob, theirs)
		Eventually(recurringWindows(ctx, mineA)).WithTimeout(timeout).WithPolling(poll).ShouldNot(BeEmpty())
		Eventually(recurringWindows(ctx, theirs)).WithTimeout(timeout).WithPolling(poll).ShouldNot(BeEmpty())

		By("a query alice labels as a window of her recurring query is neither adopted nor deleted")
		imposter := query(teamA, "orders-imposter", "orders-pool", time.Hour).Obj()
		imposter.Labels = map[string]string{"laxity.dev/recurring-query": "orders"}
		create(ctx, asAlice, imposter)
		Consistently(func(g Gomega) []metav1.OwnerReference {
			var q laxityv1alpha1.IntermittentQuery
			g.Expect(asCarol.Get(ctx, client.ObjectKeyFromObject(imposter), &q)).To(Succeed())
			return q.OwnerReferences
		}).WithTimeout(2 * time.Second).WithPolling(poll).Should(BeEmpty())
	})

	It("reports on the recurring query a template its windows are refused for, and stops making more", func(ctx SpecContext) {
		create(ctx, asAlice, builder.Schedule(teamA, "rq-accounts").Obj())
		rq := recurringEveryMinute(teamA, "as-admin", "rq-accounts")
		rq.Spec.Template.SparkApplication = &runtime.RawExtension{Raw: []byte(templateWith(`,"serviceAccount":"admin"`, ""))}
		create(ctx, asAlice, rq)
		Eventually(recurringCondition(ctx, rq, laxityv1alpha1.RecurringQueryStalledCondition)).WithTimeout(timeout).WithPolling(poll).Should(
			refusedFor(laxityv1alpha1.WindowStalledReason, "NotPermitted",
				"spec.sparkApplication.driver.serviceAccount: running as service account admin is not permitted"))
		Eventually(recurringEvents(ctx, rq, laxityv1alpha1.WindowStalledReason)).WithTimeout(timeout).WithPolling(poll).ShouldNot(BeEmpty())
		Consistently(recurringWindows(ctx, rq)).WithTimeout(3 * time.Second).WithPolling(poll).Should(WithTransform(func(names []string) int { return len(names) }, BeNumerically("<=", 2)))
		ready := recurringCondition(ctx, rq, laxityv1alpha1.RecurringQueryReadyCondition)(Default)
		Expect(ready).NotTo(BeNil())
		Expect(meta.IsStatusConditionTrue([]metav1.Condition{*ready}, laxityv1alpha1.RecurringQueryReadyCondition)).To(BeFalse())
	})
})
