"""Delta log actions as typed objects, with the protocol's JSON codec.

Each commit file is newline-delimited JSON, one action per line, each line an object
with a single key naming the action (``{"add": {...}}``). Field names and optional
fields follow ``PROTOCOL.md`` ("Actions"). Unknown actions and unknown fields are ignored
on read, as the protocol requires ("Protocol Evolution").

``add``/``remove``/``cdc`` paths are kept exactly as written in the log: RFC 2396 URI
strings, relative to the table root or absolute. :func:`decode_path` turns one into a
filesystem path and :func:`encode_path` makes one from a relative file name.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import quote, unquote

from deltalog.txn.protocol.properties import TableProperties

__all__ = [
    "EMPTY_SCHEMA_STRING",
    "Action",
    "AddCDCFile",
    "AddFile",
    "CheckpointMetadata",
    "CommitInfo",
    "DeletionVectorDescriptor",
    "DomainMetadata",
    "FileAction",
    "Format",
    "Metadata",
    "Protocol",
    "RemoveFile",
    "SetTransaction",
    "Sidecar",
    "action_from_dict",
    "action_to_dict",
    "action_to_line",
    "decode_path",
    "encode_path",
    "parse_line",
]

# Characters left as they are when a relative path is URI-encoded, matching what Hadoop's
# ``new Path(p).toUri.toString`` produces (Delta Spark): '%' ' ' '#' '?' and non-ASCII are
# escaped, the usual path punctuation and '=' (partition directories) are not.
_PATH_SAFE = "/=@:+,;!$&'()*~-._"


def encode_path(relative: str) -> str:
    """URI-encode a relative file path for an ``add``/``remove``/``cdc`` action."""
    return quote(relative, safe=_PATH_SAFE)


def decode_path(path: str) -> str:
    """Decode an action's path (a URI string) to the raw path it names, canonical: a
    ``file:`` URI without an authority (``file:/x``, ``file:///x``) names the same file as
    the bare absolute path ``/x``, as Delta Spark's replay finds (it qualifies both with the
    default file system; golden ``canonicalized-paths-*``)."""
    decoded = unquote(path)
    if decoded.startswith("file:/"):
        rest = decoded[5:]
        if rest.startswith("///"):
            return rest[2:]
        if not rest.startswith("//"):
            return rest
    return decoded


def is_absolute_path(path: str) -> bool:
    """Whether an action's path names its file absolutely (a URI or a ``/`` path, as a
    shallow clone's adds do) rather than relative to the table root."""
    decoded = decode_path(path)
    return "://" in decoded or decoded.startswith("/")


def absolute_path(table_uri: str, path: str) -> str:
    """The file an action's path names, decoded: under the table root unless absolute."""
    decoded = decode_path(path)
    return decoded if is_absolute_path(path) else f"{table_uri}/{decoded}"


