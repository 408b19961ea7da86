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
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from deltalog.txn.commands.alter import attribute_name, split_column_path
from deltalog.txn.commands.dependent_expressions import dependent_expressions
from deltalog.txn.commit.operations import ChangeColumn
from deltalog.txn.protocol.actions import Metadata
from deltalog.txn.protocol.collations import string_collation, with_collation
from deltalog.txn.protocol.constraints import CHAR_VARCHAR_TYPE_STRING
from deltalog.txn.protocol.generated_columns import GENERATION_EXPRESSION
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

__all__ = ["ChangeColumn", "alter_column_type", "change_column_parameter", "normalize_type"]


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


def _refuse_generated_column(schema: dict[str, Any], path: Sequence[str]) -> None:
    """Delta's commit checks that each generated column has its expression's type
    (``validateGeneratedColumns``), which a type change of the generated column itself (or of
    a field in it) breaks: ``DELTA_GENERATED_COLUMNS_EXPR_TYPE_MISMATCH``."""
    top = next(f for f in schema["fields"] if f["name"].lower() == path[0].lower())
    expression = (top.get("metadata") or {}).get(GENERATION_EXPRESSION)
    if expression is not None:
        raise UnsupportedTypeChangeError(
            f"cannot change the type of {'.'.join(path)}: the generated column {top['name']} must keep the type of its "
            f"expression {expression}; drop the generated column and add it again with the new type; the table was "
            "not changed",
            "DELTA_GENERATED_COLUMNS_EXPR_TYPE_MISMATCH",
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


_CHAR_VARCHAR_TYPE = re.compile(r"(var)?char\((\d+)\)")


def _char_varchar(type_name: Any) -> tuple[str, int] | None:
    """``("char" | "varchar", n)`` of a ``char(n)``/``varchar(n)`` type name, else None."""
    text = type_name.lower().replace(" ", "") if isinstance(type_name, str) else ""
    m = _CHAR_VARCHAR_TYPE.fullmatch(text)
    return ("varchar" if m.group(1) else "char", int(m.group(2))) if m else None


def _new_declared_type(path: Sequence[str], declared: str | None, target: str) -> str | None:
    """The ``char(n)``/``varchar(n)`` a string column declares after ``ALTER COLUMN ... TYPE
    target`` (None: a plain string), as Spark's ``canAlterColumnType`` allows it: any string,
    char or varchar becomes a ``STRING [COLLATE c]``; a char stays that char or becomes a
    varchar at least as long, a varchar a varchar at least as long; else
    ``NOT_SUPPORTED_CHANGE_COLUMN``."""
    wanted = _char_varchar(target)
    if wanted is None:
        return None
    have = _char_varchar(declared)
    if have is not None and (have == wanted or (wanted[0] == "varchar" and wanted[1] >= have[1])):
        return f"{wanted[0]}({wanted[1]})"
    raise UnsupportedTypeChangeError(
        f"cannot change the type of {'.'.join(path)} from {declared or 'string'} to {target}: a string only becomes "
        "a string of another collation, and a char(n) or varchar(n) a string or a varchar at least as long; "
        "the table was not changed",
        "NOT_SUPPORTED_CHANGE_COLUMN",
    )


def _alter_string(
    txn: OptimisticTransaction, metadata: Metadata, schema: dict[str, Any], path: Sequence[str], target: str
) -> int | None:
    """``ALTER COLUMN ... TYPE STRING [COLLATE c] | CHAR(n) | VARCHAR(n)`` on a string, which
    Delta makes without type widening (no data file changes, no ``delta.typeChanges``): a
    collation change (the first collated column adds the ``collations`` feature) and the
    declared ``char``/``varchar`` kept in the field's metadata, which sets its length check.
    Only a collation change counts for dependent expressions (Delta compares the types with
    char and varchar as strings). None when nothing changes."""
    _, field = _field_at(schema, path)
    direct = isinstance(field["type"], str)  # a char/varchar is declared by the field holding it
    declared = (field.get("metadata") or {}).get(CHAR_VARCHAR_TYPE_STRING) if direct else None
    new_declared = _new_declared_type(path, declared, target)
    new_schema = with_collation(schema, path, string_collation(target)[1])
    if new_schema != schema:
        _check_dependent_expressions(metadata, path)
        _refuse_generated_column(schema, path)
    _, field = _field_at(new_schema, path)
    if direct:
        kept = {k: v for k, v in (field.get("metadata") or {}).items() if k != CHAR_VARCHAR_TYPE_STRING}
        field["metadata"] = {**kept, CHAR_VARCHAR_TYPE_STRING: new_declared} if new_declared else kept
    if new_schema == schema:
        return None
    txn.update_metadata(replace(metadata, schema_string=json.dumps(new_schema, separators=(",", ":"))))
    version: int = txn.commit([], ChangeColumn(column=change_column_parameter(new_schema, path)))
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
    changes its collation instead, as Delta does, with no widening; a ``char(n)`` or
    ``varchar(n)`` column given ``string`` becomes a plain string (no length check), or given a
    longer ``varchar(m)``, that.
    """
    delta_log.require_table()
    path = _path(column)
    target = normalize_type(new_type)
    txn = delta_log.start_transaction(lock=lock)
    metadata = txn.metadata
    assert metadata is not None
    old_schema = json.loads(metadata.schema_string)
    if (string_collation(target)[0] or _char_varchar(target)) and _is_string_at(old_schema, path):
        return _alter_string(txn, metadata, old_schema, path, target)
    new_schema = change_column_type(old_schema, path, target)
    if new_schema == old_schema:
        return None
    _verify_type_change(path, _type_at(old_schema, path), target, type_widening_enabled(metadata.configuration))
    _check_dependent_expressions(metadata, path)
    _refuse_generated_column(old_schema, path)
    recorded = record_type_changes(new_schema, old_schema, preview_table_version(txn.protocol, txn.read_version + 1))
    txn.update_metadata(replace(metadata, schema_string=json.dumps(recorded, separators=(",", ":"))))
    version: int = txn.commit([], ChangeColumn(column=change_column_parameter(recorded, path)))
    return version


def change_column_parameter(schema: dict[str, Any], path: Sequence[str]) -> dict[str, Any]:
    """The ``column`` parameter of the CHANGE COLUMN commit, Delta's ``structFieldToMap`` of
    the changed column: a struct field as changed, without its ``delta.typeChanges`` record;
    an array's ``element``, a map's ``key`` or ``value`` as that type alone, nullable as the
    collection lets it be."""
    t: Any = schema
    names: list[str] = []
    field: dict[str, Any] | None = None
    nullable = True
    for step in path:
        if t.get("type") == "struct":
            field = next(f for f in t["fields"] if f["name"].lower() == step.lower())
            names.append(field["name"])
            t, nullable = field["type"], bool(field.get("nullable", True))
            continue
        part = "element" if t.get("type") == "array" else step.lower()
        names.append(part)
        field, nullable = None, bool(t.get({"element": "containsNull", "value": "valueContainsNull"}.get(part), False))
        t = t[f"{part}Type"]
    metadata = {k: v for k, v in ((field or {}).get("metadata") or {}).items() if k != TYPE_CHANGES_KEY}
    return {
        "name": attribute_name(names),
        "type": t if isinstance(t, str) else t.get("type"),
        "nullable": nullable,
        "metadata": metadata,
    }
