"""MERGE INTO, shaped like delta-spark's ``DeltaMergeBuilder``.

Two passes, as Delta's ``MergeIntoCommand``: (1) an inner join of the target's files with
the source finds the files holding matched rows (and refuses a target row matched by
several source rows when there are matched clauses); (2) those files are joined again
with the source (full outer when there are insert clauses) and every row goes through the
first clause whose condition holds: update, delete, insert, or copied unchanged. The
touched files are removed and the output written in one ``MERGE`` commit.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltalog.contrib.spark.dataframes import FILE_COLUMN, ROW_INDEX_COLUMN, files_dataframe, write_dataframe
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

    def execute(self) -> Any:
        from pyspark.sql import functions as F

        from deltalog.txn.operations import Merge

        table = self._table
        spark = table._spark
        txn = start_transaction(table._log)
        snapshot = txn.snapshot
        talias = table._alias or "target"
        files = list(txn.filter_files())
        target = files_dataframe(spark, table._log, snapshot, files).withColumn(_T_PRESENT, F.lit(True)).alias(talias)
        columns = [c for c in target.columns if c not in (FILE_COLUMN, ROW_INDEX_COLUMN, _T_PRESENT)]
        source = self._source.withColumn(_S_PRESENT, F.lit(True))
        cond = _expr(self._condition)
        source_rows = self._source.count()

        # pass 1: touched files (and the cardinality check)
        matches = target.join(source, cond, "inner").select(
            F.col(f"{talias}.{FILE_COLUMN}").alias("f"), F.col(f"{talias}.{ROW_INDEX_COLUMN}").alias("r")
        )
        per_row = matches.groupBy("f", "r").count()
        if self._matched and per_row.filter("count > 1").limit(1).count():
            raise MergeCardinalityError(
                "the MERGE matched a target row with more than one source row; make the source unique on the "
                "merge condition (Delta refuses this too)"
            )
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

        types = {f.name: f.dataType for f in target.schema.fields}
        lowered = {c.lower(): c for c in columns}

        def assignment(clause: _Clause) -> dict[str, Column]:
            if clause.assignments is None:
                src_cols = {c.lower(): c for c in self._source.columns}
                missing = [c for c in columns if c.lower() not in src_cols]
                if missing and clause.kind == "insert":
                    raise DeltaAnalysisError(f"insertAll: the source has no column(s) {missing}")
                return {c: self._source[src_cols[c.lower()]] for c in columns if c.lower() in src_cols}
            out = {}
            for name, e in clause.assignments.items():
                key = lowered.get(name.split(".")[-1].lower())
                if key is None:
                    raise DeltaAnalysisError(f"MERGE assigns {name!r}, which is not a table column ({columns})")
                out[key] = _expr(e)
            return out

        value_exprs = []
        for col in columns:
            v: Any = None
            for i, c in enumerate(self._matched):
                if c.kind == "update":
                    a = assignment(c)
                    if col in a:
                        v = chain_value(v, F.col(_ACTION) == f"u{i}", a[col])
            for i, c in enumerate(self._not_matched):
                a = assignment(c)
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
                out = (
                    out.unionByName(joined.filter(upd).select(*old, F.lit("update_preimage").alias(CDC_TYPE_COLUMN)))
                    .unionByName(
                        joined.filter(upd).select(*value_exprs, F.lit("update_postimage").alias(CDC_TYPE_COLUMN))
                    )
                    .unionByName(
                        joined.filter(F.col(_ACTION).startswith("d")).select(
                            *old, F.lit("delete").alias(CDC_TYPE_COLUMN)
                        )
                    )
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
            "numTargetRowsDeleted": str(total("d")),
            "numTargetRowsCopied": str(counts.get("copy", 0)),
            "numOutputRows": str(total("i") + total("u") + counts.get("copy", 0)),
            "numTargetFilesAdded": str(len(adds)),
            "numTargetFilesRemoved": str(len(touched)),
            "numTargetChangeFilesAdded": str(len(cdcs)),
        }
        operation = Merge(
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
        version = table._commit_rewrite(txn, touched, lines, operation)
        log.info("MERGE committed version %d (%s)", version, metrics)
        return None


def chain_value(acc: Any, when: Column, value: Column) -> Any:
    from pyspark.sql import functions as F

    return F.when(when, value) if acc is None else acc.when(when, value)
