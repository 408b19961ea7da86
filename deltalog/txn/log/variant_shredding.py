"""Shredded variant columns rebuilt into the variant binary (``value`` + ``metadata``).

A table with the ``variantShredding`` feature (or ``variantShredding-preview``) may store a
``variant`` column in Parquet *shredded* (parquet-format's VariantShredding.md):
``struct<metadata, value (optional), typed_value (optional)>``, where ``typed_value`` holds
parts of the value as typed columns: an object as a group of fields, each again
``{value, typed_value}``; an array as a list of such elements; a primitive as a Parquet
primitive. pyarrow reads that group as its raw struct; :func:`rebuild_variant` turns it into
the unshredded ``struct<value, metadata>`` every deltalog reader hands out, per the spec:

- ``value`` set, ``typed_value`` null: the value is ``value``;
- ``typed_value`` set, ``value`` null: the value is ``typed_value``, encoded in the
  variant binary format (VariantEncoding.md);
- both set: a partially shredded object; ``value`` is an object holding the fields that
  are not shredded, merged with the shredded ones;
- both null: a missing object field (left out of its object); elsewhere, where a value is
  required, Variant null (``00``).

Encodings follow Spark's ``VariantBuilder`` (integers and decimals in their smallest
width, short strings for fewer than 64 bytes, objects with their fields sorted by name
in UTF-16 order, as Java sorts strings), so a rebuilt value has the bytes Spark's reader
gives. A layout the spec calls invalid (a shredded field also in ``value``, ``value`` not
an object beside a shredded object, ``value`` and a non-object ``typed_value`` both set, a
field name missing from the metadata) or a ``typed_value`` type the spec does not list raises
:class:`~deltalog.txn.protocol.errors.ShreddedVariantError` naming it, never a wrong value.
"""

from __future__ import annotations

import datetime
import decimal
import struct
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.txn.protocol.errors import ShreddedVariantError

__all__ = ["VARIANT_TYPE", "is_shredded", "rebuild_variant", "rebuild_variants_in"]

#: the unshredded variant as deltalog hands it out (``to_arrow_type("variant")``)
VARIANT_TYPE = pa.struct(
    [pa.field("value", pa.binary(), nullable=False), pa.field("metadata", pa.binary(), nullable=False)]
)
_NULL = b"\x00"
_EPOCH = datetime.date(1970, 1, 1)
#: Variant primitive type ids (VariantEncoding.md)
_SIZES = {0: 0, 1: 0, 2: 0, 3: 1, 4: 2, 5: 4, 6: 8, 7: 8, 8: 5, 9: 9, 10: 17, 11: 4, 12: 8, 13: 8, 14: 4}
_SIZES.update({17: 8, 18: 8, 19: 8, 20: 16})


def is_shredded(type_: pa.DataType) -> bool:
    """Whether an Arrow type read from a variant column is the shredded layout (anything
    but exactly ``struct<value, metadata>`` in either order)."""
    return bool(pa.types.is_struct(type_) and {f.name for f in type_} != {"value", "metadata"})


def rebuild_variant(column: pa.Array, path: str) -> pa.StructArray:
    """The variant column ``column`` (shredded or not, as read from a data file) as
    :data:`VARIANT_TYPE`; ``path`` names the column in errors."""
    if not pa.types.is_struct(column.type) or "metadata" not in {f.name for f in column.type}:
        raise ShreddedVariantError(path, f"a variant column must be a struct with 'metadata', not {column.type}")
    metadata = pc.struct_field(column, "metadata")
    metas = [_Metadata(m, path) if m is not None else None for m in metadata.to_pylist()]
    values = _values(column, metas, path)
    valid = column.is_valid()
    out = [v if v is not None else _NULL for v in values]
    mask = pc.invert(valid) if column.null_count else None
    meta_bytes = [m.raw if m is not None else b"" for m in metas]
    return pa.StructArray.from_arrays(
        [pa.array(out, pa.binary()), pa.array(meta_bytes, pa.binary())], fields=list(VARIANT_TYPE), mask=mask
    )


