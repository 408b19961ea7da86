"""MERGE INTO, shaped like delta-spark's ``DeltaMergeBuilder``.

Two passes, as Delta's ``ClassicMergeExecutor``: (1) a join of the candidate target files
with the source finds the touched files (a matched row, or a row that a ``whenNotMatchedBySource``
clause acts on) and refuses a target row matched by several source rows
(:class:`MergeCardinalityError`, unless the only matched clause is an unconditional
delete); (2) the touched files are joined again with the source (full outer when there are
insert clauses) and every row goes through the first clause whose condition holds: update,
delete, insert, or copied unchanged. The touched files are removed and the output written
in one ``MERGE`` commit; candidate files without such a row are left as they are.

Candidate files: without ``whenNotMatchedBySource`` clauses, only the files that may hold
rows satisfying the terms the merge condition implies (its ``target.c <op> literal``
conjuncts, and ``target.c = source.k`` narrowed to the source's range of ``k``; see
:mod:`deltalog.contrib.spark.merge_pruning`) are read. With such clauses every target row
may be affected, so every file is a candidate, as in Delta.

Schema evolution (``withSchemaEvolution()`` or ``spark.databricks.delta.schema.autoMerge.enabled``):
``updateAll``/``insertAll`` and explicit assignments to a source column add the source
columns the table lacks, nullable, in the same commit, and an assignment of a nested field
the table's struct lacks adds that field; on a table with type widening, the columns and
fields the clauses write widen where the source's column of that name is wider
(:mod:`deltalog.contrib.spark.merge_migration`).

A MERGE with only insert clauses writes ``source LEFT ANTI JOIN target`` and commits only
adds, as Delta's ``InsertOnlyMergeExecutor``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from deltalog.contrib.spark.api_arguments import check_column_mapping, check_condition
from deltalog.contrib.spark.dataframes import (
    FILE_COLUMN,
    ROW_INDEX_COLUMN,
    nullable_type,
    write_dataframe,
)
from deltalog.contrib.spark.dv_dml import (
    RowMarks,
    commit_with_deletion_vectors,
    dv_packing_target_size,
    mark_deleted_rows,
    target_rows,
    writes_deletion_vectors,
)
from deltalog.contrib.spark.errors import DeltaAnalysisError, MergeCardinalityError
from deltalog.contrib.spark.files import CDC_TYPE_COLUMN, WriteSpec, file_actions
from deltalog.contrib.spark.generated import prepare_merge_assignments, recompute_generated
from deltalog.contrib.spark.idempotent import begin_idempotent_command, commit_set_transaction_only
from deltalog.contrib.spark.merge_scan import TargetRows, scan_target
from deltalog.contrib.spark.merge_source import materialized_source, run_with_source_retries
from deltalog.contrib.spark.merge_write import write_labelled
from deltalog.contrib.spark.options import AUTOMATIC_WIDENING_CONF, SCHEMA_AUTO_MERGE_CONF, automatic_widening
from deltalog.contrib.spark.resolver import Resolver, session_resolver
from deltalog.contrib.spark.row_tracking import carried_columns, stable_row_tracking, tracked_columns
from deltalog.contrib.spark.schemas import spark_struct
from deltalog.contrib.spark.tablelog import start_transaction
from deltalog.txn.protocol.column_identifiers import quote_if_needed
from deltalog.txn.protocol.properties import COLUMN_MAPPING_MAX_ID

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructField, StructType

    from deltalog.contrib.spark.tables import DeltaTable
    from deltalog.txn.commit.operations import Merge
    from deltalog.txn.commit.transaction import OptimisticTransaction
    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.protocol.actions import AddCDCFile, AddFile, Metadata

__all__ = ["DeltaMergeBuilder"]

log = logging.getLogger(__name__)

_T_PRESENT = "__deltalog_t_present"
_S_PRESENT = "__deltalog_s_present"
_ACTION = "__deltalog_action"
#: prefix of the columns holding the whenNotMatchedBySource clauses' conditions and values
_BY_SOURCE = "__deltalog_by_source_"


@dataclass
class _Clause:
    kind: str  # "update" | "delete" | "insert"
    condition: Any
    assignments: Mapping[str, Any] | None  # None: *All


@dataclass
class _MergePlan:
    """What a MERGE works on, decided before a row is read: its transaction (on the latest
    snapshot), the candidate target files and the source, and the columns it writes."""

    txn: OptimisticTransaction
    started: float  # time.perf_counter() at the start
    target_alias: str
    columns: list[str]  # the table's columns, then those schema evolution adds
    new_columns: list[str]
    evolve: bool  # schema evolution is on (a struct value may lack table fields)
    types: dict[str, DataType]  # column -> the (nullable) Spark type it is written as
    assignments: dict[int, dict[str, Column]]  # id(clause) -> {column: value} of an update or insert
    files: list[AddFile]  # the candidate target files (recorded as read)
    source_rows: int
    #: Delta's ``materializeSourceTimeMs``: the source's materialization (its eager
    #: ``localCheckpoint``); 0 when the source is not materialized
    materialize_ms: int
    target: DataFrame  # the candidates' rows, with file, row index and _T_PRESENT columns
    source: DataFrame  # the source's rows, with _S_PRESENT
    condition: Column
    scans: list[TargetRows]  # the target scans (their file names)
    #: the whenNotMatchedBySource clauses' conditions and values, computed on the target's rows
    by_source: dict[str, Column] = field(default_factory=dict)
    _target_values: dict[str, Column] = field(default_factory=dict)  # target_value's columns

    def log_path(self, name: str) -> str:
        """The log's path of the file a scan names ``name`` (in its FILE_COLUMN)."""
        for scan in self.scans:
            if name in scan.paths:
                return scan.log_path(name)
        return self.scans[0].log_path(name)  # raises for an unknown file

    def target_rows(self, rows: DataFrame) -> DataFrame:
        """A scan's ``rows`` as the MERGE joins them: marked present, with :attr:`by_source`."""
        from pyspark.sql import functions as F

        marked = rows.withColumn(_T_PRESENT, F.lit(True)).alias(self.target_alias)
        return marked.withColumns(self.by_source).alias(self.target_alias) if self.by_source else marked

    def target_value(self, column: str) -> Column:
        """The target row's value of ``column`` (null for a column schema evolution adds);
        built once per column (a Column costs py4j round trips)."""
        from pyspark.sql import functions as F

        value = self._target_values.get(column)
        if value is None:
            quoted = ".".join(f"`{name.replace('`', '``')}`" for name in (self.target_alias, column))
            value = F.lit(None) if column in self.new_columns else F.expr(quoted)
            self._target_values[column] = value
        return value


@dataclass(frozen=True)
class _Touched:
    """Pass 1's finding: the candidate files holding a row some clause acts on."""

    files: list[AddFile]
    paths: set[str]
    #: extra meetings of target rows with an unconditional delete (one per additional matching source row)
    overcount: int
    scanned: float  # time.perf_counter() at the end of pass 1


def _expr(e: Any) -> Column:
    from pyspark.sql import functions as F

    return F.expr(e) if isinstance(e, str) else e


def _condition_holds(clause: _Clause) -> Column:
    """The clause's condition, false where it is null; true for a clause without one."""
    from pyspark.sql import functions as F

    return F.lit(True) if clause.condition is None else F.coalesce(_expr(clause.condition), F.lit(False))


def _by_source_condition(index: int, clause: _Clause) -> Column:
    """Whether the ``index``-th ``whenNotMatchedBySource*`` clause's condition, computed on
    the target's rows (:meth:`DeltaMergeBuilder._by_source_on_target`), holds."""
    from pyspark.sql import functions as F

    if clause.condition is None:
        return F.lit(True)
    return F.coalesce(F.col(f"`{_BY_SOURCE}{index}`"), F.lit(False))


def _holds(base: Column, clause: _Clause) -> Column:
    """``base`` and the clause's condition (false where it is null)."""
    return base if clause.condition is None else base & _condition_holds(clause)


def _text(e: Any) -> str | None:
    return None if e is None else (e if isinstance(e, str) else str(e))


def _with_exprs(clauses: list[_Clause], exprs: Sequence[Any]) -> list[_Clause]:
    """Copies of ``clauses`` given the conditions, then the assigned values, of ``exprs`` (in
    the order :meth:`DeltaMergeBuilder._with_current_time_pinned` lists them)."""
    rest = list(exprs[len(clauses) :])
    copies = []
    for clause, condition in zip(clauses, exprs, strict=False):
        assignments = clause.assignments
        if assignments:
            names = list(assignments)
            assignments = dict(zip(names, rest[: len(names)], strict=True))
            rest = rest[len(names) :]
        copies.append(replace(clause, condition=condition, assignments=assignments))
    return copies


