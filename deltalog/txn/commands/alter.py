"""ALTER TABLE: schema and property changes as metadata-only commits (Delta's
``AlterTableAddColumnsDeltaCommand``, ``AlterTableChangeColumnDeltaCommand`` (rename, comment),
``AlterTableDropColumnsDeltaCommand``, ``AlterTableSetPropertiesDeltaCommand`` and
``AlterTableUnsetPropertiesDeltaCommand``).

Each function is one commit carrying only a ``metaData`` action (and a ``protocol`` when a
property needs a newer one, e.g. enabling column mapping), with Delta's operation name and
parameters. No data file is read or written: under column mapping a renamed column keeps
its physical name, so old files still resolve to it, and a dropped column is simply no
longer in the schema. Bad input raises before anything is committed:

- :class:`~deltalog.txn.protocol.errors.ColumnMappingRequiredError`: renaming or dropping a
  column of a table without column mapping (``delta.columnMapping.mode`` = ``name``/``id``);
- :class:`~deltalog.txn.protocol.errors.InvalidSchemaChangeError`: an unknown column, a
  name already taken, dropping a partition column, a clustering column or every data column, adding a NOT NULL
  column, a column a CHECK constraint or a generated column reads, a column mapping mode change Delta refuses;
- :class:`~deltalog.txn.protocol.properties.InvalidPropertyError`: unsetting a property the
  table does not have (without ``if_exists``).

One exception reads and writes data: turning column mapping off (SET
``delta.columnMapping.mode`` = ``none``, or UNSET it) on a table that maps columns rewrites
every file with the logical names first (one ``REMOVE COLUMN MAPPING`` commit,
:mod:`deltalog.txn.commands.column_mapping_removal`), as Delta's
``AlterTableSetPropertiesDeltaCommand`` / ``AlterTableUnsetPropertiesDeltaCommand`` do; the
other properties of the call follow in a second commit, checked before any file is rewritten.

Column paths name nested struct fields with dots (``address.city``); column names are
case-insensitive, as in Delta. Renaming or dropping a column that
``delta.dataSkippingStatsColumns`` lists renames it there or drops it from the list, as
Delta does.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from deltalog.txn.commands.alter_properties import (
    COMMENT,
    constraint_drop_operation,
    constraint_set_operation,
    normalize_constraints,
    without_reserved,
)
from deltalog.txn.commands.column_mapping_removal import remove_column_mapping, without_column_mapping_metadata
from deltalog.txn.commands.dependent_expressions import dependent_expressions
from deltalog.txn.commands.row_tracking_backfill import BackfillLimits, backfill_row_tracking
from deltalog.txn.commit.operations import (
    AddColumns,
    ChangeColumn,
    Operation,
    SetTableProperties,
    UnsetTableProperties,
)
from deltalog.txn.protocol import row_tracking
from deltalog.txn.protocol.clustering import logical_clustering_columns
from deltalog.txn.protocol.column_identifiers import parse_column_list
from deltalog.txn.protocol.column_mapping import column_mapping_mode, has_column_mapping
from deltalog.txn.protocol.errors import ColumnMappingRequiredError, InvalidSchemaChangeError
from deltalog.txn.protocol.properties import (
    COLUMN_MAPPING_MODE,
    InvalidPropertyError,
    TableProperties,
    normalize_property_key,
    validate_table_properties,
)
from deltalog.txn.protocol.schema import ArrayType, DataType, MapType, StructField, StructType, split_column_name
from deltalog.txn.protocol.stats_columns import dropped_stats_columns, renamed_stats_columns

if TYPE_CHECKING:
    from deltalog.txn.commit.locks.base import CommitLock
    from deltalog.txn.commit.transaction import OptimisticTransaction
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.protocol.actions import Metadata

#: checks a snapshot's rows against new CHECK constraints ``{name: expression}``; raises on a violation
ConstraintVerifier = Callable[["Snapshot", Mapping[str, str]], None]

#: rewrites a table without column mapping, ``(delta_log, unset_mode_property)`` -> the version
#: committed or None (:func:`~deltalog.txn.commands.column_mapping_removal.remove_column_mapping`;
#: the Spark layer passes one that rewrites the files by Spark tasks)
ColumnMappingRemover = Callable[["DeltaLog", bool], "int | None"]


__all__ = [
    "ChangeColumn",
    "ColumnMappingRemover",
    "ConstraintVerifier",
    "DropColumns",
    "RenameColumn",
    "add_columns",
    "attribute_name",
    "change_column_comment",
    "drop_columns",
    "rename_column",
    "set_table_properties",
    "split_column_path",
    "unset_table_properties",
]


@dataclass(frozen=True)
class RenameColumn(Operation):
    """``RENAME COLUMN``."""

    name: ClassVar[str] = "RENAME COLUMN"
    old_column_path: str = ""
    new_column_path: str = ""

    def parameter_values(self) -> dict[str, Any]:
        return {"oldColumnPath": self.old_column_path, "newColumnPath": self.new_column_path}


@dataclass(frozen=True)
class DropColumns(Operation):
    """``DROP COLUMNS``."""

    name: ClassVar[str] = "DROP COLUMNS"
    columns: Sequence[str] = ()

    def parameter_values(self) -> dict[str, Any]:
        return {"columns": list(self.columns)}


# -- paths in a schema ---------------------------------------------------------------------


def split_column_path(path: str) -> tuple[str, ...]:
    """A column path's name parts: split at dots, or parsed as Spark SQL when it backquotes a
    part (```z.z`.`y.y``` is ``("z.z", "y.y")``, Delta's multipart identifier)."""
    if "`" in path:
        parsed = parse_column_list(path)
        if len(parsed.paths) != 1 or parsed.rest.strip():
            raise InvalidSchemaChangeError(f"{path!r} is not a column path (names separated by dots)")
        return parsed.paths[0]
    parts = tuple(path.split("."))
    if not path or any(not p for p in parts):
        raise InvalidSchemaChangeError(f"{path!r} is not a column path (names separated by dots)")
    return parts


def _child(dt: DataType, name: str) -> DataType | None:
    """The type ``name`` names inside ``dt``: a struct's field (in any case), an array's
    ``element``, a map's ``key`` or ``value`` (Delta's ``SchemaUtils.findColumnPosition``)."""
    if isinstance(dt, StructType):
        return dt.field(name).type if name in dt else None
    if isinstance(dt, ArrayType) and name.lower() == "element":
        return dt.element_type
    if isinstance(dt, MapType) and name.lower() in ("key", "value"):
        return dt.key_type if name.lower() == "key" else dt.value_type
    return None


def _struct_at(schema: StructType, parents: tuple[str, ...], full: str) -> StructType:
    dt: DataType = schema
    for i, name in enumerate(parents):
        child = _child(dt, name)
        if child is None:
            raise InvalidSchemaChangeError(
                f"cannot resolve {full!r}: there is no column {'.'.join(parents[: i + 1])!r}"
            )
        dt = child
    if not isinstance(dt, StructType):
        raise InvalidSchemaChangeError(
            f"Field name {full!r} is invalid: {'.'.join(parents)!r} is not a struct (an array's struct is "
            "'<column>.element', a map's '<column>.key' / '<column>.value')"
        )
    return dt


def _replace_nested(dt: DataType, parents: tuple[str, ...], change: Callable[[StructType], StructType]) -> DataType:
    if not parents:
        assert isinstance(dt, StructType)
        return change(dt)
    head, rest = parents[0], parents[1:]
    if isinstance(dt, ArrayType):
        return dataclasses.replace(dt, element_type=_replace_nested(dt.element_type, rest, change))
    if isinstance(dt, MapType):
        if head.lower() == "key":
            return dataclasses.replace(dt, key_type=_replace_nested(dt.key_type, rest, change))
        return dataclasses.replace(dt, value_type=_replace_nested(dt.value_type, rest, change))
    assert isinstance(dt, StructType)
    fields = []
    for f in dt.fields:
        if f.name.lower() == head.lower():
            f = dataclasses.replace(f, type=_replace_nested(f.type, rest, change))
        fields.append(f)
    return StructType(tuple(fields))


def _replace_struct(
    schema: StructType, parents: tuple[str, ...], change: Callable[[StructType], StructType]
) -> StructType:
    """``schema`` with ``change`` applied to the struct at ``parents`` (a path
    :func:`_struct_at` resolved: struct fields, ``element``, ``key``, ``value``)."""
    replaced = _replace_nested(schema, parents, change)
    assert isinstance(replaced, StructType)
    return replaced


def _resolve(schema: StructType, path: str) -> tuple[tuple[str, ...], StructField]:
    """The canonical path (names as the schema spells them) and the field at ``path``: struct
    fields at any depth, also inside arrays (``element``) and maps (``key``, ``value``), as
    Delta's ``a.element.x`` / ``a.value.key.y``; the last part is a struct field."""
    parts = split_column_path(path)
    canonical: list[str] = []
    dt: DataType = schema
    found: StructField | None = None
    for i, name in enumerate(parts):
        step = None if isinstance(dt, StructType) or i == len(parts) - 1 else _child(dt, name)
        if step is not None:  # an array's element, a map's key or value
            canonical.append(name.lower())
            dt = step
            continue
        if not isinstance(dt, StructType):
            raise InvalidSchemaChangeError(f"cannot resolve column {path!r}: {'.'.join(canonical)!r} is not a struct")
        if name not in dt:
            raise InvalidSchemaChangeError(
                f"cannot resolve column {path!r}: {'.'.join(parts[: i + 1])!r} is not in the table "
                f"(columns: {', '.join(dt.names)})"
            )
        found = dt.field(name)
        canonical.append(found.name)
        dt = found.type
    assert found is not None
    return tuple(canonical), found


def _appending(new: StructField) -> Callable[[StructType], StructType]:
    return lambda s: StructType((*s.fields, new))


def _without(name: str) -> Callable[[StructType], StructType]:
    return lambda s: StructType(tuple(f for f in s.fields if f.name != name))


def _type_name(dt: DataType) -> str:
    value = dt.to_json_value()
    return value if isinstance(value, str) else str(value["type"])


def attribute_name(path: Sequence[str]) -> str:
    """Spark's ``UnresolvedAttribute.name``, as Delta logs column paths: a part holding a dot backquoted."""
    return ".".join(f"`{p}`" if "." in p else p for p in path)


def _field_for_log(path: tuple[str, ...], f: StructField) -> dict[str, Any]:
    """Delta's ``structFieldToMap``: full name, type name, nullability, metadata."""
    return {
        "name": attribute_name(path),
        "type": _type_name(f.type),
        "nullable": f.nullable,
        "metadata": dict(f.metadata),
    }


def _first_not_null(f: StructField, path: tuple[str, ...]) -> str | None:
    """The path of the first NOT NULL field in ``f`` or nested in its structs, arrays and maps
    (Delta's ``SchemaUtils.filterRecursively(..., checkComplexTypes = true)(!_.nullable)``), or None."""
    if not f.nullable:
        return ".".join(path)
    stack: list[tuple[tuple[str, ...], DataType]] = [(path, f.type)]
    while stack:
        at, dt = stack.pop()
        if isinstance(dt, StructType):
            for child in dt.fields:
                if not child.nullable:
                    return ".".join((*at, child.name))
            stack.extend(((*at, child.name), child.type) for child in reversed(dt.fields))
        elif isinstance(dt, ArrayType):
            stack.append(((*at, "element"), dt.element_type))
        elif isinstance(dt, MapType):
            stack.extend((((*at, "value"), dt.value_type), ((*at, "key"), dt.key_type)))
    return None


def _check_no_dependent_expressions(metadata: Metadata, path: tuple[str, ...], action: str) -> None:
    reason = dependent_expressions(metadata, path).describe(".".join(path))
    if reason is not None:
        raise InvalidSchemaChangeError(f"cannot {action} column {'.'.join(path)!r}: {reason}")


def _field_already_exists(op: str, path: Sequence[str], struct: StructType) -> InvalidSchemaChangeError:
    """Spark's ``FIELD_ALREADY_EXISTS`` (``CheckAnalysis.checkColumnNotExists``, case-insensitive)."""
    return InvalidSchemaChangeError(
        f"[FIELD_ALREADY_EXISTS] Cannot {op} column, because {attribute_name(path)} already exists in "
        f"{struct.simple_string()}; nothing was committed"
    )


def _refuse_dropping_a_collections_part(schema: StructType, name: str) -> None:
    """Delta's ``SchemaUtils.dropColumn``: a map's ``key`` or ``value`` or an array's
    ``element`` is no field that can be dropped (drop the column, or a field of its struct)."""
    parts = split_column_path(name)
    dt: DataType | None = schema
    for part in parts[:-1]:
        dt = None if dt is None else _child(dt, part)
    found = None if not isinstance(dt, (ArrayType, MapType)) else _child(dt, parts[-1])
    if found is not None:
        raise InvalidSchemaChangeError(
            "[DELTA_UNSUPPORTED_DROP_NESTED_COLUMN_FROM_NON_STRUCT_TYPE] Can only drop nested columns from StructType. "
            f"Found {found.simple_string()} ({name!r}); nothing was committed"
        )


def _require_column_mapping(metadata: Metadata, action: str) -> None:
    if column_mapping_mode(metadata.configuration) == "none":
        error_class = (
            "DELTA_UNSUPPORTED_RENAME_COLUMN" if action.startswith("RENAME") else "DELTA_UNSUPPORTED_DROP_COLUMN"
        )
        raise ColumnMappingRequiredError(
            f"[{error_class}] {action} needs column mapping: data files find columns by name. Enable it with "
            "set_table_properties(log, {'delta.columnMapping.mode': 'name'}) (ALTER TABLE ... SET TBLPROPERTIES); "
            "nothing was committed"
        )


def _commit(
    delta_log: DeltaLog,
    change: Callable[[Metadata], tuple[Metadata, Operation]],
    check: Callable[[OptimisticTransaction], None] | None = None,
    lock: str | CommitLock | None = None,
) -> int:
    """One ALTER commit: ``check`` (given the transaction) then ``change`` (its metadata)."""
    txn, operation = _prepare(delta_log, change, check, lock)
    return txn.commit([], operation)


def _prepare(
    delta_log: DeltaLog,
    change: Callable[[Metadata], tuple[Metadata, Operation]],
    check: Callable[[OptimisticTransaction], None] | None = None,
    lock: str | CommitLock | None = None,
    without_mapping: bool | None = None,
) -> tuple[OptimisticTransaction, Operation]:
    """An ALTER transaction with its metadata change made (and checked), not committed
    (``without_mapping``: :func:`_make_change`'s)."""
    txn = delta_log.start_transaction(lock=lock)
    if not txn.table_exists:
        from deltalog.txn.protocol.errors import TableNotFoundError

        raise TableNotFoundError(delta_log.table_uri, "ALTER needs an existing table")
    return txn, _make_change(txn, change, check, without_mapping)


def _make_change(
    txn: OptimisticTransaction,
    change: Callable[[Metadata], tuple[Metadata, Operation]],
    check: Callable[[OptimisticTransaction], None] | None,
    without_mapping: bool | None = None,
) -> Operation:
    """``check`` (given the transaction), then ``change`` made to its metadata; with
    ``without_mapping`` (True: the mode property unset, False: set to ``none``) to the metadata
    as turning column mapping off leaves it, when the table maps columns."""
    if check is not None:
        check(txn)
    metadata = txn.snapshot.metadata
    removing = without_mapping is not None and has_column_mapping(metadata)
    if removing:
        metadata = without_column_mapping_metadata(metadata, unset_mode_property=bool(without_mapping))
    new, operation = change(metadata)
    row_tracking.is_suspended(new)  # delta.enableRowTracking and delta.rowTrackingSuspended not both true
    txn.update_metadata(new, removing_column_mapping=removing)
    return operation


def _with_schema(metadata: Metadata, schema: StructType, **changes: Any) -> Metadata:
    return dataclasses.replace(metadata, schema_string=schema.to_json(), **changes)


# -- the commands --------------------------------------------------------------------------


def _clustering_columns_among(snapshot: Snapshot, names: Sequence[str]) -> list[str]:
    """The clustering columns that are, or are inside, one of the columns ``names`` (compared
    by name parts ignoring case: Delta quotes a part that is not a plain word)."""
    clustering = logical_clustering_columns(
        snapshot.domain_metadata, json.loads(snapshot.metadata.schema_string), snapshot.protocol
    )
    dropped = [[p.lower() for p in split_column_name(n)] for n in names]
    return [
        c for c in clustering or () if any([p.lower() for p in split_column_name(c)][: len(d)] == d for d in dropped)
    ]


def add_columns(delta_log: DeltaLog, columns: Iterable[tuple[str, StructField] | StructField]) -> int:
    """``ALTER TABLE ADD COLUMNS``: new nullable columns at the end of the table (or of the
    struct a dotted path names: ``("address", StructField("zip", ...))`` or a field whose
    name is ``address.zip``). Under column mapping they get ids and physical names. Returns
    the version committed."""
    wanted: list[tuple[tuple[str, ...], StructField]] = []
    for item in columns:
        if isinstance(item, tuple):
            parent, f = item
            wanted.append(((*split_column_path(parent), f.name) if parent else (f.name,), f))
        else:
            parts = split_column_path(item.name)
            wanted.append((parts, dataclasses.replace(item, name=parts[-1])))
    if not wanted:
        raise InvalidSchemaChangeError("add_columns needs at least one column")

    def change(metadata: Metadata) -> tuple[Metadata, Operation]:
        schema = StructType.from_json(metadata.schema_string)
        logged = []
        for path, f in wanted:
            full = ".".join(path)
            not_null = _first_not_null(f, path)
            if not_null is not None:
                raise InvalidSchemaChangeError(
                    f"cannot add the NOT NULL column {not_null!r} to an existing table: its rows have no value for it "
                    "(Delta refuses NOT NULL in ALTER TABLE ADD COLUMNS, nested fields included); add it nullable"
                )
            parent = _struct_at(schema, path[:-1], full)
            if f.name in parent:
                raise _field_already_exists("add", path, parent)
            schema = _replace_struct(schema, path[:-1], _appending(f))
            logged.append({"column": _field_for_log(path, f)})
        return _with_schema(metadata, schema), AddColumns(columns=logged)

    return _commit(delta_log, change)


def rename_column(delta_log: DeltaLog, old: str, new: str) -> int:
    """``ALTER TABLE RENAME COLUMN old TO new`` (``new`` is the new name of the last part of
    ``old``'s path, or a full path with the same parents). Needs column mapping; partition
    columns can be renamed too. Returns the version committed."""

    def change(metadata: Metadata) -> tuple[Metadata, Operation]:
        _require_column_mapping(metadata, "RENAME COLUMN")
        schema = StructType.from_json(metadata.schema_string)
        path, _ = _resolve(schema, old)
        new_parts = split_column_path(new)
        if len(new_parts) > 1 and tuple(p.lower() for p in new_parts[:-1]) != tuple(p.lower() for p in path[:-1]):
            raise InvalidSchemaChangeError(
                f"cannot rename {old!r} to {new!r}: a rename cannot move a column (a new name holding dots is "
                "backquoted: `a.b`)"
            )
        new_name = new_parts[-1]
        siblings = _struct_at(schema, path[:-1], old)
        if new_name in siblings:  # the column's own name too, in any case (Spark's checkColumnNotExists)
            raise _field_already_exists("rename", (*path[:-1], new_name), siblings)
        _check_no_dependent_expressions(metadata, path, "rename")
        renamed = _replace_struct(
            schema,
            path[:-1],
            lambda s: StructType(
                tuple(dataclasses.replace(f, name=new_name) if f.name == path[-1] else f for f in s.fields)
            ),
        )
        partitions = metadata.partition_columns
        if len(path) == 1:
            partitions = tuple(new_name if c.lower() == path[0].lower() else c for c in partitions)
        new_path = (*path[:-1], new_name)
        config = renamed_stats_columns(metadata.configuration, path, new_path)
        op = RenameColumn(old_column_path=attribute_name(path), new_column_path=attribute_name(new_path))
        return _with_schema(metadata, renamed, partition_columns=partitions, configuration=config), op

    return _commit(delta_log, change)


def drop_columns(delta_log: DeltaLog, names: Sequence[str], if_exists: bool = False) -> int | None:
    """``ALTER TABLE DROP COLUMNS``: needs column mapping; partition columns and the last
    data column cannot be dropped. With ``if_exists`` unknown names are skipped (and when
    none is left nothing is committed: returns None). Returns the version committed."""
    if not names:
        raise InvalidSchemaChangeError("drop_columns needs at least one column")

    def change(metadata: Metadata) -> tuple[Metadata, Operation]:
        _require_column_mapping(metadata, "DROP COLUMN")
        schema = StructType.from_json(metadata.schema_string)
        paths: list[tuple[str, ...]] = []
        for name in names:
            _refuse_dropping_a_collections_part(schema, name)
            try:
                path, _ = _resolve(schema, name)
            except InvalidSchemaChangeError:
                if if_exists:
                    continue
                raise
            paths.append(path)
        if not paths:
            raise _NothingToDrop
        for path in paths:
            if len(path) == 1 and path[0].lower() in {c.lower() for c in metadata.partition_columns}:
                raise InvalidSchemaChangeError(
                    f"cannot drop the partition column {path[0]!r} (Delta's DELTA_UNSUPPORTED_DROP_PARTITION_COLUMN)"
                )
            _check_no_dependent_expressions(metadata, path, "drop")
            parent = _struct_at(schema, path[:-1], ".".join(path))
            if len(parent.fields) == 1:
                raise InvalidSchemaChangeError(
                    "[DELTA_DROP_COLUMN_ON_SINGLE_FIELD_SCHEMA] Cannot drop column from a schema with a single column. "
                    f"Schema: {parent.simple_string()} (dropping {attribute_name(path)!r}"
                    + (", the last field of its struct: drop the struct instead)" if len(path) > 1 else ")")
                )
            schema = _replace_struct(schema, path[:-1], _without(path[-1]))
        partitions = {c.lower() for c in metadata.partition_columns}
        if not [f for f in schema.fields if f.name.lower() not in partitions]:
            raise InvalidSchemaChangeError("cannot drop every data column of the table: at least one must remain")
        config = dropped_stats_columns(metadata.configuration, paths)
        return _with_schema(metadata, schema, configuration=config), DropColumns(
            columns=[attribute_name(p) for p in paths]
        )

    def not_clustering(txn: OptimisticTransaction) -> None:
        used = _clustering_columns_among(txn.snapshot, names)
        if used:
            raise InvalidSchemaChangeError(
                f"cannot drop the clustering column(s) {used} (Delta's DELTA_UNSUPPORTED_DROP_CLUSTERING_COLUMN); "
                "change the clustering columns first (ALTER TABLE ... CLUSTER BY)"
            )

    try:
        return _commit(delta_log, change, not_clustering)
    except _NothingToDrop:
        return None


class _NothingToDrop(Exception):
    """Every name was unknown and ``if_exists`` was set: no commit (caught above)."""


def change_column_comment(delta_log: DeltaLog, column: str, comment: str | None) -> int:
    """``ALTER TABLE CHANGE COLUMN column COMMENT '...'`` (``None`` removes the comment).
    Returns the version committed."""

    def change(metadata: Metadata) -> tuple[Metadata, Operation]:
        schema = StructType.from_json(metadata.schema_string)
        path, found = _resolve(schema, column)
        meta = {k: v for k, v in found.metadata.items() if k != "comment"}
        if comment is not None:
            meta["comment"] = comment
        updated = dataclasses.replace(found, metadata=meta)
        changed = _replace_struct(
            schema, path[:-1], lambda s: StructType(tuple(updated if f.name == path[-1] else f for f in s.fields))
        )
        return _with_schema(metadata, changed), ChangeColumn(column=_field_for_log(path, updated))

    return _commit(delta_log, change)


def _remove_column_mapping(
    delta_log: DeltaLog,
    change: Callable[[Metadata], tuple[Metadata, Operation]],
    check: Callable[[OptimisticTransaction], None] | None,
    unset: bool,
    remover: ColumnMappingRemover | None,
    lock: str | CommitLock | None,
) -> int | None:
    """Turn column mapping off before a SET/UNSET of ``delta.columnMapping.mode`` (Delta's
    ``RemoveColumnMappingCommand``): None when the table maps no column (the property change
    alone then), else the version of the rewrite. The names, and the second commit (``check``
    and ``change``, on a transaction never committed), are checked first: bad input, such as
    a property that needs column mapping, rewrites nothing (Delta commits the rewrite first)."""
    txn = delta_log.start_transaction(lock=lock)
    if not txn.table_exists or not has_column_mapping(txn.snapshot.metadata):
        return None
    _make_change(txn, change, check, unset)
    if remover is not None:
        return remover(delta_log, unset)
    return remove_column_mapping(delta_log, lock=lock, unset_mode_property=unset)


def _setting(
    values: Mapping[str, str], recorded: Mapping[str, str] | None = None
) -> Callable[[Metadata], tuple[Metadata, Operation]]:
    """SET TBLPROPERTIES' metadata change: ``comment`` as the description, constraints under
    their keys (:mod:`~deltalog.txn.commands.alter_properties`), every value checked; the
    commit's ``properties`` parameter is ``recorded`` when given, else ``values``."""

    def change(metadata: Metadata) -> tuple[Metadata, Operation]:
        stored = normalize_constraints(metadata.configuration, without_reserved(values))
        config = {**metadata.configuration, **stored}
        TableProperties(config).validate()
        operation = constraint_set_operation(values) or SetTableProperties(properties=dict(recorded or values))
        description = values.get(COMMENT, metadata.description)
        return dataclasses.replace(metadata, configuration=config, description=description), operation

    return change


def _verifying_new_constraints(
    values: Mapping[str, str], verify_constraints: ConstraintVerifier | None
) -> Callable[[OptimisticTransaction], None]:
    """Checks the rows against the CHECK constraints of ``values`` the table lacks (Delta's ADD CONSTRAINT)."""

    def verify(txn: OptimisticTransaction) -> None:
        current = txn.snapshot.metadata.properties.check_constraints
        normalized = normalize_constraints(txn.snapshot.metadata.configuration, values)
        added = {k: v for k, v in TableProperties(normalized).check_constraints.items() if current.get(k) != v}
        if added and verify_constraints is not None:
            txn.read_whole_table()
            verify_constraints(txn.snapshot, added)

    return verify


def _backfill_first(
    delta_log: DeltaLog,
    change: Callable[[Metadata], tuple[Metadata, Operation]],
    verify: Callable[[OptimisticTransaction], None],
    lock: str | CommitLock | None,
    removing: bool,
    limits: BackfillLimits | None,
) -> None:
    """Delta's ``validateAndBackfill``, once the property commit is made on a transaction never
    committed (on the metadata the column mapping rewrite leaves, when ``removing``): a property
    it refuses leaves no protocol upgrade or backfill batch behind (Delta's does)."""
    _prepare(delta_log, change, verify, lock, without_mapping=False if removing else None)
    backfill_row_tracking(delta_log, limits, lock=lock)


def set_table_properties(
    delta_log: DeltaLog,
    properties: Mapping[str, str],
    verify_constraints: ConstraintVerifier | None = None,
    *,
    allow_column_mapping_removal: bool = True,
    remove_column_mapping: ColumnMappingRemover | None = None,
    lock: str | CommitLock | None = None,
    row_tracking_backfill: BackfillLimits | None = None,
    allow_arbitrary_properties: bool = False,
    enforce_retention_compatibility: bool = True,
    recorded: Mapping[str, str] | None = None,
) -> int:
    """``ALTER TABLE SET TBLPROPERTIES`` (a value deltalog knows and cannot parse raises
    :class:`InvalidPropertyError`); the protocol is upgraded when a property needs it
    (``delta.columnMapping.mode`` = ``name`` on an existing table: existing columns keep
    their names as physical names). Returns the version committed (``lock``: the commit lock).

    ``delta.columnMapping.mode`` = ``none`` on a table that maps columns rewrites it without
    column mapping first (the module docstring; ``remove_column_mapping`` does it, by default
    here, one file after the other); the mode is then ``none`` and ``columnMapping`` stays in
    the protocol. With ``allow_column_mapping_removal=False`` (Delta's
    ``spark.databricks.delta.columnMapping.allowRemoval`` = ``false``) it is refused
    (:class:`~deltalog.txn.protocol.errors.UnsupportedColumnMappingModeChangeError`).

    A CHECK constraint (``delta.constraints.<name>``) that is new or changed is Delta's
    ``ADD CONSTRAINT``: ``verify_constraints(snapshot, {name: expression})`` must check the
    snapshot's rows and raise when one breaks it; the transaction then counts as having read
    the whole table, so a concurrent append fails it. This layer reads no data: without a
    verifier the rows are not checked (the Spark ``DeltaTable.setProperties`` passes one).

    ``delta.enableRowTracking`` = ``true`` first runs Delta's ``RowTrackingBackfillCommand``
    (:func:`~deltalog.txn.commands.row_tracking_backfill.backfill_row_tracking`: a protocol
    upgrade, then ``ROW TRACKING BACKFILL`` batches of at most ``row_tracking_backfill.max_files_per_commit``
    files) once the property commit is checked (:func:`_backfill_first`); it follows. Keys are checked first
    (:func:`~deltalog.txn.protocol.properties.validate_table_properties`; ``allow_arbitrary_properties``
    is Delta's ``spark.databricks.delta.allowArbitraryProperties.enabled``; ``enforce_retention_compatibility``
    Delta's ``spark.databricks.delta.vacuum.enforceDeletedFileAndLogRetentionDurationCompatibility``).
    ``recorded`` is what the commit's ``properties`` parameter shows, when not ``properties`` as
    stored (Delta's ``addFeatureSupport`` records ``delta.feature.<name>`` as given)."""
    if not properties:
        raise InvalidPropertyError("set_table_properties needs at least one property")
    values = validate_table_properties(
        properties,
        allow_arbitrary=allow_arbitrary_properties,
        enforce_retention_compatibility=enforce_retention_compatibility,
    )

    change = _setting(values, recorded)
    verify = _verifying_new_constraints(values, verify_constraints)
    removing = allow_column_mapping_removal and values.get(COLUMN_MAPPING_MODE, "").strip().lower() == "none"
    if TableProperties(values).enable_row_tracking:
        _backfill_first(delta_log, change, verify, lock, removing, row_tracking_backfill)
    if removing:
        removed = _remove_column_mapping(delta_log, change, verify, False, remove_column_mapping, lock)
        if removed is not None and len(values) == 1:
            return removed
    return _commit(delta_log, change, verify, lock)


def unset_table_properties(
    delta_log: DeltaLog,
    keys: Sequence[str],
    if_exists: bool = True,
    *,
    allow_column_mapping_removal: bool = True,
    remove_column_mapping: ColumnMappingRemover | None = None,
    lock: str | CommitLock | None = None,
) -> int:
    """``ALTER TABLE UNSET TBLPROPERTIES [IF EXISTS]``. Returns the version committed.
    Unsetting ``delta.columnMapping.mode`` of a table that maps columns rewrites it without
    column mapping, as :func:`set_table_properties` does for ``none`` (the property is then
    absent). A ``delta.*`` key Delta knows is unset under its canonical name, whatever its
    case (Delta's ``normalizeConfigKeys``); other keys are matched exactly."""
    if not keys:
        raise InvalidPropertyError("unset_table_properties needs at least one property")
    keys = [normalize_property_key(str(k)) for k in keys]
    removed = False  # whether the rewrite takes the mode away (it is then never "missing")

    def change(metadata: Metadata) -> tuple[Metadata, Operation]:
        resolved, drop = constraint_drop_operation(metadata.configuration, keys, if_exists, delta_log.table_uri)
        present = {*metadata.configuration, *([COMMENT] if metadata.description is not None else [])}
        missing = [k for k in resolved if k not in present and not (removed and k == COLUMN_MAPPING_MODE)]
        if missing and not if_exists:
            raise InvalidPropertyError(
                f"cannot unset {', '.join(missing)}: the table does not have it "
                "(use if_exists=True to ignore missing properties)"
            )
        config = {k: v for k, v in metadata.configuration.items() if k not in set(resolved)}
        op = drop or UnsetTableProperties(keys=list(keys), if_exists=if_exists)
        description = None if COMMENT in keys else metadata.description
        return dataclasses.replace(metadata, configuration=config, description=description), op

    if allow_column_mapping_removal and COLUMN_MAPPING_MODE in keys:
        removed = True
        version = _remove_column_mapping(delta_log, change, None, True, remove_column_mapping, lock)
        removed = version is not None
        if version is not None and len(keys) == 1:
            return version
    return _commit(delta_log, change, lock=lock)
