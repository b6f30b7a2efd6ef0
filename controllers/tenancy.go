package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/internal/spec"
	"github.com/laxity-dev/laxity/internal/tenancy"
)

// Tenancy reads what each namespace is granted (TenantPolicies, a pool's
// laxity.dev/allowed-namespaces annotation, the manager's defaults) and
// decides with internal/tenancy what laxity may do for it: laxity acts with
// its own identity, so it does for a namespace only what is the
// namespace's own or granted to it.
type Tenancy struct {
	// Client reads TenantPolicies and Namespaces (the manager's cache).
	Client client.Reader
	// Targets reads the metadata of scale targets, which laxity does not
	// cache (the manager's API reader).
	Targets client.Reader
	// RESTMapper tells whether a scale target's kind is namespaced.
	RESTMapper meta.RESTMapper
	// DefaultServiceAccounts may run SparkApplications in every namespace
	// (the manager's --allowed-service-accounts).
	DefaultServiceAccounts []string
}

// +kubebuilder:rbac:groups=laxity.dev,resources=tenantpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machinedeployments;machinepools,verbs=get
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=get;list

// namespace is what the namespace name is granted: the grants of every
// TenantPolicy whose namespaceSelector selects it, and the defaults.
func (t *Tenancy) namespace(ctx context.Context, name string) (tenancy.Namespace, error) {
	out := tenancy.Namespace{Name: name, DefaultServiceAccounts: t.DefaultServiceAccounts}
	var ns corev1.Namespace
	if err := t.Client.Get(ctx, client.ObjectKey{Name: name}, &ns); client.IgnoreNotFound(err) != nil {
		return out, fmt.Errorf("reading namespace %s: %w", name, err)
	}
	var policies laxityv1alpha1.TenantPolicyList
	if err := t.Client.List(ctx, &policies); err != nil {
		return out, fmt.Errorf("listing TenantPolicies: %w", err)
	}
	for i := range policies.Items {
		p := &policies.Items[i]
		selector, err := metav1.LabelSelectorAsSelector(&p.Spec.NamespaceSelector)
		// A selector the API server let through but that does not parse
		// selects nothing: a policy grants only what it plainly says.
		if err != nil || !selector.Matches(labels.Set(ns.Labels)) {
			continue
		}
		out.Grants = append(out.Grants, grantOf(p))
	}
	return out, nil
}

// grantOf is what policy p grants, in internal/tenancy's terms.
func grantOf(p *laxityv1alpha1.TenantPolicy) tenancy.Grant {
	s := p.Spec
	g := tenancy.Grant{
		Policy: p.Name, ServiceAccounts: s.ServiceAccounts, HostPath: s.AllowHostPath, Privileged: s.AllowPrivileged,
		Buckets: s.Buckets, PriorityClasses: s.PriorityClasses,
		Schedulers: s.Schedulers, SchedulerQueues: s.SchedulerQueues, PodSecurityLevel: s.PodSecurityLevel,
	}
	for _, pool := range s.Pools {
		g.Pools = append(g.Pools, tenancy.Pool{Group: pool.Group, Kind: pool.Kind, Name: pool.Name, MaxNodes: maxNodes(pool.MaxNodes)})
	}
	for _, b := range s.CapacityBuffers {
		g.Buffers = append(g.Buffers, tenancy.BufferGrant{NodeSelector: b.NodeSelector, MaxNodes: maxNodes(b.MaxNodes), MaxResources: amounts(b.MaxResources)})
	}
	if e := s.EMR; e != nil {
		g.VirtualClusters, g.ExecutionRoles, g.Endpoints = e.VirtualClusterIDs, e.ExecutionRoleARNs, e.Endpoints
		for _, ng := range e.Nodegroups {
			g.Nodegroups = append(g.Nodegroups, tenancy.Nodegroup{Cluster: ng.ClusterName, Name: ng.NodegroupName})
		}
	}
	return g
}

