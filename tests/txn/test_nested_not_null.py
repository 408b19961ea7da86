"""NOT NULL inside arrays and maps (Delta's ``removeUnenforceableNotNullConstraints``): a
schema change is refused with ``DELTA_NESTED_NOT_NULL_CONSTRAINT``, or the NOT NULLs are
dropped when ``spark.databricks.delta.constraints.allowUnenforcedNotNull.enabled`` is set."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from deltalog.txn.commit.commit_errors import NestedNotNullConstraintError
from deltalog.txn.commit.operations import CreateTable, ManualUpdate
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import Metadata, Protocol, action_to_line

ALLOW = "spark.databricks.delta.constraints.allowUnenforcedNotNull.enabled"


def _field(name: str, type_: Any, nullable: bool = True) -> dict[str, Any]:
    return {"name": name, "type": type_, "nullable": nullable, "metadata": {}}


def _struct(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "struct", "fields": list(fields)}


def _array(element: Any, contains_null: bool = True) -> dict[str, Any]:
    return {"type": "array", "elementType": element, "containsNull": contains_null}


def _map(key: Any, value: Any, value_contains_null: bool = True) -> dict[str, Any]:
    return {"type": "map", "keyType": key, "valueType": value, "valueContainsNull": value_contains_null}


def _log(**options: str) -> DeltaLog:
    return DeltaLog.for_table(f"memory://nested-nn-{uuid.uuid4().hex}", options)


def _create(log: DeltaLog, schema: dict[str, Any]) -> None:
    txn = log.start_transaction()
    txn.update_metadata(Metadata(id="t", schema_string=json.dumps(schema)))
    txn.commit([], CreateTable())


NOT_NULL_STRUCT = _struct(_field("x", "integer", nullable=False))


@pytest.mark.parametrize(
    ("column", "nest_type", "parent"),
    [
        (_field("a", _array(NOT_NULL_STRUCT)), "element", "a"),
        (_field("a", _array(_array("integer", contains_null=False))), "element", "a"),
        (_field("m", _map("string", NOT_NULL_STRUCT)), "value", "m"),
        (_field("m", _map(NOT_NULL_STRUCT, "string")), "key", "m"),
        (_field("m", _map("string", _array("long", contains_null=False))), "value", "m"),
        (_field("s", _struct(_field("a", _array(NOT_NULL_STRUCT)))), "element", "s.a"),
        (_field("a", _array(_struct(_field("m", _map("string", NOT_NULL_STRUCT))))), "element", "a"),  # the outermost
    ],
)
def test_not_null_nested_in_arrays_and_maps_is_refused(column: dict[str, Any], nest_type: str, parent: str) -> None:
    log = _log()
    with pytest.raises(NestedNotNullConstraintError) as info:
        _create(log, _struct(_field("id", "long"), column))
    assert info.value.error_class == "DELTA_NESTED_NOT_NULL_CONSTRAINT"
    assert f"The {nest_type} type of the field {parent} contains a NOT NULL constraint" in str(info.value)
    assert ALLOW in str(info.value)
    assert log.update().version == -1  # nothing committed


@pytest.mark.parametrize(
    "column",
    [
        _field("a", _array("integer", contains_null=False)),  # Delta's typeAsNullable leaves it
        _field("m", _map("string", "integer", value_contains_null=False)),
        _field("s", NOT_NULL_STRUCT, nullable=False),
    ],
)
def test_not_null_delta_can_enforce_or_leaves_is_kept(column: dict[str, Any]) -> None:
    log = _log()
    _create(log, _struct(_field("id", "long"), column))
    assert json.loads(log.update().metadata.schema_string)["fields"][1] == column


def test_allow_unenforced_not_null_drops_them() -> None:
    log = _log(**{ALLOW: "true"})
    column = _field("a", _array(_struct(_field("x", "integer", nullable=False), _field("y", "long"))), False)
    _create(log, _struct(_field("id", "long"), column))
    stored = json.loads(log.update().metadata.schema_string)["fields"][1]
    assert stored == _field("a", _array(_struct(_field("x", "integer"), _field("y", "long"))), False)


def test_an_unchanged_schema_is_not_checked_again() -> None:
    """Delta checks only a schema that changes: a table written by another engine with such a
    schema keeps taking commits that do not change it (properties, for instance)."""
    bad = _struct(_field("id", "long"), _field("a", _array(NOT_NULL_STRUCT)))
    log = _log(**{ALLOW: "false"})
    meta = Metadata(id="t", schema_string=json.dumps(bad))
    log.store.write(log.commit_uri(0), [action_to_line(Protocol(1, 2)), action_to_line(meta)])  # another engine
    txn = log.start_transaction()
    current = log.update().metadata
    txn.update_metadata(Metadata(id=current.id, schema_string=current.schema_string, configuration={"k": "v"}))
    txn.commit([], ManualUpdate())
    assert log.update().version == 1
    assert log.update().metadata.configuration == {"k": "v"}
