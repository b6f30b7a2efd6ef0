package kafka

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"slices"
)

// Cut returns the next batch of a window: per partition, the offsets that
// follow the previous batch, tuples records in all. after is where the
// previous batch ended on each partition (its exclusive To); a partition
// missing from after starts at its available From, the window's Start.
// available is what the window holds now, as Snapshot reports it.
//
// When fewer than tuples records are available the batch takes them all;
// Total of the result says how many it holds. Otherwise each partition
// contributes in proportion to what it has left, by largest remainders in
// ascending partition order (ties to the lower partition), so that every
// partition advances at the pace of its own backlog and the result is
// deterministic.
//
// The result has a range, empty or not, for every partition of available,
// because Spark's Kafka batch source wants every partition of the topic in
// its startingOffsets and endingOffsets. Each range begins where after ends,
// so that successive batches tile the window with no gap and no overlap. The
// one exception is an after below the available From: the previous batch
// ended before the window's first record on that partition, cut while its
// Start was undecided, and the range begins at From, since the offsets in
// between are not the window's.
//
// Cut returns an error for a negative tuples, a negative partition or
// offset, an available range with From > To, an after beyond the available
// To or for a partition not in available, and available ranges holding more
// than math.MaxInt64 records in all.
func Cut(after map[int32]int64, available map[int32]Range, tuples int64) (map[int32]Range, error) {
	if tuples < 0 {
		return nil, fmt.Errorf("tuples: must not be negative, got %d", tuples)
	}
	for _, p := range slices.Sorted(maps.Keys(after)) {
		if _, ok := available[p]; !ok {
			return nil, fmt.Errorf("after[%d]: partition %d has no available range", p, p)
		}
	}
	partitions := slices.Sorted(maps.Keys(available))
	from := make([]int64, len(partitions))
	left := make([]int64, len(partitions))
	var total int64
	for i, p := range partitions {
		r := available[p]
		switch {
		case p < 0:
			return nil, fmt.Errorf("available[%d]: partition numbers are not negative", p)
		case r.From < 0 || r.To < r.From:
			return nil, fmt.Errorf("available[%d]: want 0 ≤ From ≤ To, got [%d, %d)", p, r.From, r.To)
		}
		from[i] = r.From
		if a, ok := after[p]; ok {
			switch {
			case a < 0:
				return nil, fmt.Errorf("after[%d]: offsets are not negative, got %d", p, a)
			case a > r.To:
				return nil, fmt.Errorf("after[%d]: the previous batch ended at %d, beyond the available range [%d, %d)",
					p, a, r.From, r.To)
			}
			from[i] = max(a, r.From)
		}
		left[i] = r.To - from[i]
		if left[i] > math.MaxInt64-total {
			return nil, fmt.Errorf("available: more than %d records in all", int64(math.MaxInt64))
		}
		total += left[i]
	}
	shares := largestRemainder(left, total, min(tuples, total))
	batch := make(map[int32]Range, len(partitions))
	for i, p := range partitions {
		batch[p] = Range{From: from[i], To: from[i] + shares[i]}
	}
	return batch, nil
}

// largestRemainder splits take among parts in proportion to left, whose sum
// is total, with 0 ≤ take ≤ total: each part gets the floor of its exact
// share, and the parts with the largest remainders, the earlier first on a
// tie, get one more until take is reached. No part gets more than its left.
func largestRemainder(left []int64, total, take int64) []int64 {
	shares := make([]int64, len(left))
	if take == total {
		copy(shares, left)
		return shares
	}
	// Here total > take ≥ 0. The exact share take·l/total is below l, so
	// the 128-bit quotient fits in 64 bits, as bits.Div64 requires.
	remainders := make([]uint64, len(left))
	given := int64(0)
	for i, l := range left {
		hi, lo := bits.Mul64(uint64(take), uint64(l))
		quotient, remainder := bits.Div64(hi, lo, uint64(total))
		shares[i] = int64(quotient)
		remainders[i] = remainder
		given += shares[i]
	}
	order := make([]int, len(left))
	for i := range order {
		order[i] = i
	}
	// The remainders share the denominator total, so comparing them compares
	// the fractional parts; the stable sort keeps ties in partition order.
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(remainders[b], remainders[a]) })
	// The fractional parts sum to take − given, each below 1, so at least
	// that many parts have one.
	for _, i := range order[:take-given] {
		shares[i]++
	}
	return shares
}
