/*
Copyright 2026 The laxity Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package chart

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/laxity-dev/laxity/internal/cli"
)

// customValues sets every optional value of the chart, relative to the
// repository root.
const customValues = "test/chart/testdata/custom-values.yaml"

// chartValues models customValues; decoding it rejects any other key.
type chartValues struct {
	ReplicaCount int32 `json:"replicaCount"`
	Image        struct {
		Repository string            `json:"repository"`
		Tag        string            `json:"tag"`
		PullPolicy corev1.PullPolicy `json:"pullPolicy"`
	} `json:"image"`
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets"`
	FullnameOverride string                        `json:"fullnameOverride"`
	ServiceAccount   struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"serviceAccount"`
	Manager struct {
		LogLevel         string `json:"logLevel"`
		PlaceholderImage string `json:"placeholderImage"`
		ResultRoot       string `json:"resultRoot"`
		MaxAttempts      int    `json:"maxAttempts"`
		RetryBackoff     string `json:"retryBackoff"`
		Poll             string `json:"poll"`
	} `json:"manager"`
	Resources      corev1.ResourceRequirements `json:"resources"`
	PodAnnotations map[string]string           `json:"podAnnotations"`
	NodeSelector   map[string]string           `json:"nodeSelector"`
	Tolerations    []corev1.Toleration         `json:"tolerations"`
	Affinity       *corev1.Affinity            `json:"affinity"`
}

// metricsAuthRules are what controller-runtime's authentication and
// authorization filter for the metrics endpoint calls: a TokenReview of each
// caller's token and a SubjectAccessReview of its request.
var metricsAuthRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
	{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
}

// leaderElectionRules are what leader election calls in the manager's own
// namespace: client-go's LeaseLock gets, creates and updates its Lease, and
// the core/v1 event recorder creates and patches Events about it.
var leaderElectionRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
	{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
}

// metricsReaderRules are what a scraper of the manager's metrics needs.
var metricsReaderRules = []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}

func chartDefaults() rendered { return helmTemplate("laxity", "laxity-system") }

func chartCustomised() rendered {
	return helmTemplate("custom-values", "chart-custom-values", "--values", customValues)
}

func kustomized() rendered { return kustomizeBuild("config/default") }

var _ = Describe("The Helm chart", func() {
	DescribeTable("passes helm lint --strict",
		func(flags ...string) {
			_, err := run(helm, append([]string{"lint", "--strict", chartDir}, flags...)...)
			Expect(err).NotTo(HaveOccurred())
		},
		Entry("with default values"),
		Entry("with the ServiceMonitor", "--set", "metrics.serviceMonitor.enabled=true"),
		Entry("with every optional value set", "--values", customValues),
	)

	DescribeTable("renders objects that a real API server accepts, without a warning",
		func(ctx SpecContext, release, namespace string, flags ...string) {
			r := helmTemplate(release, namespace, flags...)
			Expect(r.ofKind(serviceMonitorKind)).To(BeEmpty())
			for _, obj := range r {
				if obj.GetNamespace() != "" {
					Expect(obj.GetNamespace()).To(Equal(namespace), "%s %s", obj.GetKind(), obj.GetName())
				}
			}
			Expect(createAll(ctx, append([]client.Object{restrictedNamespace(namespace)}, r.clientObjects()...)...)).To(BeEmpty())
		},
		Entry("with default values", "default-values", "chart-default-values"),
		Entry("with the ServiceMonitor disabled", "no-monitor", "chart-no-monitor", "--set", "metrics.serviceMonitor.enabled=false"),
		Entry("with every optional value set", "custom-values", "chart-custom-values", "--values", customValues),
	)

	It("runs the image of its appVersion by default", func() {
		var chart struct {
			AppVersion string `json:"appVersion"`
		}
		readYAML("charts/laxity/Chart.yaml", &chart, false)
		_, container := manager(chartDefaults())
		Expect(container.Image).To(HaveSuffix(":"+chart.AppVersion), "the image tag defaults to the appVersion")
	})

	It("passes every optional value through to the manager", func() {
		var values chartValues
		readYAML(customValues, &values, true)
		r := chartCustomised()
		deployment, container := manager(r)
		pod := deployment.Spec.Template.Spec

		Expect(deployment.Name).To(Equal(values.FullnameOverride))
		Expect(deployment.Spec.Replicas).To(HaveValue(Equal(values.ReplicaCount)))
		Expect(container.Image).To(Equal(values.Image.Repository + ":" + values.Image.Tag))
		Expect(container.ImagePullPolicy).To(Equal(values.Image.PullPolicy))
		Expect(pod.ImagePullSecrets).To(Equal(values.ImagePullSecrets))
		Expect(container.Args).To(ContainElements(
			"--zap-log-level="+values.Manager.LogLevel,
			"--placeholder-image="+values.Manager.PlaceholderImage,
			"--result-root="+values.Manager.ResultRoot,
			fmt.Sprintf("--max-attempts=%d", values.Manager.MaxAttempts),
			"--retry-backoff="+values.Manager.RetryBackoff,
			"--poll="+values.Manager.Poll,
		))
		Expect(cmp.Diff(values.Resources, container.Resources, quantitiesByValue)).To(BeEmpty())
		for key, value := range values.PodAnnotations {
			Expect(deployment.Spec.Template.Annotations).To(HaveKeyWithValue(key, value))
		}
		Expect(pod.NodeSelector).To(Equal(values.NodeSelector))
		Expect(pod.Tolerations).To(Equal(values.Tolerations))
		Expect(pod.Affinity).To(Equal(values.Affinity))

		accounts := as[corev1.ServiceAccount](r.ofKind(serviceAccountKind))
		Expect(accounts).To(HaveLen(1))
		Expect(accounts[0].Name).To(Equal(pod.ServiceAccountName))
		for key, value := range values.ServiceAccount.Annotations {
			Expect(accounts[0].Annotations).To(HaveKeyWithValue(key, value))
		}
	})

	It("grants the manager the rules generated into config/rbac/role.yaml, what its metrics and leader election need, and no more", func() {
		generated := as[rbacv1.ClusterRole](readDocuments(filepath.Join("config", "rbac", "role.yaml")))
		Expect(generated).To(HaveLen(1))
		generatedPermissions := permissionsOf(generated[0].Rules)
		Expect(generatedPermissions).NotTo(BeEmpty())

		r := chartDefaults()
		deployment, _ := manager(r)
		var withGeneratedRules []string
		for _, role := range as[rbacv1.ClusterRole](r.ofKind(clusterRoleKind)) {
			if cmp.Equal(permissionsOf(role.Rules), generatedPermissions) {
				withGeneratedRules = append(withGeneratedRules, role.Name)
			}
		}
		Expect(withGeneratedRules).To(HaveLen(1), "one ClusterRole has the generated rules")

		g := grantsTo(r, deployment.Namespace, deployment.Spec.Template.Spec.ServiceAccountName)
		Expect(g.ClusterRoles).To(ContainElement(withGeneratedRules[0]))
		Expect(cmp.Diff(permissionsOf(slices.Concat(generated[0].Rules, metricsAuthRules)), g.Cluster)).To(BeEmpty())
		Expect(g.Namespaced).To(HaveLen(1))
		Expect(cmp.Diff(permissionsOf(leaderElectionRules), g.Namespaced[deployment.Namespace])).To(BeEmpty())

		var unbound [][]permission
		for _, role := range as[rbacv1.ClusterRole](r.ofKind(clusterRoleKind)) {
			if !slices.Contains(g.ClusterRoles, role.Name) {
				unbound = append(unbound, permissionsOf(role.Rules))
			}
		}
		Expect(unbound).To(Equal([][]permission{permissionsOf(metricsReaderRules)}), "a metrics reader ClusterRole, for scrapers")
	})

	It("renders a ServiceMonitor that scrapes the metrics Service when asked to", func(ctx SpecContext) {
		const namespace = "chart-monitored"
		r := helmTemplate("monitored", namespace,
			"--set", "metrics.serviceMonitor.enabled=true",
			"--set", "metrics.serviceMonitor.interval=30s",
			"--set", "metrics.serviceMonitor.labels.release=prometheus")
		monitor := expectMonitorsMetrics(r)
		Expect(monitor.Labels).To(HaveKeyWithValue("release", "prometheus"))
		Expect(monitor.Spec.Endpoints[0].Interval).To(Equal("30s"))
		// This API server has no ServiceMonitor CRD; the rest must install.
		Expect(createAll(ctx, append([]client.Object{restrictedNamespace(namespace)}, r.without(serviceMonitorKind).clientObjects()...)...)).To(BeEmpty())
	})
})

var _ = Describe("The kustomize manifests", func() {
	It("build, and a real API server accepts them without a warning", func(ctx SpecContext) {
		r := kustomized()
		namespaces := as[corev1.Namespace](r.ofKind(namespaceKind))
		Expect(namespaces).To(HaveLen(1))
		Expect(namespaces[0].Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))
		Expect(namespaces[0].Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/warn", "restricted"),
			"so that the API server warns when the manager's pods would break the standard")
		for _, obj := range r {
			if obj.GetNamespace() != "" {
				Expect(obj.GetNamespace()).To(Equal(namespaces[0].Name), "%s %s", obj.GetKind(), obj.GetName())
			}
		}

		// envtest installed the CRDs from config/crd/bases; the build must
		// carry the same ones the chart does.
		chartCRDs := map[string]any{}
		crdFiles, err := filepath.Glob(filepath.Join(chartDir, "crds", "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		for _, file := range crdFiles {
			rel, err := filepath.Rel(repoRoot, file)
			Expect(err).NotTo(HaveOccurred())
			for _, crd := range readDocuments(rel) {
				chartCRDs[crd.GetName()] = crd.Object["spec"]
			}
		}
		builtCRDs := map[string]any{}
		for _, crd := range r.ofKind(crdKind) {
			builtCRDs[crd.GetName()] = crd.Object["spec"]
		}
		Expect(builtCRDs).NotTo(BeEmpty())
		Expect(builtCRDs).To(Equal(chartCRDs))

		Expect(createAll(ctx, r.without(crdKind).clientObjects()...)).To(BeEmpty())
	})

	It("install what the chart installs with its default values", func() {
		Expect(cmp.Diff(substanceOf(chartDefaults()), substanceOf(kustomized()), quantitiesByValue)).To(BeEmpty())
	})

	It("add, in config/prometheus, the ServiceMonitor the chart renders when asked to", func() {
		withMonitor := kustomizeBuild("config/prometheus")
		Expect(withMonitor.without(serviceMonitorKind)).To(ConsistOf(kustomized()), "config/default and nothing else")
		chartMonitor := expectMonitorsMetrics(helmTemplate("laxity", "laxity-system", "--set", "metrics.serviceMonitor.enabled=true"))
		Expect(expectMonitorsMetrics(withMonitor).Spec.Endpoints).To(Equal(chartMonitor.Spec.Endpoints))
	})
})

var _ = Describe("Both installations", func() {
	installations := []TableEntry{
		Entry("the chart with default values", chartDefaults),
		Entry("the chart with every optional value set", chartCustomised),
		Entry("the kustomize manifests", kustomized),
	}

	DescribeTable("run the manager with leader election, secure metrics on 8443 and probes on 8081, wired to the metrics Service",
		func(render func() rendered) {
			r := render()
			deployment, container := manager(r)
			template := deployment.Spec.Template

			expectNoRegistryHost(container.Image)
			Expect(container.Command).To(BeEmpty(), "the image's entrypoint is the laxity binary")
			Expect(container.Args).NotTo(BeEmpty())
			Expect(container.Args[0]).To(Equal("manager"))
			leaderElect, found := flagValue(container.Args, "--leader-elect")
			Expect(found).To(BeTrue(), "--leader-elect in %q", container.Args)
			Expect(leaderElect).To(BeElementOf("", "true"))
			metricsPort := bindPort(container.Args, "--metrics-bind-address")
			Expect(metricsPort).To(Equal(int32(8443)))
			Expect(bindPort(container.Args, "--health-probe-bind-address")).To(Equal(int32(8081)))
			expectProbe(container, container.LivenessProbe, "/healthz")
			expectProbe(container, container.ReadinessProbe, "/readyz")

			selector, err := metav1.LabelSelectorAsSelector(deployment.Spec.Selector)
			Expect(err).NotTo(HaveOccurred())
			Expect(selector.Matches(labels.Set(template.Labels))).To(BeTrue(), "the Deployment selects its pods")
			accounts := as[corev1.ServiceAccount](r.ofKind(serviceAccountKind))
			Expect(slices.ContainsFunc(accounts, func(a corev1.ServiceAccount) bool {
				return a.Namespace == deployment.Namespace && a.Name == template.Spec.ServiceAccountName
			})).To(BeTrue(), "the ServiceAccount %s is installed beside the Deployment", template.Spec.ServiceAccountName)

			services := as[corev1.Service](r.ofKind(serviceKind))
			Expect(services).To(HaveLen(1), "the metrics Service")
			service := services[0]
			Expect(service.Namespace).To(Equal(deployment.Namespace))
			Expect(selects(service.Spec.Selector, template.Labels)).To(BeTrue(), "the Service selects the manager's pods")
			Expect(service.Spec.Ports).To(HaveLen(1))
			Expect(service.Spec.Ports[0].Name).To(Equal("https"))
			Expect(service.Spec.Ports[0].Port).To(Equal(metricsPort))
			Expect(containerPort(container, service.Spec.Ports[0].TargetPort)).To(Equal(metricsPort))
		},
		installations,
	)

	DescribeTable("run every container with a restricted security context",
		func(render func() rendered) {
			for _, deployment := range as[appsv1.Deployment](render().ofKind(deploymentKind)) {
				pod := deployment.Spec.Template.Spec
				Expect(pod.SecurityContext).NotTo(BeNil())
				Expect(ptr.Deref(pod.SecurityContext.RunAsNonRoot, false)).To(BeTrue(), "pod runAsNonRoot")
				Expect(pod.SecurityContext.SeccompProfile).NotTo(BeNil(), "pod seccompProfile")
				Expect(pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
				for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
					security := c.SecurityContext
					Expect(security).NotTo(BeNil(), "container %s", c.Name)
					Expect(ptr.Deref(security.RunAsNonRoot, false)).To(BeTrue(), "container %s: runAsNonRoot", c.Name)
					Expect(ptr.Deref(security.ReadOnlyRootFilesystem, false)).To(BeTrue(), "container %s: readOnlyRootFilesystem", c.Name)
					Expect(ptr.Deref(security.AllowPrivilegeEscalation, true)).To(BeFalse(), "container %s: allowPrivilegeEscalation", c.Name)
					Expect(ptr.Deref(security.Privileged, false)).To(BeFalse(), "container %s: privileged", c.Name)
					Expect(security.Capabilities).NotTo(BeNil(), "container %s: capabilities", c.Name)
					Expect(security.Capabilities.Drop).To(ContainElement(corev1.Capability("ALL")), "container %s", c.Name)
					Expect(security.Capabilities.Add).To(BeEmpty(), "container %s", c.Name)
					Expect(security.SeccompProfile).NotTo(BeNil(), "container %s: seccompProfile", c.Name)
					Expect(security.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault), "container %s", c.Name)
				}
			}
		},
		installations,
	)

	DescribeTable("pass the manager only flags it defines, with values it accepts",
		func(render func() rendered) {
			_, container := manager(render())
			for _, arg := range container.Args[1:] {
				// --name=value, so that no stray word hides among the flags:
				// with --help, the manager does not check its arguments.
				Expect(arg).To(HavePrefix("--"))
			}
			stdout, stderr, code := runManagerHelp(container.Args)
			Expect(code).To(BeZero(), stderr)
			Expect(stdout).To(ContainSubstring("laxity manager [flags]"))
		},
		installations,
	)

	It("are checked by a flag check that can fail", func() {
		_, stderr, code := runManagerHelp([]string{"manager", "--leader-elect", "--no-such-flag=1"})
		Expect(code).NotTo(BeZero())
		Expect(stderr).To(ContainSubstring("unknown flag: --no-such-flag"))
	})
})

var _ = Describe("The envtest API server", func() {
	It("warns about a Deployment whose pods break the restricted Pod Security Standard, so that no warning means something", func(ctx SpecContext) {
		namespace := restrictedNamespace("pod-security-check")
		podLabels := map[string]string{"app": "unconfined"}
		deployment := &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "unconfined", Namespace: namespace.Name},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: podLabels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "pause", Image: "pause"}}},
				},
			},
		}
		Expect(createAll(ctx, namespace, deployment)).To(ContainElement(ContainSubstring(`violate PodSecurity "restricted`)))
	})
})

// expectProbe checks that a probe asks the manager's health probe server for
// path.
func expectProbe(c corev1.Container, probe *corev1.Probe, path string) {
	GinkgoHelper()
	Expect(probe).NotTo(BeNil(), "%s probe", path)
	Expect(probe.HTTPGet).NotTo(BeNil(), "%s probe", path)
	Expect(probe.HTTPGet.Path).To(Equal(path))
	Expect(containerPort(c, probe.HTTPGet.Port)).To(Equal(bindPort(c.Args, "--health-probe-bind-address")), "%s probe port", path)
}

// expectNoRegistryHost fails if an image reference names a registry host: a
// first path component with a dot or a colon, or localhost, as container
// runtimes read it.
func expectNoRegistryHost(image string) {
	GinkgoHelper()
	first, _, hasPath := strings.Cut(image, "/")
	Expect(hasPath && (strings.ContainsAny(first, ".:") || first == "localhost")).To(BeFalse(), "image %s names a registry host", image)
}

// runManagerHelp parses args with the real `laxity manager` command and
// prints its help instead of running it: exit code 0 means every flag exists
// and every value parses.
func runManagerHelp(args []string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	code = cli.Run(append(slices.Clone(args), "--help"), &out, &errOut)
	return out.String(), errOut.String(), code
}
