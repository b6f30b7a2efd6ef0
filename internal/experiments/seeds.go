package experiments

import (
	"runtime"

	"golang.org/x/sync/errgroup"
)

// eachSeed runs f for the seeds 0 to n-1 on every core and returns the
// results in seed order, so that a study sums them in the same order, and
// writes the same report, however many cores ran it.
func eachSeed[T any](n int, f func(seed uint64) (T, error)) ([]T, error) {
	out := make([]T, n)
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for seed := range n {
		g.Go(func() error {
			r, err := f(uint64(seed))
			out[seed] = r
			return err
		})
	}
	return out, g.Wait()
}
