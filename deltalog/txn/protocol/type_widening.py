"""Type widening (PROTOCOL "Type Widening"): which type changes are widenings, and the
``delta.typeChanges`` metadata that records them (Delta's ``TypeWidening`` and
``TypeWideningMetadata``).

Schemas are handled as their JSON values (the ``schemaString`` parsed): primitive types are
strings (``"integer"``, ``"decimal(10,2)"``), nested types objects. A type change is recorded
in the metadata of the nearest struct field, with a ``fieldPath`` (``key``, ``value``,
``element``, dot-separated) when it happened inside a map or an array.
"""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deltalog.txn.protocol.actions import Protocol
from deltalog.txn.protocol.errors import DeltaLogError
from deltalog.txn.protocol.properties import TableProperties

__all__ = [
    "AUTOMATIC_WIDENING_MODES",
    "TYPE_CHANGES_KEY",
    "UnsupportedTypeChangeError",
    "all_type_changes",
    "change_column_type",
    "check_type_changes_readable",
    "fields_widened_from_float",
    "has_type_changes",
    "is_automatic_widening",
    "is_type_change_supported",
    "is_type_change_supported_by_iceberg",
    "is_type_change_supported_for_schema_evolution",
    "is_upcast",
    "preview_table_version",
    "record_type_changes",
    "remove_type_changes",
    "stamp_new_type_changes",
    "type_widening_enabled",
    "unsupported_type_change",
    "widen_for_schema_evolution",
]

TYPE_CHANGES_KEY = "delta.typeChanges"
_INTEGRAL_SIZE = {"byte": 1, "short": 2, "integer": 4, "long": 8}
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
#: the decimal each integral type fits in (Delta's ``DecimalType.forType``)
_INTEGRAL_DECIMAL = {"byte": (3, 0), "short": (5, 0), "integer": (10, 0), "long": (20, 0)}


class UnsupportedTypeChangeError(DeltaLogError):
    """A type change that is not a supported widening (a narrowing, an unrelated type, or a
    widening on a table without ``delta.enableTypeWidening``); the table is left untouched.
    ``error_class`` is Delta's (or Spark's) class for the refusal, when it has one."""

    error_class: str | None = None

    def __init__(self, message: str, error_class: str | None = None) -> None:
        super().__init__(f"[{error_class}] {message}" if error_class else message)
        if error_class:
            self.error_class = error_class


def type_widening_enabled(configuration: Mapping[str, str]) -> bool:
    """Whether ``delta.enableTypeWidening`` is ``true`` (writers widen types only then)."""
    return TableProperties(configuration).enable_type_widening


def _decimal(t: Any) -> tuple[int, int] | None:
    m = _DECIMAL.match(t) if isinstance(t, str) else None
    return (int(m.group(1)), int(m.group(2))) if m else None


def _wider_decimal(to: tuple[int, int], frm: tuple[int, int]) -> bool:
    """Spark's ``DecimalType.isWiderThan``: as many integer digits and as many fraction digits."""
    return to[0] - to[1] >= frm[0] - frm[1] and to[1] >= frm[1]


def is_type_change_supported(from_type: Any, to_type: Any) -> bool:
    """Delta's ``TypeWidening.isTypeChangeSupported`` for two primitive types: byte -> short ->
    integer -> long, float -> double, {byte, short, integer} -> double, date -> timestamp_ntz,
    decimal -> wider decimal, {byte, short, integer} -> decimal(10 + k1, k2) and long ->
    decimal(20 + k1, k2) (``k1 >= k2 >= 0``). Equal types count as supported."""
    if not isinstance(from_type, str) or not isinstance(to_type, str):
        return False
    if from_type == to_type:
        return True
    if from_type in _INTEGRAL_SIZE and to_type in _INTEGRAL_SIZE:
        return _INTEGRAL_SIZE[from_type] <= _INTEGRAL_SIZE[to_type]
    if (from_type, to_type) in (("float", "double"), ("date", "timestamp_ntz")):
        return True
    if from_type in ("byte", "short", "integer") and to_type == "double":
        return True
    to_dec, from_dec = _decimal(to_type), _decimal(from_type)
    if to_dec is None:
        return False
    if from_dec is not None:
        return _wider_decimal(to_dec, from_dec)
    if from_type in ("byte", "short", "integer"):
        return _wider_decimal(to_dec, _INTEGRAL_DECIMAL["integer"])
    if from_type == "long":
        return _wider_decimal(to_dec, _INTEGRAL_DECIMAL["long"])
    return False


