// Package experiments reproduces the experiments of the paper laxity's
// planner follows (docs/design.md, where the method comes from; its section 9:
// Tables 3, 5, 7, 9, 10, 11-13, the baselines of 9.5 and the variable
// rates of 9.6) on laxity's 13-query TPC-H-shaped sample and its Yahoo-like
// single query, adds the run-time noise study, and writes them next to the
// published numbers as Markdown (docs/experiments.md, `make experiments`).
// Everything but the measured search times is deterministic.
package experiments

import (
	"fmt"
	"time"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/config/samples"
	"github.com/laxity-dev/laxity/internal/manifest"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/spec"
)

// Sample is the 13-query workload the experiments vary, planned from its
// window start (the paper's t0).
func Sample() (planner.Workload, error) { return sampleFile(samples.Demo) }

// yahoo is the single query shaped like the paper's Yahoo benchmark.
const yahoo = "yahoo.yaml"

// sampleFile is the workload of one embedded sample with one schedule.
func sampleFile(name string) (planner.Workload, error) {
	data, err := samples.FS.ReadFile(name)
	if err != nil {
		return planner.Workload{}, err
	}
	set, err := manifest.Read(manifest.File{Name: name, Data: data})
	if err != nil {
		return planner.Workload{}, err
	}
	if len(set.Schedules) != 1 {
		return planner.Workload{}, fmt.Errorf("%s: want one ElasticSchedule, found %d", name, len(set.Schedules))
	}
	es := set.Schedules[0].Object
	var queries []laxityv1alpha1.IntermittentQuery
	var origin time.Time
	for _, q := range set.QueriesFor(es.Namespace, es.Name) {
		queries = append(queries, *q.Object)
		if start := q.Object.Spec.Window.Start.Time; origin.IsZero() || start.Before(origin) {
			origin = start
		}
	}
	w, err := spec.Workload(es, queries, origin)
	if err != nil {
		return planner.Workload{}, err
	}
	// The planner's tables compare plans with the published ones, made with
	// the cost models as declared; the run-time studies give each query the
	// margin the operator plans a first window with (learn.DefaultMargin)
	// where they run the defaults.
	for i := range w.Queries {
		w.Queries[i].Margin = 0
	}
	return w, nil
}

// variant is one experiment's change to the sample.
type variant struct {
	// deadline scales each query's time from window end to deadline (the
	// paper's xD); rate scales the arrival rates over the same window (its
	// xFR: x times the tuples).
	deadline, rate float64
	factors        []int
	// backtrack is the planner's backtrack step; partialEvery the fraction
	// of batches a partial merge combines (0: off).
	backtrack    int
	partialEvery float64
}

func (v variant) apply(base planner.Workload) planner.Workload {
	w := base
	w.Planning.BatchSizeFactors = v.factors
	w.Planning.BacktrackStep = max(v.backtrack, 1)
	// The published tables are reproduced with the published search: the
	// grid alone, ranked by the cost of nodes that come and go instantly.
	w.Planning.Objective = planner.Instant
	w.Planning.GridOnly = true
	w.Queries = make([]planner.Query, len(base.Queries))
	for i, q := range base.Queries {
		q.Deadline = q.WindowEnd + v.deadline*(q.Deadline-q.WindowEnd)
		rates := make([]planner.RateSegment, len(q.Rates))
		for j, r := range q.Rates {
			rates[j] = planner.RateSegment{Offset: r.Offset, TuplesPerSecond: r.TuplesPerSecond * v.rate}
		}
		q.Rates = rates
		q.PartialEvery = v.partialEvery
		w.Queries[i] = q
	}
	return w
}

// plan plans a variant and measures the search.
func plan(base planner.Workload, v variant) (planner.Document, time.Duration, error) {
	started := time.Now()
	doc, err := planner.Plan(v.apply(base))
	return doc, time.Since(started), err
}
