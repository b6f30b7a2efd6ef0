// Package tenancy decides what a namespace may make laxity do with laxity's
// own identity: which shared node pools its schedules may resize, which
// service accounts its SparkApplications may run as, whether they may
// mount host paths or run privileged, which EMR on EKS virtual clusters,
// execution roles, node groups and endpoints its schedules may use, which
// buckets its queries may read with laxity's credentials and which
// PriorityClasses its placeholder pods may have.
//
// A namespace may use a thing when one of these grants it:
//
//   - an administrator's TenantPolicy that selects the namespace (Grant);
//   - for a node pool, the pool object's own annotation
//     laxity.dev/allowed-namespaces (PoolAnnotation): whoever may annotate
//     the pool may resize it anyway;
//   - for service accounts, the manager's default list
//     (Namespace.DefaultServiceAccounts), and always the namespace's own
//     "default" service account, which any pod of the namespace gets
//     without asking.
//
// The package is pure: it takes what the caller read (the grants of the
// policies that select the namespace, a pool's annotation, a decoded
// SparkApplication template) and returns a *Refusal naming the field and
// the missing grant, or nil. It imports no Kubernetes package.
package tenancy

import (
	"fmt"
	"slices"
	"strings"
)

// AllowedNamespacesAnnotation is the annotation that, on a node pool object
// (a Karpenter NodePool, a Cluster API MachineDeployment or MachinePool), lists the namespaces
// whose ElasticSchedules may resize it, comma-separated ("team-a,team-b"),
// or "*" for every namespace.
const AllowedNamespacesAnnotation = "laxity.dev/allowed-namespaces"

// Any is the entry of a grant's list or of the annotation that matches every
// value.
const Any = "*"

// DefaultServiceAccount is the service account a pod runs as when it names
// none; every namespace may use its own.
const DefaultServiceAccount = "default"

// Pool names a node pool object by API group, kind and name.
type Pool struct {
	Group, Kind, Name string
}

func (p Pool) String() string {
	if p.Group == "" {
		return p.Kind + " " + p.Name
	}
	return fmt.Sprintf("%s.%s %s", p.Kind, p.Group, p.Name)
}

// Nodegroup names an EKS managed node group.
type Nodegroup struct {
	Cluster, Name string
}

// Grant is what one administrator's policy grants the namespaces it
// selects. Every list may hold Any.
type Grant struct {
	// Policy names the policy, for messages.
	Policy string
	// Pools may be resized by the namespace's schedules; Name may be Any.
	Pools []Pool
	// ServiceAccounts may run the namespace's SparkApplications.
	ServiceAccounts []string
	// HostPath allows hostPath volumes in SparkApplication templates;
	// Privileged allows privileged containers, added capabilities and the
	// host's network, PID and IPC namespaces.
	HostPath, Privileged bool
	// VirtualClusters, ExecutionRoles, Nodegroups and Endpoints are the EMR
	// on EKS resources the namespace's schedules may use; Nodegroup.Name
	// may be Any.
	VirtualClusters, ExecutionRoles []string
	Nodegroups                      []Nodegroup
	Endpoints                       []string
	// Buckets may be read with laxity's own credentials (an object-storage
	// input without a secretRef).
	Buckets []string
	// PriorityClasses may be given to the namespace's placeholder pods and
	// to its SparkApplications' pods.
	PriorityClasses []string
	// Schedulers may place the namespace's SparkApplications' pods;
	// SchedulerQueues are the batch-scheduler queues they may submit to.
	Schedulers, SchedulerQueues []string
	// PodSecurityLevel is the Pod Security Standards level the
	// namespace's SparkApplications' pods are held to ("" for restricted).
	PodSecurityLevel string
}

// Namespace is what a namespace may use: the grants of the policies that
// select it and the manager's defaults.
type Namespace struct {
	Name   string
	Grants []Grant
	// DefaultServiceAccounts may run SparkApplications in every namespace.
	DefaultServiceAccounts []string
}

// Refusal says that a namespace may not use what a field names, and how an
// administrator would grant it.
type Refusal struct {
	// Field is the path of the offending field, such as
	// spec.nodePool.backend.scale.
	Field string
	// What is the thing refused, such as "NodePool.karpenter.sh shared".
	What string
	// Missing says which permission is missing and how to grant it.
	Missing string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("%s: %s is not permitted: %s", r.Field, r.What, r.Missing)
}

// contains says whether list holds value or Any.
func contains(list []string, value string) bool {
	return slices.Contains(list, Any) || slices.Contains(list, value)
}

// granted says whether any grant's list, as picked, holds value.
func (n Namespace) granted(pick func(Grant) []string, value string) bool {
	return slices.ContainsFunc(n.Grants, func(g Grant) bool { return contains(pick(g), value) })
}

// policyHint is how a refusal says which policy field would grant it.
func (n Namespace) policyHint(field string) string {
	return fmt.Sprintf("no TenantPolicy selecting namespace %s grants it (spec.%s)", n.Name, field)
}

// PoolAnnotation is a pool object's laxity.dev/allowed-namespaces
// annotation as read: Present is false when the object has none.
type PoolAnnotation struct {
	Value   string
	Present bool
}

// Allows says whether the annotation lists namespace (or Any).
func (a PoolAnnotation) Allows(namespace string) bool {
	if !a.Present {
		return false
	}
	for _, entry := range strings.Split(a.Value, ",") {
		if e := strings.TrimSpace(entry); e == Any || e == namespace {
			return true
		}
	}
	return false
}