def is_type_change_supported_for_schema_evolution(from_type: Any, to_type: Any) -> bool:
    """Delta's ``isTypeChangeSupportedForSchemaEvolution``: the widenings a ``mergeSchema``
    write applies by itself (same family only: integral, float -> double, decimal -> decimal,
    date -> timestamp_ntz; never integer -> double or integer -> decimal)."""
    if not is_type_change_supported(from_type, to_type):
        return False
    if from_type == to_type:
        return True
    if from_type in _INTEGRAL_SIZE and to_type in _INTEGRAL_SIZE:
        return True
    if (from_type, to_type) in (("float", "double"), ("date", "timestamp_ntz")):
        return True
    return _decimal(from_type) is not None and _decimal(to_type) is not None


#: Delta's ``AllowAutomaticWideningMode`` (``spark.databricks.delta.typeWidening.allowAutomaticWidening``):
#: the widenings schema evolution applies by itself; ``ALWAYS`` (Delta's default since 4.1) any
#: supported widening, ``SAME_FAMILY_TYPE`` those within a family, ``NEVER`` none
AUTOMATIC_WIDENING_MODES = ("ALWAYS", "SAME_FAMILY_TYPE", "NEVER")


def is_automatic_widening(from_type: Any, to_type: Any, mode: str = "ALWAYS") -> bool:
    """Delta's ``TypeEvolution.canWiden``: whether schema evolution widens ``from_type`` to
    ``to_type`` under the :data:`AUTOMATIC_WIDENING_MODES` ``mode`` (case-insensitive)."""
    mode = mode.upper()
    if mode == "ALWAYS":
        return is_type_change_supported(from_type, to_type)
    if mode == "SAME_FAMILY_TYPE":
        return is_type_change_supported_for_schema_evolution(from_type, to_type)
    return False


def is_type_change_supported_by_iceberg(from_type: Any, to_type: Any) -> bool:
    """Delta's ``isTypeChangeSupportedByIceberg``: the supported widenings Iceberg V2's schema
    evolution can follow (integers to wider integers, float to double, a decimal's precision
    with its scale kept); what UniForm (IcebergCompat) tables allow."""
    if from_type == to_type:
        return True
    if not is_type_change_supported(from_type, to_type):
        return False
    if from_type in _INTEGRAL_SIZE and to_type in _INTEGRAL_SIZE:
        return bool(_INTEGRAL_SIZE[from_type] <= _INTEGRAL_SIZE[to_type])
    if (from_type, to_type) == ("float", "double"):
        return True
    old, new = _decimal(from_type), _decimal(to_type)
    return old is not None and new is not None and old[1] == new[1] and old[0] <= new[0]


# -- the changes between two schemas ---------------------------------------------------------


def _changes_in_field_type(old: Any, new: Any, where: str) -> list[dict[str, Any]]:
    """Delta's ``collectTypeChangesInStructField``: the primitive changes inside one struct
    field's type (through maps and arrays, not into nested structs), each with its
    ``fieldPath``. Raises on a change that is not a supported widening."""
    if isinstance(old, dict) and isinstance(new, dict) and old.get("type") == new.get("type"):
        kind = old.get("type")
        if kind == "map":
            out = []
            for part, key in (("key", "keyType"), ("value", "valueType")):
                for change in _changes_in_field_type(old[key], new[key], f"{where}.{part}"):
                    path = change.get("fieldPath")
                    out.append({**change, "fieldPath": f"{part}.{path}" if path else part})
            return out
        if kind == "array":
            out = []
            for change in _changes_in_field_type(old["elementType"], new["elementType"], f"{where}.element"):
                path = change.get("fieldPath")
                out.append({**change, "fieldPath": f"element.{path}" if path else "element"})
            return out
        return []  # structs: their own fields carry their changes
    if old == new or old in ("void", "null"):  # a void column typed by schema evolution is no widening
        return []
    if not is_type_change_supported(old, new):
        raise unsupported_type_change(where, old, new)
    return [{"fromType": old, "toType": new}]