// maxNodes is a grant's maxNodes in internal/tenancy's terms.
func maxNodes(n *int32) int32 {
	if n == nil {
		return tenancy.NoCeiling
	}
	return *n
}

// amounts is a resource list in the resources' units, for internal/tenancy.
func amounts(list corev1.ResourceList) map[string]float64 {
	if len(list) == 0 {
		return nil
	}
	out := make(map[string]float64, len(list))
	for name, q := range list {
		out[string(name)] = q.AsApproximateFloat64()
	}
	return out
}

// refusedError is what a namespace may not make laxity do, every refusal
// naming its field and the grant it lacks.
type refusedError struct{ refusals []*tenancy.Refusal }

// refusalReason is the condition reason of a refusal: its first refusal's
// own reason (PoolNotFound, PoolInUse), else NotPermitted.
func refusalReason(err error) string {
	var re *refusedError
	if errors.As(err, &re) && len(re.refusals) > 0 && re.refusals[0].Reason != "" {
		return re.refusals[0].Reason
	}
	return laxityv1alpha1.NotPermittedReason
}

func (e *refusedError) Error() string {
	parts := make([]string, len(e.refusals))
	for i, r := range e.refusals {
		parts[i] = r.Error()
	}
	return strings.Join(parts, "; ")
}

// maxEventNote is the longest note the API server keeps in an event.
const maxEventNote = 1024

// admitNote is the event's note on query's refusal: the whole refusal when
// an event holds it, else the refused fields, the query's Stalled condition
// saying the rest.
func admitNote(query string, refusal error) string {
	note := fmt.Sprintf("IntermittentQuery %s is not run: %v", query, refusal)
	var re *refusedError
	if len(note) <= maxEventNote || !errors.As(refusal, &re) {
		return truncateNote(note)
	}
	fields := make([]string, len(re.refusals))
	for i, r := range re.refusals {
		fields[i] = r.Field
	}
	return truncateNote(fmt.Sprintf("IntermittentQuery %s is not run: %d fields are not permitted (its Stalled condition says why and which grant is missing): %s",
		query, len(fields), strings.Join(fields, ", ")))
}

// truncateNote cuts note to maxEventNote bytes, on a character boundary.
func truncateNote(note string) string {
	if len(note) <= maxEventNote {
		return note
	}
	cut := maxEventNote - len("…")
	for cut > 0 && !utf8.RuneStart(note[cut]) {
		cut--
	}
	return note[:cut] + "…"
}

