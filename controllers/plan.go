package controllers

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/pass"
	"github.com/laxity-dev/laxity/internal/planner"
)

// The plan in force is kept in a ConfigMap owned by the ElasticSchedule, as
// the plan document (docs/design.md, the plan document), so that it survives manager restarts, is
// the same for every reconcile until something re-plans, and can be read by
// other programs (kubectl get cm <schedule>-plan -o jsonpath='{.data.plan\.json}';
// a plan too large for that is in binaryData, gzipped, under plan.json.gz).
const (
	planKey = "plan.json"
	// compressedPlanKey holds the plan document gzipped, in binaryData,
	// when the JSON would not fit in a ConfigMap; the document is the same.
	compressedPlanKey = "plan.json.gz"
	// maxPlainPlan is the largest plan kept as plain JSON: a ConfigMap holds
	// at most 1 MiB, and the annotations need room too.
	maxPlainPlan = 900 << 10
	// inputsAnnotation holds the hash of the specs the plan was made from.
	inputsAnnotation = "laxity.dev/plan-inputs"
	// reasonAnnotation says why the plan was made.
	reasonAnnotation = "laxity.dev/plan-reason"
	// ratesAnnotation holds, as a JSON object by query name, the measured
	// rates (tuples/s) a pessimistic re-plan assumed from its origin on in
	// place of the declared ones; absent when the plan assumes the declared
	// rates. The plan's maxSupportedRateFactor is relative to these.
	ratesAnnotation = "laxity.dev/plan-rates"
	// arrivalsAnnotation holds, as JSON, when the plan was made and the
	// tuples every query had by then (pass.Arrivals): a rate measured
	// since then tells a lasting change of rate from chance.
	arrivalsAnnotation = "laxity.dev/plan-arrivals"
	// modelsKey holds, as JSON, the cost models, margins and lead time the
	// plan priced its steps with (pass.Models): what a learned model is
	// compared with to decide whether it changed enough to re-plan.
	modelsKey = "models.json"
)

// PlanConfigMapName is the name of the ConfigMap holding a schedule's plan.
func PlanConfigMapName(schedule string) string { return schedule + "-plan" }

// storedPlan is the plan in force and what it was made from.
type storedPlan struct {
	doc    planner.Document
	inputs string
	reason string
	// rates are the assumed rates of ratesAnnotation; arrivals what
	// arrivalsAnnotation holds, nil for a plan stored before it.
	rates    map[string]float64
	arrivals *pass.Arrivals
	// models are what the plan priced its steps with; nil for a plan
	// stored before laxity recorded them.
	models *pass.Models
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
	if v, ok := cm.Annotations[arrivalsAnnotation]; ok {
		var a pass.Arrivals
		if json.Unmarshal([]byte(v), &a) == nil {
			p.arrivals = &a
		}
	}
	if v, ok := cm.Annotations[ratesAnnotation]; ok {
		if err := json.Unmarshal([]byte(v), &p.rates); err != nil {
			return nil, nil
		}
	}
	doc, err := decodePlan(&cm)
	if err != nil {
		// A damaged plan is re-made rather than trusted.
		return nil, nil
	}
	p.doc = *doc
	if v, ok := cm.Data[modelsKey]; ok {
		var models pass.Models
		if json.Unmarshal([]byte(v), &models) == nil {
			p.models = &models
		}
	}
	return p, nil
}

// decodedPlans keeps the last plan decoded from each ConfigMap, by
// resourceVersion: every query reconcile reads its schedule's plan, and
// decoding thousands of steps each time would cost more than the reconcile.
// A schedule's entry goes when the schedule does (forgetSchedule).
var decodedPlans sync.Map // namespace/name of the ConfigMap -> decodedPlan

type decodedPlan struct {
	uid             types.UID
	resourceVersion string
	doc             *planner.Document
}

