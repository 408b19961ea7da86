"""Deletion vectors on the native read path: each row's bit, found in its file's bitmap words.

The driver reads each file's deletion vector (:func:`~deltalog.txn.log.deletion_vectors.read_deletion_vector`,
decoded with numpy) as 64-row words: bit ``b`` of word ``w`` deletes row ``64 * w + b``.
The scan of the files with deletion vectors reads each row's position in its Parquet file
(what a deletion vector counts) as the column ``ROW_INDEX``, Spark's own name for it
(``FileFormat.ROW_INDEX_TEMPORARY_COLUMN_NAME``): a read schema that names it gets it
filled in by the Parquet reader, as Delta's ``DeltaParquetFileFormat`` asks for it, as a
plain long column (``_metadata.row_index`` builds a struct for every row, which costs
more than reading a data column). Its file is told by ``_metadata.file_size`` when the scan
has more than one file. The row is dropped when its bit is set, as Delta's Parquet reader
does with its ``__delta_internal_is_row_deleted`` column. No Python runs in the tasks and
no string is compared or hashed per row. The word is found in one of two ways:

- **Lookup** (at most ``LOOKUP_MAX_FILES`` files and ``LOOKUP_MAX_WORDS`` words, counted
  from each file's word 0 to its last deleting one: every DV of a few files, up to 4M
  rows): the words lie end to end in one ``array<bigint>`` and a ``CASE`` on the file size
  (a few long comparisons) gives the file's offset, so a row reads ``get(words, offset +
  row_index >> 6)``: O(1), a filter in the scan's own stage. The array reaches the plan as
  a scalar subquery of a one-row local relation built in the JVM from the words' bytes
  (no Spark job; plan strings, which Spark prints for every query, name the subquery
  rather than print thousands of words).
- **Join** (more): one ``(file size * span + word index, word)`` row per word that
  deletes a row, found with a broadcast hash join on that one long key (a broadcast job
  and a second adaptive stage per query, but no limit).

A file is named by its size in a scan of several (the size the native scan hands Spark with the
file list, so ``_metadata.file_size`` is exactly the log's ``size``): files with deletion
vectors are scanned in groups in which no two files share a size
(:func:`distinct_size_groups`), and apart from the files without (a second scan costs
less than reading ``_metadata`` for every row of them).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from deltalog.txn.log.deletion_vectors import read_deletion_vector
from deltalog.txn.protocol.actions import DeletionVectorDescriptor

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from deltalog.logstores.base import LogStore

__all__ = [
    "FILE_KEY",
    "ROW_INDEX",
    "ROW_KEY",
    "deleted_words",
    "distinct_size_groups",
    "drop_deleted_rows",
    "scan_groups",
]

#: The columns a native scan with positions adds: each row's file (``_metadata.file_path``)
#: and its position in the file (``ROW_INDEX``).
FILE_KEY = "__deltalog_file"
ROW_KEY = "__deltalog_row"
#: The column Spark's Parquet reader fills with each row's position in its file when a read
#: schema names it (``FileFormat.ROW_INDEX_TEMPORARY_COLUMN_NAME``; what ``_metadata.row_index``
#: is built from).
ROW_INDEX = "_tmp_metadata_row_index"

SIZE = "__deltalog_dv_size"
WORD_INDEX = "__deltalog_dv_word_index"
WORD = "__deltalog_dv_word"
_KEY = "__deltalog_dv_key"
_BIT = "__deltalog_dv_bit"
_MAX_LONG = 2**63 - 1
#: The most files and words (8 bytes each, from each file's word 0 to its last deleting one)
#: :func:`drop_deleted_rows` looks up in literal arrays; more are joined.
LOOKUP_MAX_FILES = 16
LOOKUP_MAX_WORDS = 1 << 16


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
    (they pay nothing for the DVs of others: reading ``_metadata`` and filtering each of
    their rows costs more than the second scan), those with one (``with_dv``) in
    :func:`distinct_size_groups`."""
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
        rows = read_deletion_vector(store, table_uri, dv).to_numpy()  # uint64, sorted
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


