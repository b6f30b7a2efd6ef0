/*
Copyright 2026 The laxity Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package spec

import (
	"strings"
	"testing"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/test/builder"
)

// TestWorkloadDecimalBounds: the manager parses decimals with the CRDs'
// checks, so an object that never went through them (built in Go, stored
// before the bounds) is refused with the field named rather than planned
// with NaN, infinities or overflowing products.
func TestWorkloadDecimalBounds(t *testing.T) {
	for _, tt := range []struct {
		name     string
		schedule func(*laxityv1alpha1.ElasticSchedule)
		query    func(*laxityv1alpha1.IntermittentQuerySpec)
		want     string // "" when the value is accepted
	}{
		{"price at bound", func(s *laxityv1alpha1.ElasticSchedule) { s.Spec.NodePool.PricePerNodeHour = "1e6" }, nil, ""},
		{"price over bound", func(s *laxityv1alpha1.ElasticSchedule) { s.Spec.NodePool.PricePerNodeHour = "1e308" }, nil,
			"ElasticSchedule analytics/tpch: spec.nodePool.pricePerNodeHour: \"1e308\" is out of range"},
		{"price just over bound", func(s *laxityv1alpha1.ElasticSchedule) { s.Spec.NodePool.PricePerNodeHour = "1000000.5" }, nil,
			"spec.nodePool.pricePerNodeHour: \"1000000.5\" is more than 1e+06"},
		{"price NaN", func(s *laxityv1alpha1.ElasticSchedule) { s.Spec.NodePool.PricePerNodeHour = "NaN" }, nil,
			"spec.nodePool.pricePerNodeHour: must be a finite non-negative number"},
		{"rate at bound", nil, func(s *laxityv1alpha1.IntermittentQuerySpec) { s.Input.RatePerSecond = "1e12" }, ""},
		{"rate over bound", nil, func(s *laxityv1alpha1.IntermittentQuerySpec) { s.Input.RatePerSecond = "1e18" },
			"IntermittentQuery analytics/q: spec.input.ratePerSecond: \"1e18\" is more than 1e+12"},
		{"rate infinite", nil, func(s *laxityv1alpha1.IntermittentQuerySpec) { s.Input.RatePerSecond = "+Inf" },
			"spec.input.ratePerSecond: must be a finite non-negative number"},
		{"profile rate negative", nil, func(s *laxityv1alpha1.IntermittentQuerySpec) {
			s.Input = laxityv1alpha1.Input{Profile: []laxityv1alpha1.RateSegment{{RatePerSecond: "-5"}}}
		}, "spec.input.profile[0].ratePerSecond: must be a finite non-negative number"},
		{"coefficient over bound", nil, func(s *laxityv1alpha1.IntermittentQuerySpec) { s.CostModel.Batch.OverheadSeconds = "1000001" },
			"spec.costModel.batch.overheadSeconds: \"1000001\" is more than 1e+06"},
		{"merge coefficient over bound", nil, func(s *laxityv1alpha1.IntermittentQuerySpec) { s.CostModel.Merge.SerialSecondsPerInput = "2e6" },
			"spec.costModel.merge.serialSecondsPerInput: \"2e6\" is more than 1e+06"},
		{"partial every over one", nil, func(s *laxityv1alpha1.IntermittentQuerySpec) {
			s.PartialAggregation = &laxityv1alpha1.PartialAggregation{Every: "1.5"}
		}, "spec.partialAggregation.every: \"1.5\" is more than 1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			es := builder.AnalyticsSchedule()
			if tt.schedule != nil {
				tt.schedule(es)
			}
			_, err := Workload(es, []laxityv1alpha1.IntermittentQuery{builder.AnalyticsQuery("q", tt.query)}, origin)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Workload: %v, want the value accepted", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Workload: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
