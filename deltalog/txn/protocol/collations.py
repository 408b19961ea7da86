"""Collated strings (the ``collations`` writer feature, Delta's collated-string-type RFC).

A string column's collation lives in the ``__COLLATIONS`` metadata of its nearest ancestor
struct field, keyed by the field name (``name``, or ``name.element`` / ``name.key`` /
``name.value`` for strings inside arrays and maps) with an unversioned identifier
``provider.name`` (``spark.UTF8_LCASE``, ``icu.UNICODE_CI``). A column without one compares
binary (``UTF8_BINARY``), which is never written.

Spark names a collated string type ``string collate UTF8_LCASE``; the Spark layer carries
that name as the column's type so that everything comparing values as the log holds them
(file skipping from ``minValues``/``maxValues``, partition pruning, row-group skipping),
which compares binary, leaves such a column alone: the RFC lets a reader skip files only by
statistics of the collation the comparison uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "COLLATIONS_KEY",
    "collated_map_keys",
    "collated_type_name",
    "field_collation",
    "has_collated_string",
    "is_collated_type",
]

COLLATIONS_KEY = "__COLLATIONS"
_TYPE_PREFIX = "string collate "
_BINARY = "UTF8_BINARY"


def field_collation(field: Mapping[str, Any], path: str | None = None) -> str | None:
    """The collation identifier of the string at ``path`` (the field's name by default) in a
    schema field's JSON; None when it compares binary."""
    collations = (field.get("metadata") or {}).get(COLLATIONS_KEY) or {}
    value = collations.get(field["name"] if path is None else path) if isinstance(collations, Mapping) else None
    if not isinstance(value, str) or _collation_name(value).upper() == _BINARY:
        return None
    return value


def _collation_name(identifier: str) -> str:
    parts = identifier.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def collated_type_name(identifier: str) -> str:
    """Spark's name of a string type of collation ``identifier`` (``spark.UTF8_LCASE`` ->
    ``string collate UTF8_LCASE``)."""
    return _TYPE_PREFIX + _collation_name(identifier)


def is_collated_type(type_name: str) -> bool:
    """Whether a Spark type name is a string of a collation other than binary."""
    t = type_name.strip().lower()
    return t.startswith(_TYPE_PREFIX) and t[len(_TYPE_PREFIX) :].strip().upper() != _BINARY


def has_collated_string(fields: Any) -> bool:
    """Whether any field of a schema's ``fields`` JSON, at any depth, names a collation
    other than binary (what makes Delta enable the ``collations`` feature)."""
    for f in fields or ():
        collations = (f.get("metadata") or {}).get(COLLATIONS_KEY) or {}
        if any(field_collation(f, key) for key in collations):
            return True
        if _has_nested(f.get("type")):
            return True
    return False


def _has_nested(dt: Any) -> bool:
    if not isinstance(dt, Mapping):
        return False
    kind = dt.get("type")
    if kind == "struct":
        return has_collated_string(dt.get("fields"))
    if kind == "array":
        return _has_nested(dt.get("elementType"))
    if kind == "map":
        return _has_nested(dt.get("keyType")) or _has_nested(dt.get("valueType"))
    return False


def collated_map_keys(fields: Any, prefix: str = "") -> list[str]:
    """The paths of the collated map keys in a schema's ``fields`` JSON, at any depth: Delta
    (Databricks, Delta Kernel) refuses a collated string as a map key."""
    out: list[str] = []
    for f in fields or ():
        collations = (f.get("metadata") or {}).get(COLLATIONS_KEY) or {}
        for key in collations:
            if "key" in str(key).split(".")[1:] and field_collation(f, key):
                out.append(prefix + str(key))
        out.extend(_nested_map_keys(f.get("type"), f"{prefix}{f.get('name')}."))
    return out


def _nested_map_keys(dt: Any, prefix: str) -> list[str]:
    if not isinstance(dt, Mapping):
        return []
    kind = dt.get("type")
    if kind == "struct":
        return collated_map_keys(dt.get("fields"), prefix)
    if kind == "array":
        return _nested_map_keys(dt.get("elementType"), prefix + "element.")
    if kind == "map":
        return _nested_map_keys(dt.get("keyType"), prefix + "key.") + _nested_map_keys(
            dt.get("valueType"), prefix + "value."
        )
    return []
