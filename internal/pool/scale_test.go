package pool

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
)

// machineDeployments are valid Cluster API MachineDeployments at each
// version the CRD serves, with one replica and fields a /scale write must
// leave alone (a label, an annotation, the template's Kubernetes version).
// %[1]s is the name.
var machineDeployments = map[string]string{
	"v1beta2": `
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata:
  name: %[1]s
  labels: {team: analytics}
  annotations: {example.com/note: keep me}
spec:
  clusterName: spark
  replicas: 1
  selector:
    matchLabels: {pool: %[1]s}
  template:
    metadata:
      labels: {pool: %[1]s}
    spec:
      clusterName: spark
      version: v1.33.1
      bootstrap: {dataSecretName: bootstrap}
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerMachineTemplate, name: workers}
`,
	"v1beta1": `
apiVersion: cluster.x-k8s.io/v1beta1
kind: MachineDeployment
metadata:
  name: %[1]s
  labels: {team: analytics}
  annotations: {example.com/note: keep me}
spec:
  clusterName: spark
  replicas: 1
  selector:
    matchLabels: {pool: %[1]s}
  template:
    metadata:
      labels: {pool: %[1]s}
    spec:
      clusterName: spark
      version: v1.33.1
      bootstrap: {dataSecretName: bootstrap}
      infrastructureRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: DockerMachineTemplate, name: workers}
`,
}

// karpenterNodePool is a minimal static Karpenter NodePool (spec.replicas
// set; a NodePool cannot switch between static and dynamic later). %[1]s is
// the name.
const karpenterNodePool = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: %[1]s
  labels: {team: analytics}
  annotations: {example.com/note: keep me}
spec:
  replicas: 1
  limits: {nodes: "20"}
  template:
    metadata:
      labels: {laxity.dev/pool: %[1]s}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.2xlarge]}
