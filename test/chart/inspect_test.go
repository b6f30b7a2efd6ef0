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
	podMonitorKind         = schema.GroupKind{Group: "monitoring.coreos.com", Kind: "PodMonitor"}
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
	Affinity            *corev1.Affinity
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
		Affinity:           pod.Affinity,
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

// podMonitor models a monitoring.coreos.com/v1 PodMonitor as the chart
// renders it.
type podMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector            metav1.LabelSelector `json:"selector"`
		PodMetricsEndpoints []monitorEndpoint    `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

type monitorEndpoint struct {
	Port            string `json:"port"`
	Scheme          string `json:"scheme"`
	Path            string `json:"path"`
	HonorLabels     bool   `json:"honorLabels"`
	Interval        string `json:"interval,omitempty"`
	ScrapeTimeout   string `json:"scrapeTimeout,omitempty"`
	BearerTokenFile string `json:"bearerTokenFile,omitempty"`
	Authorization   *struct {
		Type        string                   `json:"type,omitempty"`
		Credentials corev1.SecretKeySelector `json:"credentials"`
	} `json:"authorization,omitempty"`
	TLSConfig   *monitorTLSConfig `json:"tlsConfig,omitempty"`
	Relabelings []struct {
		TargetLabel string `json:"targetLabel"`
		Replacement string `json:"replacement"`
	} `json:"relabelings,omitempty"`
}

// monitorTLSConfig is the part of the Prometheus Operator's TLSConfig the
// installations use.
type monitorTLSConfig struct {
	ServerName         string `json:"serverName,omitempty"`
	InsecureSkipVerify bool   `json:"insecureSkipVerify,omitempty"`
	CA                 *struct {
		Secret    *corev1.SecretKeySelector    `json:"secret,omitempty"`
		ConfigMap *corev1.ConfigMapKeySelector `json:"configMap,omitempty"`
	} `json:"ca,omitempty"`
}

// jobOf is the job label an endpoint's relabelings set, "" if none.
func jobOf(endpoint monitorEndpoint) string {
	for _, r := range endpoint.Relabelings {
		if r.TargetLabel == "job" {
			return r.Replacement
		}
	}
	return ""
}

// serviceAccountTokenFile is where the kubelet projects a pod's
// ServiceAccount token: in Prometheus's pod, Prometheus's own, rotated.
const serviceAccountTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// metricsCertDir is the directory the manager serves its metrics
// certificate from (--metrics-cert-dir), "" when it makes a self-signed one.
func metricsCertDir(r rendered) string {
	_, container := manager(r)
	dir, _ := flagValue(container.Args, "--metrics-cert-dir")
	return dir
}

// expectScrapesManager checks one endpoint of a monitor: it scrapes the port
// the manager serves metrics on, over HTTPS, keeping the metrics' own
// namespace label, and verifies the manager's certificate unless the
// values ask it not to: against the CA of the Secret mounted where the
// manager reads its certificate, for the metrics Service's DNS name.
func expectScrapesManager(r rendered, endpoint monitorEndpoint, namespace string) {
	GinkgoHelper()
	_, container := manager(r)
	secure, _ := flagValue(container.Args, "--metrics-secure")
	Expect(secure).NotTo(Equal("false"), "the manager serves metrics over HTTPS")
	service := as[corev1.Service](r.ofKind(serviceKind))[0]
	Expect(namespace).To(Equal(service.Namespace))
	Expect(endpoint.Scheme).To(Equal("https"))
	Expect(endpoint.Path).To(Equal("/metrics"))
	Expect(endpoint.HonorLabels).To(BeTrue(), "the metrics' namespace label is the schedule's, not the manager's")
	Expect(jobOf(endpoint)).NotTo(BeEmpty(), "the job label the alerts match is set")

	Expect(endpoint.TLSConfig).NotTo(BeNil(), "TLS settings")
	if endpoint.TLSConfig.InsecureSkipVerify {
		return // asked for, in the values
	}
	Expect(endpoint.TLSConfig.ServerName).To(Equal(service.Name+"."+service.Namespace+".svc"), "verified for the metrics Service's DNS name")
	Expect(endpoint.TLSConfig.CA).NotTo(BeNil(), "verified against a CA")
	if ca := endpoint.TLSConfig.CA.Secret; ca != nil {
		Expect(ca.Key).To(Equal("ca.crt"))
		dir := metricsCertDir(r)
		Expect(dir).NotTo(BeEmpty(), "the manager serves the certificate of the Secret whose CA the scrape trusts, not a self-signed one")
		mount := slices.IndexFunc(container.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == dir })
		Expect(mount).NotTo(Equal(-1), "a volume is mounted at --metrics-cert-dir=%s", dir)
		deployment, _ := manager(r)
		volumes := deployment.Spec.Template.Spec.Volumes
		v := slices.IndexFunc(volumes, func(v corev1.Volume) bool { return v.Name == container.VolumeMounts[mount].Name })
		Expect(v).NotTo(Equal(-1))
		Expect(volumes[v].Secret).NotTo(BeNil())
		Expect(volumes[v].Secret.SecretName).To(Equal(ca.Name), "the Secret the manager serves is the one whose CA the scrape trusts")
	} else {
		Expect(endpoint.TLSConfig.CA.ConfigMap).NotTo(BeNil(), "a CA from a Secret or a ConfigMap")
	}
}

// expectMonitorsMetrics checks that the render's only ServiceMonitor scrapes
// the manager's metrics: it sits beside the metrics Service, selects it,
// scrapes the port the manager serves metrics on (see expectScrapesManager),
// with Prometheus's own ServiceAccount token, and the render makes no token
// Secret and no ServiceAccount to scrape with. It returns the
// ServiceMonitor.
func expectMonitorsMetrics(r rendered) serviceMonitor {
	GinkgoHelper()
	monitors := r.ofKind(serviceMonitorKind)
	Expect(monitors).To(HaveLen(1), "one ServiceMonitor")
	Expect(monitors[0].GetAPIVersion()).To(Equal("monitoring.coreos.com/v1"))
	monitor := as[serviceMonitor](monitors)[0]

	_, container := manager(r)
	metricsPort := bindPort(container.Args, "--metrics-bind-address")
	service := as[corev1.Service](r.ofKind(serviceKind))[0]
	selector, err := metav1.LabelSelectorAsSelector(&monitor.Spec.Selector)
	Expect(err).NotTo(HaveOccurred())
	Expect(selector.Empty()).To(BeFalse(), "the ServiceMonitor selects the metrics Service, not every Service")
	Expect(selector.Matches(labels.Set(service.Labels))).To(BeTrue(), "selector %s, Service labels %v", selector, service.Labels)

	Expect(monitor.Spec.Endpoints).To(HaveLen(1))
	endpoint := monitor.Spec.Endpoints[0]
	idx := slices.IndexFunc(service.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == endpoint.Port })
	Expect(idx).NotTo(Equal(-1), "the endpoint's port %q is a port of the metrics Service", endpoint.Port)
	Expect(containerPort(container, service.Spec.Ports[idx].TargetPort)).To(Equal(metricsPort))
	expectScrapesManager(r, endpoint, monitor.Namespace)

	// The manager only answers callers it can authenticate and that may get
	// /metrics: Prometheus's own token, no Secret holding one.
	Expect(endpoint.BearerTokenFile).To(Equal(serviceAccountTokenFile), "Prometheus scrapes with its own ServiceAccount's token")
	Expect(endpoint.Authorization).To(BeNil())
	Expect(r.ofKind(secretKind)).To(BeEmpty(), "no token Secret")
	for _, account := range r.ofKind(serviceAccountKind) {
		Expect(account.GetName()).NotTo(ContainSubstring("scraper"), "no ServiceAccount of its own to scrape with")
	}
	return monitor
}

// expectPodMonitorScrapesManager checks that the render's only PodMonitor
// scrapes the manager's pods as the ServiceMonitor would, with the
// credentials the values name.
func expectPodMonitorScrapesManager(r rendered) podMonitor {
	GinkgoHelper()
	monitors := r.ofKind(podMonitorKind)
	Expect(monitors).To(HaveLen(1), "one PodMonitor")
	monitor := as[podMonitor](monitors)[0]
	deployment, container := manager(r)
	selector, err := metav1.LabelSelectorAsSelector(&monitor.Spec.Selector)
	Expect(err).NotTo(HaveOccurred())
	Expect(selector.Empty()).To(BeFalse())
	Expect(selector.Matches(labels.Set(deployment.Spec.Template.Labels))).To(BeTrue(), "the PodMonitor selects the manager's pods")
	Expect(monitor.Spec.PodMetricsEndpoints).To(HaveLen(1))
	endpoint := monitor.Spec.PodMetricsEndpoints[0]
	Expect(containerPort(container, intstr.FromString(endpoint.Port))).To(Equal(bindPort(container.Args, "--metrics-bind-address")))
	expectScrapesManager(r, endpoint, monitor.Namespace)
	Expect(endpoint.Authorization).NotTo(BeNil(), "a PodMonitor cannot use Prometheus's own token")
	Expect(endpoint.Authorization.Credentials.Name).NotTo(BeEmpty())
	Expect(r.ofKind(secretKind)).To(BeEmpty(), "no token Secret")
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
