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

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/sparkapp"
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
		g.Pools = append(g.Pools, tenancy.Pool{Group: pool.Group, Kind: pool.Kind, Name: pool.Name})
	}
	if e := s.EMR; e != nil {
		g.VirtualClusters, g.ExecutionRoles, g.Endpoints = e.VirtualClusterIDs, e.ExecutionRoleARNs, e.Endpoints
		for _, ng := range e.Nodegroups {
			g.Nodegroups = append(g.Nodegroups, tenancy.Nodegroup{Cluster: ng.ClusterName, Name: ng.NodegroupName})
		}
	}
	return g
}

// refusedError is what a namespace may not make laxity do, every refusal
// naming its field and the grant it lacks.
type refusedError struct{ refusals []*tenancy.Refusal }

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
func (t *Tenancy) Schedule(ctx context.Context, es *laxityv1alpha1.ElasticSchedule) (_ tenancy.Namespace, refusal, err error) {
	ns, err := t.namespace(ctx, es.Namespace)
	if err != nil {
		return ns, nil, err
	}
	b := es.Spec.NodePool.Backend
	switch {
	case b.Scale != nil:
		refusal, err = t.scale(ctx, ns, b.Scale)
	case b.Placeholder != nil:
		refusal = refused(ns.PriorityClass("spec.nodePool.backend.placeholder.priorityClassName", b.Placeholder.PriorityClassName))
	case b.CapacityBuffer != nil:
		// Its CapacityBuffer and PodTemplate are laxity's own objects in
		// the namespace and name nothing outside it: nothing to grant.
	case b.EMRContainers != nil:
		e := b.EMRContainers
		refusal = refused(ns.EMR("spec.nodePool.backend.emrContainers", tenancy.EMR{
			VirtualClusterID: e.VirtualClusterID, ExecutionRoleARN: e.ExecutionRoleARN,
			Nodegroup: tenancy.Nodegroup{Cluster: e.ClusterName, Name: e.NodegroupName}, Endpoint: e.Endpoint,
		}))
	}
	return ns, refusal, err
}

// scale decides whether ns may resize the scale target ref: a grant of a
// TenantPolicy, or else the target's own annotation.
func (t *Tenancy) scale(ctx context.Context, ns tenancy.Namespace, ref *laxityv1alpha1.ScaleBackend) (refusal, err error) {
	const field = "spec.nodePool.backend.scale"
	gv, parseErr := schema.ParseGroupVersion(ref.APIVersion)
	if parseErr != nil {
		return refused(&tenancy.Refusal{
			Field: field + ".apiVersion", What: fmt.Sprintf("resizing %s %s", ref.Kind, ref.Name),
			Missing: fmt.Sprintf("%q is not a group/version (%v), so no grant can name the pool", ref.APIVersion, parseErr),
		}), nil
	}
	pool := tenancy.Pool{Group: gv.Group, Kind: ref.Kind, Name: ref.Name}
	if ns.Pool(field, pool, tenancy.PoolAnnotation{}) == nil {
		return nil, nil
	}
	annotation, err := t.poolAnnotation(ctx, ns.Name, gv.WithKind(ref.Kind), ref.Name)
	if err != nil {
		return nil, err
	}
	return refused(ns.Pool(field, pool, annotation)), nil
}

// poolAnnotation reads the laxity.dev/allowed-namespaces annotation of the
// scale target: in the schedule's namespace, or cluster-scoped. A target
// that does not exist, of a kind not served, or that laxity may not read
// has none.
func (t *Tenancy) poolAnnotation(ctx context.Context, namespace string, gvk schema.GroupVersionKind, name string) (tenancy.PoolAnnotation, error) {
	mapping, err := t.RESTMapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return tenancy.PoolAnnotation{}, nil
		}
		return tenancy.PoolAnnotation{}, fmt.Errorf("mapping kind %s: %w", gvk, err)
	}
	key := client.ObjectKey{Namespace: namespace, Name: name}
	if mapping.Scope.Name() == meta.RESTScopeNameRoot {
		key.Namespace = ""
	}
	target := &metav1.PartialObjectMetadata{}
	target.SetGroupVersionKind(gvk)
	switch err := t.Targets.Get(ctx, key, target); {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		return tenancy.PoolAnnotation{}, nil
	case err != nil:
		return tenancy.PoolAnnotation{}, fmt.Errorf("reading %s %s: %w", gvk.Kind, key, err)
	}
	value, present := target.GetAnnotations()[tenancy.AllowedNamespacesAnnotation]
	return tenancy.PoolAnnotation{Value: value, Present: present}, nil
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
	if in := q.Spec.Input.ObjectStore; in != nil && in.SecretRef == nil {
		rs = append(rs, ns.Bucket("spec.input.objectStore", in.Bucket))
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
	setScheduleConditions(es, scheduleState{invalid: refusal, invalidReason: laxityv1alpha1.NotPermittedReason})
	if prev == nil || prev.Reason != laxityv1alpha1.NotPermittedReason || prev.Message != refusal.Error() {
		p.note(corev1.EventTypeWarning, laxityv1alpha1.NotPermittedReason, "Resize", refusal.Error())
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
