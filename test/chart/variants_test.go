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
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// variant is one combination of values that matters: what it sets, what
// must exist before the chart's objects (watched namespaces, an existing
// ServiceAccount), and what is checked on its render beyond what every
// render must satisfy.
type variant struct {
	flags  []string
	before func(namespace string) []client.Object
	check  func(r rendered)
}

var rbacKinds = []schema.GroupKind{clusterRoleKind, clusterRoleBindingKind, roleKind, roleBindingKind}

var _ = Describe("The Helm chart's combinations of values", func() {
	DescribeTable("render objects that a real API server accepts, without a warning",
		func(ctx SpecContext, release string, v variant) {
			namespace := "chart-" + release
			r := helmTemplate(release, namespace, v.flags...)
			objs := []client.Object{restrictedNamespace(namespace)}
			if v.before != nil {
				objs = append(objs, v.before(namespace)...)
			}
			watched := watchedNamespaces(r)
			for _, obj := range r {
				if ns := obj.GetNamespace(); ns != "" {
					Expect(append([]string{namespace}, watched...)).To(ContainElement(ns), "%s %s", obj.GetKind(), obj.GetName())
				}
			}
			if v.check != nil {
				v.check(r)
			}
			// envtest serves laxity's CRDs already; the rendered ones are
			// compared with them below.
			Expect(createAll(ctx, append(objs, r.without(crdKind).clientObjects()...)...)).To(BeEmpty())
		},
		Entry("default values: every namespace, a created ServiceAccount, no metrics objects, a PodDisruptionBudget", "defaults", variant{
			check: func(r rendered) {
				Expect(r.ofKind(serviceMonitorKind, podMonitorKind, prometheusRuleKind, configMapKind, secretKind)).To(BeEmpty())
				Expect(r.ofKind(pdbKind)).To(HaveLen(1))
				Expect(r.ofKind(roleKind)).To(HaveLen(1), "the leader-election Role only")
			},
		}),
		Entry("watched namespaces", "watched", variant{
			flags: []string{"--set", "watchNamespaces={chart-watched-a,chart-watched-b}"},
			before: func(string) []client.Object {
				return []client.Object{plainNamespace("chart-watched-a"), plainNamespace("chart-watched-b")}
			},
			check: func(r rendered) {
				_, container := manager(r)
				Expect(container.Args).To(ContainElement("--watch-namespaces=chart-watched-a,chart-watched-b"))
				Expect(watchedNamespaces(r)).To(Equal([]string{"chart-watched-a", "chart-watched-b"}))
			},
		}),
		Entry("an existing ServiceAccount", "existing-account", variant{
			flags: []string{"--set", "serviceAccount.create=false,serviceAccount.name=platform-laxity"},
			before: func(namespace string) []client.Object {
				return []client.Object{&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
					ObjectMeta: metav1.ObjectMeta{Name: "platform-laxity", Namespace: namespace}}}
			},
			check: func(r rendered) {
				Expect(r.ofKind(serviceAccountKind)).To(BeEmpty())
				deployment, _ := manager(r)
				Expect(deployment.Spec.Template.Spec.ServiceAccountName).To(Equal("platform-laxity"))
				Expect(grantsTo(r, deployment.Namespace, "platform-laxity").ClusterRoles).To(ContainElement(HaveSuffix("-manager")))
			},
		}),
		Entry("no RBAC: neither the manager's nor the tenants' roles", "no-rbac", variant{
			flags: []string{"--set", "rbac.create=false,rbac.tenantRoles=false"},
			check: func(r rendered) { Expect(r.ofKind(rbacKinds...)).To(BeEmpty()) },
		}),
		Entry("no leader election", "no-leader", variant{
			flags: []string{"--set", "leaderElection.enabled=false"},
			check: func(r rendered) {
				_, container := manager(r)
				_, found := flagValue(container.Args, "--leader-elect")
				Expect(found).To(BeFalse())
				Expect(r.ofKind(roleKind)).To(BeEmpty(), "no leader-election Role")
			},
		}),
		Entry("the metrics objects, scraped with Prometheus's identity and a verified certificate", "metrics", variant{
			flags: []string{"--set", "metrics.tls.secretName=metrics-tls,metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true,metrics.dashboard.enabled=true",
				"--set", "metrics.prometheusServiceAccount.name=prometheus-k8s,metrics.prometheusServiceAccount.namespace=monitoring"},
			check: func(r rendered) {
				expectMonitorsMetrics(r)
				Expect(grantsTo(r, "monitoring", "prometheus-k8s").Cluster).To(Equal(permissionsOf(metricsReaderRules)))
				Expect(r.ofKind(prometheusRuleKind)).To(HaveLen(1))
				Expect(r.ofKind(configMapKind)).To(HaveLen(1))
			},
		}),
		Entry("a PodMonitor instead of the ServiceMonitor", "pod-monitor", variant{
			flags: []string{"--set", "metrics.tls.secretName=metrics-tls,metrics.podMonitor.enabled=true",
				"--set", "metrics.podMonitor.authorization.credentials.name=prometheus-laxity-token,metrics.podMonitor.authorization.credentials.key=token"},
			check: func(r rendered) {
				Expect(r.ofKind(serviceMonitorKind)).To(BeEmpty())
				monitor := expectPodMonitorScrapesManager(r)
				Expect(jobOf(monitor.Spec.PodMetricsEndpoints[0])).To(Equal(as[corev1.Service](r.ofKind(serviceKind))[0].Name),
					"the job a ServiceMonitor's targets get, which the alerts match")
			},
		}),
		Entry("a digest, placement and extra volumes", "placement", variant{
			flags: []string{"--set", "image.digest=sha256:" + strings.Repeat("ab", 32) + ",revisionHistoryLimit=0,commonLabels.team=analytics",
				"--set", "poolNodeAntiAffinity.type=preferred",
				"--set-json", `topologySpreadConstraints=[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule"}]`,
				"--set-json", `extraVolumes=[{"name":"scratch","emptyDir":{}}]`,
				"--set-json", `extraVolumeMounts=[{"name":"scratch","mountPath":"/scratch"}]`},
			check: func(r rendered) {
				deployment, container := manager(r)
				Expect(container.Image).To(HaveSuffix("@sha256:" + strings.Repeat("ab", 32)))
				Expect(deployment.Spec.RevisionHistoryLimit).To(HaveValue(BeZero()))
				Expect(deployment.Spec.Template.Spec.TopologySpreadConstraints).To(HaveLen(1))
				Expect(deployment.Spec.Template.Spec.TopologySpreadConstraints[0].LabelSelector).To(Equal(deployment.Spec.Selector))
				Expect(container.VolumeMounts).To(ConsistOf(HaveField("MountPath", "/scratch")))
				for _, obj := range r {
					Expect(obj.GetLabels()).To(HaveKeyWithValue("team", "analytics"), "%s %s", obj.GetKind(), obj.GetName())
				}
			},
		}),
		Entry("the metrics objects off", "no-metrics", variant{
			flags: []string{"--set", "metrics.serviceMonitor.enabled=false,metrics.prometheusRule.enabled=false,metrics.dashboard.enabled=false"},
			check: func(r rendered) {
				Expect(r.ofKind(serviceMonitorKind, podMonitorKind, prometheusRuleKind, configMapKind, secretKind)).To(BeEmpty())
				for _, account := range r.ofKind(serviceAccountKind) {
					Expect(account.GetName()).NotTo(ContainSubstring("scraper"))
				}
			},
		}),
		Entry("no PodDisruptionBudget", "no-pdb", variant{
			flags: []string{"--set", "podDisruptionBudget.enabled=false"},
			check: func(r rendered) { Expect(r.ofKind(pdbKind)).To(BeEmpty()) },
		}),
		Entry("every optional value set", "custom-values", variant{
			flags: []string{"--values", customValues},
			before: func(string) []client.Object {
				return []client.Object{plainNamespace("analytics-team-a"), plainNamespace("analytics-team-b")}
			},
		}),
	)

	It("installs laxity's CRDs as config/crd/bases has them, kept on uninstall, unless told otherwise", func() {
		generated := map[string]any{}
		files, err := filepath.Glob(filepath.Join(repoRoot, "config", "crd", "bases", "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		for _, file := range files {
			rel, err := filepath.Rel(repoRoot, file)
			Expect(err).NotTo(HaveOccurred())
			for _, crd := range readDocuments(rel) {
				generated[crd.GetName()] = crd.Object["spec"]
			}
		}
		Expect(generated).NotTo(BeEmpty())

		r := chartDefaults()
		crds := as[apiextensionsv1.CustomResourceDefinition](r.ofKind(crdKind))
		rendered := map[string]any{}
		for i, crd := range r.ofKind(crdKind) {
			rendered[crd.GetName()] = crd.Object["spec"]
			Expect(crds[i].Annotations).To(HaveKeyWithValue("helm.sh/resource-policy", "keep"), crd.GetName())
		}
		Expect(cmp.Diff(generated, rendered)).To(BeEmpty())

		for _, crd := range helmTemplate("laxity", "laxity-system", "--set", "crds.keep=false").ofKind(crdKind) {
			Expect(crd.GetAnnotations()).NotTo(HaveKey("helm.sh/resource-policy"), crd.GetName())
		}
		Expect(helmTemplate("laxity", "laxity-system", "--set", "crds.install=false").ofKind(crdKind)).To(BeEmpty())
	})

	DescribeTable("refuse values that are wrong, naming them",
		func(want string, flags ...string) {
			Expect(helmTemplateError(flags...)).To(ContainSubstring(want))
		},
		Entry("a misspelt value", "imgae", "--set", "imgae.tag=x"),
		Entry("a misspelt nested value in a values file", "anotations", "--values", "test/chart/testdata/misspelt-values.yaml"),
		Entry("a value of the wrong type", "replicaCount", "--set-json", `replicaCount="two"`),
		Entry("a watched namespace that is no namespace name", "watchNamespaces", "--set", "watchNamespaces={Team_A}"),
		Entry("an existing ServiceAccount without a name", "serviceAccount.name", "--set", "serviceAccount.create=false"),
		Entry("several replicas without leader election", "leaderElection.enabled", "--set", "replicaCount=2,leaderElection.enabled=false"),
		Entry("a flag that is not one", "extraArgs", "--set", "extraArgs={plan-timeout=1m}"),
		Entry("a log level the manager does not know", "/manager/logLevel", "--set", "manager.logLevel=loud"),
		Entry("a log level the manager would read as none", "/manager/logLevel", "--set-json", "manager.logLevel=0"),
		Entry("a quantity that is none", "/resources/limits/memory", "--set", "resources.limits.memory=lots"),
		Entry("a digest that is none", "/image/digest", "--set", "image.digest=latest"),
		Entry("a pool label that is no label key", "/poolNodeAntiAffinity/labelKey", "--set", "poolNodeAntiAffinity.labelKey=laxity pool"),
		Entry("a Kubernetes older than the CRDs need", "kubeVersion", "--kube-version", "1.32.0"),
		Entry("a ServiceMonitor that could not verify the manager's certificate", "metrics.serviceMonitor.tlsConfig", "--set", "metrics.serviceMonitor.enabled=true"),
		Entry("a PodMonitor that could not verify the manager's certificate", "metrics.podMonitor.tlsConfig",
			"--set", "metrics.podMonitor.enabled=true,metrics.podMonitor.authorization.credentials.name=t,metrics.podMonitor.authorization.credentials.key=token"),
		Entry("a PodMonitor without credentials", "metrics.podMonitor.authorization", "--set", "metrics.podMonitor.enabled=true,metrics.tls.secretName=tls"),
		Entry("a Prometheus ServiceAccount without its namespace", "metrics.prometheusServiceAccount.namespace", "--set", "metrics.prometheusServiceAccount.name=prometheus-k8s"),
	)

	It("grants the manager, with watchNamespaces, the namespaced rules in each watched namespace only, and no Secret cluster-wide", func() {
		generated := as[rbacv1.ClusterRole](readDocuments(filepath.Join("config", "rbac", "role.yaml")))
		Expect(generated).To(HaveLen(1))
		scopes := resourceScopes()
		var clusterScoped, namespaced []permission
		for _, p := range permissionsOf(generated[0].Rules) {
			isNamespaced, known := scopes[resourceKey(p)]
			Expect(known).To(BeTrue(), "the API server serves no %s, and the test knows no scope for it", resourceKey(p))
			if isNamespaced {
				namespaced = append(namespaced, p)
			} else {
				clusterScoped = append(clusterScoped, p)
			}
		}
		Expect(namespaced).To(ContainElement(HaveField("Resource", "secrets")), "the manager reads Secrets in the namespaces it serves")

		watched := []string{"team-a", "team-b"}
		r := helmTemplate("laxity", "laxity-system", "--set", "watchNamespaces={"+strings.Join(watched, ",")+"}")
		deployment, _ := manager(r)
		g := grantsTo(r, deployment.Namespace, deployment.Spec.Template.Spec.ServiceAccountName)

		for _, p := range g.Cluster {
			Expect(p.Resource).NotTo(Equal("secrets"), "no Secret rule at cluster scope")
			if p.Resource != "" {
				Expect(scopes[resourceKey(p)]).To(BeFalse(), "%s is namespaced, yet granted cluster-wide", p)
			}
		}
		Expect(cmp.Diff(permissionsOf(slices.Concat(rulesOf(clusterScoped), metricsAuthRules)), g.Cluster)).To(BeEmpty(),
			"cluster-wide: the generated rules on cluster-scoped resources and the metrics checks")
		Expect(g.Namespaced).To(HaveLen(len(watched) + 1))
		Expect(cmp.Diff(permissionsOf(leaderElectionRules), g.Namespaced[deployment.Namespace])).To(BeEmpty())
		for _, ns := range watched {
			Expect(cmp.Diff(namespaced, g.Namespaced[ns])).To(BeEmpty(), "in %s: every generated rule on a namespaced resource", ns)
		}

		// Without watchNamespaces the same rules are granted cluster-wide.
		all := chartDefaults()
		d, _ := manager(all)
		Expect(grantsTo(all, d.Namespace, d.Spec.Template.Spec.ServiceAccountName).Cluster).To(ContainElement(HaveField("Resource", "secrets")))
	})

	It("alerts on and charts only metrics the manager exports", func() {
		exported := exportedMetrics()
		Expect(exported).To(And(HaveKey("laxity_query_slack_seconds"), HaveKey("laxity_pool_nodes_ready")), "the scan finds the manager's metrics")
		r := helmTemplate("laxity", "laxity-system", "--set", "metrics.prometheusRule.enabled=true,metrics.dashboard.enabled=true")

		var expressions []string
		rules := r.ofKind(prometheusRuleKind)
		Expect(rules).To(HaveLen(1))
		alerts := alertRules(rules[0])
		Expect(alerts).NotTo(BeEmpty())
		for _, rule := range alerts {
			expressions = append(expressions, rule.Expr)
		}
		dashboards := as[corev1.ConfigMap](r.ofKind(configMapKind))
		Expect(dashboards).To(HaveLen(1))
		var dashboard grafanaDashboard
		Expect(json.Unmarshal([]byte(dashboards[0].Data["laxity.json"]), &dashboard)).To(Succeed())
		Expect(dashboard.Panels).NotTo(BeEmpty())
		for _, panel := range dashboard.Panels {
			Expect(panel.Targets).NotTo(BeEmpty(), "panel %q", panel.Title)
			for _, target := range panel.Targets {
				expressions = append(expressions, target.Expr)
			}
		}
		for _, v := range dashboard.Templating.List {
			if q, ok := v.Query.(map[string]any); ok {
				expressions = append(expressions, q["query"].(string))
			}
		}

		metricName := regexp.MustCompile(`\blaxity_[a-z0-9_]+\b`)
		used := map[string]bool{}
		for _, expr := range expressions {
			for _, name := range metricName.FindAllString(expr, -1) {
				used[name] = true
			}
		}
		Expect(used).NotTo(BeEmpty())
		for name := range used {
			Expect(exported[name] || exported[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")] || pendingMetrics[name]).
				To(BeTrue(), "%s is used by the chart's alerts or dashboard but the manager does not export it", name)
		}
	})

	It("finds a metric the manager does not export, so that the check above can fail", func() {
		Expect(exportedMetrics()).NotTo(HaveKey("laxity_no_such_metric"))
		Expect(pendingMetrics).NotTo(HaveKey("laxity_no_such_metric"))
	})
})

// pendingMetrics are metrics the dashboard uses that the manager is about
// to export, in work merged separately: remove each name here once its
// metric is defined in the manager's code.
var pendingMetrics = map[string]bool{}

// grafanaDashboard models what the check reads of the dashboard JSON.
type grafanaDashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Query any `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// watchedNamespaces is the --watch-namespaces list of the render's manager.
func watchedNamespaces(r rendered) []string {
	_, container := manager(r)
	if list, found := flagValue(container.Args, "--watch-namespaces"); found {
		return strings.Split(list, ",")
	}
	return nil
}

// machinePoolsScope is the scope of the one resource of the manager's rules
// whose CRD the test's API server does not serve: Cluster API's
// MachinePools are namespaced, as its MachineDeployments are.
var machinePoolsScope = map[string]bool{"machinepools.cluster.x-k8s.io": true}

// resourceScopes asks the API server which resources are namespaced, by
// <resource>.<group> (subresources under their resource).
func resourceScopes() map[string]bool {
	GinkgoHelper()
	dc, err := discovery.NewDiscoveryClientForConfig(restConfig)
	Expect(err).NotTo(HaveOccurred())
	_, lists, err := dc.ServerGroupsAndResources()
	Expect(err).NotTo(HaveOccurred())
	scopes := map[string]bool{}
	for k, v := range machinePoolsScope {
		scopes[k] = v
	}
	for _, list := range lists {
		group := ""
		if i := strings.Index(list.GroupVersion, "/"); i >= 0 {
			group = list.GroupVersion[:i]
		}
		for _, res := range list.APIResources {
			name, _, _ := strings.Cut(res.Name, "/")
			scopes[strings.TrimSuffix(name+"."+group, ".")] = res.Namespaced
		}
	}
	return scopes
}

// resourceKey is a permission's resource as <resource>.<group>.
func resourceKey(p permission) string {
	name, _, _ := strings.Cut(p.Resource, "/")
	return strings.TrimSuffix(name+"."+p.Group, ".")
}

// rulesOf turns permissions back into one rule each.
func rulesOf(perms []permission) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, 0, len(perms))
	for _, p := range perms {
		rule := rbacv1.PolicyRule{APIGroups: []string{p.Group}, Resources: []string{p.Resource}, Verbs: []string{p.Verb}}
		if p.ResourceName != "" {
			rule.ResourceNames = []string{p.ResourceName}
		}
		out = append(out, rule)
	}
	return out
}

// exportedMetrics are the names of the Prometheus metrics laxity's code
// defines: every prometheus.*Opts literal in the Go files outside tests,
// its Namespace and Subsystem (string literals or string constants of the
// same package) joined to its Name.
func exportedMetrics() map[string]bool {
	GinkgoHelper()
	fset := token.NewFileSet()
	filesByDir := map[string][]*ast.File{}
	for _, root := range []string{"controllers", "internal"} {
		Expect(filepath.WalkDir(filepath.Join(repoRoot, root), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			file, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			filesByDir[filepath.Dir(path)] = append(filesByDir[filepath.Dir(path)], file)
			return nil
		})).To(Succeed())
	}
	out := map[string]bool{}
	for _, files := range filesByDir {
		constants := map[string]string{}
		for _, file := range files {
			ast.Inspect(file, func(n ast.Node) bool {
				if spec, ok := n.(*ast.ValueSpec); ok {
					for i, name := range spec.Names {
						if i < len(spec.Values) {
							if lit, ok := spec.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
								constants[name.Name], _ = strconv.Unquote(lit.Value)
							}
						}
					}
				}
				return true
			})
		}
		for _, file := range files {
			ast.Inspect(file, func(n ast.Node) bool {
				if name := metricName(n, constants); name != "" {
					out[name] = true
				}
				return true
			})
		}
	}
	return out
}

// metricName is the full name a prometheus.*Opts literal gives its metric,
// or "" when n is no such literal.
func metricName(n ast.Node, constants map[string]string) string {
	lit, ok := n.(*ast.CompositeLit)
	if !ok {
		return ""
	}
	sel, ok := lit.Type.(*ast.SelectorExpr)
	if !ok || !strings.HasSuffix(sel.Sel.Name, "Opts") {
		return ""
	}
	if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "prometheus" {
		return ""
	}
	parts := map[string]string{}
	for _, elt := range lit.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key, ok := kv.Key.(*ast.Ident)
		if !ok {
			continue
		}
		switch v := kv.Value.(type) {
		case *ast.BasicLit:
			parts[key.Name], _ = strconv.Unquote(v.Value)
		case *ast.Ident:
			parts[key.Name] = constants[v.Name]
		}
	}
	if parts["Name"] == "" {
		return ""
	}
	var name []string
	for _, part := range []string{parts["Namespace"], parts["Subsystem"], parts["Name"]} {
		if part != "" {
			name = append(name, part)
		}
	}
	return strings.Join(name, "_")
}
