// Package objectstore counts a query's tuples as objects arrive in a bucket
// of S3 or an S3-compatible store, and cuts them into batches whose objects
// a Spark job reads.
//
// # Positions and arrivals
//
// Every object under Config.Prefix has an arrival, its LastModified, and a
// position, the pair (key time, key) ordered by time and then key. The key
// time is the instant the key carries right after the prefix when
// Config.KeyTimeLayout is set (an object whose key carries none is skipped
// and counted by Source.Skipped), and the LastModified otherwise. An object
// is the window's when its position's time is in [window start, window end);
// it holds Config.TuplesPerObject tuples, or its size in
// Config.BytesPerTuple rounded up, at least one.
//
// # Visibility
//
// At now, an object counts once its LastModified is at or before the cut,
// now − Config.Settle. S3 dates an object from the start of its upload (a
// multipart upload from its creation) but lists it only once the upload is
// complete; waiting Settle makes every object dated at or before the cut
// listed by now, so that a batch never holds half of what was uploaded
// around its cut. The limit: an upload that takes longer than Settle, or a
// store whose clock runs behind the operator's by more, is listed only after
// a batch cut past its date. A later batch takes it as usual when its
// position is after that batch's cursor, but no batch takes it when its
// position is at or before, although Arrived counts it; set Settle above the
// longest upload.
//
// # Batches
//
// Source.Slice returns the next batch's input as a map of strings, which
// becomes annotations laxity.dev/<key> of the batch's SparkApplication and
// is read back after an operator restart:
//
//   - objectstore-bucket, objectstore-prefix: where the objects are.
//   - objectstore-after: the previous batch's cursor, exclusive; empty for
//     the first batch. A cursor is a position written <RFC 3339 UTC time
//     with nanoseconds>|<key> (see ParseCursor).
//   - objectstore-through: this batch's cursor, its last position,
//     inclusive; objectstore-after again when it took no new object, and
//     empty while no batch has.
//   - objectstore-cut: the cut, RFC 3339 UTC with nanoseconds.
//   - objectstore-objects: how many objects the batch reads.
//   - objectstore-late: a JSON array of the keys of the batch's late
//     objects (below), in position order, [] when none.
//   - late: the tuples (events) of those late objects, 0 when none; as an
//     annotation laxity.dev/late, the count every source that can tell
//     gives.
//   - objectstore-keys: a JSON array of every key the batch reads, in
//     position order, when it reads at most 1000 objects; absent otherwise.
//   - objectstore-window: the window, <start>/<end> in RFC 3339 UTC with
//     nanoseconds, start inclusive and end exclusive.
//
// The batch reads, in position order, the window's objects after the
// previous cursor that count at the cut, until their tuples reach those
// asked for, and every late object: one at or before the previous cursor
// whose LastModified is after the previous batch's cut and at or before
// this one's, an object whose key time lies in a range that earlier batches
// have read but that arrived after they were cut (by LastModified, no
// object is late). Over batches with cuts
// that do not decrease, every object of the window is read by exactly one
// batch, also when the operator restarts and passes the last batch's map as
// read back from its annotations.
//
// # The Spark job
//
// A job reads the keys of objectstore-keys. When that is absent, it lists
// objectstore-prefix in objectstore-bucket and reads every object whose
// position is in (objectstore-after, objectstore-through] and whose
// LastModified is at or before objectstore-cut, where position and
// LastModified are as above (with the same key time layout), and then the
// keys of objectstore-late. An empty objectstore-after stands for the
// window start, inclusive (objectstore-window holds the window). Late
// objects hold events of the time ranges of
// earlier batches: a job that joins a batch with earlier ones, or keeps
// per-range state, must take them into account. Objects are taken to be
// immutable: an object overwritten after a batch read it is read again by a
// later batch.
//
// The package reads no clock, since every method takes now, and imports no
// Kubernetes package: CredentialsFromSecret takes a Secret's data map.
package objectstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// listCallTimeout bounds every page of a listing, so that an unreachable
// store fails a poll instead of hanging the controller that made it.
const listCallTimeout = 30 * time.Second

// Source is the arrivals of one query's window in a bucket. It is safe for
// concurrent use.
type Source struct {
	client                         *s3.Client
	bucket, prefix                 string
	tuplesPerObject, bytesPerTuple int64
	// keyTime reads key times; nil when LastModified is the position.
	keyTime                *keyTime
	settle                 time.Duration
	windowStart, windowEnd time.Time

	mu      sync.Mutex
	skipped int64
}

