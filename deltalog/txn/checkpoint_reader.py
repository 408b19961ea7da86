"""Reading checkpoints: classic single-file, multi-part, and V2 (UUID-named JSON or
Parquet, with sidecar files), straight into Arrow.

Only the columns a snapshot needs are read (``add.stats_parsed`` and
``add.partitionValues_parsed`` are skipped); the ``add``/``remove`` struct columns are
normalized to :data:`~deltalog.txn.replay.ADD_SCHEMA` / ``REMOVE_SCHEMA`` whatever integer
widths or optional fields the writer used.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.logstores.base import LogStore
from deltalog.txn.actions import (
    CheckpointMetadata,
    DomainMetadata,
    Metadata,
    Protocol,
    SetTransaction,
    Sidecar,
    decode_path,
)
from deltalog.txn.errors import CorruptLogError
from deltalog.txn.log_segment import CheckpointInstance
from deltalog.txn.replay import ADD_SCHEMA, REMOVE_SCHEMA, LogState, normalize_struct

__all__ = ["CheckpointContents", "read_checkpoint", "sidecar_uri"]

log = logging.getLogger(__name__)

_SMALL = ("protocol", "metaData", "txn", "domainMetadata", "checkpointMetadata", "sidecar")


@dataclass
class CheckpointContents:
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    txns: dict[str, SetTransaction] = field(default_factory=dict)
    domains: dict[str, DomainMetadata] = field(default_factory=dict)
    checkpoint_metadata: CheckpointMetadata | None = None
    sidecars: list[Sidecar] = field(default_factory=list)
    adds: list[pa.Table] = field(default_factory=list)
    removes: list[pa.Table] = field(default_factory=list)

    def take_small(self, key: str, body: dict[str, Any]) -> None:
        if key == "protocol":
            self.protocol = Protocol.from_dict(body)
        elif key == "metaData":
            self.metadata = Metadata.from_dict(body)
        elif key == "txn":
            t = SetTransaction.from_dict(body)
            self.txns[t.app_id] = t
        elif key == "domainMetadata":
            d = DomainMetadata.from_dict(body)
            if not d.removed:
                self.domains[d.domain] = d
        elif key == "checkpointMetadata":
            self.checkpoint_metadata = CheckpointMetadata.from_dict(body)
        elif key == "sidecar":
            self.sidecars.append(Sidecar.from_dict(body))

    def to_state(self) -> LogState:
        adds = pa.concat_tables(self.adds) if self.adds else ADD_SCHEMA.empty_table()
        removes = pa.concat_tables(self.removes) if self.removes else REMOVE_SCHEMA.empty_table()
        return LogState.from_checkpoint(self.protocol, self.metadata, self.txns, self.domains, adds, removes)


def sidecar_uri(log_uri: str, path: str) -> str:
    """Where a sidecar lives: relative names are under ``_delta_log/_sidecars/``."""
    if "://" in path or path.startswith("/"):
        return decode_path(path)
    return f"{log_uri}/_sidecars/{decode_path(path)}"


def _read_parquet(store: LogStore, uri: str, contents: CheckpointContents, *, small: bool = True) -> None:
    fs = store.filesystem()
    try:
        with fs.open_input_file(store.fs_path(uri)) as handle:
            pf = pq.ParquetFile(handle)
            schema = pf.schema_arrow
            columns: list[str] = []
            for name, wanted in (("add", ADD_SCHEMA), ("remove", REMOVE_SCHEMA)):
                if name in schema.names:
                    struct = schema.field(name).type
                    present = {struct.field(i).name for i in range(struct.num_fields)}
                    columns += [f"{name}.{f.name}" for f in wanted if f.name in present]
            if small:
                columns += [n for n in _SMALL if n in schema.names]
            table = pf.read(columns=columns, use_threads=True) if columns else None
    except FileNotFoundError:
        raise
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CorruptLogError(uri, f"not a readable Parquet checkpoint ({exc})") from exc
    if table is None:
        return
    if "add" in table.column_names:
        contents.adds.append(normalize_struct(table.column("add"), ADD_SCHEMA))
    if "remove" in table.column_names:
        contents.removes.append(normalize_struct(table.column("remove"), REMOVE_SCHEMA))
    for key in _SMALL:
        if key in table.column_names:
            col = table.column(key)
            if col.null_count == len(col):
                continue
            for body in col.drop_null().to_pylist():
                contents.take_small(key, _maps_to_dicts(body))


def _maps_to_dicts(value: Any) -> Any:
    """pyarrow gives maps as lists of (key, value) tuples; the codec wants dicts."""
    if isinstance(value, dict):
        return {k: _maps_to_dicts(v) for k, v in value.items()}
    if isinstance(value, list) and value and all(isinstance(x, tuple) and len(x) == 2 for x in value):
        return {k: _maps_to_dicts(v) for k, v in value}
    if isinstance(value, list):
        return [_maps_to_dicts(v) for v in value]
    return value


def _read_json_checkpoint(store: LogStore, uri: str, contents: CheckpointContents) -> None:
    adds: list[dict[str, Any]] = []
    removes: list[dict[str, Any]] = []
    try:
        for n, line in enumerate(store.read(uri), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise CorruptLogError(uri, f"line {n} is not JSON ({exc})") from None
            for key, body in obj.items():
                if body is None:
                    continue
                if key == "add":
                    adds.append(body)
                elif key == "remove":
                    removes.append(body)
                else:
                    contents.take_small(key, body)
    except (KeyError, TypeError) as exc:
        raise CorruptLogError(uri, f"malformed action: missing or invalid {exc}") from None
    if adds:
        contents.adds.append(pa.Table.from_struct_array(pa.array(adds, pa.struct(list(ADD_SCHEMA)))))
    if removes:
        contents.removes.append(pa.Table.from_struct_array(pa.array(removes, pa.struct(list(REMOVE_SCHEMA)))))


def read_checkpoint(store: LogStore, log_uri: str, checkpoint: CheckpointInstance) -> CheckpointContents:
    """Everything a checkpoint holds, file actions as Arrow tables."""
    contents = CheckpointContents()
    for status in checkpoint.files:
        if status.name.endswith(".json"):
            _read_json_checkpoint(store, status.path, contents)
        else:
            _read_parquet(store, status.path, contents)
    for sidecar in contents.sidecars:
        _read_parquet(store, sidecar_uri(log_uri, sidecar.path), contents, small=False)
    if contents.protocol is None or contents.metadata is None:
        missing = " and ".join(
            n for n, v in (("protocol", contents.protocol), ("metaData", contents.metadata)) if v is None
        )
        raise CorruptLogError(checkpoint.files[0].path, f"the checkpoint has no {missing} action")
    log.debug("read checkpoint %s (%d files)", checkpoint.version, len(checkpoint.files))
    return contents
