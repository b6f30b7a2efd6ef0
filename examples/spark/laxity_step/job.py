"""The Spark side: one step of a query, as laxity launched it.

Everything Spark-specific is here, and pyspark is imported inside the
functions, so that the rest of the package (and its tests) runs without it.
This module was not run against Spark in the repository's CI; see
examples/spark/README.md for what is tested.
"""

from __future__ import annotations

import os
import sys
from typing import Callable, Dict, List, Sequence, Tuple

from . import options as job_options
from . import params, slices
from .decompose import MERGED_VIEW, PARTIALS_VIEW, Decomposition, decompose
from .publish import publish
from .sqltext import QueryError


def main(argv: Sequence[str]) -> int:
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()
    try:
        conf = {k: v for k, v in spark.sparkContext.getConf().getAll() if k.startswith(params.CONF_PREFIX)}
        laxity_args, own_args = params.split_arguments(argv)
        step = params.parse(laxity_args, conf)
        opts = job_options.parse(own_args)
        queries = {}
        for query, _ in step.results():
            with open(opts.query_of(query)) as f:
                queries[query] = decompose(f.read())
        run(spark, step, opts, queries)
    except (params.ParameterError, QueryError, OSError) as e:
        print("laxity step: %s" % e, file=sys.stderr)
        return 2
    finally:
        spark.stop()
    return 0


def run(spark, step: params.Step, opts: job_options.Options, queries: Dict[str, Decomposition]) -> None:
    """Computes the step's result of each query it serves (queries, by
    name) and publishes each at its output: a shared batch reads its input
    once and writes every member's partial."""
    fs = HadoopFileSystem(spark)
    if step.kind == params.BATCH:

        def load() -> None:
            for name, uri in sorted(opts.tables.items()):
                spark.read.parquet(uri).createOrReplaceTempView(name)
            for name, frame in batch_views(spark, step, opts).items():
                # Read once, whatever the number of members.
                (frame.cache() if step.members else frame).createOrReplaceTempView(name)

        def write(query: str, output: str, result) -> None:
            publish(fs, output, step.attempt, lambda location: result.write.mode("overwrite").parquet(location))
            print(
                "laxity step: %s batch %d attempt %d wrote %s" % (query, step.index, step.attempt, output),
                file=sys.stderr,
            )

        run_batch(step, load, lambda query: spark.sql(queries[query].partial_sql), write)
        return
    d = queries[step.query]
    for location in step.inputs:
        if not fs.exists(location):
            raise params.ParameterError(
                "%s: the result %s does not exist: has its step completed?" % (params.describe("input"), location)
            )
    spark.read.parquet(*step.inputs).createOrReplaceTempView(PARTIALS_VIEW)
    result = spark.sql(d.merge_sql)
    if step.kind == params.FINAL:
        result.createOrReplaceTempView(MERGED_VIEW)
        # One file, in the query's ORDER BY.
        result = spark.sql(d.final_sql).coalesce(1)
    publish(fs, step.output, step.attempt, lambda location: result.write.mode("overwrite").parquet(location))
    print(
        "laxity step: %s %s %d attempt %d wrote %s" % (step.query, step.kind, step.index, step.attempt, step.output),
        file=sys.stderr,
    )


def run_batch(step: params.Step, load: Callable[[], None], partial: Callable[[str], object], write: Callable[[str, str, object], None]) -> None:
    """A batch: load its input once, then for each query it serves (every
    member of a shared batch, else its own query) compute that query's
    partial and write it to the query's own output. Each write is the
    idempotent publish of one result, so a retry replaces every member's."""
    load()
    for query, output in step.results():
        write(query, output, partial(query))


def batch_views(spark, step: params.Step, opts: job_options.Options) -> Dict[str, object]:
    """Each view's DataFrame: exactly the batch's tuples that belong to it."""
    if not opts.views:
        raise params.ParameterError("job options: a batch needs at least one --view=<name>[=<glob>] to read its input into")
    if step.joined:
        return _joined_views(spark, step, opts)
    source = slices.kind_of(step.slice)
    if source == "kafka":
        return _kafka_views(spark, slices.kafka(step.slice), opts.views, opts)
    if source == "objectstore":
        return _object_views(spark, slices.objectstore(step.slice), opts.views, opts)
    if step.input_location:
        return _location_views(spark, step.input_location, step.from_tuple, step.to_tuple, "input", opts.views, opts)
    raise params.ParameterError(
        "the batch has no input: no Kafka or object-storage slice and no %s (spec.input.location)" % params.describe("input")
    )


def input_views(step: params.Step, opts: job_options.Options) -> List[Tuple[params.JoinedInput, job_options.View]]:
    """Each input of a batch over several and the view it becomes: the
    --view of the input's name, so that the query's SQL names the inputs
    as the query's spec.inputs do, with that view's --schema and glob (a
    filter within the input). Every input needs one and every view must
    be an input's, or a table would silently be empty."""
    views = {v.name: v for v in opts.views}
    names = [i.name for i in step.joined]
    out = []
    for joined in step.joined:
        view = views.get(joined.name)
        if view is None:
            if not job_options.is_table_name(joined.name):
                raise params.ParameterError(
                    "input %s: the job makes each input a view of its name, and %r is not a table name "
                    "(letters, digits and _, a letter first): name the input with letters and digits only, a letter first"
                    % (joined.name, joined.name)
                )
            raise params.ParameterError(
                "job options: input %s has no --view=%s and --schema=%s=<DDL> to read it into"
                % (joined.name, joined.name, joined.name)
            )
        out.append((joined, view))
    strays = [v.name for v in opts.views if v.name not in names]
    if strays:
        raise params.ParameterError(
            "job options: --view=%s: the batch has no input of that name (its inputs: %s)" % (strays[0], ", ".join(names))
        )
    return out


