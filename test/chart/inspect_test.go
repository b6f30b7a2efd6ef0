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
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The kinds the installations are made of.
var (
	namespaceKind          = schema.GroupKind{Kind: "Namespace"}
	crdKind                = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
	deploymentKind         = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	serviceKind            = schema.GroupKind{Kind: "Service"}
	serviceAccountKind     = schema.GroupKind{Kind: "ServiceAccount"}
	clusterRoleKind        = schema.GroupKind{Group: rbacv1.GroupName, Kind: "ClusterRole"}
	clusterRoleBindingKind = schema.GroupKind{Group: rbacv1.GroupName, Kind: "ClusterRoleBinding"}
	roleKind               = schema.GroupKind{Group: rbacv1.GroupName, Kind: "Role"}
	roleBindingKind        = schema.GroupKind{Group: rbacv1.GroupName, Kind: "RoleBinding"}
	serviceMonitorKind     = schema.GroupKind{Group: "monitoring.coreos.com", Kind: "ServiceMonitor"}
	prometheusRuleKind     = schema.GroupKind{Group: "monitoring.coreos.com", Kind: "PrometheusRule"}
	secretKind             = schema.GroupKind{Kind: "Secret"}
	configMapKind          = schema.GroupKind{Kind: "ConfigMap"}
	pdbKind                = schema.GroupKind{Group: "policy", Kind: "PodDisruptionBudget"}
)

// rendered is the objects one `helm template` or `kustomize build` printed.
type rendered []*unstructured.Unstructured

func (r rendered) ofKind(kinds ...schema.GroupKind) rendered {
	var out rendered
	for _, obj := range r {
		if slices.Contains(kinds, obj.GroupVersionKind().GroupKind()) {
			out = append(out, obj)
		}
	}
	return out
}

func (r rendered) without(kinds ...schema.GroupKind) rendered {
	var out rendered
	for _, obj := range r {
		if !slices.Contains(kinds, obj.GroupVersionKind().GroupKind()) {
			out = append(out, obj)
		}
	}
	return out
}

// clientObjects are copies of the objects to create, so that creating them
// leaves the render as it was.
func (r rendered) clientObjects() []client.Object {
	out := make([]client.Object, 0, len(r))
	for _, obj := range r {
		out = append(out, obj.DeepCopy())
	}
	return out
}

// as converts objects to the typed T, rejecting fields T does not have.
func as[T any](objs rendered) []T {
	GinkgoHelper()
	out := make([]T, 0, len(objs))
	for _, obj := range objs {
		var typed T
		Expect(runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, &typed, true)).To(Succeed(),
			"decoding %s %s", obj.GetKind(), obj.GetName())
		out = append(out, typed)
	}
	return out
}

// manager is the installation's only Deployment and its only container, the
// laxity manager.
func manager(r rendered) (appsv1.Deployment, corev1.Container) {
	GinkgoHelper()
	deployments := as[appsv1.Deployment](r.ofKind(deploymentKind))
	Expect(deployments).To(HaveLen(1), "the manager's Deployment")
	deployment := deployments[0]
	Expect(deployment.Spec.Template.Spec.InitContainers).To(BeEmpty())
	Expect(deployment.Spec.Template.Spec.Containers).To(HaveLen(1), "the manager's container")
	return deployment, deployment.Spec.Template.Spec.Containers[0]
}

// flagValue is the value of --name in args, written --name=value; a bare
// --name has the value "". found reports whether the flag is there.
func flagValue(args []string, name string) (value string, found bool) {
	for _, arg := range args {
		if arg == name {
			return "", true
		}
		if value, ok := strings.CutPrefix(arg, name+"="); ok {
			return value, true
		}
	}
	return "", false
}

// bindPort is the port of a host:port flag such as --metrics-bind-address.
func bindPort(args []string, name string) int32 {
	GinkgoHelper()
	address, found := flagValue(args, name)
	Expect(found).To(BeTrue(), "%s in %q", name, args)
	_, port, err := net.SplitHostPort(address)
	Expect(err).NotTo(HaveOccurred(), "%s=%s", name, address)
	number, err := strconv.ParseInt(port, 10, 32)
	Expect(err).NotTo(HaveOccurred(), "%s=%s", name, address)
	return int32(number)
}

