"""The streaming source's schema log (Delta's ``DeltaSourceMetadataTrackingLog``).

With ``schemaTrackingLocation`` a stream reads with the schema its log records rather than
the table's latest, so it can go on across a non-additive schema change (RENAME/DROP COLUMN
on a column-mapped table). The log is Delta's, file for file: under
``<schemaTrackingLocation>/_schema_log_<tableId>[_<streamingSourceTrackingId>]`` one file per
entry, named by its sequence number (``0``, ``1``, ...; Spark's ``HDFSMetadataLog``), holding
``v1``, a line break and the entry as JSON (Delta's ``PersistedMetadata``, ``None`` fields left
out as Jackson leaves them out). Entries are written through the location's
:class:`~deltalog.logstores.base.LogStore` (any scheme a table may use), never overwritten: a
second writer of the same number is a conflict (``DELTA_STREAMING_SCHEMA_LOCATION_CONFLICT``).

Which non-additive change an entry makes over the previous one, and whether the reader's
options unblock it, is Delta's ``DeltaSourceMetadataEvolutionSupport``
(:func:`blocked_change`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from deltalog.contrib.spark.errors import DeltaSourceSchemaLogError
from deltalog.contrib.spark.logical_schema import without_internal_writer_metadata
from deltalog.logstores.errors import FileAlreadyExistsError
from deltalog.txn.protocol.actions import AddCDCFile, AddFile, Metadata, Protocol, RemoveFile
from deltalog.txn.protocol.column_identifiers import column_sql
from deltalog.txn.protocol.type_widening import is_type_change_supported

if TYPE_CHECKING:
    from deltalog.logstores.base import LogStore
    from deltalog.txn.log.snapshot_management import SnapshotManagement

__all__ = [
    "PersistedMetadata",
    "SchemaChange",
    "SchemaTrackingLog",
    "UnblockHint",
    "blocked_change",
    "checkpoint_hash",
    "evolved",
    "merge_consecutive",
    "metadata_changed",
    "persisted",
    "read_with",
    "schema_change",
    "unblock_hint",
]

SERDE_VERSION = 1
_PHYSICAL = "delta.columnMapping.physicalName"
_CONF_PREFIX = "spark.databricks.delta.streaming."


@dataclass(frozen=True)
class PersistedMetadata:
    """One entry of the log (Delta's ``PersistedMetadata``): the metadata files of the table
    from ``delta_commit_version`` on are read with."""

    table_id: str
    delta_commit_version: int
    data_schema_json: str
    partition_schema_json: str
    source_metadata_path: str
    table_configurations: dict[str, str] | None = None
    protocol_json: str | None = None
    previous_metadata_seq_num: int | None = None

    def to_json(self) -> str:
        raw: dict[str, Any] = {
            "tableId": self.table_id,
            "deltaCommitVersion": self.delta_commit_version,
            "dataSchemaJson": self.data_schema_json,
            "partitionSchemaJson": self.partition_schema_json,
            "sourceMetadataPath": self.source_metadata_path,
            "tableConfigurations": self.table_configurations,
            "protocolJson": self.protocol_json,
            "previousMetadataSeqNum": self.previous_metadata_seq_num,
        }
        return json.dumps({k: v for k, v in raw.items() if v is not None}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> PersistedMetadata:
        raw = json.loads(text)
        return cls(
            str(raw["tableId"]),
            int(raw["deltaCommitVersion"]),
            str(raw["dataSchemaJson"]),
            str(raw["partitionSchemaJson"]),
            str(raw.get("sourceMetadataPath", "")),
            raw.get("tableConfigurations"),
            raw.get("protocolJson"),
            raw.get("previousMetadataSeqNum"),
        )

    @property
    def schema(self) -> dict[str, Any]:
        return dict(json.loads(self.data_schema_json))

    @property
    def partition_columns(self) -> tuple[str, ...]:
        return tuple(f["name"] for f in json.loads(self.partition_schema_json)["fields"])

    @property
    def protocol(self) -> dict[str, Any] | None:
        return None if self.protocol_json is None else dict(json.loads(self.protocol_json)["protocol"])


class SchemaTrackingLog:
    """The entries of one stream source's schema log (Delta's ``SchemaTrackingLog``), read
    when it is opened; :meth:`write` adds the next one."""

    def __init__(self, store: LogStore, location: str, table_id: str, tracking_id: str | None = None) -> None:
        name = f"_schema_log_{table_id}" + (f"_{tracking_id}" if tracking_id else "")
        self.store = store
        self.location = location.rstrip("/") + "/" + name
        self.table_id = table_id
        self.entries: dict[int, PersistedMetadata] = {}
        for status in store.list_from(self.location + "/0"):
            entry = status.path.rstrip("/").rpartition("/")[2]
            if entry.isdigit():
                self.entries[int(entry)] = self._read(int(entry))
        self.seq = max(self.entries, default=-1)
        current = self.current
        if current is not None and current.table_id != table_id:
            raise DeltaSourceSchemaLogError(
                "DELTA_STREAMING_SCHEMA_LOG_INCOMPATIBLE_DELTA_TABLE_ID",
                f"Detected incompatible Delta table id when trying to read Delta stream. Persisted table id: "
                f"{current.table_id}, Table id: {table_id}. The schema log at {self.location} might have been "
                "reused. Please pick a new schema location.",
            )

    def _read(self, seq: int) -> PersistedMetadata:
        lines = list(self.store.read(f"{self.location}/{seq}"))
        try:
            if lines[0].strip() != f"v{SERDE_VERSION}":
                raise ValueError(lines[0])
            return PersistedMetadata.from_json(lines[1] if len(lines) > 1 else "{}")
        except (ValueError, KeyError, TypeError, IndexError):
            raise DeltaSourceSchemaLogError(
                "DELTA_STREAMING_SCHEMA_LOG_DESERIALIZE_FAILED",
                f"Incomplete log file in the Delta streaming source schema log at '{self.location}' (entry {seq}). "
                "The schema log may have been corrupted. Please pick a new schema location.",
            ) from None

    @property
    def current(self) -> PersistedMetadata | None:
        return self.entries.get(self.seq)

    @property
    def previous(self) -> PersistedMetadata | None:
        """The entry before the current one (its ``previousMetadataSeqNum`` when it has one,
        as Delta's ``getPreviousTrackedMetadata``)."""
        current = self.current
        if current is None:
            return None
        before = current.previous_metadata_seq_num
        return self.entries.get(self.seq - 1 if before is None else before)

    def write(self, entry: PersistedMetadata, replace_current: bool = False) -> PersistedMetadata:
        """Add ``entry`` as the next sequence number (nothing when it is the current one).
        ``replace_current``: it stands for the current entry, so the previous one stays the
        one before it (Delta's ``writeNewMetadata(replaceCurrent = true)``)."""
        if replace_current and self.current is not None:
            before = self.current.previous_metadata_seq_num
            entry = replace(entry, previous_metadata_seq_num=self.seq - 1 if before is None else before)
        if entry == self.current:
            return entry
        seq = self.seq + 1
        try:  # put-if-absent: the store's mutual exclusion, as a commit's
            self.store.write(f"{self.location}/{seq}", [f"v{SERDE_VERSION}", entry.to_json()], overwrite=False)
        except FileAlreadyExistsError:
            raise DeltaSourceSchemaLogError(
                "DELTA_STREAMING_SCHEMA_LOCATION_CONFLICT",
                f"Detected conflicting schema location '{self.location}'. Another stream may be reusing the same "
                "schema location, which is not allowed. Please provide a new unique `schemaTrackingLocation` path "
                "or `streamingSourceTrackingId` as a reader option for one of the streams from this table.",
            ) from None
        self.entries[seq] = entry
        self.seq = seq
        return entry


@dataclass(frozen=True)
class SchemaChange:
    """The non-additive changes from one logged schema to the next (Delta's ``SchemaChangeType``)."""

    renamed: tuple[tuple[str, str], ...]
    dropped: tuple[str, ...]
    widened: tuple[tuple[str, str, str], ...]
    #: type changes that are no type widening (Delta's ``checkIncompatibleSchemaChange``)
    incompatible: tuple[tuple[str, str, str], ...] = ()

    @property
    def name(self) -> str:
        parts = [
            n for n, on in (("RENAME", self.renamed), ("DROP", self.dropped), ("TYPE WIDENING", self.widened)) if on
        ]
        if len(parts) == 1:
            return parts[0] + (" COLUMN" if parts[0] != "TYPE WIDENING" else "")
        if parts == ["RENAME", "DROP"]:
            return "RENAME AND DROP COLUMN"
        return ", ".join(parts[:-1]) + " AND " + parts[-1]

    def details(self) -> str:
        out = []
        if self.renamed:
            out.append("Columns renamed:\n" + "\n".join(f"'{a}' -> '{b}'" for a, b in self.renamed))
        if self.dropped:
            out.append("Columns dropped:\n" + ", ".join(f"'{c}'" for c in self.dropped))
        if self.widened:
            out.append(
                "Columns with widened types:\n"
                + "\n".join(f"'{c}': {_sql_type(a)} -> {_sql_type(b)}" for c, a, b in self.widened)
            )
        return "\n".join(out)


#: Spark's ``DataType.sql`` of the primitive types a widening goes between, by JSON name
_SQL_TYPES = {"byte": "TINYINT", "short": "SMALLINT", "integer": "INT", "long": "BIGINT"}


def _sql_type(json_type: str) -> str:
    """A primitive type as Delta's message names it (``DataType.sql``: ``INT``, ``DECIMAL(10,2)``)."""
    return _SQL_TYPES.get(json_type, json_type.upper())


#: a column's position: its physical (or logical) name parts, outermost first, with
#: ``element`` / ``key`` / ``value`` for a step into an array or a map
_Path = tuple[str, ...]
#: Spark's ``NullType`` (``void``; ``null`` in older schemas): a column that takes any type later
_VOID = ("void", "null")
_COLLECTION_PARTS = {
    "array": (("element", "elementType", "containsNull"),),
    "map": (("key", "keyType", None), ("value", "valueType", "valueContainsNull")),
}


@dataclass(frozen=True)
class _Column:
    """One position of a schema (:func:`_columns`): its logical path, type and nullability."""

    logical: _Path
    type: Any
    nullable: bool

    @property
    def kind(self) -> str:
        return str(self.type.get("type")) if isinstance(self.type, dict) else "atomic"

    @property
    def type_name(self) -> str:
        return str(self.type) if self.kind == "atomic" else self.kind


def _columns(schema: dict[str, Any], physical: _Path = (), logical: _Path = ()) -> dict[_Path, _Column]:
    """Each column at any depth (struct fields, and the elements of arrays and the keys and
    values of maps, as Delta's ``SchemaMergingUtils.explode``) by its physical path."""
    out: dict[_Path, _Column] = {}
    for f in schema["fields"]:
        at = (*physical, (f.get("metadata") or {}).get(_PHYSICAL, f["name"]))
        out[at] = _Column((*logical, f["name"]), f["type"], bool(f.get("nullable", True)))
        out.update(_nested(f["type"], at, out[at].logical))
    return out


def _nested(t: Any, physical: _Path, logical: _Path) -> dict[_Path, _Column]:
    if not isinstance(t, dict):
        return {}
    if t.get("type") == "struct":
        return _columns(t, physical, logical)
    out: dict[_Path, _Column] = {}
    for part, key, nullable in _COLLECTION_PARTS.get(str(t.get("type")), ()):
        at, name = (*physical, part), (*logical, part)
        out[at] = _Column(name, t[key], bool(nullable and t.get(nullable, True)))
        out.update(_nested(t[key], at, name))
    return out


def _is_collection_part(columns: dict[_Path, _Column], physical: _Path) -> bool:
    """Whether ``physical`` is an array's element or a map's key or value (not a field named so)."""
    parent = columns.get(physical[:-1])
    return parent is not None and parent.kind in _COLLECTION_PARTS


def _incompatible(old: _Column, new: _Column) -> tuple[str, str, str] | None:
    """Delta's ``checkIncompatibleSchemaChange`` at one position (``isReadCompatible`` with
    ``forbidTightenNullability``): another kind of type, an atomic type changed but not
    widened (a ``void`` column may take any type), or a nullable position made NOT NULL."""
    name = column_sql(new.logical)
    if old.type in _VOID:
        return None
    if old.kind != new.kind or (old.kind == "atomic" and not is_type_change_supported(old.type, new.type)):
        return name, old.type_name, new.type_name
    if old.nullable and not new.nullable:
        return name, "nullable", "not null"
    return None


def schema_change(old: dict[str, Any], new: dict[str, Any]) -> SchemaChange | None:
    """Delta's ``determineNonAdditiveSchemaChangeType``: columns renamed and dropped (by
    physical name, so only under column mapping a rename is one) and types widened, at any
    depth, inside arrays and maps too, with the changes no option unblocks
    (:attr:`SchemaChange.incompatible`); None for an additive change."""
    before, after = _columns(old), _columns(new)
    renamed: list[tuple[str, str]] = []
    dropped: list[str] = []
    widened: list[tuple[str, str, str]] = []
    incompatible: list[tuple[str, str, str]] = []
    for physical, column in before.items():
        now = after.get(physical)
        if now is None:
            # a field whose parent is still there was dropped (an array's element or a map's
            # key or value goes only with the collection: the change of its type tells)
            if (physical[:-1] in after or len(physical) == 1) and not _is_collection_part(before, physical):
                dropped.append(column_sql(column.logical))
            continue
        if now.logical[-1] != column.logical[-1]:
            renamed.append((column_sql(column.logical), column_sql(now.logical)))
        bad = _incompatible(column, now)
        if bad is not None:
            incompatible.append(bad)
        elif column.kind == "atomic" and column.type not in (*_VOID, now.type):
            widened.append((column_sql(now.logical), str(column.type), str(now.type)))
    if not (renamed or dropped or widened or incompatible):
        return None
    return SchemaChange(tuple(renamed), tuple(dropped), tuple(widened), tuple(incompatible))


def checkpoint_hash(metadata_path: str) -> int:
    """Delta's ``getCheckpointHash``: Java's ``String.hashCode`` of the source's metadata path
    (a signed 32-bit sum over the UTF-16 code units), the ``<hash>`` of the per-stream SQL
    confs ``...allowSourceColumn*.ckpt_<hash>``."""
    h = 0
    data = metadata_path.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _unblocked(options: Mapping[str, str], option: str, confs: tuple[str, ...], version: int, ckpt: int) -> bool:
    """Delta's ``isChangeUnblocked`` for one kind of change: the reader option at ``always`` or
    at the version of the change, or one of the SQL confs (given as reader options, or taken
    from the session by the stream's ``load``) at ``always``, or its per-stream form
    ``<conf>.ckpt_<hash>`` at ``always`` or at the version of the change."""
    lower = {k.lower(): v for k, v in options.items()}
    if lower.get(option.lower()) in ("always", str(version)):
        return True

    def conf(key: str) -> str:
        return (lower.get(key.lower()) or "").lower()

    return any(
        conf(_CONF_PREFIX + c) == "always" or conf(f"{_CONF_PREFIX}{c}.ckpt_{ckpt}") in ("always", str(version))
        for c in confs
    )


def blocked_change(
    options: Mapping[str, str], previous: PersistedMetadata, current: PersistedMetadata
) -> SchemaChange | None:
    """The non-additive change from ``previous`` to ``current`` that the options leave
    blocked (Delta's ``validateIfSchemaChangeCanBeUnblocked``; the per-stream confs are
    those of the hash of ``current``'s ``sourceMetadataPath``), or None."""
    change = schema_change(previous.schema, current.schema)
    if change is None:
        return None
    at = (current.delta_commit_version, checkpoint_hash(current.source_metadata_path))
    ok = (
        (not change.renamed or _unblocked(options, "allowSourceColumnRename", _RENAME_CONFS, *at))
        and (not change.dropped or _unblocked(options, "allowSourceColumnDrop", _DROP_CONFS, *at))
        and (not change.widened or _unblocked(options, "allowSourceColumnTypeChange", _TYPE_CONFS, *at))
    )
    return None if ok else change


_RENAME_CONFS = ("allowSourceColumnRename", "allowSourceColumnRenameAndDrop")
_DROP_CONFS = ("allowSourceColumnDrop", "allowSourceColumnRenameAndDrop")
_TYPE_CONFS = ("allowSourceColumnTypeChange",)


class UnblockHint(NamedTuple):
    """What unblocks a change, as Delta's ``cannotContinueStreamingPostSchemaEvolution`` lists
    it: reader options (for this change, for the stream) and SQL confs (for this change of
    this stream, for this stream, for all streams), one per line. The confs are given as
    ``spark.conf.set`` calls rather than Delta's ``SET key = "always";``, which Spark's SQL
    parser takes with the quotes (and refuses for a negative hash without backquotes)."""

    change_options: str
    stream_options: str
    change_confs: str
    stream_confs: str
    all_confs: str


def unblock_hint(change: SchemaChange, version: int, ckpt: int) -> UnblockHint:
    """The reader options and SQL confs that unblock ``change`` (at ``version``, of the stream
    whose checkpoint hash is ``ckpt``)."""
    names = []
    if change.renamed:
        names.append("allowSourceColumnRename")
    if change.dropped:
        names.append("allowSourceColumnDrop")
    if change.widened:
        names.append("allowSourceColumnTypeChange")
    confs = [n for n in names if n != "allowSourceColumnRename" or not change.dropped]
    if change.renamed and change.dropped:
        confs = ["allowSourceColumnRenameAndDrop"] + [n for n in confs if n not in _RENAME_CONFS + _DROP_CONFS]

    def lines(form: str, items: list[str]) -> str:
        return "\n".join("  " + form.format(name=n, conf=_CONF_PREFIX + n, ckpt=ckpt, v=version) for n in items)

    return UnblockHint(
        lines('.option("{name}", "{v}")', names),
        lines('.option("{name}", "always")', names),
        lines('spark.conf.set("{conf}.ckpt_{ckpt}", "{v}")', confs),
        lines('spark.conf.set("{conf}.ckpt_{ckpt}", "always")', confs),
        lines('spark.conf.set("{conf}", "always")', confs),
    )


def persisted(
    table_id: str, version: int, metadata: Metadata, protocol: Protocol, source_path: str
) -> PersistedMetadata:
    """The entry for the table's ``metadata`` and ``protocol`` at ``version`` (Delta's
    ``PersistedMetadata.apply``): the partition schema is the partition columns' fields."""
    schema = json.loads(metadata.schema_string)
    by_name = {f["name"]: f for f in schema["fields"]}
    partition = {"type": "struct", "fields": [by_name[c] for c in metadata.partition_columns if c in by_name]}
    return PersistedMetadata(
        table_id,
        version,
        metadata.schema_string,
        json.dumps(partition, separators=(",", ":")),
        source_path,
        dict(metadata.configuration),
        json.dumps({"protocol": protocol.to_dict()}, separators=(",", ":")),
    )


def read_with(entry: PersistedMetadata, metadata: Metadata, protocol: Protocol) -> PersistedMetadata:
    """The metadata a source reads with from ``entry``, whose table configuration and protocol
    are the table's (``metadata``, ``protocol`` of the snapshot the source started from) where
    the entry has none: an entry of Delta 2.x's ``PersistedSchema`` (Delta's
    ``readSnapshotDescriptor`` falls back to ``snapshotAtSourceInit``), else its column
    mapping mode would be lost and a protocol in any commit would look like a change."""
    if entry.table_configurations is None:
        entry = replace(entry, table_configurations=dict(metadata.configuration))
    if entry.protocol_json is None:
        entry = replace(entry, protocol_json=json.dumps({"protocol": protocol.to_dict()}, separators=(",", ":")))
    return entry


def _protocol_key(p: Mapping[str, Any] | None) -> Any:
    if p is None:
        return None
    features = (frozenset(p.get("readerFeatures") or ()), frozenset(p.get("writerFeatures") or ()))
    return p.get("minReaderVersion"), p.get("minWriterVersion"), features


def metadata_changed(read: PersistedMetadata, metadata: Metadata | None, protocol: Protocol | None) -> bool:
    """Delta's ``hasMetadataOrProtocolChangeComparedToStreamMetadata`` (less its version test):
    another protocol, or a schema (internal writer metadata aside, such as an identity
    high-water mark), partition columns or ``delta.*`` table property other than
    the ones the stream reads with."""
    if protocol is not None and _protocol_key(protocol.to_dict()) != _protocol_key(read.protocol):
        return True
    if metadata is None:
        return False

    def delta_conf(conf: Mapping[str, str] | None) -> dict[str, str]:
        return {k: v for k, v in (conf or {}).items() if k.startswith("delta.")}

    return (
        without_internal_writer_metadata(json.loads(metadata.schema_string))
        != without_internal_writer_metadata(read.schema)
        or tuple(metadata.partition_columns) != read.partition_columns
        or delta_conf(metadata.configuration) != delta_conf(read.table_configurations)
    )


def evolved(
    read: PersistedMetadata, version: int, metadata: Metadata | None, protocol: Protocol | None
) -> PersistedMetadata:
    """The entry for a change at ``version``: its metadata and protocol, the stream's where the
    commit has none (Delta's ``updateMetadataTrackingLogAndFailTheStreamIfNeeded``)."""
    entry = replace(read, delta_commit_version=version, previous_metadata_seq_num=None)
    if metadata is not None:
        fresh = persisted(read.table_id, version, metadata, Protocol(1, 1), read.source_metadata_path)
        entry = replace(
            entry,
            data_schema_json=fresh.data_schema_json,
            partition_schema_json=fresh.partition_schema_json,
            table_configurations=fresh.table_configurations,
        )
    if protocol is not None:
        entry = replace(entry, protocol_json=json.dumps({"protocol": protocol.to_dict()}, separators=(",", ":")))
    return entry


def merge_consecutive(delta_log: SnapshotManagement, log: SchemaTrackingLog) -> None:
    """Delta's ``getMergedConsecutiveMetadataChanges`` (on by default): from the current
    entry's version, the commits that change metadata or protocol and hold no file are one
    change; the last of them replaces the current entry, so a RENAME then a DROP with no data
    between fail the stream once."""
    current = log.current
    if current is None:
        return
    latest = delta_log.update().version
    last: int | None = None
    metadata: Metadata | None = None
    protocol: Protocol | None = None
    for version in range(current.delta_commit_version, latest + 1):
        actions = delta_log.read_commit(version)
        meta = next((a for a in actions if isinstance(a, Metadata)), None)
        proto = next((a for a in actions if isinstance(a, Protocol)), None)
        if any(isinstance(a, (AddFile, RemoveFile, AddCDCFile)) for a in actions) or (meta is None and proto is None):
            break
        last, metadata, protocol = version, meta or metadata, proto or protocol
    if last is not None and last != current.delta_commit_version:
        log.write(evolved(current, last, metadata, protocol), replace_current=True)
