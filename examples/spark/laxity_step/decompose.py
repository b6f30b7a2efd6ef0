"""An aggregate query cut into the three SQL statements laxity's steps run.

A batch runs the partial SQL over its own tuples; a partial merge runs the
merge SQL over the union of the partials it is given, which yields a partial
of the same shape; the final merge runs the merge SQL and then the final
SQL over its result. Because the merge SQL only combines (sum of sums, sum
of counts, min of mins, max of maxes), merging is associative and
commutative: any tree of partial merges over any split of the input into
batches ends in the answer the query gives on the whole input.

    SELECT l_returnflag, avg(l_quantity) AS avg_qty, count(*) AS n
    FROM lineitem GROUP BY l_returnflag ORDER BY l_returnflag

becomes

    partial: SELECT l_returnflag, sum(l_quantity) AS laxity_a0,
                    count(l_quantity) AS laxity_a1, count(*) AS laxity_a2
             FROM lineitem GROUP BY l_returnflag
    merge:   SELECT l_returnflag, sum(laxity_a0) AS laxity_a0,
                    sum(laxity_a1) AS laxity_a1, sum(laxity_a2) AS laxity_a2
             FROM laxity_partials GROUP BY l_returnflag
    final:   SELECT l_returnflag, (CASE WHEN laxity_a1 = 0 THEN NULL ELSE
                    CAST(laxity_a0 AS DOUBLE) / laxity_a1 END) AS avg_qty,
                    (laxity_a2) AS n
             FROM laxity_merged ORDER BY l_returnflag

What a query may hold:

- aggregates sum, count, min, max and avg, anywhere in SELECT, HAVING and
  ORDER BY and inside expressions (sum(a) / sum(b)); avg becomes a sum and a
  count, divided in the final SQL (as a DOUBLE);
- GROUP BY column names of the FROM clause (compute an expression in a FROM
  subquery and group by its name);
- any FROM and WHERE, which run per batch unchanged: a join of the stream
  with static tables is exact per batch; a join of two streamed tables is
  exact only when matching rows arrive in the same batch;
- HAVING (aggregates and group columns, evaluated on the merged totals),
  ORDER BY and LIMIT, which only the final SQL applies.

It refuses, with the reason: DISTINCT inside an aggregate (count(DISTINCT x)
has no exact merge from per-batch counts), other aggregates (stddev,
percentiles, collect_list, approx_count_distinct, ...), FILTER and OVER on
an aggregate, aggregates nested in aggregates, SELECT DISTINCT, and select
items that compute without a name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from .sqltext import (
    QueryError,
    Token,
    matching_paren,
    next_significant,
    parse_select,
    split_top_level,
    text_of,
    tokenize,
)

# The views the merge and final SQL read.
PARTIALS_VIEW = "laxity_partials"
MERGED_VIEW = "laxity_merged"

# Partial columns are named with this prefix and their ordinal.
COLUMN_PREFIX = "laxity_a"

# How each partial aggregate is merged.
_MERGE_FUNCTION = {"sum": "sum", "count": "sum", "min": "min", "max": "max"}

SUPPORTED = ("sum", "count", "min", "max", "avg")

# Aggregates of Spark SQL (and SQLite) that partials cannot merge exactly,
# named so that a query using one fails with a reason rather than with a
# wrong answer or an unknown column.
_UNSUPPORTED = {
    "any_value", "approx_count_distinct", "approx_percentile", "array_agg", "avg_distinct",
    "bit_and", "bit_or", "bit_xor", "bool_and", "bool_or", "collect_list", "collect_set",
    "corr", "count_if", "count_min_sketch", "covar_pop", "covar_samp", "every", "first",
    "first_value", "group_concat", "grouping", "grouping_id", "histogram_numeric",
    "hll_sketch_agg", "hll_union_agg", "kurtosis", "last", "last_value", "listagg", "max_by",
    "median", "min_by", "mode", "percentile", "percentile_approx", "percentile_cont",
    "percentile_disc", "regr_avgx", "regr_avgy", "regr_count", "regr_intercept", "regr_r2",
    "regr_slope", "regr_sxx", "regr_sxy", "regr_syy", "skewness", "some", "std", "stddev",
    "stddev_pop", "stddev_samp", "string_agg", "total", "try_avg", "try_sum", "var_pop",
    "var_samp", "variance",
}

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# Words that cannot be a column name in GROUP BY here.
_KEYWORDS = {"rollup", "cube", "grouping", "sets", "all", "distinct", "null", "true", "false"}


@dataclass(frozen=True)
class PartialAggregate:
    """One column of a partial: function(argument) per batch, merged with
    merge_function."""

    column: str
    function: str
    argument: str

    @property
    def merge_function(self) -> str:
        return _MERGE_FUNCTION[self.function]


@dataclass(frozen=True)
class Decomposition:
    """The query's three statements and the columns of a partial."""

    partial_sql: str
    merge_sql: str
    final_sql: str
    group_columns: Tuple[str, ...]
    aggregates: Tuple[PartialAggregate, ...]

    @property
    def partial_columns(self) -> Tuple[str, ...]:
        return self.group_columns + tuple(a.column for a in self.aggregates)


