"""ALTER TABLE ... ALTER COLUMN ... TYPE: widen a column's type as a metadata-only commit
(Delta's ``AlterTableChangeColumnDeltaCommand`` with type widening).

The table must have ``delta.enableTypeWidening`` set to ``true`` (Delta refuses the change
otherwise); the commit writes the new schema with the change appended to the column's
``delta.typeChanges`` and, if needed, upgrades the protocol to list ``typeWidening`` (reader
and writer feature). No data file is rewritten: readers cast the values of files written
before the change to the wider type.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from deltalog.txn.commands.alter import split_column_path
from deltalog.txn.commands.dependent_expressions import dependent_expressions
from deltalog.txn.commit.operations import ChangeColumn
from deltalog.txn.protocol.actions import Metadata
from deltalog.txn.protocol.collations import string_collation, with_collation
from deltalog.txn.protocol.type_widening import (
    TYPE_CHANGES_KEY,
    UnsupportedTypeChangeError,
    change_column_type,
    is_type_change_supported,
    is_upcast,
    preview_table_version,
    record_type_changes,
    type_widening_enabled,
    unsupported_type_change,
)

if TYPE_CHECKING:
    from deltalog.txn.commit.locks.base import CommitLock
    from deltalog.txn.commit.transaction import OptimisticTransaction
    from deltalog.txn.delta_log import DeltaLog

__all__ = ["ChangeColumn", "alter_column_type", "normalize_type"]


def _path(column: str | Sequence[str]) -> list[str]:
    """A column's name parts: a multipart identifier (```a.b```, a name holding a dot, in
    backquotes), as RENAME and DROP COLUMN take it, or the parts given."""
    return list(split_column_path(column)) if isinstance(column, str) else list(column)


def _field_at(schema: dict[str, Any], path: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """The struct field nearest to ``path``'s end (the one holding its type changes)."""
    t: Any = schema
    found: tuple[str, dict[str, Any]] | None = None
    names: list[str] = []
    for step in path:
        if isinstance(t, dict) and t.get("type") == "struct":
            f = next(x for x in t["fields"] if x["name"].lower() == step.lower())
            names.append(f["name"])
            found = (".".join(names), f)
            t = f["type"]
        elif isinstance(t, dict) and t.get("type") == "array":
            names.append("element")
            t = t["elementType"]
        else:
            names.append(step.lower())
            t = t[f"{step.lower()}Type"]
    assert found is not None
    return found


def _check_dependent_expressions(metadata: Metadata, path: Sequence[str]) -> None:
    """Delta's ``checkDependentExpressions``: a column read by a CHECK constraint or by a
    generated column's expression cannot change type (``path`` with ``element``/``key``/
    ``value`` steps, as the expressions' paths are resolved)."""
    shown = ".".join(path)
    dependents = dependent_expressions(metadata, path)
    reason = dependents.describe(shown)
    if reason is not None:
        raise UnsupportedTypeChangeError(
            f"cannot change the type of {shown}: {reason}; the table was not changed", dependents.error_class
        )


def _type_at(schema: dict[str, Any], path: Sequence[str]) -> Any:
    """The type at ``path`` (a path :func:`change_column_type` resolved)."""
    t: Any = schema
    for step in path:
        if t.get("type") == "struct":
            t = next(f for f in t["fields"] if f["name"].lower() == step.lower())["type"]
        else:
            t = t["elementType"] if t.get("type") == "array" else t[f"{step.lower()}Type"]
    return t


_UNSUPPORTED_CHANGE = "DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP"


def _verify_type_change(path: Sequence[str], current: Any, target: Any, enabled: bool) -> None:
    """Spark's analysis of ``ALTER COLUMN ... TYPE`` then Delta's ``verifyColumnChange``: a
    struct, map or array itself is no leaf to retype (``CANNOT_UPDATE_FIELD.*``); a change
    that is no upcast is ``NOT_SUPPORTED_CHANGE_COLUMN``; an upcast that is no widening, or a
    widening without ``delta.enableTypeWidening``, ``DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP``.
    A ``void`` column takes any type (no file holds it: Delta's ``canChangeDataType``)."""
    shown = ".".join(path)
    if isinstance(current, dict):
        kind = str(current.get("type"))
        raise UnsupportedTypeChangeError(
            f"Cannot update the {kind} {shown} as a whole: change the type of its leaf fields (a struct's fields by "
            f"name, an array's {shown}.element, a map's {shown}.key and {shown}.value); the table was not changed",
            f"CANNOT_UPDATE_FIELD.{kind.upper()}_TYPE",
        )
    if current in ("void", "null"):
        return
    if not is_upcast(current, target):
        raise unsupported_type_change(shown, current, target, "NOT_SUPPORTED_CHANGE_COLUMN")
    if not is_type_change_supported(current, target):
        raise unsupported_type_change(shown, current, target, _UNSUPPORTED_CHANGE)
    if not enabled:
        raise UnsupportedTypeChangeError(
            f"cannot change the type of {shown} to {target}: type widening is not enabled on the table. "
            "Set the table property delta.enableTypeWidening = true first.",
            _UNSUPPORTED_CHANGE,
        )


