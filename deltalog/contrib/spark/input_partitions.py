"""How a scan is cut into Spark input partitions: each task gets a bin of files (or byte
ranges of large files) of about ``maxSplitBytes``, and everything it needs to read them.

The batch reader (:mod:`~deltalog.contrib.spark.source`) and the streaming source
(:mod:`~deltalog.contrib.spark.streaming`) plan their files and hand them here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

from deltalog.contrib.spark.reads import FileToRead, ReadSpec

__all__ = ["TARGET_SPLIT_BYTES", "FilesPartition", "bins", "files_partitions"]

#: The default split target (option ``maxSplitBytes``), Spark's ``spark.sql.files.maxPartitionBytes``.
TARGET_SPLIT_BYTES = 128 * 1024 * 1024


@dataclass
class FilesPartition(InputPartition):
    """One read task: the planned snapshot's files to read and everything needed to read
    them. Tasks never open the log, so every task reads the version that was planned."""

    spec: ReadSpec
    version: int
    files: list[FileToRead]

    def __init__(self, spec: ReadSpec, version: int, files: list[FileToRead]) -> None:
        self.spec = spec
        self.version = version
        self.files = files


def _splits(files: list[FileToRead], target: int) -> list[FileToRead]:
    """Files larger than ``target`` bytes as splits of ``target`` bytes (the last one to the
    end of the file), as Spark splits files: by byte range, from the log's sizes, without
    reading a footer. Each task reads the row groups whose midpoint is in its range."""
    out: list[FileToRead] = []
    for f in files:
        if f.size <= target:
            out.append(f)
            continue
        starts = range(0, f.size, target)
        for start in starts:
            last = start == starts[-1]
            out.append(dataclasses.replace(f, start=start, length=None if last else target))
    return out


def bins(files: list[FileToRead], target: int = TARGET_SPLIT_BYTES) -> list[list[FileToRead]]:
    """``files`` (split when larger than ``target``) packed in order into bins of at most
    ``target`` bytes (a bin holds at least one file or split)."""
    out: list[list[FileToRead]] = []
    current: list[FileToRead] = []
    size = 0
    for f in sorted(_splits(files, target), key=lambda f: (f.path, f.start)):
        length = min(f.size - f.start, target) if f.is_split else f.size
        if current and size + length > target:
            out.append(current)
            current, size = [], 0
        current.append(f)
        size += length
    if current:
        out.append(current)
    return out


def files_partitions(
    spec: ReadSpec, version: int, items: list[FileToRead], target: int = TARGET_SPLIT_BYTES
) -> list[InputPartition]:
    """The input partitions of a scan of ``items`` at ``version``: bins of about ``target``
    bytes (at least one partition, empty when there is nothing to read)."""
    return [FilesPartition(spec, version, b) for b in bins(items, target)] or [FilesPartition(spec, version, [])]
