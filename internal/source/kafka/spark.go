package kafka

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// OffsetsJSON returns a batch's ranges as the startingOffsets and
// endingOffsets options of Spark's Kafka batch source,
// {"<topic>":{"0":23,"1":42}}: the From of each range in starting and its To
// in ending, which Spark, too, reads as exclusive. Partitions are in
// ascending numeric order, so that the same batch always gives the same
// bytes (and the same SparkApplication).
func OffsetsJSON(topic string, ranges map[int32]Range) (starting, ending string) {
	partitions := slices.Sorted(maps.Keys(ranges))
	// Marshaling a string cannot fail.
	quotedTopic, _ := json.Marshal(topic)
	write := func(offset func(Range) int64) string {
		var b strings.Builder
		b.WriteByte('{')
		b.Write(quotedTopic)
		b.WriteString(":{")
		for i, p := range partitions {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('"')
			b.WriteString(strconv.FormatInt(int64(p), 10))
			b.WriteString(`":`)
			b.WriteString(strconv.FormatInt(offset(ranges[p]), 10))
		}
		b.WriteString("}}")
		return b.String()
	}
	return write(func(r Range) int64 { return r.From }), write(func(r Range) int64 { return r.To })
}

// ParseOffsetsJSON is the inverse of OffsetsJSON: the ranges of a batch
// whose startingOffsets and endingOffsets were starting and ending, as read
// back from a SparkApplication after an operator restart to learn where the
// batches ended. It is strict, since a batch resumed from a misread offset
// would skip or repeat records: each document must be one JSON object whose
// only key is topic, holding an object of canonical decimal partition
// numbers (no duplicates) to offsets. Both must name the same partitions,
// with offsets that are not negative (Spark's -1 and -2 mean latest and
// earliest, not a position to resume from) and an ending offset not before
// the starting one.
func ParseOffsetsJSON(topic, starting, ending string) (map[int32]Range, error) {
	from, err := parseOffsets(topic, starting)
	if err != nil {
		return nil, fmt.Errorf("startingOffsets: %w", err)
	}
	to, err := parseOffsets(topic, ending)
	if err != nil {
		return nil, fmt.Errorf("endingOffsets: %w", err)
	}
	for _, p := range slices.Sorted(maps.Keys(to)) {
		if _, ok := from[p]; !ok {
			return nil, fmt.Errorf("startingOffsets: partition %d of endingOffsets is missing", p)
		}
	}
	ranges := make(map[int32]Range, len(from))
	for _, p := range slices.Sorted(maps.Keys(from)) {
		end, ok := to[p]
		switch {
		case !ok:
			return nil, fmt.Errorf("endingOffsets: partition %d of startingOffsets is missing", p)
		case end < from[p]:
			return nil, fmt.Errorf("partition %d: ending offset %d is before the starting offset %d", p, end, from[p])
		}
		ranges[p] = Range{From: from[p], To: end}
	}
	return ranges, nil
}

// parseOffsets reads one {"<topic>":{"<partition>":<offset>,…}} document
// token by token, which, unlike decoding into a map, sees duplicate keys.
func parseOffsets(topic, doc string) (map[int32]int64, error) {
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	tok, err := token(dec)
	if err != nil {
		return nil, err
	}
	if name, ok := tok.(string); !ok || name != topic {
		return nil, fmt.Errorf("want the topic %q as the only key, got %v", topic, describe(tok))
	}
	if err := expectDelim(dec, '{'); err != nil {
		return nil, fmt.Errorf("topic %q: %w", topic, err)
	}
	offsets := make(map[int32]int64)
	for dec.More() {
		tok, err := token(dec)
		if err != nil {
			return nil, err
		}
		// Inside an object the decoder yields only string keys.
		key, _ := tok.(string)
		partition, err := strconv.ParseInt(key, 10, 32)
		if err != nil || partition < 0 || strconv.FormatInt(partition, 10) != key {
			return nil, fmt.Errorf("partition %q: want a partition number in canonical decimal", key)
		}
		p := int32(partition)
		if _, dup := offsets[p]; dup {
			return nil, fmt.Errorf("partition %d: listed twice", p)
		}
		tok, err = token(dec)
		if err != nil {
			return nil, err
		}
		number, isNumber := tok.(json.Number)
		offset, err := strconv.ParseInt(string(number), 10, 64)
		if !isNumber || err != nil || offset < 0 {
			return nil, fmt.Errorf("partition %d: want an offset, a non-negative integer, got %v", p, describe(tok))
		}
		offsets[p] = offset
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, err
	}
	tok, err = token(dec)
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('}') {
		return nil, fmt.Errorf("want the topic %q as the only key, got %v", topic, describe(tok))
	}
	if tok, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("want the end of the document, got %v", describe(tok))
	}
	return offsets, nil
}

// token is dec's next token; the document ending before it is an error.
func token(dec *json.Decoder) (json.Token, error) {
	tok, err := dec.Token()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected end of the document")
	}
	return tok, err
}

// expectDelim reads the next token and checks that it is want.
func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := token(dec)
	if err != nil {
		return err
	}
	if tok != want {
		return fmt.Errorf("want %q, got %v", string(want), describe(tok))
	}
	return nil
}

// describe shows a JSON token in an error.
func describe(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		return strconv.Quote(string(v))
	case string:
		return strconv.Quote(v)
	case nil:
		return "null"
	}
	return fmt.Sprint(tok)
}
