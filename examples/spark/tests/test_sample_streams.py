"""The decomposition against SQLite for the samples' queries that read
other streams than TPC-H's (service events, ad events, orders): on random
data cut into random batches, partials per batch merged through a random
tree of partial merges and a final merge equal the query run once on all
the data."""

from __future__ import annotations

import pathlib
import random
import sqlite3
import unittest

from laxity_step.decompose import decompose

from . import sqlite_steps, tpch_data

QUERIES = pathlib.Path(__file__).resolve().parent.parent / "queries"
TRIALS = 20

# Each stream's columns (the samples' --schema without the tuple column)
# and a random row of it.
SERVICES = ["api", "auth", "billing", "search", None]


def event(rng: random.Random):
    return (
        "2026-12-01T06:%02d:%02d" % (rng.randint(0, 29), rng.randint(0, 59)),
        rng.choice(SERVICES),
        rng.choice(["INFO", "WARN", "ERROR"]),
        rng.choice([None, rng.randint(1, 64) / 4, rng.randint(1, 2000) * 4.0]),
        rng.choice([None] + ["u%d" % k for k in range(12)]),
    )


def ad_event(rng: random.Random):
    return ("u%d" % rng.randint(0, 9), "ad%d" % rng.randint(0, 11), rng.choice(["view", "click", "purchase"]))


def order(rng: random.Random):
    return (rng.randint(1, 10**6), rng.choice(["emea", "amer", "apac"]), rng.randint(1, 40000) / 4, "2026-12-01T10:00:00")


STREAMS = {
    "events": (("ts", "service", "level", "latency_ms", "user_id"), event),
    "ad_events": (("user_id", "ad_id", "event_type"), ad_event),
    "orders": (("order_id", "region", "amount", "ordered_at"), order),
}
STATIC = {"campaigns": (("ad_id", "campaign_id"), [("ad%d" % k, "c%d" % (k % 4)) for k in range(10)])}

# Each query and the stream it reads.
SAMPLE_QUERIES = {
    "errors-by-service": "events",
    "latency-percentiles": "events",
    "active-users": "events",
    "campaign-views": "ad_events",
    "orders-by-region": "orders",
    "revenue-per-region": "orders",
}


def connect() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    for table, (columns, _) in STREAMS.items():
        conn.execute("CREATE TABLE %s (%s)" % (table, ", ".join(columns)))
    for table, (columns, rows) in STATIC.items():
        conn.execute("CREATE TABLE %s (%s)" % (table, ", ".join(columns)))
        tpch_data.insert(conn, table, rows)
    return conn


def load(conn: sqlite3.Connection, table: str, rows) -> None:
    conn.execute("DELETE FROM %s" % table)
    tpch_data.insert(conn, table, rows)


class SampleQueriesDecomposedEqualWhole(unittest.TestCase):
    def test_partial_then_merge_equals_whole(self):
        for name, table in SAMPLE_QUERIES.items():
            sql = (QUERIES / (name + ".sql")).read_text()
            d = decompose(sql)
            ordered = "order by" in " ".join(sql.lower().split())
            answered = 0
            for trial in range(TRIALS):
                rng = random.Random("%s/%d" % (name, trial))
                rows = [STREAMS[table][1](rng) for _ in range(rng.randint(0, 300))]
                conn = connect()
                load(conn, table, rows)
                want = conn.execute(sql).fetchall()
                answered += bool(want)
                cuts = sorted(rng.randint(0, len(rows)) for _ in range(rng.randint(0, 11)))
                bounds = [0] + cuts + [len(rows)]
                partials = []
                for a, b in zip(bounds, bounds[1:]):
                    load(conn, table, rows[a:b])
                    partials.append(conn.execute(d.partial_sql).fetchall())
                rng.shuffle(partials)
                got = sqlite_steps.final(conn, d, sqlite_steps.merge_tree(conn, d, partials, rng))
                conn.close()
                self.assertTrue(
                    sqlite_steps.same_rows(got, want, ordered),
                    "%s, trial %d, %d batches:\nmerged %r\nwhole  %r" % (name, trial, len(partials), got, want),
                )
            # Equality on no rows proves nothing.
            self.assertGreaterEqual(answered, TRIALS // 2, name)


if __name__ == "__main__":
    unittest.main()
