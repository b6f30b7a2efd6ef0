package planner

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMovedOrderIsTheSortedOne holds readyOrder.moved to sorting again:
// one query's first batch moved to every place among the others, ties
// with them included, gives the order and places that sorting gives.
func TestMovedOrderIsTheSortedOne(t *testing.T) {
	readies := []float64{5, 1, 3, 3, 8, 0}
	layoutsAt := func(readies []float64) []layout {
		ls := make([]layout, len(readies))
		for i, r := range readies {
			ls[i].ready = []float64{r}
		}
		return ls
	}
	before := firstReadyOrder(layoutsAt(readies))
	for q := range readies {
		for _, to := range []float64{-1, 0, 1, 2, 3, 4, 5, 8, 9} {
			moved := slices.Clone(readies)
			moved[q] = to
			ls := layoutsAt(moved)
			if diff := cmp.Diff(firstReadyOrder(ls), before.moved(ls, q), cmp.AllowUnexported(readyOrder{})); diff != "" {
				t.Errorf("query %d ready at %v instead of %v (-sorted +moved):\n%s", q, to, readies[q], diff)
			}
		}
	}
}
