package planner

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"
)

// The exact optimum of steps side by side (Planning.Concurrent): the plans
// of optimum's space, one step at a time on the whole pool, together with
// every split into lanes the planner may make. A split puts each query in
// one of L lanes (2 ≤ L ≤ maxLanes, no lane empty); a lane runs its
// queries' steps one at a time, as a plan of optimum's space, on the sizes
// within its share of the largest (largest/L, so the lanes together never
// hold more than the largest); the pool holds the lanes' nodes together
// (NodeTimeline), which is what is billed.
//
// The lanes' bills do not add up (a node one lane releases may serve the
// next lane's step, and the billing minimum and keep-alive are the pool's),
// so the search is over every combination of the lanes' plans, with a
// bound that is sound for both bills: a pool bills at least the price times
// the node-seconds its instant timeline holds, and the lanes' timelines are
// summed, so a combination costs at least the price times the sum of its
// lanes' node-seconds alone.

// lanePlan is one plan of a lane and the node-seconds its steps hold alone.
type lanePlan struct {
	steps       []Step
	nodeSeconds float64
}

// sideBySideOptimum is the exact minimum instant cost and, separately, the
// exact minimum executable cost over the plans above; feasible is false
// when none meets every deadline. exact is false when optimum's search
// visited limit partial plans, a lane had more than limit plans or a split
// more than limit combinations of its lanes' plans (then the costs are
// only the best found).
func sideBySideOptimum(w Workload, limit int) (instant, executable float64, feasible, exact bool) {
	instant, executable, feasible, exact = optimum(w, limit)
	p := newOracleProblem(w)
	largest := w.Pool.Sizes[len(w.Pool.Sizes)-1]
	for lanes := 2; lanes <= min(maxLanes, len(p.queries)); lanes++ {
		var sizes []int
		for _, s := range w.Pool.Sizes {
			if s <= largest/lanes {
				sizes = append(sizes, s)
			}
		}
		if len(sizes) == 0 {
			continue
		}
		for _, split := range splits(len(p.queries), lanes) {
			plans := make([][]lanePlan, lanes)
			combinations, complete := 1.0, true
			for k, qs := range split {
				var all bool
				plans[k], all = p.lanePlans(qs, sizes, k, limit)
				combinations *= float64(len(plans[k]))
				complete = complete && all
			}
			if complete && combinations == 0 {
				continue // a lane meets no deadline plan
			}
			if !complete || combinations > float64(limit) {
				exact = false
				continue
			}
			i, e := p.bestCombination(plans, instant, executable)
			instant, executable, feasible = min(instant, i), min(executable, e), true
		}
	}
	return instant, executable, feasible, exact
}

// splits are the ways to put n queries in exactly lanes lanes, each lane's
// queries by index, every split once (lanes are not told apart: the pool's
// bill does not depend on which lane is which).
func splits(n, lanes int) [][][]int {
	var out [][][]int
	lane := make([]int, n)
	var assign func(i, used int)
	assign = func(i, used int) {
		if i == n {
			if used == lanes {
				split := make([][]int, lanes)
				for q, k := range lane {
					split[k] = append(split[k], q)
				}
				out = append(out, split)
			}
			return
		}
		// Query i joins a lane in use or opens the next: a restricted
		// growth string, which names each split once.
		for k := range min(used+1, lanes) {
			lane[i] = k
			assign(i+1, max(used, k+1))
		}
	}
	assign(0, 0)
	return out
}