// New returns the source of the objects of cfg.Bucket under cfg.Prefix whose
// position is in [windowStart, windowEnd). It reads the SDK's shared
// configuration but connects lazily: a wrong endpoint or credentials show at
// the first Arrived or Slice, not here.
func New(cfg Config, windowStart, windowEnd time.Time) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !windowEnd.After(windowStart) {
		return nil, fmt.Errorf("window end: must be after the window start, got %s ≤ %s",
			windowEnd.Format(time.RFC3339Nano), windowStart.Format(time.RFC3339Nano))
	}
	src := &Source{
		bucket:          cfg.Bucket,
		prefix:          cfg.Prefix,
		tuplesPerObject: cfg.TuplesPerObject,
		bytesPerTuple:   cfg.BytesPerTuple,
		settle:          cfg.Settle,
		windowStart:     windowStart,
		windowEnd:       windowEnd,
	}
	if cfg.KeyTimeLayout != "" {
		// Validate has checked the layout.
		src.keyTime, _ = newKeyTime(cfg.KeyTimeLayout)
	}
	var opts []func(*config.LoadOptions) error
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if c := cfg.Credentials; c != nil {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)))
	}
	// Loading reads files and the environment only; nothing here needs to
	// be cancelled.
	awsConfig, err := config.LoadDefaultConfig(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("objectstore bucket %q: loading the AWS SDK configuration: %w", cfg.Bucket, err)
	}
	if awsConfig.Region == "" {
		return nil, errors.New("objectstore config: region: not set, and the AWS SDK's default chain found none")
	}
	src.client = s3.NewFromConfig(awsConfig, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
	})
	return src, nil
}

// errNotConstructed is returned by the methods of a nil Source.
var errNotConstructed = errors.New("objectstore: source not built by New")

// Arrived implements source.Source: the tuples of the window's objects that
// count at now, those with a LastModified at or before now − Settle. It
// never decreases for increasing now while objects are only added.
func (s *Source) Arrived(ctx context.Context, now time.Time) (int64, error) {
	if s == nil {
		return 0, errNotConstructed
	}
	objects, err := s.list(ctx)
	if err != nil {
		return 0, err
	}
	cut := now.Add(-s.settle)
	var arrived int64
	for _, o := range objects {
		if !o.arrival.After(cut) {
			if arrived, err = s.add(arrived, o.tuples); err != nil {
				return 0, err
			}
		}
	}
	return arrived, nil
}

// Skipped is the number of objects that the last listing found under the
// prefix with a key that carries no instant in Config.KeyTimeLayout. With a
// layout whose instants sort as they pass, such as 2006/01/02/15-04-05, the
// listing reads only the keys from the window start's instant to the window
// end's, so the keys outside that range are not looked at.
func (s *Source) Skipped() int64 {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.skipped
}

// object is one of the window's objects.
type object struct {
	position Cursor
	arrival  time.Time
	tuples   int64
}

// list returns the window's objects, whatever their arrival, in position
// order, and records how many keys it skipped.
func (s *Source) list(ctx context.Context) ([]object, error) {
	input := &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(s.prefix)}
	sortable := s.keyTime != nil && s.keyTime.sortable
	if sortable {
		input.StartAfter = aws.String(s.keyTime.startAfter(s.prefix, s.windowStart))
	}
	var objects []object
	var skipped int64
	pages := s3.NewListObjectsV2Paginator(s.client, input)
listing:
	for pages.HasMorePages() {
		pageCtx, cancel := context.WithTimeout(ctx, listCallTimeout)
		page, err := pages.NextPage(pageCtx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("objectstore bucket %q: listing prefix %q: %w", s.bucket, s.prefix, err)
		}
		for _, listed := range page.Contents {
			key := aws.ToString(listed.Key)
			if sortable && s.keyTime.pastWindow(s.prefix, key, s.windowEnd) {
				break listing
			}
			o, ok, err := s.object(key, listed.LastModified, listed.Size)
			switch {
			case err != nil:
				return nil, fmt.Errorf("objectstore bucket %q: %w", s.bucket, err)
			case !ok:
				skipped++
			case !o.position.Time.Before(s.windowStart) && o.position.Time.Before(s.windowEnd):
				objects = append(objects, o)
			}
		}
	}
	s.mu.Lock()
	s.skipped = skipped
	s.mu.Unlock()
	slices.SortFunc(objects, func(a, b object) int { return a.position.compare(b.position) })
	return objects, nil
}

// object returns the object listed under key, and false when its key
// carries no instant in the key time layout.
func (s *Source) object(key string, lastModified *time.Time, size *int64) (object, bool, error) {
	if !strings.HasPrefix(key, s.prefix) {
		return object{}, false, fmt.Errorf("object %q: listed under prefix %q, which it does not start with", key, s.prefix)
	}
	if lastModified == nil {
		return object{}, false, fmt.Errorf("object %q: the listing gives no LastModified", key)
	}
	o := object{position: Cursor{Time: lastModified.UTC(), Key: key}, arrival: *lastModified, tuples: s.tuplesPerObject}
	if s.keyTime != nil {
		t, ok := s.keyTime.parse(key[len(s.prefix):])
		if !ok {
			return object{}, false, nil
		}
		o.position.Time = t.UTC()
	}
	if s.bytesPerTuple > 0 {
		switch {
		case size == nil:
			return object{}, false, fmt.Errorf("object %q: the listing gives no size", key)
		case *size < 0:
			return object{}, false, fmt.Errorf("object %q: the listing gives a negative size, %d", key, *size)
		}
		o.tuples = *size / s.bytesPerTuple
		if *size%s.bytesPerTuple != 0 {
			o.tuples++
		}
		o.tuples = max(o.tuples, 1)
	}
	return o, true, nil
}

// add is total + tuples, or an error where that overflows.
func (s *Source) add(total, tuples int64) (int64, error) {
	if tuples > math.MaxInt64-total {
		return 0, fmt.Errorf("objectstore bucket %q: the window holds more than %d tuples", s.bucket, int64(math.MaxInt64))
	}
	return total + tuples, nil
}
