package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/tenancy"
	"github.com/laxity-dev/laxity/test/builder"
)

func TestPoolRefusalReasons(t *testing.T) {
	if tenancy.ReasonPoolNotFound != laxityv1alpha1.PoolNotFoundReason || tenancy.ReasonPoolInUse != laxityv1alpha1.PoolInUseReason {
		t.Fatal("internal/tenancy's refusal reasons differ from the API's condition reasons")
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{refused(&tenancy.Refusal{Field: "f"}), laxityv1alpha1.NotPermittedReason},
		{refused(tenancy.PoolNotFound("f", tenancy.Pool{Kind: "NodePool", Name: "gone"})), laxityv1alpha1.PoolNotFoundReason},
		{refused(&tenancy.Refusal{Field: "f", Reason: tenancy.ReasonPoolInUse}), laxityv1alpha1.PoolInUseReason},
	} {
		if got := refusalReason(tc.err); got != tc.want {
			t.Errorf("refusalReason(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}

func TestGrantOfCeilings(t *testing.T) {
	p := builder.TenantPolicy("buffers").AllNamespaces().Obj()
	p.Spec.Pools = []laxityv1alpha1.PoolGrant{{Group: "karpenter.sh", Kind: "NodePool", Name: "shared", MaxNodes: ptr.To[int32](4)}, {Group: "karpenter.sh", Kind: "NodePool", Name: "free"}}
	p.Spec.CapacityBuffers = []laxityv1alpha1.CapacityBufferGrant{{
		NodeSelector: map[string]string{"karpenter.sh/nodepool": "team-a"}, MaxNodes: ptr.To[int32](3),
		MaxResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")},
	}}
	g := grantOf(p)
	if g.Pools[0].MaxNodes != 4 || g.Pools[1].MaxNodes != tenancy.NoCeiling {
		t.Errorf("pools %+v", g.Pools)
	}
	if len(g.Buffers) != 1 || g.Buffers[0].MaxNodes != 3 || g.Buffers[0].MaxResources["cpu"] != 64 || g.Buffers[0].NodeSelector["karpenter.sh/nodepool"] != "team-a" {
		t.Errorf("buffers %+v", g.Buffers)
	}
}
