package controllers

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/pool"
	"github.com/laxity-dev/laxity/internal/sparkapp"
)

// judgeFit finds the queries of the view whose executors no ready node of
// the pool can hold (docs/design.md, "Executors that fit"): they would
// stay Pending on any node the pool has, and their steps would wait for
// nodes that never come. They are held, named with the field to change on
// the query's Stalled condition, and the others go on. A new verdict is an
// event. It returns the held queries by name.
func (r *ElasticScheduleReconciler) judgeFit(v *view, nodes pool.Nodes, p *passResult) map[string]bool {
	held := map[string]bool{}
	for i := range v.queries {
		q := &v.queries[i]
		err := sparkapp.ExecutorFit(q, v.es, nodes.Allocatable)
		unfit, changed := r.Refusals.judgeFit(q, err)
		held[q.Name] = unfit
		switch {
		case changed && unfit:
			p.note(corev1.EventTypeWarning, laxityv1alpha1.ExecutorDoesNotFitReason, "Launch",
				fmt.Sprintf("IntermittentQuery %s is not launched: %v", q.Name, err))
		case changed:
			p.note(corev1.EventTypeNormal, laxityv1alpha1.ExecutorDoesNotFitReason, "Launch",
				fmt.Sprintf("IntermittentQuery %s is launched again: a ready node of the pool holds its executors", q.Name))
		}
	}
	return held
}
