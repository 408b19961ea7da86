"""Columnar log replay: the table state as Arrow tables, and reconciliation.

The state of a table is small Python objects (protocol, metadata, application
transactions, domain metadata) plus two Arrow tables: the active ``add`` actions and the
``remove`` tombstones, with the checkpoint's column names (:data:`ADD_SCHEMA`,
:data:`REMOVE_SCHEMA`). A logical file is keyed by (URI-decoded path, deletion-vector
unique id); the newest ``add``/``remove`` per key wins, as PROTOCOL "Action Reconciliation"
says. Reconciliation is done with Arrow kernels (``group_by``, ``is_in``, ``filter``), never
with a Python loop over actions; adds in the state carry ``dataChange=false``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.txn.actions import (
    Action,
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
    action_to_dict,
)

__all__ = [
    "ADD_SCHEMA",
    "DV_TYPE",
    "REMOVE_SCHEMA",
    "CommitBatch",
    "LogState",
    "key_column",
    "normalize_struct",
]

KEY = "__key"
ORDER = "__order"

STRING_MAP = pa.map_(pa.string(), pa.string())
DV_TYPE = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
        ("maxRowIndex", pa.int64()),
    ]
)
ADD_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("partitionValues", STRING_MAP),
        ("size", pa.int64()),
        ("modificationTime", pa.int64()),
        ("dataChange", pa.bool_()),
        ("stats", pa.string()),
        ("tags", STRING_MAP),
        ("deletionVector", DV_TYPE),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
        ("clusteringProvider", pa.string()),
    ]
)
REMOVE_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("deletionTimestamp", pa.int64()),
        ("dataChange", pa.bool_()),
        ("extendedFileMetadata", pa.bool_()),
        ("partitionValues", STRING_MAP),
        ("size", pa.int64()),
        ("stats", pa.string()),
        ("tags", STRING_MAP),
        ("deletionVector", DV_TYPE),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
    ]
)
ADD_STRUCT = pa.struct(list(ADD_SCHEMA))
REMOVE_STRUCT = pa.struct(list(REMOVE_SCHEMA))


def _cast_child(values: pa.Array, target: pa.DataType) -> pa.Array:
    if values.type == target:
        return values
    if pa.types.is_struct(target) and pa.types.is_struct(values.type):
        assert isinstance(values, pa.StructArray)
        have = {values.type.field(i).name for i in range(values.type.num_fields)}
        children = [
            _cast_child(values.field(f.name), f.type) if f.name in have else pa.nulls(len(values), f.type)
            for f in target
        ]
        mask = pc.invert(values.is_valid()) if values.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    return values.cast(target)


def normalize_struct(column: pa.Array | pa.ChunkedArray, schema: pa.Schema) -> pa.Table:
    """Turn a struct column read from a checkpoint (any writer's field set and integer
    widths) into a table with exactly ``schema``'s columns; missing fields are null."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    assert isinstance(column, pa.StructArray)
    names = {column.type.field(i).name: i for i in range(column.type.num_fields)}
    arrays = []
    validity = column.is_valid()
    for f in schema:
        if f.name in names:
            child = column.field(names[f.name])
            arrays.append(_cast_child(child, f.type))
        else:
            arrays.append(pa.nulls(len(column), f.type))
    table = pa.Table.from_arrays(arrays, schema=schema)
    if pa.types.is_struct(column.type) and column.null_count:
        # children of a null struct slot may hold garbage; the callers filter rows anyway
        table = table.filter(validity)
    return table


def _decode_paths(paths: pa.Array | pa.ChunkedArray) -> pa.Array:
    """URI-decode a path column; only the rows holding '%' go through Python."""
    if isinstance(paths, pa.ChunkedArray):
        paths = paths.combine_chunks() if paths.num_chunks != 1 else paths.chunk(0)
    mask = pc.match_substring(paths, "%")
    if not pc.any(mask).as_py():
        return paths
    idx = pc.indices_nonzero(mask)
    decoded = pa.array([unquote(p) for p in paths.take(idx).to_pylist()], pa.string())
    values = paths.to_pylist()
    for i, d in zip(idx.to_pylist(), decoded.to_pylist()):
        values[i] = d
    return pa.array(values, pa.string())


