"""Random TPC-H-shaped data for the decomposition tests, and SQLite to run
the queries on.

The data is small (a test runs the queries hundreds of times) but shaped so
that every sample query's predicates select rows: few nations, regions,
parts and customers, dates over 1993-1997, and the literals the queries
test for. Prices, discounts and taxes are multiples of 1/4 and 1/64, so
that sums are exact in floating point whatever order they are added in: a
partial-then-merge result equals the whole query's exactly, up to the one
division of an average or a ratio.

A stream delivers an order together with its line items (the TPC-H sample's
files are cut by order), so batches split the orders and each order's line
items follow it.
"""

from __future__ import annotations

import datetime
import random
import sqlite3
from typing import Dict, List, Sequence, Tuple

Row = Tuple[object, ...]

# Table name -> its columns, in order.
SCHEMA: Dict[str, Tuple[str, ...]] = {
    "region": ("r_regionkey", "r_name"),
    "nation": ("n_nationkey", "n_name", "n_regionkey"),
    "supplier": ("s_suppkey", "s_name", "s_nationkey"),
    "customer": (
        "c_custkey", "c_name", "c_address", "c_nationkey", "c_phone", "c_acctbal", "c_mktsegment", "c_comment",
    ),
    "part": ("p_partkey", "p_type"),
    "orders": ("o_orderkey", "o_custkey", "o_orderdate", "o_orderpriority", "o_shippriority"),
    "lineitem": (
        "l_orderkey", "l_partkey", "l_suppkey", "l_linenumber", "l_quantity", "l_extendedprice", "l_discount",
        "l_tax", "l_returnflag", "l_linestatus", "l_shipdate", "l_commitdate", "l_receiptdate", "l_shipmode",
    ),
}

# The tables a batch holds; the others are static.
STREAM_TABLES = ("orders", "lineitem")

REGIONS = ("AFRICA", "AMERICA", "ASIA", "EUROPE")
NATIONS = (
    ("BRAZIL", "AMERICA"), ("CANADA", "AMERICA"), ("UNITED STATES", "AMERICA"), ("CHINA", "ASIA"),
    ("INDIA", "ASIA"), ("JAPAN", "ASIA"), ("FRANCE", "EUROPE"), ("GERMANY", "EUROPE"), ("KENYA", "AFRICA"),
)
PART_TYPES = ("ECONOMY ANODIZED STEEL", "STANDARD POLISHED TIN", "PROMO BRUSHED COPPER")
SEGMENTS = ("BUILDING", "AUTOMOBILE", "MACHINERY")
PRIORITIES = ("1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW")
SHIPMODES = ("MAIL", "SHIP", "AIR", "TRUCK")
FIRST_DAY = datetime.date(1993, 1, 1)
DAYS = (datetime.date(1997, 12, 31) - FIRST_DAY).days
# TPC-H's current date: line items received by then are returned or accepted.
CURRENT_DATE = "1995-06-17"


def _day(offset: int) -> str:
    return (FIRST_DAY + datetime.timedelta(days=offset)).isoformat()


class Dataset:
    """One random database: static tables and the stream's orders, each
    with its line items, in arrival order."""

    def __init__(self, seed: int, orders: int = 160, null_share: float = 0.03):
        rng = random.Random(seed)
        self.static: Dict[str, List[Row]] = {
            "region": [(k, name) for k, name in enumerate(REGIONS)],
            "nation": [(k, name, REGIONS.index(region)) for k, (name, region) in enumerate(NATIONS)],
            "supplier": [(k, "Supplier#%d" % k, rng.randrange(len(NATIONS))) for k in range(12)],
            "customer": [
                (
                    k, "Customer#%d" % k, "Street %d" % rng.randrange(100), rng.randrange(len(NATIONS)),
                    "%02d-555-%04d" % (rng.randrange(10, 35), k), rng.randrange(-4000, 40000) / 4,
                    rng.choice(SEGMENTS), rng.choice(("", "careful", "quick", "final")),
                )
                for k in range(30)
            ],
            "part": [(k, rng.choice(PART_TYPES)) for k in range(24)],
        }
        # Each element: (order row, its line item rows).
        self.stream: List[Tuple[Row, List[Row]]] = []
        for orderkey in range(1, orders + 1):
            orderdate = rng.randrange(DAYS - 150)
            order = (
                orderkey, rng.randrange(30), _day(orderdate), rng.choice(PRIORITIES), rng.randrange(2),
            )
            items = []
            for line in range(1, rng.randint(1, 7) + 1):
                quantity = rng.randint(1, 50)
                ship = orderdate + rng.randint(1, 121)
                commit = orderdate + rng.randint(30, 90)
                receipt = ship + rng.randint(1, 30)
                returned = _day(receipt) <= CURRENT_DATE
                discount = None if rng.random() < null_share else rng.randrange(8) / 64
                items.append((
                    orderkey, rng.randrange(24), rng.randrange(12), line, quantity,
                    quantity * rng.randrange(400, 8000) / 4, discount, rng.randrange(6) / 64,
                    rng.choice("RA") if returned else "N", "F" if _day(ship) <= CURRENT_DATE else "O",
                    _day(ship), _day(commit), _day(receipt), rng.choice(SHIPMODES),
                ))
            self.stream.append((order, items))

    def split(self, rng: random.Random, batches: int) -> List[List[Tuple[Row, List[Row]]]]:
        """The stream cut, in arrival order, into batches at random points
        (a batch may be empty)."""
        cuts = sorted(rng.randint(0, len(self.stream)) for _ in range(batches - 1))
        bounds = [0] + cuts + [len(self.stream)]
        return [self.stream[a:b] for a, b in zip(bounds, bounds[1:])]


def connect(dataset: Dataset) -> sqlite3.Connection:
    """An in-memory SQLite with the static tables filled, the stream's
    tables empty, and year(), which Spark SQL has and SQLite lacks, for
    dates written YYYY-MM-DD."""
    conn = sqlite3.connect(":memory:")
    conn.create_function("year", 1, lambda d: None if d is None else int(d[:4]), deterministic=True)
    for table, columns in SCHEMA.items():
        conn.execute("CREATE TABLE %s (%s)" % (table, ", ".join(columns)))
    for table, rows in dataset.static.items():
        insert(conn, table, rows)
    return conn


def insert(conn: sqlite3.Connection, table: str, rows: Sequence[Row]) -> None:
    if rows:
        marks = ", ".join("?" * len(rows[0]))
        conn.executemany("INSERT INTO %s VALUES (%s)" % (table, marks), rows)


def load_stream(conn: sqlite3.Connection, part: Sequence[Tuple[Row, List[Row]]]) -> None:
    """Makes orders and lineitem hold exactly the given part of the stream."""
    for table in STREAM_TABLES:
        conn.execute("DELETE FROM %s" % table)
    insert(conn, "orders", [order for order, _ in part])
    insert(conn, "lineitem", [item for _, items in part for item in items])


def replace_table(conn: sqlite3.Connection, table: str, columns: Sequence[str], rows: Sequence[Row]) -> None:
    """(Re)creates table with untyped columns, so values keep their types."""
    conn.execute("DROP TABLE IF EXISTS %s" % table)
    conn.execute("CREATE TABLE %s (%s)" % (table, ", ".join(columns)))
    insert(conn, table, rows)