// lanePlans are every plan of lane k's queries qs on sizes that meets
// their deadlines, its steps marked with the lane, the fewest node-seconds
// first; complete is false when there are more than limit of them (and
// then the plans are the first limit found).
func (p *oracleProblem) lanePlans(qs, sizes []int, k, limit int) (plans []lanePlan, complete bool) {
	complete = true
	p.eachPlan(qs, sizes, func(steps []Step) bool {
		if len(plans) == limit {
			complete = false
			return false
		}
		plan := lanePlan{steps: slices.Clone(steps)}
		for i := range plan.steps {
			plan.steps[i].Lane = k
			plan.nodeSeconds += float64(plan.steps[i].Nodes) * (plan.steps[i].End - plan.steps[i].Start)
		}
		plans = append(plans, plan)
		return true
	})
	slices.SortStableFunc(plans, func(a, b lanePlan) int { return cmp.Compare(a.nodeSeconds, b.nodeSeconds) })
	return plans, complete
}

// bestCombination is the least instant and the least executable cost of a
// plan of one lanePlan per lane, below the bests so far (else those),
// pricing each combination as the planner prices a plan of lanes.
func (p *oracleProblem) bestCombination(plans [][]lanePlan, instant, executable float64) (float64, float64) {
	price := p.pool.PricePerNodeHour / 3600
	// least[k] is the fewest node-seconds lanes k and after can hold.
	least := make([]float64, len(plans)+1)
	for k := len(plans) - 1; k >= 0; k-- {
		least[k] = least[k+1] + plans[k][0].nodeSeconds
	}
	var steps []Step
	var walk func(k int, nodeSeconds float64)
	walk = func(k int, nodeSeconds float64) {
		if k == len(plans) {
			merged := slices.Clone(steps)
			slices.SortStableFunc(merged, func(a, b Step) int { return cmp.Compare(a.Start, b.Start) })
			i, e := p.costs(merged)
			instant, executable = min(instant, i), min(executable, e)
			return
		}
		for _, plan := range plans[k] {
			// Every later plan of this lane holds as many node-seconds or
			// more: none can beat both bests.
			if bound := (nodeSeconds + plan.nodeSeconds + least[k+1]) * price * (1 - 1e-12); bound >= instant && bound >= executable {
				return
			}
			steps = append(steps, plan.steps...)
			walk(k+1, nodeSeconds+plan.nodeSeconds)
			steps = steps[:len(steps)-len(plan.steps)]
		}
	}
	walk(0, 0)
	return instant, executable
}

// The side-by-side comparison's workloads: 1–3 queries of 2 to
// sideBySideMaxUnits units (the lanes' plans are enumerated whole), and the
// combinations of lanes' plans a split may have.
const (
	sideBySideWorkloads = 200
	sideBySideMaxUnits  = 4
	sideBySideLimit     = 200_000
)

