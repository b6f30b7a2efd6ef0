"""A batch of a query over several inputs (spec.inputs, a join): its
parameters in both forms laxity renders them (internal/sparkapp/render.go,
the keys of internal/source/joined.go), each input's slice, the view each
input becomes, and, on SQLite, join queries computed batch by batch over
aligned ranges of orders and lineitem and merged, against the query run
once on all the data."""

from __future__ import annotations

import json
import random
import unittest
from typing import Dict, List, Tuple
from unittest import mock

from laxity_step import job, options, params, slices
from laxity_step.decompose import decompose
from laxity_step.sqltext import tokenize

from . import sqlite_steps, tpch_data
from .test_decompose import sample_queries
from .test_params import ROOT

INTERVAL_END = "2026-12-01T00:06:14.975013732Z"
ORDERS_START, ORDERS_END = '{"tpch-orders":{"0":12,"1":40}}', '{"tpch-orders":{"0":20,"1":52}}'
LINEITEM_START = '{"tpch-lineitem":{"0":100,"1":90,"2":7}}'
LINEITEM_END = '{"tpch-lineitem":{"0":130,"1":120,"2":7}}'


def joined_keys(**override) -> Dict[str, str]:
    """A two-input Kafka batch's parameters by argument name: 20 orders
    (tuples [52, 72) of orders) and 60 line items ([197, 257) of
    lineitem), 80 tuples in all, [249, 329)."""
    k = {
        "query": "tpch-q12", "step": "batch", "index": "4", "attempt": "0", "from-tuple": "249", "to-tuple": "329",
        "interval-end": INTERVAL_END,
        "lineitem.from-tuple": "197", "lineitem.kafka-ending-offsets": LINEITEM_END,
        "lineitem.kafka-starting-offsets": LINEITEM_START, "lineitem.kafka-topic": "tpch-lineitem",
        "lineitem.to-tuple": "257",
        "orders.from-tuple": "52", "orders.kafka-ending-offsets": ORDERS_END,
        "orders.kafka-starting-offsets": ORDERS_START, "orders.kafka-topic": "tpch-orders", "orders.to-tuple": "72",
        "output": ROOT + "tpch-q12-b4",
    }
    k.update(override)
    return {name: value for name, value in k.items() if value is not None}


def as_arguments(keys: Dict[str, str]) -> List[str]:
    """The keys as render.go's arguments: the contract's, the slice's keys
    in order, the output last."""
    return ["--laxity-%s=%s" % (name, value) for name, value in keys.items()]


def as_conf(keys: Dict[str, str]) -> Dict[str, str]:
    """The keys as render.go's Spark settings: only the batch's own tuple
    range is in camel case; an input's keys are spark.laxity.<input>.<key>."""
    conf = {"from-tuple": "fromTuple", "to-tuple": "toTuple"}
    return {"spark.laxity." + conf.get(name, name): value for name, value in keys.items()}


