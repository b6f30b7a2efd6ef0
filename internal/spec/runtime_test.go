package spec

import (
	"testing"
	"time"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/planner"
)

// TestDispatchSettingsFollowThePlansOrder: dispatch runs ready batches in
// the order of the plan in force, which is the spec's policy unless only
// the other order met every deadline; before any plan, the spec's.
func TestDispatchSettingsFollowThePlansOrder(t *testing.T) {
	planIn := func(p planner.Policy) *planner.Document {
		return &planner.Document{Chosen: planner.Chosen{Policy: p}}
	}
	for _, tc := range []struct {
		name string
		spec laxityv1alpha1.PlanningPolicy
		doc  *planner.Document
		want planner.Policy
	}{
		{name: "no plan, no policy", want: planner.LeastLaxity},
		{name: "no plan, earliest deadline", spec: laxityv1alpha1.PolicyEarliestDeadline, want: planner.EarliestDeadline},
		{name: "a plan in the spec's order", spec: laxityv1alpha1.PolicyLeastLaxity, doc: planIn(planner.LeastLaxity), want: planner.LeastLaxity},
		{name: "a plan that took earliest deadline", spec: laxityv1alpha1.PolicyLeastLaxity, doc: planIn(planner.EarliestDeadline), want: planner.EarliestDeadline},
		{name: "a plan that took least laxity", spec: laxityv1alpha1.PolicyEarliestDeadline, doc: planIn(planner.LeastLaxity), want: planner.LeastLaxity},
		{name: "a plan stored before plans carried an order", spec: laxityv1alpha1.PolicyEarliestDeadline, doc: planIn(""), want: planner.EarliestDeadline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := &laxityv1alpha1.ElasticSchedule{}
			es.Spec.Planning.Policy = tc.spec
			es.Spec.NodePool.Sizes = []int32{2, 4}
			s := DispatchSettings(es, tc.doc, 3, time.Minute)
			if s.Policy != tc.want {
				t.Errorf("policy %s, want %s", s.Policy, tc.want)
			}
			if len(s.Sizes) != 2 || s.MaxAttempts != 3 || s.Backoff != time.Minute {
				t.Errorf("settings %+v lost the sizes, attempts or backoff", s)
			}
		})
	}
}