def _with_types(schema_string: str, types: Mapping[str, DataType]) -> StructType:
    """The table schema as stored (column mapping metadata kept), with the columns of
    ``types`` given those types."""
    import json

    from pyspark.sql.types import StructField, StructType

    stored = spark_struct(json.loads(schema_string))
    return StructType(
        [StructField(f.name, types.get(f.name, f.dataType), f.nullable, f.metadata) for f in stored.fields]
    )


class DeltaMergeBuilder:
    def __init__(self, table: DeltaTable, source: DataFrame, condition: Any) -> None:
        #: identity columns whose values the insert clauses generate (set when planned)
        self._generated_identity: tuple[str, ...] = ()
        self._table = table
        self._source = source
        self._condition = condition
        self._matched: list[_Clause] = []
        self._not_matched: list[_Clause] = []
        self._not_matched_by_source: list[_Clause] = []
        self._schema_evolution = False
        #: the metrics of the MERGE's commit, once made
        self._recorded_metrics: dict[str, str] | None = None

    def whenMatchedUpdate(self, condition: Any = None, set: Mapping[str, Any] | None = None) -> DeltaMergeBuilder:
        set = check_column_mapping(set, "'set' in whenMatchedUpdate")
        check_condition(condition)
        if not set:
            raise DeltaAnalysisError("whenMatchedUpdate needs set={column: expression}")
        self._matched.append(_Clause("update", condition, set))
        return self

    def whenMatchedUpdateAll(self, condition: Any = None) -> DeltaMergeBuilder:
        check_condition(condition)
        self._matched.append(_Clause("update", condition, None))
        return self

    def whenMatchedDelete(self, condition: Any = None) -> DeltaMergeBuilder:
        check_condition(condition)
        self._matched.append(_Clause("delete", condition, {}))
        return self

    def whenNotMatchedInsert(self, condition: Any = None, values: Mapping[str, Any] | None = None) -> DeltaMergeBuilder:
        values = check_column_mapping(values, "'values' in whenNotMatchedInsert")
        check_condition(condition)
        if not values:
            raise DeltaAnalysisError("whenNotMatchedInsert needs values={column: expression}")
        self._not_matched.append(_Clause("insert", condition, values))
        return self

    def whenNotMatchedInsertAll(self, condition: Any = None) -> DeltaMergeBuilder:
        check_condition(condition)
        self._not_matched.append(_Clause("insert", condition, None))
        return self

    def whenNotMatchedBySourceUpdate(
        self, condition: Any = None, set: Mapping[str, Any] | None = None
    ) -> DeltaMergeBuilder:
        """Update a target row that no source row matches (when ``condition`` holds for it)."""
        set = check_column_mapping(set, "'set' in whenNotMatchedBySourceUpdate")
        check_condition(condition)
        if not set:
            raise DeltaAnalysisError("whenNotMatchedBySourceUpdate needs set={column: expression}")
        self._not_matched_by_source.append(_Clause("update", condition, set))
        return self

    def whenNotMatchedBySourceDelete(self, condition: Any = None) -> DeltaMergeBuilder:
        """Delete a target row that no source row matches (when ``condition`` holds for it)."""
        check_condition(condition)
        self._not_matched_by_source.append(_Clause("delete", condition, {}))
        return self

    def withSchemaEvolution(self) -> DeltaMergeBuilder:
        """Add the source columns that ``updateAll``/``insertAll`` (or an assignment) write and
        the table lacks to the table's schema, in the MERGE's commit."""
        self._schema_evolution = True
        return self

    def _only_unconditional_delete(self) -> bool:
        """One matched clause, an unconditional delete: several source rows matching a target
        row are not ambiguous then (Delta's ``isOnlyOneUnconditionalDelete``). Any other MERGE
        that is not insert-only (no matched clause at all, but ``whenNotMatchedBySource*`` ones)
        is refused, as Delta's ``ClassicMergeExecutor`` does."""
        return len(self._matched) == 1 and self._matched[0].kind == "delete" and self._matched[0].condition is None

    def _can_evolve(self) -> bool:
        if self._schema_evolution:
            return True
        conf = self._table._spark.conf.get(SCHEMA_AUTO_MERGE_CONF, "false")
        return str(conf).strip().lower() == "true"

    def _new_columns(self, columns: list[str], evolve: bool) -> list[str]:
        """Source columns the clauses write that the table lacks (with schema evolution; an
        explicit assignment to an unknown column is an error otherwise, as in Delta). An
        assignment of a field inside one (``set={"extra.val": ...}``) adds it too, as far as
        the clauses write it (:meth:`_new_column_fields`)."""
        resolver = self._resolver()
        table_cols = {c.lower() for c in columns}
        src_cols = {c.lower(): c for c in self._source.columns}
        new: dict[str, str] = {}
        for c in [*self._matched, *self._not_matched]:
            if c.kind == "delete":
                continue
            if c.assignments is None:
                if evolve:
                    new.update({k: v for k, v in src_cols.items() if k not in table_cols})
                continue
            for name in c.assignments:
                parts = self._target_name(name)
                if resolver.find(parts[0], columns) is not None:  # a field of a table column: see _assignment
                    continue
                source = resolver.find(parts[0], self._source.columns)
                if evolve and source is not None:
                    new[source.lower()] = source
                else:
                    hint = "" if evolve else "; call withSchemaEvolution() to add a source column to the table"
                    raise _unresolved_target(name, c.kind, columns, resolver, hint)
        return list(new.values())

    def _assignment(
        self,
        clause: _Clause,
        columns: list[str],
        evolve: bool,
        table: StructType,
        talias: str,
        evolved: Mapping[str, DataType],
    ) -> dict[str, Column]:
        """``{table column: value}`` of an update or insert clause (``*All``: by name). Without
        schema evolution ``*All`` needs every table column in the source (extra source columns
        are ignored), as Delta's ``resolveStar``; with it, a table column the source lacks is
        null on insert and kept on update. A nested name (``s.a``) in an update sets that
        field of the struct column, the others kept (Delta's ``generateUpdateExpressions``), in
        the column's evolved type (``evolved``: fields schema evolution adds are null there;
        a column it adds is null)."""

        from deltalog.contrib.spark.update_expressions import assign_fields, refuse_conflicting_targets

        if clause.assignments is None:
            return self._star_assignment(clause.kind, columns, evolve)
        resolver = self._resolver()
        out: dict[str, Column] = {}
        nested: dict[str, dict[tuple[str, ...], Column]] = {}
        targets = [self._target_name(name) for name in clause.assignments]
        refuse_conflicting_targets([tuple(parts) for parts in targets], resolver)
        for name, e in clause.assignments.items():
            parts = self._target_name(name)
            key = resolver.find(parts[0], columns)
            if key is None:
                raise _unresolved_target(name, clause.kind, columns, resolver)
            if len(parts) == 1:
                out[key] = _expr(e)
            elif clause.kind == "insert":
                raise DeltaAnalysisError(f"MERGE inserts {name!r}: a nested field cannot be set in an insert clause")
            else:
                nested.setdefault(key, {})[tuple(parts[1:])] = _expr(e)
        for key, paths in nested.items():
            if key in out:
                raise DeltaAnalysisError(f"MERGE sets {key!r} and a field of it")
            data_type = evolved[key] if key in evolved else table[key].dataType
            out[key] = assign_fields(self._current(talias, key, table, evolved), data_type, paths, key)
        return out

    @staticmethod
    def _current(talias: str, key: str, table: StructType, evolved: Mapping[str, DataType]) -> Column:
        """The target row's value of column ``key``, in its evolved type when schema evolution
        changes it (new struct fields null, widened fields cast)."""
        from pyspark.sql import functions as F

        from deltalog.contrib.spark.update_expressions import StructCast, cast_if_needed

        if key not in table.fieldNames():  # a column schema evolution adds: null in the target's rows
            return F.lit(None).cast(evolved[key])
        current, before = F.col(f"{talias}.`{key}`"), table[key].dataType
        if key not in evolved:
            return current
        return cast_if_needed(current, before, evolved[key], key, StructCast(allow_missing=True))

    def _target_name(self, name: str) -> list[str]:
        """The parts of an assigned column name, without a leading target alias (``t.v``)."""
        from deltalog.contrib.spark.update_expressions import split_name

        parts = split_name(name)
        if len(parts) > 1 and self._resolver()(parts[0], self._table._alias or "target"):
            parts = parts[1:]
        return parts

    def _star_assignment(self, kind: str, columns: list[str], evolve: bool) -> dict[str, Column]:
        """``updateAll``/``insertAll`` as Delta's ``resolveStar``: each table column is resolved
        in the source by the session's resolver (without schema evolution
        DELTA_MERGE_UNRESOLVED_EXPRESSION when it is not there). With it the source columns are
        the actions; ``mergeSchemas`` matches them to the table's ignoring case, so under
        ``spark.sql.caseSensitive=true`` a source ``VALUE`` beside a table ``value`` is no new
        column: ``generateUpdateExpressions`` refuses it (DELTA_MISSING_SET_COLUMN), an insert
        leaves ``value`` null."""
        resolver = self._resolver()
        found = {c: resolver.find(c, self._source.columns) for c in columns}
        missing = [c for c, src in found.items() if src is None]
        stray = [c for c in self._source.columns if resolver.find(c, columns) is None and Resolver().find(c, columns)]
        if evolve and kind == "update" and stray:
            raise DeltaAnalysisError(
                f"DELTA_MISSING_SET_COLUMN: `{stray[0]}` column not found given columns: [{', '.join(columns)}]"
            )
        if missing and not evolve:
            hint = "; add it to the source, or use withSchemaEvolution()"
            raise _unresolved_target(f"`{missing[0]}`", kind, self._source.columns, resolver, hint)
        # backquoted: a name with a dot is one column, not a struct's field
        return {c: self._source["`" + src.replace("`", "``") + "`"] for c, src in found.items() if src is not None}

    def _resolver(self) -> Resolver:
        """The session's name resolver (Delta's ``conf.resolver``), which SET names follow."""
        return session_resolver(self._table._spark)

    def _operation(self, metrics: dict[str, str]) -> Merge:
        from deltalog.txn.commit.operations import Merge

        self._recorded_metrics = metrics  # every MERGE commit is described here: execute()'s output

        def predicates(clauses: list[_Clause]) -> list[dict[str, str]]:
            return [{"actionType": c.kind, **({"predicate": p} if (p := _text(c.condition)) else {})} for c in clauses]

        return Merge(
            predicate=_text(self._condition),
            matched_predicates=predicates(self._matched),
            not_matched_predicates=predicates(self._not_matched),
            not_matched_by_source_predicates=predicates(self._not_matched_by_source),
            user_metrics=metrics,
        )

    def _evolved_structs(self, table_schema: StructType, evolve: bool) -> dict[str, DataType]:
        """With schema evolution, the table's columns holding structs (a struct, or an array or
        map of them, at any depth) where the source's column of that name, as far as the clauses
        write it (:meth:`_migration_schema`: ``updateAll``/``insertAll``, an assignment of the
        column, or of fields inside it: ``set={"s.b": ...}`` keeps just ``b``), has struct
        fields they lack, with those fields added, and the ``void`` columns, with the source's
        type (Delta's ``computePostEvolutionTargetSchema``: that schema merged into the table's;
        :func:`~deltalog.contrib.spark.update_expressions.evolve_type`)."""
        from pyspark.sql.types import StructType

        from deltalog.contrib.spark.update_expressions import evolve_type, has_struct, is_void

        if not evolve:
            return {}
        migration = StructType.fromJson(self._migration_schema())
        source = {f.name.lower(): f.dataType for f in migration.fields}
        out: dict[str, DataType] = {}
        for f in table_schema.fields:
            other = source.get(f.name.lower())
            if other is not None and (is_void(f.dataType) or (has_struct(f.dataType) and has_struct(other))):
                evolved = evolve_type(f.dataType, other)
                if evolved != f.dataType:
                    out[f.name] = evolved
        return out

    def _refuse_incompatible_types(self, table_types: Mapping[str, str], evolve: bool) -> None:
        """With schema evolution Delta merges the source's columns that the clauses write into
        the table's schema (``mergeSchemas`` with ``allowImplicitConversions``): a source column
        of an atomic type Spark does not implicitly cast to its table column's (a string into a
        boolean, binary into an int) is an error, before anything runs. ``table_types`` leaves
        out the columns type widening widens (a date into a ``timestamp_ntz``)."""
        from deltalog.contrib.spark.merge_migration import struct_fields
        from deltalog.contrib.spark.sink_cast import implicitly_castable

        if not evolve:
            return
        table = {name.lower(): (name, t) for name, t in table_types.items()}
        for f in struct_fields(self._migration_schema()):  # the source columns the clauses write
            name, kind = table.get(str(f["name"]).lower(), ("", ""))
            source_type = f["type"]
            if not name or kind.startswith("{"):
                continue
            if isinstance(source_type, str) and source_type != kind and not implicitly_castable(source_type, kind):
                raise DeltaAnalysisError(
                    f"Failed to merge incompatible data types {kind} and {source_type} (column {name!r}): MERGE "
                    "with schema evolution writes the source column into it; cast it in the source"
                )

    def _migration_schema(self) -> dict[str, object]:
        """The source's schema as far as the MATCHED and NOT MATCHED clauses write it
        (:func:`~deltalog.contrib.spark.merge_migration.migration_schema`)."""
        from deltalog.contrib.spark.merge_migration import migration_schema

        clauses = [*self._matched, *self._not_matched]
        assigned = [self._target_name(name) for c in clauses for name in (c.assignments or {})]
        star = any(c.assignments is None for c in clauses)
        return migration_schema(self._source.schema.jsonValue(), assigned, star, self._resolver())

    def _widened_columns(self, snapshot: Snapshot, evolve: bool) -> dict[str, DataType]:
        """With schema evolution on a table with type widening, the table columns (and fields
        inside them) the clauses write (``updateAll``/``insertAll``, or an assignment of the
        column or field: the source's column of that name counts, whatever the value) from a
        source column of a wider type (int into long or double, float into double, date into
        timestamp_ntz, ...; as the session's ``allowAutomaticWidening`` allows), with their new
        types: Delta's MERGE merges the schemas with ``TypeWideningMode.TypeEvolution``, as a
        ``mergeSchema`` write does (:func:`widen_for_schema_evolution`)."""
        import json

        from deltalog.txn.protocol.type_widening import widen_for_schema_evolution

        if not evolve:
            return {}
        table = json.loads(snapshot.metadata.schema_string)
        mode = automatic_widening(self._table._spark.conf.get(AUTOMATIC_WIDENING_CONF, None))
        widened = widen_for_schema_evolution(
            table, self._migration_schema(), snapshot.metadata.configuration, record=False, automatic_widening=mode
        )
        if widened == table:
            return {}
        before = {f["name"]: f["type"] for f in table["fields"]}
        evolved = spark_struct(widened)
        return {f.name: f.dataType for f in evolved.fields if f.dataType.jsonValue() != before[f.name]}

    def _new_column_fields(self, new_columns: list[str]) -> dict[str, StructField]:
        """The fields schema evolution adds for ``new_columns``: the source's, as far as the
        clauses write them (:meth:`_migration_schema`: ``set={"extra.val": ...}`` adds
        ``extra`` with just ``val``, as Delta's ``computePostEvolutionTargetSchema``)."""
        from pyspark.sql.types import StructType

        migration = {f.name.lower(): f for f in StructType.fromJson(self._migration_schema()).fields}
        out = {}
        for c in new_columns:
            field = migration.get(c.lower())
            if field is None:  # a field assigned inside a source column that has no such field
                raise DeltaAnalysisError(
                    f"DELTA_MERGE_UNRESOLVED_EXPRESSION: Cannot resolve the field a clause assigns inside {c!r}: "
                    "the source column has no such field"
                )
            out[c] = field
        return out

    def _evolve_schema(
        self,
        txn: OptimisticTransaction,
        new_columns: Mapping[str, StructField],
        structs: Mapping[str, DataType],
        widened: Mapping[str, DataType],
    ) -> None:
        """Add ``new_columns`` (:meth:`_new_column_fields`) to the table's schema in
        ``txn``, give the struct columns of ``structs`` their evolved types and the columns
        of ``widened`` their wider ones (a widening, nested ones in ``structs`` too, recorded
        in ``delta.typeChanges``)."""
        import json
        from dataclasses import replace

        from deltalog.contrib.spark import schemas
        from deltalog.txn.protocol.type_widening import preview_table_version, record_type_changes

        current = txn.snapshot.metadata
        fields = [f.jsonValue() for f in new_columns.values()]
        table = json.loads(current.schema_string)
        for f in table["fields"]:
            if f["name"] in structs:
                f["type"] = structs[f["name"]].jsonValue()
        if widened or structs:  # a struct column may have widened fields too
            before = json.loads(current.schema_string)
            for f in table["fields"]:
                if f["name"] in widened:
                    f["type"] = widened[f["name"]].jsonValue()
            version = preview_table_version(txn.snapshot.protocol, txn.snapshot.version + 1)
            table = record_type_changes(table, before, version)
        merged = schemas.merge_schemas(table, {"type": "struct", "fields": fields})
        config = dict(current.configuration)
        if current.properties.column_mapping_mode != "none":
            merged, max_id = schemas.assign_column_mapping(merged, current.properties.column_mapping_max_id)
            config[COLUMN_MAPPING_MAX_ID] = str(max_id)
        txn.update_metadata(
            replace(current, schema_string=json.dumps(merged, separators=(",", ":")), configuration=config)
        )
        log.info("MERGE adds column(s) %s and evolves struct column(s) %s", list(new_columns), sorted(structs))

    def _candidates(
        self, txn: OptimisticTransaction, columns: list[str], types: Mapping[str, str]
    ) -> tuple[list[AddFile], int]:
        """``(target files that may hold rows the MERGE touches, source row count)``; the read
        is recorded in ``txn``: the partitions the terms select (or the whole table) and the
        files statistics did not skip."""
        from deltalog.contrib.spark.merge_pruning import condition_terms, source_range_terms
        from deltalog.contrib.spark.scan import plan_files
        from deltalog.contrib.spark.schemas import physical_names

        snapshot = txn.snapshot
        if self._not_matched_by_source:  # every target row may be affected
            return list(txn.filter_files()), self._source.count()
        metadata = snapshot.metadata
        partitions = list(metadata.partition_columns)
        parts = {c.lower() for c in partitions}
        found = condition_terms(self._condition, self._table._alias or "target", types, self._source.columns)
        range_terms, source_rows = source_range_terms(found.key_pairs, self._source, types, partitions)
        terms = [
            t
            for t in [*found.literal_terms, *range_terms]
            if not (t[0].lower() in parts and types[t[0]] in ("float", "double"))
        ]
        mode = snapshot.properties.column_mapping_mode
        partition_filters = [t for t in terms if t[0].lower() in parts] if mode == "none" else []
        if not terms:
            return txn.filter_files(partition_filters), source_rows
        import json

        from deltalog.txn.protocol.type_widening import fields_widened_from_float

        schema = json.loads(metadata.schema_string)
        physical, float_widened = physical_names(schema, mode), fields_widened_from_float(schema)

        def skipped(files: list[AddFile]) -> list[AddFile]:
            return plan_files(
                files, snapshot.version, terms, partitions, types, physical, float_widened=float_widened
            ).files

        # as Delta's filterFiles: the files kept are the files read (conflict checks)
        files = txn.filter_files(partition_filters, data_skipping=skipped)
        log.info("MERGE reads %d of %d target files (terms %s)", len(files), len(snapshot.files), terms)
        return files, source_rows

    def execute(self) -> DataFrame:
        """Run the MERGE as one transaction on the table's latest snapshot, in Delta's steps:
        plan (candidate files, schema evolution), pass 1 (find the touched files), pass 2
        (rewrite them and insert the unmatched source rows), one ``MERGE`` commit; the source
        is materialized for the passes (:mod:`~deltalog.contrib.spark.merge_source`).

        As Delta's, a one-row DataFrame ``num_affected_rows, num_updated_rows,
        num_deleted_rows, num_inserted_rows`` (no row when an idempotent MERGE was skipped)."""
        self._recorded_metrics = None
        self._run()
        rows: list[tuple[int, int, int, int]] = (
            [] if self._recorded_metrics is None else [_output_row(self._recorded_metrics)]
        )
        return self._table._spark.createDataFrame(rows, MERGE_OUTPUT_SCHEMA)

    def _run(self) -> None:
        """Run the MERGE (:meth:`execute`); the commit's metrics end up in ``_recorded_metrics``."""
        if not (self._matched or self._not_matched or self._not_matched_by_source):
            raise DeltaAnalysisError(
                "MERGE needs at least one whenMatched*, whenNotMatched* or whenNotMatchedBySource* clause"
            )
        for kind, clauses in (
            ("MATCHED", self._matched),
            ("NOT MATCHED BY TARGET", self._not_matched),
            ("NOT MATCHED BY SOURCE", self._not_matched_by_source),
        ):
            if any(c.condition is None for c in clauses[:-1]):  # Spark's NON_LAST_*_CLAUSE_OMIT_CONDITION
                raise DeltaAnalysisError(
                    f"NON_LAST_{kind.replace(' ', '_')}_CLAUSE_OMIT_CONDITION: When there are more than one {kind} "
                    f"clauses in a MERGE statement, only the last {kind} clause can omit the condition (a clause "
                    "after an unconditional one could never act)"
                )
        runner = self._with_current_time_pinned()
        run_with_source_retries(self._table._spark, runner._run_attempt)
        self._recorded_metrics = runner._recorded_metrics

    def _with_current_time_pinned(self) -> DeltaMergeBuilder:
        """This MERGE with one current time for its source, conditions and values
        (:mod:`~deltalog.contrib.spark.merge_time`): a copy, so the builder keeps its own."""
        import copy

        from deltalog.contrib.spark.merge_time import pin_current_time

        clauses = [*self._matched, *self._not_matched]
        by_source = self._not_matched_by_source

        def values(cs: list[_Clause]) -> list[Any]:
            return [v for c in cs for v in (c.assignments or {}).values()]

        def target_schema() -> StructType:
            import json

            return spark_struct(json.loads(self._table._log.update().metadata.schema_string))

        joint = [self._condition, *(c.condition for c in clauses), *values(clauses)]
        by_source_exprs = [*(c.condition for c in by_source), *values(by_source)]
        alias = self._table._alias or "target"
        pinned = pin_current_time(self._source, target_schema, alias, joint, by_source_exprs)
        if pinned is None:
            return self
        runner = copy.copy(self)
        runner._source, runner._condition = pinned.source, pinned.joint[0]
        pinned_clauses = _with_exprs(clauses, pinned.joint[1:])
        runner._matched = pinned_clauses[: len(self._matched)]
        runner._not_matched = pinned_clauses[len(self._matched) :]
        runner._not_matched_by_source = _with_exprs(by_source, pinned.by_source)
        return runner

    def _run_attempt(self, attempt: int) -> None:
        """One attempt at the MERGE (:func:`~deltalog.contrib.spark.merge_source.run_with_source_retries`
        starts another when this one lost its materialized source): its own transaction,
        passes and commit, on the source materialized for it."""
        import time

        started = time.perf_counter()
        txn = self._start_transaction()
        if begin_idempotent_command(self._table._spark, txn):
            return
        insert_only = not self._matched and not self._not_matched_by_source
        one_pass = insert_only and not self._prunes_by_source_keys(txn)
        given = self._source
        with materialized_source(given, one_pass, attempt) as materialized:
            self._source = materialized.source
            try:
                self._run_passes(txn, insert_only, started, materialized.materialize_ms)
            finally:
                self._source = given

    def _prunes_by_source_keys(self, txn: OptimisticTransaction) -> bool:
        """Whether the search condition has source keys whose ranges prune the target files
        (:func:`~deltalog.contrib.spark.merge_pruning.source_range_terms`): such a MERGE reads
        its source before its passes too."""
        import json

        from deltalog.contrib.spark.merge_pruning import condition_terms
        from deltalog.contrib.spark.schemas import top_level_types

        if self._not_matched_by_source:  # every target row may be affected: no pruning
            return False
        types = top_level_types(json.loads(txn.snapshot.metadata.schema_string))
        alias = self._table._alias or "target"
        return bool(condition_terms(self._condition, alias, types, self._source.columns).key_pairs)

    def _run_passes(self, txn: OptimisticTransaction, insert_only: bool, started: float, materialize_ms: int) -> None:
        """Plan, pass 1, pass 2 and the commit, on the source the attempt reads."""
        plan = self._plan(txn, started, materialize_ms)
        if insert_only:
            self._insert_only(plan)
            return
        touched = self._find_touched(plan)
        if not touched.files and not self._not_matched:
            log.info("MERGE matched no rows and has no insert clause; nothing to rewrite")
            self._commit_no_change(plan, touched.scanned)
            return
        lines, counts, marks = self._rewrite(plan, touched)
        self._commit(plan, touched, lines, counts, marks)

    def _start_transaction(self) -> OptimisticTransaction:
        """The MERGE's transaction, on the latest snapshot; when the source reads the target
        table (:mod:`~deltalog.contrib.spark.source_reads`), on the snapshot a bound read of
        it was made on, reading the whole table (Delta's scan of the target inside the
        MERGE's transaction)."""
        from deltalog.contrib.spark.source_reads import target_reads

        delta_log = self._table._log
        reads = target_reads(self._source, delta_log)
        txn = start_transaction(delta_log, snapshot=reads.snapshot(delta_log))
        if reads.reads_table:
            txn.read_whole_table()
        return txn

    def _plan(self, txn: OptimisticTransaction, started: float, materialize_ms: int) -> _MergePlan:
        """On the transaction (opened on the latest snapshot), resolve the clauses'
        assignments, choose the candidate target files (recorded as read) and add the source
        columns the table lacks (schema evolution). ``started``: when the attempt began
        (before the source was materialized, in ``materialize_ms``)."""
        import json

        from pyspark.sql import functions as F

        from deltalog.contrib.spark.schemas import top_level_types

        table = self._table
        snapshot = txn.snapshot
        talias = table._alias or "target"
        evolve = self._can_evolve()
        table_types = top_level_types(json.loads(snapshot.metadata.schema_string))
        table_columns = list(table_types)
        _refuse_empty_target(table_columns, evolve)
        new_columns = self._new_columns(table_columns, evolve)
        widened, structs = self._evolved_types(snapshot, table_types, evolve)
        columns = table_columns + new_columns
        evolved = {**widened, **structs}
        new_fields = self._new_column_fields(new_columns)
        new_types = {c: f.dataType for c, f in new_fields.items()}
        assignments = self._resolve_assignments(snapshot.metadata, columns, evolve, talias, {**evolved, **new_types})
        self._refuse_before_reading(snapshot.metadata, talias, assignments)
        files, source_rows = self._candidates(txn, table_columns, table_types)
        if new_columns or structs or widened:
            self._evolve_schema(txn, new_fields, structs, widened)
        scanned = scan_target(table._spark, table._log, snapshot, files)
        target = scanned.rows.withColumn(_T_PRESENT, F.lit(True)).alias(talias)
        by_source = self._by_source_on_target(assignments)
        types = {f.name: nullable_type(f.dataType) for f in target.schema.fields}
        types.update({c: nullable_type(t) for c, t in new_types.items()})
        types.update({c: nullable_type(t) for c, t in evolved.items()})
        return _MergePlan(
            txn=txn,
            started=started,
            target_alias=talias,
            columns=columns,
            new_columns=new_columns,
            evolve=evolve,
            types=types,
            assignments=assignments,
            files=files,
            source_rows=source_rows,
            materialize_ms=materialize_ms,
            target=target.withColumns(by_source).alias(talias) if by_source else target,
            source=self._source.withColumn(_S_PRESENT, F.lit(True)),
            condition=_expr(self._condition),
            scans=[scanned],
            by_source=by_source,
        )

    def _evolved_types(
        self, snapshot: Snapshot, table_types: Mapping[str, str], evolve: bool
    ) -> tuple[dict[str, DataType], dict[str, DataType]]:
        """The new types of the table columns schema evolution widens and of those whose
        structs gain fields, after refusing a source column the clauses write that does not
        implicitly cast to its table column. Widened first (a column may both widen and gain
        nested fields: Delta's mergeSchemas with TypeEvolution); the stored schema keeps the
        fields' column mapping metadata."""
        widened = self._widened_columns(snapshot, evolve)
        structs = self._evolved_structs(_with_types(snapshot.metadata.schema_string, widened), evolve)
        widened = {c: t for c, t in widened.items() if c not in structs}
        evolved = {**widened, **structs}
        self._refuse_incompatible_types({c: t for c, t in table_types.items() if c not in evolved}, evolve)
        return widened, structs

    def _by_source_on_target(self, assignments: dict[int, dict[str, Column]]) -> dict[str, Column]:
        """Delta resolves a ``whenNotMatchedBySource*`` clause against the target alone, so an
        unqualified name there is the target's column even when the source has one of that name:
        its condition and values are computed on the target's rows before the join, as the
        returned columns (:func:`_by_source_condition` names them); ``assignments`` then refer
        to them."""
        from pyspark.sql import functions as F

        columns: dict[str, Column] = {}
        for i, c in enumerate(self._not_matched_by_source):
            if c.condition is not None:
                columns[f"{_BY_SOURCE}{i}"] = _expr(c.condition)
            values = assignments.get(id(c), {})
            for j, (column, value) in enumerate(list(values.items())):
                columns[f"{_BY_SOURCE}{i}_{j}"] = value
                values[column] = F.col(f"`{_BY_SOURCE}{i}_{j}`")
        return columns

    def _refuse_before_reading(
        self, metadata: Metadata, talias: str, assignments: Mapping[int, Mapping[str, Column]]
    ) -> None:
        """What Delta's analysis refuses, refused before any job: resolved over a target of no row."""
        from deltalog.contrib.spark.logical_schema import logical_struct

        empty = self._table._spark.createDataFrame([], logical_struct(metadata.schema_string)).alias(talias)
        self._check_by_source_references(empty, assignments)
        self._refuse_unsupported_conditions(empty)

    def _refuse_unsupported_conditions(self, target: DataFrame) -> None:
        """Delta's checks of the search condition and of every clause condition
        (``ResolveDeltaMergeInto``, ``PreprocessTableMerge.checkCondition``): each resolves over
        the rows its clause sees (``DELTA_MERGE_UNRESOLVED_EXPRESSION``: a NOT MATCHED clause sees
        the source only, a NOT MATCHED BY SOURCE clause the target only), and holds no
        non-deterministic expression, aggregate or subquery
        (:mod:`~deltalog.contrib.spark.dml_conditions`); and no clause's values a window,
        aggregate or generator function; no job runs."""
        from deltalog.contrib.spark.dml_conditions import refuse_special_expressions

        both = self._source.crossJoin(target)
        source, table = self._source.columns, _target_columns(target, self._table._alias or "target")
        self._check_condition(both, self._condition, "search", [*source, *table])
        for clauses, rows, names in (
            (self._matched, both, [*source, *table]),
            (self._not_matched, self._source, source),
            (self._not_matched_by_source, target, table),
        ):
            for c in clauses:
                if c.condition is not None:
                    self._check_condition(rows, c.condition, c.kind.upper(), names)
                values = [_expr(v) for v in (c.assignments or {}).values()]
                refuse_special_expressions(rows, values, f"{c.kind.upper()} clause of MERGE operation")

    def _check_condition(self, rows: DataFrame, condition: Any, clause: str, names: Sequence[str]) -> None:
        from deltalog.contrib.spark.dml_conditions import refuse_unresolved, refuse_unsupported_condition

        refuse_unresolved(rows, _expr(condition), f"{clause} condition", names, aggregates=True)
        where = f"{clause} condition of MERGE operation"
        refuse_unsupported_condition(rows, _expr(condition), where, deterministic=True)

    def _check_by_source_references(self, target: DataFrame, assignments: Mapping[int, Mapping[str, Column]]) -> None:
        """Delta resolves a ``whenNotMatchedBySource*`` clause's values against the target only:
        a source column there is ``DELTA_MERGE_UNRESOLVED_EXPRESSION`` (the row has no source row)."""
        from deltalog.contrib.spark.dml_conditions import refuse_unresolved

        names = _target_columns(target, self._table._alias or "target")
        for c in self._not_matched_by_source:
            for value in assignments.get(id(c), {}).values():
                refuse_unresolved(target, value, f"{c.kind.upper()} clause", names)

    def _resolve_assignments(
        self, metadata: Metadata, columns: list[str], evolve: bool, talias: str, evolved: Mapping[str, DataType]
    ) -> dict[int, dict[str, Column]]:
        """``{id(clause): {column: value}}`` of the update and insert clauses, checked and
        with the insert clauses' defaults (:func:`prepare_merge_assignments`); ``evolved``:
        the new types of the table columns schema evolution changes."""
        from deltalog.contrib.spark.logical_schema import logical_struct

        table = logical_struct(metadata.schema_string)
        assignments = {
            id(c): self._assignment(c, columns, evolve, table, talias, evolved)
            for c in [*self._matched, *self._not_matched, *self._not_matched_by_source]
            if c.kind != "delete"
        }
        _, self._generated_identity = prepare_merge_assignments(
            metadata,
            [assignments[id(c)] for c in [*self._matched, *self._not_matched_by_source] if c.kind != "delete"],
            [assignments[id(c)] for c in self._not_matched],
        )
        return assignments

    def _find_touched(self, plan: _MergePlan) -> _Touched:
        """Pass 1: the candidate files holding a row some clause acts on, and Delta's check
        that no target row is matched by several source rows (whatever the clause conditions)."""
        import time

        from pyspark.sql import functions as F

        # fixed expressions as SQL text: a Column built in Python costs a dozen py4j round trips
        per_file = (
            self._rows_acted_on(plan)
            .filter("`count` > 1 OR a > 0")
            .groupBy("f")
            .agg(
                F.expr("sum(CASE WHEN `count` > 1 THEN 1 ELSE 0 END) AS `rows`"),
                F.expr("sum(CASE WHEN `count` > 1 THEN `count` ELSE 0 END) AS matches"),
                F.expr("max(a) AS a"),
            )
            .collect()
        )
        multiple_rows = sum(int(r["rows"]) for r in per_file)
        multiple_matches = sum(int(r["matches"]) for r in per_file)
        if multiple_rows and not self._only_unconditional_delete():
            raise MergeCardinalityError(
                "Cannot perform Merge as multiple source rows matched and attempted to modify the same target row "
                f"in the Delta table in possibly conflicting ways ({multiple_rows} target row(s) matched by "
                f"{multiple_matches} source rows). By SQL semantics of Merge, when multiple source rows match on "
                "the same target row, the result may be ambiguous as it is unclear which source row should be used "
                "to update or delete the matching target row. Preprocess the source to eliminate the possibility of "
                "multiple matches (e.g. dropDuplicates on the merge keys); nothing was committed."
            )
        hit = {plan.log_path(r["f"]) for r in per_file if r["a"] > 0}
        return _Touched(
            files=[f for f in plan.files if f.path in hit],
            paths=hit,
            # an unconditional delete meets such a target row once per matching source row
            overcount=multiple_matches - multiple_rows,
            scanned=time.perf_counter(),
        )

    def _matched_acts(self) -> Column:
        """Whether pass 2 must see a matched row's file: without insert clauses, when some
        matched clause's condition holds (Delta's ``matchedPredicate`` of a matched-only
        MERGE); with them always, or pass 2's join would take a source row matching a row
        of an untouched file for an unmatched one and insert it."""
        from pyspark.sql import functions as F

        if self._not_matched:
            return F.lit(True)
        acts = F.lit(False)
        for c in self._matched:
            acts = acts | _condition_holds(c)
        return acts

    def _rows_acted_on(self, plan: _MergePlan) -> DataFrame:
        """Per target row (``f``: file, ``r``: row index): how many source rows match it
        (``count``), and whether a clause acts on it (``a``: 1 when a matched row meets
        :meth:`_matched_acts`, or no source row matches and a ``whenNotMatchedBySource``
        clause's condition holds)."""
        from pyspark.sql import functions as F

        talias = plan.target_alias.replace("`", "``")
        file_col = F.expr(f"`{talias}`.`{FILE_COLUMN}` AS f")
        row_col = F.expr(f"`{talias}`.`{ROW_INDEX_COLUMN}` AS r")
        if not self._not_matched_by_source:  # only matched rows: one shuffle, by file, serves both groupings
            matched_acts = self._matched_acts().cast("int").alias("a")
            return (
                plan.target.join(plan.source, plan.condition, "inner")
                .select(file_col, row_col, matched_acts)
                .repartition("f")
                .groupBy("f", "r")
                .agg(F.expr("count(1) AS `count`"), F.expr("max(a) AS a"))
            )
        by_source_acts = F.lit(False)
        for i, c in enumerate(self._not_matched_by_source):
            by_source_acts = by_source_acts | _by_source_condition(i, c)
        s_present = F.col(_S_PRESENT).isNotNull()
        acts = F.when(s_present, self._matched_acts()).otherwise(by_source_acts)
        return (
            plan.target.join(plan.source, plan.condition, "left_outer")
            .select(file_col, row_col, F.expr(f"{_S_PRESENT} AS s"), acts.cast("int").alias("a"))
            .groupBy("f", "r")
            .agg(F.expr("count(s) AS `count`"), F.expr("max(a) AS a"))
        )

    def _rewrite(self, plan: _MergePlan, touched: _Touched) -> tuple[list[str], dict[str, int], RowMarks | None]:
        """Pass 2: every row of the touched files and of the source through the first clause
        that acts on it, written as new files (with change data when the table records it).
        Returns the written files' action lines, the number of rows per clause label, and on
        a table with deletion vectors the positions of the target rows a clause updates or
        deletes (they are marked deleted; unchanged rows are not copied).

        Without deletion vectors and change data, one job writes the rows and counts them
        per label (:func:`~deltalog.contrib.spark.merge_write.write_labelled`); otherwise the
        joined rows are cached, counted, and read again for the positions and change rows."""
        from pyspark.sql import functions as F

        with_dv = writes_deletion_vectors(self._table._spark, plan.txn.snapshot, "merge")
        change_data = plan.txn.snapshot.properties.enable_change_data_feed
        # the rows' positions: a deletion vector marks them, change data counts a deleted row once
        joined = self._labelled_rows(plan, touched, positions=with_dv or change_data)
        act = F.col(_ACTION)
        values = self._new_values(plan, joined)
        if not with_dv and not change_data:
            out = self._recomputed(plan, joined.select(*values, act))
            unwritten = frozenset(self._deleting_labels() | {"drop"})
            spec = self._tracking(self._table._checked_spec(plan.txn, out.filter(~act.isin(*unwritten)).drop(_ACTION)))
            arrange = functools.partial(self._repartitioned, plan)
            lines, counts = write_labelled(out, spec, _ACTION, self._labels(), unwritten, arrange)
            return lines, counts, None
        deleted = act.startswith("md") | act.startswith("sd")
        joined = joined.cache()
        marks: RowMarks | None = None
        try:
            counts = {r[_ACTION]: r["count"] for r in joined.groupBy(_ACTION).count().collect()}
            kept = joined.filter(~deleted & (act != "drop"))
            if with_dv:
                hits = target_rows(joined.filter(act.startswith("m") | act.startswith("s")), plan.target_alias)
                marks = {plan.log_path(name): rows for name, rows in hits.items()}
                kept = kept.filter(act != "copy")
            out = kept.select(*values, F.lit(None).cast("string").alias(CDC_TYPE_COLUMN), act)
            if change_data:
                out = self._with_change_data(plan, joined, out, values, touched.overcount)
            else:
                out = out.drop(CDC_TYPE_COLUMN)
            out = self._recomputed(plan, out).drop(_ACTION)
            lines = self._write(plan, out)
        finally:
            joined.unpersist()
        return lines, counts, marks

    def _recomputed(self, plan: _MergePlan, rows: DataFrame) -> DataFrame:
        """``rows`` (new values and their ``_ACTION`` label) with each generated column
        recomputed from the row's new values unless the row's clause assigns it (then the
        write tasks check it) or the row is copied unchanged (``copy``): Delta's
        ``PreprocessTableMerge`` resolves the generated columns per clause."""
        from pyspark.sql import functions as F

        labelled = [
            *((f"m{c.kind[0]}{i}", c) for i, c in enumerate(self._matched)),
            *((f"s{c.kind[0]}{i}", c) for i, c in enumerate(self._not_matched_by_source)),
            *((f"i{i}", c) for i, c in enumerate(self._not_matched)),
        ]
        kept: dict[str, Column] = {}
        for column in plan.columns:
            labels = ["copy"] + [
                label
                for label, c in labelled
                if c.kind != "delete" and column.lower() in {a.lower() for a in plan.assignments[id(c)]}
            ]
            kept[column] = F.col(_ACTION).isin(*labels)
        return recompute_generated(rows, plan.txn.snapshot, (), kept)

    def _labelled_rows(self, plan: _MergePlan, touched: _Touched, positions: bool) -> DataFrame:
        """The touched files' rows joined with the source (full outer when there are insert
        clauses), each labelled in ``_ACTION`` with the first clause that acts on it:
        ``m`` (matched) or ``s`` (not matched by source), then ``u``/``d`` (update/delete) and
        the clause's index; ``i`` and the index for an insert; ``copy`` for a target row no
        clause acts on; ``drop`` for a source row no insert clause takes. With ``positions``
        (or on a table that tracks rows) each target row has its file and row index; else
        the touched files are scanned without them (Spark's reader then skips the row index
        and the ``_metadata`` columns)."""
        from pyspark.sql import functions as F

        talias = plan.target_alias
        scans = plan.scans
        tracked = tracked_columns(plan.txn.snapshot)
        positions = positions or tracked is not None
        if not touched.files:
            rows = plan.target.limit(0)
        elif len(touched.files) == len(plan.files) and positions:  # every candidate is touched: pass 1's scan
            rows = plan.target
        else:  # a scan of just the touched files (with the rows' positions when they are needed)
            spark, snapshot = self._table._spark, plan.txn.snapshot
            scanned = scan_target(spark, self._table._log, snapshot, touched.files, positions)
            plan.scans.append(scanned)
            scans = [scanned]
            rows = plan.target_rows(scanned.rows)
        if tracked is not None:  # each target row's stable row id and row commit version
            plan.txn.mark_row_tracking_materialized()
            by_path = {f.path: f for f in touched.files}
            names = {name: by_path[path] for scan in scans for name, path in scan.paths.items() if path in by_path}
            rows = stable_row_tracking(rows, names, tracked, FILE_COLUMN, ROW_INDEX_COLUMN).alias(talias)
        joined = rows.join(plan.source, plan.condition, "full_outer" if self._not_matched else "left_outer")
        t_present = F.col(f"{talias}.{_T_PRESENT}").isNotNull()
        s_present = F.col(_S_PRESENT).isNotNull()
        matched = t_present & s_present
        by_source = t_present & ~s_present
        action: Column | None = None
        for i, c in enumerate(self._matched):
            action = chain_value(action, _holds(matched, c), F.lit(f"m{c.kind[0]}{i}"))
        for i, c in enumerate(self._not_matched_by_source):
            action = chain_value(action, by_source & _by_source_condition(i, c), F.lit(f"s{c.kind[0]}{i}"))
        action = chain_value(action, t_present, F.lit("copy"))
        for i, c in enumerate(self._not_matched):
            action = chain_value(action, _holds(~t_present, c), F.lit(f"i{i}"))
        return joined.withColumn(_ACTION, action.otherwise(F.lit("drop")))

    def _new_values(self, plan: _MergePlan, joined: DataFrame) -> list[Column]:
        """Each output column of a labelled row of ``joined``: the assignment of its update or
        insert clause, else the target row's current value; each cast to the column's type
        by name (:mod:`~deltalog.contrib.spark.update_expressions`)."""
        from pyspark.sql import functions as F

        act = F.col(_ACTION)
        branches: dict[str, list[Branch]] = {}
        for col in plan.columns:
            pairs = branches.setdefault(col, [])
            current = plan.target_value(col)
            for prefix, clauses in (("mu", self._matched), ("su", self._not_matched_by_source)):
                for i, c in enumerate(clauses):
                    if c.kind == "update" and col in plan.assignments[id(c)]:
                        # updateAll under schema evolution keeps the target's struct fields the source lacks
                        kept = current if plan.evolve and c.assignments is None else None
                        pairs.append((act == f"{prefix}{i}", plan.assignments[id(c)][col], kept))
            for i, c in enumerate(self._not_matched):
                pairs.append((act == f"i{i}", plan.assignments[id(c)].get(col, F.lit(None)), None))
        current_values = {col: plan.target_value(col) for col in plan.columns}
        values = _chained(joined, plan.columns, branches, current_values, plan.types, plan.evolve)
        return values + self._carried(plan, act.startswith("mu") | act.startswith("su"))

    def _carried(self, plan: _MergePlan, updated: Column | None) -> list[Column]:
        """Row tracking's materialized columns a written row carries (none when the table
        does not track rows): see :mod:`~deltalog.contrib.spark.row_tracking`."""
        tracked = tracked_columns(plan.txn.snapshot)
        return [] if tracked is None else carried_columns(tracked, updated)

    def _with_change_data(
        self, plan: _MergePlan, joined: DataFrame, out: DataFrame, values: Sequence[Column], overcount: int
    ) -> DataFrame:
        """``out`` plus the change data of Delta's CDF: the pre- and post-image of each updated
        row, each deleted target row (once, however many source rows matched it) and each
        inserted row. An inserted row's change row is the same row of ``out`` emitted twice
        (Delta's ``MergeOutputGeneration`` explodes each output row), so values computed
        once per row (generated identity values) are the same in both."""
        from pyspark.sql import functions as F

        act = F.col(_ACTION)
        no_change = F.lit(None).cast("string")
        twice = F.when(act.startswith("i"), F.array(no_change, F.lit("insert"))).otherwise(F.array(no_change))
        out = out.drop(CDC_TYPE_COLUMN).select("*", F.explode(twice).alias(CDC_TYPE_COLUMN))
        updated = joined.filter(act.startswith("mu") | act.startswith("su"))
        current = {c: plan.target_value(c) for c in plan.columns}
        # change data files hold no row tracking columns: carried as they are, then left out
        old = _chained(joined, plan.columns, {}, current, plan.types, plan.evolve) + self._carried(plan, None)
        deleted = joined.filter(act.startswith("md") | act.startswith("sd"))
        if overcount:  # one delete change row per target row (Delta's DeduplicateCDFDeletes)
            deleted = deleted.dropDuplicates([FILE_COLUMN, ROW_INDEX_COLUMN])
        unchanged = F.lit("copy").alias(_ACTION)  # the old values: no generated column recomputed
        return (
            out.unionByName(updated.select(*old, F.lit("update_preimage").alias(CDC_TYPE_COLUMN), unchanged))
            .unionByName(updated.select(*values, F.lit("update_postimage").alias(CDC_TYPE_COLUMN), act))
            .unionByName(deleted.select(*old, F.lit("delete").alias(CDC_TYPE_COLUMN), unchanged))
        )

    def _commit(
        self,
        plan: _MergePlan,
        touched: _Touched,
        lines: Sequence[str],
        counts: Mapping[str, int],
        marks: RowMarks | None = None,
    ) -> None:
        """One ``MERGE`` commit: the touched files removed (or, with ``marks``, their acted-on
        rows marked in deletion vectors), the written files added, with Delta's operation
        metrics."""
        adds, cdcs = file_actions(lines)
        packing = dv_packing_target_size(self._table._spark)
        dv = None if marks is None else mark_deleted_rows(self._table._log, plan.txn, touched.files, marks, packing)

        def total(prefix: str) -> int:
            return sum(n for k, n in counts.items() if k.startswith(prefix))

        metrics = _metrics(
            plan=plan,
            inserted=total("i"),
            matched_updated=total("mu"),
            by_source_updated=total("su"),
            matched_deleted=total("md") - touched.overcount,
            by_source_deleted=total("sd"),
            copied=counts.get("copy", 0) if dv is None else 0,
            adds=adds,
            cdcs=cdcs,
            removed=touched.files if dv is None else dv.fully_removed,
            scanned=touched.scanned,
        )
        if dv is not None:
            metrics.update(dv.metrics("numTarget"))
            spec = self._table._write_spec(plan.txn.snapshot)
            version = commit_with_deletion_vectors(plan.txn, dv, lines, self._operation(metrics), spec)
            log.info("MERGE marked rows in deletion vectors, version %s (%s)", version, metrics)
            return
        version = self._table._commit_rewrite(plan.txn, touched.files, lines, self._operation(metrics))
        log.info("MERGE committed version %s (%s)", version, metrics)

    def _commit_no_change(self, plan: _MergePlan, scanned: float) -> None:
        """A MERGE that changed no row commits only the session's ``SetTransaction`` of an
        idempotent MERGE (as Delta), else nothing but what Delta's ``commitIfNeeded`` records
        (an empty commit on a ``WriteSerializable`` table)."""
        metrics = _metrics(
            plan=plan,
            inserted=0,
            matched_updated=0,
            by_source_updated=0,
            matched_deleted=0,
            by_source_deleted=0,
            copied=0,
            adds=[],
            cdcs=[],
            removed=[],
            scanned=scanned,
        )
        commit_set_transaction_only(plan.txn, self._operation(metrics))

    def _labels(self) -> list[str]:
        """Every label :meth:`_labelled_rows` can give a row."""
        matched = [f"m{c.kind[0]}{i}" for i, c in enumerate(self._matched)]
        by_source = [f"s{c.kind[0]}{i}" for i, c in enumerate(self._not_matched_by_source)]
        return [*matched, *by_source, "copy", *(f"i{i}" for i in range(len(self._not_matched))), "drop"]

    def _deleting_labels(self) -> set[str]:
        """The labels (see :meth:`_labelled_rows`) of the clauses that delete the row."""
        matched = {f"md{i}" for i, c in enumerate(self._matched) if c.kind == "delete"}
        return matched | {f"sd{i}" for i, c in enumerate(self._not_matched_by_source) if c.kind == "delete"}

    def _repartitioned(self, plan: _MergePlan, out: DataFrame) -> DataFrame:
        """On a partitioned table, ``out`` repartitioned by the partition columns (Delta's
        ``merge.repartitionBeforeWrite.enabled``, on by default), so each touched partition
        gets about one file instead of one per shuffle task."""
        from pyspark.sql import functions as F

        partitions = list(plan.txn.snapshot.metadata.partition_columns)
        conf = _conf(self._table._spark, "spark.databricks.delta.merge.repartitionBeforeWrite.enabled", "true")
        if partitions and conf.strip().lower() != "false":
            out = out.repartition(*[F.col(quote_if_needed(c)) for c in partitions])
        return out

    def _write(self, plan: _MergePlan, out: DataFrame) -> list[str]:
        """Write the MERGE's rows (:meth:`_repartitioned` first)."""
        out = self._repartitioned(plan, out)
        return write_dataframe(out, self._tracking(self._table._checked_spec(plan.txn, out)))

    def _tracking(self, spec: WriteSpec) -> WriteSpec:
        """``spec`` with the identity columns the insert clauses generate tracked by the write
        tasks, whose largest value written moves the high-water mark at the commit."""
        if not self._generated_identity or spec.default_expressions is None:
            return spec
        defaults = replace(spec.default_expressions, tracked_identity=self._generated_identity)
        return replace(spec, default_expressions=defaults)

    def _insert_only(self, plan: _MergePlan) -> None:
        """Only ``whenNotMatchedInsert*`` clauses: write ``source LEFT ANTI JOIN target`` through
        the first insert clause whose condition holds, and commit only adds (Delta's
        ``InsertOnlyMergeExecutor``): target rows are never rewritten, and a target row matched
        by several source rows is no error."""
        import time

        from pyspark.sql import functions as F

        action: Column | None = None
        for i, c in enumerate(self._not_matched):
            action = chain_value(action, _condition_holds(c), F.lit(f"i{i}"))
        assert action is not None  # execute() refuses a MERGE without clauses
        rows = plan.source.join(plan.target, plan.condition, "left_anti")
        rows = rows.withColumn(_ACTION, action.otherwise(F.lit("drop"))).filter(F.col(_ACTION) != "drop")
        branches: dict[str, list[Branch]] = {
            col: [
                (F.col(_ACTION) == f"i{i}", plan.assignments[id(c)].get(col, F.lit(None)), None)
                for i, c in enumerate(self._not_matched)
            ]
            for col in plan.columns
        }
        nulls = {col: F.lit(None) for col in plan.columns}
        values = _chained(rows, plan.columns, branches, nulls, plan.types, plan.evolve)
        out = self._recomputed(plan, rows.select(*values, F.col(_ACTION))).drop(_ACTION)
        scanned = time.perf_counter()
        lines = self._write(plan, out)
        adds, _ = file_actions(lines)
        if not adds:
            log.info("MERGE inserted no rows; nothing to commit")
            self._commit_no_change(plan, scanned)
            return
        counted = [a.num_records() for a in adds]
        inserted = sum(n for n in counted if n is not None) if None not in counted else out.count()
        metrics = _metrics(
            plan=plan,
            inserted=inserted,
            matched_updated=0,
            by_source_updated=0,
            matched_deleted=0,
            by_source_deleted=0,
            copied=0,
            adds=adds,
            cdcs=[],
            removed=[],
            scanned=scanned,
        )
        version = self._table._commit_rewrite(plan.txn, [], lines, self._operation(metrics))
        log.info("MERGE (insert only) committed version %d (%s)", version, metrics)


