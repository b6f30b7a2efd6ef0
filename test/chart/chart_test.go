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
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/laxity-dev/laxity/internal/cli"
)

// customValues sets every optional value of the chart, relative to the
// repository root.
const customValues = "test/chart/testdata/custom-values.yaml"

// chartValues models customValues; decoding it rejects any other key.
type chartValues struct {
	ReplicaCount         int32             `json:"replicaCount"`
	CommonLabels         map[string]string `json:"commonLabels"`
	RevisionHistoryLimit int32             `json:"revisionHistoryLimit"`
	Image                struct {
		Repository  string                        `json:"repository"`
		Tag         string                        `json:"tag"`
		Digest      string                        `json:"digest"`
		PullPolicy  corev1.PullPolicy             `json:"pullPolicy"`
		PullSecrets []corev1.LocalObjectReference `json:"pullSecrets"`
	} `json:"image"`
	FullnameOverride string `json:"fullnameOverride"`
	ServiceAccount   struct {
		Create      bool              `json:"create"`
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	} `json:"serviceAccount"`
	WatchNamespaces []string `json:"watchNamespaces"`
	Manager         struct {
		LogLevel         string `json:"logLevel"`
		PlaceholderImage string `json:"placeholderImage"`
		ResultRoot       string `json:"resultRoot"`
		MaxAttempts      int    `json:"maxAttempts"`
		RetryBackoff     string `json:"retryBackoff"`
		Poll             string `json:"poll"`
		ScheduleWorkers  int    `json:"scheduleWorkers"`
		QueryWorkers     int    `json:"queryWorkers"`
	} `json:"manager"`
	ExtraArgs            []string                    `json:"extraArgs"`
	Env                  []corev1.EnvVar             `json:"env"`
	EnvFrom              []corev1.EnvFromSource      `json:"envFrom"`
	Resources            corev1.ResourceRequirements `json:"resources"`
	PodLabels            map[string]string           `json:"podLabels"`
	PodAnnotations       map[string]string           `json:"podAnnotations"`
	NodeSelector         map[string]string           `json:"nodeSelector"`
	Tolerations          []corev1.Toleration         `json:"tolerations"`
	Affinity             *corev1.Affinity            `json:"affinity"`
	PoolNodeAntiAffinity struct {
		Enabled  bool   `json:"enabled"`
		LabelKey string `json:"labelKey"`
		Type     string `json:"type"`
	} `json:"poolNodeAntiAffinity"`
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints"`
	ExtraVolumes              []corev1.Volume                   `json:"extraVolumes"`
	ExtraVolumeMounts         []corev1.VolumeMount              `json:"extraVolumeMounts"`
	PriorityClassName         string                            `json:"priorityClassName"`
	PodDisruptionBudget       struct {
		Enabled        bool               `json:"enabled"`
		MaxUnavailable intstr.IntOrString `json:"maxUnavailable"`
	} `json:"podDisruptionBudget"`
	Metrics struct {
		TLS struct {
			SecretName string `json:"secretName"`
		} `json:"tls"`
		PrometheusServiceAccount struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"prometheusServiceAccount"`
		ServiceMonitor struct {
			Enabled       bool              `json:"enabled"`
			Labels        map[string]string `json:"labels"`
			Interval      string            `json:"interval"`
			ScrapeTimeout string            `json:"scrapeTimeout"`
			TLSConfig     monitorTLSConfig  `json:"tlsConfig"`
		} `json:"serviceMonitor"`
		PodMonitor struct {
			Enabled       bool              `json:"enabled"`
			Labels        map[string]string `json:"labels"`
			Interval      string            `json:"interval"`
			ScrapeTimeout string            `json:"scrapeTimeout"`
			Authorization struct {
				Credentials corev1.SecretKeySelector `json:"credentials"`
			} `json:"authorization"`
		} `json:"podMonitor"`
		PrometheusRule struct {
			Enabled                bool              `json:"enabled"`
			Labels                 map[string]string `json:"labels"`
			AtRiskFor              string            `json:"atRiskFor"`
			InfeasibleFor          string            `json:"infeasibleFor"`
			LeadTimeFactor         float64           `json:"leadTimeFactor"`
			DefaultLeadTimeSeconds float64           `json:"defaultLeadTimeSeconds"`
			AbsentFor              string            `json:"absentFor"`
			Job                    string            `json:"job"`
			ReconcileErrorRatio    float64           `json:"reconcileErrorRatio"`
			ReconcileErrorsFor     string            `json:"reconcileErrorsFor"`
			StepFailureRatio       float64           `json:"stepFailureRatio"`
			StepFailureMinimum     int               `json:"stepFailureMinimum"`
			StepFailuresFor        string            `json:"stepFailuresFor"`
			AdditionalLabels       map[string]string `json:"additionalLabels"`
		} `json:"prometheusRule"`
		Dashboard struct {
			Enabled     bool              `json:"enabled"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
			Namespace   string            `json:"namespace"`
		} `json:"dashboard"`
	} `json:"metrics"`
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
		Entry("with the metrics objects", "--set", "metrics.tls.secretName=laxity-metrics-tls,metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true,metrics.dashboard.enabled=true"),
		Entry("with watched namespaces", "--set", "watchNamespaces={team-a,team-b}"),
		Entry("with an existing ServiceAccount and no RBAC", "--set", "serviceAccount.create=false,serviceAccount.name=laxity,rbac.create=false"),
		Entry("with every optional value set", "--values", customValues),
	)

	It("runs the image of its appVersion by default, the chart's version, which its README states", func() {
		var chart struct {
			Version    string `json:"version"`
			AppVersion string `json:"appVersion"`
		}
		readYAML("charts/laxity/Chart.yaml", &chart, false)
		Expect(chart.AppVersion).NotTo(BeEmpty())
		Expect(chart.Version).To(Equal(chart.AppVersion), "the chart's version and the laxity version it runs agree")
		_, container := manager(chartDefaults())
		Expect(container.Image).To(HaveSuffix(":"+chart.AppVersion), "the image tag defaults to the appVersion")
		readme, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(readme)).To(ContainSubstring(fmt.Sprintf("Chart version %s, laxity %s", chart.Version, chart.AppVersion)))
	})

	It("passes every optional value through to the manager", func() {
		var values chartValues
		readYAML(customValues, &values, true)
		r := chartCustomised()
		deployment, container := manager(r)
		pod := deployment.Spec.Template.Spec

		Expect(deployment.Name).To(Equal(values.FullnameOverride))
		Expect(deployment.Spec.Replicas).To(HaveValue(Equal(values.ReplicaCount)))
		Expect(deployment.Spec.RevisionHistoryLimit).To(HaveValue(Equal(values.RevisionHistoryLimit)))
		Expect(values.Image.Tag).NotTo(BeEmpty())
		Expect(container.Image).To(Equal(values.Image.Repository+"@"+values.Image.Digest), "the digest wins over the tag")
		for _, obj := range r {
			for key, value := range values.CommonLabels {
				Expect(obj.GetLabels()).To(HaveKeyWithValue(key, value), "%s %s", obj.GetKind(), obj.GetName())
			}
		}
		for key, value := range values.CommonLabels {
			Expect(deployment.Spec.Template.Labels).To(HaveKeyWithValue(key, value), "the manager's pods")
		}
		Expect(container.ImagePullPolicy).To(Equal(values.Image.PullPolicy))
		Expect(pod.ImagePullSecrets).To(Equal(values.Image.PullSecrets))
		Expect(container.Args).To(ContainElements(
			"--zap-log-level="+values.Manager.LogLevel,
			"--watch-namespaces="+strings.Join(values.WatchNamespaces, ","),
			"--placeholder-image="+values.Manager.PlaceholderImage,
			"--result-root="+values.Manager.ResultRoot,
			fmt.Sprintf("--max-attempts=%d", values.Manager.MaxAttempts),
			"--retry-backoff="+values.Manager.RetryBackoff,
			"--poll="+values.Manager.Poll,
			fmt.Sprintf("--schedule-workers=%d", values.Manager.ScheduleWorkers),
			fmt.Sprintf("--query-workers=%d", values.Manager.QueryWorkers),
			"--metrics-cert-dir="+metricsCertDir(r),
		))
		Expect(metricsCertDir(r)).NotTo(BeEmpty(), "metrics.tls.secretName is served")
		Expect(container.Args).To(ContainElements(values.ExtraArgs))
		Expect(container.Env).To(Equal(values.Env))
		Expect(container.EnvFrom).To(Equal(values.EnvFrom))
		Expect(cmp.Diff(values.Resources, container.Resources, quantitiesByValue)).To(BeEmpty())
		for key, value := range values.PodAnnotations {
			Expect(deployment.Spec.Template.Annotations).To(HaveKeyWithValue(key, value))
		}
		for key, value := range values.PodLabels {
			Expect(deployment.Spec.Template.Labels).To(HaveKeyWithValue(key, value))
		}
		Expect(pod.NodeSelector).To(Equal(values.NodeSelector))
		Expect(pod.Tolerations).To(Equal(values.Tolerations))
		wantAffinity := values.Affinity.DeepCopy()
		wantAffinity.NodeAffinity = &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
			Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: values.PoolNodeAntiAffinity.LabelKey, Operator: corev1.NodeSelectorOpDoesNotExist}}},
		}}}
		Expect(pod.Affinity).To(Equal(wantAffinity), "the affinity given, and a preferred node anti-affinity on the pools' label")
		Expect(pod.TopologySpreadConstraints).To(HaveLen(len(values.TopologySpreadConstraints)))
		for i, want := range values.TopologySpreadConstraints {
			if want.LabelSelector == nil {
				want.LabelSelector = deployment.Spec.Selector
			}
			Expect(pod.TopologySpreadConstraints[i]).To(Equal(want), "a constraint without a labelSelector spreads the manager's pods")
		}
		Expect(pod.Volumes).To(ContainElements(values.ExtraVolumes))
		Expect(container.VolumeMounts).To(ContainElements(values.ExtraVolumeMounts))
		Expect(pod.PriorityClassName).To(Equal(values.PriorityClassName))

		Expect(pod.ServiceAccountName).To(Equal(values.ServiceAccount.Name))
		accounts := as[corev1.ServiceAccount](r.ofKind(serviceAccountKind))
		idx := slices.IndexFunc(accounts, func(a corev1.ServiceAccount) bool { return a.Name == pod.ServiceAccountName })
		Expect(idx).NotTo(Equal(-1), "the manager's ServiceAccount is rendered")
		for key, value := range values.ServiceAccount.Annotations {
			Expect(accounts[idx].Annotations).To(HaveKeyWithValue(key, value))
		}

		budgets := as[policyv1.PodDisruptionBudget](r.ofKind(pdbKind))
		Expect(budgets).To(HaveLen(1))
		Expect(budgets[0].Spec.MaxUnavailable).To(HaveValue(Equal(values.PodDisruptionBudget.MaxUnavailable)))
		selector, err := metav1.LabelSelectorAsSelector(budgets[0].Spec.Selector)
		Expect(err).NotTo(HaveOccurred())
		Expect(selector.Matches(labels.Set(deployment.Spec.Template.Labels))).To(BeTrue(), "the PodDisruptionBudget covers the manager's pods")

		monitor := expectMonitorsMetrics(r)
		for key, value := range values.Metrics.ServiceMonitor.Labels {
			Expect(monitor.Labels).To(HaveKeyWithValue(key, value))
		}
		Expect(monitor.Spec.Endpoints[0].Interval).To(Equal(values.Metrics.ServiceMonitor.Interval))
		Expect(monitor.Spec.Endpoints[0].ScrapeTimeout).To(Equal(values.Metrics.ServiceMonitor.ScrapeTimeout))
		Expect(monitor.Spec.Endpoints[0].TLSConfig).To(HaveValue(Equal(values.Metrics.ServiceMonitor.TLSConfig)), "the tlsConfig given, as it is")
		Expect(jobOf(monitor.Spec.Endpoints[0])).To(Equal(values.Metrics.PrometheusRule.Job))

		pods := expectPodMonitorScrapesManager(r)
		for key, value := range values.Metrics.PodMonitor.Labels {
			Expect(pods.Labels).To(HaveKeyWithValue(key, value))
		}
		podEndpoint := pods.Spec.PodMetricsEndpoints[0]
		Expect(podEndpoint.Interval).To(Equal(values.Metrics.PodMonitor.Interval))
		Expect(podEndpoint.ScrapeTimeout).To(Equal(values.Metrics.PodMonitor.ScrapeTimeout))
		Expect(podEndpoint.Authorization.Credentials).To(Equal(values.Metrics.PodMonitor.Authorization.Credentials))
		Expect(podEndpoint.TLSConfig.CA.Secret.Name).To(Equal(values.Metrics.TLS.SecretName), "without a tlsConfig, the CA of metrics.tls.secretName")
		Expect(jobOf(podEndpoint)).To(Equal(values.Metrics.PrometheusRule.Job))

		prometheus := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: values.Metrics.PrometheusServiceAccount.Name, Namespace: values.Metrics.PrometheusServiceAccount.Namespace}
		Expect(grantsTo(r, prometheus.Namespace, prometheus.Name).Cluster).To(Equal(permissionsOf(metricsReaderRules)), "Prometheus may read the metrics, and nothing else")

		rules := r.ofKind(prometheusRuleKind)
		Expect(rules).To(HaveLen(1))
		for key, value := range values.Metrics.PrometheusRule.Labels {
			Expect(rules[0].GetLabels()).To(HaveKeyWithValue(key, value))
		}
		var alerts []string
		for _, rule := range alertRules(rules[0]) {
			alerts = append(alerts, rule.Alert)
		}
		Expect(alerts).To(ConsistOf("LaxityDeadlineAtRisk", "LaxityDeadlineMissed", "LaxityPlanInfeasible", "LaxityPoolNotReady",
			"LaxityAbsent", "LaxityReconcileErrors", "LaxityStepFailures", "LaxitySearchBudgetExceeded"))
		for _, rule := range alertRules(rules[0]) {
			for key, value := range values.Metrics.PrometheusRule.AdditionalLabels {
				Expect(rule.Labels).To(HaveKeyWithValue(key, value), "alert %s", rule.Alert)
			}
			switch rule.Alert {
			case "LaxityDeadlineAtRisk":
				Expect(rule.For).To(Equal(values.Metrics.PrometheusRule.AtRiskFor))
			case "LaxityPlanInfeasible":
				Expect(rule.For).To(Equal(values.Metrics.PrometheusRule.InfeasibleFor))
			case "LaxityAbsent":
				Expect(rule.For).To(Equal(values.Metrics.PrometheusRule.AbsentFor))
				Expect(rule.Expr).To(ContainSubstring(fmt.Sprintf("job=%q", values.Metrics.PrometheusRule.Job)))
			case "LaxityReconcileErrors":
				Expect(rule.For).To(Equal(values.Metrics.PrometheusRule.ReconcileErrorsFor))
				Expect(rule.Expr).To(ContainSubstring(fmt.Sprintf("> %g", values.Metrics.PrometheusRule.ReconcileErrorRatio)))
				Expect(rule.Expr).To(ContainSubstring(fmt.Sprintf("job=%q", values.Metrics.PrometheusRule.Job)))
			case "LaxityStepFailures":
				Expect(rule.For).To(Equal(values.Metrics.PrometheusRule.StepFailuresFor))
				Expect(rule.Expr).To(ContainSubstring(fmt.Sprintf("> %g", values.Metrics.PrometheusRule.StepFailureRatio)))
				Expect(rule.Expr).To(ContainSubstring(fmt.Sprintf(">= %d", values.Metrics.PrometheusRule.StepFailureMinimum)))
			case "LaxityPoolNotReady":
				Expect(rule.Expr).To(ContainSubstring(fmt.Sprintf("%g * %g", values.Metrics.PrometheusRule.LeadTimeFactor, values.Metrics.PrometheusRule.DefaultLeadTimeSeconds)))
			}
		}

		dashboards := as[corev1.ConfigMap](r.ofKind(configMapKind))
		Expect(dashboards).To(HaveLen(1))
		for key, value := range values.Metrics.Dashboard.Labels {
			Expect(dashboards[0].Labels).To(HaveKeyWithValue(key, value))
		}
		for key, value := range values.Metrics.Dashboard.Annotations {
			Expect(dashboards[0].Annotations).To(HaveKeyWithValue(key, value))
		}
		Expect(dashboards[0].Namespace).To(Equal(deployment.Namespace))
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
		want := [][]permission{permissionsOf(metricsReaderRules)}
		tenantRoles := as[rbacv1.ClusterRole](readDocuments(filepath.Join("config", "rbac", "tenant_roles.yaml")))
		Expect(tenantRoles).To(HaveLen(2))
		for _, role := range tenantRoles {
			want = append(want, permissionsOf(role.Rules))
		}
		Expect(unbound).To(ConsistOf(want), "a metrics reader ClusterRole, for scrapers, and the tenants' edit and view roles of config/rbac/tenant_roles.yaml")
	})

	It("aggregates the tenants' roles into the built-in admin, edit and view roles, and can leave them out", func() {
		aggregatedInto := map[string][]string{}
		for _, role := range as[rbacv1.ClusterRole](chartDefaults().ofKind(clusterRoleKind)) {
			for _, builtIn := range []string{"admin", "edit", "view"} {
				if role.Labels["rbac.authorization.k8s.io/aggregate-to-"+builtIn] == "true" {
					aggregatedInto[builtIn] = append(aggregatedInto[builtIn], role.Name)
				}
			}
		}
		Expect(aggregatedInto).To(Equal(map[string][]string{
			"admin": {"laxity-edit"}, "edit": {"laxity-edit"}, "view": {"laxity-view"},
		}))
		for _, role := range as[rbacv1.ClusterRole](chartDefaults().ofKind(clusterRoleKind)) {
			if role.Name != "laxity-edit" && role.Name != "laxity-view" {
				continue
			}
			for _, p := range permissionsOf(role.Rules) {
				Expect(p.Group).To(Equal("laxity.dev"), "%s: %s", role.Name, p)
				Expect(p.Resource).NotTo(HavePrefix("tenantpolicies"), "%s: %s", role.Name, p)
				if strings.HasSuffix(p.Resource, "/status") {
					Expect(p.Verb).To(BeElementOf("get", "list", "watch"), "%s: a tenant may not write %s", role.Name, p.Resource)
				}
			}
		}
		for _, role := range as[rbacv1.ClusterRole](helmTemplate("laxity", "laxity-system", "--set", "rbac.tenantRoles=false").ofKind(clusterRoleKind)) {
			Expect(role.Labels).NotTo(HaveKey(HavePrefix("rbac.authorization.k8s.io/aggregate-to-")), role.Name)
		}
	})

	It("renders a ServiceMonitor that scrapes the metrics Service with Prometheus's own token, verifying the certificate the manager serves, when asked to", func(ctx SpecContext) {
		const namespace = "chart-monitored"
		r := helmTemplate("monitored", namespace,
			"--set", "metrics.serviceMonitor.enabled=true",
			"--set", "metrics.tls.secretName=monitored-metrics-tls",
			"--set", "metrics.serviceMonitor.interval=30s",
			"--set", "metrics.serviceMonitor.labels.release=prometheus")
		monitor := expectMonitorsMetrics(r)
		Expect(monitor.Labels).To(HaveKeyWithValue("release", "prometheus"))
		Expect(monitor.Spec.Endpoints[0].Interval).To(Equal("30s"))
		Expect(monitor.Spec.Endpoints[0].TLSConfig.InsecureSkipVerify).To(BeFalse(), "verified unless asked otherwise")
		Expect(monitor.Spec.Endpoints[0].TLSConfig.CA.Secret.Name).To(Equal("monitored-metrics-tls"))
		Expect(jobOf(monitor.Spec.Endpoints[0])).To(Equal(as[corev1.Service](r.ofKind(serviceKind))[0].Name), "the Service's name, a ServiceMonitor's default job")
		Expect(createAll(ctx, append([]client.Object{restrictedNamespace(namespace)}, r.without(crdKind).clientObjects()...)...)).To(BeEmpty())

		By("skipping verification only when the values ask for it")
		insecure := expectMonitorsMetrics(helmTemplate("monitored", namespace,
			"--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.serviceMonitor.tlsConfig.insecureSkipVerify=true"))
		Expect(insecure.Spec.Endpoints[0].TLSConfig.InsecureSkipVerify).To(BeTrue())
	})

	It("keeps the manager off the nodes of laxity's pools unless told otherwise", func() {
		avoidPools := func(r rendered) *corev1.NodeAffinity {
			deployment, _ := manager(r)
			Expect(deployment.Spec.Template.Spec.Affinity).NotTo(BeNil())
			return deployment.Spec.Template.Spec.Affinity.NodeAffinity
		}
		notOnPool := func(key string) corev1.NodeSelectorTerm {
			return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpDoesNotExist}}}
		}
		Expect(avoidPools(chartDefaults())).To(Equal(&corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{notOnPool("laxity.dev/pool")},
		}}), "required, on the label the samples' pools carry")
		Expect(avoidPools(helmTemplate("laxity", "laxity-system", "--set", "poolNodeAntiAffinity.type=preferred,poolNodeAntiAffinity.labelKey=karpenter.sh/nodepool"))).
			To(Equal(&corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 100, Preference: notOnPool("karpenter.sh/nodepool")}}}))

		own := &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "node-role.example.com/control", Operator: corev1.NodeSelectorOpExists}},
		}}}}
		Expect(avoidPools(helmTemplate("laxity", "laxity-system", "--set", "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=node-role.example.com/control",
			"--set", "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists"))).
			To(Equal(own), "a nodeAffinity given replaces the chart's")

		deployment, _ := manager(helmTemplate("laxity", "laxity-system", "--set", "poolNodeAntiAffinity.enabled=false"))
		Expect(deployment.Spec.Template.Spec.Affinity).To(BeNil())
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
		// carry the same ones the chart renders.
		chartCRDs := map[string]any{}
		for _, crd := range chartDefaults().ofKind(crdKind) {
			chartCRDs[crd.GetName()] = crd.Object["spec"]
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

	It("add, in config/prometheus, the ServiceMonitor and the served certificate the chart renders when asked to", func() {
		withMonitor := kustomizeBuild("config/prometheus")
		base := kustomized()
		key := func(r rendered) []string {
			var keys []string
			for _, obj := range r {
				keys = append(keys, obj.GetKind()+" "+obj.GetName())
			}
			return keys
		}
		Expect(key(withMonitor.without(serviceMonitorKind))).To(ConsistOf(key(base)), "config/default's objects and a ServiceMonitor")
		Expect(withMonitor.without(serviceMonitorKind, deploymentKind)).To(ConsistOf(base.without(deploymentKind)), "only the manager changes")
		monitor := expectMonitorsMetrics(withMonitor)

		chart := helmTemplate("laxity", "laxity-system", "--set", "metrics.serviceMonitor.enabled=true,metrics.tls.secretName=laxity-metrics-tls")
		chartMonitor := expectMonitorsMetrics(chart)
		// The same endpoint but for the names of the Service and the Secret.
		names := func(m serviceMonitor, r rendered) monitorEndpoint {
			e := m.Spec.Endpoints[0]
			tls := *e.TLSConfig
			ca := *tls.CA
			secret := *ca.Secret
			secret.Name, tls.ServerName = "", ""
			ca.Secret, tls.CA, e.TLSConfig = &secret, &ca, &tls
			e.Relabelings = nil
			Expect(jobOf(m.Spec.Endpoints[0])).To(Equal(as[corev1.Service](r.ofKind(serviceKind))[0].Name))
			return e
		}
		Expect(names(monitor, withMonitor)).To(Equal(names(chartMonitor, chart)))
		_, withCert := manager(withMonitor)
		_, chartWithCert := manager(chart)
		Expect(cmp.Diff(substanceOf(chart), substanceOf(withMonitor), quantitiesByValue)).To(BeEmpty())
		Expect(withCert.VolumeMounts).To(Equal(chartWithCert.VolumeMounts))
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
