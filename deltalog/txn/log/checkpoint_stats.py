"""File statistics of a checkpoint written without ``add.stats``.

With ``delta.checkpoint.writeStatsAsJson=false`` a checkpoint holds the statistics only as
``add.stats_parsed``. Delta reads such a checkpoint with ``stats = to_json(stats_parsed)``
(``CheckpointProvider.loadActionsForStateReconstruction``), so the files keep their
statistics for data skipping and for the next checkpoint; :func:`with_stats_from_parsed`
does the same to a checkpoint's ``add`` column. Values are written as Delta's JSON
statistics spell them: a date ``2020-01-01``, a timestamp in UTC with milliseconds and
``Z``, one without a time zone without it, a decimal with every digit; null fields left out,
as Spark's ``to_json``.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from typing import Any

import pyarrow as pa

__all__ = ["stats_json", "with_stats_from_parsed"]


def _value(value: Any) -> str | None:
    """``value`` as JSON text; None for a value Delta's JSON leaves out."""
    if value is None:
        return None
    if isinstance(value, dict):
        parts = [f"{json.dumps(k)}:{text}" for k, v in value.items() if (text := _value(v)) is not None]
        return "{" + ",".join(parts) + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dt.datetime):
        zoned = value.tzinfo is not None
        if zoned:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return json.dumps(value.isoformat(timespec="milliseconds") + ("Z" if zoned else ""))
    if isinstance(value, dt.date):
        return json.dumps(value.isoformat())
    return json.dumps(value)


def stats_json(parsed: pa.Array) -> pa.Array:
    """The ``stats`` JSON string of each ``stats_parsed`` struct (null stays null)."""
    return pa.array([_value(row) for row in parsed.to_pylist()], pa.string())


def with_stats_from_parsed(adds: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """The checkpoint ``add`` struct column with a ``stats`` field made from
    ``stats_parsed`` when it has the one and not the other; else ``adds`` unchanged."""
    if isinstance(adds, pa.ChunkedArray):
        adds = adds.combine_chunks()
    typ = adds.type
    names = [typ.field(i).name for i in range(typ.num_fields)]
    if "stats" in names or "stats_parsed" not in names:
        return adds
    assert isinstance(adds, pa.StructArray)
    children = [adds.field(i) for i in range(typ.num_fields)]
    fields = [typ.field(i) for i in range(typ.num_fields)]
    children.append(stats_json(adds.field(names.index("stats_parsed"))))
    fields.append(pa.field("stats", pa.string()))
    mask = adds.is_null() if adds.null_count else None
    return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
