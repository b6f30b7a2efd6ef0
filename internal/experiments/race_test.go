//go:build race

package experiments

// raceEnabled shrinks the studies the claim tests rerun under the race
// detector: they are single-threaded numerics, where it finds nothing, and
// run many times slower.
const raceEnabled = true
