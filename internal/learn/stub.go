// Package learn: a STUB of the agreed API so the wiring compiles; replaced by the real package before merge.
package learn

import "github.com/laxity-dev/laxity/internal/costmodel"

type Kind int

const (
	Batch Kind = iota
	Merge
)

type Observation struct {
	Kind    Kind
	Work    float64
	Nodes   int
	Seconds float64
}

type Settings struct{}

var Defaults Settings

type Learned struct {
	Model           costmodel.Model
	Slowdown        float64
	Margin          float64
	Batches, Merges int
}

func Fit(declared costmodel.Model, obs []Observation, s Settings) Learned {
	return Learned{Model: declared, Slowdown: 1}
}
func LeadTime(declared float64, observed []float64, s Settings) float64 { return declared }
func Change(old, new Learned, points []Observation) float64          { return 0 }

const DefaultTolerance = 0.05

func WindowSlowdown(model costmodel.Model, obs []Observation) (float64, int) { return 1, 0 }
