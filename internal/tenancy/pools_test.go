package tenancy

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// teamBGPU is the node selector of another team's pool.
var teamBGPU = map[string]string{"karpenter.sh/nodepool": "team-b-gpu"}

func TestBuffer(t *testing.T) {
	teamA := map[string]string{"karpenter.sh/nodepool": "team-a"}
	perNode := map[string]float64{"cpu": 64, "memory": 512 << 30}
	grant := func(b ...BufferGrant) []Grant { return []Grant{{Policy: "buffers", Buffers: b}} }
	for _, tc := range []struct {
		name     string
		grants   []Grant
		selector map[string]string
		refused  string
		ceiling  Ceiling
	}{
		{name: "no grant", selector: teamA, refused: "spec.capacityBuffers"},
		{name: "another team's pool", grants: grant(BufferGrant{NodeSelector: teamA}), selector: teamBGPU,
			refused: "{karpenter.sh/nodepool=team-b-gpu}"},
		{name: "no selector on a grant of one pool", grants: grant(BufferGrant{NodeSelector: teamA}), selector: nil,
			refused: "{} (every node)"},
		{name: "the granted pool", grants: grant(BufferGrant{NodeSelector: teamA}), selector: teamA},
		{name: "a narrower selector of the granted pool", grants: grant(BufferGrant{NodeSelector: teamA}),
			selector: map[string]string{"karpenter.sh/nodepool": "team-a", "zone": "a"}},
		{name: "a grant of every node", grants: grant(BufferGrant{}), selector: teamBGPU},
		{name: "maxNodes", grants: grant(BufferGrant{NodeSelector: teamA, MaxNodes: 3}), selector: teamA,
			ceiling: Ceiling{Set: true, Nodes: 3, By: "TenantPolicy buffers spec.capacityBuffers[0].maxNodes"}},
		{name: "maxResources, by the scarcest resource", grants: grant(BufferGrant{NodeSelector: teamA, MaxNodes: 10,
			MaxResources: map[string]float64{"cpu": 256, "memory": 1024 << 30, "nvidia.com/gpu": 1}}), selector: teamA,
			ceiling: Ceiling{Set: true, Nodes: 2, By: "TenantPolicy buffers spec.capacityBuffers[0].maxResources.memory: 1.099511627776e+12, 5.49755813888e+11 per node"}},
		{name: "the most generous matching grant", grants: grant(
			BufferGrant{NodeSelector: teamA, MaxNodes: 2}, BufferGrant{NodeSelector: teamBGPU}, BufferGrant{NodeSelector: teamA, MaxNodes: 5}),
			selector: teamA, ceiling: Ceiling{Set: true, Nodes: 5, By: "TenantPolicy buffers spec.capacityBuffers[2].maxNodes"}},
		{name: "a matching grant without a ceiling", grants: grant(BufferGrant{NodeSelector: teamA, MaxNodes: 2}, BufferGrant{}),
			selector: teamA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := Namespace{Name: "team-a", Grants: tc.grants}
			c, r := ns.Buffer("spec.nodePool.backend.capacityBuffer", tc.selector, perNode)
			if tc.refused != "" {
				if r == nil || !strings.Contains(r.Error(), tc.refused) || !strings.HasPrefix(r.Error(), "spec.nodePool.backend.capacityBuffer: ") || r.Reason != "" {
					t.Fatalf("refusal %v, want one naming the field and %q", r, tc.refused)
				}
				return
			}
			if r != nil {
				t.Fatalf("refused: %v", r)
			}
			if diff := cmp.Diff(tc.ceiling, c); diff != "" {
				t.Errorf("ceiling (-want +got):\n%s", diff)
			}
		})
	}
}

func TestQuotaCeiling(t *testing.T) {
	perNode := map[string]float64{"cpu": 64, "memory": 512 << 30}
	for _, tc := range []struct {
		name   string
		quotas []Quota
		used   bool
		want   int32
		set    bool
		by     string
	}{
		{name: "no quota"},
		{name: "the issue's quota: 1 CPU, 2 pods", quotas: []Quota{{Name: "small", Hard: map[string]float64{"requests.cpu": 1, "pods": 2}}},
			set: true, want: 0, by: "ResourceQuota small hard requests.cpu: 1, 64 per node"},
		{name: "pods bound", quotas: []Quota{{Name: "q", Hard: map[string]float64{"requests.cpu": 1000, "pods": 3}}}, set: true, want: 3},
		{name: "limits count the requests", quotas: []Quota{{Name: "q", Hard: map[string]float64{"limits.memory": 1536 << 30}}}, set: true, want: 3},
		{name: "bare cpu counts requests", quotas: []Quota{{Name: "q", Hard: map[string]float64{"cpu": 200}}}, set: true, want: 3},
		{name: "hard limits only when planning", quotas: []Quota{{Name: "q", Hard: map[string]float64{"requests.cpu": 640}, Used: map[string]float64{"requests.cpu": 600}}},
			set: true, want: 10},
		{name: "what is left when writing", quotas: []Quota{{Name: "q", Hard: map[string]float64{"requests.cpu": 640}, Used: map[string]float64{"requests.cpu": 600}}},
			used: true, set: true, want: 0},
		{name: "over-used is none left", quotas: []Quota{{Name: "q", Hard: map[string]float64{"pods": 1}, Used: map[string]float64{"pods": 5}}},
			used: true, set: true, want: 0},
		{name: "keys the pod does not count against", quotas: []Quota{{Name: "q", Hard: map[string]float64{"requests.nvidia.com/gpu": 0, "services": 1}}}},
		{name: "the tightest of several", quotas: []Quota{{Name: "a", Hard: map[string]float64{"pods": 7}}, {Name: "b", Hard: map[string]float64{"requests.memory": 2048 << 30}}},
			set: true, want: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := QuotaCeiling(tc.quotas, perNode, tc.used)
			if c.Set != tc.set || c.Nodes != tc.want || (tc.by != "" && c.By != tc.by) {
				t.Errorf("ceiling %+v, want set %v, %d nodes, by %q", c, tc.set, tc.want, tc.by)
			}
		})
	}
}