// refused is the refusals as an error, nil for none.
func refused(rs ...*tenancy.Refusal) error {
	var kept []*tenancy.Refusal
	for _, r := range rs {
		if r != nil {
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return &refusedError{kept}
}

// Schedule decides whether es's namespace may have laxity drive the pool
// es names, and returns what the namespace is granted. refusal is a
// *refusedError when it may not; err is a failure to read what decides it.
//
// A schedule that resolves to the same pool object as another, permitted
// one created before it is refused with reason PoolInUse, naming that one
// (tenancy.Contend): one pool, one writer.
func (t *Tenancy) Schedule(ctx context.Context, es *laxityv1alpha1.ElasticSchedule) (_ tenancy.Namespace, refusal, err error) {
	ns, err := t.namespace(ctx, es.Namespace)
	if err != nil {
		return ns, nil, err
	}
	g, err := t.backend(ctx, ns, es)
	if err != nil || g.refusal != nil {
		return ns, g.refusal, err
	}
	if g.key == "" {
		return ns, nil, nil
	}
	refusal, err = t.contend(ctx, es, g)
	return ns, refusal, err
}

// backendGrant is what a schedule's backend is granted: refusal when it is
// not; else the ceiling on its pool, and key, the pool object it resolves
// to ("" for laxity's own objects, which no other schedule shares), with
// field and what to name it by. buffer says the backend is a
// CapacityBuffer of pods of perNode requests, which the namespace's
// ResourceQuota bounds too.
type backendGrant struct {
	refusal          error
	ceiling          tenancy.Ceiling
	key, field, what string
	perNode          map[string]float64
	buffer           bool
}

// backend decides whether ns may have laxity drive es's backend.
func (t *Tenancy) backend(ctx context.Context, ns tenancy.Namespace, es *laxityv1alpha1.ElasticSchedule) (backendGrant, error) {
	b := es.Spec.NodePool.Backend
	switch {
	case b.Scale != nil:
		return t.scale(ctx, ns, es.Namespace, b.Scale)
	case b.Placeholder != nil:
		return backendGrant{refusal: refused(ns.PriorityClass("spec.nodePool.backend.placeholder.priorityClassName", b.Placeholder.PriorityClassName))}, nil
	case b.CapacityBuffer != nil:
		// The CapacityBuffer and its PodTemplate are laxity's own objects
		// in the namespace, but the nodes they make the autoscaler
		// provision are not: the node selector needs a grant.
		perNode := amounts(b.CapacityBuffer.Resources)
		ceiling, r := ns.Buffer("spec.nodePool.backend.capacityBuffer", es.Spec.NodePool.NodeSelector, perNode)
		return backendGrant{refusal: refused(r), ceiling: ceiling, perNode: perNode, buffer: true}, nil
	case b.EMRContainers != nil:
		e := b.EMRContainers
		const field = "spec.nodePool.backend.emrContainers"
		return backendGrant{
			refusal: refused(ns.EMR(field, tenancy.EMR{
				VirtualClusterID: e.VirtualClusterID, ExecutionRoleARN: e.ExecutionRoleARN,
				Nodegroup: tenancy.Nodegroup{Cluster: e.ClusterName, Name: e.NodegroupName}, Endpoint: e.Endpoint,
			})),
			key: emrPoolKey(e), field: field + ".nodegroupName",
			what: fmt.Sprintf("node group %s of EKS cluster %s", e.NodegroupName, e.ClusterName),
		}, nil
	}
	return backendGrant{}, nil
}

// scale decides whether ns may resize the scale target ref: the target's
// own annotation, or else a grant of a TenantPolicy. A target that does
// not exist is refused as not found, whatever the grants.
func (t *Tenancy) scale(ctx context.Context, ns tenancy.Namespace, namespace string, ref *laxityv1alpha1.ScaleBackend) (backendGrant, error) {
	const field = "spec.nodePool.backend.scale"
	gv, parseErr := schema.ParseGroupVersion(ref.APIVersion)
	if parseErr != nil {
		return backendGrant{refusal: refused(&tenancy.Refusal{
			Field: field + ".apiVersion", What: fmt.Sprintf("resizing %s %s", ref.Kind, ref.Name),
			Missing: fmt.Sprintf("%q is not a group/version (%v), so no grant can name the pool", ref.APIVersion, parseErr),
		})}, nil
	}
	pool := tenancy.Pool{Group: gv.Group, Kind: ref.Kind, Name: ref.Name}
	target, err := t.readScaleTarget(ctx, namespace, gv.WithKind(ref.Kind), ref.Name)
	if err != nil {
		return backendGrant{}, err
	}
	if !target.found {
		return backendGrant{refusal: refused(tenancy.PoolNotFound(field, pool))}, nil
	}
	if r := ns.Pool(field, pool, target.annotation); r != nil {
		return backendGrant{refusal: refused(r)}, nil
	}
	return backendGrant{ceiling: ns.PoolCeiling(pool, target.annotation), key: target.key, field: field, what: pool.String()}, nil
}

// scaleTarget is a scale target as read: whether it exists, its
// laxity.dev/allowed-namespaces annotation, and key, the object it is
// (group, kind, namespace when namespaced, name; any version).
type scaleTarget struct {
	found      bool
	annotation tenancy.PoolAnnotation
	key        string
}

// readScaleTarget reads the scale target: in the schedule's namespace, or
// cluster-scoped. A kind not served, or a target that does not exist, is
// not found; one laxity may not read is found, without an annotation.
func (t *Tenancy) readScaleTarget(ctx context.Context, namespace string, gvk schema.GroupVersionKind, name string) (scaleTarget, error) {
	mapping, err := t.RESTMapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return scaleTarget{}, nil
		}
		return scaleTarget{}, fmt.Errorf("mapping kind %s: %w", gvk, err)
	}
	key := client.ObjectKey{Namespace: namespace, Name: name}
	if mapping.Scope.Name() == meta.RESTScopeNameRoot {
		key.Namespace = ""
	}
	out := scaleTarget{found: true, key: scalePoolKey(gvk.Group, gvk.Kind, key.Namespace, name)}
	target := &metav1.PartialObjectMetadata{}
	target.SetGroupVersionKind(gvk)
	switch err := t.Targets.Get(ctx, key, target); {
	case apierrors.IsNotFound(err):
		return scaleTarget{}, nil
	case apierrors.IsForbidden(err):
		return out, nil
	case err != nil:
		return scaleTarget{}, fmt.Errorf("reading %s %s: %w", gvk.Kind, key, err)
	}
	value, present := target.GetAnnotations()[tenancy.AllowedNamespacesAnnotation]
	out.annotation = tenancy.PoolAnnotation{Value: value, Present: present}
	return out, nil
}

