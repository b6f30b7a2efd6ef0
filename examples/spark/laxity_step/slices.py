"""A batch's exact input, read from its slice (the laxity.dev/<key>
annotations, --laxity-<key> arguments and spark.laxity.<key> settings the
operator's input source wrote).

- Kafka (internal/source/kafka): kafka-topic, and kafka-starting-offsets and
  kafka-ending-offsets, one JSON document each, {"<topic>":{"<partition>":
  <offset>, ...}}, which are Spark's Kafka batch source's startingOffsets
  and endingOffsets (the ending offsets exclusive). They are checked as
  strictly as the operator checks them when it reads them back, since a
  misread offset skips or repeats records.
- Object storage (internal/source/objectstore): objectstore-bucket,
  objectstore-prefix, objectstore-objects (how many objects the batch
  reads) and objectstore-keys, a JSON array of every key it reads, late
  ones included, when there are at most 1,000 of them.

A batch over several inputs has the same keys per input, prefixed with the
input's name and a dot (orders.kafka-starting-offsets), each checked as a
batch of that input alone would be; errors name the prefixed key.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Tuple, Union

from .params import JoinedInput, ParameterError, describe, input_key

KAFKA_TOPIC = "kafka-topic"
KAFKA_STARTING = "kafka-starting-offsets"
KAFKA_ENDING = "kafka-ending-offsets"
OBJECTSTORE_BUCKET = "objectstore-bucket"
OBJECTSTORE_PREFIX = "objectstore-prefix"
OBJECTSTORE_OBJECTS = "objectstore-objects"
OBJECTSTORE_KEYS = "objectstore-keys"
OBJECTSTORE_THROUGH = "objectstore-through"

_PARTITION = re.compile(r"^(0|[1-9][0-9]*)$")


@dataclass(frozen=True)
class KafkaSlice:
    """A batch's records: per partition, offsets [start, end)."""

    topic: str
    ranges: Dict[int, Tuple[int, int]]
    # The documents as laxity wrote them, passed to Spark unchanged.
    starting_offsets: str
    ending_offsets: str

    @property
    def records(self) -> int:
        return sum(end - start for start, end in self.ranges.values())

    def assign(self) -> str:
        """Spark's assign option: exactly the slice's partitions."""
        return json.dumps({self.topic: sorted(self.ranges)})


@dataclass(frozen=True)
class ObjectSlice:
    """A batch's objects: every key it reads, in position order."""

    bucket: str
    prefix: str
    keys: Tuple[str, ...]

    def uris(self, scheme: str = "s3a") -> List[str]:
        return ["%s://%s/%s" % (scheme, self.bucket, key) for key in self.keys]


def kind_of(slice_: Mapping[str, str]) -> str:
    """kafka, objectstore or none: which source wrote the slice."""
    if any(k.startswith("kafka-") for k in slice_):
        return "kafka"
    if any(k.startswith("objectstore-") for k in slice_):
        return "objectstore"
    return "none"


def kafka(slice_: Mapping[str, str], input_name: Optional[str] = None) -> KafkaSlice:
    """The Kafka slice, or ParameterError naming the key that is wrong;
    input_name is the input whose slice it is in a batch over several."""
    named = lambda key: describe(input_key(input_name, key))  # noqa: E731
    for key in (KAFKA_TOPIC, KAFKA_STARTING, KAFKA_ENDING):
        if key not in slice_:
            raise ParameterError("%s: missing from a Kafka batch" % named(key))
    topic = slice_[KAFKA_TOPIC]
    if not topic:
        raise ParameterError("%s: empty" % named(KAFKA_TOPIC))
    start = _offsets(topic, slice_[KAFKA_STARTING], named(KAFKA_STARTING))
    end = _offsets(topic, slice_[KAFKA_ENDING], named(KAFKA_ENDING))
    if set(start) != set(end):
        missing = sorted(set(start) ^ set(end))[0]
        raise ParameterError(
            "%s and %s: partition %d is in one and not the other" % (named(KAFKA_STARTING), named(KAFKA_ENDING), missing)
        )
    for p in sorted(start):
        if end[p] < start[p]:
            raise ParameterError(
                "%s: partition %d ends at %d, before its starting offset %d" % (named(KAFKA_ENDING), p, end[p], start[p])
            )
    ranges = {p: (start[p], end[p]) for p in sorted(start)}
    return KafkaSlice(topic, ranges, slice_[KAFKA_STARTING], slice_[KAFKA_ENDING])


