// Package builder makes the ElasticSchedules and IntermittentQueries of
// laxity's tests. Schedule and Query start from the values most tests
// share (below), so that a test states only what matters to it:
//
//	builder.Schedule(ns, "pool").Sizes(2, 4, 8).LeadTime(lead).Obj()
//	builder.Query(ns, "alpha").Rate("50").Slack(90 * time.Second).Obj()
//
// Bare drops every default, for unit tests of code that reads a few fields.
package builder

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
)

// Origin is the instant the tests' clocks start at and their windows are
// measured from.
var Origin = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// ScheduleBuilder builds an ElasticSchedule.
type ScheduleBuilder struct {
	es laxityv1alpha1.ElasticSchedule
	// releaseFollowsLead: unless ReleaseAfterIdle is called, idle nodes
	// are released after twice the provisioning lead time.
	releaseFollowsLead bool
}

// Schedule is an ElasticSchedule ns/name with pool sizes 2, 4 and 8, no
// idle nodes, a price of 1 per node-hour, a provisioning lead time of 2
// minutes, idle nodes released after twice the lead time, pool nodes
// labelled laxity.dev/pool=<ns> (so that schedules in different namespaces
// never share nodes) and a placeholder backend of 1 CPU per node.
func Schedule(ns, name string) *ScheduleBuilder {
	return &ScheduleBuilder{
		es: laxityv1alpha1.ElasticSchedule{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: laxityv1alpha1.ElasticScheduleSpec{NodePool: laxityv1alpha1.NodePool{
				Sizes:                []int32{2, 4, 8},
				IdleNodes:            ptr.To[int32](0),
				PricePerNodeHour:     "1",
				ProvisioningLeadTime: &metav1.Duration{Duration: 2 * time.Minute},
				NodeSelector:         map[string]string{"laxity.dev/pool": ns},
				Backend:              PlaceholderBackend(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}),
			}},
		},
		releaseFollowsLead: true,
	}
}

// Bare drops every default: the spec holds only what later calls set.
func (b *ScheduleBuilder) Bare() *ScheduleBuilder {
	b.es.Spec = laxityv1alpha1.ElasticScheduleSpec{}
	b.releaseFollowsLead = false
	return b
}

// GenerateName has the API server name the schedule prefix plus a random
// suffix.
func (b *ScheduleBuilder) GenerateName(prefix string) *ScheduleBuilder {
	b.es.Name, b.es.GenerateName = "", prefix
	return b
}

// UID sets the UID, as if the schedule was read from the API server.
func (b *ScheduleBuilder) UID(uid string) *ScheduleBuilder {
	b.es.UID = types.UID(uid)
	return b
}

// Sizes sets the node counts the pool may have.
func (b *ScheduleBuilder) Sizes(sizes ...int32) *ScheduleBuilder {
	b.es.Spec.NodePool.Sizes = sizes
	return b
}

// IdleNodes sets the nodes kept when no batch runs; nil leaves it to the
// API server's default.
func (b *ScheduleBuilder) IdleNodes(n *int32) *ScheduleBuilder {
	b.es.Spec.NodePool.IdleNodes = n
	return b
}

// Price sets the price per node-hour ("" for none).
func (b *ScheduleBuilder) Price(perNodeHour string) *ScheduleBuilder {
	b.es.Spec.NodePool.PricePerNodeHour = perNodeHour
	return b
}

// LeadTime sets how long a requested node takes to arrive.
func (b *ScheduleBuilder) LeadTime(d time.Duration) *ScheduleBuilder {
	b.es.Spec.NodePool.ProvisioningLeadTime = &metav1.Duration{Duration: d}
	return b
}

// NoLeadTime leaves the provisioning lead time to the API server's
// default.
func (b *ScheduleBuilder) NoLeadTime() *ScheduleBuilder {
	b.es.Spec.NodePool.ProvisioningLeadTime = nil
	return b
}

