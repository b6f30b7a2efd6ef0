"""The step's parameters in both of the forms laxity renders them
(internal/sparkapp/render.go): arguments and Spark settings."""

from __future__ import annotations

import unittest

from laxity_step import options, params

ROOT = "s3a://results/laxity/analytics/tpch-q1/"


def batch_arguments(**override):
    """A batch's arguments as render.go writes them, in its order."""
    a = {
        "query": "tpch-q1", "step": "batch", "index": "3", "attempt": "1", "from-tuple": "100", "to-tuple": "200",
        "input": "s3a://stream/orders/",
        "kafka-ending-offsets": '{"events":{"0":9}}', "kafka-starting-offsets": '{"events":{"0":5}}',
        "kafka-topic": "events", "output": ROOT + "tpch-q1-b3",
    }
    a.update(override)
    return ["--laxity-%s=%s" % (k, v) for k, v in a.items() if v is not None]


def batch_conf(**override):
    c = {
        "query": "tpch-q1", "step": "batch", "index": "3", "attempt": "1", "fromTuple": "100", "toTuple": "200",
        "input": "s3a://stream/orders/", "kafka-ending-offsets": '{"events":{"0":9}}',
        "kafka-starting-offsets": '{"events":{"0":5}}', "kafka-topic": "events", "output": ROOT + "tpch-q1-b3",
    }
    c.update(override)
    return {"spark.laxity." + k: v for k, v in c.items() if v is not None}


MERGE_INPUTS = [ROOT + "tpch-q1-partial-0", ROOT + "tpch-q1-b3"]


def merge_arguments(kind="final", inputs=MERGE_INPUTS, count=None):
    a = ["--laxity-query=tpch-q1", "--laxity-step=" + kind, "--laxity-index=1", "--laxity-attempt=0",
         "--laxity-inputs=%d" % (len(inputs) if count is None else count)]
    a += ["--laxity-input=" + i for i in inputs]
    return a + ["--laxity-output=" + ROOT + "tpch-q1-final"]


def merge_conf(kind="final", inputs=MERGE_INPUTS):
    return {
        "spark.laxity.query": "tpch-q1", "spark.laxity.step": kind, "spark.laxity.index": "1",
        "spark.laxity.attempt": "0", "spark.laxity.inputs": str(len(inputs)),
        "spark.laxity.input": ",".join(inputs), "spark.laxity.output": ROOT + "tpch-q1-final",
    }


class Parse(unittest.TestCase):
    def test_batch_in_either_form_and_both(self):
        want = params.Step(
            query="tpch-q1", kind="batch", index=3, attempt=1, output=ROOT + "tpch-q1-b3", from_tuple=100,
            to_tuple=200, input_location="s3a://stream/orders/",
            slice={"kafka-ending-offsets": '{"events":{"0":9}}', "kafka-starting-offsets": '{"events":{"0":5}}',
                   "kafka-topic": "events"},
        )
        other = {"spark.executor.memory": "12g"}
        for name, argv, conf in (
            ("arguments", batch_arguments(), other),
            ("settings", [], dict(batch_conf(), **other)),
            ("both", batch_arguments(), batch_conf()),
        ):
            with self.subTest(form=name):
                self.assertEqual(params.parse(argv, conf), want)

    def test_merges(self):
        for kind in ("partial", "final"):
            for name, argv, conf in (
                ("arguments", merge_arguments(kind), {}),
                ("settings", [], merge_conf(kind)),
                ("both", merge_arguments(kind), merge_conf(kind)),
            ):
                with self.subTest(kind=kind, form=name):
                    step = params.parse(argv, conf)
                    self.assertEqual(step.kind, kind)
                    self.assertEqual(step.inputs, tuple(MERGE_INPUTS))
                    self.assertEqual((step.index, step.attempt, step.slice), (1, 0, {}))

    def test_split_keeps_the_jobs_own_arguments_in_order(self):
        argv = ["--query=/opt/laxity/queries/tpch-q1.sql", "--view=lineitem"] + batch_arguments()
        ours, own = params.split_arguments(argv)
        self.assertEqual(own, ["--query=/opt/laxity/queries/tpch-q1.sql", "--view=lineitem"])
        self.assertEqual(ours, batch_arguments())

    BAD = [
        # (arguments, settings, what the error must say)
        ([], {}, "no step parameters"),
        (batch_arguments(step="merge"), {}, "--laxity-step (spark.laxity.step): want one of batch, partial, final, got 'merge'"),
        (batch_arguments(index="-1"), {}, "--laxity-index (spark.laxity.index): want a non-negative whole number in decimal, got '-1'"),
        (batch_arguments(index="03"), {}, "--laxity-index (spark.laxity.index): want a non-negative whole number"),
        (batch_arguments(attempt="x"), {}, "--laxity-attempt (spark.laxity.attempt): want a non-negative whole number"),
        (batch_arguments(**{"to-tuple": "100"}), {}, "--laxity-to-tuple (spark.laxity.toTuple): the tuple range [100, 100) is empty"),
        (batch_arguments(**{"from-tuple": None}), {}, "--laxity-from-tuple (spark.laxity.fromTuple): missing for a batch step"),
        (batch_arguments(output=None), {}, "--laxity-output (spark.laxity.output): missing"),
        (batch_arguments(output=""), {}, "--laxity-output (spark.laxity.output): empty"),
        (batch_arguments(), batch_conf(index="4"), "--laxity-index (spark.laxity.index): the argument says '3', the setting '4'"),
        (batch_arguments(), batch_conf(toTuple="201"), "--laxity-to-tuple (spark.laxity.toTuple): the argument says '200'"),
        (batch_arguments() + ["--laxity-index=4"], {}, "--laxity-index (spark.laxity.index): given 2 times"),
        (batch_arguments() + ["--laxity-input=s3a://other/"], {}, "a batch has one input location, got 2"),
        (batch_arguments() + ["--laxity-inputs=2"], {}, "--laxity-inputs (spark.laxity.inputs): a batch has no merge inputs"),
        (["--laxity-query"], {}, "argument '--laxity-query': want --laxity-<name>=<value>"),
        (merge_arguments(count=3), {}, "--laxity-inputs (spark.laxity.inputs) says 3 inputs, but 2 locations are given"),
        (merge_arguments(count=0, inputs=[]), {}, "a merge needs at least one input, got 0"),
        (merge_arguments(inputs=[ROOT + "b0", ROOT + "b0"]), {}, "a location is given twice"),
        (merge_arguments(), merge_conf(inputs=[ROOT + "b0", ROOT + "b1"]), "--laxity-input (spark.laxity.input): the arguments name"),
        (merge_arguments() + ["--laxity-from-tuple=1"], {}, "a merge has no tuple range"),
        (merge_arguments() + ["--laxity-kafka-topic=events"], {}, "--laxity-kafka-topic (spark.laxity.kafka-topic): a merge reads results"),
        (merge_arguments()[:-1], {}, "--laxity-output (spark.laxity.output): missing for a final step"),
    ]

    def test_bad_parameters_are_named(self):
        for argv, conf, message in self.BAD:
            with self.subTest(argv=argv, conf=conf):
                with self.assertRaises(params.ParameterError) as caught:
                    params.parse(argv, conf)
                self.assertIn(message, str(caught.exception))


