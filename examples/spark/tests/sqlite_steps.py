"""laxity's three step kinds run on SQLite instead of Spark: what
laxity_step.job does with the same SQL, minus reading and writing files."""

from __future__ import annotations

import math
import random
import sqlite3
from typing import List, Mapping, Sequence, Tuple

from laxity_step.decompose import MERGED_VIEW, PARTIALS_VIEW, Decomposition
from laxity_step.options import View
from laxity_step.params import JoinedInput

from . import tpch_data
from .tpch_data import Row


def batch(conn: sqlite3.Connection, d: Decomposition, part) -> List[Row]:
    """A batch step: the partial SQL over the batch's part of the stream."""
    tpch_data.load_stream(conn, part)
    return conn.execute(d.partial_sql).fetchall()


def joined_batch(
    conn: sqlite3.Connection, d: Decomposition, views: Sequence[Tuple[JoinedInput, View]], tables: Mapping[str, str], tuple_column: str
) -> List[Row]:
    """A batch over several inputs (job.input_views' pairs): each input's
    tuples in its range, read from the table standing for its location as
    job reads the location's files with --tuple-column, into the view of its
    name; then the partial SQL."""
    for joined, view in views:
        columns = ", ".join(tpch_data.SCHEMA[view.name])
        conn.execute("DELETE FROM %s" % view.name)
        conn.execute(
            "INSERT INTO %s (%s) SELECT %s FROM %s WHERE %s >= ? AND %s < ?"
            % (view.name, columns, columns, tables[joined.location], tuple_column, tuple_column),
            (joined.from_tuple, joined.to_tuple),
        )
    return conn.execute(d.partial_sql).fetchall()


def merge(conn: sqlite3.Connection, d: Decomposition, inputs: Sequence[List[Row]]) -> List[Row]:
    """A partial merge: the merge SQL over the union of its inputs."""
    tpch_data.replace_table(conn, PARTIALS_VIEW, d.partial_columns, [r for rows in inputs for r in rows])
    return conn.execute(d.merge_sql).fetchall()


def final(conn: sqlite3.Connection, d: Decomposition, inputs: Sequence[List[Row]]) -> List[Row]:
    """The final merge: the merge SQL, then the final SQL over its result."""
    merged = merge(conn, d, inputs)
    tpch_data.replace_table(conn, MERGED_VIEW, d.partial_columns, merged)
    return conn.execute(d.final_sql).fetchall()


def merge_tree(conn: sqlite3.Connection, d: Decomposition, results: List[List[Row]], rng: random.Random) -> List[List[Row]]:
    """Partial merges of random groups of results, in random order, until
    at most three results are left: any tree laxity's partial merges (or
    another plan's) could make."""
    results = list(results)
    while len(results) > 3:
        size = rng.randint(2, min(4, len(results)))
        picked = sorted(rng.sample(range(len(results)), size), reverse=True)
        group = [results.pop(k) for k in picked]
        rng.shuffle(group)
        results.insert(rng.randint(0, len(results)), merge(conn, d, group))
    return results


def same_value(a: object, b: object) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return False
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    return a == b


def same_rows(got: Sequence[Row], want: Sequence[Row], ordered: bool) -> bool:
    """got equals want row by row (ordered) or as multisets; floats equal
    up to rounding."""
    if len(got) != len(want):
        return False
    if not ordered:
        key = lambda r: tuple((v is None, str(type(v)), v if v is not None else 0) for v in r)  # noqa: E731
        got, want = sorted(got, key=key), sorted(want, key=key)
    return all(len(g) == len(w) and all(same_value(x, y) for x, y in zip(g, w)) for g, w in zip(got, want))