@dataclass
class _Aggregates:
    """The partial aggregates found so far, each call written once."""

    found: List[PartialAggregate] = field(default_factory=list)
    by_call: Dict[Tuple[str, str], str] = field(default_factory=dict)

    def column(self, function: str, argument: str) -> str:
        key = (function, argument)
        if key not in self.by_call:
            name = "%s%d" % (COLUMN_PREFIX, len(self.found))
            self.found.append(PartialAggregate(name, function, argument))
            self.by_call[key] = name
        return self.by_call[key]


def decompose(sql: str) -> Decomposition:
    """Cuts the aggregate query sql into partial, merge and final SQL, or
    raises QueryError saying why it cannot."""
    stmt = parse_select(sql)
    select_sig = [t for t in stmt.select if t.significant]
    if select_sig and select_sig[0].is_word("distinct"):
        raise QueryError("SELECT DISTINCT is not supported: group by the columns instead")
    if select_sig and select_sig[0].is_word("all"):
        stmt = stmt.__class__(stmt.select[stmt.select.index(select_sig[0]) + 1 :], *_rest(stmt))

    group_columns = _group_columns(stmt.group_by)
    for g in group_columns:
        if g.lower().startswith(COLUMN_PREFIX):
            raise QueryError("GROUP BY column %r: names starting with %s are the job's own" % (g, COLUMN_PREFIX))
    aggs = _Aggregates()

    items = []
    has_aggregate = False
    for number, item in enumerate(split_top_level(stmt.select), start=1):
        expr, alias = _split_alias(item, number)
        rewritten, found = _rewrite(expr, aggs, "select item %d" % number)
        has_aggregate = has_aggregate or found
        if alias is None:
            name = text_of(expr)
            if name == "*":
                raise QueryError("select item %d: * is not an aggregate; name the group columns and aggregates" % number)
            if found or not _IDENTIFIER.match(name):
                raise QueryError("select item %d %r: give it a name with AS" % (number, name))
            items.append(name)
        else:
            items.append("%s AS %s" % (rewritten, alias))
    having, found_having = _rewrite(stmt.having, aggs, "HAVING") if stmt.having else ("", False)
    order_by, found_order = _rewrite(stmt.order_by, aggs, "ORDER BY") if stmt.order_by else ("", False)
    if not (has_aggregate or found_having or found_order or group_columns):
        raise QueryError("the query aggregates nothing: it needs GROUP BY or an aggregate (%s)" % ", ".join(SUPPORTED))

    from_ = text_of(stmt.from_)
    where = text_of(stmt.where)
    group_list = ", ".join(group_columns)

    partial_select = list(group_columns) + ["%s(%s) AS %s" % (a.function, a.argument, a.column) for a in aggs.found]
    partial_sql = "SELECT %s FROM %s" % (", ".join(partial_select), from_)
    if where:
        partial_sql += " WHERE %s" % where
    if group_columns:
        partial_sql += " GROUP BY %s" % group_list

    merge_select = list(group_columns) + ["%s(%s) AS %s" % (a.merge_function, a.column, a.column) for a in aggs.found]
    merge_sql = "SELECT %s FROM %s" % (", ".join(merge_select), PARTIALS_VIEW)
    if group_columns:
        merge_sql += " GROUP BY %s" % group_list

    final_sql = "SELECT %s FROM %s" % (", ".join(items), MERGED_VIEW)
    if having:
        final_sql += " WHERE %s" % having
    if order_by:
        final_sql += " ORDER BY %s" % order_by
    limit = text_of(stmt.limit)
    if limit:
        final_sql += " LIMIT %s" % limit
    return Decomposition(partial_sql, merge_sql, final_sql, tuple(group_columns), tuple(aggs.found))


def _rest(stmt):
    return (stmt.from_, stmt.where, stmt.group_by, stmt.having, stmt.order_by, stmt.limit)


def _group_columns(tokens: List[Token]) -> List[str]:
    if not tokens:
        return []
    columns = []
    for number, item in enumerate(split_top_level(tokens), start=1):
        name = text_of(item)
        if not _IDENTIFIER.match(name) or name.lower() in _KEYWORDS:
            raise QueryError(
                "GROUP BY item %d %r: must be a column name of the FROM clause "
                "(compute an expression, or take a qualified column, in a FROM subquery and group by its name)"
                % (number, name)
            )
        if name.lower() in (c.lower() for c in columns):
            raise QueryError("GROUP BY item %d %r is listed twice" % (number, name))
        columns.append(name)
    return columns