// sideBySideComparison is the planner with steps side by side against the
// side-by-side optimum on the first n generated workloads it solves.
func sideBySideComparison(n int) (comparison, error) {
	c := comparison{sideBySide: true}
	for seed := uint64(0); c.exact < n && seed < 4*uint64(n); seed++ {
		w := oracleWorkload(seed, 3, 2, sideBySideMaxUnits)
		w.Planning.Concurrent = true
		c.workloads++
		start := time.Now()
		instant, executable, feasible, exact := sideBySideOptimum(w, sideBySideLimit)
		elapsed := time.Since(start).Seconds()
		if !exact {
			continue
		}
		c.exact++
		c.oracleSeconds += elapsed
		exactW := w
		exactW.Planning.ExactDeadlines = true
		doc, err := Plan(exactW)
		if err != nil {
			return c, fmt.Errorf("seed %d: %w", seed, err)
		}
		reserved, err := Plan(w)
		if err != nil {
			return c, fmt.Errorf("seed %d: %w", seed, err)
		}
		p, err := prepare(w)
		if err != nil {
			return c, fmt.Errorf("seed %d: %w", seed, err)
		}
		late := p.provablyLateSideBySide()
		if late && (feasible || doc.Chosen.Feasible || reserved.Chosen.Feasible) {
			c.cheaper = append(c.cheaper, fmt.Sprintf("seed %d: the side-by-side bound calls late a workload with a plan", seed))
		}
		if !feasible {
			if doc.Chosen.Feasible || reserved.Chosen.Feasible {
				c.cheaper = append(c.cheaper, fmt.Sprintf("seed %d: the planner meets deadlines no plan of the space meets", seed))
			}
			if late {
				c.provedLate++
			}
			continue
		}
		c.feasible++
		if _, alone, ok, _ := optimum(w, sideBySideLimit); !ok {
			c.lanesOnly++
		} else if executable < alone-1e-9 {
			c.lanesCheaper++
		}
		// The optimum ends queries at their deadlines: the plan without
		// the slack reserve is the one to hold to it; the default plan
		// may find none where only plans without a reserve meet them.
		if !doc.Chosen.Feasible {
			c.plannerInfeasible++
			continue
		}
		plans := []struct {
			doc                 Document
			instant, executable *[]float64
		}{{doc, &c.instant, &c.executable}}
		if reserved.Chosen.Feasible {
			plans = append(plans, plans[0])
			plans[1].doc, plans[1].instant, plans[1].executable = reserved, &c.reservedInstant, &c.reservedExecutable
		} else {
			c.reservedInfeasible++
		}
		for _, d := range plans {
			nodes := NodeTimeline(d.doc.Steps, w.Pool)
			pi, pe := Cost(nodes, w.Pool), Cost(RequestTimeline(nodes, w.Pool), w.Pool)
			if pi < instant-1e-9 || pe < executable-1e-9 {
				c.cheaper = append(c.cheaper, fmt.Sprintf("seed %d: planner (instant %g, executable %g, %d lanes) below the optimum (%g, %g)", seed, pi, pe, d.doc.Chosen.Lanes, instant, executable))
			}
			*d.instant = append(*d.instant, pi/instant)
			*d.executable = append(*d.executable, pe/executable)
		}
	}
	if c.exact < n {
		return c, fmt.Errorf("the exact search proved the optimum of %d of %d workloads, want %d", c.exact, c.workloads, n)
	}
	return c, nil
}

var fullSideBySideComparison = sync.OnceValues(func() (comparison, error) { return sideBySideComparison(sideBySideWorkloads) })

func TestSplits(t *testing.T) {
	cases := []struct {
		n, lanes int
		want     [][][]int
	}{
		{1, 2, nil},
		{2, 2, [][][]int{{{0}, {1}}}},
		{3, 2, [][][]int{{{0, 1}, {2}}, {{0, 2}, {1}}, {{0}, {1, 2}}}},
		{3, 3, [][][]int{{{0}, {1}, {2}}}},
	}
	for _, tc := range cases {
		if got := splits(tc.n, tc.lanes); !slices.EqualFunc(got, tc.want, func(a, b [][]int) bool {
			return slices.EqualFunc(a, b, slices.Equal[[]int])
		}) {
			t.Errorf("splits(%d, %d) = %v, want %v", tc.n, tc.lanes, got, tc.want)
		}
	}
	// Stirling numbers of the second kind: S(4,2) = 7, S(5,3) = 25.
	if got := len(splits(4, 2)); got != 7 {
		t.Errorf("splits(4, 2): %d splits, want 7", got)
	}
	if got := len(splits(5, 3)); got != 25 {
		t.Errorf("splits(5, 3): %d splits, want 25", got)
	}
}

