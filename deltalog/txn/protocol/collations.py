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

import copy
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "COLLATIONS_KEY",
    "collated_map_keys",
    "collated_type_name",
    "collation_identifier",
    "field_collation",
    "has_collated_string",
    "is_collated_type",
    "string_collation",
    "with_collation",
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


def collation_identifier(name: str) -> str | None:
    """The schema identifier of a Spark collation name, with Spark's provider (``spark`` for
    the ``UTF8_*`` collations, ``icu`` for the others): ``UTF8_LCASE`` ->
    ``spark.UTF8_LCASE``, ``unicode_ci`` -> ``icu.UNICODE_CI``; None for ``UTF8_BINARY``."""
    upper = name.strip().upper()
    if upper == _BINARY:
        return None
    if upper.startswith("UTF8_"):
        return f"spark.{upper}"
    return f"icu.{upper if upper.startswith('UNICODE') else name.strip()}"


def string_collation(type_name: Any) -> tuple[bool, str | None]:
    """``(is a string type, its collation identifier)`` of a type as Spark names it
    (``string``, ``STRING COLLATE UTF8_LCASE``); ``(False, None)`` for any other type."""
    if not isinstance(type_name, str):
        return False, None
    words = type_name.split()
    if len(words) == 1 and words[0].lower() == "string":
        return True, None
    if len(words) == 3 and words[0].lower() == "string" and words[1].lower() == "collate":
        return True, collation_identifier(words[2])
    return False, None


def with_collation(schema: Mapping[str, Any], path: Sequence[str], identifier: str | None) -> dict[str, Any]:
    """``schema`` with the string at ``path`` (struct fields by name, case-insensitive;
    ``element``/``key``/``value`` step into arrays and maps) given ``identifier`` (None: the
    default binary collation, whose key is removed). Raises ``KeyError`` when ``path`` names
    no column and ``TypeError`` when it is not a string."""
    out = copy.deepcopy(dict(schema))
    t: Any = out
    holder: dict[str, Any] | None = None
    key: list[str] = []
    for step in path:
        kind = t.get("type") if isinstance(t, dict) else None
        if kind == "struct":
            holder = next((f for f in t["fields"] if f["name"].lower() == step.lower()), None)
            if holder is None:
                raise KeyError(step)
            key, t = [holder["name"]], holder["type"]
        elif kind == "array" and step.lower() == "element":
            key, t = [*key, "element"], t["elementType"]
        elif kind == "map" and step.lower() in ("key", "value"):
            key, t = [*key, step.lower()], t[f"{step.lower()}Type"]
        else:
            raise KeyError(step)
    if t != "string" or holder is None:
        raise TypeError(f"{'.'.join(path)} is not a string")
    metadata = dict(holder.get("metadata") or {})
    collations = {k: v for k, v in (metadata.get(COLLATIONS_KEY) or {}).items() if k != ".".join(key)}
    if identifier is not None:
        collations[".".join(key)] = identifier
    metadata.pop(COLLATIONS_KEY, None)
    holder["metadata"] = {**metadata, COLLATIONS_KEY: collations} if collations else metadata
    return out
