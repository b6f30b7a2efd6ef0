"""A batch's exact input: Kafka offset ranges and object keys, read as
strictly as the operator writes them (internal/source/kafka/spark.go,
internal/source/objectstore/slice.go)."""

from __future__ import annotations

import json
import random
import re
import unittest

from laxity_step import params, slices


def kafka_slice(start='{"events":{"0":5,"1":0,"2":17}}', end='{"events":{"0":9,"1":0,"2":40}}', topic="events"):
    return {"kafka-topic": topic, "kafka-starting-offsets": start, "kafka-ending-offsets": end}


class Kafka(unittest.TestCase):
    def test_ranges(self):
        k = slices.kafka(kafka_slice())
        self.assertEqual(k.ranges, {0: (5, 9), 1: (0, 0), 2: (17, 40)})
        self.assertEqual(k.records, 4 + 0 + 23)
        self.assertEqual(json.loads(k.assign()), {"events": [0, 1, 2]})
        # Spark gets laxity's documents unchanged.
        self.assertEqual(k.starting_offsets, '{"events":{"0":5,"1":0,"2":17}}')

    def test_consecutive_batches_tile_the_topic(self):
        # As the operator cuts them: every batch starts where the one before
        # ended, so reading each batch's ranges reads every offset once.
        rng = random.Random(1)
        ends = {p: 0 for p in range(4)}
        seen = {p: [] for p in ends}
        for _ in range(50):
            starts = dict(ends)
            for p in ends:
                ends[p] += rng.randint(0, 30)
            doc = lambda offsets: json.dumps({"t": {str(p): o for p, o in offsets.items()}}, separators=(",", ":"))  # noqa: E731
            k = slices.kafka(kafka_slice(doc(starts), doc(ends), "t"))
            for p, (a, b) in k.ranges.items():
                seen[p].extend(range(a, b))
        for p, offsets in seen.items():
            self.assertEqual(offsets, list(range(ends[p])))

    BAD = [
        (kafka_slice(topic=""), "--laxity-kafka-topic (spark.laxity.kafka-topic): empty"),
        ({"kafka-topic": "events"}, "--laxity-kafka-starting-offsets (spark.laxity.kafka-starting-offsets): missing"),
        (kafka_slice(start="{"), "kafka-starting-offsets): not JSON"),
        (kafka_slice(start='{"other":{"0":5}}'), 'want {"events": {"<partition>": <offset>, ...}}'),
        (kafka_slice(start='{"events":{"0":5},"x":{}}'), 'want {"events"'),
        (kafka_slice(start='{"events":{}}'), "want an object of partitions to offsets"),
        (kafka_slice(start='{"events":{"00":5}}'), "partition '00': want a partition number in decimal"),
        (kafka_slice(start='{"events":{"-1":5}}'), "partition '-1'"),
        (kafka_slice(start='{"events":{"0":5,"0":6}}'), "'0' is listed twice"),
        (kafka_slice(start='{"events":{"0":-2}}'), "partition 0: want an offset of 0 or more, got -2"),
        (kafka_slice(start='{"events":{"0":1.5}}'), "want an offset of 0 or more, got 1.5"),
        (kafka_slice(start='{"events":{"0":true}}'), "want an offset of 0 or more, got true"),
        (kafka_slice(start='{"events":{"0":5}}', end='{"events":{"0":4}}'), "partition 0 ends at 4, before its starting offset 5"),
        (kafka_slice(start='{"events":{"0":5}}', end='{"events":{"1":9}}'), "partition 0 is in one and not the other"),
    ]

    def test_bad_slices_are_named(self):
        for slice_, message in self.BAD:
            with self.subTest(slice=slice_):
                with self.assertRaises(params.ParameterError) as caught:
                    slices.kafka(slice_)
                self.assertIn(message, str(caught.exception))


def object_slice(keys=("pageviews/2026/12/01/08-00-10.json", "pageviews/2026/12/01/08-00-20.json"), objects=None):
    s = {
        "objectstore-bucket": "web-logs", "objectstore-prefix": "pageviews/",
        "objectstore-objects": str(len(keys) if objects is None else objects),
        "objectstore-after": "", "objectstore-through": "2026-12-01T08:00:20Z|" + keys[-1] if keys else "",
        "objectstore-cut": "2026-12-01T08:02:30Z", "objectstore-late": "[]", "late": "0",
        "objectstore-window": "2026-12-01T08:00:00Z/2026-12-01T09:00:00Z",
    }
    if keys is not None:
        s["objectstore-keys"] = json.dumps(list(keys))
    return s


class ObjectStore(unittest.TestCase):
    def test_keys(self):
        o = slices.objectstore(object_slice())
        self.assertEqual(o.uris(), [
            "s3a://web-logs/pageviews/2026/12/01/08-00-10.json", "s3a://web-logs/pageviews/2026/12/01/08-00-20.json",
        ])
        self.assertEqual(slices.kind_of(object_slice()), "objectstore")
        self.assertEqual(slices.kind_of(kafka_slice()), "kafka")
        self.assertEqual(slices.kind_of({}), "none")

    def test_empty_batch(self):
        self.assertEqual(slices.objectstore(object_slice(keys=())).keys, ())

    BAD = [
        (dict(object_slice(), **{"objectstore-keys": "["}), "objectstore-keys): not JSON"),
        (dict(object_slice(), **{"objectstore-keys": '["a", 1]'}), "want a JSON array of object keys"),
        (object_slice(keys=("pageviews/a", "pageviews/a")), "a key is listed twice"),
        (object_slice(keys=("clicks/a",)), "key 'clicks/a' is not under the prefix 'pageviews/'"),
        (object_slice(objects=3), "lists 2 keys, but --laxity-objectstore-objects (spark.laxity.objectstore-objects) says 3"),
        ({k: v for k, v in object_slice().items() if k != "objectstore-keys"}, "the reference job reads listed keys only"),
        ({k: v for k, v in object_slice().items() if k != "objectstore-bucket"}, "objectstore-bucket): missing"),
    ]

    def test_bad_slices_are_named(self):
        for slice_, message in self.BAD:
            with self.subTest(slice=slice_):
                with self.assertRaises(params.ParameterError) as caught:
                    slices.objectstore(slice_)
                self.assertIn(message, str(caught.exception))


class Globs(unittest.TestCase):
    CASES = [
        ("*lineitem*", "tpch/2026-12-01T00:00:01Z-lineitem.parquet", True),
        ("*lineitem*", "tpch/2026-12-01T00:00:01Z-orders.parquet", False),
        ("tpch/*/orders-?.json", "tpch/x/orders-1.json", True),
        ("tpch/*/orders-?.json", "tpch/x/orders-12.json", False),
        ("a.b", "axb", False),
        ("a+b(c)[d]{e}|f^$\\", "a+b(c)[d]{e}|f^$\\", True),
        ("orders", "orders", True),
        ("orders", "orders2", False),
    ]

    def test_glob(self):
        for glob, text, want in self.CASES:
            with self.subTest(glob=glob, text=text):
                self.assertEqual(slices.glob_matches(glob, text), want)
                # The same pattern, as Spark's RLIKE gets it, escapes only
                # punctuation (Java rejects a backslash before a letter).
                self.assertIsNone(re.search(r"\\[A-Za-z0-9]", slices.glob_regex(glob)))


if __name__ == "__main__":
    unittest.main()