def _offsets(topic: str, document: str, where: str) -> Dict[int, int]:

    def unique(pairs):
        seen = {}
        for k, v in pairs:
            if k in seen:
                raise ParameterError("%s: %r is listed twice" % (where, k))
            seen[k] = v
        return seen

    try:
        value = json.loads(document, object_pairs_hook=unique)
    except ParameterError:
        raise
    except ValueError as e:
        raise ParameterError("%s: not JSON: %s" % (where, e)) from None
    if not isinstance(value, dict) or list(value) != [topic]:
        raise ParameterError('%s: want {"%s": {"<partition>": <offset>, ...}}, got %s' % (where, topic, document))
    partitions = value[topic]
    if not isinstance(partitions, dict) or not partitions:
        raise ParameterError("%s: topic %s: want an object of partitions to offsets, got %s" % (where, topic, json.dumps(partitions)))
    out = {}
    for name, offset in partitions.items():
        if not _PARTITION.match(name) or int(name) > 2**31 - 1:
            raise ParameterError("%s: partition %r: want a partition number in decimal" % (where, name))
        # bool is an int in Python; JSON's true is not an offset. Spark's
        # -1 and -2 (latest, earliest) are not exact positions.
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ParameterError("%s: partition %s: want an offset of 0 or more, got %s" % (where, name, json.dumps(offset)))
        out[int(name)] = offset
    return out


def objectstore(slice_: Mapping[str, str], input_name: Optional[str] = None) -> ObjectSlice:
    """The object-storage slice, or ParameterError naming the key that is
    wrong; input_name is the input whose slice it is in a batch over
    several."""
    named = lambda key: describe(input_key(input_name, key))  # noqa: E731
    for key in (OBJECTSTORE_BUCKET, OBJECTSTORE_PREFIX, OBJECTSTORE_OBJECTS):
        if key not in slice_:
            raise ParameterError("%s: missing from an object-storage batch" % named(key))
    bucket, prefix = slice_[OBJECTSTORE_BUCKET], slice_[OBJECTSTORE_PREFIX]
    if not bucket:
        raise ParameterError("%s: empty" % named(OBJECTSTORE_BUCKET))
    objects = slice_[OBJECTSTORE_OBJECTS]
    if not _PARTITION.match(objects):
        raise ParameterError("%s: want a whole number, got %r" % (named(OBJECTSTORE_OBJECTS), objects))
    if OBJECTSTORE_KEYS not in slice_:
        # The operator lists at most 1,000 keys; past that a job lists the
        # cursor range itself, which this reference job does not do.
        raise ParameterError(
            "%s: absent, as laxity leaves it for a batch of more than 1,000 objects (this one reads %s); "
            "the reference job reads listed keys only: cut smaller batches (fewer tuples per batch or more "
            "tuples per object), or list %s..%s in the job"
            % (
                named(OBJECTSTORE_KEYS), objects, input_key(input_name, "objectstore-after"),
                input_key(input_name, OBJECTSTORE_THROUGH),
            )
        )
    try:
        keys = json.loads(slice_[OBJECTSTORE_KEYS])
    except ValueError as e:
        raise ParameterError("%s: not JSON: %s" % (named(OBJECTSTORE_KEYS), e)) from None
    if not isinstance(keys, list) or not all(isinstance(k, str) and k for k in keys):
        raise ParameterError("%s: want a JSON array of object keys" % named(OBJECTSTORE_KEYS))
    if len(set(keys)) != len(keys):
        raise ParameterError("%s: a key is listed twice, which would read its object twice" % named(OBJECTSTORE_KEYS))
    for key in keys:
        if not key.startswith(prefix):
            raise ParameterError("%s: key %r is not under the prefix %r" % (named(OBJECTSTORE_KEYS), key, prefix))
    if len(keys) != int(objects):
        raise ParameterError(
            "%s lists %d keys, but %s says %s" % (named(OBJECTSTORE_KEYS), len(keys), named(OBJECTSTORE_OBJECTS), objects)
        )
    return ObjectSlice(bucket, prefix, tuple(keys))


def of_input(joined: JoinedInput) -> Optional[Union[KafkaSlice, ObjectSlice]]:
    """The slice of one input of a batch over several, checked as a batch
    of that input alone is: its Kafka offsets, its objects, or None when it
    has neither (then its location and range say what to read). A Kafka
    input's tuples are its records, so its offsets must hold exactly its
    range's count: laxity counts the records it cuts, and a difference
    means the job would read other records than laxity planned."""
    source = kind_of(joined.slice)
    if source == "objectstore":
        return objectstore(joined.slice, joined.name)
    if source != "kafka":
        return None
    k = kafka(joined.slice, joined.name)
    if k.records != joined.to_tuple - joined.from_tuple:
        raise ParameterError(
            "%s: the offsets hold %d records, but %s and %s say %d tuples [%d, %d)"
            % (
                describe(joined.key(KAFKA_ENDING)), k.records, describe(joined.key("from-tuple")),
                describe(joined.key("to-tuple")), joined.to_tuple - joined.from_tuple, joined.from_tuple, joined.to_tuple,
            )
        )
    return k


def glob_regex(glob: str) -> str:
    """The regular expression, valid in Python and in Java (Spark's RLIKE),
    of a glob where * is any run of characters and ? any one; the caller
    anchors it."""
    out = []
    for c in glob:
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c.isalnum() or c in "_/":
            out.append(c)
        else:
            # Java and Python read a backslash before punctuation as the
            # character itself.
            out.append("\\" + c)
    return "".join(out)


def glob_matches(glob: str, text: str) -> bool:
    return re.fullmatch(glob_regex(glob), text, flags=re.DOTALL) is not None
