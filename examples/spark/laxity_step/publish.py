"""Writing a step's result so that a retried attempt replaces, never adds.

Every attempt of a step writes to the same location, laxity.dev/result
(<result root>/<namespace>/<query>/<step name>), and a merge reads its
inputs there by name. An attempt therefore writes its whole result to a
staging location of its own, next to the result, and only then replaces the
result with it:

1. delete the staging location (what a crashed run of this same attempt
   left, as spark-operator's restartPolicy OnFailure re-runs an attempt);
2. write the result there;
3. delete the result location (an earlier attempt's result);
4. rename the staging location to the result location.

A crash before 3 leaves the earlier result in place; a crash between 3 and
4 leaves none. Either way laxity sees the attempt fail and retries it, and
no merge reads the location before its step completed, so a merge never
sees half a result, a result twice, or two attempts' results together. On
S3 (s3a) a rename is a copy and a delete, not atomic; that is safe for the
same reason.
"""

from __future__ import annotations

import os
import shutil
from typing import Callable, Protocol

STAGING_DIRECTORY = "_laxity_staging"


class FileSystem(Protocol):
    """What publishing needs of a file system (Hadoop's in the job, the
    local one in the tests)."""

    def exists(self, path: str) -> bool: ...

    def delete(self, path: str) -> None:
        """Deletes path recursively; nothing when it does not exist."""

    def rename(self, source: str, destination: str) -> None:
        """Moves source to destination, which must not exist, creating
        destination's parent."""


def staging_location(output: str, attempt: int) -> str:
    """Where attempt writes before its result replaces output's: in
    output's parent directory (so a rename stays in one bucket or file
    system), under a name Spark and Hadoop skip when they list the parent."""
    trimmed = output.rstrip("/")
    parent, sep, name = trimmed.rpartition("/")
    if not sep or not name:
        raise ValueError("result location %r has no parent directory to stage in" % output)
    return "%s/%s/%s/attempt-%d" % (parent, STAGING_DIRECTORY, name, attempt)


def publish(fs: FileSystem, output: str, attempt: int, write: Callable[[str], None]) -> None:
    """Writes a result with write(location) and makes it output's, replacing
    whatever an earlier attempt wrote there."""
    staging = staging_location(output, attempt)
    fs.delete(staging)
    write(staging)
    if not fs.exists(staging):
        raise RuntimeError("the result was not written to its staging location %s" % staging)
    fs.delete(output)
    fs.rename(staging, output)


class LocalFileSystem:
    """FileSystem over local paths."""

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def delete(self, path: str) -> None:
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)

    def rename(self, source: str, destination: str) -> None:
        if os.path.exists(destination):
            raise FileExistsError(destination)
        os.makedirs(os.path.dirname(destination) or ".", exist_ok=True)
        os.rename(source, destination)
