"""MERGE INTO, shaped like delta-spark's ``DeltaMergeBuilder``.

Two passes, as Delta's ``MergeIntoCommand``: (1) an inner join of the target's files with
the source finds the files holding matched rows, and refuses a target row matched by
several source rows (:class:`MergeCardinalityError`, unless the only matched clause is an
unconditional delete); (2) those files are joined again with the source (full outer when
there are insert clauses) and every row goes through the first clause whose condition
holds: update, delete, insert, or copied unchanged. The touched files are removed and the
output written in one ``MERGE`` commit.

A MERGE with only insert clauses writes ``source LEFT ANTI JOIN target`` and commits only
adds, as Delta's ``InsertOnlyMergeExecutor``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltalog.contrib.spark.dataframes import (
    FILE_COLUMN,
    ROW_INDEX_COLUMN,
    files_dataframe,
    nullable_type,
    write_dataframe,
)
from deltalog.contrib.spark.errors import DeltaAnalysisError, MergeCardinalityError
from deltalog.contrib.spark.files import CDC_TYPE_COLUMN
from deltalog.contrib.spark.tablelog import start_transaction
from deltalog.contrib.spark.writes import _file_actions

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from deltalog.contrib.spark.tables import DeltaTable

__all__ = ["DeltaMergeBuilder"]

log = logging.getLogger(__name__)

_T_PRESENT = "__deltalog_t_present"
_S_PRESENT = "__deltalog_s_present"
_ACTION = "__deltalog_action"


@dataclass
class _Clause:
    kind: str  # "update" | "delete" | "insert"
    condition: Any
    assignments: Mapping[str, Any] | None  # None: *All


def _expr(e: Any) -> Column:
    from pyspark.sql import functions as F

    return F.expr(e) if isinstance(e, str) else e


def _text(e: Any) -> str | None:
    return None if e is None else (e if isinstance(e, str) else str(e))


class DeltaMergeBuilder:
    def __init__(self, table: DeltaTable, source: DataFrame, condition: Any) -> None:
        self._table = table
        self._source = source
        self._condition = condition
        self._matched: list[_Clause] = []
        self._not_matched: list[_Clause] = []

    def whenMatchedUpdate(self, condition: Any = None, set: Mapping[str, Any] | None = None) -> DeltaMergeBuilder:
        if not set:
            raise DeltaAnalysisError("whenMatchedUpdate needs set={column: expression}")
        self._matched.append(_Clause("update", condition, set))
        return self

    def whenMatchedUpdateAll(self, condition: Any = None) -> DeltaMergeBuilder:
        self._matched.append(_Clause("update", condition, None))
        return self

    def whenMatchedDelete(self, condition: Any = None) -> DeltaMergeBuilder:
        self._matched.append(_Clause("delete", condition, {}))
        return self

    def whenNotMatchedInsert(self, condition: Any = None, values: Mapping[str, Any] | None = None) -> DeltaMergeBuilder:
        if not values:
            raise DeltaAnalysisError("whenNotMatchedInsert needs values={column: expression}")
        self._not_matched.append(_Clause("insert", condition, values))
        return self

    def whenNotMatchedInsertAll(self, condition: Any = None) -> DeltaMergeBuilder:
        self._not_matched.append(_Clause("insert", condition, None))
        return self

    def _only_unconditional_delete(self) -> bool:
        """One matched clause, an unconditional delete: several source rows matching a target
        row are not ambiguous then (Delta's ``isOnlyOneUnconditionalDelete``)."""
        return len(self._matched) == 1 and self._matched[0].kind == "delete" and self._matched[0].condition is None

    def _assignment(self, clause: _Clause, columns: list[str]) -> dict[str, Column]:
        """``{table column: value}`` of an update or insert clause (``*All``: by name)."""
        if clause.assignments is None:
            src_cols = {c.lower(): c for c in self._source.columns}
            missing = [c for c in columns if c.lower() not in src_cols]
            if missing and clause.kind == "insert":
                raise DeltaAnalysisError(f"insertAll: the source has no column(s) {missing}")
            return {c: self._source[src_cols[c.lower()]] for c in columns if c.lower() in src_cols}
        lowered = {c.lower(): c for c in columns}
        out = {}
        for name, e in clause.assignments.items():
            key = lowered.get(name.split(".")[-1].lower())
            if key is None:
                raise DeltaAnalysisError(f"MERGE assigns {name!r}, which is not a table column ({columns})")
            out[key] = _expr(e)
        return out

    def _operation(self, metrics: dict[str, str]) -> Any:
        from deltalog.txn.operations import Merge

        return Merge(
            predicate=_text(self._condition),
            matched_predicates=[
                {"actionType": c.kind, **({"predicate": p} if (p := _text(c.condition)) else {})} for c in self._matched
            ],
            not_matched_predicates=[
                {"actionType": "insert", **({"predicate": p} if (p := _text(c.condition)) else {})}
                for c in self._not_matched
            ],
            user_metrics=metrics,
        )

    def execute(self) -> Any:
        from pyspark.sql import functions as F

        table = self._table
        spark = table._spark
        txn = start_transaction(table._log)
        snapshot = txn.snapshot
        talias = table._alias or "target"
        files = list(txn.filter_files())  # MERGE reads the target: recorded for the conflict checks
        target = files_dataframe(spark, table._log, snapshot, files).withColumn(_T_PRESENT, F.lit(True)).alias(talias)
        columns = [c for c in target.columns if c not in (FILE_COLUMN, ROW_INDEX_COLUMN, _T_PRESENT)]
        types = {f.name: nullable_type(f.dataType) for f in target.schema.fields}
        source = self._source.withColumn(_S_PRESENT, F.lit(True))
        cond = _expr(self._condition)
        source_rows = self._source.count()
        if not self._matched:
            self._insert_only(txn, target, source, cond, columns, types, source_rows)
            return None

        # pass 1: touched files, and Delta's check that no target row is matched by several source rows
        matches = target.join(source, cond, "inner").select(
            F.col(f"{talias}.{FILE_COLUMN}").alias("f"), F.col(f"{talias}.{ROW_INDEX_COLUMN}").alias("r")
        )
        per_row = matches.groupBy("f", "r").count()
        multiple = (
            per_row.filter("count > 1")
            .agg(F.count(F.lit(1)).alias("rows"), F.coalesce(F.sum("count"), F.lit(0)).alias("matches"))
            .collect()[0]
        )
        if multiple["rows"] and not self._only_unconditional_delete():
            raise MergeCardinalityError(
                "Cannot perform Merge as multiple source rows matched and attempted to modify the same target row "
                f"in the Delta table in possibly conflicting ways ({multiple['rows']} target row(s) matched by "
                f"{multiple['matches']} source rows). By SQL semantics of Merge, when multiple source rows match on "
                "the same target row, the result may be ambiguous as it is unclear which source row should be used "
                "to update or delete the matching target row. Preprocess the source to eliminate the possibility of "
                "multiple matches (e.g. dropDuplicates on the merge keys); nothing was committed."
            )
        # an unconditional delete meets such a target row once per matching source row
        overcount = int(multiple["matches"]) - int(multiple["rows"])
        hit = {r["f"] for r in per_row.select("f").distinct().collect()}
        touched = [f for f in files if f.path in hit]
        if not touched and not self._not_matched:
            log.info("MERGE matched no rows and has no insert clause; nothing committed")
            return None

        # pass 2: rewrite the touched files, insert the unmatched source rows
        t2 = target.filter(F.col(f"{talias}.{FILE_COLUMN}").isin(list(hit))) if hit else target.limit(0)
        how = "full_outer" if self._not_matched else "left_outer"
        joined = t2.join(source, cond, how)
        t_present = F.col(f"{talias}.{_T_PRESENT}").isNotNull()
        s_present = F.col(_S_PRESENT).isNotNull()
        matched = t_present & s_present
        action: Any = None

        def chain(acc: Any, when: Column, label: str) -> Any:
            return F.when(when, F.lit(label)) if acc is None else acc.when(when, F.lit(label))

        for i, c in enumerate(self._matched):
            w = matched if c.condition is None else matched & F.coalesce(_expr(c.condition), F.lit(False))
            action = chain(action, w, f"{c.kind[0]}{i}")
        action = chain(action, t_present, "copy")
        for i, c in enumerate(self._not_matched):
            w = ~t_present if c.condition is None else ~t_present & F.coalesce(_expr(c.condition), F.lit(False))
            action = chain(action, w, f"i{i}")
        joined = joined.withColumn(_ACTION, action.otherwise(F.lit("drop")))

        value_exprs = []
        for col in columns:
            v: Any = None
            for i, c in enumerate(self._matched):
                if c.kind == "update":
                    a = self._assignment(c, columns)
                    if col in a:
                        v = chain_value(v, F.col(_ACTION) == f"u{i}", a[col])
            for i, c in enumerate(self._not_matched):
                a = self._assignment(c, columns)
                v = chain_value(v, F.col(_ACTION) == f"i{i}", a.get(col, F.lit(None)))
            current = F.col(f"{talias}.`{col}`")
            value_exprs.append((current if v is None else v.otherwise(current)).cast(types[col]).alias(col))
        joined = joined.cache()
        try:
            counts = {r[_ACTION]: r["count"] for r in joined.groupBy(_ACTION).count().collect()}
            kept = joined.filter(~F.col(_ACTION).startswith("d") & (F.col(_ACTION) != "drop"))
            out = kept.select(*value_exprs, F.lit(None).cast("string").alias(CDC_TYPE_COLUMN))
            if snapshot.properties.enable_change_data_feed:
                old = [F.col(f"{talias}.`{c}`").alias(c) for c in columns]
                upd = F.col(_ACTION).startswith("u")
                deleted = joined.filter(F.col(_ACTION).startswith("d"))
                if overcount:  # one delete change row per target row (Delta's DeduplicateCDFDeletes)
                    deleted = deleted.dropDuplicates([FILE_COLUMN, ROW_INDEX_COLUMN])
                out = (
                    out.unionByName(joined.filter(upd).select(*old, F.lit("update_preimage").alias(CDC_TYPE_COLUMN)))
                    .unionByName(
                        joined.filter(upd).select(*value_exprs, F.lit("update_postimage").alias(CDC_TYPE_COLUMN))
                    )
                    .unionByName(deleted.select(*old, F.lit("delete").alias(CDC_TYPE_COLUMN)))
                    .unionByName(
                        joined.filter(F.col(_ACTION).startswith("i")).select(
                            *value_exprs, F.lit("insert").alias(CDC_TYPE_COLUMN)
                        )
                    )
                )
            else:
                out = out.drop(CDC_TYPE_COLUMN)
            lines = write_dataframe(out, table._checked_spec(txn, out))
        finally:
            joined.unpersist()
        adds, cdcs = _file_actions(lines)

        def total(prefix: str) -> int:
            return sum(n for k, n in counts.items() if k.startswith(prefix))

        metrics = {
            "numSourceRows": str(source_rows),
            "numTargetRowsInserted": str(total("i")),
            "numTargetRowsUpdated": str(total("u")),
            "numTargetRowsDeleted": str(total("d") - overcount),
            "numTargetRowsCopied": str(counts.get("copy", 0)),
            "numOutputRows": str(total("i") + total("u") + counts.get("copy", 0)),
            "numTargetFilesAdded": str(len(adds)),
            "numTargetFilesRemoved": str(len(touched)),
            "numTargetChangeFilesAdded": str(len(cdcs)),
        }
        version = table._commit_rewrite(txn, touched, lines, self._operation(metrics))
        log.info("MERGE committed version %d (%s)", version, metrics)
        return None

    def _insert_only(
        self,
        txn: Any,
        target: DataFrame,
        source: DataFrame,
        cond: Column,
        columns: list[str],
        types: Mapping[str, Any],
        source_rows: int,
    ) -> None:
        """Only ``whenNotMatchedInsert*`` clauses: write ``source LEFT ANTI JOIN target`` through
        the first insert clause whose condition holds, and commit only adds (Delta's
        ``InsertOnlyMergeExecutor``): target rows are never rewritten, and a target row matched
        by several source rows is no error. The transaction has read the whole target."""
        from pyspark.sql import functions as F

        action: Any = None
        for i, c in enumerate(self._not_matched):
            when = F.lit(True) if c.condition is None else F.coalesce(_expr(c.condition), F.lit(False))
            action = F.when(when, F.lit(f"i{i}")) if action is None else action.when(when, F.lit(f"i{i}"))
        rows = source.join(target, cond, "left_anti").withColumn(_ACTION, action.otherwise(F.lit("drop")))
        rows = rows.filter(F.col(_ACTION) != "drop")
        values = []
        for col in columns:
            v: Any = None
            for i, c in enumerate(self._not_matched):
                v = chain_value(v, F.col(_ACTION) == f"i{i}", self._assignment(c, columns).get(col, F.lit(None)))
            values.append(v.otherwise(F.lit(None)).cast(types[col]).alias(col))
        out = rows.select(*values)
        table = self._table
        lines = write_dataframe(out, table._checked_spec(txn, out))
        adds, _ = _file_actions(lines)
        if not adds:
            log.info("MERGE inserted no rows; nothing committed")
            return
        counted = [a.num_records() for a in adds]
        inserted = sum(n for n in counted if n is not None) if None not in counted else out.count()
        metrics = {
            "numSourceRows": str(source_rows),
            "numTargetRowsInserted": str(inserted),
            "numTargetRowsUpdated": "0",
            "numTargetRowsDeleted": "0",
            "numTargetRowsCopied": "0",
            "numOutputRows": str(inserted),
            "numTargetFilesAdded": str(len(adds)),
            "numTargetFilesRemoved": "0",
            "numTargetChangeFilesAdded": "0",
        }
        version = table._commit_rewrite(txn, [], lines, self._operation(metrics))
        log.info("MERGE (insert only) committed version %d (%s)", version, metrics)


def chain_value(acc: Any, when: Column, value: Column) -> Any:
    from pyspark.sql import functions as F

    return F.when(when, value) if acc is None else acc.when(when, value)