func TestPoolCeiling(t *testing.T) {
	max3 := Pool{Group: "karpenter.sh", Kind: "NodePool", Name: "shared", MaxNodes: 3}
	all8 := Pool{Group: "karpenter.sh", Kind: "NodePool", Name: "*", MaxNodes: 8}
	for _, tc := range []struct {
		name       string
		grants     []Grant
		annotation PoolAnnotation
		want       Ceiling
	}{
		{name: "a grant without a ceiling", grants: []Grant{{Pools: []Pool{nodePool}}}},
		{name: "a grant's ceiling", grants: []Grant{{Policy: "p", Pools: []Pool{max3}}}, want: Ceiling{Set: true, Nodes: 3, By: "TenantPolicy p spec.pools[0].maxNodes"}},
		{name: "the most generous grant", grants: []Grant{{Policy: "p", Pools: []Pool{max3}}, {Policy: "q", Pools: []Pool{all8}}},
			want: Ceiling{Set: true, Nodes: 8, By: "TenantPolicy q spec.pools[0].maxNodes"}},
		{name: "a grant without one beats one with", grants: []Grant{{Pools: []Pool{max3}}, {Pools: []Pool{nodePool}}}},
		{name: "the pool's own annotation sets none", grants: []Grant{{Pools: []Pool{max3}}}, annotation: PoolAnnotation{Value: "team-a", Present: true}},
		{name: "another pool's grant", grants: []Grant{{Pools: []Pool{{Group: "karpenter.sh", Kind: "NodePool", Name: "other", MaxNodes: 1}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Namespace{Name: "team-a", Grants: tc.grants}.PoolCeiling(nodePool, tc.annotation)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ceiling (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCeilingSizes(t *testing.T) {
	for _, tc := range []struct {
		sizes   []int32
		ceiling Ceiling
		want    []int32
		changed bool
	}{
		{sizes: []int32{100000}, ceiling: Ceiling{}, want: []int32{100000}},
		{sizes: []int32{100000}, ceiling: Ceiling{Set: true, Nodes: 3}, want: []int32{3}, changed: true},
		{sizes: []int32{2, 4, 10, 20}, ceiling: Ceiling{Set: true, Nodes: 8}, want: []int32{2, 4, 8}, changed: true},
		{sizes: []int32{2, 4, 8}, ceiling: Ceiling{Set: true, Nodes: 8}, want: []int32{2, 4, 8}},
		{sizes: []int32{2, 4}, ceiling: Ceiling{Set: true, Nodes: 0}, want: nil, changed: true},
	} {
		got, changed := tc.ceiling.Sizes(tc.sizes)
		if !slices.Equal(got, tc.want) || changed != tc.changed {
			t.Errorf("%v under %v: %v (changed %v), want %v (changed %v)", tc.sizes, tc.ceiling, got, changed, tc.want, tc.changed)
		}
	}
}

// TestNoWriteAboveTheCeiling checks, for many wanted sizes, busy counts,
// ceilings and quota rooms, that what laxity writes never exceeds the
// ceiling, never leaves more than the room beyond the busy nodes, never
// exceeds what is wanted, and is lowered only when a bound demands it; and
// that planned sizes never exceed the ceiling.
func TestNoWriteAboveTheCeiling(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 3))
	ceiling := func() Ceiling {
		if rng.IntN(4) == 0 {
			return Ceiling{}
		}
		return Ceiling{Set: true, Nodes: int32(rng.IntN(40)) - 2, By: "test"}
	}
	for range 100000 {
		n, busy := int32(rng.IntN(200))-5, int32(rng.IntN(60))-5
		write, room := ceiling(), ceiling()
		got, why := Bound(n, busy, write, room)
		held := min(max(busy, 0), got)
		switch {
		case got < 0 || got > max(n, 0):
			t.Fatalf("Bound(%d, %d, %v, %v) = %d: outside [0, n]", n, busy, write, room, got)
		case write.Set && got > max(write.Nodes, 0):
			t.Fatalf("Bound(%d, %d, %v, %v) = %d: above the ceiling", n, busy, write, room, got)
		case room.Set && got-held > max(room.Nodes, 0):
			t.Fatalf("Bound(%d, %d, %v, %v) = %d: %d beyond the busy nodes, above the room", n, busy, write, room, got, got-held)
		case (got < max(n, 0)) != (why != ""):
			t.Fatalf("Bound(%d, %d, %v, %v) = %d, why %q: lowered without a reason, or a reason without lowering", n, busy, write, room, got, why)
		}
		if want := write.Cap(max(n, 0)); !room.Set && got != want {
			t.Fatalf("Bound(%d, %d, %v, no room) = %d, want %d: lowered further than the ceiling", n, busy, write, got, want)
		}
		sizes := []int32{int32(1 + rng.IntN(5))}
		for range rng.IntN(6) {
			sizes = append(sizes, sizes[len(sizes)-1]+int32(1+rng.IntN(100000/8)))
		}
		capped, _ := write.Sizes(sizes)
		for i, s := range capped {
			if s < 1 || (write.Set && s > write.Nodes) || (i > 0 && s <= capped[i-1]) {
				t.Fatalf("%v under %v: %v", sizes, write, capped)
			}
		}
	}
}

func FuzzBound(f *testing.F) {
	f.Add(int32(100000), int32(0), true, int32(3), true, int32(0))
	f.Add(int32(4), int32(2), false, int32(0), true, int32(1))
	f.Fuzz(func(t *testing.T, n, busy int32, writeSet bool, write int32, roomSet bool, room int32) {
		w, r := Ceiling{Set: writeSet, Nodes: write}, Ceiling{Set: roomSet, Nodes: room}
		got, _ := Bound(n, busy, w, r)
		if got < 0 || got > max(n, 0) || (writeSet && got > max(write, 0)) ||
			(roomSet && got-min(max(busy, 0), got) > max(room, 0)) {
			t.Fatalf("Bound(%d, %d, %v, %v) = %d", n, busy, w, r, got)
		}
	})
}

func TestFitting(t *testing.T) {
	for _, tc := range []struct {
		room, per float64
		want      int32
	}{
		{1, 64, 0}, {128, 64, 2}, {-5, 1, 0}, {math.Inf(1), 1, math.MaxInt32}, {1e30, 1, math.MaxInt32}, {math.NaN(), 1, 0},
	} {
		if got := fitting(tc.room, tc.per); got != tc.want {
			t.Errorf("fitting(%g, %g) = %d, want %d", tc.room, tc.per, got, tc.want)
		}
	}
}

func TestContend(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	a := Claim{Namespace: "team-a", Name: "holder", Created: t0}
	b := Claim{Namespace: "team-b", Name: "later", Created: t0.Add(time.Second)}
	tieA := Claim{Namespace: "team-a", Name: "z", Created: t0}
	tieB := Claim{Namespace: "team-b", Name: "a", Created: t0}
	for _, tc := range []struct {
		name   string
		self   Claim
		rivals []Claim
		holder string
	}{
		{name: "alone", self: a},
		{name: "the earlier holds", self: a, rivals: []Claim{b}},
		{name: "the later is refused, naming the earlier", self: b, rivals: []Claim{a}, holder: "ElasticSchedule team-a/holder"},
		{name: "itself is no rival", self: a, rivals: []Claim{a}},
		{name: "a tie goes to the namespace first", self: tieB, rivals: []Claim{tieA}, holder: "ElasticSchedule team-a/z"},
		{name: "then to the name first", self: tieA, rivals: []Claim{a}, holder: "ElasticSchedule team-a/holder"},
		{name: "the first of several is named", self: b, rivals: []Claim{tieA, tieB, a}, holder: "ElasticSchedule team-a/holder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Contend("spec.nodePool.backend.scale", "NodePool.karpenter.sh shared", tc.self, tc.rivals)
			if tc.holder == "" {
				if r != nil {
					t.Fatalf("refused: %v", r)
				}
				return
			}
			if r == nil || r.Reason != ReasonPoolInUse || !strings.Contains(r.Error(), tc.holder) ||
				!strings.HasPrefix(r.Error(), "spec.nodePool.backend.scale: NodePool.karpenter.sh shared is resized by ") {
				t.Fatalf("refusal %v, want PoolInUse naming %s", r, tc.holder)
			}
		})
	}
	// Whichever way each sees the other, exactly one of two claims holds.
	for _, pair := range [][2]Claim{{a, b}, {tieA, tieB}, {a, tieA}} {
		x := Contend("f", "p", pair[0], []Claim{pair[1]}) == nil
		y := Contend("f", "p", pair[1], []Claim{pair[0]}) == nil
		if x == y {
			t.Errorf("%v and %v: both hold or neither does (%v, %v)", pair[0], pair[1], x, y)
		}
	}
}

func TestPoolNotFound(t *testing.T) {
	r := PoolNotFound("spec.nodePool.backend.scale", nodePool)
	if r.Reason != ReasonPoolNotFound || r.Error() != "spec.nodePool.backend.scale: NodePool.karpenter.sh shared was not found; nothing is resized until it exists" {
		t.Errorf("refusal %q (%s)", r.Error(), r.Reason)
	}
}
