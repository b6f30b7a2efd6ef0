"""A step's result is replaced by a retried attempt, never added to."""

from __future__ import annotations

import os
import tempfile
import unittest

from laxity_step.publish import LocalFileSystem, publish, staging_location


def spark_like_write(parts):
    """A write as Spark's makes it: a directory of part files and _SUCCESS."""

    def write(location):
        os.makedirs(location)
        for k, text in enumerate(parts):
            with open(os.path.join(location, "part-%05d" % k), "w") as f:
                f.write(text)
        open(os.path.join(location, "_SUCCESS"), "w").close()

    return write


def read(location):
    return sorted(
        (name, open(os.path.join(location, name)).read()) for name in os.listdir(location)
    )


class Publish(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.root = os.path.join(self.dir.name, "analytics", "tpch-q1")
        self.output = os.path.join(self.root, "tpch-q1-b3")
        self.fs = LocalFileSystem()

    def test_a_retry_replaces_the_result(self):
        publish(self.fs, self.output, 0, spark_like_write(["a", "b", "c"]))
        self.assertEqual(read(self.output), [("_SUCCESS", ""), ("part-00000", "a"), ("part-00001", "b"), ("part-00002", "c")])
        # Attempt 1 writes fewer files: none of attempt 0's may survive.
        publish(self.fs, self.output, 1, spark_like_write(["x"]))
        self.assertEqual(read(self.output), [("_SUCCESS", ""), ("part-00000", "x")])
        # Only the result is left in the query's directory.
        self.assertEqual(sorted(os.listdir(self.root)), ["_laxity_staging", "tpch-q1-b3"])
        self.assertEqual(os.listdir(os.path.join(self.root, "_laxity_staging", "tpch-q1-b3")), [])

    def test_the_same_attempt_run_again_clears_what_its_crash_left(self):
        staging = staging_location(self.output, 2)
        spark_like_write(["half"])(staging)
        publish(self.fs, self.output, 2, spark_like_write(["whole"]))
        self.assertEqual(read(self.output), [("_SUCCESS", ""), ("part-00000", "whole")])

    def test_publishing_twice_is_publishing_once(self):
        for _ in range(3):
            publish(self.fs, self.output, 0, spark_like_write(["a", "b"]))
        self.assertEqual(read(self.output), [("_SUCCESS", ""), ("part-00000", "a"), ("part-00001", "b")])

    def test_a_failed_write_leaves_the_earlier_result(self):
        publish(self.fs, self.output, 0, spark_like_write(["a"]))

        def failing(location):
            spark_like_write(["partial"])(location)
            raise RuntimeError("executor lost")

        with self.assertRaises(RuntimeError):
            publish(self.fs, self.output, 1, failing)
        self.assertEqual(read(self.output), [("_SUCCESS", ""), ("part-00000", "a")])
        # The next attempt succeeds over what the failed one left.
        publish(self.fs, self.output, 2, spark_like_write(["b"]))
        self.assertEqual(read(self.output), [("_SUCCESS", ""), ("part-00000", "b")])

    def test_a_crash_between_delete_and_rename_is_repaired_by_the_retry(self):
        publish(self.fs, self.output, 0, spark_like_write(["a"]))

        class CrashOnRename(LocalFileSystem):
            def rename(self, source, destination):
                raise OSError("driver killed")

        with self.assertRaises(OSError):
            publish(CrashOnRename(), self.output, 1, spark_like_write(["b"]))
        self.assertFalse(os.path.exists(self.output))
        publish(self.fs, self.output, 2, spark_like_write(["c"]))
        self.assertEqual(read(self.output), [("_SUCCESS", ""), ("part-00000", "c")])

    def test_a_write_that_writes_nothing_fails(self):
        with self.assertRaisesRegex(RuntimeError, "not written to its staging location"):
            publish(self.fs, self.output, 0, lambda location: None)


class StagingLocation(unittest.TestCase):
    CASES = [
        ("s3a://results/laxity/analytics/q1/q1-b3", 0, "s3a://results/laxity/analytics/q1/_laxity_staging/q1-b3/attempt-0"),
        ("s3a://results/laxity/analytics/q1/q1-final/", 4, "s3a://results/laxity/analytics/q1/_laxity_staging/q1-final/attempt-4"),
        ("/data/q1-partial-0", 1, "/data/_laxity_staging/q1-partial-0/attempt-1"),
    ]

    def test_next_to_the_result(self):
        for output, attempt, want in self.CASES:
            with self.subTest(output=output):
                self.assertEqual(staging_location(output, attempt), want)

    def test_no_parent(self):
        with self.assertRaises(ValueError):
            staging_location("q1-b3", 0)


if __name__ == "__main__":
    unittest.main()
