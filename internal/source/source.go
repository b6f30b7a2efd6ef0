// Package source says where a query's tuples come from: how many of them have
// arrived by a given instant, how fast they are arriving now, and what that
// rate means for the window's total under the pessimistic and optimistic
// rate models.
//
// The package is pure: it reads no clock (every function takes now) and,
// apart from FromSpec in spec.go, which reads an IntermittentQuery's
// spec.input, imports no Kubernetes package. Synthetic arrivals follow a
// piecewise-constant rate by the clock; the kafka and objectstore packages
// count a topic's records and a bucket's files.
package source

import (
	"context"
	"time"
)

// Source reports how many of a query's tuples have arrived.
type Source interface {
	// Arrived is the number of the query's tuples that have arrived by now,
	// in whole arrival units (granularity): a unit counts only once all its
	// tuples are there. It never decreases for increasing now.
	Arrived(ctx context.Context, now time.Time) (int64, error)
}

// Forecaster is a Source that can say when its arrivals will reach a count:
// arrivals that follow the clock can, so the controller wakes exactly when a
// batch is ready instead of polling for it. Sources that observe an outside
// system (object storage, Kafka) cannot, and are polled.
type Forecaster interface {
	Source
	// ArrivalOf is the first instant at which Arrived reports at least
	// tuples, and false when it never will.
	ArrivalOf(tuples int64) (time.Time, bool)
}

// Slicer is a Source whose batches read an exact slice of the stream: Kafka
// offset ranges, a list of objects. The slice is recorded on the batch's
// SparkApplication (each key as the annotation laxity.dev/<key>, an
// argument and a Spark setting) and read back from it, so that a retry and
// an operator restarted mid-window read the same records, and consecutive
// batches neither overlap nor skip one.
type Slicer interface {
	Source
	// Slice is the input of the batch after the one whose slice was
	// previous (nil for the window's first batch): tuples tuples, or all
	// that have arrived when fewer have. taken is how many it holds, which
	// may differ from tuples when the stream's units are not single tuples
	// (an object of several tuples is not split).
	Slice(ctx context.Context, now time.Time, previous map[string]string, tuples int64) (slice map[string]string, taken int64, err error)
}

// LateCounter is a Source whose window can have late tuples: timestamped
// inside the window but arrived after the window's batches were cut
// there, so that no batch reads them (Kafka records written after a
// partition's first record at or after the window end). It counts them,
// so that they are reported rather than silently lost.
type LateCounter interface {
	Source
	// Late is how many late tuples have arrived so far.
	Late(ctx context.Context) (int64, error)
}