def rebuild_variants_in(column: pa.Array, target: pa.DataType, path: str) -> pa.Array:
    """``column`` (read from a data file) with every shredded variant in it rebuilt, at any
    depth, where ``target`` (the table's Arrow type) has a variant (:data:`VARIANT_TYPE`);
    ``column`` itself when there is none. Readers that only have the Arrow type use this."""
    if not _holds_shredded(column.type, target):
        return column
    if isinstance(column, pa.ChunkedArray):
        return pa.chunked_array([rebuild_variants_in(c, target, path) for c in column.chunks])
    mask = pc.invert(column.is_valid()) if column.null_count else None
    if _is_variant(target):
        return rebuild_variant(column, path)
    if pa.types.is_struct(target):
        names = {f.name for f in column.type}
        children = [
            rebuild_variants_in(pc.struct_field(column, f.name), f.type, f"{path}.{f.name}")
            if f.name in names
            else None
            for f in target
        ]
        kept = [(f, c) for f, c in zip(target, children) if c is not None]
        return pa.StructArray.from_arrays([c for _, c in kept], names=[f.name for f, _ in kept], mask=mask)
    if pa.types.is_map(target):
        entries = _list_values(column)
        keys = rebuild_variants_in(entries.field(0), target.key_type, f"{path}.key")
        items = rebuild_variants_in(entries.field(1), target.item_type, f"{path}.value")
        return pa.MapArray.from_arrays(_zero_offsets(column), keys, items, mask=mask)
    values = rebuild_variants_in(_list_values(column), target.value_type, f"{path}.element")
    return type(column).from_arrays(_zero_offsets(column), values, mask=mask)


def _is_variant(type_: pa.DataType) -> bool:
    return bool(
        pa.types.is_struct(type_)
        and sorted(f.name for f in type_) == ["metadata", "value"]
        and all(pa.types.is_binary(f.type) for f in type_)
    )


def _holds_shredded(stored: pa.DataType, target: pa.DataType) -> bool:
    """Whether a variant of ``target`` is stored shredded somewhere in ``stored``."""
    if _is_variant(target):
        return is_shredded(stored)
    if pa.types.is_struct(target) and pa.types.is_struct(stored):
        names = {f.name: f.type for f in stored}
        return any(f.name in names and _holds_shredded(names[f.name], f.type) for f in target)
    if pa.types.is_map(target) and pa.types.is_map(stored):
        return _holds_shredded(stored.key_type, target.key_type) or _holds_shredded(stored.item_type, target.item_type)
    lists = (pa.types.is_list, pa.types.is_large_list)
    if any(t(target) for t in lists) and any(t(stored) for t in lists):
        return _holds_shredded(stored.value_type, target.value_type)
    return False


def _zero_offsets(column: pa.Array) -> pa.Array:
    offsets = column.offsets
    return pc.subtract(offsets, offsets[0]) if len(offsets) and offsets[0].as_py() else offsets


def _list_values(column: pa.Array) -> pa.Array:
    offsets = column.offsets
    start, end = offsets[0].as_py(), offsets[-1].as_py()
    return column.values.slice(start, end - start)


class _Metadata:
    """A variant metadata dictionary: its field names, and the id of each."""

    def __init__(self, raw: bytes, path: str) -> None:
        self.raw = raw
        if not raw or raw[0] & 0x0F != 1:
            raise ShreddedVariantError(path, "a variant metadata is not of version 1")
        size = ((raw[0] >> 6) & 3) + 1
        count = _uint(raw, 1, size)
        offsets = [_uint(raw, 1 + size * (i + 1), size) for i in range(count + 1)]
        start = 1 + size * (count + 2)
        self.names = [raw[start + offsets[i] : start + offsets[i + 1]].decode("utf-8") for i in range(count)]
        self.ids: dict[str, int] = {}
        for i, name in enumerate(self.names):
            self.ids.setdefault(name, i)