def unsupported_type_change(
    where: str, old: Any, new: Any, error_class: str | None = None
) -> UnsupportedTypeChangeError:
    """The error for a change of ``where`` from ``old`` to ``new`` that is no supported widening."""
    return UnsupportedTypeChangeError(
        f"cannot change the type of {where} from {_show(old)} to {_show(new)}: only widening changes "
        "are supported (byte -> short -> integer -> long, float -> double, integer -> double, "
        "date -> timestamp_ntz, decimal(p, s) -> decimal(p + k1, s + k2) with k1 >= k2 >= 0, "
        "integer -> decimal(10 + k1, k2), long -> decimal(20 + k1, k2)); the table was not changed",
        error_class,
    )


#: Spark's ``numericPrecedence``: a number upcasts to any type after it
_NUMERIC_PRECEDENCE = ("byte", "short", "integer", "long", "float", "double")
_UPCAST_PAIRS = {
    ("date", "timestamp"),
    ("date", "timestamp_ntz"),
    ("timestamp_ntz", "timestamp"),
    ("timestamp", "timestamp_ntz"),
    ("timestamp", "long"),
    ("long", "timestamp"),
}


def is_upcast(from_type: Any, to_type: Any) -> bool:
    """Spark's ``Cast.canUpCast`` for two primitive types (a cast that loses nothing): what
    Spark's analyzer lets ``ALTER COLUMN ... TYPE`` ask for before Delta checks it is a
    widening; anything else is Spark's ``NOT_SUPPORTED_CHANGE_COLUMN``."""
    if not isinstance(from_type, str) or not isinstance(to_type, str):
        return False
    if from_type == to_type or from_type in ("void", "null") or (from_type, to_type) in _UPCAST_PAIRS:
        return True
    if from_type in _NUMERIC_PRECEDENCE and to_type in _NUMERIC_PRECEDENCE:
        return _NUMERIC_PRECEDENCE.index(from_type) < _NUMERIC_PRECEDENCE.index(to_type)
    # a decimal to or from a decimal or an integer (both integers were handled above): Spark's
    # DecimalType.isWiderThan / isTighterThan, an integer as the decimal it fits in, which a
    # decimal of as many digits may overflow
    frm = _decimal(from_type) or _INTEGRAL_DECIMAL.get(from_type)
    to = _decimal(to_type) or _INTEGRAL_DECIMAL.get(to_type)
    if frm is not None and to is not None:
        if to_type in _INTEGRAL_DECIMAL:
            return frm[1] == 0 and frm[0] < to[0]
        return _wider_decimal(to, frm)
    return to_type == "string" and from_type != "variant"  # any atomic type to a string


def _show(t: Any) -> str:
    return t if isinstance(t, str) else str(t.get("type", t))


def preview_table_version(protocol: Protocol | None, next_version: int) -> int | None:
    """``next_version`` when the table uses the ``typeWidening-preview`` feature, whose
    readers expect a ``tableVersion`` in each type change (Delta keeps writing it there), else None."""
    if protocol is None:
        return None
    features = set(protocol.reader_features or ()) | set(protocol.writer_features or ())
    return next_version if "typeWidening-preview" in features else None


