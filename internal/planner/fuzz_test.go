package planner

import (
	"math"
	"testing"

	"github.com/laxity-dev/laxity/internal/costmodel"
)

// byteReader derives bounded parameters from fuzz input deterministically;
// once the input is exhausted every draw is the lowest value of its range.
type byteReader struct {
	data []byte
	pos  int
}

func (r *byteReader) next() byte {
	if r.pos >= len(r.data) {
		return 0
	}
	b := r.data[r.pos]
	r.pos++
	return b
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

// maybeZero is zero when the next byte is below 32 (one in eight), otherwise v().
func (r *byteReader) maybeZero(v func() float64) float64 {
	if r.next() < 32 {
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
	r := &byteReader{data: data}
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
			Deadline:        we + r.logFloat(1, 3000),
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
	f.Add([]byte{})
	f.Add([]byte("laxity"))
	// Seed's pool sizes, two queries, partial aggregation, a long lead time.
	f.Add([]byte{0x6a, 0x00, 0x40, 0x00, 0x01, 0x80, 0x00, 0x40, 0x00, 0x90, 0x00, 0xff, 0x20, 0x00, 0x00, 0x1f,
		0x00, 0x02, 0x00, 0x01, 0x00, 0x01, 0x10, 0x00, 0x80, 0x00, 0xa0, 0x00, 0x60, 0x00, 0x30, 0x00,
		0x02, 0x00, 0x50, 0x00, 0x80, 0x00, 0x40, 0x00, 0xc0, 0x00, 0x70, 0x00, 0x90, 0x00, 0x02, 0x00})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x0f, 0xed, 0xcb, 0xa9, 0x87, 0x65, 0x43, 0x21,
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x00,
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10,
		0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x8b, 0x8c, 0x8d, 0x8e, 0x8f})
	f.Fuzz(func(t *testing.T, data []byte) {
		checkPlan(t, fuzzWorkload(data), nil)
	})
}
