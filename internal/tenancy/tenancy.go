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
	"math"
	"slices"
	"strings"
	"time"
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

// Pool names a node pool object by API group, kind and name. In a grant,
// MaxNodes is its ceiling (see Ceiling), NoCeiling (0) when it sets none.
type Pool struct {
	Group, Kind, Name string
	MaxNodes          int32
}

// NoCeiling is the MaxNodes of a grant that sets no ceiling.
const NoCeiling int32 = 0

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
	// Buffers are the nodes the namespace's capacityBuffer schedules may
	// keep room on, each with its ceilings.
	Buffers []BufferGrant

	// Schedulers may place the namespace's SparkApplications' pods;
	// SchedulerQueues are the batch-scheduler queues they may submit to.
	Schedulers, SchedulerQueues []string
	// PodSecurityLevel is the Pod Security Standards level the
	// namespace's SparkApplications' pods are held to ("" for restricted).
	PodSecurityLevel string
}

// BufferGrant lets the capacityBuffer backend keep room on the nodes
// NodeSelector selects: a schedule's node selector must hold each of its
// labels with the same value. MaxNodes (NoCeiling, 0, for none) and
// MaxResources (the buffered pods' requests all together, by resource
// name, in the resource's units) are its ceilings.
type BufferGrant struct {
	NodeSelector map[string]string
	MaxNodes     int32
	MaxResources map[string]float64
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
	// Reason is the condition reason the refusal is reported with: ""
	// for NotPermitted (a grant is missing), ReasonPoolNotFound or
	// ReasonPoolInUse.
	Reason string
}

// The reasons of refusals that are not a missing grant.
const (
	// ReasonPoolNotFound: the pool object the schedule names does not exist.
	ReasonPoolNotFound = "PoolNotFound"
	// ReasonPoolInUse: another schedule resizes the same pool object.
	ReasonPoolInUse = "PoolInUse"
)

