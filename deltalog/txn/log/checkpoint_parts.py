"""Which part of a multi-part checkpoint each action goes to.

PROTOCOL "Multi-part checkpoint": the parts MUST be clustered by Spark-style hash
partitioning, so that writers racing on the same checkpoint (same version, same number of
parts) write interchangeable part files, whatever order each read its state in. As Delta's
``repartition(numParts, coalesce(add.path, remove.path))``: an action goes to part
``pmod(hash(path), numParts) + 1``, ``hash`` being Spark's ``Murmur3Hash`` with seed 42 over
the path's UTF-8 bytes (``Murmur3_x86_32.hashUnsafeBytes``, whose tail bytes are mixed one
at a time, sign-extended); a non-file action has a null key, whose hash is the seed.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.txn.protocol.arrow_build import int64_array

__all__ = ["SPARK_HASH_SEED", "part_rows", "spark_string_hash"]

#: the seed of Spark's ``hash`` / ``HashPartitioning``; also the hash of a null key
SPARK_HASH_SEED = 42

_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_MASK = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def _mix(h1: int, k1: int) -> int:
    k1 = _rotl((k1 * _C1) & _MASK, 15) * _C2 & _MASK
    h1 = _rotl(h1 ^ k1, 13)
    return (h1 * 5 + 0xE6546B64) & _MASK


def spark_string_hash(text: str, seed: int = SPARK_HASH_SEED) -> int:
    """Spark's ``hash(text)`` (``Murmur3Hash`` of a string column), a signed 32-bit int."""
    data = text.encode("utf-8")
    n = len(data)
    aligned = n - n % 4
    h1 = seed & _MASK
    for i in range(0, aligned, 4):
        h1 = _mix(h1, int.from_bytes(data[i : i + 4], "little"))
    for b in data[aligned:]:
        h1 = _mix(h1, (b - 256 if b > 127 else b) & _MASK)  # Java's signed byte
    h1 ^= n
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & _MASK
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def _paths(batch: pa.RecordBatch) -> list[str | None]:
    """``coalesce(add.path, remove.path)`` of each row (None for a non-file action)."""
    names = batch.schema.names
    columns = [pc.struct_field(batch.column(name), "path") for name in ("add", "remove") if name in names]
    if not columns:
        return [None] * batch.num_rows
    path = columns[0] if len(columns) == 1 else pc.coalesce(*columns)
    return path.to_pylist()  # type: ignore[no-any-return]


def part_rows(batch: pa.RecordBatch, num_parts: int) -> dict[int, pa.Int64Array]:
    """The row indices of ``batch`` per part (0-based), for the parts that get rows."""
    null_part = SPARK_HASH_SEED % num_parts
    parts = np.fromiter(
        (null_part if p is None else spark_string_hash(p) % num_parts for p in _paths(batch)),
        dtype=np.int64,
        count=batch.num_rows,
    )
    return {int(part): int64_array(np.flatnonzero(parts == part)) for part in np.unique(parts)}
