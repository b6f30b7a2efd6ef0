package controllers

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/planner"
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

func TestScheduleConditionsOverCeiling(t *testing.T) {
	feasible := &planner.Document{Chosen: planner.Chosen{InitialNodes: 2, BatchSizeFactor: 1, Cost: 0.5, Feasible: true}}
	for _, tc := range []struct {
		name    string
		state   scheduleState
		want    conditionSummary
		planned string
	}{
		{
			name:    "sizes capped, the pool ready: planned within the ceiling, and the Planned condition says so",
			state:   scheduleState{doc: feasible, requested: 2, ready: 2, capped: "spec.nodePool.sizes are capped to [2] by the ceiling of 2 nodes (q)"},
			want:    conditionSummary{"Planned": "True/PlanFound", "Feasible": "True/DeadlinesMet", "PoolReady": "True/NodesReady", "Ready": "True/DeadlinesMet"},
			planned: "2 initial nodes, 1X batches, cost 0.50; spec.nodePool.sizes are capped to [2] by the ceiling of 2 nodes (q)",
		},
		{
			name:  "a write lowered to the ceiling: neither the pool nor the schedule is ready",
			state: scheduleState{doc: feasible, requested: 1, ready: 1, overCeiling: "2 nodes wanted, 1 requested: the ceiling is 1 nodes (p)"},
			want: conditionSummary{"Planned": "True/PlanFound", "Feasible": "True/DeadlinesMet",
				"PoolReady": "False/OverCeiling", "Ready": "False/OverCeiling"},
			planned: "2 initial nodes, 1X batches, cost 0.50",
		},
		{
			name:    "no size under the ceiling",
			state:   scheduleState{invalid: errors.New("spec.nodePool.sizes: no pool size fits"), invalidReason: laxityv1alpha1.OverCeilingReason},
			want:    conditionSummary{"Planned": "False/OverCeiling", "Ready": "False/OverCeiling", "Stalled": "True/OverCeiling"},
			planned: "spec.nodePool.sizes: no pool size fits",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := &laxityv1alpha1.ElasticSchedule{}
			setScheduleConditions(es, tc.state)
			if diff := cmp.Diff(tc.want, summarize(es.Status.Conditions)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if c := meta.FindStatusCondition(es.Status.Conditions, laxityv1alpha1.ElasticSchedulePlannedCondition); c == nil || c.Message != tc.planned {
				t.Errorf("Planned %+v, want the message %q", c, tc.planned)
			}
		})
	}
}