def _joined_views(spark, step: params.Step, opts: job_options.Options) -> Dict[str, object]:
    """A batch over several inputs: each input read exactly as a batch of
    that input alone reads it (its Kafka offsets, its objects, or its
    location's tuples in its range), into the view of its name."""
    views = {}
    for joined, view in input_views(step, opts):
        source = slices.of_input(joined)
        if isinstance(source, slices.KafkaSlice):
            views.update(_kafka_views(spark, source, (view,), opts))
        elif isinstance(source, slices.ObjectSlice):
            views.update(_object_views(spark, source, (view,), opts))
        elif joined.location:
            views.update(
                _location_views(spark, joined.location, joined.from_tuple, joined.to_tuple, joined.key("input"), (view,), opts)
            )
        else:
            raise params.ParameterError(
                "input %s has no input: no Kafka or object-storage slice and no %s (spec.inputs[].location)"
                % (joined.name, params.describe(joined.key("input")))
            )
    return views


def _schema(spark, ddl: str):
    """The StructType of a DDL column list."""
    return spark.createDataFrame([], ddl).schema


def _kafka_views(spark, kafka: slices.KafkaSlice, views_: Sequence[job_options.View], opts: job_options.Options) -> Dict[str, object]:
    from pyspark.sql import functions as F

    if not opts.kafka_bootstrap_servers:
        raise params.ParameterError("job options: --kafka-bootstrap-servers is required for a Kafka batch")
    if opts.format in ("parquet", "orc"):
        raise params.ParameterError("job options: --format=%s cannot decode a Kafka record's value" % opts.format)
    reader = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", opts.kafka_bootstrap_servers)
        .options(**job_options.kafka_client_options(opts, os.environ))
        # Exactly the slice's partitions and offsets; a record missing from
        # the range (retention deleted it) fails the batch rather than
        # shrinking it.
        .option("assign", kafka.assign())
        .option("startingOffsets", kafka.starting_offsets)
        .option("endingOffsets", kafka.ending_offsets)
        .option("failOnDataLoss", "true")
    )
    records = reader.load()
    views = {}
    for view in views_:
        rows = records
        if view.glob is not None:
            rows = rows.where(F.col("key").cast("string").rlike(_java_regex(view.glob)))
        value = F.col("value").cast("string")
        schema = _schema(spark, view.schema)
        if opts.format == "json":
            views[view.name] = rows.select(F.from_json(value, schema, opts.read_options).alias("v")).select("v.*")
        elif opts.format == "csv":
            views[view.name] = rows.select(F.from_csv(value, view.schema, opts.read_options).alias("v")).select("v.*")
        else:
            views[view.name] = rows.select(value.alias("value"))
    return views


def _object_views(spark, objects: slices.ObjectSlice, views_: Sequence[job_options.View], opts: job_options.Options) -> Dict[str, object]:
    views = {}
    for view in views_:
        uris = [
            uri
            for key, uri in zip(objects.keys, objects.uris())
            if view.glob is None or slices.glob_matches(view.glob, key)
        ]
        views[view.name] = _read_files(spark, uris, view, opts)
    return views


def _read_files(spark, uris: List[str], view: job_options.View, opts: job_options.Options):
    schema = _schema(spark, view.schema)
    if not uris:
        return spark.createDataFrame([], schema)
    return spark.read.format(opts.format).schema(schema).options(**opts.read_options).load(uris)


def _location_views(
    spark, location: str, from_tuple: int, to_tuple: int, key: str, views_: Sequence[job_options.View], opts: job_options.Options
) -> Dict[str, object]:
    """The rows under location whose tuple column is in [from_tuple,
    to_tuple); key is the parameter that named the location."""
    from pyspark.sql import functions as F

    if not opts.tuple_column:
        raise params.ParameterError(
            "job options: --tuple-column is required to cut the batch's tuples [%d, %d) from %s"
            % (from_tuple, to_tuple, params.describe(key))
        )
    views = {}
    for view in views_:
        frame = (
            spark.read.format(opts.format)
            .schema(_schema(spark, view.schema))
            .options(**opts.read_options)
            .option("recursiveFileLookup", "true")
            .load(location)
        )
        if view.glob is not None:
            frame = frame.where(F.input_file_name().rlike(_java_regex(view.glob)))
        column = F.col(opts.tuple_column)
        views[view.name] = frame.where((column >= from_tuple) & (column < to_tuple))
    return views


def _java_regex(glob: str) -> str:
    return "(?s)^" + slices.glob_regex(glob) + "$"


class HadoopFileSystem:
    """publish.FileSystem over Hadoop's FileSystem API (s3a, hdfs, gs, abfs,
    file), through the JVM of the Spark driver."""

    def __init__(self, spark):
        self._jvm = spark.sparkContext._jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()

    def _resolve(self, location: str):
        path = self._jvm.org.apache.hadoop.fs.Path(location)
        return path, path.getFileSystem(self._conf)

    def exists(self, location: str) -> bool:
        path, fs = self._resolve(location)
        return bool(fs.exists(path))

    def delete(self, location: str) -> None:
        path, fs = self._resolve(location)
        if fs.exists(path):
            fs.delete(path, True)

    def rename(self, source: str, destination: str) -> None:
        src, fs = self._resolve(source)
        dst, _ = self._resolve(destination)
        if fs.exists(dst):
            raise OSError("renaming %s: %s exists" % (source, destination))
        fs.mkdirs(dst.getParent())
        if not fs.rename(src, dst):
            raise OSError("renaming %s to %s failed" % (source, destination))

