"""The decomposition against SQLite: for every query of the TPC-H sample
(and a few that use what the sample does not: min, max, HAVING, NULLs), on
random data cut into random batches, a partial per batch merged through a
random tree of partial merges and a final merge equals the query run once
on all the data."""

from __future__ import annotations

import pathlib
import random
import re
import unittest

from laxity_step.decompose import decompose
from laxity_step.sqltext import QueryError

from . import sqlite_steps, tpch_data

QUERIES = pathlib.Path(__file__).resolve().parent.parent / "queries"

# Aggregates and clauses the sample's queries do not use.
EXTRA_QUERIES = {
    "min-max-having": """
        SELECT l_shipmode, min(l_shipdate) AS first_ship, max(l_extendedprice) AS max_price,
               avg(l_discount) AS avg_disc, count(l_discount) AS with_discount, sum(l_quantity) AS qty
        FROM lineitem
        GROUP BY l_shipmode
        HAVING sum(l_quantity) > 40 AND max(l_discount) > 0
        ORDER BY count(*) DESC, l_shipmode""",
    "global-min-max": """
        SELECT min(l_discount) AS lowest, max(l_receiptdate) AS latest,
               max(l_quantity) - min(l_quantity) AS spread, avg(l_tax) * 100 AS tax_percent
        FROM lineitem WHERE l_shipmode = 'AIR'""",
    "nulls-and-empty-groups": """
        SELECT l_returnflag, avg(CASE WHEN l_quantity > 45 THEN l_discount END) AS avg_big_disc,
               sum(CASE WHEN l_quantity > 45 THEN l_quantity END) AS big_qty
        FROM lineitem GROUP BY l_returnflag ORDER BY l_returnflag""",
}

TRIALS = 30


TPCH_SAMPLE = QUERIES.parent.parent.parent / "config" / "samples" / "tpch.yaml"


def sample_queries():
    """The SQL of every query of the TPC-H sample, by the query's name."""
    names = re.findall(r"kind: IntermittentQuery\nmetadata:\n  name: (\S+)", TPCH_SAMPLE.read_text())
    return {name: (QUERIES / (name + ".sql")).read_text() for name in names}