def _drop_none(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


# ---------------------------------------------------------------------------------------
# Deletion vectors


@dataclass(frozen=True, slots=True)
class DeletionVectorDescriptor:
    """Where a file's deletion vector lives (PROTOCOL "Deletion Vector Descriptor Schema").

    ``storage_type`` is ``u`` (relative path derived from a UUID), ``p`` (absolute path)
    or ``i`` (inline, Z85-encoded bitmap).
    """

    storage_type: str
    path_or_inline_dv: str
    size_in_bytes: int
    cardinality: int
    offset: int | None = None
    max_row_index: int | None = None

    @property
    def unique_id(self) -> str:
        """``storageType + pathOrInlineDv`` plus ``@offset`` when an offset is set."""
        base = f"{self.storage_type}{self.path_or_inline_dv}"
        return base if self.offset is None else f"{base}@{self.offset}"

    def to_dict(self) -> dict[str, Any]:
        return _drop_none(
            {
                "storageType": self.storage_type,
                "pathOrInlineDv": self.path_or_inline_dv,
                "offset": self.offset,
                "sizeInBytes": self.size_in_bytes,
                "cardinality": self.cardinality,
                "maxRowIndex": self.max_row_index,
            }
        )

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DeletionVectorDescriptor:
        return cls(
            storage_type=d["storageType"],
            path_or_inline_dv=d["pathOrInlineDv"],
            size_in_bytes=int(d["sizeInBytes"]),
            cardinality=int(d["cardinality"]),
            offset=None if d.get("offset") is None else int(d["offset"]),
            max_row_index=None if d.get("maxRowIndex") is None else int(d["maxRowIndex"]),
        )


def _dv(d: dict[str, Any] | None) -> DeletionVectorDescriptor | None:
    return None if d is None else DeletionVectorDescriptor.from_dict(d)


# ---------------------------------------------------------------------------------------
# Protocol and metadata


@dataclass(frozen=True, slots=True)
class Protocol:
    """``protocol``: the reader/writer versions and, from 3/7 on, the feature lists."""

    min_reader_version: int
    min_writer_version: int
    reader_features: tuple[str, ...] | None = None
    writer_features: tuple[str, ...] | None = None

    key: ClassVar[str] = "protocol"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "minReaderVersion": self.min_reader_version,
            "minWriterVersion": self.min_writer_version,
        }
        if self.reader_features is not None:
            d["readerFeatures"] = list(self.reader_features)
        if self.writer_features is not None:
            d["writerFeatures"] = list(self.writer_features)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Protocol:
        rf = d.get("readerFeatures")
        wf = d.get("writerFeatures")
        return cls(
            min_reader_version=int(d["minReaderVersion"]),
            min_writer_version=int(d["minWriterVersion"]),
            reader_features=None if rf is None else tuple(rf),
            writer_features=None if wf is None else tuple(wf),
        )


@dataclass(frozen=True, slots=True)
class Format:
    """``metaData.format``: the data file format (always ``parquet``) and its options."""

    provider: str = "parquet"
    options: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"provider": self.provider, "options": dict(self.options)}


#: the ``schemaString`` of a table without columns: what Delta's ``Metadata.schema`` is when
#: the action carries no ``schemaString`` (golden tables written by early Delta versions)
EMPTY_SCHEMA_STRING = '{"type":"struct","fields":[]}'


def _new_table_id() -> str:
    return str(uuid.uuid4())


@dataclass(frozen=True, slots=True)
class Metadata:
    """``metaData``: the table's id, schema, partition columns and properties.

    As in Delta's ``Metadata``, ``id`` defaults to a fresh random UUID and a missing
    ``schemaString`` means a schema without columns (:data:`EMPTY_SCHEMA_STRING`), wherever
    the action is read from (a JSON commit or a checkpoint)."""

    id: str = field(default_factory=_new_table_id)
    schema_string: str = EMPTY_SCHEMA_STRING
    partition_columns: tuple[str, ...] = ()
    configuration: dict[str, str] = field(default_factory=dict)
    format: Format = field(default_factory=Format)
    name: str | None = None
    description: str | None = None
    created_time: int | None = None

    key: ClassVar[str] = "metaData"

    @property
    def properties(self) -> TableProperties:
        """The typed table properties of :attr:`configuration` (Delta's defaults and aliases)."""
        return TableProperties(self.configuration)

    def to_dict(self) -> dict[str, Any]:
        return _drop_none(
            {
                "id": self.id,
                "name": self.name,
                "description": self.description,
                "format": self.format.to_dict(),
                "schemaString": self.schema_string,
                "partitionColumns": list(self.partition_columns),
                "configuration": dict(self.configuration),
                "createdTime": self.created_time,
            }
        )

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Metadata:
        fmt = d.get("format") or {}
        return cls(
            id=d["id"],
            schema_string=d.get("schemaString") or EMPTY_SCHEMA_STRING,
            partition_columns=tuple(d.get("partitionColumns") or ()),
            configuration={str(k): str(v) for k, v in (d.get("configuration") or {}).items() if v is not None},
            format=Format(fmt.get("provider", "parquet"), dict(fmt.get("options") or {})),
            name=d.get("name"),
            description=d.get("description"),
            created_time=d.get("createdTime"),
        )