// containerPort resolves a port given by number or by name, as probes and a
// Service's targetPort give it, to a port the container declares: 0 if it
// declares no such port.
func containerPort(c corev1.Container, port intstr.IntOrString) int32 {
	for _, p := range c.Ports {
		if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
			return p.ContainerPort
		}
	}
	return 0
}

// selects reports whether a Service's or Deployment's label selector
// (map form) matches the labels.
func selects(selector, objectLabels map[string]string) bool {
	return len(selector) > 0 && labels.SelectorFromSet(selector).Matches(labels.Set(objectLabels))
}

// permission is one verb on one resource or non-resource URL: a PolicyRule
// expanded, so that rules compare by what they allow rather than by how they
// are grouped.
type permission struct {
	Group, Resource, ResourceName, NonResourceURL, Verb string
}

func (p permission) String() string {
	if p.NonResourceURL != "" {
		return p.Verb + " " + p.NonResourceURL
	}
	return fmt.Sprintf("%s %s.%s/%s", p.Verb, p.Resource, p.Group, p.ResourceName)
}

// permissionsOf expands rules into their sorted, distinct permissions.
func permissionsOf(rules []rbacv1.PolicyRule) []permission {
	var out []permission
	for _, rule := range rules {
		for _, verb := range rule.Verbs {
			for _, url := range rule.NonResourceURLs {
				out = append(out, permission{NonResourceURL: url, Verb: verb})
			}
			names := rule.ResourceNames
			if len(names) == 0 {
				names = []string{""}
			}
			for _, group := range rule.APIGroups {
				for _, res := range rule.Resources {
					for _, name := range names {
						out = append(out, permission{Group: group, Resource: res, ResourceName: name, Verb: verb})
					}
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b permission) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(out)
}

// grants is what an installation's RBAC allows one ServiceAccount.
type grants struct {
	// Cluster is granted everywhere, through ClusterRoleBindings.
	Cluster []permission
	// Namespaced is granted in one namespace each, through RoleBindings.
	Namespaced map[string][]permission
	// ClusterRoles are the names of the ClusterRoles bound cluster-wide.
	ClusterRoles []string
}

// grantsTo collects what the render's bindings grant the ServiceAccount
// namespace/name; every binding must refer to a role the render has.
func grantsTo(r rendered, namespace, name string) grants {
	GinkgoHelper()
	clusterRoles := map[string][]rbacv1.PolicyRule{}
	for _, role := range as[rbacv1.ClusterRole](r.ofKind(clusterRoleKind)) {
		clusterRoles[role.Name] = role.Rules
	}
	roles := map[string][]rbacv1.PolicyRule{}
	for _, role := range as[rbacv1.Role](r.ofKind(roleKind)) {
		roles[role.Namespace+"/"+role.Name] = role.Rules
	}
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}

	var g grants
	var cluster []rbacv1.PolicyRule
	for _, binding := range as[rbacv1.ClusterRoleBinding](r.ofKind(clusterRoleBindingKind)) {
		rules, found := clusterRoles[binding.RoleRef.Name]
		Expect(binding.RoleRef.Kind).To(Equal("ClusterRole"), "ClusterRoleBinding %s", binding.Name)
		Expect(found).To(BeTrue(), "ClusterRoleBinding %s refers to ClusterRole %s, which is not installed", binding.Name, binding.RoleRef.Name)
		if slices.Contains(binding.Subjects, subject) {
			cluster = append(cluster, rules...)
			g.ClusterRoles = append(g.ClusterRoles, binding.RoleRef.Name)
		}
	}
	g.Cluster = permissionsOf(cluster)

	namespaced := map[string][]rbacv1.PolicyRule{}
	for _, binding := range as[rbacv1.RoleBinding](r.ofKind(roleBindingKind)) {
		var rules []rbacv1.PolicyRule
		var found bool
		if binding.RoleRef.Kind == "ClusterRole" {
			rules, found = clusterRoles[binding.RoleRef.Name]
		} else {
			rules, found = roles[binding.Namespace+"/"+binding.RoleRef.Name]
		}
		Expect(found).To(BeTrue(), "RoleBinding %s/%s refers to %s %s, which is not installed",
			binding.Namespace, binding.Name, binding.RoleRef.Kind, binding.RoleRef.Name)
		if slices.Contains(binding.Subjects, subject) {
			namespaced[binding.Namespace] = append(namespaced[binding.Namespace], rules...)
		}
	}
	g.Namespaced = map[string][]permission{}
	for ns, rules := range namespaced {
		g.Namespaced[ns] = permissionsOf(rules)
	}
	return g
}

// substance is what an installation does, without what may differ between
// the chart and the kustomize manifests: names, labels, the namespace and the
// image.
type substance struct {
	// Kinds lists the kind of every object but the Namespace and the CRDs,
	// which the chart leaves to Helm.
	Kinds               []string
	Replicas            *int32
	Args                []string
	Ports               []corev1.ContainerPort
	LivenessProbe       *corev1.Probe
	ReadinessProbe      *corev1.Probe
	PodSecurityContext  *corev1.PodSecurityContext
	SecurityContext     *corev1.SecurityContext
	Resources           corev1.ResourceRequirements
	ClusterGrants       []permission
	OwnNamespaceGrants  []permission
	UnboundClusterRoles [][]permission
	MetricsServicePorts []corev1.ServicePort
}

func substanceOf(r rendered) substance {
	GinkgoHelper()
	deployment, container := manager(r)
	pod := deployment.Spec.Template.Spec
	s := substance{
		Replicas:           deployment.Spec.Replicas,
		Args:               slices.Sorted(slices.Values(container.Args)),
		Ports:              container.Ports,
		LivenessProbe:      container.LivenessProbe,
		ReadinessProbe:     container.ReadinessProbe,
		PodSecurityContext: pod.SecurityContext,
		SecurityContext:    container.SecurityContext,
		Resources:          container.Resources,
	}
	for _, obj := range r.without(namespaceKind, crdKind) {
		s.Kinds = append(s.Kinds, obj.GroupVersionKind().GroupKind().String())
	}
	slices.Sort(s.Kinds)

	g := grantsTo(r, deployment.Namespace, pod.ServiceAccountName)
	s.ClusterGrants = g.Cluster
	s.OwnNamespaceGrants = g.Namespaced[deployment.Namespace]
	Expect(g.Namespaced).To(HaveLen(1), "the manager has rights in its own namespace only")
	for _, role := range as[rbacv1.ClusterRole](r.ofKind(clusterRoleKind)) {
		if !slices.Contains(g.ClusterRoles, role.Name) {
			s.UnboundClusterRoles = append(s.UnboundClusterRoles, permissionsOf(role.Rules))
		}
	}
	slices.SortFunc(s.UnboundClusterRoles, func(a, b []permission) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })

	services := as[corev1.Service](r.ofKind(serviceKind))
	Expect(services).To(HaveLen(1), "the metrics Service")
	s.MetricsServicePorts = services[0].Spec.Ports
	return s
}

// quantitiesByValue compares resource quantities by what they amount to, as
// the API server does ("1000m" is "1").
var quantitiesByValue = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// serviceMonitor models the fields of a monitoring.coreos.com/v1
// ServiceMonitor that the installations use. Decoding rejects any other
// field, so that a misspelt one fails: extend the model when the chart or
// config/prometheus use more of the API.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []monitorEndpoint    `json:"endpoints"`
	} `json:"spec"`
}

