"""The job's own options: the arguments of the query's
spec.sparkApplication template, which laxity's --laxity-* arguments
follow. They say what laxity does not: which query to run and how the
input's bytes become tables.

  --query=<path>              the query's SQL file (local:// or a path in the image)
  --member-query=<query>=<path>  the SQL file of query <query>, repeatable: a
                              template shared by the queries of one stream (a
                              shared batch computes every member's partial, and
                              only queries of one template share) names each
                              one's; a step of <query> runs it instead of --query
  --view=<name>[=<glob>]      a table the batch's input becomes; with a glob,
                              only the objects whose key, the Kafka records
                              whose key, or the files under the input location
                              whose URI matches it (* any run, ? one character)
  --schema=<name>=<DDL>       each view's columns, as Spark DDL ("a INT, b STRING"),
                              so that every batch's partial has the same types
                              and an empty batch still has its columns
  --format=<format>           how files and Kafka values decode: json (default),
                              csv, parquet or orc (files only), text (one value
                              column)
  --read-option=<key>=<value> a reader option (csv's header, ...), repeatable
  --table=<name>=<uri>        a static table every batch joins with, read whole
                              (Parquet)
  --kafka-bootstrap-servers=<host:port,...>
  --kafka-option=<key>=<value>  a Kafka client setting (kafka.security.protocol=SASL_SSL, ...);
                              with kafka.sasl.mechanism and no kafka.sasl.jaas.config, the
                              job builds the latter from the environment variables
                              KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD (from a Secret)
  --tuple-column=<name>       with an input location (spec.input.location) and no
                              slice: the column numbering the stream's tuples, whose
                              values in [from-tuple, to-tuple) are the batch's
  @<path>                     more options from a file in the image, one a line

Spark settings named spark.laxity.* are laxity's: it drops a template's own.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from .params import ParameterError

FORMATS = ("json", "csv", "parquet", "orc", "text")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class View:
    name: str
    glob: Optional[str]
    schema: str


@dataclass(frozen=True)
class Options:
    query: Optional[str]
    views: Tuple[View, ...] = ()
    format: str = "json"
    read_options: Dict[str, str] = field(default_factory=dict)
    tables: Dict[str, str] = field(default_factory=dict)
    kafka_bootstrap_servers: Optional[str] = None
    kafka_options: Dict[str, str] = field(default_factory=dict)
    tuple_column: Optional[str] = None
    # The SQL file of each query named by --member-query.
    member_queries: Dict[str, str] = field(default_factory=dict)

    def query_of(self, name: str) -> str:
        """The SQL file query name runs: its --member-query, else --query."""
        path = self.member_queries.get(name, self.query)
        if path is None:
            raise ParameterError("--member-query=%s=<path>: missing, and no --query" % name)
        return path


def is_table_name(name: str) -> bool:
    """Whether name can be a view's: SQL reads it without quotes."""
    return _NAME.match(name) is not None


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise ParameterError("job options: %s" % message)

    def convert_arg_line_to_args(self, arg_line: str) -> List[str]:
        # An @file holds one option a line; blank lines and # comments are
        # skipped.
        line = arg_line.strip()
        return [] if not line or line.startswith("#") else [line]


def _pairs(values: Sequence[str], option: str) -> List[Tuple[str, str]]:
    out = []
    for v in values:
        key, eq, value = v.partition("=")
        if not eq or not key:
            raise ParameterError("--%s=%s: want --%s=<name>=<value>" % (option, v, option))
        out.append((key, value))
    return out