// scalePoolKey and emrPoolKey name the pool object a schedule resolves
// to, so that two schedules on one object are found.
func scalePoolKey(group, kind, namespace, name string) string {
	return "scale/" + group + "/" + kind + "/" + namespace + "/" + name
}

func emrPoolKey(e *laxityv1alpha1.EMRContainersBackend) string {
	return "emr/" + e.ClusterName + "/" + e.NodegroupName
}

// poolRef is the pool object es names, as far as its spec says without
// reading: the scale target's group, kind and name (any namespace, any
// version) or the EKS node group; "" for laxity's own objects. Schedules
// with one poolRef may resolve to one object: they are looked at again
// when either changes.
func poolRef(es *laxityv1alpha1.ElasticSchedule) string {
	b := es.Spec.NodePool.Backend
	switch {
	case b.Scale != nil:
		gv, _ := schema.ParseGroupVersion(b.Scale.APIVersion)
		return "scale/" + gv.Group + "/" + b.Scale.Kind + "/" + b.Scale.Name
	case b.EMRContainers != nil:
		return emrPoolKey(b.EMRContainers)
	}
	return ""
}

// contend finds the other schedules that resolve to the pool object es
// does (g.key) and are permitted to drive it, and decides whether es
// holds it.
func (t *Tenancy) contend(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, g backendGrant) (error, error) {
	var list laxityv1alpha1.ElasticScheduleList
	if err := t.Client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing ElasticSchedules: %w", err)
	}
	self := claimOf(es)
	ref := poolRef(es)
	var rivals []tenancy.Claim
	for i := range list.Items {
		other := &list.Items[i]
		c := claimOf(other)
		if other.UID == es.UID || poolRef(other) != ref || !c.Before(self) || other.DecodeError() != nil {
			continue
		}
		ns, err := t.namespace(ctx, other.Namespace)
		if err != nil {
			return nil, err
		}
		og, err := t.backend(ctx, ns, other)
		if err != nil {
			return nil, err
		}
		if og.refusal == nil && og.key == g.key {
			rivals = append(rivals, c)
		}
	}
	return refused(tenancy.Contend(g.field, g.what, self, rivals)), nil
}

// claimOf is es's claim on its pool.
func claimOf(es *laxityv1alpha1.ElasticSchedule) tenancy.Claim {
	return tenancy.Claim{Namespace: es.Namespace, Name: es.Name, Created: es.CreationTimestamp.Time}
}