def _split_alias(item: List[Token], number: int) -> Tuple[List[Token], Optional[str]]:
    """A select item's expression and its AS name (None without AS)."""
    sig = [k for k, t in enumerate(item) if t.significant]
    if not sig:
        raise QueryError("select item %d is empty" % number)
    if len(sig) >= 3 and item[sig[-2]].is_word("as"):
        alias = item[sig[-1]]
        if alias.kind == "word" and _IDENTIFIER.match(alias.text):
            return item[: sig[-2]], alias.text
        if alias.kind == "quoted":
            return item[: sig[-2]], alias.text
        raise QueryError("select item %d: %r is not a name" % (number, alias.text))
    return item, None


def _rewrite(tokens: List[Token], aggs: _Aggregates, where: str) -> Tuple[str, bool]:
    """tokens' text with every aggregate call replaced by what computes it
    from the merged partial columns; found says whether there was one."""
    out: List[str] = []
    found = False
    k = 0
    sig = [i for i, t in enumerate(tokens) if t.significant]
    if not sig:
        return "", False
    k, last = sig[0], sig[-1]
    while k <= last:
        t = tokens[k]
        call = _call_at(tokens, k)
        if call is None:
            out.append(t.text)
            k += 1
            continue
        name, open_k, close_k = call
        lowered = name.lower()
        if lowered in _UNSUPPORTED:
            raise QueryError(
                "%s: %s() has no exact merge of per-batch partials; supported aggregates are %s"
                % (where, name, ", ".join(SUPPORTED))
            )
        if lowered not in SUPPORTED:
            out.append(t.text)
            k += 1
            continue
        after = next_significant(tokens, close_k + 1)
        if after is not None and tokens[after].is_word("over", "filter", "within"):
            clause = tokens[after].text.upper()
            hint = " (write a CASE inside the aggregate instead)" if clause == "FILTER" else ""
            raise QueryError(
                "%s: %s(...) %s is not supported: per-batch partials cannot reproduce it%s" % (where, name, clause, hint)
            )
        argument = _argument(tokens[open_k + 1 : close_k], name, where)
        found = True
        out.append(_final_expression(lowered, argument, aggs))
        k = close_k + 1
    return "".join(out), found


def _call_at(tokens: List[Token], k: int) -> Optional[Tuple[str, int, int]]:
    """(name, index of "(", index of ")") when a function call starts at k."""
    t = tokens[k]
    if t.kind != "word":
        return None
    # A qualified name (db.fn) or a column (t.sum) is not one of ours.
    if k > 0 and tokens[k - 1].kind == "punct" and tokens[k - 1].text == ".":
        return None
    open_k = next_significant(tokens, k + 1)
    if open_k is None or tokens[open_k].kind != "punct" or tokens[open_k].text != "(":
        return None
    return t.text, open_k, matching_paren(tokens, open_k)


def _argument(tokens: List[Token], name: str, where: str) -> str:
    sig = [t for t in tokens if t.significant]
    if not sig:
        if name.lower() == "count":
            raise QueryError("%s: count() needs an argument: count(*) counts rows" % where)
        raise QueryError("%s: %s() needs an argument" % (where, name))
    if sig[0].is_word("distinct"):
        raise QueryError(
            "%s: %s(DISTINCT ...) is not supported: the distinct values of different batches overlap, "
            "so per-batch results cannot be merged into an exact distinct %s" % (where, name, name.lower())
        )
    if sig[0].is_word("all"):
        tokens = tokens[tokens.index(sig[0]) + 1 :]
    if len(split_top_level(tokens)) != 1:
        raise QueryError("%s: %s() takes one argument" % (where, name))
    for k in range(len(tokens)):
        call = _call_at(tokens, k)
        if call and (call[0].lower() in SUPPORTED or call[0].lower() in _UNSUPPORTED):
            raise QueryError("%s: the aggregate %s() inside %s() is not supported" % (where, call[0], name))
    return text_of(tokens)


def _final_expression(function: str, argument: str, aggs: _Aggregates) -> str:
    """What computes function(argument) over the whole input from the merged
    partial columns."""
    if function == "avg":
        total = aggs.column("sum", argument)
        count = aggs.column("count", argument)
        # avg ignores NULLs, as count(argument) does; a group whose values
        # are all NULL has the average NULL, not a division by zero.
        return "(CASE WHEN %s = 0 THEN NULL ELSE CAST(%s AS DOUBLE) / %s END)" % (count, total, count)
    return "(%s)" % aggs.column(function, argument)
