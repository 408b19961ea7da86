"""Deletion vectors on the native read path: the deleted rows as a small bitmap DataFrame.

The driver reads each file's deletion vector (:func:`~deltalog.txn.log.deletion_vectors.read_deletion_vector`)
and hands Spark its bitmap as 64-row words: one ``(file, word index, word)`` row per word
that deletes a row (at most one row per deleted row, and a 64th of the file's rows when
the deleted set is dense). The scan of the files with deletion vectors reads Spark's
``_metadata.file_size`` and ``_metadata.row_index`` (the row's position in its Parquet
file, which is what a deletion vector counts), finds its word with a broadcast hash join
on one long key and drops the row when its bit is set, as Delta's Parquet reader does with
its ``__delta_internal_is_row_deleted`` column. No Python runs in the tasks and no string
is hashed per row.

A file is named by its size in such a scan (the size the native scan hands Spark with the
file list, so ``_metadata.file_size`` is exactly the log's ``size``): files with deletion
vectors are scanned in groups in which no two files share a size
(:func:`distinct_size_groups`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from deltalog.txn.log.deletion_vectors import read_deletion_vector
from deltalog.txn.protocol.actions import DeletionVectorDescriptor

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from deltalog.logstores.base import LogStore

__all__ = ["FILE_KEY", "ROW_KEY", "deleted_words", "distinct_size_groups", "drop_deleted_rows", "scan_groups"]

#: The columns a native scan with positions adds from Spark's hidden ``_metadata`` column.
FILE_KEY = "__deltalog_file"
ROW_KEY = "__deltalog_row"

SIZE = "__deltalog_dv_size"
WORD_INDEX = "__deltalog_dv_word_index"
WORD = "__deltalog_dv_word"
_KEY = "__deltalog_dv_key"
_BIT = "__deltalog_dv_bit"
_MAX_LONG = 2**63 - 1


def distinct_size_groups(indexes: Sequence[int], sizes: Sequence[int]) -> list[list[int]]:
    """``indexes`` (files) split into groups in which no two files have the same size
    (``sizes[i]``): as few groups as the most files sharing one size."""
    groups: list[list[int]] = []
    taken: dict[int, int] = {}  # size -> how many groups hold a file of that size
    for i in indexes:
        n = taken.get(sizes[i], 0)
        taken[sizes[i]] = n + 1
        if n == len(groups):
            groups.append([])
        groups[n].append(i)
    return groups


def scan_groups(sizes: Sequence[int], with_dv: Collection[int]) -> list[list[int]]:
    """The files (indexes into ``sizes``) as scans: those without a deletion vector in one
    (they pay nothing for the DVs of others: a join probe per row costs more than the
    second scan), those with one (``with_dv``) in :func:`distinct_size_groups`."""
    plain = [i for i in range(len(sizes)) if i not in with_dv]
    return [g for g in (plain, *distinct_size_groups(sorted(with_dv), sizes)) if g]


def deleted_words(store: LogStore, table_uri: str, files: Sequence[tuple[int, DeletionVectorDescriptor]]) -> pa.Table:
    """``(SIZE, WORD_INDEX, WORD)`` for every 64-row word of the deletion vectors of
    ``files`` (``(file size, descriptor)``, no two of one size) with a deleted row: bit
    ``b`` of word ``w`` (int64, two's complement) is row ``64 * w + b``."""
    sizes: list[np.ndarray] = []
    indexes: list[np.ndarray] = []
    words: list[np.ndarray] = []
    for size, dv in files:
        rows = np.sort(read_deletion_vector(store, table_uri, dv).to_numpy(zero_copy_only=False).astype(np.uint64))
        if not len(rows):
            continue
        word_index = (rows >> np.uint64(6)).astype(np.int64)
        bits = np.left_shift(np.uint64(1), rows & np.uint64(63))
        starts = np.flatnonzero(np.concatenate(([True], word_index[1:] != word_index[:-1])))
        indexes.append(word_index[starts])
        words.append(np.bitwise_or.reduceat(bits, starts).view(np.int64))
        sizes.append(np.full(len(starts), size, np.int64))
    empty = np.array([], np.int64)
    return pa.table(
        {
            SIZE: pa.array(np.concatenate(sizes) if sizes else empty, pa.int64()),
            WORD_INDEX: pa.array(np.concatenate(indexes) if indexes else empty, pa.int64()),
            WORD: pa.array(np.concatenate(words) if words else empty, pa.int64()),
        }
    )


def drop_deleted_rows(spark: SparkSession, df: DataFrame, words: pa.Table) -> DataFrame:
    """``df`` (a Parquet scan, with Spark's ``_metadata``, of files no two of one size)
    without the rows that ``words`` (:func:`deleted_words` of its files) delete. Raises
    :class:`NativeReadUnsupportedError` when ``size * words per file`` overflows a long."""
    from pyspark.sql import functions as F

    from deltalog.contrib.spark.errors import NativeReadUnsupportedError

    if not words.num_rows:
        return df
    span = int(max(words.column(WORD_INDEX).to_pylist())) + 1
    if int(max(words.column(SIZE).to_pylist())) * span + span - 1 > _MAX_LONG:
        raise NativeReadUnsupportedError("a deletion vector's (file size, row) key overflows a long")
    row = F.col("_metadata.row_index")
    word_index = F.shiftright(row, 6)
    # one long key, size * span + word index (a LongHashedRelation: the fastest probe);
    # rows past the last word of the bitmaps get no key, so no word
    key = F.when(word_index < span, F.col("_metadata.file_size") * F.lit(span) + word_index)
    df = df.select("*", row.bitwiseAND(F.lit(63)).cast("int").alias(_BIT), key.alias(_KEY))
    bitmap: Any = spark.createDataFrame(pa.table({_KEY: _combined_keys(words, span), WORD: words.column(WORD)}))
    joined = df.join(F.broadcast(bitmap), on=_KEY, how="left")
    deleted = F.expr(f"shiftright({WORD}, {_BIT}) & 1 = 1")
    return joined.filter(F.col(WORD).isNull() | ~deleted).drop(_KEY, WORD, _BIT)


def _combined_keys(words: pa.Table, span: int) -> pa.Array:
    sizes = words.column(SIZE).to_numpy()
    indexes = words.column(WORD_INDEX).to_numpy()
    return pa.array(sizes * np.int64(span) + indexes, pa.int64())
