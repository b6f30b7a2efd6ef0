"""The samples in config/samples that run the reference job name its entry
point, query files that exist and decompose, and options it accepts; every
query of the TPC-H sample is one of them."""

from __future__ import annotations

import json
import pathlib
import re
import unittest

from laxity_step import options
from laxity_step.decompose import decompose
from laxity_step.sqltext import tokenize

from .tpch_data import SCHEMA, STREAM_TABLES

HERE = pathlib.Path(__file__).resolve().parent.parent
SAMPLES = HERE.parent.parent / "config" / "samples"
IMAGE_ROOT = "/opt/laxity/"
ENTRY_POINT = "local:///opt/laxity/run_step.py"


def local(path: str) -> str:
    """A path of the image, as the checkout holds it."""
    return str(HERE / path[len(IMAGE_ROOT) :]) if path.startswith(IMAGE_ROOT) else path


def arguments(document: str):
    """The template's arguments, in flow ([...]) or block (- ...) style."""
    lines = document.splitlines()
    for k, line in enumerate(lines):
        m = re.match(r"^(\s*)arguments:\s*(.*)$", line)
        if not m:
            continue
        if m.group(2):
            return json.loads(m.group(2))
        indent = len(m.group(1))
        out = []
        for item in lines[k + 1 :]:
            im = re.match(r"^(\s*)- (.*)$", item)
            if not im or len(im.group(1)) < indent:
                break
            out.append(im.group(2))
        return out
    return []


def input_names(document: str):
    """The names of a query's spec.inputs (a query over several inputs),
    in order; empty for a query over one."""
    m = re.search(r"^  inputs:\n((?:    .*\n)+)", document + "\n", re.M)
    return re.findall(r"^    - name: (\S+)$", m.group(1), re.M) if m else []


def reference_queries():
    """(sample, query name, its document) of every IntermittentQuery and
    RecurringQuery whose template runs the reference job; a RecurringQuery's
    windows run its file, named after it."""
    found = []
    for path in sorted(SAMPLES.glob("*.yaml")):
        for document in path.read_text().split("\n---\n"):
            kind = re.search(r"^kind: (IntermittentQuery|RecurringQuery)$", document, re.M)
            if not kind or ENTRY_POINT not in document:
                continue
            name = re.search(r"\nmetadata:\n  name: (\S+)", "\n" + document.split(kind.group(0), 1)[1]).group(1)
            found.append((path.name, name, document))
    return found


class Samples(unittest.TestCase):
    def test_every_tpch_query_runs_the_reference_job(self):
        text = (SAMPLES / "tpch.yaml").read_text()
        names = re.findall(r"kind: IntermittentQuery\nmetadata:\n  name: (\S+)", text)
        self.assertEqual(len(names), 13)
        ours = {name for sample, name, _ in reference_queries() if sample == "tpch.yaml"}
        self.assertEqual(ours, set(names))

    def test_reference_job_templates(self):
        queries = reference_queries()
        # Every query of every sample but those of the partial-aggregation,
        # rate-profile and non-overlapping-windows samples, which have no
        # SparkApplication template (they show plans).
        self.assertGreaterEqual(len(queries), 21)
        self.assertIn(("recurring.yaml", "orders-by-region"), {(sample, name) for sample, name, _ in queries})
        for sample, name, document in queries:
            with self.subTest(sample=sample, query=name):
                self.assertIn("type: Python", document)
                self.assertIn('pythonVersion: "3"', document)
                # Without it Spark adds four tenths of the executors' memory
                # for Python workers the job never starts.
                self.assertIn("memoryOverhead:", document.split("executor:", 1)[1])
                argv = [("@" + local(a[1:])) if a.startswith("@") else a for a in arguments(document)]
                opts = options.parse(argv)
                self.assertEqual(opts.query, IMAGE_ROOT + "queries/%s.sql" % name, "the query file is named after the query")
                sql = pathlib.Path(local(opts.query)).read_text()
                decompose(sql)
                self.assertTrue(opts.views, "a batch needs a view to read into")
                names = input_names(document)
                if names:
                    # A batch over several inputs reads each into the view
                    # of its name (job.input_views).
                    self.assertEqual(sorted(v.name for v in opts.views), sorted(names))
                if sample == "tpch.yaml":
                    self.check_tpch_tables(sql, opts)

    def check_tpch_tables(self, sql, opts):
        words = {t.text.lower() for t in tokenize(sql) if t.kind == "word"}
        used = {table for table in SCHEMA if table in words}
        self.assertEqual(set(opts.tables), used - set(STREAM_TABLES), "a --table for each static table the query reads")
        self.assertEqual({v.name for v in opts.views}, set(STREAM_TABLES))
        for view in opts.views:
            # The test data's columns are a subset of the stream's schema.
            declared = {c.strip().split()[0] for c in re.split(r",(?![^()]*\))", view.schema)}
            self.assertLessEqual(set(SCHEMA[view.name]), declared, view.name)


if __name__ == "__main__":
    unittest.main()
