package tenancy_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/pool"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/internal/tenancy"
	"github.com/laxity-dev/laxity/test/builder"
)

const (
	timeout = 30 * time.Second
	poll    = 200 * time.Millisecond
)

// query is an IntermittentQuery of schedule whose window has just closed,
// so that its batches are ready at once, due due from now.
func query(ns, name, schedule string, due time.Duration) *builder.QueryBuilder {
	now := time.Now()
	return builder.Query(ns, name).Schedule(schedule).Window(now.Add(-20*time.Minute), 19*time.Minute).Deadline(now.Add(due))
}

// templateWith is builder.DefaultTemplate with the driver's fields set.
func templateWith(driver, rest string) string {
	return fmt.Sprintf(`{"type":"Scala","mode":"cluster","image":"spark:3.5.3","sparkVersion":"3.5.3","mainClass":"dev.laxity.Batch","mainApplicationFile":"local:///opt/job.jar","driver":{"cores":1,"memory":"1g"%s},"executor":{"cores":2,"memory":"4g"}%s}`, driver, rest)
}

// condition is the condition of type t that get reads, nil when it is not
// set.
func condition(ctx context.Context, obj client.Object, conditions func() []metav1.Condition, t string) func(Gomega) *metav1.Condition {
	return func(g Gomega) *metav1.Condition {
		g.Expect(asCarol.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		return meta.FindStatusCondition(conditions(), t)
	}
}

func queryStalled(ctx context.Context, q *laxityv1alpha1.IntermittentQuery) func(Gomega) *metav1.Condition {
	return condition(ctx, q, func() []metav1.Condition { return q.Status.Conditions }, laxityv1alpha1.IntermittentQueryStalledCondition)
}

func scheduleStalled(ctx context.Context, es *laxityv1alpha1.ElasticSchedule) func(Gomega) *metav1.Condition {
	return condition(ctx, es, func() []metav1.Condition { return es.Status.Conditions }, laxityv1alpha1.ElasticScheduleStalledCondition)
}

// refusedFor matches a Stalled condition with reason and a message holding
// every part.
func refusedFor(reason string, parts ...string) OmegaMatcher {
	matchers := []OmegaMatcher{HaveField("Status", metav1.ConditionTrue), HaveField("Reason", reason)}
	for _, p := range parts {
		matchers = append(matchers, HaveField("Message", ContainSubstring(p)))
	}
	return And(Not(BeNil()), And(matchers...))
}

// stepsOf lists the SparkApplications laxity made of the query, which is
// in team A's namespace.
func stepsOf(ctx context.Context, query string) func(Gomega) []string {
	return func(g Gomega) []string {
		list := sparkapp.NewList()
		g.Expect(asCarol.List(ctx, list, client.InNamespace(teamA), client.MatchingLabels{sparkapp.LabelQuery: query})).To(Succeed())
		var names []string
		for _, app := range list.Items {
			names = append(names, app.GetName())
		}
		return names
	}
}

// readyNodes makes n Ready nodes of namespace ns's pools (the builder's
// nodeSelector, laxity.dev/pool=<ns>).
func readyNodes(ctx context.Context, ns string, n int) {
	for i := range n {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-node-%d", ns, i), Labels: map[string]string{"laxity.dev/pool": ns}}}
		Expect(asCarol.Create(ctx, node)).To(Succeed())
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		Expect(asCarol.Status().Update(ctx, node)).To(Succeed())
	}
}

// teamPoolsReady makes 8 Ready nodes of each tenant's pools, unless an
// earlier spec made them: the suite's specs run in random order, and most
// need them.
func teamPoolsReady(ctx context.Context) {
	for _, ns := range []string{teamA, teamB} {
		var nodes corev1.NodeList
		Expect(asCarol.List(ctx, &nodes, client.MatchingLabels{"laxity.dev/pool": ns})).To(Succeed())
		if len(nodes.Items) == 0 {
			readyNodes(ctx, ns, 8)
		}
	}
}

// grant has carol create the policy until the spec ends.
func grant(ctx context.Context, p *laxityv1alpha1.TenantPolicy) {
	Expect(asCarol.Create(ctx, p)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(asCarol.Delete(ctx, p))).To(Succeed()) })
}

// create has c create obj, deleted again when the spec ends.
func create(ctx context.Context, c client.Client, obj client.Object) {
	Expect(c.Create(ctx, obj)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(asCarol.Delete(ctx, obj))).To(Succeed()) })
}

// nodePool is a Karpenter NodePool with replicas, annotated when
// allowed is not empty.
func nodePool(name string, replicas int64, allowed string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"replicas": replicas,
			"template": map[string]any{"spec": map[string]any{
				"nodeClassRef": map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
				"requirements": []any{},
			}},
		},
	}}
	if allowed != "" {
		u.SetAnnotations(map[string]string{tenancy.AllowedNamespacesAnnotation: allowed})
	}
	return u
}