def _uint(buf: bytes, pos: int, size: int) -> int:
    return int.from_bytes(buf[pos : pos + size], "little")


def _width(n: int) -> int:
    return 1 if n <= 0xFF else 2 if n <= 0xFFFF else 3 if n <= 0xFFFFFF else 4


def _values(group: pa.Array, metas: Sequence[_Metadata | None], path: str) -> list[bytes | None]:
    """The variant value of each row of a ``{value, typed_value}`` group (None: missing, or
    a null row of ``group``)."""
    names = {f.name for f in group.type}
    value = pc.struct_field(group, "value").to_pylist() if "value" in names else [None] * len(group)
    if "typed_value" not in names:
        return value
    typed_column = pc.struct_field(group, "typed_value")
    if pa.types.is_struct(typed_column.type):
        return _objects(value, typed_column, metas, path)
    typed = _typed(typed_column, metas, path)
    out: list[bytes | None] = []
    for v, t in zip(value, typed):
        if v is not None and t is not None:
            raise ShreddedVariantError(path, "both value and a non-object typed_value are set")
        out.append(t if t is not None else v)
    return out


def _typed(column: pa.Array, metas: Sequence[_Metadata | None], path: str) -> list[bytes | None]:
    """The variant value of each non-null row of a ``typed_value`` that is not an object."""
    type_ = column.type
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return _arrays(column, metas, path)
    encode = _encoder(type_, path)
    return [None if x is None else encode(x) for x in _python_values(column)]


def _python_values(column: pa.Array) -> list[Any]:
    """Python values of a primitive column; timestamps and times as their integer counts
    (nanoseconds do not fit ``datetime``), dates as ``date``."""
    type_ = column.type
    if pa.types.is_timestamp(type_) or pa.types.is_time64(type_):
        column = column.cast(pa.int64())
    elif isinstance(type_, pa.BaseExtensionType):
        column = column.storage
    values: list[Any] = column.to_pylist()
    return values


def _objects(
    value: list[bytes | None], typed: pa.Array, metas: Sequence[_Metadata | None], path: str
) -> list[bytes | None]:
    """Rows of a shredded object: its shredded fields merged with the residual ``value``."""
    fields = {f.name: _values(pc.struct_field(typed, f.name), metas, f"{path}.{f.name}") for f in typed.type}
    present = typed.is_valid().to_pylist()
    out: list[bytes | None] = []
    for row, (residual, is_object) in enumerate(zip(value, present)):
        if not is_object:
            if (
                residual is not None
                and residual[0] & 3 == 2
                and any(_object_fields(residual, metas[row], path).keys() & fields.keys())
            ):
                raise ShreddedVariantError(path, "a shredded field is in value while typed_value is null")
            out.append(residual)
            continue
        meta = metas[row]
        if meta is None:
            raise ShreddedVariantError(path, "a shredded object has no metadata")
        members: dict[str, bytes] = {}
        for name, column in fields.items():
            member = column[row]
            if member is not None:
                members[name] = member
        if residual is not None:
            if residual[0] & 3 != 2:
                raise ShreddedVariantError(path, "value beside a shredded object is not an object")
            extra = _object_fields(residual, meta, path)
            if extra.keys() & members.keys() or extra.keys() & fields.keys():
                raise ShreddedVariantError(
                    path, f"fields {sorted(extra.keys() & fields.keys())} are both shredded and in value"
                )
            members.update(extra)
        out.append(_object(members, meta, path))
    return out