class DecomposedEqualsWhole(unittest.TestCase):
    def test_every_query_partial_then_merge_equals_whole(self):
        queries = dict(sample_queries(), **EXTRA_QUERIES)
        self.assertGreaterEqual(len(queries), 13 + len(EXTRA_QUERIES))
        decomposed = {name: decompose(sql) for name, sql in queries.items()}
        answered = dict.fromkeys(queries, 0)
        for trial in range(TRIALS):
            data = tpch_data.Dataset(seed=trial)
            conn = tpch_data.connect(data)
            for name, sql in queries.items():
                d = decomposed[name]
                rng = random.Random("%s/%d" % (name, trial))
                tpch_data.load_stream(conn, data.stream)
                want = conn.execute(sql).fetchall()
                if any(v is not None and not isinstance(v, str) for row in want for v in row):
                    answered[name] += 1
                parts = data.split(rng, rng.randint(1, 12))
                partials = [sqlite_steps.batch(conn, d, part) for part in parts]
                rng.shuffle(partials)
                got = sqlite_steps.final(conn, d, sqlite_steps.merge_tree(conn, d, partials, rng))
                ordered = "order by" in " ".join(sql.lower().split())
                self.assertTrue(
                    sqlite_steps.same_rows(got, want, ordered),
                    "%s, trial %d, %d batches:\nmerged %r\nwhole  %r" % (name, trial, len(parts), got, want),
                )
            conn.close()
        # The data must make every query answer something, or equality
        # proves nothing.
        for name, count in answered.items():
            self.assertGreaterEqual(count, TRIALS // 2, "%s answered with data in %d of %d trials" % (name, count, TRIALS))


class DecompositionShape(unittest.TestCase):
    def test_statements(self):
        d = decompose(
            "SELECT k, avg(x) AS a, count(*) AS n, sum(x) / count(*) AS ratio FROM t "
            "WHERE y > 1 GROUP BY k HAVING max(x) > 2 ORDER BY n DESC LIMIT 5;"
        )
        self.assertEqual(
            d.partial_sql,
            "SELECT k, sum(x) AS laxity_a0, count(x) AS laxity_a1, count(*) AS laxity_a2, max(x) AS laxity_a3 "
            "FROM t WHERE y > 1 GROUP BY k",
        )
        self.assertEqual(
            d.merge_sql,
            "SELECT k, sum(laxity_a0) AS laxity_a0, sum(laxity_a1) AS laxity_a1, sum(laxity_a2) AS laxity_a2, "
            "max(laxity_a3) AS laxity_a3 FROM laxity_partials GROUP BY k",
        )
        self.assertEqual(
            d.final_sql,
            "SELECT k, (CASE WHEN laxity_a1 = 0 THEN NULL ELSE CAST(laxity_a0 AS DOUBLE) / laxity_a1 END) AS a, "
            "(laxity_a2) AS n, (laxity_a0) / (laxity_a2) AS ratio FROM laxity_merged "
            "WHERE (laxity_a3) > 2 ORDER BY n DESC LIMIT 5",
        )
        self.assertEqual(d.partial_columns, ("k", "laxity_a0", "laxity_a1", "laxity_a2", "laxity_a3"))

    def test_text_passes_through(self):
        d = decompose("SELECT count(*) AS n FROM t WHERE s = 'it''s; sum(x) -- no' /* count(y) */ AND `sum` > 0")
        self.assertEqual(len(d.aggregates), 1)
        self.assertIn("s = 'it''s; sum(x) -- no' /* count(y) */ AND `sum` > 0", d.partial_sql)


class Refusals(unittest.TestCase):
    CASES = {
        "SELECT count(DISTINCT user_id) AS users FROM events": "count(DISTINCT ...) is not supported",
        "SELECT sum(DISTINCT x) AS s FROM t": "sum(DISTINCT ...) is not supported",
        "SELECT percentile_approx(latency, 0.99) AS p99 FROM t": "percentile_approx() has no exact merge",
        "SELECT approx_count_distinct(u) AS n FROM t": "approx_count_distinct() has no exact merge",
        "SELECT stddev(x) AS s FROM t": "stddev() has no exact merge",
        "SELECT k, sum(x) FROM t GROUP BY k": "select item 2 'sum(x)': give it a name with AS",
        "SELECT sum(x) AS s FROM t GROUP BY lower(k)": "GROUP BY item 1 'lower(k)': must be a column name",
        "SELECT sum(x) AS s FROM t GROUP BY ROLLUP(a, b)": "GROUP BY item 1",
        "SELECT sum(max(x)) AS s FROM t": "the aggregate max() inside sum()",
        "SELECT sum(x) OVER (PARTITION BY k) AS s FROM t": "sum(...) OVER is not supported",
        "SELECT count(*) FILTER (WHERE x > 1) AS n FROM t": "write a CASE inside the aggregate instead",
        "SELECT DISTINCT k FROM t": "SELECT DISTINCT is not supported",
        "SELECT k FROM t": "the query aggregates nothing",
        "SELECT * FROM t GROUP BY k": "select item 1: * is not an aggregate",
        "SELECT count(*) AS n FROM a UNION ALL SELECT count(*) AS n FROM b": "UNION",
        "WITH x AS (SELECT 1) SELECT count(*) AS n FROM x": "must start with SELECT",
        "SELECT count(*) AS n": "no FROM clause",
        "SELECT count(*) AS n FROM t; SELECT 1": "more than one statement",
        "SELECT count(*) AS n FROM t WHERE s = 'open": "never closed",
        "SELECT count((x) AS n FROM t": "left unclosed",
        "SELECT count() AS n FROM t": "count() needs an argument",
        "": "the query is empty",
    }

    def test_refused_with_the_reason(self):
        for sql, reason in self.CASES.items():
            with self.subTest(sql=sql):
                with self.assertRaises(QueryError) as caught:
                    decompose(sql)
                self.assertIn(reason, str(caught.exception))


if __name__ == "__main__":
    unittest.main()
