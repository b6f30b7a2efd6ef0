package controllers

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/source"
	"github.com/laxity-dev/laxity/internal/source/kafka"
	"github.com/laxity-dev/laxity/internal/source/objectstore"
	"github.com/laxity-dev/laxity/internal/spec"
)

// Sources opens the input sources of queries. A source that holds clients
// (Kafka, object storage) is kept for its query, both reconcilers sharing it,
// until the query's spec or its Secret changes or the query is deleted;
// synthetic sources are cheap and made on every call.
type Sources struct {
	// Reader reads the Secrets sources name, from the API server: the
	// manager caches no Secrets.
	Reader client.Reader

	mu   sync.Mutex
	open map[types.NamespacedName]openSource
	// seen are the arrival counts read from sources that cannot say what
	// had arrived at an earlier instant, by query, oldest first.
	seen map[types.NamespacedName][]sample
	// latest is each query's latest reading, which the ElasticSchedule
	// controller takes once per pass and the IntermittentQuery controller
	// reports, so that one read of an input serves both.
	latest map[types.NamespacedName]Reading
}

// Reading is what a query's input said at one instant: the tuples arrived
// by then, or why the input could not be read.
type Reading struct {
	// UID is the query's: a query deleted and made again under the same
	// name does not see the old one's reading.
	UID     types.UID
	At      time.Time
	Arrived int64
	// Late is the window's late tuples so far (source.LateCounter), once
	// the window has ended; nil before, or for a source without any.
	Late *int64
	Err  error
}

// sample is a count of arrived tuples and when it was read.
type sample struct {
	at      time.Time
	arrived int64
}

