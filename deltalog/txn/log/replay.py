"""Columnar log replay: the table state as Arrow tables, and reconciliation.

The state of a table is small Python objects (protocol, metadata, application
transactions, domain metadata) plus two Arrow tables: the active ``add`` actions and the
``remove`` tombstones, with the checkpoint's column names (:data:`ADD_SCHEMA`,
:data:`REMOVE_SCHEMA`). A logical file is keyed by (URI-decoded path, deletion-vector
unique id); the newest ``add``/``remove`` per key wins, as PROTOCOL "Action Reconciliation"
says. Adds in the state carry ``dataChange=false``.

Replay is columnar end to end:

- the file actions of JSON commits are kept as their raw lines (:class:`CommitBatch`) and
  parsed in bulk by ``pyarrow.json`` with an explicit schema (:func:`parse_file_lines`);
  only the other, rare actions (protocol, metaData, txn, domainMetadata, commitInfo) go
  through ``json.loads``. A chunk pyarrow cannot parse is decoded line by line to name the
  file and line that is wrong;
- a state is a *stream* of ``(adds, removes)`` batches (:class:`FileSource`): an in-memory
  :class:`LogState` or a checkpoint read in record batches. :func:`reconcile` drops from
  the stream the files that newer commits touched (a hash lookup on the path column, the
  key computed only for the candidate rows) and appends the commits' own actions, so a
  checkpoint can be replayed or rewritten without ever holding two copies of the table.
"""

from __future__ import annotations

import json
import os
import threading
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from typing import Protocol as TypingProtocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.txn.protocol.actions import (
    Action,
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
    action_to_dict,
    action_to_line,
    decode_path,
)
from deltalog.txn.protocol.arrow_build import (
    empty_table,
    false_array,
    int32_array,
    int64_array,
    int64_scalar,
    null_array,
    string_array,
    string_scalar,
)
from deltalog.txn.protocol.errors import CorruptLogError

__all__ = [
    "ADD_SCHEMA",
    "DV_TYPE",
    "REMOVE_SCHEMA",
    "CommitBatch",
    "FileSource",
    "LineOrigin",
    "LogState",
    "key_column",
    "normalize_struct",
    "parse_file_lines",
    "reconcile",
]


