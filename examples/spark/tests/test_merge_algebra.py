"""Merging partials is associative and commutative and has the partial
itself as the merge of one: the properties that let laxity merge any
batches in any partial merges, in any order, and still reach the answer."""

from __future__ import annotations

import random
import unittest

from laxity_step.decompose import decompose

from . import sqlite_steps, tpch_data
from .test_decompose import EXTRA_QUERIES, sample_queries

TRIALS = 12


class MergeAlgebra(unittest.TestCase):
    def setUp(self):
        self.queries = dict(sample_queries(), **EXTRA_QUERIES)

    def partials(self, trial):
        """Per query: three partials of random batches of one dataset, and a
        connection to merge them on."""
        data = tpch_data.Dataset(seed=1000 + trial, orders=90)
        conn = tpch_data.connect(data)
        self.addCleanup(conn.close)
        rng = random.Random(trial)
        out = {}
        for name, sql in self.queries.items():
            d = decompose(sql)
            parts = data.split(rng, 3)
            out[name] = (d, [sqlite_steps.batch(conn, d, p) for p in parts])
        return conn, out

    def assertSame(self, got, want, context):
        self.assertTrue(sqlite_steps.same_rows(got, want, ordered=False), "%s:\n%r\n%r" % (context, got, want))

    def test_commutative_associative_and_one_is_itself(self):
        nonempty = 0
        for trial in range(TRIALS):
            conn, by_query = self.partials(trial)
            for name, (d, (a, b, c)) in by_query.items():
                merge = lambda *xs: sqlite_steps.merge(conn, d, xs)  # noqa: E731
                context = "%s, trial %d" % (name, trial)
                nonempty += bool(a and b)
                self.assertSame(merge(a, b), merge(b, a), context + ": a+b vs b+a")
                self.assertSame(merge(merge(a, b), c), merge(a, merge(b, c)), context + ": (a+b)+c vs a+(b+c)")
                self.assertSame(merge(merge(a, c), b), merge(a, b, c), context + ": (a+c)+b vs a+b+c")
                self.assertSame(merge(a), a, context + ": merge of a alone")
                # A merged partial has a partial's columns, so it can be
                # merged again.
                cursor = conn.execute(d.merge_sql)
                columns = tuple(col[0] for col in cursor.description)
                cursor.close()
                self.assertEqual(columns, d.partial_columns, context)
        self.assertGreater(nonempty, TRIALS * len(self.queries) // 2)


if __name__ == "__main__":
    unittest.main()