// Ceilings are the bounds on what laxity writes to a schedule's pool:
// Plan caps the pool sizes the planner may choose (the grant's ceiling
// and, for a CapacityBuffer, the namespace's ResourceQuota's hard limits);
// Write caps every write (the grant's ceiling), and Room caps the nodes a
// CapacityBuffer holds beyond those laxity's steps use (what is left of
// the ResourceQuota, as if the buffered pods ran).
type Ceilings struct {
	Plan, Write, Room tenancy.Ceiling
}

// Ceilings reads what bounds es's pool in namespace ns, which may drive it.
func (t *Tenancy) Ceilings(ctx context.Context, ns tenancy.Namespace, es *laxityv1alpha1.ElasticSchedule) (Ceilings, error) {
	g, err := t.backend(ctx, ns, es)
	if err != nil || g.refusal != nil {
		return Ceilings{}, err
	}
	out := Ceilings{Plan: g.ceiling, Write: g.ceiling}
	if !g.buffer {
		return out, nil
	}
	var list corev1.ResourceQuotaList
	if err := t.Targets.List(ctx, &list, client.InNamespace(es.Namespace)); err != nil {
		return out, fmt.Errorf("listing the ResourceQuotas of namespace %s: %w", es.Namespace, err)
	}
	var quotas []tenancy.Quota
	for _, q := range list.Items {
		// A scoped quota counts only the pods of its scope; the buffered
		// pods are of none.
		if len(q.Spec.Scopes) > 0 || q.Spec.ScopeSelector != nil {
			continue
		}
		quotas = append(quotas, tenancy.Quota{Name: q.Name, Hard: amounts(q.Spec.Hard), Used: amounts(q.Status.Used)})
	}
	out.Plan = out.Plan.Min(tenancy.QuotaCeiling(quotas, g.perNode, false))
	out.Room = tenancy.QuotaCeiling(quotas, g.perNode, true)
	return out, nil
}

// Query decides whether q's namespace, ns, may have laxity run q: its
// SparkApplication template (what it may ask spark-operator for, its
// service accounts, priority classes, schedulers and queues, host paths and
// privileges, and its pods' Pod Security level), and the bucket it reads
// with laxity's credentials. It returns a
// *refusedError naming every refused field, or nil.
func (t *Tenancy) Query(ns tenancy.Namespace, q *laxityv1alpha1.IntermittentQuery) error {
	var rs []*tenancy.Refusal
	if raw := q.Spec.SparkApplication; raw != nil && len(raw.Raw) > 0 {
		var spec map[string]any
		// A template that does not decode is the renderer's to report.
		if json.Unmarshal(raw.Raw, &spec) == nil && spec != nil {
			rs = append(rs, ns.Template("spec.sparkApplication", spec)...)
			// The pods are judged as laxity renders them: with the Pod
			// Security values the template leaves unset.
			sparkapp.SecureDefaults(spec)
			for _, v := range sparkapp.PodSecurity(spec, ns.PodSecurityLevel()) {
				rs = append(rs, ns.PodSecurity(v.Field, fmt.Sprintf("%s (%s)", v.Check, v.Detail)))
			}
		}
	}
	for _, in := range spec.Inputs(q) {
		if os := in.ObjectStore; os != nil && os.SecretRef == nil {
			rs = append(rs, ns.Bucket(in.Field+".objectStore", os.Bucket))
		}
	}
	return refused(rs...)
}

// Refusals holds, for each query, why the schedule does not run it: a
// refusal of its namespace's grants, found on every pass, or a template
// that cannot become a step (laxity's rendering or the SparkApplication
// CRD rejected it), kept until the query's spec changes. Apart from those
// it holds the queries whose executors no ready node of the pool can hold:
// they stay planned (the pool keeps their nodes coming) but are not
// launched. The schedule's pass writes it; the IntermittentQuery controller
// reports it as the query's Stalled condition. Safe for concurrent use.
type Refusals struct {
	// Wake, when set, is told of every query whose refusal changed, so
	// that its controller reports it at once rather than at its next poll.
	// Sends never block: a full channel leaves it to the poll.
	Wake chan<- event.TypedGenericEvent[*laxityv1alpha1.IntermittentQuery]

	mu    sync.Mutex
	m     map[types.NamespacedName]refusalEntry
	unfit map[types.NamespacedName]refusalEntry
}