`

// decode reads one manifest.
func decode(manifest string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte(manifest), &u.Object)).To(Succeed())
	return u
}

// scaleBackendFor is a backend reference to obj.
func scaleBackendFor(obj *unstructured.Unstructured) laxityv1alpha1.PoolBackend {
	return laxityv1alpha1.PoolBackend{Scale: &laxityv1alpha1.ScaleBackend{
		APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Name: obj.GetName(),
	}}
}

// get reads obj again at its apiVersion.
func get(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := &unstructured.Unstructured{}
	out.SetGroupVersionKind(obj.GroupVersionKind())
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), out)).To(Succeed())
	return out
}

// withoutReplicas is obj's spec without spec.replicas, and its labels and
// annotations: what a /scale write must not change.
func withoutReplicas(obj *unstructured.Unstructured) map[string]any {
	spec, _, err := unstructured.NestedMap(obj.Object, "spec")
	Expect(err).NotTo(HaveOccurred())
	delete(spec, "replicas")
	return map[string]any{"spec": spec, "labels": obj.GetLabels(), "annotations": obj.GetAnnotations()}
}

// replicas is obj's spec.replicas.
func replicas(obj *unstructured.Unstructured) int64 {
	n, found, err := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	Expect(err).NotTo(HaveOccurred())
	Expect(found).To(BeTrue(), "spec.replicas is not set")
	return n
}

var _ = Describe("scale backend", func() {
	var namespace string

	BeforeEach(func() {
		namespace = newNamespace()
		recorded.reset()
	})

	// requestThree runs the user story on a target object: Request(3) writes
	// spec.replicas through /scale at the referenced apiVersion and nothing
	// else, Requested reads it back, and a second Request(3) writes nothing.
	requestThree := func(target *unstructured.Unstructured, scalePath string) {
		Expect(k8sClient.Create(ctx, target)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, target))).To(Succeed()) })
		before := get(target)
		Expect(replicas(before)).To(BeEquivalentTo(1))

		es := createSchedule(namespace, scaleBackendFor(target), nil)
		b, err := New(opts, es)
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Requested(ctx)).To(BeEquivalentTo(1))

		recorded.reset()
		Expect(b.Request(ctx, 3)).To(Succeed())
		By("writing only the /scale subresource, once, at the referenced apiVersion")
		Expect(recorded.writes()).To(Equal([]string{http.MethodPut + " " + scalePath}))
		objectPath := strings.TrimSuffix(scalePath, "/scale")
		Expect(recorded.matching(func(_, path string) bool { return path == objectPath })).To(BeEmpty(),
			"the backend read or wrote the target object itself")

		after := get(target)
		Expect(replicas(after)).To(BeEquivalentTo(3))
		Expect(withoutReplicas(after)).To(Equal(withoutReplicas(before)), "a field other than spec.replicas changed")
		Expect(b.Requested(ctx)).To(BeEquivalentTo(3))

		By("recording laxity as the manager of the write, on the scale subresource")
		var managers []string
		for _, mf := range after.GetManagedFields() {
			if mf.Manager == FieldOwner {
				managers = append(managers, mf.Subresource)
			}
		}
		Expect(managers).To(Equal([]string{"scale"}))

		By("writing nothing when the pool already has the requested size")
		recorded.reset()
		Expect(b.Request(ctx, 3)).To(Succeed())
		Expect(recorded.writes()).To(BeEmpty())
		Expect(get(target).GetResourceVersion()).To(Equal(after.GetResourceVersion()))

		By("scaling down to zero")
		Expect(b.Request(ctx, 0)).To(Succeed())
		Expect(replicas(get(target))).To(BeEquivalentTo(0))
		Expect(b.Requested(ctx)).To(BeEquivalentTo(0))
	}

	DescribeTable("resizes a Cluster API MachineDeployment through /scale",
		func(version string) {
			md := decode(fmt.Sprintf(machineDeployments[version], "workers-"+rand.String(5)))
			md.SetNamespace(namespace)
			requestThree(md, fmt.Sprintf("/apis/cluster.x-k8s.io/%s/namespaces/%s/machinedeployments/%s/scale", version, namespace, md.GetName()))
		},
		Entry("at v1beta2, the stored version", "v1beta2"),
		// The apiVersion of the design document's sample. The group prefers v1beta2, so this
		// also shows the scale client does not drift to the preferred version.
		Entry("at v1beta1, the design document's sample apiVersion", "v1beta1"),
	)

	It("resizes a static Karpenter NodePool, which is cluster-scoped, through /scale", func() {
		np := decode(fmt.Sprintf(karpenterNodePool, "spark-"+rand.String(5)))
		requestThree(np, "/apis/karpenter.sh/v1/nodepools/"+np.GetName()+"/scale")
	})

	It("reports a missing target naming the field, as NotFound", func() {
		md := decode(fmt.Sprintf(machineDeployments["v1beta2"], "absent"))
		es := createSchedule(namespace, scaleBackendFor(md), nil)
		b, err := New(opts, es)
		Expect(err).NotTo(HaveOccurred(), "New checks the kind, not the object")

		err = b.Request(ctx, 3)
		Expect(err).To(MatchError(And(
			HavePrefix("spec.nodePool.backend.scale: "),
			ContainSubstring("MachineDeployment "+namespace+"/absent"),
			ContainSubstring("does not exist"),
		)))
		Expect(apierrors.IsNotFound(err)).To(BeTrue())
		Expect(errors.Is(err, ErrInvalidBackend)).To(BeFalse(), "creating the target fixes it without a spec change")

		_, err = b.Requested(ctx)
		Expect(err).To(MatchError(HavePrefix("spec.nodePool.backend.scale: ")))
		Expect(apierrors.IsNotFound(err)).To(BeTrue())
		Expect(recorded.writes()).To(BeEmpty())
	})

	DescribeTable("rejects a reference it cannot scale, naming the field",
		func(apiVersion, kind, message string) {
			es := createSchedule(namespace, laxityv1alpha1.PoolBackend{Scale: &laxityv1alpha1.ScaleBackend{
				APIVersion: apiVersion, Kind: kind, Name: "target",
			}}, nil)
			_, err := New(opts, es)
			Expect(err).To(MatchError(And(HavePrefix("spec.nodePool.backend.scale"), ContainSubstring(message))))
			Expect(errors.Is(err, ErrInvalidBackend)).To(BeTrue())
			Expect(recorded.writes()).To(BeEmpty())
		},
		Entry("a core kind without /scale", "v1", "ConfigMap", "kind ConfigMap of apiVersion v1 has no /scale subresource"),
		Entry("a custom resource without /scale", "laxity.dev/v1alpha1", "ElasticSchedule", "kind ElasticSchedule of apiVersion laxity.dev/v1alpha1 has no /scale subresource"),
		Entry("a version the CRD does not serve", "cluster.x-k8s.io/v1alpha9", "MachineDeployment", "serves no kind MachineDeployment at apiVersion cluster.x-k8s.io/v1alpha9"),
		Entry("an unknown group", "example.com/v1", "Widget", "serves no kind Widget at apiVersion example.com/v1"),
		Entry("a kind misspelt", "cluster.x-k8s.io/v1beta2", "MachineDeplyment", "serves no kind MachineDeplyment"),
		Entry("a malformed apiVersion", "cluster.x-k8s.io/v1beta2/extra", "MachineDeployment", "is not a group/version"),
	)

	It("rejects a negative count without a request", func() {
		md := decode(fmt.Sprintf(machineDeployments["v1beta2"], "unused"))
		b, err := New(opts, createSchedule(namespace, scaleBackendFor(md), nil))
		Expect(err).NotTo(HaveOccurred())
		recorded.reset()
		Expect(b.Request(ctx, -1)).To(MatchError(HavePrefix("spec.nodePool.backend.scale: ")))
		Expect(recorded.matching(func(_, path string) bool { return strings.Contains(path, "machinedeployments") })).To(BeEmpty())
	})
})