def _arrays(column: pa.Array, metas: Sequence[_Metadata | None], path: str) -> list[bytes | None]:
    """Rows of a shredded array: each element rebuilt (Variant null where it is missing)."""
    offsets = column.offsets.to_pylist()
    start, end = offsets[0], offsets[-1]
    elements = column.values.slice(start, end - start)
    element_metas = [metas[row] for row in range(len(column)) for _ in range(offsets[row + 1] - offsets[row])]
    values = _values(elements, element_metas, f"{path}.element")
    valid = column.is_valid().to_pylist()
    out: list[bytes | None] = []
    for row in range(len(column)):
        if not valid[row]:
            out.append(None)
            continue
        items = values[offsets[row] - start : offsets[row + 1] - start]
        out.append(_array([v if v is not None else _NULL for v in items]))
    return out


def _object_fields(value: bytes, meta: _Metadata | None, path: str) -> dict[str, bytes]:
    """The fields of a variant object (name -> value bytes)."""
    if meta is None:
        raise ShreddedVariantError(path, "a variant object has no metadata")
    header = value[0] >> 2
    offset_size, id_size, large = (header & 3) + 1, ((header >> 2) & 3) + 1, (header >> 4) & 1
    count_size = 4 if large else 1
    count = _uint(value, 1, count_size)
    ids_at = 1 + count_size
    offsets_at = ids_at + count * id_size
    data = offsets_at + (count + 1) * offset_size
    fields: dict[str, bytes] = {}
    for i in range(count):
        name = meta.names[_uint(value, ids_at + i * id_size, id_size)]
        begin = data + _uint(value, offsets_at + i * offset_size, offset_size)
        fields[name] = value[begin : begin + _value_size(value, begin)]
    return fields


def _value_size(buf: bytes, pos: int) -> int:
    """The size in bytes of the variant value at ``pos``."""
    basic, header = buf[pos] & 3, buf[pos] >> 2
    if basic == 1:
        return 1 + header
    if basic == 0:
        if header in (15, 16):
            return 5 + _uint(buf, pos + 1, 4)
        return 1 + _SIZES[header]
    offset_size = (header & 3) + 1
    if basic == 2:
        id_size, large = ((header >> 2) & 3) + 1, (header >> 4) & 1
    else:
        id_size, large = 0, (header >> 2) & 1
    count_size = 4 if large else 1
    count = _uint(buf, pos + 1, count_size)
    offsets_at = pos + 1 + count_size + count * id_size
    return offsets_at - pos + (count + 1) * offset_size + _uint(buf, offsets_at + count * offset_size, offset_size)


def _object(members: dict[str, bytes], meta: _Metadata, path: str) -> bytes:
    """A variant object of ``members``, its fields sorted by name as Spark's
    ``finishWritingObject`` sorts them: Java ``String`` order, by UTF-16 code units, which
    Spark's readers search the fields by (a name beyond the BMP before ``U+E000``-``U+FFFF``)."""
    names = sorted(members, key=_java_order)
    missing = [n for n in names if n not in meta.ids]
    if missing:
        raise ShreddedVariantError(path, f"the fields {missing} are not in the variant metadata")
    ids = [meta.ids[n] for n in names]
    data = b"".join(members[n] for n in names)
    offsets = [0]
    for n in names:
        offsets.append(offsets[-1] + len(members[n]))
    large = len(names) > 0xFF
    id_size, offset_size = _width(max(ids, default=0)), _width(len(data))
    header = ((offset_size - 1) | ((id_size - 1) << 2) | (int(large) << 4)) << 2 | 2
    out = bytearray([header]) + len(names).to_bytes(4 if large else 1, "little")
    for i in ids:
        out += i.to_bytes(id_size, "little")
    for o in offsets:
        out += o.to_bytes(offset_size, "little")
    return bytes(out + data)


def _java_order(name: str) -> bytes:
    """A sort key ordering names as Java's ``String.compareTo`` (UTF-16 code units)."""
    return name.encode("utf-16-be", "surrogatepass")


def _array(items: Sequence[bytes]) -> bytes:
    data = b"".join(items)
    large = len(items) > 0xFF
    offset_size = _width(len(data))
    header = ((offset_size - 1) | (int(large) << 2)) << 2 | 3
    out = bytearray([header]) + len(items).to_bytes(4 if large else 1, "little")
    position = 0
    for item in items:
        out += position.to_bytes(offset_size, "little")
        position += len(item)
    out += position.to_bytes(offset_size, "little")
    return bytes(out + data)


