"""``_delta_log/_last_checkpoint``: a hint to the newest checkpoint, with the protocol's
MD5 checksum over canonicalized JSON (PROTOCOL "Last Checkpoint File Schema",
"JSON checksum").

Reading is forgiving: a missing, empty, unparsable or checksum-mismatching file gives
``None`` (the caller then lists the log), logged at warning level.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from deltalog.logstores.base import LogStore
from deltalog.txn.protocol.file_names import LAST_CHECKPOINT, log_path

__all__ = [
    "LastCheckpointInfo",
    "canonicalize_json",
    "json_checksum",
    "read_last_checkpoint",
    "write_last_checkpoint",
]

log = logging.getLogger(__name__)


class _Number(str):
    """A JSON number kept as its source text (numbers are their own canonical form)."""


class _DuplicateKeyError(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKeyError(f"duplicate key {k!r}")
        out[k] = v
    return out


def _enc(text: str) -> str:
    return quote(text, safe="-._~")


def _canonical_pairs(value: Any, path: str, out: list[tuple[bytes, str]]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            seg = f'"{_enc(k)}"'
            _canonical_pairs(v, f"{path}+{seg}" if path else seg, out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _canonical_pairs(v, f"{path}+{i}" if path else str(i), out)
    else:
        if value is None:
            text = "null"
        elif value is True:
            text = "true"
        elif value is False:
            text = "false"
        elif isinstance(value, _Number):
            text = str(value)
        elif isinstance(value, (int, float)):
            text = json.dumps(value)
        else:
            text = f'"{_enc(str(value))}"'
        out.append((path.encode("utf-8"), f"{path}={text}"))


def canonicalize_json(value: dict[str, Any]) -> str:
    """The protocol's canonical form of a JSON object (top-level ``checksum`` ignored)."""
    pairs: list[tuple[bytes, str]] = []
    _canonical_pairs({k: v for k, v in value.items() if k != "checksum"}, "", pairs)
    pairs.sort(key=lambda p: p[0])
    return ",".join(p[1] for p in pairs)


def _loads_exact(text: str) -> dict[str, Any]:
    value = json.loads(text, object_pairs_hook=_pairs, parse_int=_Number, parse_float=_Number)
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


def json_checksum(text_or_value: str | dict[str, Any]) -> str:
    """MD5 hex digest of the canonicalized JSON (raises ValueError on duplicate keys)."""
    value = _loads_exact(text_or_value) if isinstance(text_or_value, str) else text_or_value
    import hashlib  # here: hashlib loads OpenSSL (~3.5 MB); only a _last_checkpoint needs it

    return hashlib.md5(canonicalize_json(value).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class LastCheckpointInfo:
    version: int
    size: int
    parts: int | None = None
    size_in_bytes: int | None = None
    num_of_add_files: int | None = None
    checkpoint_schema: dict[str, Any] | None = None
    tags: dict[str, str] | None = None
    v2_checkpoint: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"version": self.version, "size": self.size}
        if self.parts is not None:
            d["parts"] = self.parts
        for key, value in (
            ("sizeInBytes", self.size_in_bytes),
            ("numOfAddFiles", self.num_of_add_files),
            ("checkpointSchema", self.checkpoint_schema),
            ("tags", self.tags),
            ("v2Checkpoint", self.v2_checkpoint),
        ):
            if value is not None:
                d[key] = value
        return d

    def to_json(self) -> str:
        d = self.to_dict()
        d["checksum"] = json_checksum(d)
        return json.dumps(d, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> LastCheckpointInfo:
        """Parse and verify; raises ValueError on anything wrong (bad JSON, duplicate keys,
        missing version/size, checksum mismatch)."""
        raw = _loads_exact(text)
        expected = raw.get("checksum")
        if expected is not None and json_checksum(raw) != expected:
            raise ValueError("checksum mismatch")
        d = json.loads(text)
        if not isinstance(d.get("version"), int) or not isinstance(d.get("size"), int):
            raise ValueError("'version' and 'size' must be integers")
        known = {
            "version",
            "size",
            "parts",
            "sizeInBytes",
            "numOfAddFiles",
            "checkpointSchema",
            "tags",
            "v2Checkpoint",
            "checksum",
        }
        return cls(
            version=d["version"],
            size=d["size"],
            parts=d.get("parts"),
            size_in_bytes=d.get("sizeInBytes"),
            num_of_add_files=d.get("numOfAddFiles"),
            checkpoint_schema=d.get("checkpointSchema"),
            tags=d.get("tags"),
            v2_checkpoint=d.get("v2Checkpoint"),
            extra={k: v for k, v in d.items() if k not in known},
        )


def read_last_checkpoint(store: LogStore, log_uri: str) -> LastCheckpointInfo | None:
    """The hint, or ``None`` when it is missing or unusable (a warning says why)."""
    path = log_path(log_uri, LAST_CHECKPOINT)
    try:
        text = "\n".join(store.read(path)).strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("cannot read %s (%s); listing the log instead", path, exc)
        return None
    if not text:
        log.warning("%s is empty; listing the log instead", path)
        return None
    try:
        return LastCheckpointInfo.from_json(text)
    except (ValueError, TypeError) as exc:
        log.warning("%s is corrupt (%s); listing the log instead", path, exc)
        return None


def write_last_checkpoint(store: LogStore, log_uri: str, info: LastCheckpointInfo) -> None:
    store.write(log_path(log_uri, LAST_CHECKPOINT), [info.to_json()], overwrite=True)