// refusalEntry is one query's refusal and the spec it was found for.
type refusalEntry struct {
	uid        types.UID
	generation int64
	reason     string
	err        error
	// sticky refusals were found at launch and stay until the spec changes;
	// the others are found again on every pass.
	sticky bool
}

// of says whether e was found for q's spec as it is.
func (e refusalEntry) of(q *laxityv1alpha1.IntermittentQuery) bool {
	return e.uid == q.UID && e.generation == q.Generation
}

// Refusal is why the schedule does not run q, with its condition reason
// (NotPermitted, InvalidTemplate or ExecutorDoesNotFit), or ok false when
// it runs it.
func (r *Refusals) Refusal(q *laxityv1alpha1.IntermittentQuery) (reason string, ok bool, err error) {
	if r == nil {
		return "", false, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := client.ObjectKeyFromObject(q)
	if e, ok := r.m[key]; ok && e.of(q) {
		return e.reason, true, e.err
	}
	if e, ok := r.unfit[key]; ok && e.of(q) {
		return e.reason, true, e.err
	}
	return "", false, nil
}

// excluded says whether q is left out of the schedule's passes: refused by
// its namespace's grants or for its template. A query whose executors do
// not fit is not: it stays planned.
func (r *Refusals) excluded(q *laxityv1alpha1.IntermittentQuery) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.m[client.ObjectKeyFromObject(q)]
	return ok && e.of(q)
}

// permit records the pass's decision on q's grants: err nil permits it,
// unless a sticky refusal of the same spec stands. changed says whether
// the refusal is new, or says something new.
func (r *Refusals) permit(q *laxityv1alpha1.IntermittentQuery, err error) (changed bool) {
	return r.set(q, laxityv1alpha1.NotPermittedReason, err, false)
}

// reject records that q's template cannot become a step, until q's spec
// changes.
func (r *Refusals) reject(q *laxityv1alpha1.IntermittentQuery, err error) {
	r.set(q, laxityv1alpha1.InvalidTemplateReason, err, true)
}

func (r *Refusals) set(q *laxityv1alpha1.IntermittentQuery, reason string, err error, sticky bool) (changed bool) {
	if r == nil {
		return err != nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := client.ObjectKeyFromObject(q)
	old, had := r.m[key]
	same := had && old.of(q)
	if same && old.sticky && !sticky {
		return false
	}
	if err == nil {
		delete(r.m, key)
		if same {
			r.wake(q)
		}
		return false
	}
	if r.m == nil {
		r.m = map[types.NamespacedName]refusalEntry{}
	}
	r.m[key] = refusalEntry{uid: q.UID, generation: q.Generation, reason: reason, err: err, sticky: sticky}
	changed = !same || old.err.Error() != err.Error()
	if changed {
		r.wake(q)
	}
	return changed
}

// judgeFit records the pass's verdict on whether q's executors fit the
// pool's ready nodes (sparkapp.ExecutorFit): a *sparkapp.FitError holds q,
// nil frees it, and sparkapp.ErrFitUnknown (no ready node tells) keeps the
// last verdict, so that a pool scaled to nothing does not free a query its
// next nodes cannot hold either. held says whether q is held now; changed
// whether the verdict is new, or says something new.
func (r *Refusals) judgeFit(q *laxityv1alpha1.IntermittentQuery, err error) (held, changed bool) {
	if r == nil {
		return err != nil && !errors.Is(err, sparkapp.ErrFitUnknown), false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := client.ObjectKeyFromObject(q)
	old, had := r.unfit[key]
	same := had && old.of(q)
	switch {
	case errors.Is(err, sparkapp.ErrFitUnknown):
		return same, false
	case err == nil:
		delete(r.unfit, key)
		if same {
			r.wake(q)
		}
		return false, same
	}
	if r.unfit == nil {
		r.unfit = map[types.NamespacedName]refusalEntry{}
	}
	r.unfit[key] = refusalEntry{uid: q.UID, generation: q.Generation, reason: laxityv1alpha1.ExecutorDoesNotFitReason, err: err}
	changed = !same || old.err.Error() != err.Error()
	if changed {
		r.wake(q)
	}
	return true, changed
}

// wake tells Wake of q, without blocking. r.mu is held.
func (r *Refusals) wake(q *laxityv1alpha1.IntermittentQuery) {
	if r.Wake == nil {
		return
	}
	target := &laxityv1alpha1.IntermittentQuery{ObjectMeta: metav1.ObjectMeta{Namespace: q.Namespace, Name: q.Name}}
	select {
	case r.Wake <- event.TypedGenericEvent[*laxityv1alpha1.IntermittentQuery]{Object: target}:
	default:
	}
}

// Forget drops what is held for the query named key.
func (r *Refusals) Forget(key types.NamespacedName) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, key)
	delete(r.unfit, key)
}