def _record_in_struct(new: dict[str, Any], old: dict[str, Any], where: str, version: int | None) -> dict[str, Any]:
    old_fields = {f["name"].lower(): f for f in old.get("fields") or []}
    fields = []
    for f in new.get("fields") or []:
        before = old_fields.get(f["name"].lower())
        path = f"{where}.{f['name']}" if where else f["name"]
        if before is None:
            fields.append(f)
            continue
        changes = _changes_in_field_type(before["type"], f["type"], path)
        if version is not None:
            changes = [{**c, "tableVersion": version} for c in changes]
        f = {**f, "type": _record_in_type(f["type"], before["type"], path, version)}
        if changes:
            meta = dict(f.get("metadata") or {})
            meta[TYPE_CHANGES_KEY] = [*(meta.get(TYPE_CHANGES_KEY) or []), *changes]
            f["metadata"] = meta
        fields.append(f)
    return {**new, "fields": fields}


def _record_in_type(new: Any, old: Any, where: str, version: int | None) -> Any:
    """Recurse into the structs nested in ``new`` (directly or in maps and arrays)."""
    if not (isinstance(new, dict) and isinstance(old, dict) and new.get("type") == old.get("type")):
        return new
    kind = new.get("type")
    if kind == "struct":
        return _record_in_struct(new, old, where, version)
    if kind == "array":
        element = _record_in_type(new["elementType"], old["elementType"], f"{where}.element", version)
        return {**new, "elementType": element}
    if kind == "map":
        return {
            **new,
            "keyType": _record_in_type(new["keyType"], old["keyType"], f"{where}.key", version),
            "valueType": _record_in_type(new["valueType"], old["valueType"], f"{where}.value", version),
        }
    return new


def record_type_changes(
    new_schema: Mapping[str, Any], old_schema: Mapping[str, Any], table_version: int | None = None
) -> dict[str, Any]:
    """Delta's ``TypeWideningMetadata.addTypeWideningMetadata``: ``new_schema`` with every
    primitive type change from ``old_schema`` appended to the ``delta.typeChanges`` of its
    nearest struct field (existing entries are kept). Fields only in ``new_schema`` are new
    columns, left alone. Raises :class:`UnsupportedTypeChangeError` on any change that is
    not a supported widening. ``table_version`` (see :func:`preview_table_version`) is
    written as each new change's ``tableVersion``."""
    return _record_in_struct(copy.deepcopy(dict(new_schema)), dict(old_schema), "", table_version)


def stamp_new_type_changes(
    new_schema: Mapping[str, Any], old_schema: Mapping[str, Any] | None, version: int
) -> dict[str, Any] | None:
    """``new_schema`` with the type changes it records that ``old_schema`` (the schema the
    commit was made on) does not, the commit's own, at ``tableVersion`` ``version``: the
    version the commit lands at, whatever version it was planned for (Delta's
    ``updateTypeWideningMetadata`` moves it on each conflict retry). Only changes that carry a
    ``tableVersion`` (``typeWidening-preview`` tables) are stamped; None when none moved."""
    old = Counter(_change_key(c) for _, c in all_type_changes(old_schema or {}))
    stamped = copy.deepcopy(dict(new_schema))
    moved = False
    for _, f in _walk_fields(stamped, ""):
        for change in (f.get("metadata") or {}).get(TYPE_CHANGES_KEY) or []:
            key = _change_key(change)
            if old[key] > 0:  # recorded by an earlier commit (renamed columns keep theirs)
                old[key] -= 1
            elif isinstance(change, dict) and "tableVersion" in change and change["tableVersion"] != version:
                change["tableVersion"] = version
                moved = True
    return stamped if moved else None


def _change_key(change: Any) -> str:
    return json.dumps(change, sort_keys=True, default=str)


