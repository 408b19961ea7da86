"""Dates and timestamps that Spark wrote in its legacy hybrid calendar, read as Spark reads them.

Spark 2.4 and earlier computed dates and timestamps in the hybrid Julian + Gregorian
calendar of ``java.util``; Spark 3 and later write the proleptic Gregorian calendar unless
``spark.sql.parquet.datetimeRebaseModeInWrite`` (or ``int96RebaseModeInWrite``) is ``LEGACY``.
For the same stored number the two calendars name different days before 1582-10-15, and,
outside UTC, different wall-clock times before 1900 (``java.util`` knew no local mean time).
Spark's reader recognises such files by their footer and rebases their values
(``DataSourceUtils.datetimeRebaseSpec`` / ``int96RebaseSpec``):

- ``DATE`` and ``TIMESTAMP_MICROS``/``MILLIS`` when the file was written by Spark before
  3.0.0 or carries ``org.apache.spark.legacyDateTime``;
- ``INT96`` when it was written by Spark before 3.1.0 or carries
  ``org.apache.spark.legacyINT96``;
- timestamps in the zone the file names (``org.apache.spark.timeZone``); ``TIMESTAMP_NTZ``
  never (Spark writes it without rebasing).

A file without Spark's version is proleptic (Spark 4 reads it ``CORRECTED``). deltalog's
readers of data files (the Python data source, OPTIMIZE) go through :func:`rebase_spec` and
:func:`rebase_table`, so they return the values Spark returns and OPTIMIZE writes them back
proleptic. Dates are rebased by calendar arithmetic (Spark's ``rebaseJulianToGregorianDays``),
timestamps in a fixed-offset zone (UTC included) by the same arithmetic on the local day;
timestamps in a region zone by Spark's own rebase table, read from the installed PySpark.
"""

from __future__ import annotations

import functools
import json
import os
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.txn.protocol.errors import LegacyCalendarRebaseError

if TYPE_CHECKING:
    import pyarrow.parquet as pq

__all__ = ["RebaseSpec", "rebase_batch", "rebase_spec", "rebase_table"]

SPARK_VERSION_KEY = b"org.apache.spark.version"
LEGACY_DATETIME_KEY = b"org.apache.spark.legacyDateTime"
LEGACY_INT96_KEY = b"org.apache.spark.legacyINT96"
TIME_ZONE_KEY = b"org.apache.spark.timeZone"

#: 1582-10-15, the first Gregorian day of the hybrid calendar, as days since the epoch.
GREGORIAN_START_DAY = -141427
#: 1900-01-01T00:00Z: no zone's rebase changes a later instant (Spark's ``lastSwitchJulianTs``).
LAST_SWITCH_MICROS = -2208988800 * 1_000_000
_DAY_MICROS = 86_400_000_000
#: Julian 0001-01-01T00:00Z in seconds since the epoch, where Spark's rebase tables start (in UTC).
_JULIAN_YEAR_1_UTC = -62135769600
_UNIT_MICROS = {"s": 1_000_000, "ms": 1000, "us": 1, "ns": 0}
_FIXED_ZONE = re.compile(
    r"^(?:(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?|UTC|GMT|UT|Z|Etc/(?:UTC|GMT|UCT|Zulu|Universal))$"
)


@dataclass(frozen=True)
class RebaseSpec:
    """What a data file needs rebased: dates and INT64 timestamps, INT96 timestamps, the zone."""

    datetime: bool
    int96: bool
    zone: str


def rebase_spec(metadata: dict[bytes, bytes] | None) -> RebaseSpec | None:
    """The rebase a file with this footer key-value metadata needs, or ``None`` (proleptic)."""
    version = (metadata or {}).get(SPARK_VERSION_KEY)
    if version is None:
        return None
    assert metadata is not None
    written_by = _version_tuple(version.decode("utf-8", "replace"))
    datetime = written_by < (3, 0, 0) or LEGACY_DATETIME_KEY in metadata
    int96 = written_by < (3, 1, 0) or LEGACY_INT96_KEY in metadata
    if not (datetime or int96):
        return None
    zone = metadata.get(TIME_ZONE_KEY, b"UTC").decode("utf-8", "replace") or "UTC"
    return RebaseSpec(datetime, int96, zone)


def _version_tuple(version: str) -> tuple[int, ...]:
    parts = re.findall(r"\d+", version)[:3]
    return tuple(int(p) for p in parts) + (0,) * (3 - len(parts))


