package controllers

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
)

func after(d time.Duration) metav1.Time { return metav1.NewTime(origin.Add(d)) }

func schedule() *laxityv1alpha1.ElasticSchedule {
	return &laxityv1alpha1.ElasticSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: "tpch", Namespace: "analytics"},
		Spec: laxityv1alpha1.ElasticScheduleSpec{NodePool: laxityv1alpha1.NodePool{
			Sizes:                []int32{2, 4, 10},
			PricePerNodeHour:     "0.25",
			ProvisioningLeadTime: &metav1.Duration{Duration: 5 * time.Minute},
		}},
	}
}

func query(name string, mutate func(*laxityv1alpha1.IntermittentQuerySpec)) laxityv1alpha1.IntermittentQuery {
	q := laxityv1alpha1.IntermittentQuery{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "analytics"},
		Spec: laxityv1alpha1.IntermittentQuerySpec{
			ScheduleName: "tpch",
			Window:       laxityv1alpha1.Window{Start: after(10 * time.Minute), End: after(70 * time.Minute)},
			Deadline:     after(80 * time.Minute),
			Input:        laxityv1alpha1.Input{RatePerSecond: "9500", Granularity: 9500},
			CostModel: laxityv1alpha1.CostModel{
				Batch: laxityv1alpha1.BatchCostModel{OverheadSeconds: "25", SerialSecondsPerTuple: "2e-8", ParallelSecondsPerTuple: "2e-5"},
				Merge: laxityv1alpha1.MergeCostModel{OverheadSeconds: "8", SerialSecondsPerInput: "0.05", ParallelSecondsPerInput: "0.4"},
			},
		},
	}
	if mutate != nil {
		mutate(&q.Spec)
	}
	return q
}
