package builder

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
)

// PolicyBuilder builds a TenantPolicy.
type PolicyBuilder struct {
	p laxityv1alpha1.TenantPolicy
}

// TenantPolicy is a TenantPolicy name that selects no namespace (every
// namespace has the label kubernetes.io/metadata.name) and grants nothing;
// Namespaces and the grant methods say what it does.
func TenantPolicy(name string) *PolicyBuilder {
	return &PolicyBuilder{p: laxityv1alpha1.TenantPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: laxityv1alpha1.TenantPolicySpec{NamespaceSelector: metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpDoesNotExist}},
		}},
	}}
}

// Namespaces selects the named namespaces, by their
// kubernetes.io/metadata.name label.
func (b *PolicyBuilder) Namespaces(names ...string) *PolicyBuilder {
	b.p.Spec.NamespaceSelector = metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: names}},
	}
	return b
}

// AllNamespaces selects every namespace.
func (b *PolicyBuilder) AllNamespaces() *PolicyBuilder {
	b.p.Spec.NamespaceSelector = metav1.LabelSelector{}
	return b
}

// Pool grants the pool of the API group and kind named name ("*" for all).
func (b *PolicyBuilder) Pool(group, kind, name string) *PolicyBuilder {
	b.p.Spec.Pools = append(b.p.Spec.Pools, laxityv1alpha1.PoolGrant{Group: group, Kind: kind, Name: name})
	return b
}

// ServiceAccounts grants the service accounts.
func (b *PolicyBuilder) ServiceAccounts(names ...string) *PolicyBuilder {
	b.p.Spec.ServiceAccounts = append(b.p.Spec.ServiceAccounts, names...)
	return b
}

// AllowHostPath grants hostPath volumes; AllowPrivileged privileged pods.
func (b *PolicyBuilder) AllowHostPath() *PolicyBuilder {
	b.p.Spec.AllowHostPath = true
	return b
}

// AllowPrivileged grants privileged pods.
func (b *PolicyBuilder) AllowPrivileged() *PolicyBuilder {
	b.p.Spec.AllowPrivileged = true
	return b
}

// EMR grants the EMR on EKS resources of g.
func (b *PolicyBuilder) EMR(g *laxityv1alpha1.EMRGrant) *PolicyBuilder {
	b.p.Spec.EMR = g
	return b
}

// Buckets grants reading the buckets with laxity's own credentials.
func (b *PolicyBuilder) Buckets(names ...string) *PolicyBuilder {
	b.p.Spec.Buckets = append(b.p.Spec.Buckets, names...)
	return b
}

// PriorityClasses grants the placeholder priority classes.
func (b *PolicyBuilder) PriorityClasses(names ...string) *PolicyBuilder {
	b.p.Spec.PriorityClasses = append(b.p.Spec.PriorityClasses, names...)
	return b
}

// Obj returns the TenantPolicy.
func (b *PolicyBuilder) Obj() *laxityv1alpha1.TenantPolicy {
	return b.p.DeepCopy()
}