#: the output of Delta's ``MergeIntoCommand``
MERGE_OUTPUT_SCHEMA = (
    "num_affected_rows long not null, num_updated_rows long not null, "
    "num_deleted_rows long not null, num_inserted_rows long not null"
)


def _output_row(metrics: Mapping[str, str]) -> tuple[int, int, int, int]:
    """MERGE's output row from its commit's metrics: affected rows are the updated, deleted
    and inserted target rows (Delta's ``MergeIntoCommand.runMerge``)."""
    updated, deleted, inserted = (
        int(metrics[k]) for k in ("numTargetRowsUpdated", "numTargetRowsDeleted", "numTargetRowsInserted")
    )
    return updated + deleted + inserted, updated, deleted, inserted


def _metrics(
    *,
    plan: _MergePlan,
    inserted: int,
    matched_updated: int,
    by_source_updated: int,
    matched_deleted: int,
    by_source_deleted: int,
    copied: int,
    adds: Sequence[AddFile],
    cdcs: Sequence[AddCDCFile],
    removed: Sequence[AddFile],
    scanned: float,
) -> dict[str, str]:
    """The operation metrics of a MERGE commit: every name of Delta's
    ``DeltaOperationMetrics.MERGE``, as Delta records them all (the deletion vector counts are
    0 here; a commit that writes deletion vectors sets them)."""
    import time

    now = time.perf_counter()
    updated = matched_updated + by_source_updated
    started = plan.started
    values = {
        "numSourceRows": plan.source_rows,
        "numTargetRowsInserted": inserted,
        "numTargetRowsUpdated": updated,
        "numTargetRowsMatchedUpdated": matched_updated,
        "numTargetRowsNotMatchedBySourceUpdated": by_source_updated,
        "numTargetRowsDeleted": matched_deleted + by_source_deleted,
        "numTargetRowsMatchedDeleted": matched_deleted,
        "numTargetRowsNotMatchedBySourceDeleted": by_source_deleted,
        "numTargetRowsCopied": copied,
        "numOutputRows": inserted + updated + copied,
        "numTargetFilesAdded": len(adds),
        "numTargetFilesRemoved": len(removed),
        "numTargetChangeFilesAdded": len(cdcs),
        "numTargetBytesAdded": sum(a.size for a in adds),
        "numTargetBytesRemoved": sum(f.size for f in removed),
        "executionTimeMs": int((now - started) * 1000),
        "scanTimeMs": int((scanned - started) * 1000),
        "rewriteTimeMs": int((now - scanned) * 1000),
        "materializeSourceTimeMs": plan.materialize_ms,
        "numTargetDeletionVectorsAdded": 0,
        "numTargetDeletionVectorsRemoved": 0,
        "numTargetDeletionVectorsUpdated": 0,
    }
    return {k: str(v) for k, v in values.items()}