def drop_deleted_rows(spark: SparkSession, df: DataFrame, words: pa.Table, one_file: bool) -> DataFrame:
    """``df`` (a Parquet scan with ``ROW_INDEX``, of files no two of one size; ``one_file``:
    of one file, so no row needs its file told by ``_metadata.file_size``) without the rows
    that ``words`` (:func:`deleted_words` of its files) delete: by a
    lookup into a literal array of the words when they are few (at most
    ``LOOKUP_MAX_FILES`` files and ``LOOKUP_MAX_WORDS`` words from each file's word 0 to
    its last deleting one), by a broadcast join otherwise. Raises :class:`NativeReadUnsupportedError`
    when the join's ``size * words per file`` overflows a long."""
    if not words.num_rows:
        return df
    lookup = dense_words(words)
    few = len(lookup.sizes) <= LOOKUP_MAX_FILES and len(lookup.words) <= LOOKUP_MAX_WORDS
    if few and getattr(spark, "_jvm", None) is not None:  # the array is built in the JVM (not Spark Connect)
        return _filter_by_lookup(spark, df, lookup, one_file)
    return _join_bitmap(spark, df, words, one_file)


@dataclass(frozen=True)
class DenseWords:
    """The words of :func:`deleted_words` laid end to end, each file's from word 0 to its
    last deleting one (zeros for the others): file ``i`` (``sizes[i]``) has word
    ``w`` at ``words[offsets[i] + w]`` for ``w < spans[i]`` and deletes no row past them."""

    sizes: np.ndarray
    spans: np.ndarray
    offsets: np.ndarray
    words: np.ndarray


def dense_words(words: pa.Table) -> DenseWords:
    """``words`` (:func:`deleted_words`: each file's words together, by word index) dense."""
    sizes = words.column(SIZE).to_numpy()
    indexes = words.column(WORD_INDEX).to_numpy()
    values = words.column(WORD).to_numpy()
    starts = np.flatnonzero(np.concatenate(([True], sizes[1:] != sizes[:-1])))
    ends = np.concatenate((starts[1:], [len(sizes)]))
    spans = indexes[ends - 1] + 1
    offsets = np.concatenate(([0], np.cumsum(spans)[:-1])).astype(np.int64)
    dense = np.zeros(int(spans.sum()), np.int64)
    dense[np.repeat(offsets, ends - starts) + indexes] = values
    return DenseWords(sizes[starts].astype(np.int64), spans.astype(np.int64), offsets, dense)


def _filter_by_lookup(spark: SparkSession, df: DataFrame, lookup: DenseWords, one_file: bool) -> DataFrame:
    """The rows of ``df`` whose bit is clear, each found in O(1): its file by its size
    (a ``CASE`` over the few ``lookup.sizes``, unless ``one_file``), its word at the file's
    offset plus ``row_index >> 6`` in one ``array<bigint>`` (a scalar subquery of a one-row
    local relation, so plan strings do not print the words). One ``filter``: Spark analyses
    the plan once (a projection of the words, then a filter and a drop, cost three analyses,
    about 40 ms a read)."""
    from pyspark.sql import functions as F

    row = ROW_INDEX
    if one_file:
        # a row past the file's last deleting word is live (true OR null)
        live = F.expr(f"{row} >= {64 * int(lookup.spans[0])}")
        index = F.expr(f"CAST(shiftright({row}, 6) AS INT)")
    else:
        offsets, past = [], []
        for size, span, offset in zip(lookup.sizes.tolist(), lookup.spans.tolist(), lookup.offsets.tolist()):
            offsets.append(f"WHEN {size} THEN {offset}")
            past.append(f"WHEN {size} THEN {row} >= {64 * span}")
        # a row of another file, or past its file's last deleting word, is live (true OR null)
        live = F.expr(f"CASE _metadata.file_size {' '.join(past)} ELSE true END")
        index = F.expr(f"CASE _metadata.file_size {' '.join(offsets)} END + CAST(shiftright({row}, 6) AS INT)")
    mask = F.expr(f"shiftleft(CAST(1 AS BIGINT), CAST({row} & 63 AS INT))")
    word = F.get(_long_array_subquery(spark, lookup.words), index)
    return df.filter(live | (word.bitwiseAND(mask) == 0))