def _is_string_at(schema: dict[str, Any], path: Sequence[str]) -> bool:
    try:
        with_collation(schema, path, None)
    except (KeyError, TypeError):
        return False
    return True


def _alter_collation(
    txn: OptimisticTransaction, metadata: Metadata, schema: dict[str, Any], path: Sequence[str], collation: str | None
) -> int | None:
    """``ALTER COLUMN ... TYPE STRING [COLLATE c]`` on a string: a collation change, which
    Delta makes without type widening (no data file changes, no ``delta.typeChanges``); the
    first collated column adds the ``collations`` feature. None when nothing changes."""
    new_schema = with_collation(schema, path, collation)
    if new_schema == schema:
        return None
    _check_dependent_expressions(metadata, path)  # Delta checks them on any change of data type
    name, field = _field_at(new_schema, path)
    txn.update_metadata(replace(metadata, schema_string=json.dumps(new_schema, separators=(",", ":"))))
    version: int = txn.commit([], ChangeColumn(column=_change_column_parameter(name, field)))
    return version


def normalize_type(new_type: Any) -> Any:
    """A type as Delta's schema JSON spells it: ``"int"``/``"bigint"`` and the other SQL
    names of Spark's ``DataType.fromDDL`` become ``"integer"``/``"long"``..., decimals lose
    their spaces; a PySpark ``DataType`` gives its ``jsonValue()``."""
    if hasattr(new_type, "jsonValue"):
        return new_type.jsonValue()
    if not isinstance(new_type, str):
        return new_type
    if string_collation(new_type)[0]:
        return " ".join(new_type.split())  # STRING COLLATE <name>: the name keeps its case
    text = new_type.strip().lower().replace(" ", "")
    aliases = {
        "int": "integer",
        "bigint": "long",
        "smallint": "short",
        "tinyint": "byte",
        "real": "float",
        "timestamp_ntz": "timestamp_ntz",
        "decimal": "decimal(10,0)",
        "dec": "decimal(10,0)",
        "numeric": "decimal(10,0)",
    }
    if text.startswith(("dec(", "numeric(")):
        text = "decimal(" + text.split("(", 1)[1]
    return aliases.get(text, text)


def alter_column_type(
    delta_log: DeltaLog,
    column: str | Sequence[str],
    new_type: Any,
    *,
    lock: str | CommitLock | None = None,
) -> int | None:
    """Widen ``column`` (a dotted path, or its parts; ``element``/``key``/``value`` step into
    arrays and maps) to ``new_type`` (Delta's JSON type name, or a SQL name such as
    ``bigint``). Returns the version committed, or None when the column already has that type.

    Raises :class:`UnsupportedTypeChangeError` (the table untouched), with Delta's
    ``error_class``: for a struct, map or array itself (``CANNOT_UPDATE_FIELD.STRUCT_TYPE``,
    ``..MAP_TYPE``, ``..ARRAY_TYPE``: change its leaves), a change Spark cannot upcast
    (``NOT_SUPPORTED_CHANGE_COLUMN``), any other change that is not a supported widening or a
    table without ``delta.enableTypeWidening`` (``DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP``),
    and a column a CHECK constraint or a generated column reads
    (``DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE``, ``DELTA_GENERATED_COLUMNS_DEPENDENT_COLUMN_CHANGE``).
    A ``void`` column takes any type without the property, recording nothing.
    A string given ``string`` or ``STRING COLLATE <name>`` (a PySpark ``StringType(<name>)``)
    changes its collation instead, as Delta does, with no widening.
    """
    delta_log.require_table()
    path = _path(column)
    target = normalize_type(new_type)
    txn = delta_log.start_transaction(lock=lock)
    metadata = txn.metadata
    assert metadata is not None
    old_schema = json.loads(metadata.schema_string)
    is_string, collation = string_collation(target)
    if is_string and _is_string_at(old_schema, path):
        return _alter_collation(txn, metadata, old_schema, path, collation)
    new_schema = change_column_type(old_schema, path, target)
    if new_schema == old_schema:
        return None
    _verify_type_change(path, _type_at(old_schema, path), target, type_widening_enabled(metadata.configuration))
    _check_dependent_expressions(metadata, path)
    recorded = record_type_changes(new_schema, old_schema, preview_table_version(txn.protocol, txn.read_version + 1))
    name, field = _field_at(recorded, path)
    txn.update_metadata(replace(metadata, schema_string=json.dumps(recorded, separators=(",", ":"))))
    version: int = txn.commit([], ChangeColumn(column=_change_column_parameter(name, field)))
    return version


def _change_column_parameter(name: str, field: dict[str, Any]) -> dict[str, Any]:
    """The ``column`` parameter of the CHANGE COLUMN commit: the field as changed, without
    its ``delta.typeChanges`` record."""
    return {
        "name": name,
        "type": field["type"] if isinstance(field["type"], str) else field["type"].get("type"),
        "nullable": field.get("nullable", True),
        "metadata": {k: v for k, v in (field.get("metadata") or {}).items() if k != TYPE_CHANGES_KEY},
    }