#: ``(when, value, original)``: a branch of a column's value; ``original`` is the target
#: row's value whose struct fields the value lacks are kept (``updateAll`` under schema evolution)
Branch = tuple["Column", "Column", "Column | None"]


def _chained(
    df: DataFrame,
    columns: Sequence[str],
    branches: Mapping[str, Sequence[Branch]],
    otherwise: Mapping[str, Column],
    types: Mapping[str, DataType],
    evolve: bool,
) -> list[Column]:
    """Per column of ``columns``: the value of its first branch whose condition holds, else
    ``otherwise``; every value cast to the column's type by name (its own type resolved
    against ``df``, in one analysis for all of them; see
    :mod:`~deltalog.contrib.spark.update_expressions`)."""
    from pyspark.sql import functions as F

    from deltalog.contrib.spark.update_expressions import StructCast, cast_if_needed

    flat: list[tuple[str, Column, Column | None]] = []
    for col in columns:
        flat.extend((col, v, original) for _, v, original in branches.get(col, ()))
        flat.append((col, otherwise[col], None))
    probes = [v for _, v, original in flat for v in (v, F.lit(None) if original is None else original)]
    resolved = df.select(*[v.alias(f"_{i}") for i, v in enumerate(probes)]).schema.fields
    cast = iter(
        cast_if_needed(
            v, resolved[2 * i].dataType, types[col], col, StructCast(evolve, o, resolved[2 * i + 1].dataType)
        )
        for i, (col, v, o) in enumerate(flat)
    )
    out = []
    for col in columns:
        acc: Column | None = None
        for when, _, _ in branches.get(col, ()):
            acc = chain_value(acc, when, next(cast))
        last = next(cast)
        out.append((last if acc is None else acc.otherwise(last)).alias(col))
    return out


