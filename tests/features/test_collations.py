"""ALTER COLUMN ... TYPE STRING COLLATE: a collation change, which Delta makes without type
widening (the collated-string RFC's schema metadata, the ``collations`` writer feature)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deltalog.errors import UnsupportedTypeChangeError
from deltalog.txn.commands.type_widening import alter_column_type
from deltalog.txn.commit.operations import CreateTable
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import Metadata


def _field(name: str, type_: object) -> dict[str, object]:
    return {"name": name, "type": type_, "nullable": True, "metadata": {}}


def test_alter_column_type_changes_a_collation(tmp_path: Path) -> None:
    log = DeltaLog.for_table(str(tmp_path / "t"))
    fields = [
        _field("id", "integer"),
        _field("n", "string"),
        _field("tags", {"type": "array", "elementType": "string", "containsNull": True}),
        _field("s", {"type": "struct", "fields": [_field("a", "string")]}),
        _field("c", "string"),
    ]
    txn = log.start_transaction()
    schema = json.dumps({"type": "struct", "fields": fields})
    txn.update_metadata(Metadata(id="x", schema_string=schema, configuration={"delta.constraints.k": "c <> ''"}))
    txn.commit([], CreateTable())

    def metadata() -> dict[str, object]:
        schema = json.loads(log.update().metadata.schema_string)
        inner = schema["fields"][3]["type"]["fields"][0]["metadata"]
        return {**{f["name"]: f["metadata"] for f in schema["fields"]}, "s.a": inner}

    assert alter_column_type(log, "n", "STRING COLLATE UTF8_LCASE") == 1
    assert metadata()["n"] == {"__COLLATIONS": {"n": "spark.UTF8_LCASE"}}
    assert log.update().protocol.writer_features is not None
    assert "collations" in log.update().protocol.writer_features
    assert log.read_commit(1)[0].operation == "CHANGE COLUMN"  # type: ignore[union-attr]
    alter_column_type(log, "tags.element", "string collate unicode_ci")
    alter_column_type(log, ["s", "a"], "string collate utf8_lcase")
    got = metadata()
    assert got["tags"] == {"__COLLATIONS": {"tags.element": "icu.UNICODE_CI"}}
    assert got["s.a"] == {"__COLLATIONS": {"a": "spark.UTF8_LCASE"}}
    assert alter_column_type(log, "n", "string") == 4  # back to binary: the key goes
    assert metadata()["n"] == {}
    assert alter_column_type(log, "n", "string collate UTF8_BINARY") is None
    with pytest.raises(UnsupportedTypeChangeError):
        alter_column_type(log, "id", "string collate UTF8_LCASE")
    with pytest.raises(UnsupportedTypeChangeError, match="constraint"):  # Delta's checkDependentExpressions
        alter_column_type(log, "c", "string collate UTF8_LCASE")
    assert log.update().version == 4