// ReleaseAfterIdle sets how long a node stays idle before it is released.
func (b *ScheduleBuilder) ReleaseAfterIdle(d time.Duration) *ScheduleBuilder {
	b.es.Spec.NodePool.ReleaseAfterIdle = &metav1.Duration{Duration: d}
	b.releaseFollowsLead = false
	return b
}

// NoReleaseAfterIdle leaves how long a node stays idle before it is
// released to the API server's default.
func (b *ScheduleBuilder) NoReleaseAfterIdle() *ScheduleBuilder {
	b.es.Spec.NodePool.ReleaseAfterIdle = nil
	b.releaseFollowsLead = false
	return b
}

// ExecutorsPerNode sets how many Spark executors a node runs.
func (b *ScheduleBuilder) ExecutorsPerNode(n int32) *ScheduleBuilder {
	b.es.Spec.NodePool.ExecutorsPerNode = n
	return b
}

// NodeSelector sets the labels of the pool's nodes (nil for none).
func (b *ScheduleBuilder) NodeSelector(labels map[string]string) *ScheduleBuilder {
	b.es.Spec.NodePool.NodeSelector = labels
	return b
}

// Backend sets what the pool is sized through.
func (b *ScheduleBuilder) Backend(backend laxityv1alpha1.PoolBackend) *ScheduleBuilder {
	b.es.Spec.NodePool.Backend = backend
	return b
}

// Planning sets the search's knobs.
func (b *ScheduleBuilder) Planning(planning laxityv1alpha1.Planning) *ScheduleBuilder {
	b.es.Spec.Planning = planning
	return b
}

// SmallBatches plans every query's window in batches of the base size
// (1X, spec.planning.batchSizeFactors [1]) on the grid of initial pool
// sizes alone (spec.planning.search Grid), ranked by the instant-node bill:
// each query in several batches. Stories about what happens to single steps
// (retries, restarts, names taken, learning from several steps) need those
// several batches; the default search cuts a query into the fewest batches
// that meet its deadline and cost least, often one after its window closes.
func (b *ScheduleBuilder) SmallBatches() *ScheduleBuilder {
	b.es.Spec.Planning.Search = laxityv1alpha1.SearchGrid
	b.es.Spec.Planning.Objective = laxityv1alpha1.ObjectiveInstant
	b.es.Spec.Planning.BatchSizeFactors = []int32{1}
	return b
}

// Obj is the schedule built; every call returns a new copy.
func (b *ScheduleBuilder) Obj() *laxityv1alpha1.ElasticSchedule {
	es := b.es.DeepCopy()
	if lead := es.Spec.NodePool.ProvisioningLeadTime; b.releaseFollowsLead && lead != nil {
		es.Spec.NodePool.ReleaseAfterIdle = &metav1.Duration{Duration: 2 * lead.Duration}
	}
	return es
}

// PlaceholderBackend sizes the pool with placeholder pods requesting
// resources each.
func PlaceholderBackend(resources corev1.ResourceList) laxityv1alpha1.PoolBackend {
	return laxityv1alpha1.PoolBackend{Placeholder: &laxityv1alpha1.PlaceholderBackend{Resources: resources}}
}

// ScaleBackend sizes the pool through the scale subresource of the named
// object.
func ScaleBackend(apiVersion, kind, name string) laxityv1alpha1.PoolBackend {
	return laxityv1alpha1.PoolBackend{Scale: &laxityv1alpha1.ScaleBackend{APIVersion: apiVersion, Kind: kind, Name: name}}
}

// CapacityBufferBackend sizes the pool with a CapacityBuffer of pods
// requesting resources, one per node.
func CapacityBufferBackend(resources corev1.ResourceList) laxityv1alpha1.PoolBackend {
	return laxityv1alpha1.PoolBackend{CapacityBuffer: &laxityv1alpha1.CapacityBufferBackend{Resources: resources}}
}