def key_column(table: pa.Table) -> pa.Array:
    """The reconciliation key of each row: decoded path, US, DV unique id (or empty)."""
    path = _decode_paths(table.column("path"))
    dv = table.column("deletionVector")
    if dv.null_count == len(dv):
        return pc.binary_join_element_wise(path, pa.scalar("", pa.string()), "\x1f")
    storage = pc.struct_field(dv, "storageType")
    inline = pc.struct_field(dv, "pathOrInlineDv")
    offset = pc.struct_field(dv, "offset")
    offset_str = pc.if_else(
        pc.is_null(offset),
        pa.scalar("", pa.string()),
        pc.binary_join_element_wise(pa.scalar("@", pa.string()), pc.cast(offset, pa.string()), ""),
    )
    dv_id = pc.binary_join_element_wise(storage, inline, offset_str, "")
    dv_id = pc.if_else(pc.is_null(dv), pa.scalar("", pa.string()), pc.fill_null(dv_id, ""))
    result = pc.binary_join_element_wise(path, dv_id, "\x1f")
    return result.combine_chunks() if isinstance(result, pa.ChunkedArray) else result


def _with_key(table: pa.Table) -> pa.Table:
    return (
        table.append_column(KEY, key_column(table))
        if len(table)
        else table.append_column(KEY, pa.array([], pa.string()))
    )


def _empty(schema: pa.Schema) -> pa.Table:
    return schema.empty_table().append_column(KEY, pa.array([], pa.string()))


def _dicts_to_table(bodies: list[dict[str, Any]], struct: pa.StructType, schema: pa.Schema) -> pa.Table:
    if not bodies:
        return schema.empty_table()
    arr = pa.array(bodies, type=struct)
    return (
        pa.Table.from_struct_array(arr)
        if hasattr(pa.Table, "from_struct_array")
        else pa.Table.from_arrays(arr.flatten(), schema=schema)
    )


@dataclass
class CommitBatch:
    """File actions and other actions of one or more consecutive commits, in log order."""

    adds: list[dict[str, Any]] = field(default_factory=list)
    add_order: list[int] = field(default_factory=list)
    removes: list[dict[str, Any]] = field(default_factory=list)
    remove_order: list[int] = field(default_factory=list)
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    txns: dict[str, SetTransaction] = field(default_factory=dict)
    domains: dict[str, DomainMetadata] = field(default_factory=dict)
    commit_infos: dict[int, dict[str, Any]] = field(default_factory=dict)
    counter: int = 0

    def add_raw(self, version: int, obj: dict[str, Any]) -> None:
        """Take one decoded log line (``{"add": {...}}``); unknown actions are ignored."""
        self.counter += 1
        body = obj.get("add")
        if body is not None:
            self.adds.append(body)
            self.add_order.append(self.counter)
            return
        body = obj.get("remove")
        if body is not None:
            self.removes.append(body)
            self.remove_order.append(self.counter)
            return
        if (body := obj.get("metaData")) is not None:
            self.metadata = Metadata.from_dict(body)
        elif (body := obj.get("protocol")) is not None:
            self.protocol = Protocol.from_dict(body)
        elif (body := obj.get("txn")) is not None:
            t = SetTransaction.from_dict(body)
            self.txns[t.app_id] = t
        elif (body := obj.get("domainMetadata")) is not None:
            d = DomainMetadata.from_dict(body)
            self.domains[d.domain] = d
        elif (body := obj.get("commitInfo")) is not None and isinstance(body, dict):
            self.commit_infos.setdefault(version, body)

    def add_actions(self, version: int, actions: Iterable[Action]) -> None:
        for action in actions:
            if isinstance(action, CommitInfo):
                self.commit_infos.setdefault(version, action.to_dict())
                self.counter += 1
            else:
                self.add_raw(version, action_to_dict(action))

    @property
    def has_file_actions(self) -> bool:
        return bool(self.adds or self.removes)

    @classmethod
    def concat_files(cls, batches: Sequence[CommitBatch]) -> CommitBatch:
        """The file actions of consecutive batches as one batch, in log order."""
        merged = cls()
        for batch in batches:
            offset = merged.counter
            merged.adds.extend(batch.adds)
            merged.add_order.extend(o + offset for o in batch.add_order)
            merged.removes.extend(batch.removes)
            merged.remove_order.extend(o + offset for o in batch.remove_order)
            merged.counter = offset + batch.counter
        return merged

    def tables(self) -> tuple[pa.Table, pa.Table]:
        """(adds, removes) of the batch, each with the key and the log order."""
        adds = _dicts_to_table(self.adds, ADD_STRUCT, ADD_SCHEMA)
        removes = _dicts_to_table(self.removes, REMOVE_STRUCT, REMOVE_SCHEMA)
        adds = _with_key(adds).append_column(ORDER, pa.array(self.add_order, pa.int64()))
        removes = _with_key(removes).append_column(ORDER, pa.array(self.remove_order, pa.int64()))
        return adds, removes