class JoinedParameters(unittest.TestCase):
    def test_two_kafka_inputs_in_either_form_and_both(self):
        want = params.Step(
            query="tpch-q12", kind="batch", index=4, attempt=0, output=ROOT + "tpch-q12-b4", from_tuple=249, to_tuple=329,
            joined=(
                params.JoinedInput("lineitem", 197, 257, None, {
                    "kafka-ending-offsets": LINEITEM_END, "kafka-starting-offsets": LINEITEM_START,
                    "kafka-topic": "tpch-lineitem",
                }),
                params.JoinedInput("orders", 52, 72, None, {
                    "kafka-ending-offsets": ORDERS_END, "kafka-starting-offsets": ORDERS_START, "kafka-topic": "tpch-orders",
                }),
            ),
            interval_end=INTERVAL_END,
        )
        for name, argv, conf in (
            ("arguments", as_arguments(joined_keys()), {"spark.executor.memory": "12g"}),
            ("settings", [], as_conf(joined_keys())),
            ("both", as_arguments(joined_keys()), as_conf(joined_keys())),
        ):
            with self.subTest(form=name):
                step = params.parse(argv, conf)
                self.assertEqual(step, want)
                # A batch over several inputs has no input of its own.
                self.assertEqual((step.slice, step.input_location, slices.kind_of(step.slice)), ({}, None, "none"))
                self.assertEqual(step.results(), [("tpch-q12", ROOT + "tpch-q12-b4")])

    def test_each_input_is_read_as_a_batch_of_it_alone(self):
        lineitem, orders = params.parse(as_arguments(joined_keys()), {}).joined
        k = slices.of_input(orders)
        self.assertEqual((k.topic, k.ranges, k.records), ("tpch-orders", {0: (12, 20), 1: (40, 52)}, 20))
        self.assertEqual(k.starting_offsets, ORDERS_START)
        self.assertEqual(json.loads(k.assign()), {"tpch-orders": [0, 1]})
        k = slices.of_input(lineitem)
        self.assertEqual((k.topic, k.ranges), ("tpch-lineitem", {0: (100, 130), 1: (90, 120), 2: (7, 7)}))

    def test_an_input_may_hold_nothing_of_the_batch(self):
        keys = joined_keys(**{
            "orders.from-tuple": "72", "orders.kafka-starting-offsets": ORDERS_END, "to-tuple": "309",
        })
        step = params.parse(as_arguments(keys), as_conf(keys))
        orders = step.joined[1]
        self.assertEqual((orders.from_tuple, orders.to_tuple), (72, 72))
        self.assertEqual(slices.of_input(orders).records, 0)

    def test_inputs_with_locations_and_no_slice(self):
        # A query whose inputs arrive by the clock and declare a location:
        # each input's location and range, and nothing else.
        keys = {
            "query": "tpch-q12", "step": "batch", "index": "0", "attempt": "1", "from-tuple": "0", "to-tuple": "5",
            "interval-end": "2026-12-01T00:06:15Z",
            "lineitem.from-tuple": "0", "lineitem.input": "s3a://tpch/lineitem/", "lineitem.to-tuple": "4",
            "orders.from-tuple": "0", "orders.input": "s3a://tpch/orders/", "orders.to-tuple": "1", "output": ROOT + "b0",
        }
        step = params.parse(as_arguments(keys), as_conf(keys))
        self.assertEqual(
            [(i.name, i.from_tuple, i.to_tuple, i.location, i.slice) for i in step.joined],
            [("lineitem", 0, 4, "s3a://tpch/lineitem/", {}), ("orders", 0, 1, "s3a://tpch/orders/", {})],
        )
        self.assertEqual([slices.of_input(i) for i in step.joined], [None, None])
        self.assertEqual(step.interval_end, "2026-12-01T00:06:15Z")

    def test_the_single_input_form_is_unchanged(self):
        step = params.parse(["--laxity-query=q", "--laxity-step=batch", "--laxity-index=0", "--laxity-attempt=0",
                             "--laxity-from-tuple=0", "--laxity-to-tuple=9", "--laxity-input=s3a://in/",
                             "--laxity-output=s3a://out/b0"], {})
        self.assertEqual((step.joined, step.interval_end, step.input_location), ((), None, "s3a://in/"))

    BAD = [
        # (what is wrong, arguments, settings, what the error must say)
        ("an input's range ends before it starts", as_arguments(joined_keys(**{"orders.to-tuple": "51", "to-tuple": "308"})), {},
         "--laxity-orders.to-tuple (spark.laxity.orders.to-tuple): input orders's range [52, 51) ends before it starts"),
        ("an upper-case name", as_arguments(joined_keys(**{"Orders.input": "s3a://x/"})), {},
         "--laxity-Orders.input (spark.laxity.Orders.input): 'Orders' is not an input name: want a DNS label"),
        ("a name with _", as_arguments(joined_keys(**{"line_item.from-tuple": "0"})), {}, "'line_item' is not an input name"),
        ("a name ending in -", as_arguments(joined_keys(**{"orders-.from-tuple": "0"})), {}, "'orders-' is not an input name"),
        ("an empty name", as_arguments(joined_keys(**{".from-tuple": "0"})), {}, "'' is not an input name"),
        ("a name of 64 characters", as_arguments(joined_keys(**{"o" * 64 + ".from-tuple": "0"})), {}, "is not an input name"),
        ("no key after the name", as_arguments(joined_keys(**{"orders.": "0"})), {},
         "--laxity-orders. (spark.laxity.orders.): want --laxity-<input>.<key>=<value>"),
        ("starting offsets and no ending offsets", as_arguments(joined_keys(**{"orders.kafka-ending-offsets": None})), {},
         "--laxity-orders.kafka-ending-offsets (spark.laxity.orders.kafka-ending-offsets): missing, but "
         "--laxity-orders.kafka-starting-offsets (spark.laxity.orders.kafka-starting-offsets) is given"),
        ("a topic and no offsets", as_arguments(joined_keys(**{"orders.kafka-ending-offsets": None, "orders.kafka-starting-offsets": None})),
         {}, "--laxity-orders.kafka-starting-offsets (spark.laxity.orders.kafka-starting-offsets): missing, but"),
        ("Kafka and object-storage keys", as_arguments(joined_keys(**{"orders.objectstore-bucket": "b"})), {},
         "--laxity-orders.objectstore-bucket (spark.laxity.orders.objectstore-bucket): input orders has a Kafka slice and"),
        ("the ranges' sum is not the batch's", as_arguments(joined_keys(**{"to-tuple": "330"})), {},
         "--laxity-to-tuple (spark.laxity.toTuple): the batch's tuples [249, 330) are 81, but its inputs' ranges hold 80 "
         "(lineitem 60, orders 20)"),
        ("the ranges' sum is not the batch's, in the settings", [], as_conf(joined_keys(**{"from-tuple": "250"})),
         "are 79, but its inputs' ranges hold 80"),
        ("an input without its range", as_arguments(joined_keys(**{"orders.from-tuple": None})), {},
         "--laxity-orders.from-tuple (spark.laxity.orders.from-tuple): missing for input orders"),
        ("a range not in decimal", as_arguments(joined_keys(**{"orders.to-tuple": "0x48"})), {},
         "--laxity-orders.to-tuple (spark.laxity.orders.to-tuple): want a non-negative whole number in decimal, got '0x48'"),
        ("an empty location", as_arguments(joined_keys(**{"orders.input": ""})), {},
         "--laxity-orders.input (spark.laxity.orders.input): empty"),
        ("one input", as_arguments(joined_keys(**{k: None for k in joined_keys() if k.startswith("lineitem.")}, **{"to-tuple": "269"})),
         {}, "--laxity-interval-end (spark.laxity.interval-end): a batch over several inputs names two or more, got orders"),
        ("an interval end and no inputs", ["--laxity-query=q", "--laxity-step=batch", "--laxity-index=0", "--laxity-attempt=0",
                                            "--laxity-from-tuple=0", "--laxity-to-tuple=9", "--laxity-interval-end=" + INTERVAL_END,
                                            "--laxity-output=s3a://out/b0"], {},
         "a batch over several inputs names two or more, got none"),
        ("inputs and no interval end", as_arguments(joined_keys(**{"interval-end": None})), {},
         "--laxity-interval-end (spark.laxity.interval-end): missing for a batch over several inputs"),
        ("the single-input form's slice too", as_arguments(joined_keys(**{"kafka-topic": "events"})), {},
         "--laxity-kafka-topic (spark.laxity.kafka-topic): a batch over several inputs has no slice of its own"),
        ("the single-input form's location too", as_arguments(joined_keys(input="s3a://stream/")), {},
         "--laxity-input (spark.laxity.input): a batch over several inputs has no input location of its own"),
        ("the single-input form's location in the settings", as_arguments(joined_keys()), {"spark.laxity.input": "s3a://stream/"},
         "a batch over several inputs has no input location of its own"),
        ("the forms disagree on an input's key", as_arguments(joined_keys()), as_conf(joined_keys(**{"orders.to-tuple": "73"})),
         "--laxity-orders.to-tuple (spark.laxity.orders.to-tuple): the argument says '72', the setting '73'"),
        ("the forms disagree on the interval end", as_arguments(joined_keys()),
         as_conf(joined_keys(**{"interval-end": "2026-12-01T00:06:15Z"})), "--laxity-interval-end (spark.laxity.interval-end): the argument says"),
        ("an input's key twice", as_arguments(joined_keys()) + ["--laxity-orders.input=s3a://x/"] * 2, {},
         "--laxity-orders.input (spark.laxity.orders.input): given 2 times as an argument"),
        ("an input named output", as_arguments(joined_keys(**{"output.from-tuple": "0", "output.to-tuple": "0"})), {},
         "an input named output cannot be told from a member's output"),
        ("a merge with an input's keys", ["--laxity-query=q", "--laxity-step=final", "--laxity-index=0", "--laxity-attempt=0",
                                           "--laxity-inputs=1", "--laxity-input=s3a://r/b0", "--laxity-orders.from-tuple=0",
                                           "--laxity-output=s3a://r/final"], {},
         "--laxity-orders.from-tuple (spark.laxity.orders.from-tuple): a merge reads results"),
    ] + [
        ("interval end %r" % instant, as_arguments(joined_keys(**{"interval-end": instant})), {},
         "--laxity-interval-end (spark.laxity.interval-end): want an RFC 3339 instant such as 2026-12-01T00:06:15Z")
        for instant in (
            "", "2026-12-01", "2026-12-01 00:06:15Z", "2026-12-01T00:06:15", "2026-12-01t00:06:15z", "2026-13-01T00:06:15Z",
            "2026-02-30T00:06:15Z", "2026-12-01T24:00:00Z", "2026-12-01T00:06:60Z", "2026-12-01T00:06:15.Z",
            "2026-12-01T00:06:14.9750137321Z", "2026-12-01T00:06:15+25:00", "2026-12-01T00:06:15+0100", "1764547575",
            "２026-12-01T00:06:15Z",
        )
    ]

    def test_bad_parameters_are_named(self):
        for what, argv, conf, message in self.BAD:
            with self.subTest(what):
                with self.assertRaises(params.ParameterError) as caught:
                    params.parse(argv, conf)
                self.assertIn(message, str(caught.exception))

    def test_instants_rfc_3339_allows(self):
        for instant in ("2026-12-01T00:06:15Z", "2026-12-01T00:06:15.5Z", INTERVAL_END, "2028-02-29T23:59:59.000000001Z",
                        "2026-12-01T01:06:15+01:00"):
            with self.subTest(instant=instant):
                self.assertEqual(params.parse(as_arguments(joined_keys(**{"interval-end": instant})), {}).interval_end, instant)

    BAD_SLICES = [
        ("offsets that hold more records than the range",
         joined_keys(**{"orders.kafka-ending-offsets": '{"tpch-orders":{"0":21,"1":52}}'}),
         "--laxity-orders.kafka-ending-offsets (spark.laxity.orders.kafka-ending-offsets): the offsets hold 21 records, but "
         "--laxity-orders.from-tuple (spark.laxity.orders.from-tuple) and --laxity-orders.to-tuple "
         "(spark.laxity.orders.to-tuple) say 20 tuples [52, 72)"),
        ("another topic's offsets", joined_keys(**{"orders.kafka-starting-offsets": '{"events":{"0":12,"1":40}}'}),
         '--laxity-orders.kafka-starting-offsets (spark.laxity.orders.kafka-starting-offsets): want {"tpch-orders"'),
        ("an offset going back", joined_keys(**{"lineitem.kafka-ending-offsets": '{"tpch-lineitem":{"0":160,"1":89,"2":8}}'}),
         "--laxity-lineitem.kafka-ending-offsets (spark.laxity.lineitem.kafka-ending-offsets): partition 1 ends at 89"),
        ("an empty topic", joined_keys(**{"orders.kafka-topic": ""}), "--laxity-orders.kafka-topic (spark.laxity.orders.kafka-topic): empty"),
        ("object storage without its keys", dict(joined_keys(**{k: None for k in joined_keys() if k.startswith("orders.kafka")}), **{
            "orders.objectstore-bucket": "tpch", "orders.objectstore-prefix": "orders/", "orders.objectstore-objects": "2000",
        }), "--laxity-orders.objectstore-keys (spark.laxity.orders.objectstore-keys): absent"),
    ]

    def test_bad_slices_are_named(self):
        for what, keys, message in self.BAD_SLICES:
            with self.subTest(what):
                step = params.parse(as_arguments(keys), {})
                with self.assertRaises(params.ParameterError) as caught:
                    for joined in step.joined:
                        slices.of_input(joined)
                self.assertIn(message, str(caught.exception))

    def test_an_object_storage_input(self):
        keys = dict(joined_keys(**{k: None for k in joined_keys() if k.startswith("orders.kafka")}), **{
            "orders.objectstore-bucket": "tpch", "orders.objectstore-prefix": "orders/", "orders.objectstore-objects": "2",
            "orders.objectstore-keys": '["orders/a.json","orders/b.json"]',
        })
        orders = params.parse(as_arguments(keys), as_conf(keys)).joined[1]
        self.assertEqual(slices.of_input(orders).uris(), ["s3a://tpch/orders/a.json", "s3a://tpch/orders/b.json"])