// permitted is what es's namespace is granted, nil when r checks nothing,
// and, when the namespace may not have laxity drive the pool es names,
// why (refusal).
func (r *ElasticScheduleReconciler) permitted(ctx context.Context, es *laxityv1alpha1.ElasticSchedule) (_ *tenancy.Namespace, refusal, err error) {
	if r.Tenancy == nil {
		return nil, nil, nil
	}
	ns, refusal, err := r.Tenancy.Schedule(ctx, es)
	if err != nil {
		return nil, nil, fmt.Errorf("reading what namespace %s is granted: %w", es.Namespace, err)
	}
	return &ns, refusal, nil
}

// notPermitted is the pass of a schedule whose namespace may not have
// laxity drive its pool: nothing is resized or launched, and the schedule
// is Stalled with the refusal, which names the pool and the missing grant.
// It looks again after the poll interval (a pool's annotation is not
// watched); a TenantPolicy's change wakes it at once.
func (r *ElasticScheduleReconciler) notPermitted(es *laxityv1alpha1.ElasticSchedule, refusal error, p *passResult) (ctrl.Result, []note, error) {
	prev := meta.FindStatusCondition(es.Status.Conditions, laxityv1alpha1.ElasticScheduleStalledCondition)
	reason := refusalReason(refusal)
	setScheduleConditions(es, scheduleState{invalid: refusal, invalidReason: reason})
	if prev == nil || prev.Reason != reason || prev.Message != refusal.Error() {
		p.note(corev1.EventTypeWarning, reason, "Resize", refusal.Error())
	}
	return ctrl.Result{RequeueAfter: r.Options.Poll}, p.notes, nil
}

// admit leaves out of the pass the queries that its namespace, ns, may not
// have laxity run (nil checks nothing) and those whose template was
// rejected at launch, recording why for the IntermittentQuery controller;
// a new refusal is an event.
func (r *ElasticScheduleReconciler) admit(ns *tenancy.Namespace, queries []laxityv1alpha1.IntermittentQuery, p *passResult) []laxityv1alpha1.IntermittentQuery {
	out := queries[:0:0]
	for i := range queries {
		q := &queries[i]
		var refusal error
		if ns != nil {
			refusal = r.Tenancy.Query(*ns, q)
			if r.Refusals.permit(q, refusal) {
				p.note(corev1.EventTypeWarning, laxityv1alpha1.NotPermittedReason, "Admit", admitNote(q.Name, refusal))
			}
		}
		if r.Refusals.excluded(q) || refusal != nil {
			continue
		}
		out = append(out, *q)
	}
	return out
}

// rejectedQuery is a launch that failed because the query's template cannot
// become a step: the query is held, the others go on.
type rejectedQuery struct {
	query string
	err   error
}

func (e *rejectedQuery) Error() string { return e.err.Error() }

