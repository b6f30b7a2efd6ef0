package planner

import (
	"hash/fnv"
	"math"
	"testing"

	"github.com/laxity-dev/laxity/internal/costmodel"
)

// byteReader derives bounded parameters from fuzz input deterministically.
// Past the end of the input it continues with a pseudo-random stream seeded
// by the input, so that short inputs still reach every parameter range.
type byteReader struct {
	data  []byte
	pos   int
	state uint64
}

func newByteReader(data []byte) *byteReader {
	h := fnv.New64a()
	h.Write(data)
	return &byteReader{data: data, state: h.Sum64()}
}

func (r *byteReader) next() byte {
	if r.pos < len(r.data) {
		b := r.data[r.pos]
		r.pos++
		return b
	}
	// splitmix64
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return byte(z ^ z>>31)
}

func (r *byteReader) uint16() uint16 {
	return uint16(r.next())<<8 | uint16(r.next())
}

// intn is an integer in [lo, hi].
func (r *byteReader) intn(lo, hi int) int {
	return lo + int(r.uint16())%(hi-lo+1)
}

// float is a float64 in [lo, hi].
func (r *byteReader) float(lo, hi float64) float64 {
	return lo + (hi-lo)*float64(r.uint16())/math.MaxUint16
}

// logFloat is a float64 in [lo, hi], uniform on a log scale.
func (r *byteReader) logFloat(lo, hi float64) float64 {
	return math.Min(hi, lo*math.Exp(float64(r.uint16())/math.MaxUint16*math.Log(hi/lo)))
}

// maybeZero is zero when the next byte is 224 or more (one in eight),
// otherwise v().
func (r *byteReader) maybeZero(v func() float64) float64 {
	if r.next() >= 224 {
		return 0
	}
	return v()
}

// subset picks a non-empty ascending subset of choices of at most maxLen
// elements from a bit mask.
func (r *byteReader) subset(choices []int, maxLen int) []int {
	mask := r.uint16()
	var out []int
	for i, c := range choices {
		if mask&(1<<i) != 0 && len(out) < maxLen {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		out = []int{choices[int(mask>>9)%len(choices)]}
	}
	return out
}

// fuzzWorkload decodes data into a small workload: 1–3 queries, windows of
// 60–1800 s, rates of 1–5,000 tuples/s, so that one plan stays fast while
// every parameter of the model still varies.
func fuzzWorkload(data []byte) Workload {
	r := newByteReader(data)
	sizes := r.subset(poolSizeChoices, 5)
	cmax := r.float(60, 900)
	w := Workload{
		Name:   "fuzz",
		Origin: testOrigin,
		Pool: Pool{
			Sizes:                sizes,
			IdleNodes:            r.intn(0, sizes[0]),
			PricePerNodeHour:     r.float(0.05, 2),
			BillingMinimum:       r.float(0, 120),
			ProvisioningLeadTime: r.maybeZero(func() float64 { return r.float(0, 600) }),
			ReleaseAfterIdle:     r.maybeZero(func() float64 { return r.float(0, 1500) }),
		},
		Planning: Planning{
			BatchSizeFactors: r.subset(factorChoices, 5),
			BacktrackStep:    r.intn(1, 5),
			MaxBatchDuration: cmax,
			Policy:           []Policy{LeastLaxity, EarliestDeadline}[r.intn(0, 1)],
		},
	}
	nq := r.intn(1, 3)
	for i := range nq {
		ws := r.float(0, 1800)
		length := r.logFloat(60, 1800)
		we := ws + length
		q := Query{
			Name:            "q-" + querySuffixes[i],
			WindowStart:     ws,
			WindowEnd:       we,
			Deadline:        we + []float64{r.logFloat(1, 3000), r.float(200, 3000), r.float(600, 3000), r.float(1200, 3000)}[r.intn(0, 3)],
			Granularity:     int64(math.Round(r.logFloat(1, 10000))),
			AllowedLateness: r.maybeZero(func() float64 { return r.float(0, 120) }),
			PartialEvery:    phiChoices[r.intn(0, len(phiChoices)-1)],
			Cost: costmodel.Model{
				Batch: costmodel.Linear{
					Overhead: r.maybeZero(func() float64 { return r.float(0, math.Min(60, 0.9*cmax)) }),
					Serial:   r.maybeZero(func() float64 { return r.logFloat(1e-10, 1e-6) }),
					Parallel: r.maybeZero(func() float64 { return r.logFloat(1e-8, 1e-4) }),
				},
				Merge: costmodel.Linear{
					Overhead: r.maybeZero(func() float64 { return r.float(0, 30) }),
					Serial:   r.maybeZero(func() float64 { return r.logFloat(1e-4, 0.5) }),
					Parallel: r.maybeZero(func() float64 { return r.logFloat(1e-3, 2) }),
				},
			},
		}
		// A model with every coefficient zero is invalid; keep it rare.
		for _, l := range []*costmodel.Linear{&q.Cost.Batch, &q.Cost.Merge} {
			if *l == (costmodel.Linear{}) && r.intn(0, 7) != 0 {
				l.Overhead = 1
			}
		}
		segments := r.intn(1, 3)
		offset := 0.0
		for s := range segments {
			if s > 0 {
				// Strictly increasing offsets inside the window.
				offset += r.float(0.01, 0.45) * length
				if offset >= length {
					break
				}
			}
			q.Rates = append(q.Rates, RateSegment{Offset: offset, TuplesPerSecond: r.logFloat(1, 5000)})
		}
		tameQuery(&q, sizes[0], cmax)
		w.Queries = append(w.Queries, q)
	}
	return w
}

func FuzzPlan(f *testing.F) {
	// Short inputs are stretched by the reader's pseudo-random tail: these
	// give feasible plans of one to three queries with partial merges, and
	// infeasible ones ("seed-11", "seed-36").
	for _, seed := range []string{"", "laxity", "seed-0", "seed-1", "seed-11", "seed-14", "seed-17", "seed-36"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkPlan(t, fuzzWorkload(data), nil)
	})
}
