"""What SET / UNSET TBLPROPERTIES do beyond storing keys: the catalog's reserved keys
(``AlterTableSetPropertiesDeltaCommand``) and CHECK constraints, which are Delta's
``ADD CONSTRAINT`` and ``DROP CONSTRAINT`` (``AlterTableAddConstraintDeltaCommand``,
``AlterTableDropConstraintDeltaCommand``).

- ``comment`` is the table's description, not a property: set, it becomes
  ``metaData.description``; unset, the description is removed. ``location`` and ``provider``
  are refused (``DELTA_CANNOT_CHANGE_LOCATION``, ``DELTA_CANNOT_CHANGE_PROVIDER``).

- A constraint's key is ``delta.constraints.<name in lower case>`` (Delta's
  ``Constraints.checkConstraintPropertyName``); names are matched in any case.
- Adding a name the table already has with another expression is refused
  (``DELTA_CONSTRAINT_ALREADY_EXISTS``: drop it first); the same expression again changes
  nothing. ``__CHAR_VARCHAR_STRING_LENGTH_CHECK__`` is reserved (``DELTA_INVALID_CONSTRAINT_NAME``).
- Dropping a constraint the table lacks is refused without IF EXISTS
  (``DELTA_CONSTRAINT_DOES_NOT_EXIST``).
- A call that sets (unsets) exactly one constraint and nothing else is logged as Delta logs
  ``ADD CONSTRAINT`` (``DROP CONSTRAINT``), with its name and expression.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from deltalog.txn.commit.operations import AddConstraint, DropConstraint, Operation
from deltalog.txn.protocol.clustering import ClusteringColumnsError
from deltalog.txn.protocol.properties import CHECK_CONSTRAINT_PREFIX, InvalidPropertyError, ReservedPropertyError

__all__ = [
    "COMMENT",
    "constraint_drop_operation",
    "constraint_key",
    "constraint_set_operation",
    "normalize_constraints",
    "without_reserved",
]

#: the catalog's table comment (Spark's ``TableCatalog.PROP_COMMENT``): the metadata's description
COMMENT = "comment"

#: the name Delta reserves for its CHAR/VARCHAR length check (``CharVarcharConstraint.INVARIANT_NAME``)
_RESERVED_NAME = "__CHAR_VARCHAR_STRING_LENGTH_CHECK__"


def without_reserved(values: Mapping[str, str]) -> dict[str, str]:
    """``values`` less ``comment`` (the description); ``location`` / ``provider`` raise
    :class:`InvalidPropertyError`, as Delta's SET TBLPROPERTIES."""
    if "location" in values:
        raise InvalidPropertyError(
            "[DELTA_CANNOT_CHANGE_LOCATION] Cannot change the 'location' of the Delta table using SET "
            "TBLPROPERTIES. Please use ALTER TABLE SET LOCATION instead; nothing was committed"
        )
    if "provider" in values:
        raise InvalidPropertyError(
            "[DELTA_CANNOT_CHANGE_PROVIDER] 'provider' is a reserved table property, and cannot be altered; "
            "nothing was committed"
        )
    if "clusteringColumns" in values:
        raise ReservedPropertyError("clusteringColumns")
    if "delta.feature.clustering" in values:
        raise ClusteringColumnsError(
            "[DELTA_ALTER_TABLE_SET_CLUSTERING_TABLE_FEATURE_NOT_ALLOWED] Cannot enable clustering table feature "
            "using ALTER TABLE SET TBLPROPERTIES: cluster the table by its columns instead (cluster_by, Delta's "
            "ALTER TABLE ... CLUSTER BY), which adds the feature; nothing was committed"
        )
    return {k: v for k, v in values.items() if k != COMMENT}


def _is_constraint(key: str) -> bool:
    return key.lower().startswith(CHECK_CONSTRAINT_PREFIX)


def _name(key: str) -> str:
    return key[len(CHECK_CONSTRAINT_PREFIX) :]


def constraint_key(configuration: Mapping[str, str], name: str) -> str:
    """The key of constraint ``name`` in ``configuration`` (matched in any case), else the
    key Delta would store it under."""
    for key in configuration:
        if _is_constraint(key) and _name(key).lower() == name.lower():
            return key
    return CHECK_CONSTRAINT_PREFIX + name.lower()


def normalize_constraints(configuration: Mapping[str, str], values: Mapping[str, str]) -> dict[str, str]:
    """``values`` with each constraint under its key (:func:`constraint_key`); raises
    :class:`InvalidPropertyError` for a reserved name or a name the table has with another
    expression."""
    out: dict[str, str] = {}
    for key, value in values.items():
        if not _is_constraint(key):
            out[key] = value
            continue
        name = _name(key)
        if name == _RESERVED_NAME:
            raise InvalidPropertyError(
                f"[DELTA_INVALID_CONSTRAINT_NAME] Cannot use {name} as the name of a CHECK constraint. "
                "This name is reserved; nothing was committed"
            )
        stored = constraint_key(configuration, name)
        old = configuration.get(stored)
        if old is not None and old != value:
            raise InvalidPropertyError(
                f"[DELTA_CONSTRAINT_ALREADY_EXISTS] Constraint '{name}' already exists. Please delete the old "
                f"constraint first (unset {stored}). Old constraint:\n{old}"
            )
        out[stored] = value
    return out


def constraint_set_operation(given: Mapping[str, str]) -> Operation | None:
    """``ADD CONSTRAINT`` when ``given`` (the keys as the user spelt them) is one constraint."""
    if len(given) != 1:
        return None
    ((key, value),) = given.items()
    return AddConstraint(constraint_name=_name(key), expr=value) if _is_constraint(key) else None


def constraint_drop_operation(
    configuration: Mapping[str, str], keys: Sequence[str], if_exists: bool, table: str
) -> tuple[list[str], Operation | None]:
    """The keys to unset, constraints resolved to the table's keys, and ``DROP CONSTRAINT``
    when ``keys`` is one constraint. A missing constraint without ``if_exists`` raises
    :class:`InvalidPropertyError` (``DELTA_CONSTRAINT_DOES_NOT_EXIST``)."""
    resolved: list[str] = []
    for key in keys:
        if not _is_constraint(key):
            resolved.append(key)
            continue
        stored = constraint_key(configuration, _name(key))
        if stored not in configuration and not if_exists:
            raise InvalidPropertyError(
                f"[DELTA_CONSTRAINT_DOES_NOT_EXIST] Cannot drop nonexistent constraint {_name(key)} from table "
                f"{table}. To avoid throwing an error, pass if_exists=True (IF EXISTS); nothing was committed"
            )
        resolved.append(stored)
    if len(keys) == 1 and _is_constraint(keys[0]):
        return resolved, DropConstraint(constraint_name=_name(keys[0]), expr=configuration.get(resolved[0]))
    return resolved, None
