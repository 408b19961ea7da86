"""The files CONVERT TO DELTA takes from a directory, as Delta's file manifests choose them.

A directory a Structured Streaming file sink wrote holds its own log, ``_spark_metadata``
(Spark's ``FileStreamSinkLog``): its files are the directory's, and files written there by
anything else are not (Delta's ``MetadataLogFileManifest``, on unless
``spark.databricks.delta.convert.useMetadataLog`` is false). Otherwise every visible file
of the directory tree is listed (Delta's ``ManualListingFileManifest``).
"""

from __future__ import annotations

import json
import logging
from urllib.parse import unquote, urlparse

import pyarrow.fs as pafs

__all__ = ["SINK_METADATA_DIR", "list_data_files"]

log = logging.getLogger(__name__)

#: the directory of a Structured Streaming file sink's log (Spark's ``FileStreamSink.metadataDir``)
SINK_METADATA_DIR = "_spark_metadata"

_COMPACT_SUFFIX = ".compact"


def list_data_files(
    fs: pafs.FileSystem, root: str, *, use_metadata_log: bool = True
) -> list[tuple[str, pafs.FileInfo]]:
    """``(table-relative path, file info)`` of the files to convert, in path order: those the
    sink log under ``root`` names when there is one and ``use_metadata_log``, else every
    visible file (:func:`_listed_files`)."""
    sink_log = f"{root}/{SINK_METADATA_DIR}"
    if use_metadata_log and fs.get_file_info(sink_log).type == pafs.FileType.Directory:
        entries = _sink_log_files(fs, root, sink_log)
    else:
        entries = _listed_files(fs, root)
    return sorted(entries, key=lambda entry: entry[0])


def _listed_files(fs: pafs.FileSystem, root: str) -> list[tuple[str, pafs.FileInfo]]:
    """Every visible file, as Delta's listing for CONVERT (``ConvertUtils.dirNameFilter``): a
    file whose name starts with ``_`` or ``.`` is hidden, and so is such a directory unless it
    is a ``column=value`` one (a partition column may start with either)."""
    entries = []
    for info in fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True)):
        if info.type != pafs.FileType.File:
            continue
        rel = info.path[len(root) + 1 :]
        *dirs, name = rel.split("/")
        if _hidden(name) or any(_hidden(d) and "=" not in d for d in dirs):
            continue
        entries.append((rel, info))
    return entries


def _hidden(name: str) -> bool:
    return name.startswith(("_", "."))


def _sink_log_files(fs: pafs.FileSystem, root: str, sink_log: str) -> list[tuple[str, pafs.FileInfo]]:
    """The files the sink log's latest state holds (Spark's ``CompactibleFileStreamLog``:
    the newest ``N.compact`` batch and the batches after it, an entry's ``delete`` action
    dropping its path)."""
    batches: dict[int, str] = {}
    for info in fs.get_file_info(pafs.FileSelector(sink_log, allow_not_found=True)):
        name = info.base_name
        number = name[: -len(_COMPACT_SUFFIX)] if name.endswith(_COMPACT_SUFFIX) else name
        if info.type == pafs.FileType.File and number.isdigit():
            batches[int(number)] = info.path
    compacted = [b for b, path in batches.items() if path.endswith(_COMPACT_SUFFIX)]
    first = max(compacted, default=0)
    live: dict[str, pafs.FileInfo] = {}
    for batch in sorted(b for b in batches if b >= first):
        for entry in _sink_log_entries(fs, batches[batch]):
            rel = _relative(str(entry["path"]), root)
            if entry.get("action") == "delete":
                live.pop(rel, None)
            elif not entry.get("isDir"):
                mtime_ns = int(str(entry.get("modificationTime", 0))) * 1_000_000
                size = int(str(entry.get("size", 0)))
                live[rel] = pafs.FileInfo(f"{root}/{rel}", pafs.FileType.File, mtime_ns=mtime_ns, size=size)
    log.info("CONVERT TO DELTA takes the %d files of the streaming sink log %s", len(live), sink_log)
    return list(live.items())


def _sink_log_entries(fs: pafs.FileSystem, path: str) -> list[dict[str, object]]:
    """The entries of one sink log file: a version line (``v1``), then one JSON entry a line."""
    with fs.open_input_stream(path) as f:
        lines = f.read().decode("utf-8").splitlines()
    return [json.loads(line) for line in lines[1:] if line.strip()]


def _relative(uri: str, root: str) -> str:
    """``uri`` (a sink log entry's qualified path) relative to the table directory ``root``
    (a path of the store's filesystem: ``/dir`` locally, ``bucket/dir`` on an object store)."""
    parsed = urlparse(uri)
    path = unquote(parsed.path if parsed.scheme in ("", "file") else parsed.netloc + parsed.path)
    base = root.strip("/")
    if not path.strip("/").startswith(base + "/"):
        raise ValueError(f"the streaming sink log names {uri}, which is outside the table directory {root}")
    return path.strip("/")[len(base) + 1 :]
