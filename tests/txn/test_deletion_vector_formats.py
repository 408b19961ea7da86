"""Deletion-vector encodings checked against Delta's engine suites, without Spark:
``RoaringBitmapArraySuite`` (the portable serialization, the special values, negative row
indexes refused) and ``DeletionVectorDescriptorSuite`` (inline data, unique ids, absolute
paths of ``u`` and ``p`` descriptors), plus the DV file layout of PROTOCOL "Deletion Vector
File Storage Format"."""

from __future__ import annotations

import struct
import uuid
import zlib
from pathlib import Path

import numpy as np
import pytest

from deltalog.txn.log.deletion_vectors import (
    MAGIC,
    deserialize_bitmap_array,
    dv_absolute_path,
    serialize_bitmap,
    write_dv_file,
    z85_decode,
    z85_encode,
)
from deltalog.txn.protocol.actions import DeletionVectorDescriptor

CONTAINER_BOUNDARY = 1 << 16
BITMAP_BOUNDARY = 1 << 32
BITMAP2_NUMBER = (2**31 - 1) * 3
TABLE = "s3a://table/test"


def _all_container_types() -> list[int]:
    """RoaringBitmapArraySuite's ``allContainerTypesBitmap``: array, run and bitset
    containers in two 32-bit buckets."""
    values: list[int] = []
    for base in (0, BITMAP_BOUNDARY):
        values += [base + 1, base + 17, base + 63000, base + CONTAINER_BOUNDARY - 1]
        values += range(base + CONTAINER_BOUNDARY + 500, base + CONTAINER_BOUNDARY + 1200)
        values += range(base + 2 * CONTAINER_BOUNDARY, base + 3 * CONTAINER_BOUNDARY - 1, 3)
    return values


@pytest.mark.parametrize(
    "rows",
    [
        [],
        [1],
        [BITMAP2_NUMBER],
        [1, BITMAP2_NUMBER],
        _all_container_types(),
        # "special values"
        [0, 2**31 - 1, CONTAINER_BOUNDARY - 1, CONTAINER_BOUNDARY, BITMAP_BOUNDARY - 1, BITMAP_BOUNDARY],
        [3 * BITMAP_BOUNDARY + 42],
    ],
    ids=["empty", "one", "bitmap2", "two-buckets", "all-containers", "special", "far-bucket"],
)
def test_portable_bitmap_round_trips(rows: list[int]) -> None:
    data = serialize_bitmap(rows)
    magic, buckets = struct.unpack_from("<iq", data, 0)
    assert magic == MAGIC and buckets == len({r >> 32 for r in rows})
    assert deserialize_bitmap_array(data).tolist() == sorted(rows)
    # in a DV file: version byte 1, then big-endian size, the bitmap and its CRC-32
    blob, [(offset, size, cardinality)] = write_dv_file([np.asarray(rows, np.int64)])
    assert blob[:1] == b"\x01" and offset == 1 and size == len(data) and cardinality == len(rows)
    assert struct.unpack_from(">i", blob, offset)[0] == size
    assert struct.unpack_from(">I", blob, offset + 4 + size)[0] == zlib.crc32(data)


def test_one_row_is_34_bytes_as_delta_s_dvs() -> None:
    """DeletionVectorsSuite's packing test: "Each DV size is about 34bytes"."""
    assert len(serialize_bitmap([7])) == 34


def test_negative_row_indexes_are_refused() -> None:
    with pytest.raises(ValueError):
        serialize_bitmap([-1, 1])


def test_inline_descriptor_as_delta() -> None:
    """DeletionVectorDescriptorSuite "Inline DV": Z85 of bytes 1, 2, 3, 4 and its ids."""
    encoded = z85_encode(bytes([1, 2, 3, 4]))
    assert encoded == "0rJua" and z85_decode(encoded) == bytes([1, 2, 3, 4])
    dv = DeletionVectorDescriptor("i", encoded, 4, 3)
    assert dv.offset is None and dv.unique_id == "i0rJua"
    with pytest.raises(ValueError):
        dv_absolute_path(TABLE, dv)


@pytest.mark.parametrize("offset", [None, 25])
def test_on_disk_descriptors_as_delta(offset: int | None) -> None:
    """DeletionVectorDescriptorSuite "On disk DV with absolute path" and "On-disk DV with
    relative path": unique ids and the file each names."""
    suffix = "" if offset is None else f"@{offset}"
    absolute = DeletionVectorDescriptor("p", "s3a://table/test/dv1.bin", 15, 10, offset)
    assert absolute.unique_id == f"ps3a://table/test/dv1.bin{suffix}"
    assert dv_absolute_path(TABLE, absolute) == "s3a://table/test/dv1.bin"
    file_id = uuid.uuid4()
    relative = DeletionVectorDescriptor("u", "prefix" + z85_encode(file_id.bytes), 15, 25, offset)
    assert relative.unique_id == f"uprefix{z85_encode(file_id.bytes)}{suffix}"
    assert dv_absolute_path(TABLE, relative) == f"{TABLE}/prefix/deletion_vector_{file_id}.bin"


def test_p_and_u_descriptors_with_a_space_name_the_same_file() -> None:
    """DeletionVectorDescriptorSuite "absolutePath() resolves p, u, r DVs with space (%20)
    to the same unencoded path" (``r`` is not in PROTOCOL.md, so not read)."""
    file_id = uuid.UUID("f92b8939-98dc-41c0-ae52-ffb7df72a37f")
    name = f"deletion_vector_{file_id}.bin"
    by_path = DeletionVectorDescriptor("p", f"s3a://table/test/dv%20dir/{name}", 15, 10)
    by_uuid = DeletionVectorDescriptor("u", "dv dir" + z85_encode(file_id.bytes), 15, 10)
    assert dv_absolute_path(TABLE, by_path) == dv_absolute_path(TABLE, by_uuid) == f"s3a://table/test/dv dir/{name}"


@pytest.mark.parametrize(("target_size", "files"), [(2, 10), (200, 3), (2_000_000, 1)])
def test_dvs_of_one_command_are_packed_by_the_target_size(tmp_path: Path, target_size: int, files: int) -> None:
    """DeletionVectorsSuite "DELETE with DVs - packing multiple DVs into one file": ten
    one-row DVs (34 bytes, 42 with their size and checksum) take ten files at a target of 2
    bytes, three at 200 (four a file), one at 2,000,000; each reads back."""
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.deletion_vector_writer import DeletionVectorWriter
    from deltalog.txn.log.deletion_vectors import read_deletion_vector

    log = DeltaLog.for_table(str(tmp_path))
    writer = DeletionVectorWriter(log.store, log.table_uri, packing_target_size=target_size)
    descriptors = writer.write([np.array([2 * i], np.int64) for i in range(10)])
    assert len({d.path_or_inline_dv for d in descriptors}) == len(writer.written) == files
    assert [read_deletion_vector(log.store, log.table_uri, d).to_pylist() for d in descriptors] == [
        [2 * i] for i in range(10)
    ]
