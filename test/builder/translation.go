package builder

import (
	"time"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
)

// The unit tests of the API translation (internal/spec) and of the
// schedule's plan judgement (controllers) start from one schedule and one
// query shape, in TPC-H terms: a pool of 2, 4 or 10 nodes at 0.25 a
// node-hour with a 5-minute lead time, and an hour's window of 9,500
// tuples a second due 10 minutes after it closes.

// AnalyticsSchedule is ElasticSchedule analytics/tpch with pool sizes 2, 4
// and 10, a price of 0.25 per node-hour and a 5-minute lead time, and
// nothing else set.
func AnalyticsSchedule() *laxityv1alpha1.ElasticSchedule {
	return Schedule("analytics", "tpch").Bare().Sizes(2, 4, 10).Price("0.25").LeadTime(5 * time.Minute).Obj()
}

// AnalyticsQuery is IntermittentQuery analytics/name of schedule tpch over
// [Origin+10m, Origin+70m], due at Origin+80m, at 9,500 tuples a second in
// units of 9,500, with batches of 25 s + 2e-8 s per tuple + 2e-5 s per
// tuple spread over the nodes and merges of 8 s + 0.05 s per input + 0.4 s
// per input spread over the nodes; mutate, when not nil, changes its spec.
func AnalyticsQuery(name string, mutate func(*laxityv1alpha1.IntermittentQuerySpec)) laxityv1alpha1.IntermittentQuery {
	q := Query("analytics", name).Bare().Schedule("tpch").
		Window(Origin.Add(10*time.Minute), time.Hour).Deadline(Origin.Add(80 * time.Minute)).
		Rate("9500").Granularity(9500).
		CostModel(CostModel(BatchCost("25", "2e-8", "2e-5"), MergeCost("8", "0.05", "0.4"))).Obj()
	if mutate != nil {
		mutate(&q.Spec)
	}
	return *q
}
