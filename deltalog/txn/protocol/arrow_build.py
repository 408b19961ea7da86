"""Small Arrow arrays and scalars built straight from buffers.

pyarrow's conversion of Python objects (``pa.array(list)``, ``pa.scalar(x)``, and the
compute functions when given a plain Python value) imports pandas the first time it runs,
to check whether the object is a pandas one. In a fresh process that import costs more
than loading a 100,000-file snapshot, so the replay path builds the few constants it needs
from buffers instead (numpy is already imported by pyarrow).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

__all__ = [
    "empty_table",
    "false_array",
    "int32_array",
    "int64_array",
    "int64_scalar",
    "null_array",
    "string_array",
    "string_scalar",
]


def false_array(n: int) -> pa.BooleanArray:
    """``n`` times ``false`` (one zeroed bitmap, no per-row work)."""
    arr = pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(bytes((n + 7) // 8))])
    assert isinstance(arr, pa.BooleanArray)
    return arr


def int64_array(values: Sequence[int] | np.ndarray) -> pa.Int64Array:
    data = np.ascontiguousarray(values, dtype=np.int64)
    arr = pa.Array.from_buffers(pa.int64(), len(data), [None, pa.py_buffer(data)])
    assert isinstance(arr, pa.Int64Array)
    return arr


def int32_array(values: Sequence[int] | np.ndarray) -> pa.Int32Array:
    data = np.ascontiguousarray(values, dtype=np.int32)
    arr = pa.Array.from_buffers(pa.int32(), len(data), [None, pa.py_buffer(data)])
    assert isinstance(arr, pa.Int32Array)
    return arr


def string_array(values: Sequence[str | None]) -> pa.StringArray:
    """Strings (``None`` for null) as a ``string`` array."""
    encoded = [b"" if v is None else v.encode("utf-8") for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    if encoded:
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
    validity = None
    if any(v is None for v in values):
        bits = np.packbits(np.array([v is not None for v in values], dtype=bool), bitorder="little")
        validity = pa.py_buffer(bits.tobytes())
    arr = pa.Array.from_buffers(
        pa.string(), len(encoded), [validity, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    )
    assert isinstance(arr, pa.StringArray)
    return arr


def string_scalar(value: str) -> pa.StringScalar:
    s = string_array([value])[0]
    assert isinstance(s, pa.StringScalar)
    return s


def int64_scalar(value: int) -> pa.Int64Scalar:
    s = int64_array([value])[0]
    assert isinstance(s, pa.Int64Scalar)
    return s


def empty_table(schema: pa.Schema) -> pa.Table:
    """A table with no rows (``Schema.empty_table`` goes through the pandas check)."""
    return pa.Table.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)


_zeros: pa.Buffer | None = None


def _zero_buffer(nbytes: int) -> pa.Buffer:
    """A shared read-only buffer of at least ``nbytes`` zero bytes (``bytes(n)`` is calloc'ed:
    its pages cost no memory until touched, and one buffer serves every null column)."""
    global _zeros
    if _zeros is None or _zeros.size < nbytes:
        _zeros = pa.py_buffer(bytes(max(nbytes, 1 << 16)))
    return _zeros if _zeros.size == nbytes else _zeros.slice(0, nbytes)


def null_array(n: int, typ: pa.DataType) -> pa.Array:
    """``n`` nulls of ``typ`` whose buffers are all one shared zero buffer, so an all-null
    column of a million rows costs no memory (``pa.nulls`` allocates every child)."""
    validity = _zero_buffer((n + 7) // 8)
    if pa.types.is_boolean(typ):
        return pa.Array.from_buffers(typ, n, [validity, _zero_buffer((n + 7) // 8)], null_count=n)
    if pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_temporal(typ):
        width = typ.bit_width // 8
        return pa.Array.from_buffers(typ, n, [validity, _zero_buffer(n * width)], null_count=n)
    if pa.types.is_string(typ) or pa.types.is_binary(typ):
        return pa.Array.from_buffers(typ, n, [validity, _zero_buffer(4 * (n + 1)), _zero_buffer(0)], null_count=n)
    if pa.types.is_struct(typ):
        children = [null_array(n, typ.field(i).type) for i in range(typ.num_fields)]
        return pa.Array.from_buffers(typ, n, [validity], null_count=n, children=children)
    if pa.types.is_map(typ) or pa.types.is_list(typ):
        child_type = pa.struct([typ.key_field, typ.item_field]) if pa.types.is_map(typ) else typ.value_type
        child = null_array(0, child_type)
        return pa.Array.from_buffers(typ, n, [validity, _zero_buffer(4 * (n + 1))], null_count=n, children=[child])
    return pa.nulls(n, typ)