func (e *rejectedQuery) Unwrap() error { return e.err }

// templateRejected says whether err, from rendering or creating a step of
// a query, is the query's template's fault: laxity's rendering refused it
// (sparkapp.TemplateError) or the API server found the SparkApplication
// invalid. Neither gets better by retrying the same spec.
func templateRejected(err error) bool {
	var te *sparkapp.TemplateError
	return errors.As(err, &te) || apierrors.IsInvalid(err)
}

// withinCeilings reads the ceilings on es's pool, which namespace ns may
// drive, into p, and lowers es's pool sizes, in this pass's copy only, to
// the planning ceiling, so that the plan is made within it: capped says
// how ("" when nothing was lowered) and restore puts the sizes back before
// the status is written. capped is nil when no size fits under the
// ceiling.
func (r *ElasticScheduleReconciler) withinCeilings(ctx context.Context, ns tenancy.Namespace, es *laxityv1alpha1.ElasticSchedule, p *passResult) (capped *string, restore func(), err error) {
	c, err := r.Tenancy.Ceilings(ctx, ns, es)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the ceilings on the pool: %w", err)
	}
	p.ceilings = c
	sizes, changed := c.Plan.Sizes(es.Spec.NodePool.Sizes)
	if len(sizes) == 0 {
		return nil, nil, nil
	}
	msg := ""
	if changed {
		msg = fmt.Sprintf("spec.nodePool.sizes are capped to %v by the ceiling of %s", sizes, c.Plan)
	}
	original := es.Spec.NodePool.Sizes
	es.Spec.NodePool.Sizes = sizes
	return &msg, func() { es.Spec.NodePool.Sizes = original }, nil
}

// overCeiling is the pass of a schedule no pool size of which fits under
// its ceiling (err nil), or whose ceilings could not be read: the pool is
// asked for no nodes, and the schedule is Stalled with reason OverCeiling,
// naming the field and the ceiling.
func (r *ElasticScheduleReconciler) overCeiling(ctx context.Context, es *laxityv1alpha1.ElasticSchedule, p *passResult, err error) (ctrl.Result, []note, error) {
	if err != nil {
		return ctrl.Result{}, nil, err
	}
	if err := p.keep(r.request(ctx, es, poolAsk{}, p)); err != nil {
		return ctrl.Result{}, p.notes, err
	}
	over := fmt.Errorf("spec.nodePool.sizes: no pool size fits under the ceiling of %s; nothing is planned, and the pool is asked for no nodes", p.ceilings.Plan)
	prev := meta.FindStatusCondition(es.Status.Conditions, laxityv1alpha1.ElasticScheduleStalledCondition)
	setScheduleConditions(es, scheduleState{invalid: over, invalidReason: laxityv1alpha1.OverCeilingReason})
	if prev == nil || prev.Reason != laxityv1alpha1.OverCeilingReason || prev.Message != over.Error() {
		p.note(corev1.EventTypeWarning, laxityv1alpha1.OverCeilingReason, "Plan", over.Error())
	}
	return ctrl.Result{RequeueAfter: r.Options.Poll}, p.notes, joinBackendErrors(p.backendErrs)
}

// samePool enqueues the other schedules that may resolve to the pool
// object a schedule names (poolRef), so that a refused schedule takes the
// pool over as soon as its holder goes, and a holder's change of pool is
// seen by the schedules it held off.
func samePool(c client.Reader) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		es, ok := o.(*laxityv1alpha1.ElasticSchedule)
		if !ok {
			return nil
		}
		ref := poolRef(es)
		if ref == "" {
			return nil
		}
		var list laxityv1alpha1.ElasticScheduleList
		if err := c.List(ctx, &list); err != nil {
			return nil
		}
		var out []reconcile.Request
		for i := range list.Items {
			other := &list.Items[i]
			if other.UID != es.UID && poolRef(other) == ref {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(other)})
			}
		}
		return out
	})
}
