"""Delta 4.3's ``replaceUsing`` write option (``DeltaInsertReplaceOnOrUsingCommand`` on the
DataFrame writer's ``save()``): an overwrite that removes the table's rows whose key columns
equal those of some written row and adds the written rows, in one commit. Equal is SQL's
``=``, as Delta's ``EXISTS (SELECT 1 FROM data WHERE t.k = data.k ...)``: a row with a null
key is never removed, and a written row with a null key removes nothing.

The keys are read back from the files the write tasks wrote (the written rows, in the
table's types, with nothing evaluated twice); the commit then rewrites the read snapshot's
files holding matching rows
(:func:`~deltalog.contrib.spark.replace_where_rewrite.rewrite_matching`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.contrib.spark.errors import DeltaAnalysisError, InvalidWriteOptionError
from deltalog.contrib.spark.logical_schema import arrow_schema, logical_struct
from deltalog.contrib.spark.option_values import illegal_option
from deltalog.contrib.spark.reads import FileToRead, ReadSpec, read_file

if TYPE_CHECKING:
    from deltalog.txn.commit.transaction import OptimisticTransaction
    from deltalog.txn.protocol.actions import AddFile, Metadata

__all__ = ["OPTION", "key_columns", "matcher", "parse_replace_using", "refuse_incompatible_options", "written_keys"]

OPTION = "replaceUsing"
_ROW = "__deltalog_replace_using_row"


def parse_replace_using(raw: str | None) -> tuple[str, ...] | None:
    """The option's column names, as Delta's ``parsedReplaceUsingColsList``: split at
    commas, trimmed, duplicates dropped; an empty name is ``DELTA_ILLEGAL_OPTION``."""
    if raw is None:
        return None
    names = [n.strip() for n in raw.split(",")]
    if any(not n for n in names):
        raise illegal_option(OPTION, raw, "must not contain empty column names")
    return tuple(dict.fromkeys(names))


def refuse_incompatible_options(
    *, overwrite: bool, replace_where: bool, partition_overwrite_option: bool, overwrite_schema: bool, data_change: bool
) -> None:
    """Delta's ``validateReplaceOnOrUsingOptionCombinations``."""
    if replace_where:
        raise InvalidWriteOptionError(
            "DELTA_OVERWRITE_BY_FILTER_INCOMPATIBLE_REPLACE_ON_OR_USING: Overwrite by filter is incompatible with "
            "the `replaceOn`/`replaceUsing` option."
        )
    if partition_overwrite_option:
        raise InvalidWriteOptionError(
            "DELTA_DYNAMIC_PARTITION_OVERWRITE_INCOMPATIBLE_REPLACE_ON_OR_USING: Dynamic partition overwrite is "
            "incompatible with the `replaceOn`/`replaceUsing` option."
        )
    for given, name in ((overwrite_schema and overwrite, "overwriteSchema"), (not data_change, "dataChange")):
        if given:
            raise InvalidWriteOptionError(
                f"DELTA_INCOMPATIBLE_DATAFRAME_OPTIONS: The `{name}` option cannot be used with the `{OPTION}` "
                "option for Delta tables."
            )


def key_columns(names: Sequence[str], metadata: Metadata, data: Mapping[str, object]) -> tuple[str, ...]:
    """The table's columns of ``names`` (case-insensitive, as Spark's default resolver), each
    also in the written data (``data``: its schema as JSON); Delta's
    ``UNRESOLVED_INSERT_REPLACE_USING_COLUMN`` otherwise. Only atomic columns: Arrow cannot
    compare structs, arrays or maps as keys (**difference from Delta**, which can)."""
    table = logical_struct(metadata.schema_string)
    fields = data.get("fields")
    written = [str(f["name"]) for f in fields if isinstance(f, dict)] if isinstance(fields, list) else []
    out = []
    for name in names:
        column = _find(name, table.fieldNames(), "table")
        _find(name, written, "query")
        if not _atomic(table[column].dataType.typeName()):
            raise DeltaAnalysisError(
                f"{OPTION} column `{column}` is a {table[column].dataType.simpleString()}: deltalog matches rows "
                "by atomic columns only (numbers, strings, booleans, binary, dates, timestamps)"
            )
        out.append(column)
    return tuple(out)


def _find(name: str, columns: Sequence[str], relation: str) -> str:
    found = [c for c in columns if c.lower() == name.lower()]
    if not found:
        suggestion = ", ".join(f"`{c}`" for c in sorted(columns))
        quoted = ".".join(f"`{p}`" for p in name.split("."))
        raise DeltaAnalysisError(
            f"UNRESOLVED_INSERT_REPLACE_USING_COLUMN: Column {quoted} cannot be resolved in {relation}. "
            f"Did you mean one of the following? [{suggestion}]."
        )
    return found[0]


def _atomic(type_name: str) -> bool:
    return type_name not in ("struct", "array", "map", "variant", "void")


def written_keys(txn: OptimisticTransaction, adds: Sequence[AddFile], columns: Sequence[str]) -> pa.Table:
    """The distinct key tuples of the rows in the written files ``adds`` (read back in the
    table's types), those with a null key left out: they match no row."""
    metadata = txn.metadata
    assert metadata is not None  # an existing table's (key_columns)
    full = arrow_schema(logical_struct(metadata.schema_string))
    spec = ReadSpec(
        store=txn.delta_log.store.spec(),
        table_uri=txn.delta_log.table_uri,
        schema_json=metadata.schema_string,
        partition_columns=tuple(metadata.partition_columns),
        column_mapping_mode=metadata.properties.column_mapping_mode,
        output_schema=pa.schema([full.field(c) for c in columns]),
    )
    store = txn.delta_log.store
    parts = [read_file(spec, store, FileToRead(a.path, a.partition_values, a.size, None)) for a in adds]
    keys = pa.concat_tables(parts) if parts else pa.schema([full.field(c) for c in columns]).empty_table()
    return keys.drop_null().group_by(list(columns)).aggregate([]).select(list(columns))


def matcher(keys: pa.Table) -> Callable[[pa.Table], pa.ChunkedArray | pa.Array]:
    """Which rows of a table of the snapshot's files have a key tuple in ``keys`` (none when
    one of their key columns is null)."""
    columns = keys.column_names

    def matches(table: pa.Table) -> pa.ChunkedArray | pa.Array:
        if keys.num_rows == 0 or table.num_rows == 0:
            return pa.array([False] * table.num_rows)
        rows = table.select(columns).append_column(_ROW, pa.array(range(table.num_rows), pa.int64()))
        wanted = keys.cast(pa.schema([table.schema.field(c) for c in columns]))
        hits = rows.join(wanted, keys=columns, join_type="left semi").column(_ROW)
        return pc.is_in(rows.column(_ROW), value_set=hits.combine_chunks())

    return matches