# ---------------------------------------------------------------------------------------
# File actions


@dataclass(frozen=True, slots=True)
class AddFile:
    """``add``: a logical file (a data file plus an optional deletion vector) joins the table."""

    path: str
    partition_values: dict[str, str | None]
    size: int
    modification_time: int
    data_change: bool = True
    stats: str | None = None
    tags: dict[str, str] | None = None
    deletion_vector: DeletionVectorDescriptor | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None
    clustering_provider: str | None = None

    key: ClassVar[str] = "add"

    @property
    def dv_id(self) -> str | None:
        return None if self.deletion_vector is None else self.deletion_vector.unique_id

    @property
    def logical_key(self) -> tuple[str, str | None]:
        """What identifies the logical file in reconciliation: (decoded path, DV id)."""
        return (decode_path(self.path), self.dv_id)

    def parsed_stats(self) -> dict[str, Any]:
        """The ``stats`` JSON as a dict (empty when absent or not a JSON object)."""
        if not self.stats:
            return {}
        try:
            value = json.loads(self.stats)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}

    def num_records(self) -> int | None:
        value = self.parsed_stats().get("numRecords")
        return None if value is None else int(value)

    def remove(self, deletion_timestamp: int, data_change: bool = True) -> RemoveFile:
        """The tombstone that removes this file, carrying its metadata (extended)."""
        return RemoveFile(
            path=self.path,
            deletion_timestamp=deletion_timestamp,
            data_change=data_change,
            extended_file_metadata=True,
            partition_values=self.partition_values,
            size=self.size,
            stats=self.stats,
            tags=self.tags,
            deletion_vector=self.deletion_vector,
            base_row_id=self.base_row_id,
            default_row_commit_version=self.default_row_commit_version,
        )

    def to_dict(self) -> dict[str, Any]:
        return _drop_none(
            {
                "path": self.path,
                "partitionValues": dict(self.partition_values),
                "size": self.size,
                "modificationTime": self.modification_time,
                "dataChange": self.data_change,
                "stats": self.stats,
                "tags": self.tags,
                "deletionVector": None if self.deletion_vector is None else self.deletion_vector.to_dict(),
                "baseRowId": self.base_row_id,
                "defaultRowCommitVersion": self.default_row_commit_version,
                "clusteringProvider": self.clustering_provider,
            }
        )

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AddFile:
        return cls(
            path=d["path"],
            partition_values=dict(d.get("partitionValues") or {}),
            size=int(d.get("size") or 0),
            modification_time=int(d.get("modificationTime") or 0),
            data_change=bool(d.get("dataChange", True)),
            stats=d.get("stats"),
            tags=d.get("tags"),
            deletion_vector=_dv(d.get("deletionVector")),
            base_row_id=d.get("baseRowId"),
            default_row_commit_version=d.get("defaultRowCommitVersion"),
            clustering_provider=d.get("clusteringProvider"),
        )


