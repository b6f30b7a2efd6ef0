package spec

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/costmodel"
	"github.com/laxity-dev/laxity/internal/planner"
)

// Sharing is the schedule's spec.planning.sharing, Auto when unset.
func Sharing(es *laxityv1alpha1.ElasticSchedule) laxityv1alpha1.Sharing {
	return cmp.Or(es.Spec.Planning.Sharing, laxityv1alpha1.SharingAuto)
}

// StreamScan is the scan model of the schedule's stream i. declared is
// false for a stream that declares none: nothing is known to be saved by
// sharing it, so its queries are planned alone.
func StreamScan(es *laxityv1alpha1.ElasticSchedule, i int) (scan costmodel.Linear, declared bool, err error) {
	s := es.Spec.Streams[i]
	if s.Scan == nil {
		return costmodel.Linear{}, false, nil
	}
	field := fmt.Sprintf("spec.streams[%d].scan", i)
	scan, err = coefficients(field, s.Scan.OverheadSeconds, s.Scan.SerialSecondsPerTuple, s.Scan.ParallelSecondsPerTuple,
		"serialSecondsPerTuple", "parallelSecondsPerTuple")
	if err != nil {
		return scan, true, err
	}
	if err := scan.CheckBounds(planner.MaxCoefficient); err != nil {
		return scan, true, fmt.Errorf("%s: %w", field, err)
	}
	return scan, true, nil
}

// SharingKey is the planner's stream of q (planner.Query.Stream): the
// queries with the same key, and only those, may be served by one shared
// step, which is one SparkApplication in one namespace, made from one
// template, reading one input with one set of credentials. So the key is
// the namespace, the declared stream and a digest of everything such a
// step takes from its members: the Spark template, the input's location
// and its source (Kafka brokers, topic and Secret; object store endpoint,
// region, bucket, prefix and Secret). A query of another namespace, or one
// with a different template or credentials, never gets the same key by
// naming the same stream. "" when q shares with nothing: it names no
// stream or opts out.
func SharingKey(q *laxityv1alpha1.IntermittentQuery) string {
	in := q.Spec.Input
	if in.Stream == "" || q.Spec.Sharing == laxityv1alpha1.SharingNone {
		return ""
	}
	must := struct {
		Template json.RawMessage                  `json:"template,omitempty"`
		Location string                           `json:"location,omitempty"`
		Kafka    *laxityv1alpha1.KafkaInput       `json:"kafka,omitempty"`
		Object   *laxityv1alpha1.ObjectStoreInput `json:"objectStore,omitempty"`
	}{Template: canonicalJSON(q.Spec.SparkApplication), Location: in.Location, Kafka: in.Kafka, Object: in.ObjectStore}
	if must.Kafka != nil {
		k := must.Kafka.DeepCopy()
		slices.Sort(k.Brokers)
		must.Kafka = k
	}
	raw, _ := json.Marshal(must) // plain structs: cannot fail
	sum := sha256.Sum256(raw)
	return q.Namespace + "/" + in.Stream + "/" + hex.EncodeToString(sum[:8])
}

// StreamOfKey is the declared stream name a SharingKey holds.
func StreamOfKey(key string) string {
	parts := strings.Split(key, "/")
	if len(parts) != 3 {
		return key
	}
	return parts[1]
}

// canonicalJSON is raw with its object keys in order, so that two
// templates written alike digest alike; raw as it is when it does not
// parse (rendering refuses it later).
func canonicalJSON(raw *runtime.RawExtension) json.RawMessage {
	if raw == nil || len(raw.Raw) == 0 {
		return nil
	}
	b := raw.Raw
	var v any
	if json.Unmarshal(b, &v) != nil {
		return bytes.Clone(b)
	}
	out, _ := json.Marshal(v) // maps marshal in key order
	return out
}

// streams sets w's streams and each query's stream (SharingKey) from the
// schedule's spec.streams, when the schedule shares. A query names a
// stream the schedule must declare; a stream without a scan model is not
// shared, and notes say so.
func streams(es *laxityv1alpha1.ElasticSchedule, queries []laxityv1alpha1.IntermittentQuery, w *planner.Workload) (notes []string, errs []error) {
	scans := map[string]costmodel.Linear{}
	noScan := map[string]bool{}
	for i, s := range es.Spec.Streams {
		scan, declared, err := StreamScan(es, i)
		switch {
		case err != nil:
			errs = append(errs, objectError("ElasticSchedule", &es.ObjectMeta, fmt.Errorf("stream %q: %w", s.Name, err)))
		case !declared:
			noScan[s.Name] = true
		default:
			scans[s.Name] = scan
		}
	}
	declared := func(name string) bool {
		return slices.ContainsFunc(es.Spec.Streams, func(s laxityv1alpha1.Stream) bool { return s.Name == name })
	}
	planned := make(map[string]int, len(w.Queries))
	for i, pq := range w.Queries {
		planned[pq.Name] = i
	}
	keys := map[string]costmodel.Linear{}
	unscanned := map[string]bool{}
	// byKey are the queries of each key, by stream, to say when one
	// stream's queries are kept apart.
	byKey := map[string]map[string][]string{}
	for i := range queries {
		q := &queries[i]
		name := q.Spec.Input.Stream
		if name == "" {
			continue
		}
		if !declared(name) {
			errs = append(errs, objectError("IntermittentQuery", &q.ObjectMeta,
				fmt.Errorf("spec.input.stream: ElasticSchedule %s declares no stream %q in spec.streams", es.Name, name)))
			continue
		}
		key := SharingKey(q)
		scan, ok := scans[name]
		if key == "" || !ok || Sharing(es) == laxityv1alpha1.SharingNone {
			if noScan[name] && !unscanned[name] {
				unscanned[name] = true
				notes = append(notes, fmt.Sprintf("stream %s declares no scan in spec.streams: its queries are planned alone", name))
			}
			continue
		}
		keys[key] = scan
		if byKey[name] == nil {
			byKey[name] = map[string][]string{}
		}
		byKey[name][key] = append(byKey[name][key], q.Name)
		if at, ok := planned[q.Name]; ok {
			w.Queries[at].Stream = key
		}
	}
	for _, key := range slices.Sorted(maps.Keys(keys)) {
		w.Streams = append(w.Streams, planner.Stream{Name: key, Scan: keys[key]})
	}
	for _, name := range slices.Sorted(maps.Keys(byKey)) {
		if len(byKey[name]) < 2 {
			continue
		}
		var apart []string
		for _, key := range slices.Sorted(maps.Keys(byKey[name])) {
			apart = append(apart, strings.Join(byKey[name][key], ", "))
		}
		slices.Sort(apart)
		notes = append(notes, fmt.Sprintf("stream %s: queries with different Spark templates or inputs never share a batch, so %s are planned apart",
			name, strings.Join(apart, " | ")))
	}
	w.Planning.Sharing = len(w.Streams) > 0
	return notes, errs
}