// Pool decides whether the namespace's schedules may resize pool, whose
// annotation is as given; field is the schedule's field naming the pool.
func (n Namespace) Pool(field string, pool Pool, annotation PoolAnnotation) *Refusal {
	if annotation.Allows(n.Name) {
		return nil
	}
	for _, g := range n.Grants {
		for _, p := range g.Pools {
			if p.Group == pool.Group && p.Kind == pool.Kind && (p.Name == Any || p.Name == pool.Name) {
				return nil
			}
		}
	}
	why := fmt.Sprintf("the pool has no %s annotation", AllowedNamespacesAnnotation)
	if annotation.Present {
		why = fmt.Sprintf("its %s annotation (%q) does not list namespace %s", AllowedNamespacesAnnotation, annotation.Value, n.Name)
	}
	return &Refusal{
		Field: field,
		What:  "resizing " + pool.String(),
		Missing: fmt.Sprintf("%s, and %s; nothing is resized until an administrator grants it",
			why, n.policyHint("pools")),
	}
}

// ServiceAccount decides whether the namespace's SparkApplications may run
// as the service account name, which field names.
func (n Namespace) ServiceAccount(field, name string) *Refusal {
	if name == DefaultServiceAccount || contains(n.DefaultServiceAccounts, name) ||
		n.granted(func(g Grant) []string { return g.ServiceAccounts }, name) {
		return nil
	}
	return &Refusal{
		Field: field,
		What:  fmt.Sprintf("running as service account %s", name),
		Missing: fmt.Sprintf("it is not among the manager's allowed service accounts (%s) and %s",
			listOrNone(n.DefaultServiceAccounts), n.policyHint("serviceAccounts")),
	}
}

func listOrNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

// HostPath decides whether the namespace's SparkApplications may mount the
// host path that field names.
func (n Namespace) HostPath(field string) *Refusal {
	if slices.ContainsFunc(n.Grants, func(g Grant) bool { return g.HostPath }) {
		return nil
	}
	return &Refusal{Field: field, What: "a hostPath volume", Missing: n.policyHint("allowHostPath")}
}

// Privileged decides whether the namespace's SparkApplications may have
// what field sets: a privileged container, added capabilities, or the
// host's network, PID or IPC namespace. allowPrivileged grants it, and so
// does the privileged Pod Security level, which is the same.
func (n Namespace) Privileged(field, what string) *Refusal {
	if slices.ContainsFunc(n.Grants, func(g Grant) bool { return g.Privileged || g.PodSecurityLevel == LevelPrivileged }) {
		return nil
	}
	return &Refusal{Field: field, What: what, Missing: n.policyHint("allowPrivileged")}
}

// EMR is what an emrContainers backend uses.
type EMR struct {
	VirtualClusterID, ExecutionRoleARN string
	Nodegroup                          Nodegroup
	// Endpoint is "" for AWS's regional endpoints, which need no grant.
	Endpoint string
}

// EMR decides whether the namespace's schedules may use the EMR on EKS
// resources of e, named by the fields under field
// (spec.nodePool.backend.emrContainers). It returns the first refusal, in
// the order of the fields.
func (n Namespace) EMR(field string, e EMR) *Refusal {
	check := func(sub, what, policyField string, ok bool) *Refusal {
		if ok {
			return nil
		}
		return &Refusal{Field: field + "." + sub, What: what, Missing: n.policyHint("emr." + policyField)}
	}
	if r := check("virtualClusterId", "EMR on EKS virtual cluster "+e.VirtualClusterID, "virtualClusterIds",
		n.granted(func(g Grant) []string { return g.VirtualClusters }, e.VirtualClusterID)); r != nil {
		return r
	}
	if r := check("executionRoleArn", "execution role "+e.ExecutionRoleARN, "executionRoleArns",
		n.granted(func(g Grant) []string { return g.ExecutionRoles }, e.ExecutionRoleARN)); r != nil {
		return r
	}
	nodegroup := slices.ContainsFunc(n.Grants, func(g Grant) bool {
		return slices.ContainsFunc(g.Nodegroups, func(ng Nodegroup) bool {
			return ng.Cluster == e.Nodegroup.Cluster && (ng.Name == Any || ng.Name == e.Nodegroup.Name)
		})
	})
	if r := check("nodegroupName", fmt.Sprintf("resizing node group %s of EKS cluster %s", e.Nodegroup.Name, e.Nodegroup.Cluster), "nodegroups", nodegroup); r != nil {
		return r
	}
	if e.Endpoint == "" {
		return nil
	}
	return check("endpoint", "AWS endpoint "+e.Endpoint, "endpoints",
		n.granted(func(g Grant) []string { return g.Endpoints }, e.Endpoint))
}

// Bucket decides whether the namespace's queries may read bucket with
// laxity's own credentials; field names the input
// (spec.input.objectStore). Reading with credentials of the namespace's own
// Secret needs no grant.
func (n Namespace) Bucket(field, bucket string) *Refusal {
	if n.granted(func(g Grant) []string { return g.Buckets }, bucket) {
		return nil
	}
	return &Refusal{
		Field: field + ".bucket",
		What:  fmt.Sprintf("reading bucket %s with laxity's own credentials", bucket),
		Missing: fmt.Sprintf("set %s.secretRef to a Secret with the namespace's own credentials, or have an administrator grant it: %s",
			field, n.policyHint("buckets")),
	}
}

// PriorityClass decides whether the namespace's placeholder pods may have
// the PriorityClass name, which field names; "" is laxity's own
// placeholder class, below every other pod, which needs no grant.
func (n Namespace) PriorityClass(field, name string) *Refusal {
	if name == "" || n.granted(func(g Grant) []string { return g.PriorityClasses }, name) {
		return nil
	}
	return &Refusal{
		Field:   field,
		What:    "placeholder pods at PriorityClass " + name,
		Missing: fmt.Sprintf("%s; leave it unset for laxity's own placeholder class, which preempts nothing", n.policyHint("priorityClasses")),
	}
}