func (r *Refusal) Error() string {
	switch r.Reason {
	case ReasonPoolNotFound, ReasonPoolInUse:
		return fmt.Sprintf("%s: %s", r.Field, r.Missing)
	}
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

// Ceiling is the most nodes laxity may write to a schedule's pool. The zero
// Ceiling sets none.
type Ceiling struct {
	// Set says whether there is a ceiling; Nodes is it.
	Set   bool
	Nodes int32
	// By says what sets it, for messages: the grant's field, or the
	// ResourceQuota.
	By string
}

func (c Ceiling) String() string {
	if !c.Set {
		return "no ceiling"
	}
	return fmt.Sprintf("%d nodes (%s)", c.Nodes, c.By)
}

// Cap is n, lowered to the ceiling.
func (c Ceiling) Cap(n int32) int32 {
	if c.Set && n > c.Nodes {
		return max(c.Nodes, 0)
	}
	return n
}

// Min is the lower of the two ceilings (both hold).
func (c Ceiling) Min(o Ceiling) Ceiling {
	switch {
	case !o.Set:
		return c
	case !c.Set, o.Nodes < c.Nodes:
		return o
	}
	return c
}

// loosest is the higher of two ceilings, each from a grant: grants add up,
// so the namespace may use the most generous one.
func loosest(a, b Ceiling) Ceiling {
	if !a.Set || !b.Set {
		return Ceiling{}
	}
	if b.Nodes > a.Nodes {
		return b
	}
	return a
}

// Sizes is the schedule's ascending pool sizes within the ceiling: each
// size above it becomes the ceiling, kept once; changed says whether any
// was lowered. A ceiling of 0 leaves no size.
func (c Ceiling) Sizes(sizes []int32) (capped []int32, changed bool) {
	for _, s := range sizes {
		if v := c.Cap(s); v != s {
			changed = true
			s = v
		}
		if s > 0 && (len(capped) == 0 || capped[len(capped)-1] < s) {
			capped = append(capped, s)
		}
	}
	return capped, changed
}

// poolCeiling is the ceiling of a grant's MaxNodes.
func poolCeiling(maxNodes int32, by string) Ceiling {
	if maxNodes <= NoCeiling {
		return Ceiling{}
	}
	return Ceiling{Set: true, Nodes: maxNodes, By: by}
}

// PoolCeiling is the ceiling on pool for the namespace's schedules, which
// Pool permits: none when the pool's annotation allows the namespace (its
// writer holds the pool's own limits), else the most generous of the
// matching grants' maxNodes.
func (n Namespace) PoolCeiling(pool Pool, annotation PoolAnnotation) Ceiling {
	if annotation.Allows(n.Name) {
		return Ceiling{}
	}
	var out Ceiling
	found := false
	for _, g := range n.Grants {
		for i, p := range g.Pools {
			if p.Group != pool.Group || p.Kind != pool.Kind || (p.Name != Any && p.Name != pool.Name) {
				continue
			}
			c := poolCeiling(p.MaxNodes, fmt.Sprintf("TenantPolicy %s spec.pools[%d].maxNodes", g.Policy, i))
			if !found {
				out, found = c, true
			} else {
				out = loosest(out, c)
			}
		}
	}
	return out
}

// PoolNotFound is the refusal of a pool object that does not exist: not a
// missing grant, and nothing to resize.
func PoolNotFound(field string, pool Pool) *Refusal {
	return &Refusal{
		Field: field, What: "resizing " + pool.String(), Reason: ReasonPoolNotFound,
		Missing: fmt.Sprintf("%s was not found; nothing is resized until it exists", pool.String()),
	}
}

// selects says whether a schedule's node selector holds every label of the
// grant's, with the same value: it then selects only nodes the grant's
// selects.
func selects(grant, schedule map[string]string) bool {
	for k, v := range grant {
		if got, ok := schedule[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// selectorString is a node selector as k=v pairs in key order.
func selectorString(sel map[string]string) string {
	if len(sel) == 0 {
		return "{} (every node)"
	}
	keys := make([]string, 0, len(sel))
	for k := range sel {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + sel[k]
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// Buffer decides whether the namespace's schedules may keep room with a
// CapacityBuffer on the nodes nodeSelector selects, one pod of perNode
// requests (by resource name, in the resource's units) per node; field
// is the backend's field (spec.nodePool.backend.capacityBuffer). When a
// grant permits it, the ceiling is the most generous of the matching
// grants': each the lower of its maxNodes and of how many pods fit in its
// maxResources.
func (n Namespace) Buffer(field string, nodeSelector map[string]string, perNode map[string]float64) (Ceiling, *Refusal) {
	var out Ceiling
	found := false
	for _, g := range n.Grants {
		for i, b := range g.Buffers {
			if !selects(b.NodeSelector, nodeSelector) {
				continue
			}
			c := bufferCeiling(b, perNode, fmt.Sprintf("TenantPolicy %s spec.capacityBuffers[%d]", g.Policy, i))
			if !found {
				out, found = c, true
			} else {
				out = loosest(out, c)
			}
		}
	}
	if found {
		return out, nil
	}
	return Ceiling{}, &Refusal{
		Field:   field,
		What:    "keeping room with a CapacityBuffer on the nodes spec.nodePool.nodeSelector selects, " + selectorString(nodeSelector),
		Missing: n.policyHint("capacityBuffers") + " with a nodeSelector this one holds; nothing is written until an administrator grants it",
	}
}

// bufferCeiling is one buffer grant's ceiling for pods of perNode requests.
func bufferCeiling(b BufferGrant, perNode map[string]float64, by string) Ceiling {
	c := poolCeiling(b.MaxNodes, by+".maxNodes")
	names := make([]string, 0, len(b.MaxResources))
	for name := range b.MaxResources {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		per := perNode[name]
		if per <= 0 {
			continue
		}
		c = c.Min(Ceiling{Set: true, Nodes: fitting(b.MaxResources[name], per),
			By: fmt.Sprintf("%s.maxResources.%s: %g, %g per node", by, name, b.MaxResources[name], per)})
	}
	return c
}

// fitting is how many pods of per fit in room, within int32, never
// negative.
func fitting(room, per float64) int32 {
	n := math.Floor(room / per)
	switch {
	case math.IsNaN(n) || n < 0:
		return 0
	case n > math.MaxInt32:
		return math.MaxInt32
	}
	return int32(n)
}

// Quota is a namespace's ResourceQuota as read: its hard limits and what
// is used, by quota key ("requests.cpu", "pods", ...), in the resource's
// units.
type Quota struct {
	Name       string
	Hard, Used map[string]float64
}

// quotaKeys are the quota keys one pod of requests counts against, with
// how much of each. A buffered pod has requests only; it counts against
// limits.* quotas with its requests too, the least a pod of its size
// running there would have as limits, so that a namespace bounded by
// limits alone is bounded here as well.
func quotaKeys(requests map[string]float64) map[string]float64 {
	out := map[string]float64{"pods": 1, "count/pods": 1}
	for name, v := range requests {
		out["requests."+name] += v
		out["limits."+name] += v
		switch name {
		case "cpu", "memory", "ephemeral-storage":
			out[name] += v
		}
	}
	return out
}

// QuotaCeiling is how many pods of requests the namespace's quotas hold:
// for every quota and every key the pod counts against, what is left of
// its hard limit (its hard limit alone when used is false) divided by the
// pod's share. Buffered pods never run, so the quota system does not count
// them; laxity counts them as if they did.
func QuotaCeiling(quotas []Quota, requests map[string]float64, used bool) Ceiling {
	keys := quotaKeys(requests)
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	slices.Sort(names)
	var out Ceiling
	for _, q := range quotas {
		for _, key := range names {
			hard, ok := q.Hard[key]
			if !ok || keys[key] <= 0 {
				continue
			}
			room, what := hard, fmt.Sprintf("ResourceQuota %s hard %s: %g", q.Name, key, hard)
			if used {
				room -= q.Used[key]
				what += fmt.Sprintf(", %g used", q.Used[key])
			}
			out = out.Min(Ceiling{Set: true, Nodes: fitting(room, keys[key]), By: fmt.Sprintf("%s, %g per node", what, keys[key])})
		}
	}
	return out
}

// Claim is a schedule that resolves to a pool object: who holds the pool
// is decided by creation time, then namespace/name.
type Claim struct {
	Namespace, Name string
	Created         time.Time
}

func (c Claim) String() string { return "ElasticSchedule " + c.Namespace + "/" + c.Name }

// Before says whether c comes before o: created earlier, or at the same
// instant and first by namespace, then name.
func (c Claim) Before(o Claim) bool {
	if !c.Created.Equal(o.Created) {
		return c.Created.Before(o.Created)
	}
	if c.Namespace != o.Namespace {
		return c.Namespace < o.Namespace
	}
	return c.Name < o.Name
}

// Contend decides whether self may write the pool object (pool, for
// messages) that rivals also resolve to; rivals are the other schedules
// that are permitted to drive it. The first of all claims holds the pool;
// every later one is refused, naming the holder, and writes nothing, so
// that the pool has one writer and its size never flaps between two
// schedules' wishes. The holder's claim ends when it is deleted; then the
// next one holds it.
func Contend(field, pool string, self Claim, rivals []Claim) *Refusal {
	var holder *Claim
	for i := range rivals {
		r := rivals[i]
		if r.Namespace == self.Namespace && r.Name == self.Name {
			continue
		}
		if r.Before(self) && (holder == nil || r.Before(*holder)) {
			holder = &rivals[i]
		}
	}
	if holder == nil {
		return nil
	}
	return &Refusal{
		Field: field, What: "resizing " + pool, Reason: ReasonPoolInUse,
		Missing: fmt.Sprintf("%s is resized by %s, which claimed it first (created %s); one pool has one writer, so this schedule writes nothing to it until that schedule is deleted or names another pool",
			pool, holder, holder.Created.UTC().Format(time.RFC3339)),
	}
}

// Bound is the node count laxity writes when n nodes are wanted, busy of
// them held by laxity's running steps: n lowered to write, the ceiling on
// every write, and so that the nodes held beyond the busy ones fit in
// room (a CapacityBuffer's share of what the ResourceQuota leaves; the zero
// Ceiling bounds nothing). why says what lowered it, "" when nothing did.
// The result is never negative, never above n, never above write, and
// leaves at most room beyond the busy nodes.
func Bound(n, busy int32, write, room Ceiling) (nodes int32, why string) {
	n = max(n, 0)
	nodes = write.Cap(n)
	if nodes < n {
		why = fmt.Sprintf("%d nodes wanted, %d requested: the ceiling is %s", n, nodes, write)
	}
	held := min(max(busy, 0), nodes)
	if room.Set && nodes-held > max(room.Nodes, 0) {
		lowered := held + max(room.Nodes, 0)
		why = fmt.Sprintf("%d nodes wanted, %d requested (%d held by running steps): the namespace's ResourceQuota leaves room for %s",
			n, lowered, held, room)
		nodes = lowered
	}
	return nodes, why
}