def rebase_table(table: pa.Table, pf: pq.ParquetFile, spec: RebaseSpec, path: str) -> pa.Table:
    """``table`` (columns read from ``pf`` under their file names) with every date and
    timestamp value rebased as ``spec`` says."""
    leaves = _leaf_physical_types(pf)
    columns = []
    for name, column in zip(table.column_names, table.columns):
        kinds = iter(leaves.get(name, []))
        rebase = _Rebaser(spec, path)
        chunks = [rebase.array(chunk, kinds) for chunk in column.chunks] if _has_datetime(column.type) else None
        columns.append(column if chunks is None else pa.chunked_array(chunks, column.type))
    return pa.Table.from_arrays(columns, schema=table.schema)


def rebase_batch(batch: pa.RecordBatch, pf: pq.ParquetFile, spec: RebaseSpec, path: str) -> pa.RecordBatch:
    """:func:`rebase_table` for one record batch."""
    table = rebase_table(pa.Table.from_batches([batch]), pf, spec, path)
    return table.combine_chunks().to_batches()[0] if table.num_rows else batch


def _leaf_physical_types(pf: pq.ParquetFile) -> dict[str, list[str]]:
    """Each top-level column's Parquet leaves' physical types, depth first (Arrow's order)."""
    schema = pf.metadata.schema
    out: dict[str, list[str]] = {}
    for i in range(len(schema)):
        column = schema.column(i)
        out.setdefault(column.path.split(".")[0], []).append(column.physical_type)
    return out