// openSource is a kept source and what it was opened from.
type openSource struct {
	uid           types.UID
	generation    int64
	secretVersion string
	src           source.Source
	// close releases the source's connections, if it holds any.
	close func()
}

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// For is the source of q's tuples. Errors name the field.
func (s *Sources) For(ctx context.Context, q *laxityv1alpha1.IntermittentQuery) (source.Source, error) {
	inputs := spec.Inputs(q)
	// secrets are the data of each input's Secret, by the input's field.
	secrets := map[string]map[string][]byte{}
	var versions []string
	external := false
	for _, in := range inputs {
		field, ref := remoteField(in)
		if field == "" {
			continue
		}
		external = true
		if ref == nil {
			continue
		}
		if s.Reader == nil {
			return nil, fmt.Errorf("%s.secretRef: Secret %s: this manager reads no Secrets", field, ref.Name)
		}
		var secret corev1.Secret
		if err := s.Reader.Get(ctx, client.ObjectKey{Namespace: q.Namespace, Name: ref.Name}, &secret); err != nil {
			return nil, fmt.Errorf("%s.secretRef: Secret %s: %w", field, ref.Name, err)
		}
		secrets[in.Field] = secret.Data
		versions = append(versions, ref.Name+"="+secret.ResourceVersion)
	}
	if !external {
		return spec.SyntheticSource(ctx, q)
	}
	version := strings.Join(versions, ",")
	key := client.ObjectKeyFromObject(q)
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.open[key]; ok && o.uid == q.UID && o.generation == q.Generation && o.secretVersion == version {
		return o.src, nil
	}
	opened := openSource{uid: q.UID, generation: q.Generation, secretVersion: version}
	var closers []func()
	opened.close = func() {
		for _, c := range closers {
			c()
		}
	}
	open := func(in spec.FieldInput) (source.Source, error) {
		field, ref := remoteField(in)
		var src source.Source
		var err error
		switch {
		case in.Kafka != nil:
			var closer func()
			if src, closer, err = openKafka(q, in.Kafka, secrets[in.Field]); err == nil {
				closers = append(closers, closer)
			}
		case in.ObjectStore != nil:
			src, err = openObjectStore(q, in.ObjectStore, secrets[in.Field], ref != nil)
		default:
			return source.FromInput(in.Field, q.Spec.Window, in.Input, in.ActualProfile)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		return src, nil
	}
	var err error
	if len(q.Spec.Inputs) == 0 {
		opened.src, err = open(inputs[0])
	} else {
		opened.src, err = spec.JoinedSource(q, open)
	}
	if err != nil {
		opened.close()
		return nil, err
	}
	s.forget(key)
	if s.open == nil {
		s.open = map[types.NamespacedName]openSource{}
	}
	s.open[key] = opened
	return opened.src, nil
}

// remoteField is the field of an input read from outside, and the Secret
// it names; "" for a synthetic input.
func remoteField(in spec.FieldInput) (string, *laxityv1alpha1.SecretReference) {
	switch {
	case in.Kafka != nil:
		return in.Field + ".kafka", in.Kafka.SecretRef
	case in.ObjectStore != nil:
		return in.Field + ".objectStore", in.ObjectStore.SecretRef
	}
	return "", nil
}

func openKafka(q *laxityv1alpha1.IntermittentQuery, in *laxityv1alpha1.KafkaInput, secret map[string][]byte) (source.Source, func(), error) {
	cfg, err := kafka.ConfigFromSecret(in.Brokers, in.Topic, secret)
	if err != nil {
		return nil, nil, err
	}
	src, err := kafka.New(cfg, q.Spec.Window.Start.Time, q.Spec.Window.End.Time)
	if err != nil {
		return nil, nil, err
	}
	return src, src.Close, nil
}

func openObjectStore(q *laxityv1alpha1.IntermittentQuery, in *laxityv1alpha1.ObjectStoreInput, secret map[string][]byte, hasSecret bool) (source.Source, error) {
	cfg := objectstore.Config{
		Endpoint: in.Endpoint, Region: in.Region, Bucket: in.Bucket, Prefix: in.Prefix, PathStyle: in.PathStyle,
		TuplesPerObject: ptr.Deref(in.TuplesPerObject, 0), BytesPerTuple: ptr.Deref(in.BytesPerTuple, 0),
		KeyTimeLayout: in.KeyTimeLayout, Settle: in.Settle.Duration,
	}
	if hasSecret {
		creds, err := objectstore.CredentialsFromSecret(secret)
		if err != nil {
			return nil, fmt.Errorf("secretRef: %w", err)
		}
		cfg.Credentials = creds
	}
	return objectstore.New(cfg, q.Spec.Window.Start.Time, q.Spec.Window.End.Time)
}

// Read reads q's input at now and keeps the reading as q's latest. src is
// nil when the input cannot be read; the reading then says why.
func (s *Sources) Read(ctx context.Context, q *laxityv1alpha1.IntermittentQuery, now time.Time) (source.Source, Reading) {
	reading := Reading{UID: q.UID, At: now}
	src, err := s.For(ctx, q)
	if err == nil {
		if reading.Arrived, err = src.Arrived(ctx, now); err != nil {
			err = fmt.Errorf("reading arrivals: %w", err)
		}
	}
	if c, counts := src.(source.LateCounter); err == nil && counts && !now.Before(q.Spec.Window.End.Time) {
		var late int64
		if late, err = c.Late(ctx); err != nil {
			err = fmt.Errorf("counting late tuples: %w", err)
		}
		reading.Late = &late
	}
	reading.Err = err
	key := client.ObjectKeyFromObject(q)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.latest == nil {
		s.latest = map[types.NamespacedName]Reading{}
	}
	s.latest[key] = reading
	if err != nil {
		return nil, reading
	}
	return src, reading
}

// Latest is q's latest reading, if its input was read since the query was
// made (or the manager started).
func (s *Sources) Latest(q *laxityv1alpha1.IntermittentQuery) (Reading, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.latest[client.ObjectKeyFromObject(q)]
	return r, ok && r.UID == q.UID
}

// RateOver is the rate q's tuples arrived at over the window up to now, when
// it can be told. A source that follows the clock (source.Forecaster) says
// what had arrived window ago; for the others, which report only what has
// arrived by now, RateOver keeps the counts it is given and measures from
// the latest one read at least window ago. After a restart such a source
// has no rate until a window has passed.
func (s *Sources) RateOver(ctx context.Context, q *laxityv1alpha1.IntermittentQuery, src source.Source, now time.Time, arrived int64, window time.Duration) (float64, bool) {
	if _, clocked := src.(source.Forecaster); clocked {
		earlier, err := src.Arrived(ctx, now.Add(-window))
		return float64(arrived-earlier) / window.Seconds(), err == nil
	}
	key := client.ObjectKeyFromObject(q)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[types.NamespacedName][]sample{}
	}
	s.seen[key] = append(s.seen[key], sample{at: now, arrived: arrived})
	samples := s.seen[key]
	// Keep the latest sample at least window old and everything after it.
	from := -1
	for i, smp := range samples {
		if !smp.at.After(now.Add(-window)) {
			from = i
		}
	}
	if from < 0 {
		return 0, false
	}
	s.seen[key] = samples[from:]
	old := samples[from]
	return float64(arrived-old.arrived) / now.Sub(old.at).Seconds(), true
}

// Forget closes the source kept for the query named key, if any.
func (s *Sources) Forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget(key)
}

func (s *Sources) forget(key types.NamespacedName) {
	if o, ok := s.open[key]; ok {
		o.close()
		delete(s.open, key)
	}
	delete(s.seen, key)
	delete(s.latest, key)
}