def parse(arguments: Sequence[str]) -> Options:
    """The job's options; ParameterError names the option that is wrong."""
    p = _Parser(prog="laxity_step", add_help=False, allow_abbrev=False, fromfile_prefix_chars="@")
    p.add_argument("--query")
    p.add_argument("--member-query", action="append", default=[])
    p.add_argument("--view", action="append", default=[])
    p.add_argument("--schema", action="append", default=[])
    p.add_argument("--format", default="json", choices=FORMATS)
    p.add_argument("--read-option", action="append", default=[])
    p.add_argument("--table", action="append", default=[])
    p.add_argument("--kafka-bootstrap-servers")
    p.add_argument("--kafka-option", action="append", default=[])
    p.add_argument("--tuple-column")
    ns = p.parse_args(list(arguments))

    local = lambda path: path[len("local://") :] if path.startswith("local://") else path
    query = None
    if ns.query is not None:
        query = local(ns.query)
        if not query:
            raise ParameterError("--query: empty")
    member_queries: Dict[str, str] = {}
    for name, path in _pairs(ns.member_query, "member-query"):
        if not name or not local(path):
            raise ParameterError("--member-query=%s=%s: want --member-query=<query>=<path>" % (name, path))
        if name in member_queries:
            raise ParameterError("--member-query=%s=...: given twice" % name)
        member_queries[name] = local(path)
    if query is None and not member_queries:
        raise ParameterError("--query: required (or --member-query=<query>=<path> for each query of a shared template)")

    schemas: Dict[str, str] = {}
    for name, ddl in _pairs(ns.schema, "schema"):
        if name in schemas:
            raise ParameterError("--schema=%s=...: given twice" % name)
        schemas[name] = ddl
    views = []
    for v in ns.view:
        name, eq, glob = v.partition("=")
        if not _NAME.match(name):
            raise ParameterError("--view=%s: %r is not a table name" % (v, name))
        if name in (x.name for x in views):
            raise ParameterError("--view=%s: the view %s is given twice" % (v, name))
        if name not in schemas:
            raise ParameterError("--view=%s: no --schema=%s=<DDL> gives its columns" % (v, name))
        views.append(View(name, glob if eq else None, schemas[name]))
    for name in schemas:
        if name not in (x.name for x in views):
            raise ParameterError("--schema=%s=...: no --view=%s" % (name, name))

    tables: Dict[str, str] = {}
    for name, uri in _pairs(ns.table, "table"):
        if not _NAME.match(name) or not uri:
            raise ParameterError("--table=%s=%s: want --table=<name>=<uri>" % (name, uri))
        if name in tables or name in schemas:
            raise ParameterError("--table=%s=...: the name %s is taken" % (name, name))
        tables[name] = uri

    kafka_options = {}
    for key, value in _pairs(ns.kafka_option, "kafka-option"):
        if not key.startswith("kafka."):
            raise ParameterError("--kafka-option=%s=...: Spark passes only kafka.* options to the client" % key)
        kafka_options[key] = value
    return Options(
        query=query,
        member_queries=member_queries,
        views=tuple(views),
        format=ns.format,
        read_options=dict(_pairs(ns.read_option, "read-option")),
        tables=tables,
        kafka_bootstrap_servers=ns.kafka_bootstrap_servers,
        kafka_options=kafka_options,
        tuple_column=ns.tuple_column,
    )


_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


def kafka_client_options(opts: Options, environment: Mapping[str, str]) -> Dict[str, str]:
    """The Kafka client's options: opts' own, plus kafka.sasl.jaas.config
    built from KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD when a SASL
    mechanism is set and no JAAS configuration is, so that a password comes
    from a Secret rather than from the template."""
    out = dict(opts.kafka_options)
    mechanism = out.get("kafka.sasl.mechanism")
    if mechanism is None or "kafka.sasl.jaas.config" in out:
        return out
    if mechanism not in _LOGIN_MODULES:
        raise ParameterError(
            "--kafka-option=kafka.sasl.mechanism=%s: want one of %s, or set kafka.sasl.jaas.config"
            % (mechanism, ", ".join(sorted(_LOGIN_MODULES)))
        )
    missing = [v for v in ("KAFKA_SASL_USERNAME", "KAFKA_SASL_PASSWORD") if v not in environment]
    if missing:
        raise ParameterError(
            "--kafka-option=kafka.sasl.mechanism=%s: the environment lacks %s (or set kafka.sasl.jaas.config)"
            % (mechanism, " and ".join(missing))
        )

    def quoted(value: str) -> str:
        return '"%s"' % value.replace("\\", "\\\\").replace('"', '\\"')

    out["kafka.sasl.jaas.config"] = "%s required username=%s password=%s;" % (
        _LOGIN_MODULES[mechanism], quoted(environment["KAFKA_SASL_USERNAME"]), quoted(environment["KAFKA_SASL_PASSWORD"]),
    )
    return out
