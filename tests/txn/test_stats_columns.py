"""``delta.dataSkippingStatsColumns``: the columns a table's files get statistics for
(Delta's ``StatisticsCollection``), its validation when the property is set, and ALTER
TABLE RENAME/DROP COLUMN keeping it in step with the schema."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from deltalog.txn.commands import alter
from deltalog.txn.commit.operations import CreateTable
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import Metadata
from deltalog.txn.protocol.properties import InvalidPropertyError

KEY = "delta.dataSkippingStatsColumns"
IGNORED = pytest.mark.xfail(strict=True, reason="delta.dataSkippingStatsColumns is ignored")


def _field(name: str, type_: Any, physical: str | None = None, cid: int | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if physical is not None:
        meta = {"delta.columnMapping.id": cid, "delta.columnMapping.physicalName": physical}
    return {"name": name, "type": type_, "nullable": True, "metadata": meta}


def _schema(mapped: bool = False) -> str:
    """id, name, flag boolean, s struct<x, `y.z`, ok boolean, t struct<u>>, tags array, p (partition)."""

    def f(name: str, type_: Any, cid: int) -> dict[str, Any]:
        return _field(name, type_, f"col-{cid}" if mapped else None, cid)

    t = {"type": "struct", "fields": [f("u", "integer", 8)]}
    s = {"type": "struct", "fields": [f("x", "long", 5), f("y.z", "string", 6), f("ok", "boolean", 7), f("t", t, 9)]}
    tags = {"type": "array", "elementType": "string", "containsNull": True}
    fields = [f("id", "long", 1), f("name", "string", 2), f("flag", "boolean", 3), f("s", s, 4), f("tags", tags, 10)]
    return json.dumps({"type": "struct", "fields": [*fields, f("p", "string", 11)]})


def _create(config: dict[str, str], mapped: bool = False) -> DeltaLog:
    log = DeltaLog.for_table(f"memory://stats-{uuid.uuid4().hex}")
    if mapped:
        config = {**config, "delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "11"}
    txn = log.start_transaction()
    txn.update_metadata(Metadata(schema_string=_schema(mapped), partition_columns=("p",), configuration=config))
    txn.commit([], CreateTable(partition_by=["p"]))
    return log


# -- validation -------------------------------------------------------------------------------


@IGNORED
@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("nope", "DELTA_COLUMN_NOT_FOUND_IN_SCHEMA"),
        ("s.nope", "DELTA_COLUMN_NOT_FOUND_IN_SCHEMA"),
        ("id.x", "DELTA_COLUMN_PATH_NOT_NESTED"),
        ("p", "DELTA_COLUMN_DATA_SKIPPING_NOT_SUPPORTED_PARTITIONED_COLUMN"),
        ("flag", "DELTA_COLUMN_DATA_SKIPPING_NOT_SUPPORTED_TYPE"),
        ("tags", "DELTA_COLUMN_DATA_SKIPPING_NOT_SUPPORTED_TYPE"),
        ("id, s, s.x", "DELTA_DUPLICATE_DATA_SKIPPING_COLUMNS"),
        ("id,,name", "not a comma-separated list"),
        ("id name", "not a comma-separated list"),
    ],
)
def test_a_table_is_not_created_with_stats_columns_delta_refuses(value: str, match: str) -> None:
    with pytest.raises(InvalidPropertyError, match=match):
        _create({KEY: value})


@IGNORED
def test_set_table_properties_refuses_a_partition_column_and_leaves_the_table_alone() -> None:
    log = _create({KEY: "name"})
    with pytest.raises(InvalidPropertyError, match="partition column 'p'"):
        alter.set_table_properties(log, {KEY: "name, p"})
    snapshot = log.update()
    assert (snapshot.version, snapshot.metadata.configuration[KEY]) == (0, "name")


# -- ALTER TABLE RENAME / DROP COLUMN ---------------------------------------------------------


@IGNORED
def test_renaming_a_listed_column_renames_it_in_the_property() -> None:
    log = _create({KEY: "name, s.x, S.`y.z`"}, mapped=True)
    alter.rename_column(log, "s", "r")
    assert log.update().metadata.configuration[KEY] == "name,r.x,r.`y.z`"
    alter.rename_column(log, "name", "full name")
    assert log.update().metadata.configuration[KEY] == "`full name`,r.x,r.`y.z`"


@IGNORED
def test_dropping_a_listed_column_drops_it_from_the_property() -> None:
    log = _create({KEY: "id, s.x, name"}, mapped=True)
    alter.drop_columns(log, ["S"])
    assert log.update().metadata.configuration[KEY] == "id,name"
    alter.drop_columns(log, ["id", "name"])
    # Delta keeps the property, empty: statistics for no column
    assert log.update().metadata.configuration[KEY] == ""
