//go:build race

package manifest

// raceEnabled relaxes timing checks under the race detector.
const raceEnabled = true