def chain_value(acc: Column | None, when: Column, value: Column) -> Column:
    """``acc.when(when, value)``, or ``F.when(when, value)`` to start a chain."""
    from pyspark.sql import functions as F

    return F.when(when, value) if acc is None else acc.when(when, value)


def _target_columns(target: DataFrame, alias: str) -> list[str]:
    """The target's columns a clause may name, qualified by its ``alias`` as Delta lists them
    (``t.key``), without the scan's own columns."""
    return [f"{alias}.{c}" for c in target.columns if not c.startswith("__deltalog_")]


def _unresolved_target(
    name: str, kind: str, columns: Sequence[str], resolver: Resolver, hint: str = ""
) -> DeltaAnalysisError:
    """Delta's ``DELTA_MERGE_UNRESOLVED_EXPRESSION`` for a SET or INSERT name that resolves
    to no target column (by the session's resolver)."""
    sensitive = str(resolver.case_sensitive).lower()
    return DeltaAnalysisError(
        f"DELTA_MERGE_UNRESOLVED_EXPRESSION: Cannot resolve {name} in {kind.upper()} clause given columns "
        f"{', '.join(columns)} (spark.sql.caseSensitive={sensitive}){hint}"
    )


def _conf(spark: SparkSession, key: str, default: str) -> str:
    value = spark.conf.get(key, default)
    return default if value is None else str(value)


def _refuse_empty_target(table_columns: list[str], evolve: bool) -> None:
    """A target with no columns takes the source's only with schema evolution (Delta's
    ``ResolveDeltaMergeInto``: ``DELTA_MERGE_INTO_EMPTY_SCHEMA_TARGET``)."""
    if not table_columns and not evolve:
        raise DeltaAnalysisError(
            "DELTA_MERGE_INTO_EMPTY_SCHEMA_TARGET: Cannot MERGE INTO a table with no columns. The target "
            "table must have columns, or schema evolution must be enabled (withSchemaEvolution())"
        )
