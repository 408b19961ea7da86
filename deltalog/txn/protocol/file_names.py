"""Names of the files in ``_delta_log``, built and recognised in this one place (Delta's
``FileNames``; PROTOCOL "Delta Log Entries"):

- commit (delta file) ``%020d.json``; checksum ``%020d.crc``
- classic checkpoint ``%020d.checkpoint.parquet``
- multi-part checkpoint ``%020d.checkpoint.%010d.%010d.parquet`` (part, parts)
- V2 checkpoint ``%020d.checkpoint.<uuid>.json|parquet``; its sidecars ``_sidecars/<uuid>.parquet``
- log compaction ``%020d.%020d.compacted.json``

Names only: no I/O. Join them to a log URI with :func:`log_path`.
"""

from __future__ import annotations

import re
import uuid

__all__ = [
    "CHECKPOINT_CLASSIC_RE",
    "CHECKPOINT_MULTIPART_RE",
    "CHECKPOINT_V2_RE",
    "CHECKSUM_RE",
    "COMPACTED_DELTA_RE",
    "DELTA_FILE_RE",
    "LAST_CHECKPOINT",
    "LOG_DIR",
    "SIDECAR_DIR",
    "checkpoint_file_singular",
    "checkpoint_file_with_parts",
    "checkpoint_part_file",
    "checksum_file",
    "delta_file",
    "file_version",
    "listing_prefix",
    "log_path",
    "padded_version",
    "v2_checkpoint_file",
]

LOG_DIR = "_delta_log"
LAST_CHECKPOINT = "_last_checkpoint"
SIDECAR_DIR = "_sidecars"

DELTA_FILE_RE = re.compile(r"^(\d{20})\.json$")
CHECKSUM_RE = re.compile(r"^(\d{20})\.crc$")
CHECKPOINT_CLASSIC_RE = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
CHECKPOINT_MULTIPART_RE = re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")
CHECKPOINT_V2_RE = re.compile(r"^(\d{20})\.checkpoint\.([0-9a-fA-F-]{36})\.(json|parquet)$")
COMPACTED_DELTA_RE = re.compile(r"^(\d{20})\.(\d{20})\.compacted\.json$")


def padded_version(version: int) -> str:
    """``00000000000000000042`` for 42: the 20-digit prefix every log file name starts with."""
    if version < 0:
        raise ValueError(f"a table version is >= 0, got {version}")
    return f"{version:020d}"


def delta_file(version: int) -> str:
    """The commit of ``version``: ``00000000000000000042.json``."""
    return f"{padded_version(version)}.json"


def checksum_file(version: int) -> str:
    """The checksum (``.crc``) of ``version``: ``00000000000000000042.crc``."""
    return f"{padded_version(version)}.crc"


def checkpoint_file_singular(version: int) -> str:
    """A classic single-file checkpoint: ``00000000000000000042.checkpoint.parquet``."""
    return f"{padded_version(version)}.checkpoint.parquet"


def checkpoint_part_file(version: int, part: int, num_parts: int) -> str:
    """Part ``part`` (1-based) of a multi-part checkpoint of ``num_parts`` files."""
    if not 1 <= part <= num_parts:
        raise ValueError(f"checkpoint part {part} is not in 1..{num_parts}")
    return f"{padded_version(version)}.checkpoint.{part:010d}.{num_parts:010d}.parquet"


def checkpoint_file_with_parts(version: int, num_parts: int) -> list[str]:
    """Every file of a multi-part checkpoint, in part order."""
    return [checkpoint_part_file(version, part, num_parts) for part in range(1, num_parts + 1)]


def v2_checkpoint_file(version: int, fmt: str, name: str | None = None) -> str:
    """A V2 checkpoint's top-level file, ``<version>.checkpoint.<uuid>.json|parquet`` (a new
    UUID unless ``name`` gives one)."""
    if fmt not in ("json", "parquet"):
        raise ValueError(f"a V2 checkpoint is json or parquet, not {fmt!r}")
    return f"{padded_version(version)}.checkpoint.{name or uuid.uuid4()}.{fmt}"


def listing_prefix(version: int) -> str:
    """Where a ``list_from`` starts to see every log file of ``version`` and later:
    ``00000000000000000042`` (Delta's ``listingPrefix`` adds a ``.``; no log file is named
    by the bare digits, so both list the same files)."""
    return padded_version(version)


def log_path(log_uri: str, name: str) -> str:
    """``name`` (a file name from this module, or a relative path such as a sidecar's)
    under the ``_delta_log`` at ``log_uri``."""
    return f"{log_uri.rstrip('/')}/{name}"


def file_version(name: str) -> int | None:
    """The version a ``_delta_log`` file belongs to (commit, checkpoint, checksum), else None."""
    for regex in (DELTA_FILE_RE, CHECKPOINT_CLASSIC_RE, CHECKPOINT_MULTIPART_RE, CHECKPOINT_V2_RE, CHECKSUM_RE):
        m = regex.match(name)
        if m:
            return int(m.group(1))
    return None