func replicas(ctx context.Context, name string) func(Gomega) int64 {
	return func(g Gomega) int64 {
		u := nodePool(name, 0, "")
		g.Expect(asCarol.Get(ctx, client.ObjectKey{Name: name}, u)).To(Succeed())
		n, _, err := unstructured.NestedInt64(u.Object, "spec", "replicas")
		g.Expect(err).NotTo(HaveOccurred())
		return n
	}
}

var _ = Describe("the tenancy boundary", func() {
	BeforeEach(teamPoolsReady)

	It("reads a query's Secret only in the query's own namespace", func(ctx SpecContext) {
		secret := func(ns string) *corev1.Secret {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "store-creds"},
				StringData: map[string]string{"accessKeyID": "AKIDEXAMPLE", "secretAccessKey": "example"}}
		}
		By("bob keeps credentials in team-b, which alice may not read")
		create(ctx, asBob, secret(teamB))
		err := asAlice.Get(ctx, client.ObjectKey{Namespace: teamB, Name: "store-creds"}, &corev1.Secret{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "alice read bob's Secret: %v", err)

		// A window still open: the query is planned from its declared rate
		// while its input is read.
		q := builder.Query(teamA, "reads-store").Schedule("secrets").Window(time.Now().Add(-time.Minute), 20*time.Minute).Slack(time.Hour).Obj()
		q.Spec.Input.ObjectStore = &laxityv1alpha1.ObjectStoreInput{
			Endpoint: "http://127.0.0.1:1", Region: "us-east-1", Bucket: "events", PathStyle: true,
			SecretRef: &laxityv1alpha1.SecretReference{Name: "store-creds"}, TuplesPerObject: ptr.To[int64](100),
		}

		By("the API has no field for another namespace: a strict create naming one is refused, naming the field")
		raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(q)
		Expect(err).NotTo(HaveOccurred())
		u := &unstructured.Unstructured{Object: raw}
		u.SetGroupVersionKind(laxityv1alpha1.GroupVersion.WithKind("IntermittentQuery"))
		Expect(unstructured.SetNestedField(u.Object, teamB, "spec", "input", "objectStore", "secretRef", "namespace")).To(Succeed())
		Expect(asAlice.Create(ctx, u, client.FieldValidation("Strict"))).To(MatchError(ContainSubstring(`unknown field "spec.input.objectStore.secretRef.namespace"`)))

		By("so laxity looks for the Secret in team-a, and finds none there")
		create(ctx, asAlice, builder.Schedule(teamA, "secrets").Obj())
		create(ctx, asAlice, q)
		ready := condition(ctx, q, func() []metav1.Condition { return q.Status.Conditions }, laxityv1alpha1.IntermittentQueryReadyCondition)
		Eventually(ready).WithTimeout(timeout).WithPolling(poll).Should(And(
			HaveField("Reason", laxityv1alpha1.InputUnavailableReason),
			HaveField("Message", ContainSubstring(`spec.input.objectStore.secretRef: Secret store-creds: secrets "store-creds" not found`))))

		By("alice's own Secret in team-a is the one laxity reads: the store is reached (and refuses the connection)")
		create(ctx, asAlice, secret(teamA))
		Eventually(ready).WithTimeout(timeout).WithPolling(poll).Should(And(
			HaveField("Reason", laxityv1alpha1.InputUnavailableReason),
			HaveField("Message", Not(ContainSubstring("not found"))),
			HaveField("Message", ContainSubstring("127.0.0.1:1"))))
	})

	It("reads a bucket with laxity's own credentials only when an administrator grants it", func(ctx SpecContext) {
		create(ctx, asAlice, builder.Schedule(teamA, "buckets").Obj())
		q := query(teamA, "reads-bucket", "buckets", time.Hour).Obj()
		q.Spec.Input.ObjectStore = &laxityv1alpha1.ObjectStoreInput{
			Endpoint: "http://127.0.0.1:1", Region: "us-east-1", Bucket: "payroll", PathStyle: true, TuplesPerObject: ptr.To[int64](100),
		}
		create(ctx, asAlice, q)
		Eventually(queryStalled(ctx, q)).WithTimeout(timeout).WithPolling(poll).Should(refusedFor(laxityv1alpha1.NotPermittedReason,
			"spec.input.objectStore.bucket: reading bucket payroll with laxity's own credentials is not permitted", "spec.buckets"))

		grant(ctx, builder.TenantPolicy("payroll-readers").Namespaces(teamA).Buckets("payroll").Obj())
		Eventually(queryStalled(ctx, q)).WithTimeout(timeout).WithPolling(poll).Should(BeNil())
	})

	It("resizes a shared pool only for the namespaces it allows, and leaves it alone otherwise", func(ctx SpecContext) {
		create(ctx, asCarol, nodePool("shared-a", 5, ""))
		By("alice may not change the pool herself, not even its annotation")
		Expect(apierrors.IsForbidden(asAlice.Get(ctx, client.ObjectKey{Name: "shared-a"}, nodePool("shared-a", 0, "")))).To(BeTrue())

		es := builder.Schedule(teamA, "shared").Backend(builder.ScaleBackend("karpenter.sh/v1", "NodePool", "shared-a")).Obj()
		Expect(asAlice.Create(ctx, es)).To(Succeed())
		create(ctx, asAlice, query(teamA, "on-shared", "shared", time.Hour).Obj())
		Eventually(scheduleStalled(ctx, es)).WithTimeout(timeout).WithPolling(poll).Should(refusedFor(laxityv1alpha1.NotPermittedReason,
			"spec.nodePool.backend.scale: resizing NodePool.karpenter.sh shared-a is not permitted",
			"the pool has no laxity.dev/allowed-namespaces annotation", "no TenantPolicy selecting namespace team-a grants it (spec.pools)"))
		Consistently(replicas(ctx, "shared-a")).WithTimeout(3 * time.Second).WithPolling(poll).Should(BeEquivalentTo(5))

		By("deleting the schedule leaves the pool as it is")
		Expect(asAlice.Delete(ctx, es)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(asCarol.Get(ctx, client.ObjectKeyFromObject(es), &laxityv1alpha1.ElasticSchedule{}))
		}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue())
		Expect(replicas(ctx, "shared-a")(Default)).To(BeEquivalentTo(5))

		By("carol's TenantPolicy grants the pool to team-a")
		grant(ctx, builder.TenantPolicy("shared-a-for-team-a").Namespaces(teamA).Pool("karpenter.sh", "NodePool", "shared-a").Obj())
		granted := builder.Schedule(teamA, "shared-granted").Backend(builder.ScaleBackend("karpenter.sh/v1", "NodePool", "shared-a")).Obj()
		create(ctx, asAlice, granted)
		create(ctx, asAlice, query(teamA, "on-granted", "shared-granted", time.Hour).Obj())
		Eventually(replicas(ctx, "shared-a")).WithTimeout(timeout).WithPolling(poll).ShouldNot(BeEquivalentTo(5))
		Expect(scheduleStalled(ctx, granted)(Default)).To(BeNil())
	})

	It("holds a pool with a CapacityBuffer on the nodes a grant names", func(ctx SpecContext) {
		grant(ctx, poolGrantsBufferPolicy("buffered", teamA, map[string]string{"laxity.dev/pool": teamA}, 8))
		es := builder.Schedule(teamA, "buffered").Backend(builder.CapacityBufferBackend(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7")})).Obj()
		create(ctx, asAlice, es)
		create(ctx, asAlice, query(teamA, "on-buffer", "buffered", time.Hour).Obj())
		key := client.ObjectKey{Namespace: teamA, Name: pool.CapacityBufferName(es.Name)}
		By("laxity, with its ClusterRole only, writing the CapacityBuffer and reading it back through its cache")
		// The step launched at once may take every node asked for from the
		// buffer (its replicas 0): the nodes asked for are the annotation.
		Eventually(func(g Gomega) string {
			cb := &unstructured.Unstructured{}
			cb.SetGroupVersionKind(pool.CapacityBufferKind)
			g.Expect(asCarol.Get(ctx, key, cb)).To(Succeed())
			return cb.GetAnnotations()[pool.AnnotationNodesRequested]
		}).WithTimeout(timeout).WithPolling(poll).Should(And(Not(BeEmpty()), Not(Equal("0"))))
		Expect(asCarol.Get(ctx, key, &corev1.PodTemplate{})).To(Succeed())
		Expect(scheduleStalled(ctx, es)(Default)).To(BeNil())
	})

	It("lets a pool's own annotation allow namespaces", func(ctx SpecContext) {
		create(ctx, asCarol, nodePool("for-others", 5, "team-c"))
		create(ctx, asCarol, nodePool("for-team-b", 5, "team-a, team-b"))
		refused := builder.Schedule(teamB, "others").Backend(builder.ScaleBackend("karpenter.sh/v1", "NodePool", "for-others")).Obj()
		allowed := builder.Schedule(teamB, "annotated").Backend(builder.ScaleBackend("karpenter.sh/v1", "NodePool", "for-team-b")).Obj()
		for _, es := range []*laxityv1alpha1.ElasticSchedule{refused, allowed} {
			create(ctx, asBob, es)
			create(ctx, asBob, query(teamB, es.Name+"-q", es.Name, time.Hour).Obj())
		}
		Eventually(scheduleStalled(ctx, refused)).WithTimeout(timeout).WithPolling(poll).Should(refusedFor(laxityv1alpha1.NotPermittedReason,
			`its laxity.dev/allowed-namespaces annotation ("team-c") does not list namespace team-b`))
		Eventually(replicas(ctx, "for-team-b")).WithTimeout(timeout).WithPolling(poll).ShouldNot(BeEquivalentTo(5))
		Expect(replicas(ctx, "for-others")(Default)).To(BeEquivalentTo(5))
	})

	It("runs SparkApplications only as service accounts the namespace may use", func(ctx SpecContext) {
		create(ctx, asAlice, builder.Schedule(teamA, "accounts").Obj())
		q := query(teamA, "as-admin", "accounts", time.Hour).Template(templateWith(`,"serviceAccount":"admin"`, "")).Obj()
		create(ctx, asAlice, q)
		Eventually(queryStalled(ctx, q)).WithTimeout(timeout).WithPolling(poll).Should(refusedFor(laxityv1alpha1.NotPermittedReason,
			"spec.sparkApplication.driver.serviceAccount: running as service account admin is not permitted",
			"manager's allowed service accounts (spark)", "spec.serviceAccounts"))
		Consistently(stepsOf(ctx, "as-admin")).WithTimeout(2 * time.Second).WithPolling(poll).Should(BeEmpty())

		grant(ctx, builder.TenantPolicy("admin-account").Namespaces(teamA).ServiceAccounts("admin").Obj())
		Eventually(stepsOf(ctx, "as-admin")).WithTimeout(timeout).WithPolling(poll).ShouldNot(BeEmpty())
		Expect(queryStalled(ctx, q)(Default)).To(BeNil())
	})

	It("refuses host paths and privileged pods unless granted", func(ctx SpecContext) {
		create(ctx, asBob, builder.Schedule(teamB, "host").Obj())
		q := query(teamB, "mounts-host", "host", time.Hour).
			Template(templateWith(`,"securityContext":{"privileged":true}`, `,"volumes":[{"name":"root","hostPath":{"path":"/"}}]`)).Obj()
		create(ctx, asBob, q)
		Eventually(queryStalled(ctx, q)).WithTimeout(timeout).WithPolling(poll).Should(refusedFor(laxityv1alpha1.NotPermittedReason,
			"spec.sparkApplication.driver.securityContext.privileged: a privileged container is not permitted",
			"spec.sparkApplication.volumes[0].hostPath: a hostPath volume is not permitted"))

		grant(ctx, builder.TenantPolicy("host-access").Namespaces(teamB).AllowHostPath().Obj())
		Eventually(queryStalled(ctx, q)).WithTimeout(timeout).WithPolling(poll).Should(And(
			refusedFor(laxityv1alpha1.NotPermittedReason, "privileged"), HaveField("Message", Not(ContainSubstring("hostPath")))))
		grant(ctx, builder.TenantPolicy("privileged").Namespaces(teamB).AllowPrivileged().Obj())
		Eventually(queryStalled(ctx, q)).WithTimeout(timeout).WithPolling(poll).Should(BeNil())
	})

	It("stalls a query whose template the SparkApplication CRD rejects, and runs the schedule's others", func(ctx SpecContext) {
		create(ctx, asAlice, builder.Schedule(teamA, "templates").Obj())
		// The bad query has the least slack, so it is the first one tried.
		// coreLimit is a string in the CRD, and laxity's rendering does not
		// read it: the API server is the one to reject it.
		bad := query(teamA, "bad-cores", "templates", 40*time.Minute).Template(`{"type":"Scala","mode":"cluster","sparkVersion":"3.5.3","mainApplicationFile":"local:///opt/job.jar","driver":{"cores":1,"coreLimit":1},"executor":{"cores":1}}`).Obj()
		good := query(teamA, "good", "templates", 2*time.Hour).Obj()
		create(ctx, asAlice, bad)
		create(ctx, asAlice, good)
		Eventually(queryStalled(ctx, bad)).WithTimeout(timeout).WithPolling(poll).Should(refusedFor(laxityv1alpha1.InvalidTemplateReason,
			"spec.sparkApplication", "spec.driver.coreLimit"))
		Eventually(stepsOf(ctx, "good")).WithTimeout(timeout).WithPolling(poll).ShouldNot(BeEmpty())
		Expect(stepsOf(ctx, "bad-cores")(Default)).To(BeEmpty())
	})
})
