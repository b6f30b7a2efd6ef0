"""The job runs on the Python of the Spark image (3.8 in Spark 3.5's
Java 11 images), which is older than the one the tests run on: every
module must parse as Python 3.8, and the package must import without
pyspark."""

from __future__ import annotations

import ast
import importlib
import pathlib
import sys
import unittest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "laxity_step"


class Compatibility(unittest.TestCase):
    def test_modules_parse_as_python_3_8(self):
        sources = sorted(PACKAGE.glob("*.py")) + [PACKAGE.parent / "run_step.py"]
        self.assertGreater(len(sources), 5)
        for path in sources:
            with self.subTest(module=path.name):
                ast.parse(path.read_text(), filename=str(path), feature_version=(3, 8))

    def test_no_module_imports_pyspark_at_import_time(self):
        for path in sorted(PACKAGE.glob("*.py")):
            name = "laxity_step." + path.stem if path.stem != "__init__" else "laxity_step"
            with self.subTest(module=name):
                importlib.import_module(name)
        self.assertNotIn("pyspark", sys.modules)


if __name__ == "__main__":
    unittest.main()