@dataclass(frozen=True)
class LogState:
    """A reconciled table state. ``adds``/``removes`` have the key column ``__key``."""

    protocol: Protocol | None
    metadata: Metadata | None
    txns: dict[str, SetTransaction]
    domains: dict[str, DomainMetadata]
    adds: pa.Table
    removes: pa.Table

    @classmethod
    def empty(cls) -> LogState:
        return cls(None, None, {}, {}, _empty(ADD_SCHEMA), _empty(REMOVE_SCHEMA))

    @classmethod
    def from_checkpoint(
        cls,
        protocol: Protocol | None,
        metadata: Metadata | None,
        txns: dict[str, SetTransaction],
        domains: dict[str, DomainMetadata],
        adds: pa.Table,
        removes: pa.Table,
    ) -> LogState:
        adds = adds.set_column(
            adds.schema.get_field_index("dataChange"),
            "dataChange",
            pa.array([False] * len(adds), pa.bool_()) if len(adds) else pa.array([], pa.bool_()),
        )
        return cls(protocol, metadata, txns, domains, _with_key(adds), _with_key(removes))

    def with_non_file_actions(self, batch: CommitBatch) -> LogState:
        """This state with the batch's protocol, metadata, txn and domain actions applied;
        the file tables are left as they are (see :meth:`apply`)."""
        protocol = batch.protocol or self.protocol
        metadata = batch.metadata or self.metadata
        txns = {**self.txns, **batch.txns} if batch.txns else self.txns
        domains = self.domains
        if batch.domains:
            domains = dict(self.domains)
            for name, d in batch.domains.items():
                if d.removed:
                    domains.pop(name, None)
                else:
                    domains[name] = d
        if (protocol, metadata, txns, domains) == (self.protocol, self.metadata, self.txns, self.domains):
            return self
        return replace(self, protocol=protocol, metadata=metadata, txns=txns, domains=domains)

    def apply(self, batch: CommitBatch) -> LogState:
        """This state plus the batch's commits (newest action per logical file wins)."""
        protocol = batch.protocol or self.protocol
        metadata = batch.metadata or self.metadata
        txns = {**self.txns, **batch.txns} if batch.txns else self.txns
        domains = self.domains
        if batch.domains:
            domains = dict(self.domains)
            for name, d in batch.domains.items():
                if d.removed:
                    domains.pop(name, None)
                else:
                    domains[name] = d
        if not batch.adds and not batch.removes:
            return replace(self, protocol=protocol, metadata=metadata, txns=txns, domains=domains)
        new_adds, new_removes = batch.tables()
        touched = pa.concat_arrays(
            [new_adds.column(KEY).combine_chunks(), new_removes.column(KEY).combine_chunks()]
        )
        # newest action per key within the batch
        both = pa.concat_tables([new_adds.select([KEY, ORDER]), new_removes.select([KEY, ORDER])])
        if len(both) != len(pc.unique(both.column(KEY))):
            winners = both.group_by(KEY, use_threads=False).aggregate([(ORDER, "max")]).column(f"{ORDER}_max")
            new_adds = new_adds.filter(pc.is_in(new_adds.column(ORDER), value_set=winners))
            new_removes = new_removes.filter(pc.is_in(new_removes.column(ORDER), value_set=winners))
        keep_adds = self.adds.filter(pc.invert(pc.is_in(self.adds.column(KEY), value_set=touched)))
        keep_removes = self.removes.filter(pc.invert(pc.is_in(self.removes.column(KEY), value_set=touched)))
        added = new_adds.drop_columns([ORDER])
        added = added.set_column(
            added.schema.get_field_index("dataChange"),
            "dataChange",
            pa.array([False] * len(added), pa.bool_()),
        )
        adds = pa.concat_tables([keep_adds, added.cast(keep_adds.schema)])
        removes = pa.concat_tables(
            [keep_removes, new_removes.drop_columns([ORDER]).cast(keep_removes.schema)]
        )
        return LogState(protocol, metadata, txns, domains, adds, removes)

    # -- views -----------------------------------------------------------------------

    def files_table(self) -> pa.Table:
        return self.adds.drop_columns([KEY])

    def removes_table(self) -> pa.Table:
        return self.removes.drop_columns([KEY])


def table_to_adds(table: pa.Table) -> list[AddFile]:
    return [AddFile.from_dict(_clean(row)) for row in table.to_pylist()]


def table_to_removes(table: pa.Table) -> list[RemoveFile]:
    return [RemoveFile.from_dict(_clean(row)) for row in table.to_pylist()]


def _clean(row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in row.items():
        if k == KEY or v is None:
            continue
        if isinstance(v, list) and k in ("partitionValues", "tags"):
            v = dict(v)
        out[k] = v
    if "partitionValues" not in out:
        out["partitionValues"] = {}
    return out


def parse_commit_lines(lines: Sequence[str]) -> list[dict[str, Any]]:
    """Decode the lines of a commit file (blank lines skipped)."""
    return [json.loads(line) for line in lines if line.strip()]
