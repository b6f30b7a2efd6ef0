package tenancy_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/test/builder"
)

// authorityTemplate is a SparkApplication template with the driver's and
// the executors' fields and the spec's other fields (each list starting
// with a comma).
func authorityTemplate(driver, executor, rest string) string {
	return fmt.Sprintf(`{"type":"Scala","mode":"cluster","image":"spark:3.5.3","sparkVersion":"3.5.3","mainClass":"dev.laxity.Batch","mainApplicationFile":"local:///opt/job.jar","driver":{"cores":1,"memory":"1g"%s},"executor":{"cores":2,"memory":"4g"%s}%s}`, driver, executor, rest)
}

// authorityStepsIn lists the SparkApplications laxity made of query in
// namespace ns.
func authorityStepsIn(ctx context.Context, ns, query string) func(Gomega) []unstructured.Unstructured {
	return func(g Gomega) []unstructured.Unstructured {
		list := sparkapp.NewList()
		g.Expect(asCarol.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{sparkapp.LabelQuery: query})).To(Succeed())
		return list.Items
	}
}

// authorityRetemplate has c replace q's template with template.
func authorityRetemplate(ctx context.Context, c client.Client, q *laxityv1alpha1.IntermittentQuery, template string) {
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(q), q)).To(Succeed())
		q.Spec.SparkApplication = &runtime.RawExtension{Raw: []byte(template)}
		g.Expect(c.Update(ctx, q)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// authorityEvent is the message of the Warning event NotPermitted in ns
// that mentions every part, "" while there is none.
func authorityEvent(ctx context.Context, ns string, parts ...string) func(Gomega) string {
	return func(g Gomega) string {
		var events corev1.EventList
		g.Expect(asCarol.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
	next:
		for _, e := range events.Items {
			if e.Reason != laxityv1alpha1.NotPermittedReason || e.Type != corev1.EventTypeWarning {
				continue
			}
			for _, p := range parts {
				if !strings.Contains(e.Message, p) {
					continue next
				}
			}
			return e.Message
		}
		return ""
	}
}

var _ = Describe("what a SparkApplication template may ask for", func() {
	BeforeEach(teamPoolsReady)

	It("refuses a template that would send the driver to another namespace, API server, priority, queue and security, naming every field, and runs the allowed form", func(ctx SpecContext) {
		By("bob keeps database credentials in team-b")
		create(ctx, asBob, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: teamB, Name: "bob-db-creds"}, StringData: map[string]string{"password": "hunter2"}})

		By("alice asks laxity, whose spark-operator acts cluster-wide, for a driver in team-b with bob's Secret")
		create(ctx, asAlice, builder.Schedule(teamA, "deputy").Obj())
		hostile := authorityTemplate(
			`,"priorityClassName":"system-cluster-critical","podSecurityContext":{"runAsUser":0,"seccompProfile":{"type":"Unconfined"}}`,
			`,"priorityClassName":"system-node-critical"`,
			`,"sparkConf":{"spark.kubernetes.namespace":"team-b","spark.kubernetes.driver.secrets.bob-db-creds":"/mnt/bob","spark.kubernetes.driver.master":"https://evil.example:6443"}`+
				`,"batchSchedulerOptions":{"queue":"team-b-queue"}`+
				`,"volumes":[{"name":"share","nfs":{"server":"nfs.team-b.example","path":"/"}}]`)
		q := query(teamA, "deputy", "deputy", time.Hour).Template(hostile).Obj()
		create(ctx, asAlice, q)

		By("the query is Stalled, NotPermitted, with every field named")
		Eventually(queryStalled(ctx, q)).WithTimeout(timeout).WithPolling(poll).Should(refusedFor(laxityv1alpha1.NotPermittedReason,
			`spec.sparkApplication.sparkConf["spark.kubernetes.namespace"]: the namespace the driver is created in is not permitted`,
			`spec.sparkApplication.sparkConf["spark.kubernetes.driver.master"]: the API server the driver talks to is not permitted`,
			"no grant allows it",
			"spec.sparkApplication.driver.priorityClassName: Spark pods at PriorityClass system-cluster-critical is not permitted",
			"spec.sparkApplication.executor.priorityClassName: Spark pods at PriorityClass system-node-critical is not permitted",
			"spec.priorityClasses",
			"spec.sparkApplication.batchSchedulerOptions.queue: batch-scheduler queue team-b-queue is not permitted", "spec.schedulerQueues",
			"spec.sparkApplication.driver: runAsUser=0", "spec.sparkApplication.driver: seccompProfile",
			`restricted volume types (volume "share"`, `"restricted" Pod Security level`, "spec.podSecurityLevel"))
		Eventually(authorityEvent(ctx, teamA, "IntermittentQuery deputy is not run", `spec.sparkApplication.sparkConf["spark.kubernetes.namespace"]`, "spec.sparkApplication.driver.priorityClassName")).WithTimeout(timeout).WithPolling(poll).ShouldNot(BeEmpty())

		By("no SparkApplication is made, in either namespace")
		Consistently(func(g Gomega) int {
			return len(authorityStepsIn(ctx, teamA, "deputy")(g)) + len(authorityStepsIn(ctx, teamB, "deputy")(g))
		}).WithTimeout(3 * time.Second).WithPolling(poll).Should(BeZero())

		By("the same job without what it may not ask for runs in team-a, its Secret read in team-a, its pods restricted")
		authorityRetemplate(ctx, asAlice, q, authorityTemplate("", "",
			`,"sparkConf":{"spark.kubernetes.driver.secrets.alice-db-creds":"/mnt/db"},"volumes":[{"name":"scratch","emptyDir":{}}]`))
		Eventually(authorityStepsIn(ctx, teamA, "deputy")).WithTimeout(timeout).WithPolling(poll).ShouldNot(BeEmpty())
		Expect(queryStalled(ctx, q)(Default)).To(BeNil())
		app := authorityStepsIn(ctx, teamA, "deputy")(Default)[0]
		conf, _, err := unstructured.NestedStringMap(app.Object, "spec", "sparkConf")
		Expect(err).NotTo(HaveOccurred())
		Expect(conf).NotTo(HaveKey("spark.kubernetes.namespace"))
		Expect(conf).To(HaveKeyWithValue("spark.kubernetes.driver.secrets.alice-db-creds", "/mnt/db"))
		for _, role := range []string{"driver", "executor"} {
			nonRoot, _, _ := unstructured.NestedBool(app.Object, "spec", role, "podSecurityContext", "runAsNonRoot")
			seccomp, _, _ := unstructured.NestedString(app.Object, "spec", role, "podSecurityContext", "seccompProfile", "type")
			escalation, found, _ := unstructured.NestedBool(app.Object, "spec", role, "securityContext", "allowPrivilegeEscalation")
			Expect([]any{nonRoot, seccomp, escalation, found}).To(Equal([]any{true, "RuntimeDefault", false, true}), "the %s's pod", role)
		}
		Expect(authorityStepsIn(ctx, teamB, "deputy")(Default)).To(BeEmpty())
	})

	It("runs a template at a granted priority class, scheduler, queue and Pod Security level", func(ctx SpecContext) {
		create(ctx, asBob, builder.Schedule(teamB, "granted").Obj())
		asking := authorityTemplate(`,"priorityClassName":"team-b-high","podSecurityContext":{"runAsUser":0}`, `,"priorityClassName":"team-b-high"`,
			`,"batchScheduler":"volcano","batchSchedulerOptions":{"queue":"team-b-queue"},"volumes":[{"name":"share","nfs":{"server":"nfs.team-b.example","path":"/"}}]`)
		q := query(teamB, "granted", "granted", time.Hour).Template(asking).Obj()
		create(ctx, asBob, q)
		Eventually(queryStalled(ctx, q)).WithTimeout(timeout).WithPolling(poll).Should(refusedFor(laxityv1alpha1.NotPermittedReason,
			"spec.sparkApplication.driver.priorityClassName", "spec.sparkApplication.executor.priorityClassName",
			"spec.sparkApplication.batchScheduler: scheduling with volcano is not permitted", "spec.schedulers",
			"spec.sparkApplication.batchSchedulerOptions.queue", "runAsUser=0", "restricted volume types"))

		By("carol grants the class, the scheduler and the queue: the pods' security is still refused")
		p := builder.TenantPolicy("team-b-batch").Namespaces(teamB).PriorityClasses("team-b-high").Obj()
		p.Spec.Schedulers = []string{"volcano"}
		p.Spec.SchedulerQueues = []string{"team-b-queue"}
		grant(ctx, p)
		Eventually(queryStalled(ctx, q)).WithTimeout(timeout).WithPolling(poll).Should(And(
			refusedFor(laxityv1alpha1.NotPermittedReason, "runAsUser=0", "restricted volume types", `"restricted" Pod Security level`),
			HaveField("Message", Not(ContainSubstring("priorityClassName"))), HaveField("Message", Not(ContainSubstring("queue")))))
		Consistently(authorityStepsIn(ctx, teamB, "granted")).WithTimeout(2 * time.Second).WithPolling(poll).Should(BeEmpty())

		By("carol raises team-b to the baseline level, which allows root and NFS: the query runs, as written")
		level := builder.TenantPolicy("team-b-baseline").Namespaces(teamB).Obj()
		level.Spec.PodSecurityLevel = "baseline"
		grant(ctx, level)
		Eventually(authorityStepsIn(ctx, teamB, "granted")).WithTimeout(timeout).WithPolling(poll).ShouldNot(BeEmpty())
		Expect(queryStalled(ctx, q)(Default)).To(BeNil())
		app := authorityStepsIn(ctx, teamB, "granted")(Default)[0]
		queue, _, _ := unstructured.NestedString(app.Object, "spec", "batchSchedulerOptions", "queue")
		user, _, _ := unstructured.NestedInt64(app.Object, "spec", "driver", "podSecurityContext", "runAsUser")
		_, nonRoot, _ := unstructured.NestedBool(app.Object, "spec", "driver", "podSecurityContext", "runAsNonRoot")
		Expect([]any{queue, user, nonRoot}).To(Equal([]any{"team-b-queue", int64(0), false}))
	})
})