// forgetPlan drops the decoded plan of a schedule that is gone.
func forgetPlan(namespace, schedule string) {
	decodedPlans.Delete(namespace + "/" + PlanConfigMapName(schedule))
}

// decodePlan decodes the plan document of a ConfigMap. The result is shared
// between callers: treat it as read-only.
func decodePlan(cm *corev1.ConfigMap) (*planner.Document, error) {
	key := cm.Namespace + "/" + cm.Name
	if v, ok := decodedPlans.Load(key); ok && cm.ResourceVersion != "" {
		if d := v.(decodedPlan); d.uid == cm.UID && d.resourceVersion == cm.ResourceVersion {
			return d.doc, nil
		}
	}
	data := []byte(cm.Data[planKey])
	if compressed, ok := cm.BinaryData[compressedPlanKey]; ok {
		r, err := gzip.NewReader(bytes.NewReader(compressed))
		if err != nil {
			return nil, err
		}
		if data, err = io.ReadAll(r); err != nil {
			return nil, err
		}
	}
	doc := &planner.Document{}
	if err := json.Unmarshal(data, doc); err != nil {
		return nil, err
	}
	if cm.ResourceVersion != "" {
		decodedPlans.Store(key, decodedPlan{uid: cm.UID, resourceVersion: cm.ResourceVersion, doc: doc})
	}
	return doc, nil
}

// encodePlan sets a ConfigMap's plan document, with the models it priced
// its steps with: plain JSON that kubectl shows as it is, or the document
// gzipped when the plain one would not fit.
func encodePlan(cm *corev1.ConfigMap, doc *planner.Document, models *pass.Models) error {
	data, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encoding the plan: %w", err)
	}
	cm.Data, cm.BinaryData = map[string]string{}, nil
	if models != nil {
		encoded, err := json.Marshal(models)
		if err != nil {
			return fmt.Errorf("encoding the plan's models: %w", err)
		}
		cm.Data[modelsKey] = string(encoded)
	}
	if len(data)+len(cm.Data[modelsKey]) <= maxPlainPlan {
		cm.Data[planKey] = string(data)
		return nil
	}
	var compressed bytes.Buffer
	w := gzip.NewWriter(&compressed)
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("compressing the plan: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("compressing the plan: %w", err)
	}
	if compressed.Len()+len(cm.Data[modelsKey]) > maxPlainPlan {
		return fmt.Errorf("the plan of %d steps takes %d bytes even compressed, more than a ConfigMap holds; split the queries over more ElasticSchedules or use larger batches",
			len(doc.Steps), compressed.Len())
	}
	cm.BinaryData = map[string][]byte{compressedPlanKey: compressed.Bytes()}
	return nil
}

// storePlan writes the plan in force.
func storePlan(ctx context.Context, c client.Client, es *laxityv1alpha1.ElasticSchedule, p *storedPlan) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: es.Namespace, Name: PlanConfigMapName(es.Name)}}
	_, err := controllerutil.CreateOrUpdate(ctx, c, cm, func() error {
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
		delete(cm.Annotations, arrivalsAnnotation)
		if p.arrivals != nil {
			arrivals, err := json.Marshal(p.arrivals)
			if err != nil {
				return err
			}
			cm.Annotations[arrivalsAnnotation] = string(arrivals)
		}
		if err := encodePlan(cm, &p.doc, p.models); err != nil {
			return err
		}
		return controllerutil.SetControllerReference(es, cm, c.Scheme())
	})
	if err != nil {
		return fmt.Errorf("writing the plan: %w", err)
	}
	return nil
}

// PlanOf is the plan in force of a schedule, nil when it has none yet. The
// document is shared with the reconcilers: treat it as read-only.
func PlanOf(ctx context.Context, c client.Reader, es *laxityv1alpha1.ElasticSchedule) (*planner.Document, error) {
	p, err := loadPlan(ctx, c, es)
	if p == nil {
		return nil, err
	}
	return &p.doc, nil
}
