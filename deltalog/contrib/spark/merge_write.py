"""A MERGE's pass 2 in one Spark job: write the labelled rows and count them per clause.

Every row of the pass-2 join carries the label of the clause that acts on it (see
:meth:`~deltalog.contrib.spark.merge.DeltaMergeBuilder._labelled_rows`). The job counts the
rows per label (Delta's MERGE metrics, which Delta counts with SQL metrics in the same
write job), drops the rows no file keeps (deleted target rows, source rows no insert
clause takes) and the label column, and writes the rest. So the joined rows are computed
once, and neither cached nor counted by a job of their own.

- Spark's own Parquet writer (:mod:`~deltalog.contrib.spark.native_write`), where it can
  write the rows: the counts come from an ``Observation`` of the write job (Spark merges
  the metrics of successful task attempts only). With ``repartitionBeforeWrite`` the rows
  are counted before the shuffle, in its map tasks, where Delta's SQL metrics count them
  too: as Delta's, a map task that Spark runs again after it succeeded (a lost shuffle
  output, speculation) counts its rows again.
- Python tasks otherwise (:func:`~deltalog.contrib.spark.files.write_batches`): the counts
  come back with the action lines of the tasks that succeeded, so a retried task is
  counted once.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.contrib.spark.dataframes import run_write_job
from deltalog.contrib.spark.files import WriteSpec, write_batches

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["write_labelled"]

log = logging.getLogger(__name__)

_OUTPUT = pa.schema([("action", pa.string()), ("label", pa.string()), ("n", pa.int64())])


def _written(
    batches: Iterator[pa.RecordBatch], label: str, unwritten: pa.Array, counts: dict[str, int]
) -> Iterator[pa.RecordBatch]:
    """The rows of ``batches`` whose label is not in ``unwritten``, without the label
    column; every row counted in ``counts`` by its label."""
    for batch in batches:
        labels = batch.column(label)
        for entry in pc.value_counts(labels).to_pylist():
            counts[entry["values"]] = counts.get(entry["values"], 0) + entry["counts"]
        kept = batch.filter(pc.invert(pc.is_in(labels, value_set=unwritten)))
        if kept.num_rows:
            yield kept.drop_columns([label])


def write_labelled(
    df: DataFrame,
    spec: WriteSpec,
    label: str,
    labels: Sequence[str],
    unwritten: frozenset[str],
    arrange: Callable[[DataFrame], DataFrame] = lambda rows: rows,
) -> tuple[list[str], dict[str, int]]:
    """Write the rows of ``df`` whose ``label`` (one of ``labels``) is not in ``unwritten``
    (without ``label``) as files of the table, arranged by ``arrange`` (a repartition by the
    partition columns); returns the add/cdc action lines and the number of rows of ``df``
    per label.

    Spark's own Parquet writer writes them where it can, the rows counted by an
    ``Observation`` of the same job (Delta counts them with SQL metrics of its write job);
    Python tasks otherwise. When the job fails, the files it wrote are deleted (Python
    tasks: a failed task deletes its own; the ones that finished report theirs:
    :func:`~deltalog.contrib.spark.dataframes.run_write_job`)."""
    from deltalog.contrib.spark.native_write import native_write_blocker

    kept = [c for c in df.columns if c != label]
    blocked = native_write_blocker(df.sparkSession, spec, kept)
    if blocked is None:
        return _write_observed(df, spec, label, labels, unwritten, arrange)
    log.info("MERGE writes with Python tasks: %s", blocked)
    skip = sorted(unwritten)

    def task(batches: Iterator[pa.RecordBatch], task_id: int) -> tuple[list[str], pa.RecordBatch]:
        counts: dict[str, int] = {}
        lines = write_batches(spec, _written(batches, label, pa.array(skip, pa.string()), counts), task_id)
        out = pa.RecordBatch.from_pydict(
            {
                "action": [*lines, *([None] * len(counts))],
                "label": [*([None] * len(lines)), *counts],
                "n": [*([None] * len(lines)), *counts.values()],
            },
            schema=_OUTPUT,
        )
        return lines, out

    rows = run_write_job(arrange(df), spec, task, "action string, label string, n long")
    counts: dict[str, int] = {}
    for r in rows:
        if r["label"] is not None:
            counts[r["label"]] = counts.get(r["label"], 0) + int(r["n"])
    return [r["action"] for r in rows if r["action"] is not None], counts


def _write_observed(
    df: DataFrame,
    spec: WriteSpec,
    label: str,
    labels: Sequence[str],
    unwritten: frozenset[str],
    arrange: Callable[[DataFrame], DataFrame],
) -> tuple[list[str], dict[str, int]]:
    """:func:`write_labelled` through Spark's Parquet writer, counting the labels with an
    ``Observation`` of the write job. The rows are counted, the unwritten ones dropped and
    the label column with them before ``arrange``: a repartition then shuffles only the
    written rows and columns, and the counting runs in the tasks that compute the join
    (as Delta's SQL metrics, counted right after its join), not in the one task a touched
    partition's rows are shuffled to."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from deltalog.contrib.spark.native_write import write_native

    observation = Observation(f"deltalog_merge_{uuid.uuid4().hex}")
    # as SQL text (the labels are the MERGE's own names): a Column built in Python costs a
    # dozen py4j round trips per function
    sums = [F.expr(f"sum(CASE WHEN `{label}` = '{name}' THEN 1 ELSE 0 END) AS `{name}`") for name in labels]
    observed = df.observe(observation, *sums)
    dropped = ", ".join(f"'{name}'" for name in sorted(unwritten))
    kept = observed.filter(f"`{label}` NOT IN ({dropped})").drop(label)
    lines = write_native(arrange(kept), spec)
    if not lines:
        # nothing was written: adaptive execution replaced the empty stages after the shuffle
        # by an empty relation, and the stage that observed the counts went with them from the
        # plan Spark reports metrics of; they are counted by a job of their own
        rows = df.groupBy(label).count().collect()
        return lines, {r[label]: int(r["count"]) for r in rows if r["count"]}
    counts = {name: int(n) for name, n in observation.get.items() if n}
    return lines, counts
