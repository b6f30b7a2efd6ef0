package planner

import "math"

// TailSigmas is how many standard deviations of its steps' noise the tail
// of the earliest deadline is given room for: a miss in fewer than one
// window in a thousand, where the steps' durations are roughly normal.
const TailSigmas = 3

// tailSteps are the steps of the earliest deadline's tail: its last batch,
// which waits for the window to close, and its final merge.
const tailSteps = 2

// maxHeadroomShare bounds the headroom to a share of the time from the
// window's close to the deadline, so that a very noisy query still has a
// plan: what its headroom cannot cover, its margin and the re-plans do.
const maxHeadroomShare = 0.5

// TailHeadroom is, for each query in order, the seconds before its
// deadline its final merge is planned to end: for the query with the
// earliest deadline (each, on a tie) whose steps' spread was measured
// (Query.Spread), the part of TailSigmas standard deviations of its
// tail's noise that its margin does not cover; 0 for every other query.
//
// The margin prices every step alike, and is sized for the deadlines
// that many steps lead up to, whose noise averages out: after the window
// closes, a later deadline waits for the tails of every query before it.
// The earliest deadline's tail is a batch and a merge, whose noise does
// not: modelled at T seconds, they take T give or take σT/√2 (σ the
// spread of one step), and the margin m gives them mT. The headroom is
// the rest, (TailSigmas·σ/√2 − m)·T, with T the longest tail the deadline
// allows: the time from the close to the deadline over 1 + m.
func TailHeadroom(queries []Query, p Planning) []float64 {
	out := make([]float64, len(queries))
	earliest := math.Inf(1)
	for _, q := range queries {
		earliest = min(earliest, q.Deadline)
	}
	for i, q := range queries {
		if q.Deadline != earliest || !(q.Spread > 0) {
			continue
		}
		margin := max(q.Margin, p.RuntimeMargin)
		gap := q.Deadline - q.WindowEnd - q.AllowedLateness
		share := TailSigmas*q.Spread/math.Sqrt(tailSteps) - margin
		if !(share > 0) || !(gap > 0) {
			continue
		}
		out[i] = min(share*gap/(1+margin), maxHeadroomShare*gap)
	}
	return out
}
