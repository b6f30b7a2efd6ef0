package cli

import (
	"time"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/baseline"
	"github.com/laxity-dev/laxity/internal/manifest"
	"github.com/laxity-dev/laxity/internal/planner"
)

// The kinds `laxity plan -o json|yaml` prints. No API server serves them
// (as none serves kubectl's v1 List): they name what a document is, so
// that a script can tell a plan from a comparison, and which schedule each
// item is for, whatever the number of schedules.
const (
	// planListKind holds one planKind item per schedule planned.
	planListKind = "PlanList"
	// planKind is the plan of one ElasticSchedule.
	planKind = "Plan"
	// comparisonListKind holds one comparisonKind item per schedule
	// compared (plan --compare).
	comparisonListKind = "PlanComparisonList"
	// comparisonKind is one schedule's plan against the baselines.
	comparisonKind = "PlanComparison"
)

// objectList is a list as kubectl prints one: its apiVersion and kind, then
// its items, each an object with its own apiVersion, kind and metadata.
// Items is [] rather than null when nothing was planned.
type objectList[T any] struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Items      []T    `json:"items"`
}

func newObjectList[T any](kind string, items []T) objectList[T] {
	if items == nil {
		items = []T{}
	}
	return objectList[T]{APIVersion: laxityv1alpha1.GroupVersion.String(), Kind: kind, Items: items}
}

// scheduleMeta names the ElasticSchedule an item is for, in the order of
// metav1.ObjectMeta.
type scheduleMeta struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

func metaOf(es *laxityv1alpha1.ElasticSchedule) scheduleMeta {
	return scheduleMeta{Name: es.Name, Namespace: es.Namespace}
}

// planItem is one schedule's plan: apiVersion, kind and metadata, then the
// fields of the plan document (docs/design.md, "The plan document") in the
// document's order. It lists them rather than embed planner.Document so
// that infeasible candidates can go without a cost;
// TestPlanItemHasEveryDocumentField keeps the two in step.
type planItem struct {
	APIVersion             string              `json:"apiVersion"`
	Kind                   string              `json:"kind"`
	Metadata               scheduleMeta        `json:"metadata"`
	Origin                 time.Time           `json:"origin"`
	Chosen                 planner.Chosen      `json:"chosen"`
	Candidates             []candidate         `json:"candidates"`
	Queries                []planner.QueryPlan `json:"queries"`
	Steps                  []planner.Step      `json:"steps"`
	Nodes                  []planner.NodeLevel `json:"nodes"`
	Requests               []planner.NodeLevel `json:"requests"`
	MaxSupportedRateFactor float64             `json:"maxSupportedRateFactor"`
	SearchSeconds          float64             `json:"searchSeconds"`
	// Sharing is what a schedule that declares streams shares and its bill
	// planned alone; absent when it declares none.
	Sharing *sharing `json:"sharing,omitempty"`
	// SideBySide is the bill of a schedule that may run steps side by side
	// (spec.planning.concurrency Concurrent) planned one step at a time;
	// absent when it may not.
	SideBySide *sideBySide `json:"sideBySide,omitempty"`
}

// candidate is a cell of the grid. The search prices only the candidates
// that meet every deadline: an infeasible one has no cost, executable cost
// or largest pool, and prints none rather than zeros a script would take
// for the cheapest plan.
type candidate struct {
	InitialNodes    int      `json:"initialNodes"`
	BatchSizeFactor int      `json:"batchSizeFactor"`
	Cost            *float64 `json:"cost,omitempty"`
	ExecutableCost  *float64 `json:"executableCost,omitempty"`
	MaxNodes        *int     `json:"maxNodes,omitempty"`
	Feasible        bool     `json:"feasible"`
}

func newPlanItem(es *laxityv1alpha1.ElasticSchedule, d planner.Document, alt alternatives) planItem {
	candidates := make([]candidate, len(d.Candidates))
	for i, c := range d.Candidates {
		candidates[i] = candidate{InitialNodes: c.InitialNodes, BatchSizeFactor: c.BatchSizeFactor, Feasible: c.Feasible}
		if c.Feasible {
			candidates[i].Cost, candidates[i].ExecutableCost, candidates[i].MaxNodes = &c.Cost, &c.ExecutableCost, &c.MaxNodes
		}
	}
	return planItem{
		APIVersion: laxityv1alpha1.GroupVersion.String(), Kind: planKind, Metadata: metaOf(es),
		Origin: d.Origin, Chosen: d.Chosen, Candidates: candidates, Queries: d.Queries, Steps: d.Steps,
		Nodes: d.Nodes, Requests: d.Requests, MaxSupportedRateFactor: d.MaxSupportedRateFactor, SearchSeconds: d.SearchSeconds,
		Sharing: alt.sharing, SideBySide: alt.sideBySide,
	}
}

// planList is `laxity plan -o json|yaml`: one item per schedule planned,
// in the order planned.
func planList(schedules []manifest.ElasticSchedule, docs []planner.Document, alts []alternatives) objectList[planItem] {
	items := make([]planItem, len(docs))
	for i, d := range docs {
		var alt alternatives
		if i < len(alts) {
			alt = alts[i]
		}
		items[i] = newPlanItem(schedules[i].Object, d, alt)
	}
	return newObjectList(planListKind, items)
}

// comparisonItem is the JSON form of `laxity plan --compare -o json` for
// one schedule: laxity's plan and every baseline, simulated on its
// workload.
type comparisonItem struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Metadata   scheduleMeta `json:"metadata"`
	// Origin is t0.
	Origin time.Time `json:"origin"`
	// Results are the elastic plan first, then the fixed pools, LLF
	// without batching at each size, the reactive autoscaler and
	// micro-batch streaming.
	Results []baseline.Result `json:"results"`
}

func comparisonList(comparisons []comparison) objectList[comparisonItem] {
	items := make([]comparisonItem, len(comparisons))
	for i, c := range comparisons {
		items[i] = comparisonItem{
			APIVersion: laxityv1alpha1.GroupVersion.String(), Kind: comparisonKind, Metadata: metaOf(c.schedule),
			Origin: c.origin, Results: c.results,
		}
	}
	return newObjectList(comparisonListKind, items)
}