def parse_log_object(line: str, path: str, n: int) -> dict[str, Any]:
    """One log line as a JSON object, or :class:`CorruptLogError` naming the file and line."""
    try:
        obj = json.loads(line)
    except ValueError as exc:
        raise CorruptLogError(path, f"line {n} is not valid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise CorruptLogError(path, f"line {n} is not a JSON object")
    return obj


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

# What pyarrow's JSON reader is told about file actions: every field but the maps (the
# reader has no map type; partitionValues and tags are inferred as structs and converted).
_JSON_SCHEMA = pa.schema(
    [
        ("add", pa.struct([f for f in ADD_SCHEMA if f.type != STRING_MAP])),
        ("remove", pa.struct([f for f in REMOVE_SCHEMA if f.type != STRING_MAP])),
    ]
)


def _json_schema(partition_keys: Sequence[str]) -> pa.Schema:
    """:data:`_JSON_SCHEMA` with ``partitionValues`` typed as a struct of strings when the
    partition keys are known: pyarrow would otherwise infer date-like values
    (``"2024-01-01"``) as timestamps and lose their text."""
    if not partition_keys:
        return _JSON_SCHEMA
    pv = pa.field("partitionValues", pa.struct([(k, pa.string()) for k in dict.fromkeys(partition_keys)]))
    return pa.schema([pa.field(f.name, pa.struct([*f.type, pv])) for f in _JSON_SCHEMA])


_FILE_LINE_PREFIXES = ('{"add":', '{"remove":')
_CHUNK_BYTES = 4 << 20


# -- small Arrow helpers ------------------------------------------------------------------


def _combine(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


def _cast_child(values: pa.Array, target: pa.DataType) -> pa.Array:
    if values.type == target:
        return values
    if pa.types.is_struct(target) and pa.types.is_struct(values.type):
        assert isinstance(values, pa.StructArray)
        have = {values.type.field(i).name for i in range(values.type.num_fields)}
        children = [
            _cast_child(values.field(f.name), f.type) if f.name in have else null_array(len(values), f.type)
            for f in target
        ]
        mask = pc.invert(values.is_valid()) if values.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if target == STRING_MAP and pa.types.is_struct(values.type):
        assert isinstance(values, pa.StructArray)
        return _struct_to_map(values)
    return values.cast(target)


def _bools(arr: pa.BooleanArray) -> np.ndarray:
    """A non-null boolean array as numpy (``to_numpy`` goes through the pandas check)."""
    bits = np.frombuffer(arr.buffers()[1], dtype=np.uint8)
    return np.unpackbits(bits, bitorder="little")[arr.offset : arr.offset + len(arr)].astype(bool)


def _struct_to_map(col: pa.StructArray, *, drop_null_values: bool = False) -> pa.MapArray:
    """A JSON object read as a struct (one field per key seen) as ``map<string, string>``."""
    n = len(col)
    k = col.type.num_fields
    mask = pc.invert(col.is_valid()) if col.null_count else None
    if k == 0 or n == 0:
        offsets = int32_array(np.zeros(n + 1, dtype=np.int32))
        empty = string_array([])
        return pa.MapArray.from_arrays(offsets, empty, empty, mask=mask)
    names = string_array([col.type.field(i).name for i in range(k)])
    if any(pa.types.is_timestamp(col.type.field(i).type) for i in range(k)):
        # pyarrow.json infers date-like strings ("2024-01-01") as timestamps: the text is lost
        raise pa.ArrowInvalid("a map value was inferred as a timestamp; the original text is needed")
    children = [c if c.type == pa.string() else c.cast(pa.string()) for c in col.flatten()]
    # row i, field j sits at j*n + i in the concatenation; the map wants row-major order
    order = (np.arange(k, dtype=np.int64)[None, :] * n + np.arange(n, dtype=np.int64)[:, None]).ravel()
    items = pa.concat_arrays(children).take(int64_array(order))
    keys = names.take(int32_array(np.tile(np.arange(k, dtype=np.int32), n)))
    counts = np.full(n, k, dtype=np.int32)
    if drop_null_values and items.null_count:
        valid = _bools(items.is_valid())
        counts = valid.reshape(n, k).sum(axis=1, dtype=np.int32)
        keep = items.is_valid()
        items = items.filter(keep)
        keys = keys.filter(keep)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    return pa.MapArray.from_arrays(int32_array(offsets), keys, items, mask=mask)


def normalize_struct(column: pa.Array | pa.ChunkedArray, schema: pa.Schema) -> pa.Table:
    """Turn a struct column read from a checkpoint or a commit (any writer's field set and
    integer widths) into a table with exactly ``schema``'s columns, one row per non-null
    struct; missing fields are null."""
    col = _combine(column)
    assert isinstance(col, pa.StructArray)
    if col.null_count == len(col):
        return empty_table(schema)
    if col.null_count:
        col = col.filter(col.is_valid())
        assert isinstance(col, pa.StructArray)
    names = {col.type.field(i).name: i for i in range(col.type.num_fields)}
    arrays = []
    n = len(col)
    for f in schema:
        if f.name in names:
            child = col.field(names[f.name])
            if child.null_count == n:
                arrays.append(null_array(n, f.type))
            elif f.name == "tags" and pa.types.is_struct(child.type):
                assert isinstance(child, pa.StructArray)
                arrays.append(_struct_to_map(child, drop_null_values=True))
            else:
                arrays.append(_cast_child(child, f.type))
        else:
            arrays.append(null_array(n, f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def _to_decode(paths: pa.Array) -> pa.Array:
    """The rows of a path column that :func:`decode_path` changes: escaped, or ``file:`` URIs."""
    return pc.or_(pc.match_substring(paths, "%"), pc.starts_with(paths, pattern="file:"))


def _decode_paths(paths: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A path column through :func:`decode_path`; only the rows it changes go through Python."""
    paths = _combine(paths)
    mask = _to_decode(paths)
    if not pc.any(mask).as_py():
        return paths
    idx = pc.indices_nonzero(mask)
    decoded = string_array([decode_path(p) for p in paths.take(idx).to_pylist()])
    return pc.replace_with_mask(paths, mask, decoded)


def key_column(table: pa.Table) -> pa.Array:
    """The reconciliation key of each row: decoded path, US, DV unique id (or empty)."""
    return _key_and_path(table)[0]


def _key_and_path(table: pa.Table) -> tuple[pa.Array, pa.Array]:
    path = _decode_paths(table.column("path"))
    empty = string_scalar("")
    sep = string_scalar("\x1f")
    dv = _combine(table.column("deletionVector"))
    if dv.null_count == len(dv):
        return pc.binary_join_element_wise(path, empty, sep), path
    storage = pc.struct_field(dv, "storageType")
    inline = pc.struct_field(dv, "pathOrInlineDv")
    offset = pc.struct_field(dv, "offset")
    offset_str = pc.if_else(
        pc.is_null(offset),
        empty,
        pc.binary_join_element_wise(string_scalar("@"), pc.cast(offset, pa.string()), empty),
    )
    dv_id = pc.binary_join_element_wise(storage, inline, offset_str, empty)
    dv_id = pc.if_else(pc.is_null(dv), empty, pc.fill_null(dv_id, empty))
    return _combine(pc.binary_join_element_wise(path, dv_id, sep)), path


# -- parsing commit lines -------------------------------------------------------------------


@dataclass
class LineOrigin:
    """Where the file-action lines from ``start`` on came from (for error messages)."""

    start: int
    path: str


def _locate(sources: Sequence[LineOrigin], index: int) -> str:
    found = sources[0].path if sources else "<commit>"
    for s in sources:
        if s.start > index:
            break
        found = s.path
    return found


def _slow_tables(
    lines: Sequence[str], line_numbers: Sequence[int], sources: Sequence[LineOrigin], offset: int
) -> tuple[pa.Table, pa.Table]:
    """The file actions of ``lines`` decoded one by one: names the bad file and line."""
    adds: list[dict[str, Any]] = []
    add_order: list[int] = []
    removes: list[dict[str, Any]] = []
    remove_order: list[int] = []
    for i, line in enumerate(lines):
        where = _locate(sources, offset + i)
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise CorruptLogError(where, f"line {line_numbers[i]} is not valid JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise CorruptLogError(where, f"line {line_numbers[i]} is not a JSON object")
        for key, bodies, order, struct in (
            ("add", adds, add_order, ADD_STRUCT),
            ("remove", removes, remove_order, REMOVE_STRUCT),
        ):
            body = obj.get(key)
            if body is None:
                continue
            try:
                if not isinstance(body, dict) or not isinstance(body.get("path"), str):
                    raise ValueError("'path' is missing or not a string")
                pa.array([body], struct)
            except (pa.ArrowException, ValueError, TypeError) as exc:
                raise CorruptLogError(where, f"line {line_numbers[i]}: malformed {key} action ({exc})") from None
            bodies.append(body)
            order.append(offset + i)
    add_t = pa.Table.from_struct_array(pa.array(adds, ADD_STRUCT)) if adds else empty_table(ADD_SCHEMA)
    rem_t = pa.Table.from_struct_array(pa.array(removes, REMOVE_STRUCT)) if removes else empty_table(REMOVE_SCHEMA)
    return (
        add_t.append_column(ORDER, int64_array(add_order)),
        rem_t.append_column(ORDER, int64_array(remove_order)),
    )


def _fast_tables(lines: Sequence[str], offset: int, partition_keys: Sequence[str] = ()) -> tuple[pa.Table, pa.Table]:
    import pyarrow.json as pj

    body = "\n".join(lines).encode("utf-8")
    table = pj.read_json(
        pa.BufferReader(body),
        read_options=pj.ReadOptions(block_size=len(body) + 1, use_threads=False),
        parse_options=pj.ParseOptions(
            explicit_schema=_json_schema(partition_keys),
            unexpected_field_behavior="infer",
            newlines_in_values=False,
        ),
    )
    if table.num_rows != len(lines):
        raise pa.ArrowInvalid(f"read {table.num_rows} rows from {len(lines)} lines")
    out = []
    for name, schema in (("add", ADD_SCHEMA), ("remove", REMOVE_SCHEMA)):
        col = _combine(table.column(name))
        valid = col.is_valid()
        normalized = normalize_struct(col, schema)
        if pc.any(pc.is_null(normalized.column("path"))).as_py():
            raise pa.ArrowInvalid(f"a {name} action without a path")
        normalized = _exact_partition_values(normalized, col, valid, lines, name)
        order = pc.add(pc.cast(pc.indices_nonzero(valid), pa.int64()), int64_scalar(offset))
        out.append(normalized.append_column(ORDER, order))
    return out[0], out[1]


def _exact_partition_values(
    normalized: pa.Table, col: pa.StructArray, valid: pa.Array, lines: Sequence[str], name: str
) -> pa.Table:
    """``partitionValues`` with exactly the keys each line had.

    pyarrow's JSON reader gives a chunk one struct type holding every key any line of it
    had, so a key a line lacks reads as null, like a key the line set to null; the
    protocol's ``partitionValues`` is a map, and the two differ (Delta keeps the map as
    written). Only the rows with a null value are ambiguous: those few lines are decoded
    again to read their own keys."""
    if col.type.get_field_index("partitionValues") < 0:
        return normalized
    pv = col.field("partitionValues")
    if not pa.types.is_struct(pv.type) or pv.type.num_fields == 0 or len(pv) == 0:
        return normalized
    any_null = pc.is_null(pv.field(0))
    for i in range(1, pv.type.num_fields):
        any_null = pc.or_(any_null, pc.is_null(pv.field(i)))
    ambiguous = pc.and_(pc.and_(valid, pv.is_valid()), any_null)
    if not pc.any(ambiguous).as_py():
        return normalized
    keys: list[str] = []
    items: list[str | None] = []
    offsets = [0]
    for i in pc.indices_nonzero(ambiguous).to_pylist():
        for k, v in json.loads(lines[i])[name]["partitionValues"].items():
            keys.append(k)
            items.append(v if v is None or isinstance(v, str) else json.dumps(v))
        offsets.append(len(keys))
    exact = pa.MapArray.from_arrays(int32_array(offsets), string_array(keys), string_array(items))
    rows = np.array(pc.indices_nonzero(ambiguous.filter(valid)).to_pylist(), dtype=np.int64)
    column = normalized.column("partitionValues").combine_chunks()
    take = np.arange(len(column), dtype=np.int64)
    take[rows] = len(column) + np.arange(len(rows), dtype=np.int64)
    fixed = pa.concat_arrays([column, exact]).take(int64_array(take))
    return normalized.set_column(normalized.schema.get_field_index("partitionValues"), "partitionValues", fixed)


def parse_file_lines(
    lines: Sequence[str],
    line_numbers: Sequence[int] = (),
    sources: Sequence[LineOrigin] = (),
    partition_keys: Sequence[str] = (),
) -> tuple[pa.Table, pa.Table]:
    """(adds, removes) of raw ``add``/``remove`` JSON lines, each with the ``__order``
    column (the line's index). Parsed by pyarrow in chunks of about 4 MB, on several
    threads when there are several (pyarrow parses without the GIL); a chunk pyarrow
    rejects is decoded line by line, raising :class:`CorruptLogError` naming the file and
    line. ``partition_keys``: the ``partitionValues`` keys the table uses (their values
    are read as text, never inferred)."""
    numbers: Sequence[int] = line_numbers or range(1, len(lines) + 1)
    bounds: list[tuple[int, int]] = []
    start = 0
    while start < len(lines):
        end, size = start, 0
        while end < len(lines) and (size < _CHUNK_BYTES or end == start):
            size += len(lines[end]) + 1
            end += 1
        bounds.append((start, end))
        start = end
    if not bounds:
        return _empty_ordered(ADD_SCHEMA), _empty_ordered(REMOVE_SCHEMA)

    def parse(bound: tuple[int, int]) -> tuple[pa.Table, pa.Table]:
        lo, hi = bound
        try:
            return _fast_tables(lines[lo:hi], lo, partition_keys)
        except (pa.ArrowException, ValueError):
            return _slow_tables(lines[lo:hi], numbers[lo:hi], sources, lo)

    if len(bounds) == 1:
        parts = [parse(bounds[0])]
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(len(bounds), os.cpu_count() or 1, 8)) as pool:
            parts = list(pool.map(parse, bounds))
    return pa.concat_tables([a for a, _ in parts]), pa.concat_tables([r for _, r in parts])


def _empty_ordered(schema: pa.Schema) -> pa.Table:
    return empty_table(schema).append_column(ORDER, pa.nulls(0, pa.int64()))


# -- commit batches -------------------------------------------------------------------------


@dataclass
class CommitBatch:
    """The actions of one or more consecutive commits, in log order: file actions as their
    raw JSON lines (parsed in bulk later), the rest as typed objects."""

    file_lines: list[str] = field(default_factory=list)
    line_numbers: array[int] = field(default_factory=lambda: array("i"))
    sources: list[LineOrigin] = field(default_factory=list)
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    txns: dict[str, SetTransaction] = field(default_factory=dict)
    domains: dict[str, DomainMetadata] = field(default_factory=dict)
    commit_infos: dict[int, dict[str, Any]] = field(default_factory=dict)
    # the partitionValues keys of the table (physical names), so bulk parsing reads them as text
    partition_keys: tuple[str, ...] = ()

    def add_lines(self, version: int, lines: Iterable[str], path: str) -> None:
        """Take the lines of commit file ``path`` (``version``); unknown actions are ignored."""
        self.sources.append(LineOrigin(len(self.file_lines), path))
        file_lines = self.file_lines
        numbers = self.line_numbers
        for n, line in enumerate(lines, 1):
            if line.startswith(_FILE_LINE_PREFIXES):
                file_lines.append(line)
                numbers.append(n)
                continue
            if not line.strip():
                continue
            obj = parse_log_object(line, path, n)
            try:
                self.add_raw(version, obj, n)
            except (KeyError, TypeError, ValueError) as exc:
                raise CorruptLogError(path, f"line {n}: malformed action ({exc!r})") from None

    def add_raw(self, version: int, obj: dict[str, Any], line_number: int = 0) -> None:
        """Take one decoded log line (``{"add": {...}}``); unknown actions are ignored."""
        for key in ("add", "remove"):
            body = obj.get(key)
            if body is not None:
                self.file_lines.append(json.dumps({key: body}, separators=(",", ":")))
                self.line_numbers.append(line_number)
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
        self.sources.append(LineOrigin(len(self.file_lines), f"<commit {version}>"))
        for n, action in enumerate(actions, 1):
            if isinstance(action, (AddFile, RemoveFile)):
                self.file_lines.append(action_to_line(action))
                self.line_numbers.append(n)
            elif isinstance(action, CommitInfo):
                self.commit_infos.setdefault(version, action.to_dict())
            elif isinstance(action, Metadata):
                self.metadata = action
            elif isinstance(action, Protocol):
                self.protocol = action
            elif isinstance(action, SetTransaction):
                self.txns[action.app_id] = action
            elif isinstance(action, DomainMetadata):
                self.domains[action.domain] = action
            else:
                self.add_raw(version, action_to_dict(action), n)

    _parsed: tuple[pa.Table, pa.Table] | None = None
    _num_parsed: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def num_file_actions(self) -> int:
        return len(self.file_lines) + self._num_parsed

    @property
    def has_file_actions(self) -> bool:
        return self.num_file_actions > 0

    def parse(self) -> CommitBatch:
        """Parse the file-action lines now (raising :class:`CorruptLogError` for a bad one)
        and keep the Arrow tables instead of the text."""
        with self._lock:
            self._parse_locked()
        return self

    def _parse_locked(self) -> None:
        if self.file_lines:
            adds, removes = parse_file_lines(self.file_lines, self.line_numbers, self.sources, self.partition_keys)
            if self._parsed is not None:
                offset = pc.add(adds.column(ORDER), int64_scalar(self._num_parsed))
                adds = adds.set_column(adds.schema.get_field_index(ORDER), ORDER, offset)
                offset = pc.add(removes.column(ORDER), int64_scalar(self._num_parsed))
                removes = removes.set_column(removes.schema.get_field_index(ORDER), ORDER, offset)
                adds = pa.concat_tables([self._parsed[0], adds])
                removes = pa.concat_tables([self._parsed[1], removes])
            self._parsed = (adds, removes)
            self._num_parsed += len(self.file_lines)
            self.file_lines = []
            self.line_numbers = array("i")
            self.sources = []

    @classmethod
    def concat_files(cls, batches: Sequence[CommitBatch]) -> CommitBatch:
        """The file actions of consecutive batches as one batch, in log order."""
        if len(batches) == 1:
            return batches[0]
        merged = cls(partition_keys=tuple(dict.fromkeys(k for b in batches for k in b.partition_keys)))
        for batch in batches:
            if batch._parsed is not None:
                batch.parse()
                merged.parse()
                assert batch._parsed is not None
                adds, removes = batch._parsed
                shift = int64_scalar(merged._num_parsed)
                adds = adds.set_column(adds.schema.get_field_index(ORDER), ORDER, pc.add(adds.column(ORDER), shift))
                removes = removes.set_column(
                    removes.schema.get_field_index(ORDER), ORDER, pc.add(removes.column(ORDER), shift)
                )
                if merged._parsed is None:
                    merged._parsed = (adds, removes)
                else:
                    merged._parsed = (
                        pa.concat_tables([merged._parsed[0], adds]),
                        pa.concat_tables([merged._parsed[1], removes]),
                    )
                merged._num_parsed += batch._num_parsed
                continue
            offset = len(merged.file_lines)
            merged.sources.extend(LineOrigin(s.start + offset, s.path) for s in batch.sources)
            merged.file_lines.extend(batch.file_lines)
            merged.line_numbers.extend(batch.line_numbers)
        return merged

    def tables(self) -> tuple[pa.Table, pa.Table]:
        """(adds, removes) of the batch, each with the key and the log order."""
        self.parse()
        if self._parsed is None:
            return _with_key(_empty_ordered(ADD_SCHEMA)), _with_key(_empty_ordered(REMOVE_SCHEMA))
        adds, removes = self._parsed
        return _with_key(adds), _with_key(removes)


def _with_key(table: pa.Table) -> pa.Table:
    if not len(table):
        return table.append_column(KEY, pa.nulls(0, pa.string()))
    return table.append_column(KEY, key_column(table))


# -- states and reconciliation ----------------------------------------------------------------


class FileSource(TypingProtocol):
    """Something that yields a state's file actions as ``(adds, removes)`` batches with
    :data:`ADD_SCHEMA` / :data:`REMOVE_SCHEMA` columns (adds with ``dataChange=false``)."""

    def file_batches(self) -> Iterator[tuple[pa.Table, pa.Table]]: ...


def _newest_per_key(adds: pa.Table, removes: pa.Table) -> tuple[pa.Table, pa.Table]:
    keys = pa.concat_arrays([_combine(adds.column(KEY)), _combine(removes.column(KEY))])
    if len(keys) == len(pc.unique(keys)):
        return adds, removes
    orders = pa.concat_arrays([_combine(adds.column(ORDER)), _combine(removes.column(ORDER))])
    # sort by (key, order); the last row of each run of equal keys is the newest action
    idx = pc.sort_indices(pa.table({"k": keys, "o": orders}), sort_keys=[("k", "ascending"), ("o", "ascending")])
    sorted_keys = keys.take(idx)
    n = len(sorted_keys)
    last = pa.concat_arrays(
        [pc.not_equal(sorted_keys.slice(0, n - 1), sorted_keys.slice(1)), pc.invert(false_array(1))]
    )
    winners = orders.take(idx).filter(last)
    return (
        adds.filter(pc.is_in(adds.column(ORDER), value_set=winners)),
        removes.filter(pc.is_in(removes.column(ORDER), value_set=winners)),
    )


def _drop_touched(table: pa.Table, keys: pa.Array, paths: pa.Array) -> pa.Table:
    """``table`` without the rows whose key is in ``keys`` (``paths``: their decoded paths).
    The path is matched first with one hash lookup per row; keys are built only for the
    rows whose path matched."""
    if not len(table) or not len(keys):
        return table
    path = _combine(table.column("path"))
    cand = pc.is_in(path, value_set=paths)
    if pc.any(_to_decode(path)).as_py():
        cand = pc.or_(cand, pc.is_in(_decode_paths(path), value_set=paths))
    if not pc.any(cand).as_py():
        return table
    hit = pc.is_in(key_column(table.filter(cand)), value_set=keys)
    drop = pc.replace_with_mask(cand, cand, hit)
    return table.filter(pc.invert(drop))


def _strip(table: pa.Table, schema: pa.Schema, data_change_false: bool) -> pa.Table:
    table = table.drop_columns([KEY, ORDER])
    if data_change_false:
        i = table.schema.get_field_index("dataChange")
        table = table.set_column(i, "dataChange", false_array(len(table)))
    return table if table.schema == schema else table.cast(schema)


def reconcile(base: FileSource, batch: CommitBatch | None) -> Iterator[tuple[pa.Table, pa.Table]]:
    """The file actions of ``base`` plus ``batch``'s commits, as a stream of batches."""
    if batch is None or not batch.has_file_actions:
        yield from base.file_batches()
        return
    new_adds, new_removes = _newest_per_key(*batch.tables())
    keys = pa.concat_arrays([_combine(new_adds.column(KEY)), _combine(new_removes.column(KEY))])
    paths = pc.unique(
        pa.concat_arrays([_decode_paths(new_adds.column("path")), _decode_paths(new_removes.column("path"))])
    )
    for adds, removes in base.file_batches():
        yield _drop_touched(adds, keys, paths), _drop_touched(removes, keys, paths)
    yield _strip(new_adds, ADD_SCHEMA, True), _strip(new_removes, REMOVE_SCHEMA, False)


@dataclass(frozen=True)
class LogState:
    """A reconciled table state: ``adds``/``removes`` in :data:`ADD_SCHEMA` / :data:`REMOVE_SCHEMA`."""

    protocol: Protocol | None
    metadata: Metadata | None
    txns: dict[str, SetTransaction]
    domains: dict[str, DomainMetadata]
    adds: pa.Table
    removes: pa.Table

    @classmethod
    def empty(cls) -> LogState:
        return cls(None, None, {}, {}, empty_table(ADD_SCHEMA), empty_table(REMOVE_SCHEMA))

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
        adds = adds.set_column(adds.schema.get_field_index("dataChange"), "dataChange", false_array(len(adds)))
        return cls(protocol, metadata, txns, domains, adds, removes)

    @classmethod
    def collect(cls, non_file: LogState, batches: Iterable[tuple[pa.Table, pa.Table]]) -> LogState:
        """``non_file``'s protocol, metadata, txns and domains with the file actions of
        ``batches`` gathered into two tables."""
        adds: list[pa.Table] = []
        removes: list[pa.Table] = []
        for a, r in batches:
            if len(a):
                adds.append(a)
            if len(r):
                removes.append(r)
        return replace(
            non_file,
            adds=pa.concat_tables(adds) if adds else empty_table(ADD_SCHEMA),
            removes=pa.concat_tables(removes) if removes else empty_table(REMOVE_SCHEMA),
        )

    def file_batches(self) -> Iterator[tuple[pa.Table, pa.Table]]:
        yield self.adds, self.removes

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
        state = self.with_non_file_actions(batch)
        if not batch.has_file_actions:
            return state
        return LogState.collect(state, reconcile(self, batch))

    # -- views -----------------------------------------------------------------------

    def files_table(self) -> pa.Table:
        return self.adds

    def removes_table(self) -> pa.Table:
        return self.removes


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


def partition_keys(metadata: Metadata | None) -> tuple[str, ...]:
    """The keys of ``partitionValues`` in the table's file actions (physical names)."""
    if metadata is None or not metadata.partition_columns:
        return ()
    if metadata.properties.column_mapping_mode == "none":
        return tuple(metadata.partition_columns)
    try:
        from deltalog.txn.protocol.column_mapping import physical_partition_names
        from deltalog.txn.protocol.schema import parse_schema

        names = physical_partition_names(parse_schema(metadata.schema_string), metadata.partition_columns)
    except (ValueError, KeyError, LookupError):
        return tuple(metadata.partition_columns)
    return tuple(names.values())
