"""Identity columns (PROTOCOL "Identity Columns", Delta's ``IdentityColumn`` and
``GenerateIdentityValues``).

An identity column's field metadata holds ``delta.identity.start``, ``.step``,
``.allowExplicitInsert`` (all three or none) and, once values were generated,
``.highWaterMark``: the largest value generated (smallest for a negative step).

- ``GENERATED ALWAYS`` (``allowExplicitInsert`` false) refuses data that gives the column
  (:func:`check_explicit_insert`); ``BY DEFAULT`` keeps given values and does not move
  the high-water mark for them, as Delta.
- Values are generated when the data lacks the column: ``start + k * step`` beyond the
  high-water mark. Each write task takes its own range of ``TASK_RANGE`` values (task
  ``p`` generates ``base + step * (p * TASK_RANGE + i)``, ``base`` the first value after
  the high-water mark), so tasks never collide without talking to each other. (Delta
  interleaves values by the number of tasks, which the Python data source API does not
  tell a task.) Overflowing a long is refused.
- The commit moves the high-water mark to the largest generated value
  (:func:`update_high_water_marks`, Delta's ``updateSchema``/``updateToValidHighWaterMark``)
  in a metadata action, and tags ``commitInfo`` with ``delta.identity.schemaUpdate`` when
  that is the only metadata change (:func:`identity_commit_tags`). Two writers that both
  generate values both change the metadata: the one that commits second fails with
  ``MetadataChangedError`` and writes nothing (Delta's ``ConflictChecker``); a writer
  that does not change the metadata (a DELETE, an append without identity values) is not
  failed by a winning identity-only update.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from deltalog.errors import DeltaError
from deltalog.txn.protocol.actions import AddFile, Metadata, action_to_line, parse_line
from deltalog.txn.protocol.column_mapping import PHYSICAL_NAME

__all__ = [
    "ALLOW_EXPLICIT_INSERT",
    "HIGH_WATER_MARK",
    "IDENTITY_COMMITINFO_TAG",
    "START",
    "STEP",
    "TASK_RANGE",
    "IdentityColumn",
    "IdentityColumnError",
    "check_explicit_insert",
    "identity_columns",
    "identity_commit_tags",
    "is_identity_only_update",
    "pop_high_water_marks",
    "round_to_next",
    "tag_action_lines",
    "tag_high_water_marks",
    "update_high_water_marks",
    "winner_is_identity_only",
    "with_merged_high_water_marks",
    "without_high_water_marks",
]

START = "delta.identity.start"
STEP = "delta.identity.step"
HIGH_WATER_MARK = "delta.identity.highWaterMark"
ALLOW_EXPLICIT_INSERT = "delta.identity.allowExplicitInsert"
#: commitInfo tag of a commit whose only metadata change is identity high-water marks
IDENTITY_COMMITINFO_TAG = "delta.identity.schemaUpdate"
#: values each write task may generate (its range); a task needing more fails
TASK_RANGE = 1 << 32
#: the AddFile tag a write task uses to hand its high-water marks to the commit (removed
#: before the commit: it never reaches the log)
_TASK_TAG = "deltalog.identityHighWaterMarks"
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


class IdentityColumnError(DeltaError):
    """An identity column cannot be written as asked: explicit values for a
    ``GENERATED ALWAYS`` column, inconsistent identity metadata, a step of 0, a type other
    than long, or generated values that overflow a long. Nothing was written."""


@dataclass(frozen=True)
class IdentityColumn:
    name: str
    start: int
    step: int
    high_water_mark: int | None
    allow_explicit_insert: bool

    @property
    def base(self) -> int:
        """The first value to generate: just past the high-water mark, or ``start``."""
        return self.start if self.high_water_mark is None else self.high_water_mark + self.step

    def check_generable(self) -> None:
        """Refuse a high-water mark off the start/step grid: no value can be generated past
        it (Delta's ``PartitionIdentityValueGenerator`` requires it on the grid)."""
        if self.high_water_mark is not None and (self.high_water_mark - self.start) % self.step != 0:
            raise IdentityColumnError(
                f"the identity column {self.name} has a high-water mark {self.high_water_mark} that does not "
                f"follow its start {self.start} and step {self.step}; no value can be generated from it"
            )

    def values(self, task_id: int, offset: int, count: int) -> pa.Array:
        """Values ``offset .. offset + count - 1`` of task ``task_id``'s range; refused past a
        high-water mark that does not follow start and step (Delta's
        ``PartitionIdentityValueGenerator`` requires it)."""
        self.check_generable()
        if offset + count > TASK_RANGE:
            raise IdentityColumnError(
                f"a write task generated more than {TASK_RANGE} values for the identity column {self.name}; "
                "write the data in more tasks"
            )
        first = self.base + self.step * (task_id * TASK_RANGE + offset)
        last = first + self.step * max(count - 1, 0)
        if not (_LONG_MIN <= first <= _LONG_MAX and _LONG_MIN <= last <= _LONG_MAX):
            raise IdentityColumnError(
                f"generating values for the identity column {self.name} overflows a long "
                f"(start {self.start}, step {self.step}, high-water mark {self.high_water_mark})"
            )
        return pa.array(range(first, last + self.step, self.step) if count else [], pa.int64())


def _as_int(value: Any, column: str, key: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise IdentityColumnError(f"the identity column {column} has a {key} that is not a long: {value!r}") from None


def identity_columns(metadata: Metadata) -> list[IdentityColumn]:
    """The table's (top-level) identity columns; raises :class:`IdentityColumnError` on
    inconsistent metadata (Delta's ``identityColumnInconsistentMetadata``)."""
    out: list[IdentityColumn] = []
    for f in json.loads(metadata.schema_string).get("fields") or []:
        meta = f.get("metadata") or {}
        present = [k in meta for k in (START, STEP, ALLOW_EXPLICIT_INSERT)]
        if not any(present):
            continue
        name = str(f["name"])
        if not all(present):
            raise IdentityColumnError(
                f"the identity column {name} must have all of {START}, {STEP} and {ALLOW_EXPLICIT_INSERT} "
                f"(has start: {present[0]}, step: {present[1]}, allowExplicitInsert: {present[2]})"
            )
        if f.get("type") != "long":
            raise IdentityColumnError(f"the identity column {name} has type {f.get('type')}; identity columns are long")
        step = _as_int(meta[STEP], name, STEP)
        if step == 0:
            raise IdentityColumnError(f"the identity column {name} has step 0")
        hwm = meta.get(HIGH_WATER_MARK)
        allow = meta[ALLOW_EXPLICIT_INSERT]
        out.append(
            IdentityColumn(
                name,
                _as_int(meta[START], name, START),
                step,
                None if hwm is None else _as_int(hwm, name, HIGH_WATER_MARK),
                allow if isinstance(allow, bool) else str(allow).lower() == "true",
            )
        )
    return out


def check_explicit_insert(metadata: Metadata, data_columns: Iterable[str]) -> None:
    """Refuse data that gives a ``GENERATED ALWAYS AS IDENTITY`` column (Delta's
    ``DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED``)."""
    given = {c.lower() for c in data_columns}
    for column in identity_columns(metadata):
        if not column.allow_explicit_insert and column.name.lower() in given:
            raise IdentityColumnError(
                f"providing values for the GENERATED ALWAYS AS IDENTITY column {column.name} is not supported; "
                "drop the column from the data (its values are generated)"
            )


def round_to_next(start: int, step: int, value: int) -> int:
    """``value`` rounded to the next ``start + k * step`` in the step's direction (Delta's
    ``IdentityColumn.roundToNext``)."""
    offset = _exact(value - start, start, step, value)
    if offset % step == 0:
        return value
    quotient = abs(offset) // abs(step) * (1 if (offset > 0) == (step > 0) else -1)  # Java's long division
    multiple = quotient + 1 if (offset > 0) == (step > 0) else quotient
    return _exact(start + step * multiple, start, step, value)


def _exact(result: int, start: int, step: int, value: int) -> int:
    """``result`` when it is a long, as Java's ``Math.*Exact`` (else IdentityColumnError)."""
    if not _LONG_MIN <= result <= _LONG_MAX:
        raise IdentityColumnError(
            f"rounding {value} to the identity column's start {start} and step {step} overflows a long"
        )
    return result


def _updated_mark(column: IdentityColumn, candidate: int, allow_lowering: bool = False) -> int | None:
    """Delta's ``updateToValidHighWaterMark``: the new mark, or None to keep the old one.
    ``allow_lowering`` (SYNC IDENTITY under Delta's
    ``identityColumn.allowSyncIdentityToLowerHighWaterMark.enabled``) ignores the old mark."""

    def ahead(a: int, b: int) -> bool:
        return a > b if column.step > 0 else a < b

    before_start = ahead(column.start, candidate)
    rounded = round_to_next(column.start, column.step, candidate)
    old = column.high_water_mark
    new = rounded if old is None or allow_lowering or ahead(rounded, old) else old
    bad_old = old is not None and ahead(column.start, old)
    if bad_old or (not before_start and new != old):
        return new
    return None


def update_high_water_marks(
    metadata: Metadata, candidates: Mapping[str, Sequence[int]], allow_lowering: bool = False
) -> Metadata:
    """``metadata`` with each identity column's high-water mark moved to its candidates'
    largest value (smallest for a negative step); ``metadata`` itself when none moves. With
    ``allow_lowering`` a mark may also move back (SYNC IDENTITY's option)."""
    if not candidates:
        return metadata
    columns = {c.name.lower(): c for c in identity_columns(metadata)}
    wanted = {k.lower(): list(v) for k, v in candidates.items() if v}
    schema = json.loads(metadata.schema_string)
    changed = False
    for f in schema.get("fields") or []:
        column = columns.get(str(f["name"]).lower())
        marks = wanted.get(str(f["name"]).lower())
        if column is None or not marks:
            continue
        new = _updated_mark(column, max(marks) if column.step > 0 else min(marks), allow_lowering)
        if new is not None:
            f["metadata"] = {**(f.get("metadata") or {}), HIGH_WATER_MARK: new}
            changed = True
    if not changed:
        return metadata
    return replace(metadata, schema_string=json.dumps(schema, separators=(",", ":")))


def with_merged_high_water_marks(metadata: Metadata, other: Metadata) -> Metadata:
    """``metadata`` with each identity column's high-water mark raised to ``other``'s for the
    same column (matched by physical name), as Delta's ``copySchemaWithMergedHighWaterMarks``
    does when RESTORE brings back an older schema: values generated after the restored
    version are never generated again."""

    def fields(md: Metadata) -> list[dict[str, Any]]:
        return list(json.loads(md.schema_string).get("fields") or [])

    def physical(f: dict[str, Any]) -> str:
        return str((f.get("metadata") or {}).get(PHYSICAL_NAME, f["name"]))

    names = {physical(f): str(f["name"]) for f in fields(metadata)}
    candidates: dict[str, list[int]] = {}
    for f in fields(other):
        mark = (f.get("metadata") or {}).get(HIGH_WATER_MARK)
        name = names.get(physical(f))
        if mark is not None and name is not None:
            candidates[name] = [_as_int(mark, name, HIGH_WATER_MARK)]
    return update_high_water_marks(metadata, candidates)


def without_high_water_marks(metadata: Metadata) -> Metadata:
    """``metadata`` with no identity high-water mark (its schema's keys sorted)."""
    schema = json.loads(metadata.schema_string)
    for f in schema.get("fields") or []:
        (f.get("metadata") or {}).pop(HIGH_WATER_MARK, None)
    return replace(metadata, schema_string=json.dumps(schema, sort_keys=True))


def is_identity_only_update(old: Metadata | None, new: Metadata | None) -> bool:
    """True when ``new`` differs from ``old`` only in identity high-water marks."""
    if old is None or new is None or old == new:
        return False
    return bool(without_high_water_marks(old) == without_high_water_marks(new))


def identity_commit_tags(old: Metadata | None, new: Metadata | None) -> dict[str, Any]:
    """The ``commitInfo`` fields to add for a commit changing ``old`` to ``new``:
    ``{"tags": {"delta.identity.schemaUpdate": "true"}}`` for an identity-only update."""
    if is_identity_only_update(old, new):
        return {"tags": {IDENTITY_COMMITINFO_TAG: "true"}}
    return {}


def winner_is_identity_only(commit_info_extra: Mapping[str, Any]) -> bool:
    """Whether a winning commit's ``commitInfo`` marks an identity-only metadata update."""
    tags = commit_info_extra.get("tags")
    return isinstance(tags, Mapping) and str(tags.get(IDENTITY_COMMITINFO_TAG, "")).lower() == "true"


def tag_high_water_marks(add: AddFile, marks: Mapping[str, int]) -> AddFile:
    """``add`` carrying a task's generated high-water marks to the commit."""
    if not marks:
        return add
    return replace(add, tags={**(add.tags or {}), _TASK_TAG: json.dumps(dict(marks), sort_keys=True)})


def tag_action_lines(lines: Sequence[str], marks: Mapping[str, int]) -> list[str]:
    """A task's action lines with its high-water marks on every ``add``."""
    if not marks:
        return list(lines)
    out: list[str] = []
    for line in lines:
        action = parse_line(line)
        out.append(action_to_line(tag_high_water_marks(action, marks)) if isinstance(action, AddFile) else line)
    return out


def pop_high_water_marks(adds: Sequence[AddFile]) -> tuple[list[AddFile], dict[str, list[int]]]:
    """The adds without the tasks' high-water mark tags, and the marks per column."""
    out: list[AddFile] = []
    marks: dict[str, list[int]] = {}
    for add in adds:
        tags = dict(add.tags or {})
        text = tags.pop(_TASK_TAG, None)
        if text is None:
            out.append(add)
            continue
        for column, value in json.loads(text).items():
            marks.setdefault(column, []).append(int(value))
        out.append(replace(add, tags=tags or None))
    return out, marks