TOPICS = ["--query=q.sql", "--format=json", "--kafka-bootstrap-servers=kafka:9092",
          "--view=orders", "--schema=orders=o_orderkey BIGINT", "--view=lineitem=*", "--schema=lineitem=l_orderkey BIGINT"]


class InputViews(unittest.TestCase):
    def test_each_input_becomes_the_view_of_its_name(self):
        step = params.parse(as_arguments(joined_keys()), {})
        pairs = job.input_views(step, options.parse(TOPICS))
        self.assertEqual([(i.name, v.name, v.glob, v.schema) for i, v in pairs], [
            ("lineitem", "lineitem", "*", "l_orderkey BIGINT"), ("orders", "orders", None, "o_orderkey BIGINT"),
        ])

    def test_views_and_inputs_must_match(self):
        step = params.parse(as_arguments(joined_keys()), {})
        for what, argv, message in (
            ("an input without a view", TOPICS[:3] + TOPICS[5:], "job options: input orders has no --view=orders and --schema=orders=<DDL>"),
            ("a view of no input", TOPICS + ["--view=customer", "--schema=customer=c_custkey BIGINT"],
             "--view=customer: the batch has no input of that name (its inputs: lineitem, orders)"),
        ):
            with self.subTest(what):
                with self.assertRaises(params.ParameterError) as caught:
                    job.input_views(step, options.parse(argv))
                self.assertIn(message, str(caught.exception))

    def test_an_input_name_sql_cannot_read(self):
        keys = joined_keys(**{k: None for k in joined_keys() if k.startswith("orders.")})
        keys.update({"line-items.from-tuple": "0", "line-items.to-tuple": "20", "line-items.input": "s3a://x/"})
        step = params.parse(as_arguments(keys), {})
        with self.assertRaises(params.ParameterError) as caught:
            job.input_views(step, options.parse(TOPICS[:5]))
        self.assertIn("input line-items: the job makes each input a view of its name, and 'line-items' is not a table name",
                      str(caught.exception))

    def test_each_input_is_read_by_its_own_source(self):
        # The Spark readers stand in for themselves: which one reads which
        # input, with what.
        keys = joined_keys(**{k: None for k in joined_keys() if k.startswith("orders.kafka")})
        keys["orders.input"] = "s3a://tpch/orders/"
        step = params.parse(as_arguments(keys), {})
        calls = []
        record = lambda reader: lambda spark, *args: calls.append((reader,) + args) or {args[-2][0].name: reader}  # noqa: E731
        with mock.patch.object(job, "_kafka_views", record("kafka")), mock.patch.object(job, "_location_views", record("files")):
            views = job.batch_views(None, step, options.parse(TOPICS + ["--tuple-column=tuple"]))
            self.assertEqual(views, {"lineitem": "kafka", "orders": "files"})
            (_, kafka, lineitem_views, _), (_, location, lo, hi, key, orders_views, _) = calls
            self.assertEqual((kafka.topic, kafka.ending_offsets, [v.name for v in lineitem_views]),
                             ("tpch-lineitem", LINEITEM_END, ["lineitem"]))
            self.assertEqual((location, lo, hi, key, [v.name for v in orders_views]),
                             ("s3a://tpch/orders/", 52, 72, "orders.input", ["orders"]))
            del keys["orders.input"]
            with self.assertRaisesRegex(params.ParameterError, "input orders has no input: no Kafka or object-storage slice and no "
                                        r"--laxity-orders\.input"):
                job.batch_views(None, params.parse(as_arguments(keys), {}), options.parse(TOPICS))