@dataclass(frozen=True, slots=True)
class RemoveFile:
    """``remove``: a logical file leaves the table; kept as a tombstone until it expires."""

    path: str
    deletion_timestamp: int | None = None
    data_change: bool = True
    extended_file_metadata: bool | None = None
    partition_values: dict[str, str | None] | None = None
    size: int | None = None
    stats: str | None = None
    tags: dict[str, str] | None = None
    deletion_vector: DeletionVectorDescriptor | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None

    key: ClassVar[str] = "remove"

    @property
    def dv_id(self) -> str | None:
        return None if self.deletion_vector is None else self.deletion_vector.unique_id

    @property
    def logical_key(self) -> tuple[str, str | None]:
        return (decode_path(self.path), self.dv_id)

    def to_dict(self) -> dict[str, Any]:
        return _drop_none(
            {
                "path": self.path,
                "deletionTimestamp": self.deletion_timestamp,
                "dataChange": self.data_change,
                "extendedFileMetadata": self.extended_file_metadata,
                "partitionValues": None if self.partition_values is None else dict(self.partition_values),
                "size": self.size,
                "stats": self.stats,
                "tags": self.tags,
                "deletionVector": None if self.deletion_vector is None else self.deletion_vector.to_dict(),
                "baseRowId": self.base_row_id,
                "defaultRowCommitVersion": self.default_row_commit_version,
            }
        )

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RemoveFile:
        pv = d.get("partitionValues")
        return cls(
            path=d["path"],
            deletion_timestamp=d.get("deletionTimestamp"),
            data_change=bool(d.get("dataChange", True)),
            extended_file_metadata=d.get("extendedFileMetadata"),
            partition_values=None if pv is None else dict(pv),
            size=d.get("size"),
            stats=d.get("stats"),
            tags=d.get("tags"),
            deletion_vector=_dv(d.get("deletionVector")),
            base_row_id=d.get("baseRowId"),
            default_row_commit_version=d.get("defaultRowCommitVersion"),
        )


@dataclass(frozen=True, slots=True)
class AddCDCFile:
    """``cdc``: a change-data file under ``_change_data/``; never part of the table state."""

    path: str
    partition_values: dict[str, str | None]
    size: int
    data_change: bool = False
    tags: dict[str, str] | None = None

    key: ClassVar[str] = "cdc"

    def to_dict(self) -> dict[str, Any]:
        return _drop_none(
            {
                "path": self.path,
                "partitionValues": dict(self.partition_values),
                "size": self.size,
                "dataChange": self.data_change,
                "tags": self.tags,
            }
        )

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AddCDCFile:
        return cls(
            path=d["path"],
            partition_values=dict(d.get("partitionValues") or {}),
            size=int(d.get("size") or 0),
            data_change=bool(d.get("dataChange", False)),
            tags=d.get("tags"),
        )


FileAction = AddFile | RemoveFile | AddCDCFile


# ---------------------------------------------------------------------------------------
# Other actions


@dataclass(frozen=True, slots=True)
class SetTransaction:
    """``txn``: the latest version an application (e.g. a streaming query) committed."""

    app_id: str
    version: int
    last_updated: int | None = None

    key: ClassVar[str] = "txn"

    def to_dict(self) -> dict[str, Any]:
        return _drop_none({"appId": self.app_id, "version": self.version, "lastUpdated": self.last_updated})

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SetTransaction:
        return cls(app_id=d["appId"], version=int(d["version"]), last_updated=d.get("lastUpdated"))


@dataclass(frozen=True, slots=True)
class DomainMetadata:
    """``domainMetadata``: configuration of a named metadata domain."""

    domain: str
    configuration: str
    removed: bool = False

    key: ClassVar[str] = "domainMetadata"

    def to_dict(self) -> dict[str, Any]:
        return {"domain": self.domain, "configuration": self.configuration, "removed": self.removed}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DomainMetadata:
        return cls(domain=d["domain"], configuration=d.get("configuration") or "", removed=bool(d.get("removed")))


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """``commitInfo``: provenance of a commit. Free-form; the common fields are typed and
    everything else is kept in ``extra``, so a read-modify-write keeps it."""

    timestamp: int | None = None
    operation: str | None = None
    operation_parameters: dict[str, Any] | None = None
    read_version: int | None = None
    isolation_level: str | None = None
    is_blind_append: bool | None = None
    operation_metrics: dict[str, str] | None = None
    user_metadata: str | None = None
    engine_info: str | None = None
    txn_id: str | None = None
    in_commit_timestamp: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    key: ClassVar[str] = "commitInfo"

    _FIELDS: ClassVar[dict[str, str]] = {
        "timestamp": "timestamp",
        "inCommitTimestamp": "in_commit_timestamp",
        "operation": "operation",
        "operationParameters": "operation_parameters",
        "readVersion": "read_version",
        "isolationLevel": "isolation_level",
        "isBlindAppend": "is_blind_append",
        "operationMetrics": "operation_metrics",
        "userMetadata": "user_metadata",
        "engineInfo": "engine_info",
        "txnId": "txn_id",
    }

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {}
        for json_name, attr in self._FIELDS.items():
            value = getattr(self, attr)
            if value is not None:
                d[json_name] = value
        for k, v in self.extra.items():
            d.setdefault(k, v)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CommitInfo:
        known = {attr: d.get(json_name) for json_name, attr in cls._FIELDS.items()}
        extra = {k: v for k, v in d.items() if k not in cls._FIELDS}
        return cls(**known, extra=extra)