class JobOptions(unittest.TestCase):
    def test_tpch_options(self):
        o = options.parse([
            "--query=local:///opt/laxity/queries/tpch-q3.sql",
            "--view=orders=*/orders-*", "--schema=orders=o_orderkey BIGINT, o_orderdate DATE",
            "--view=lineitem=*/lineitem-*", "--schema=lineitem=l_orderkey BIGINT",
            "--format=parquet", "--table=customer=s3a://tpch/customer/",
        ])
        self.assertEqual(o.query, "/opt/laxity/queries/tpch-q3.sql")
        self.assertEqual([(v.name, v.glob, v.schema) for v in o.views], [
            ("orders", "*/orders-*", "o_orderkey BIGINT, o_orderdate DATE"),
            ("lineitem", "*/lineitem-*", "l_orderkey BIGINT"),
        ])
        self.assertEqual(o.tables, {"customer": "s3a://tpch/customer/"})

    BAD = [
        ([], "--query: required"),
        (["--query=q.sql", "--view=events"], "--view=events: no --schema=events=<DDL> gives its columns"),
        (["--query=q.sql", "--schema=events=a INT"], "--schema=events=...: no --view=events"),
        (["--query=q.sql", "--view=1x", "--schema=1x=a INT"], "'1x' is not a table name"),
        (["--query=q.sql", "--format=avro"], "invalid choice: 'avro'"),
        (["--query=q.sql", "--kafka-option=security.protocol=SSL"], "Spark passes only kafka.* options"),
        (["--query=q.sql", "--table=nation"], "--table=nation: want --table=<name>=<value>"),
        (["--query=q.sql", "--unknown=1"], "unrecognized arguments: --unknown=1"),
    ]

    def test_bad_options_are_named(self):
        for argv, message in self.BAD:
            with self.subTest(argv=argv):
                with self.assertRaises(params.ParameterError) as caught:
                    options.parse(argv)
                self.assertIn(message, str(caught.exception))


class KafkaClient(unittest.TestCase):
    def parse(self, *kafka_options):
        return options.parse(["--query=q.sql"] + ["--kafka-option=" + o for o in kafka_options])

    def test_jaas_from_the_environment(self):
        env = {"KAFKA_SASL_USERNAME": "laxity", "KAFKA_SASL_PASSWORD": 'a"b\\c'}
        got = options.kafka_client_options(self.parse("kafka.sasl.mechanism=SCRAM-SHA-512"), env)
        self.assertEqual(
            got["kafka.sasl.jaas.config"],
            'org.apache.kafka.common.security.scram.ScramLoginModule required username="laxity" password="a\\"b\\\\c";',
        )
        plain = options.kafka_client_options(self.parse("kafka.sasl.mechanism=PLAIN"), env)
        self.assertTrue(plain["kafka.sasl.jaas.config"].startswith("org.apache.kafka.common.security.plain.PlainLoginModule"))

    def test_given_jaas_and_no_sasl_stay_as_they_are(self):
        given = self.parse("kafka.sasl.mechanism=PLAIN", "kafka.sasl.jaas.config=mine;")
        self.assertEqual(options.kafka_client_options(given, {})["kafka.sasl.jaas.config"], "mine;")
        self.assertEqual(options.kafka_client_options(self.parse("kafka.security.protocol=SSL"), {}), {"kafka.security.protocol": "SSL"})

    def test_missing_credentials_are_named(self):
        with self.assertRaisesRegex(params.ParameterError, "the environment lacks KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD"):
            options.kafka_client_options(self.parse("kafka.sasl.mechanism=SCRAM-SHA-256"), {})
        with self.assertRaisesRegex(params.ParameterError, "kafka.sasl.mechanism=GSSAPI: want one of PLAIN"):
            options.kafka_client_options(self.parse("kafka.sasl.mechanism=GSSAPI"), {})


if __name__ == "__main__":
    unittest.main()