// TestSideBySideOptimumIsExhaustive checks the bounded search over the
// lanes' combinations against pricing every combination, on workloads of
// two and three queries small enough for both.
func TestSideBySideOptimumIsExhaustive(t *testing.T) {
	lanesWon := 0
	for seed := range uint64(40) {
		w := oracleWorkload(seed, 3, 2, 3)
		w.Planning.Concurrent = true
		gotI, gotE, gotOK, exact := sideBySideOptimum(w, math.MaxInt)
		if !exact {
			t.Fatalf("seed %d: the unlimited search left a split out", seed)
		}
		wantI, wantE, wantOK := exhaustiveOptimum(w)
		p := newOracleProblem(w)
		largest := w.Pool.Sizes[len(w.Pool.Sizes)-1]
		for lanes := 2; lanes <= len(p.queries); lanes++ {
			var sizes []int
			for _, s := range w.Pool.Sizes {
				if s <= largest/lanes {
					sizes = append(sizes, s)
				}
			}
			for _, split := range splits(len(p.queries), lanes) {
				plans := make([][]lanePlan, lanes)
				for k, qs := range split {
					plans[k], _ = p.lanePlans(qs, sizes, k, math.MaxInt)
				}
				eachCombination(plans, func(steps []Step) {
					i, e := p.costs(steps)
					if i < wantI-1e-12 || e < wantE-1e-12 {
						lanesWon++
					}
					wantI, wantE, wantOK = min(wantI, i), min(wantE, e), true
				})
			}
		}
		if gotOK != wantOK || gotOK && (math.Abs(gotI-wantI) > 1e-12 || math.Abs(gotE-wantE) > 1e-12) {
			t.Errorf("seed %d: side-by-side optimum = (%g, %g, %v), every combination = (%g, %g, %v)", seed, gotI, gotE, gotOK, wantI, wantE, wantOK)
		}
	}
	if lanesWon == 0 {
		t.Error("no split beat one step at a time: the check needs workloads where lanes pay")
	}
}

// eachCombination calls visit with every plan of one lanePlan per lane,
// its steps in start order.
func eachCombination(plans [][]lanePlan, visit func(steps []Step)) {
	var steps []Step
	var walk func(k int)
	walk = func(k int) {
		if k == len(plans) {
			merged := slices.Clone(steps)
			slices.SortStableFunc(merged, func(a, b Step) int { return cmp.Compare(a.Start, b.Start) })
			visit(merged)
			return
		}
		for _, plan := range plans[k] {
			steps = append(steps, plan.steps...)
			walk(k + 1)
			steps = steps[:len(steps)-len(plan.steps)]
		}
	}
	walk(0)
}

// TestPlannerSideBySideAgainstTheOptimum checks that no plan of the planner
// with steps side by side beats the side-by-side optimum, that the bound
// never calls late a workload with a plan, and the goals: a plan
// wherever the optimum has one, and an executable bill within 1.05× the
// optimum at the median.
func TestPlannerSideBySideAgainstTheOptimum(t *testing.T) {
	compare := fullSideBySideComparison
	if testing.Short() {
		compare = func() (comparison, error) { return sideBySideComparison(sideBySideWorkloads / 4) }
	}
	c, err := compare()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range c.cheaper {
		t.Error(e)
	}
	// One workload of the 200 (seed 4) has no plan: its optimum holds the
	// pool idle for ten seconds, with a batch ready, for a tighter query's
	// batch about to be, which least-laxity dispatch never does.
	if c.plannerInfeasible > 1 || quantile(c.executable, 0.5) > 1.05+1e-9 {
		t.Error("the goals are not met: " + c.String())
	}
	t.Log(c)
}

// BenchmarkPlannerSideBySideAgainstTheOptimum records the side-by-side
// comparison's distribution.
func BenchmarkPlannerSideBySideAgainstTheOptimum(b *testing.B) {
	var c comparison
	for b.Loop() {
		var err error
		if c, err = sideBySideComparison(sideBySideWorkloads); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(quantile(c.instant, 0.5), "instant-median-ratio")
	b.ReportMetric(quantile(c.instant, 0.9), "instant-p90-ratio")
	b.ReportMetric(quantile(c.executable, 0.5), "executable-median-ratio")
	b.ReportMetric(quantile(c.executable, 0.9), "executable-p90-ratio")
	b.ReportMetric(quantile(c.executable, 1), "executable-max-ratio")
	b.ReportMetric(float64(c.plannerInfeasible), "planner-infeasible")
	b.ReportMetric(float64(c.provedLate), "proved-late")
	b.ReportMetric(float64(c.feasible), "feasible")
}