@dataclass(frozen=True, slots=True)
class CheckpointMetadata:
    """``checkpointMetadata``: the header action of a V2 checkpoint."""

    version: int
    tags: dict[str, str] | None = None

    key: ClassVar[str] = "checkpointMetadata"

    def to_dict(self) -> dict[str, Any]:
        return _drop_none({"version": self.version, "tags": self.tags})

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CheckpointMetadata:
        return cls(version=int(d["version"]), tags=d.get("tags"))


@dataclass(frozen=True, slots=True)
class Sidecar:
    """``sidecar``: a V2 checkpoint's pointer to a Parquet file of file actions."""

    path: str
    size_in_bytes: int
    modification_time: int
    tags: dict[str, str] | None = None

    key: ClassVar[str] = "sidecar"

    def to_dict(self) -> dict[str, Any]:
        return _drop_none(
            {
                "path": self.path,
                "sizeInBytes": self.size_in_bytes,
                "modificationTime": self.modification_time,
                "tags": self.tags,
            }
        )

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Sidecar:
        return cls(
            path=d["path"],
            size_in_bytes=int(d["sizeInBytes"]),
            modification_time=int(d["modificationTime"]),
            tags=d.get("tags"),
        )


Action = (
    Protocol
    | Metadata
    | AddFile
    | RemoveFile
    | AddCDCFile
    | SetTransaction
    | DomainMetadata
    | CommitInfo
    | CheckpointMetadata
    | Sidecar
)

_BY_KEY: dict[str, Any] = {
    cls.key: cls
    for cls in (
        Protocol,
        Metadata,
        AddFile,
        RemoveFile,
        AddCDCFile,
        SetTransaction,
        DomainMetadata,
        CommitInfo,
        CheckpointMetadata,
        Sidecar,
    )
}


def action_from_dict(wrapper: dict[str, Any]) -> Action | None:
    """Decode ``{"add": {...}}``; ``None`` for an action this client does not know."""
    for key, body in wrapper.items():
        cls = _BY_KEY.get(key)
        if cls is not None and body is not None:
            action: Action = cls.from_dict(body)
            return action
    return None


def action_to_dict(action: Action) -> dict[str, Any]:
    """Encode an action as ``{"<key>": {...}}``."""
    return {action.key: action.to_dict()}


def action_to_line(action: Action) -> str:
    """One log line (compact JSON, no line break)."""
    return json.dumps({action.key: action.to_dict()}, separators=(",", ":"), ensure_ascii=False)


def parse_line(line: str) -> Action | None:
    """Decode one log line. Raises :class:`ValueError` (a ``json.JSONDecodeError`` or a
    ``KeyError``-derived message) when the line is not a valid action."""
    obj = json.loads(line)
    if not isinstance(obj, dict):
        raise ValueError(f"a log line must be a JSON object, got {type(obj).__name__}")
    try:
        return action_from_dict(obj)
    except (KeyError, TypeError) as exc:
        raise ValueError(f"malformed action {line[:200]!r}: missing or invalid {exc}") from exc