# Every TPC-H sample query that joins orders with lineitem, and one that
# needs the join to pair an order's every line item: the line items of
# urgent orders, by ship mode.
JOIN_QUERIES = {
    name: sql for name, sql in sample_queries().items()
    if {"orders", "lineitem"} <= {t.text.lower() for t in tokenize(sql) if t.kind == "word"}
}
JOIN_QUERIES["urgent-lines"] = """
    SELECT l_shipmode, count(*) AS lines, sum(l_quantity) AS qty
    FROM orders, lineitem
    WHERE o_orderkey = l_orderkey AND o_orderpriority = '1-URGENT'
    GROUP BY l_shipmode ORDER BY l_shipmode"""

SECOND = 10**9
LOCATIONS = {"orders": "s3a://tpch/orders/", "lineitem": "s3a://tpch/lineitem/"}
JOB_OPTIONS = ["--query=q.sql", "--format=parquet", "--tuple-column=tuple"] + [
    a for table in tpch_data.STREAM_TABLES
    for a in ("--view=" + table, "--schema=%s=tuple BIGINT, %s" % (table, ", ".join("%s STRING" % c for c in tpch_data.SCHEMA[table])))
]


def arrivals(data: tpch_data.Dataset, rng: random.Random, late: int = 0) -> Tuple[Dict[str, List[Tuple[int, tpch_data.Row]]], int]:
    """Each input's rows in arrival order, with their arrival instants (in
    nanoseconds from the window's start), and the number of one-second
    intervals they span. The orders are spread over the intervals, a few
    to each (some get none); an order's line items arrive after it in the
    same interval, interleaved with other orders' line items, except the
    line items of the last `late` orders, which arrive in the next."""
    orders, items = [], []
    interval = 0
    for k, (order, lines) in enumerate(data.stream):
        interval += rng.choice((0, 0, 1, 1, 2))
        start = interval * SECOND
        at = start + rng.randrange(SECOND // 2)
        orders.append((at, order))
        is_late = k >= len(data.stream) - late
        items.extend((at + rng.randrange(1, SECOND // 2) + (SECOND if is_late else 0), line) for line in lines)
    key = lambda pair: pair[0]  # noqa: E731
    return {"orders": sorted(orders, key=key), "lineitem": sorted(items, key=key)}, interval + 2


def rfc3339(nanoseconds: int) -> str:
    """The instant from the window's start (2026-12-01T00:00:00Z), as Go's
    time.RFC3339Nano writes it: no trailing zeros, no fraction of zero."""
    seconds, fraction = divmod(nanoseconds, SECOND)
    text = "2026-12-01T%02d:%02d:%02d" % (seconds // 3600, seconds // 60 % 60, seconds % 60)
    return text + ("." + ("%09d" % fraction).rstrip("0") if fraction else "") + "Z"


def aligned_batches(inputs: Dict[str, List[Tuple[int, tpch_data.Row]]], cuts: List[int]) -> List[Dict[str, str]]:
    """Each batch's parameters as laxity's operator writes them
    (source.Joined, sparkapp.Render): every input cut at each instant of
    cuts, each input's range what had arrived on it by then since the
    previous cut; a batch that would hold no tuple is not cut."""
    batches, done, total = [], dict.fromkeys(inputs, 0), 0
    for cut in cuts:
        to = {name: sum(1 for at, _ in rows if at < cut) for name, rows in inputs.items()}
        held = sum(to[name] - done[name] for name in inputs)
        if held == 0:
            continue
        keys = {
            "query": "join", "step": "batch", "index": str(len(batches)), "attempt": "0",
            "from-tuple": str(total), "to-tuple": str(total + held), "interval-end": rfc3339(cut),
        }
        for name in sorted(inputs):
            keys.update({
                name + ".from-tuple": str(done[name]), name + ".input": LOCATIONS[name], name + ".to-tuple": str(to[name]),
            })
        keys["output"] = "s3a://results/join-b%d" % len(batches)
        batches.append(keys)
        done, total = to, total + held
    return batches


def store(conn, inputs: Dict[str, List[Tuple[int, tpch_data.Row]]]) -> Dict[str, str]:
    """Each input's rows, numbered by arrival (the tuple column), in a table
    standing for the files at its location; the table of each location."""
    tables = {}
    for name, rows in inputs.items():
        table = "stored_" + name
        tpch_data.replace_table(conn, table, ("tuple",) + tpch_data.SCHEMA[name], [(k,) + row for k, (_, row) in enumerate(rows)])
        tables[LOCATIONS[name]] = table
    return tables


def run_batches(conn, d, batches: List[Dict[str, str]], tables: Dict[str, str], rng: random.Random) -> List[tpch_data.Row]:
    """Every batch's partial, from its parameters (in one form or the
    other, as laxity passes both), merged through a random tree of partial
    merges and a final merge."""
    opts = options.parse(JOB_OPTIONS)
    partials = []
    for keys in batches:
        form = rng.choice(("arguments", "settings", "both"))
        step = params.parse(as_arguments(keys) if form != "settings" else [], as_conf(keys) if form != "arguments" else {})
        partials.append(sqlite_steps.joined_batch(conn, d, job.input_views(step, opts), tables, opts.tuple_column))
    rng.shuffle(partials)
    return sqlite_steps.final(conn, d, sqlite_steps.merge_tree(conn, d, partials, rng))


class JoinOnSQLite(unittest.TestCase):
    TRIALS = 20

    def test_aligned_batches_merged_equal_the_whole_join(self):
        self.assertIn("tpch-q12", JOIN_QUERIES)
        self.assertGreaterEqual(len(JOIN_QUERIES), 6)
        decomposed = {name: decompose(sql) for name, sql in JOIN_QUERIES.items()}
        answered = dict.fromkeys(JOIN_QUERIES, 0)
        for trial in range(self.TRIALS):
            data = tpch_data.Dataset(seed=100 + trial)
            rng = random.Random(trial)
            inputs, intervals = arrivals(data, rng)
            conn = tpch_data.connect(data)
            tables = store(conn, inputs)
            for name, sql in JOIN_QUERIES.items():
                tpch_data.load_stream(conn, data.stream)
                want = conn.execute(sql).fetchall()
                if any(v is not None and not isinstance(v, str) for row in want for v in row):
                    answered[name] += 1
                # Cut at interval boundaries, a random few, then past the last.
                qrng = random.Random("%s/%d" % (name, trial))
                bounds = sorted(qrng.sample(range(1, intervals), qrng.randint(0, min(12, intervals - 1)))) + [intervals]
                batches = aligned_batches(inputs, [b * SECOND for b in bounds])
                got = run_batches(conn, decomposed[name], batches, tables, qrng)
                ordered = "order by" in " ".join(sql.lower().split())
                self.assertTrue(
                    sqlite_steps.same_rows(got, want, ordered),
                    "%s, trial %d, %d batches:\nmerged %r\nwhole  %r" % (name, trial, len(batches), got, want),
                )
            conn.close()
        for name, count in answered.items():
            self.assertGreaterEqual(count, self.TRIALS // 2, "%s answered with data in %d of %d trials" % (name, count, self.TRIALS))

    def test_the_ranges_tile_each_input(self):
        data = tpch_data.Dataset(seed=7)
        inputs, intervals = arrivals(data, random.Random(7))
        batches = aligned_batches(inputs, [c * SECOND for c in range(1, intervals + 1)])
        self.assertGreater(len(batches), 20)
        for name, rows in inputs.items():
            ranges = [(int(b[name + ".from-tuple"]), int(b[name + ".to-tuple"])) for b in batches]
            self.assertEqual([t for lo, hi in ranges for t in range(lo, hi)], list(range(len(rows))), name)
        self.assertEqual(int(batches[-1]["to-tuple"]), sum(len(rows) for rows in inputs.values()))

    def test_late_line_items_are_not_joined_with_earlier_batches(self):
        # The limit of the reference job: a line item that arrives after the
        # batch of its order was cut is in a later batch, where its order is
        # not; the merged answer misses it.
        data = tpch_data.Dataset(seed=3, orders=20)
        inputs, intervals = arrivals(data, random.Random(3), late=1)
        conn = tpch_data.connect(data)
        tables = store(conn, inputs)
        sql = JOIN_QUERIES["urgent-lines"].replace(" AND o_orderpriority = '1-URGENT'", "")
        d = decompose(sql)
        last_order = data.stream[-1][0][0]
        arrived = [at for at, (order, *_) in inputs["orders"] if order == last_order][0]
        # A cut after the last order, before its line items.
        cut = (arrived // SECOND + 1) * SECOND
        batches = aligned_batches(inputs, [cut, (intervals + 1) * SECOND])
        got = run_batches(conn, d, batches, tables, random.Random(3))
        self.assertEqual(sum(row[1] for row in got), sum(len(lines) for _, lines in data.stream[:-1]))
        tpch_data.load_stream(conn, data.stream)
        whole = conn.execute(sql).fetchall()
        self.assertEqual(sum(row[1] for row in whole), sum(len(lines) for _, lines in data.stream))
        conn.close()


if __name__ == "__main__":
    unittest.main()