def _walk_fields(t: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if not isinstance(t, dict):
        return
    kind = t.get("type")
    if kind == "struct":
        for f in t.get("fields") or []:
            path = f"{where}.{f['name']}" if where else f["name"]
            yield path, f
            yield from _walk_fields(f["type"], path)
    elif kind == "array":
        yield from _walk_fields(t["elementType"], f"{where}.element")
    elif kind == "map":
        yield from _walk_fields(t["keyType"], f"{where}.key")
        yield from _walk_fields(t["valueType"], f"{where}.value")


def all_type_changes(schema: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every recorded type change as ``(column path, change)``, in schema order."""
    out = []
    for path, f in _walk_fields(dict(schema), ""):
        for change in (f.get("metadata") or {}).get(TYPE_CHANGES_KEY) or []:
            out.append((path, dict(change)))
    return out


def fields_widened_from_float(schema: Mapping[str, Any]) -> frozenset[str]:
    """The dotted paths (lower-cased) of the struct fields, nested ones too, recorded as
    widened from ``float`` to ``double``. Their files written before the change hold floats,
    whose statistics Delta writes as the float's shortest decimal: ``0.7`` for 0.7f, which
    is 0.699999988079071 as a double."""
    return frozenset(
        path.lower()
        for path, change in all_type_changes(schema)
        if change.get("fromType") == "float" and not change.get("fieldPath")
    )


def has_type_changes(schema: Mapping[str, Any]) -> bool:
    """Delta's ``containsTypeWideningMetadata``: some struct field carries ``delta.typeChanges``."""
    return any(TYPE_CHANGES_KEY in (f.get("metadata") or {}) for _, f in _walk_fields(dict(schema), ""))


def remove_type_changes(schema: Mapping[str, Any]) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    """Delta's ``removeTypeWideningMetadata``: ``schema`` without any ``delta.typeChanges``,
    and the fields that had some as ``(column path, field as it was)``."""
    cleaned = copy.deepcopy(dict(schema))
    removed = []
    for path, f in _walk_fields(cleaned, ""):
        meta = f.get("metadata") or {}
        if TYPE_CHANGES_KEY in meta:
            removed.append((path, {**f, "metadata": dict(meta)}))
            f["metadata"] = {k: v for k, v in meta.items() if k != TYPE_CHANGES_KEY}
    return cleaned, removed


_CHAR_OR_VARCHAR = re.compile(r"(?:var)?char\(\s*\d+\s*\)")


def _is_string_like(type_name: Any) -> bool:
    """``string`` (with a collation or not), ``char(n)`` or ``varchar(n)``: Delta's
    ``StringType | CharType | VarcharType``."""
    if not isinstance(type_name, str):
        return False
    name = type_name.strip().lower()
    return name == "string" or name.startswith("string collate ") or bool(_CHAR_OR_VARCHAR.fullmatch(name))


def check_type_changes_readable(schema: Mapping[str, Any]) -> None:
    """The reader requirement: fail on a recorded type change this client cannot convert.
    A change among ``string``, ``char(n)`` and ``varchar(n)`` is no widening but reads as
    it is (the files hold strings either way): Delta's ``assertTableReadable`` lets it
    through, as some writers record one although the protocol says not to."""
    for path, change in all_type_changes(schema):
        from_type, to_type = change.get("fromType"), change.get("toType")
        if _is_string_like(from_type) and _is_string_like(to_type):
            continue
        if not is_type_change_supported(from_type, to_type):
            field_path = f".{change['fieldPath']}" if change.get("fieldPath") else ""
            raise UnsupportedTypeChangeError(
                f"column {path}{field_path} records the type change {change.get('fromType')} -> "
                f"{change.get('toType')}, which is not a type widening deltalog can read"
            )


# -- automatic widening on a mergeSchema write -----------------------------------------------


@dataclass(frozen=True)
class _Evolution:
    """Delta's ``TypeWideningMode.TypeEvolution``: an :data:`AUTOMATIC_WIDENING_MODES` mode,
    and whether only the widenings Iceberg follows apply (``uniformIcebergCompatibleOnly``)."""

    mode: str
    iceberg: bool

    def widens(self, table: Any, data: Any) -> bool:
        if table == data or not is_automatic_widening(table, data, self.mode):
            return False
        return not self.iceberg or is_type_change_supported_by_iceberg(table, data)


def _widen_type(table: Any, data: Any, evolution: _Evolution) -> Any:
    if isinstance(table, dict) and isinstance(data, dict) and table.get("type") == data.get("type"):
        kind = table.get("type")
        if kind == "struct":
            return _widen_struct(table, data, evolution)
        if kind == "array":
            return {**table, "elementType": _widen_type(table["elementType"], data["elementType"], evolution)}
        if kind == "map":
            return {
                **table,
                "keyType": _widen_type(table["keyType"], data["keyType"], evolution),
                "valueType": _widen_type(table["valueType"], data["valueType"], evolution),
            }
        return table
    return data if evolution.widens(table, data) else table


def _widen_struct(table: dict[str, Any], data: dict[str, Any], evolution: _Evolution) -> dict[str, Any]:
    data_fields = {f["name"].lower(): f for f in data.get("fields") or []}
    fields = []
    for f in table.get("fields") or []:
        other = data_fields.get(f["name"].lower())
        fields.append(f if other is None else {**f, "type": _widen_type(f["type"], other["type"], evolution)})
    return {**table, "fields": fields}


def widen_for_schema_evolution(
    table_schema: Mapping[str, Any],
    data_schema: Mapping[str, Any],
    configuration: Mapping[str, str],
    table_version: int | None = None,
    *,
    record: bool = True,
    automatic_widening: str = "ALWAYS",
) -> dict[str, Any]:
    """Delta's ``TypeWideningMode.TypeEvolution`` for a ``mergeSchema`` write: when the table
    has ``delta.enableTypeWidening``, every column (nested fields, map keys and values, array
    elements too) whose data type is a widening of the table's type that the
    ``automatic_widening`` mode applies (:func:`is_automatic_widening`: by default any, int into
    double or decimal too) takes the data's type, recorded in ``delta.typeChanges``; in a
    UniForm (Iceberg) table only the widenings Iceberg can follow
    (:func:`is_type_change_supported_by_iceberg`), as Delta's ``uniformIcebergCompatibleOnly``.
    Otherwise the table schema unchanged. ``record`` false: the changes are not recorded (a
    caller that changes the schema further records them once, with :func:`record_type_changes`)."""
    table = dict(table_schema)
    if not type_widening_enabled(configuration):
        return table
    iceberg = "iceberg" in TableProperties(configuration).universal_format_enabled_formats
    widened = _widen_struct(table, dict(data_schema), _Evolution(automatic_widening, iceberg))
    if widened == table or not record:
        return widened
    return record_type_changes(widened, table, table_version)


def change_column_type(schema: Mapping[str, Any], path: Sequence[str], new_type: Any) -> dict[str, Any]:
    """``schema`` with the type at ``path`` replaced by ``new_type`` (struct fields by name,
    case-insensitive; ``element``, ``key`` and ``value`` step into arrays and maps).
    Raises :class:`UnsupportedTypeChangeError` when the path does not name a column. A
    ``void`` column takes any type (Delta's ``canChangeDataType``: no file holds it, so it is
    no widening, and :func:`record_type_changes` records nothing for it)."""
    if not path:
        raise UnsupportedTypeChangeError("no column given")

    def replace(t: Any, rest: Sequence[str], where: str) -> Any:
        if not rest:
            return new_type
        step, tail = rest[0], rest[1:]
        kind = t.get("type") if isinstance(t, dict) else None
        if kind == "struct":
            for i, f in enumerate(t["fields"]):
                if f["name"].lower() == step.lower():
                    fields = list(t["fields"])
                    fields[i] = {**f, "type": replace(f["type"], tail, f"{where}.{f['name']}".lstrip("."))}
                    return {**t, "fields": fields}
        elif kind == "array" and step.lower() == "element":
            return {**t, "elementType": replace(t["elementType"], tail, f"{where}.element")}
        elif kind == "map" and step.lower() in ("key", "value"):
            key = f"{step.lower()}Type"
            return {**t, key: replace(t[key], tail, f"{where}.{step.lower()}")}
        raise UnsupportedTypeChangeError(
            f"column {'.'.join(path)} does not exist in the table schema ({step!r} not found in {where or 'the table'})"
        )

    result: dict[str, Any] = replace(dict(schema), list(path), "")
    return result