def _primitive(type_id: int, payload: bytes = b"") -> bytes:
    return bytes([type_id << 2]) + payload


def _encode_int(v: int) -> bytes:
    """Spark's ``appendLong``: the smallest integer type that holds ``v``."""
    for type_id, size in ((3, 1), (4, 2), (5, 4)):
        if -(1 << (8 * size - 1)) <= v < 1 << (8 * size - 1):
            return _primitive(type_id, v.to_bytes(size, "little", signed=True))
    return _primitive(6, v.to_bytes(8, "little", signed=True))


def _encode_decimal(v: decimal.Decimal) -> bytes:
    """Spark's ``appendDecimal``: decimal4, 8 or 16 by the value's precision and scale."""
    sign, digits, exponent = v.as_tuple()
    assert isinstance(exponent, int)
    scale = max(-exponent, 0)
    unscaled = int("".join(map(str, digits)) or "0") * (10 ** max(exponent, 0))
    unscaled = -unscaled if sign else unscaled
    precision = len(str(abs(unscaled)))  # Java's BigDecimal.precision
    for type_id, size, limit in ((8, 4, 9), (9, 8, 18)):
        if scale <= limit and precision <= limit:
            return _primitive(type_id, bytes([scale]) + unscaled.to_bytes(size, "little", signed=True))
    return _primitive(10, bytes([scale]) + unscaled.to_bytes(16, "little", signed=True))


def _encode_string(v: str) -> bytes:
    data = v.encode("utf-8")
    if len(data) < 64:
        return bytes([len(data) << 2 | 1]) + data
    return _primitive(16, len(data).to_bytes(4, "little") + data)


def _fixed(type_id: int, fmt: str) -> Callable[[Any], bytes]:
    return lambda v: _primitive(type_id, struct.pack(fmt, v))


def _encoder(type_: pa.DataType, path: str) -> Callable[[Any], bytes]:
    """How a ``typed_value`` of Arrow type ``type_`` is encoded (VariantShredding.md's
    "Shredded Value Types")."""
    if pa.types.is_boolean(type_):
        return lambda v: _primitive(1 if v else 2)
    if pa.types.is_integer(type_) and pa.types.is_signed_integer(type_):
        return _encode_int
    if pa.types.is_float32(type_):
        return _fixed(14, "<f")
    if pa.types.is_float64(type_):
        return _fixed(7, "<d")
    if pa.types.is_decimal(type_):
        return _encode_decimal
    if pa.types.is_date32(type_):
        return lambda v: _primitive(11, struct.pack("<i", (v - _EPOCH).days))
    if pa.types.is_timestamp(type_) and type_.unit in ("us", "ns"):
        type_id = (12 if type_.tz else 13) if type_.unit == "us" else (18 if type_.tz else 19)
        return _fixed(type_id, "<q")
    if pa.types.is_time64(type_) and type_.unit == "us":
        return _fixed(17, "<q")
    if pa.types.is_string(type_) or pa.types.is_large_string(type_):
        return _encode_string
    if pa.types.is_binary(type_) or pa.types.is_large_binary(type_):
        return lambda v: _primitive(15, len(v).to_bytes(4, "little") + v)
    uuid = isinstance(type_, pa.BaseExtensionType) and type_.extension_name == "arrow.uuid"
    if uuid or (pa.types.is_fixed_size_binary(type_) and type_.byte_width == 16):
        # FIXED_LEN_BYTE_ARRAY(16) is UUID's alone in the spec (pyarrow drops the annotation
        # of a file without an Arrow schema); big-endian as stored
        return lambda v: _primitive(20, bytes(v))
    raise ShreddedVariantError(path, f"typed_value of type {type_} is not a shredded variant type")