type monitorEndpoint struct {
	Port          string `json:"port"`
	Scheme        string `json:"scheme"`
	Path          string `json:"path"`
	HonorLabels   bool   `json:"honorLabels"`
	Interval      string `json:"interval,omitempty"`
	ScrapeTimeout string `json:"scrapeTimeout,omitempty"`
	Authorization *struct {
		Type        string                   `json:"type"`
		Credentials corev1.SecretKeySelector `json:"credentials"`
	} `json:"authorization,omitempty"`
	TLSConfig *struct {
		InsecureSkipVerify bool `json:"insecureSkipVerify"`
	} `json:"tlsConfig,omitempty"`
}

// expectMonitorsMetrics checks that the render's only ServiceMonitor scrapes
// the manager's metrics: it sits beside the metrics Service, selects it, and
// scrapes the port the manager serves metrics on, over HTTPS, keeping the
// metrics' own namespace label, with the token of a ServiceAccount the
// render allows to read the metrics. It returns the ServiceMonitor.
func expectMonitorsMetrics(r rendered) serviceMonitor {
	GinkgoHelper()
	monitors := r.ofKind(serviceMonitorKind)
	Expect(monitors).To(HaveLen(1), "one ServiceMonitor")
	Expect(monitors[0].GetAPIVersion()).To(Equal("monitoring.coreos.com/v1"))
	monitor := as[serviceMonitor](monitors)[0]

	_, container := manager(r)
	secure, _ := flagValue(container.Args, "--metrics-secure")
	Expect(secure).NotTo(Equal("false"), "the manager serves metrics over HTTPS")
	metricsPort := bindPort(container.Args, "--metrics-bind-address")
	service := as[corev1.Service](r.ofKind(serviceKind))[0]
	Expect(monitor.Namespace).To(Equal(service.Namespace))
	selector, err := metav1.LabelSelectorAsSelector(&monitor.Spec.Selector)
	Expect(err).NotTo(HaveOccurred())
	Expect(selector.Empty()).To(BeFalse(), "the ServiceMonitor selects the metrics Service, not every Service")
	Expect(selector.Matches(labels.Set(service.Labels))).To(BeTrue(), "selector %s, Service labels %v", selector, service.Labels)

	Expect(monitor.Spec.Endpoints).To(HaveLen(1))
	endpoint := monitor.Spec.Endpoints[0]
	idx := slices.IndexFunc(service.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == endpoint.Port })
	Expect(idx).NotTo(Equal(-1), "the endpoint's port %q is a port of the metrics Service", endpoint.Port)
	Expect(containerPort(container, service.Spec.Ports[idx].TargetPort)).To(Equal(metricsPort))
	Expect(endpoint.Scheme).To(Equal("https"))
	Expect(endpoint.Path).To(Equal("/metrics"))
	Expect(endpoint.HonorLabels).To(BeTrue(), "the metrics' namespace label is the schedule's, not the manager's")
	Expect(endpoint.TLSConfig).NotTo(BeNil())
	Expect(endpoint.TLSConfig.InsecureSkipVerify).To(BeTrue(), "the manager's certificate is self-signed")

	// The manager only answers callers it can authenticate and that may get
	// /metrics: the token must be a ServiceAccount's, one bound to that.
	Expect(endpoint.Authorization).NotTo(BeNil(), "the manager only answers callers it can authenticate")
	Expect(strings.ToLower(endpoint.Authorization.Type)).To(BeElementOf("", "bearer"))
	Expect(endpoint.Authorization.Credentials.Key).To(Equal(corev1.ServiceAccountTokenKey))
	secrets := as[corev1.Secret](r.ofKind(secretKind))
	idx = slices.IndexFunc(secrets, func(s corev1.Secret) bool {
		return s.Namespace == monitor.Namespace && s.Name == endpoint.Authorization.Credentials.Name
	})
	Expect(idx).NotTo(Equal(-1), "the token Secret %s is rendered beside the ServiceMonitor", endpoint.Authorization.Credentials.Name)
	token := secrets[idx]
	Expect(token.Type).To(Equal(corev1.SecretTypeServiceAccountToken))
	account := token.Annotations[corev1.ServiceAccountNameKey]
	Expect(account).NotTo(BeEmpty())
	Expect(slices.ContainsFunc(as[corev1.ServiceAccount](r.ofKind(serviceAccountKind)), func(a corev1.ServiceAccount) bool {
		return a.Namespace == token.Namespace && a.Name == account
	})).To(BeTrue(), "the scraper's ServiceAccount %s is rendered", account)
	Expect(grantsTo(r, token.Namespace, account).Cluster).To(Equal(permissionsOf(metricsReaderRules)), "the scraper may read the metrics, and nothing else")
	return monitor
}

// alertRule is one rule of a PrometheusRule.
type alertRule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// alertRules are the rules of every group of a PrometheusRule; decoding
// rejects fields the model does not have.
func alertRules(obj *unstructured.Unstructured) []alertRule {
	GinkgoHelper()
	var rule struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
		Spec              struct {
			Groups []struct {
				Name  string      `json:"name"`
				Rules []alertRule `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	Expect(runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, &rule, true)).To(Succeed())
	var out []alertRule
	for _, g := range rule.Spec.Groups {
		out = append(out, g.Rules...)
	}
	return out
}