def _long_array_subquery(spark: SparkSession, values: np.ndarray) -> Column:
    """``values`` as an ``array<bigint>`` scalar subquery: a one-row local relation built in
    the JVM from their bytes (a Python list would cross py4j one element at a time)."""
    from pyspark.sql import DataFrame

    jvm = _jvm_classes(spark)
    buffer = jvm["ByteBuffer"].wrap(bytearray(values.astype("<i8").tobytes())).order(jvm["LITTLE_ENDIAN"])
    gateway: Any = spark.sparkContext._gateway
    array = gateway.new_array(jvm["long"], len(values))
    buffer.asLongBuffer().get(array)
    fields = gateway.new_array(jvm["Object"], 1)
    fields[0] = array
    rows = jvm["Collections"].singletonList(jvm["RowFactory"].create(fields))
    jdf = spark._jsparkSession.createDataFrame(rows, jvm["schema"])
    return DataFrame(jdf, spark).scalar()


_WORDS_SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {
                "name": WORD,
                "type": {"type": "array", "elementType": "long", "containsNull": False},
                "nullable": False,
                "metadata": {},
            }
        ],
    }
)
_JVM_CLASSES: dict[int, dict[str, Any]] = {}


def _jvm_classes(spark: SparkSession) -> dict[str, Any]:
    """The JVM classes :func:`_long_array_subquery` uses, looked up once per gateway (each
    package step of ``jvm.java.nio.ByteBuffer`` is a py4j round trip)."""
    gateway: Any = spark.sparkContext._gateway
    classes = _JVM_CLASSES.get(id(gateway))
    if classes is None:
        jvm: Any = spark._jvm
        classes = {
            "ByteBuffer": jvm.java.nio.ByteBuffer,
            "LITTLE_ENDIAN": jvm.java.nio.ByteOrder.LITTLE_ENDIAN,
            "long": gateway.jvm.long,
            "Object": jvm.java.lang.Object,
            "Collections": jvm.java.util.Collections,
            "RowFactory": jvm.org.apache.spark.sql.RowFactory,
            "schema": jvm.org.apache.spark.sql.types.DataType.fromJson(_WORDS_SCHEMA),
        }
        _JVM_CLASSES.clear()
        _JVM_CLASSES[id(gateway)] = classes
    return classes


def _join_bitmap(spark: SparkSession, df: DataFrame, words: pa.Table, one_file: bool) -> DataFrame:
    from pyspark.sql import functions as F

    from deltalog.contrib.spark.errors import NativeReadUnsupportedError

    span = int(max(words.column(WORD_INDEX).to_pylist())) + 1
    if int(max(words.column(SIZE).to_pylist())) * span + span - 1 > _MAX_LONG:
        raise NativeReadUnsupportedError("a deletion vector's (file size, row) key overflows a long")
    row = F.col(ROW_INDEX)
    word_index = F.shiftright(row, 6)
    size = F.lit(int(words.column(SIZE)[0].as_py())) if one_file else F.col("_metadata.file_size")
    # one long key, size * span + word index (a LongHashedRelation: the fastest probe);
    # rows past the last word of the bitmaps get no key, so no word
    key = F.when(word_index < span, size * F.lit(span) + word_index)
    df = df.select("*", row.bitwiseAND(F.lit(63)).cast("int").alias(_BIT), key.alias(_KEY))
    bitmap: Any = spark.createDataFrame(pa.table({_KEY: _combined_keys(words, span), WORD: words.column(WORD)}))
    joined = df.join(F.broadcast(bitmap), on=_KEY, how="left")
    deleted = F.expr(f"shiftright({WORD}, {_BIT}) & 1 = 1")
    return joined.filter(F.col(WORD).isNull() | ~deleted).drop(_KEY, WORD, _BIT)


def _combined_keys(words: pa.Table, span: int) -> pa.Array:
    sizes = words.column(SIZE).to_numpy()
    indexes = words.column(WORD_INDEX).to_numpy()
    return pa.array(sizes * np.int64(span) + indexes, pa.int64())