def _has_datetime(t: pa.DataType) -> bool:
    if pa.types.is_date32(t) or pa.types.is_timestamp(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_datetime(f.type) for f in t)
    if pa.types.is_map(t):
        return _has_datetime(t.key_type) or _has_datetime(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_datetime(t.value_type)
    return False


@dataclass
class _Rebaser:
    spec: RebaseSpec
    path: str

    def array(self, arr: pa.Array, kinds: Iterator[str]) -> pa.Array:
        """``arr`` rebased; ``kinds``: the physical types of its Parquet leaves, consumed in order."""
        t = arr.type
        if pa.types.is_struct(t):
            children = [self.array(arr.field(i), kinds) for i in range(t.num_fields)]
            return pa.StructArray.from_arrays(children, fields=list(t), mask=arr.is_null())
        if arr.offset and (pa.types.is_map(t) or pa.types.is_list(t) or pa.types.is_large_list(t)):
            arr = pa.concat_arrays([arr])  # Arrow builds lists from offsets only when unsliced
        if pa.types.is_map(t):
            keys, items = self.array(arr.keys, kinds), self.array(arr.items, kinds)
            return pa.MapArray.from_arrays(arr.offsets, keys, items, type=t, mask=arr.is_null())
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            values = self.array(arr.values, kinds)
            cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
            return cls.from_arrays(arr.offsets, values, type=t, mask=arr.is_null())
        kind = next(kinds, "")
        if pa.types.is_date32(t) and self.spec.datetime:
            return _rebase_days(arr)
        if pa.types.is_timestamp(t) and (self.spec.int96 if kind == "INT96" else self.spec.datetime):
            if kind == "INT96" or t.tz is not None:  # TIMESTAMP_NTZ is never rebased
                return self._rebase_timestamps(arr)
        return arr

    def _rebase_timestamps(self, arr: pa.Array) -> pa.Array:
        unit = _UNIT_MICROS[arr.type.unit]
        if unit == 0:  # nanoseconds: only INT96 read without coercion; deltalog always coerces
            return arr
        micros = pc.multiply(arr.cast(pa.int64()), unit)
        old = pc.less(micros, LAST_SWITCH_MICROS)
        if not pc.any(old).as_py():
            return arr
        values = pc.filter(micros, old).to_pylist()
        rebased = [self._micros(v) // unit for v in values]
        out = pc.replace_with_mask(arr.cast(pa.int64()), old, pa.array(rebased, pa.int64()))
        return out.cast(arr.type)

    def _micros(self, micros: int) -> int:
        offset = _fixed_offset_micros(self.spec.zone)
        if offset is not None:
            day, time_of_day = divmod(micros + offset, _DAY_MICROS)
            return julian_to_gregorian_days(day) * _DAY_MICROS + time_of_day - offset
        switches, diffs = _region_rebase(self.spec.zone, self.path)
        seconds = micros // 1_000_000
        if seconds < switches[0]:
            return _before_the_table(micros, switches, diffs)
        i = len(switches) - 1
        while i > 0 and seconds < switches[i]:
            i -= 1
        return micros + diffs[i] * 1_000_000


def _before_the_table(micros: int, switches: list[int], diffs: list[int]) -> int:
    """Spark's local rebase of an instant before a zone's table starts (before Julian
    0001-01-01 local time): the hybrid calendar's fields in the zone's ``java.util`` offset,
    read as proleptic fields in its ``java.time`` offset (local mean time). The table's first
    switch is Julian 0001-01-01T00:00 at the ``java.util`` offset, and its difference from
    1582-10-15 on is the difference of the two offsets."""
    old_offset = (_JULIAN_YEAR_1_UTC - switches[0]) * 1_000_000
    offsets = next(d for s, d in zip(switches, diffs) if s >= GREGORIAN_START_DAY * 86400 - 86400)
    day = (micros + old_offset) // _DAY_MICROS
    return micros + offsets * 1_000_000 + (julian_to_gregorian_days(day) - day) * _DAY_MICROS


def _rebase_days(arr: pa.Array) -> pa.Array:
    days = arr.cast(pa.int32())
    old = pc.less(days, GREGORIAN_START_DAY)
    if not pc.any(old).as_py():
        return arr
    rebased = [julian_to_gregorian_days(d) for d in pc.filter(days, old).to_pylist()]
    return pc.replace_with_mask(days, old, pa.array(rebased, pa.int32())).cast(arr.type)


def julian_to_gregorian_days(days: int) -> int:
    """Spark's ``rebaseJulianToGregorianDays``: the proleptic Gregorian day with the year,
    month and day the hybrid calendar gives ``days`` (a Julian date before 1582-10-15); a
    Julian 29 February the Gregorian year lacks becomes 1 March."""
    if days >= GREGORIAN_START_DAY:
        return days
    year, month, day = _julian_date(days + 2440588)  # the Julian day number
    return _days_from_civil(year, month, 1) + day - 1


def _julian_date(jdn: int) -> tuple[int, int, int]:
    """Year (astronomical: 0 is 1 BC), month and day of the Julian calendar for a Julian day number."""
    c = jdn + 32082
    d = (4 * c + 3) // 1461
    e = c - 1461 * d // 4
    m = (5 * e + 2) // 153
    return d - 4800 + m // 10, m + 3 - 12 * (m // 10), e - (153 * m + 2) // 5 + 1


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (astronomical years)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _fixed_offset_micros(zone: str) -> int | None:
    """The offset of a fixed-offset zone id (``UTC``, ``GMT+01:00``, ``-08:00``), else ``None``."""
    match = _FIXED_ZONE.match(zone.strip())
    if match is None:
        return None
    sign, hours, minutes = match.groups()
    if sign is None:
        return 0
    value = (int(hours) * 60 + int(minutes or 0)) * 60_000_000
    return -value if sign == "-" else value


def _region_rebase(zone: str, path: str) -> tuple[list[int], list[int]]:
    table = _spark_rebase_table()
    if table is None:
        raise LegacyCalendarRebaseError(path, zone, "holds timestamps before 1900, which PySpark's table rebases")
    record = table.get(zone)
    if record is None:
        raise LegacyCalendarRebaseError(path, zone, "names a time zone Spark's rebase table does not know")
    return record


def _spark_jars() -> list[Path]:
    """Spark's SQL jars: under ``$SPARK_HOME/jars`` or beside the importable ``pyspark``
    (Spark's Python workers may import it from ``pyspark.zip`` inside ``SPARK_HOME``)."""
    import importlib.util

    homes = [Path(os.environ["SPARK_HOME"])] if os.environ.get("SPARK_HOME") else []
    found = importlib.util.find_spec("pyspark")
    if found is not None and found.origin is not None:
        homes += list(Path(found.origin).parents)
    for home in homes:
        jars = sorted((home / "jars").glob("spark-*.jar"))
        if jars:
            return jars
    return []


@functools.lru_cache(maxsize=1)
def _spark_rebase_table() -> dict[str, tuple[list[int], list[int]]] | None:
    """Spark's ``julian-gregorian-rebase-micros.json`` (switch points and differences in
    seconds, per zone) from the installed PySpark's jars, or ``None`` without PySpark."""
    for jar in _spark_jars():
        with zipfile.ZipFile(jar) as archive:
            if "julian-gregorian-rebase-micros.json" in archive.namelist():
                records = json.loads(archive.read("julian-gregorian-rebase-micros.json"))
                return {r["tz"]: (list(r["switches"]), list(r["diffs"])) for r in records}
    return None
