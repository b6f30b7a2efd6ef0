package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/planner"
)

// The plan in force is kept in a ConfigMap owned by the ElasticSchedule, as
// the plan document of DESIGN.md, so that it survives manager restarts, is
// the same for every reconcile until something re-plans, and can be read by
// other programs (kubectl get cm <schedule>-plan -o jsonpath='{.data.plan\.json}').
const (
	planKey = "plan.json"
	// inputsAnnotation holds the hash of the specs the plan was made from.
	inputsAnnotation = "laxity.dev/plan-inputs"
	// reasonAnnotation says why the plan was made.
	reasonAnnotation = "laxity.dev/plan-reason"
	// ratesAnnotation holds, as a JSON object by query name, the measured
	// rates (tuples/s) a pessimistic re-plan assumed from its origin on in
	// place of the declared ones; absent when the plan assumes the declared
	// rates. The plan's maxSupportedRateFactor is relative to these.
	ratesAnnotation = "laxity.dev/plan-rates"
)

// PlanConfigMapName is the name of the ConfigMap holding a schedule's plan.
func PlanConfigMapName(schedule string) string { return schedule + "-plan" }

// storedPlan is the plan in force and what it was made from.
type storedPlan struct {
	doc    planner.Document
	inputs string
	reason string
	// rates are the assumed rates of ratesAnnotation.
	rates map[string]float64
}

// inputsHash identifies the specs a plan depends on: the schedule's and
// every query's, in name order. A change to any of them re-plans.
func inputsHash(es *laxityv1alpha1.ElasticSchedule, queries []laxityv1alpha1.IntermittentQuery) string {
	h := sha256.New()
	spec, _ := json.Marshal(es.Spec)
	h.Write(spec)
	sorted := slices.Clone(queries)
	slices.SortFunc(sorted, func(a, b laxityv1alpha1.IntermittentQuery) int { return strings.Compare(a.Name, b.Name) })
	for _, q := range sorted {
		spec, _ := json.Marshal(q.Spec)
		fmt.Fprintf(h, "\x00%s\x00%s", q.Name, spec)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// loadPlan reads the plan in force, nil when there is none.
func loadPlan(ctx context.Context, c client.Reader, es *laxityv1alpha1.ElasticSchedule) (*storedPlan, error) {
	var cm corev1.ConfigMap
	err := c.Get(ctx, client.ObjectKey{Namespace: es.Namespace, Name: PlanConfigMapName(es.Name)}, &cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the plan: %w", err)
	}
	p := &storedPlan{inputs: cm.Annotations[inputsAnnotation], reason: cm.Annotations[reasonAnnotation]}
	if v, ok := cm.Annotations[ratesAnnotation]; ok {
		if err := json.Unmarshal([]byte(v), &p.rates); err != nil {
			return nil, nil
		}
	}
	if err := json.Unmarshal([]byte(cm.Data[planKey]), &p.doc); err != nil {
		// A damaged plan is re-made rather than trusted.
		return nil, nil
	}
	return p, nil
}

// storePlan writes the plan in force.
func storePlan(ctx context.Context, c client.Client, es *laxityv1alpha1.ElasticSchedule, p *storedPlan) error {
	data, err := json.MarshalIndent(p.doc, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the plan: %w", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: es.Namespace, Name: PlanConfigMapName(es.Name)}}
	_, err = controllerutil.CreateOrUpdate(ctx, c, cm, func() error {
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		cm.Labels[LabelSchedule] = es.Name
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations[inputsAnnotation] = p.inputs
		cm.Annotations[reasonAnnotation] = p.reason
		delete(cm.Annotations, ratesAnnotation)
		if len(p.rates) > 0 {
			rates, err := json.Marshal(p.rates)
			if err != nil {
				return err
			}
			cm.Annotations[ratesAnnotation] = string(rates)
		}
		cm.Data = map[string]string{planKey: string(data)}
		return controllerutil.SetControllerReference(es, cm, c.Scheme())
	})
	if err != nil {
		return fmt.Errorf("writing the plan: %w", err)
	}
	return nil
}
