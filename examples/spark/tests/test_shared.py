"""A shared batch: the parameters naming its members and their outputs,
in both forms laxity renders them (internal/sparkapp/render.go), and the
batch itself on SQLite: its input read once, every member's partial equal
to that member's batch alone, each written to the member's own output."""

from __future__ import annotations

import random
import unittest

from laxity_step import options, params
from laxity_step.decompose import decompose
from laxity_step.job import run_batch

from . import sqlite_steps, tpch_data
from .test_decompose import sample_queries
from .test_params import ROOT, batch_arguments, batch_conf

MEMBERS = ("tpch-q1", "tpch-q6", "tpch-q14")
OUTPUTS = {m: "s3a://results/laxity/analytics/%s/%s-b3" % (m, m) for m in MEMBERS}


def shared_arguments(members=MEMBERS, outputs=OUTPUTS):
    """A shared batch's arguments as render.go writes them: the batch's,
    then the members and each one's output."""
    a = batch_arguments(output=outputs.get(members[0], ROOT + "tpch-q1-b3"))
    a.append("--laxity-members=" + ",".join(members))
    a.extend("--laxity-output-%s=%s" % (m, o) for m, o in outputs.items())
    return a


def shared_conf(members=MEMBERS, outputs=OUTPUTS):
    c = batch_conf(output=outputs.get(members[0], ROOT + "tpch-q1-b3"))
    c["spark.laxity.members"] = ",".join(members)
    c.update({"spark.laxity.output." + m: o for m, o in outputs.items()})
    return c


class SharedParameters(unittest.TestCase):
    def test_either_form_and_both(self):
        for args, conf in ((shared_arguments(), {}), ([], shared_conf()), (shared_arguments(), shared_conf())):
            with self.subTest(args=bool(args), conf=bool(conf)):
                step = params.parse(args, conf)
                self.assertEqual(step.members, MEMBERS)
                self.assertEqual(step.outputs, OUTPUTS)
                self.assertEqual(step.results(), [(m, OUTPUTS[m]) for m in MEMBERS])
                # The members are not part of the input's slice.
                self.assertEqual(sorted(step.slice), ["kafka-ending-offsets", "kafka-starting-offsets", "kafka-topic"])

    def test_a_step_of_one_query_serves_it_alone(self):
        step = params.parse(batch_arguments(), {})
        self.assertEqual(step.members, ())
        self.assertEqual(step.results(), [("tpch-q1", ROOT + "tpch-q1-b3")])

    BAD = [
        ("one member", shared_arguments(members=("tpch-q1",), outputs={"tpch-q1": OUTPUTS["tpch-q1"]}), "want two queries or more"),
        ("led by another query", shared_arguments(members=("tpch-q6", "tpch-q1"), outputs={"tpch-q6": OUTPUTS["tpch-q6"], "tpch-q1": OUTPUTS["tpch-q1"]}),
         "tpch-q1 first"),
        ("a member without an output", shared_arguments(outputs={m: OUTPUTS[m] for m in MEMBERS[:2]}), "--laxity-output-tpch-q14"),
        ("an output of no member", shared_arguments(outputs=dict(OUTPUTS, other="s3a://x/other-b3")), "not a member"),
        ("an output without members", batch_arguments() + ["--laxity-output-tpch-q6=s3a://x"], "names none"),
        ("two members, one location", shared_arguments(outputs=dict(OUTPUTS, **{"tpch-q14": OUTPUTS["tpch-q6"]})), "one location"),
    ]

    def test_bad_parameters_are_named(self):
        for name, args, message in self.BAD:
            with self.subTest(name):
                with self.assertRaises(params.ParameterError) as caught:
                    params.parse(args, {})
                self.assertIn(message, str(caught.exception))

    def test_the_forms_must_agree(self):
        conf = shared_conf()
        conf["spark.laxity.output.tpch-q6"] = "s3a://elsewhere"
        with self.assertRaises(params.ParameterError) as caught:
            params.parse(shared_arguments(), conf)
        self.assertIn("spark.laxity.output.tpch-q6", str(caught.exception))

    def test_member_queries(self):
        o = options.parse(["--member-query=tpch-q1=local:///q/tpch-q1.sql", "--member-query=tpch-q6=/q/tpch-q6.sql"])
        self.assertEqual(o.query_of("tpch-q1"), "/q/tpch-q1.sql")
        self.assertEqual(o.query_of("tpch-q6"), "/q/tpch-q6.sql")
        with self.assertRaises(params.ParameterError):
            o.query_of("tpch-q14")
        self.assertEqual(options.parse(["--query=q.sql", "--member-query=a=a.sql"]).query_of("b"), "q.sql")
        with self.assertRaises(params.ParameterError):
            options.parse(["--member-query=a=a.sql", "--member-query=a=b.sql"])


class SharedBatchOnSQLite(unittest.TestCase):
    def test_read_once_each_member_as_alone(self):
        sql = sample_queries()
        members = [name for name in sql][:5]
        decomposed = {name: decompose(sql[name]) for name in members}
        outputs = {m: "s3a://results/%s-b0" % m for m in members}
        step = params.Step(members[0], params.BATCH, 0, 1, outputs[members[0]], 0, 10,
                           members=tuple(members), outputs=outputs)
        for trial in range(5):
            data = tpch_data.Dataset(seed=trial)
            part = data.split(random.Random(trial), 3)[1]
            conn = tpch_data.connect(data)
            loads, written = [], {}
            run_batch(
                step,
                lambda: loads.append(tpch_data.load_stream(conn, part)),
                lambda query: conn.execute(decomposed[query].partial_sql).fetchall(),
                lambda query, output, rows: written.__setitem__(output, (query, rows)),
            )
            self.assertEqual(len(loads), 1, "the batch's input is read once")
            self.assertEqual(sorted(written), sorted(outputs.values()))
            for m in members:
                alone = sqlite_steps.batch(conn, decomposed[m], part)
                query, rows = written[outputs[m]]
                self.assertEqual(query, m)
                self.assertTrue(sqlite_steps.same_rows(rows, alone, False), "%s, trial %d" % (m, trial))
            conn.close()
