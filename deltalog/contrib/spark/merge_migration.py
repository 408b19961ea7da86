"""The part of a MERGE source's schema that schema evolution merges into the table's, as
Delta's ``ResolveDeltaMergeInto.computePostEvolutionTargetSchema``: a source field is kept
when a MATCHED or NOT MATCHED clause assigns the table column of its name (then wholly), when
a clause assigns a field inside it (then a struct keeps just those fields, recursively), or
when a clause is ``updateAll``/``insertAll`` (then every field). The value a clause assigns
plays no part: ``SET a = s.a + 1`` keeps the source's ``a``, so a wider ``a`` widens the table's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from deltalog.contrib.spark.resolver import Resolver

__all__ = ["migration_schema", "struct_fields"]

_Json = dict[str, object]


def migration_schema(
    source: Mapping[str, object], assigned: Sequence[Sequence[str]], star: bool, resolver: Resolver
) -> _Json:
    """``source`` (a struct's JSON) filtered to the fields the clauses write: ``assigned`` are
    the assigned table column paths (without the target alias), ``star`` whether any clause is
    ``updateAll``/``insertAll``; names compare by ``resolver``, the session's."""
    return _filter(source, [], [list(p) for p in assigned], star, resolver)


def _filter(struct: Mapping[str, object], base: list[str], assigned: list[list[str]], star: bool, r: Resolver) -> _Json:
    def is_prefix(prefix: list[str], path: list[str]) -> bool:
        return len(prefix) <= len(path) and all(r(a, b) for a, b in zip(prefix, path))

    fields: list[object] = []
    for field in struct_fields(struct):
        path = [*base, str(field["name"])]
        kind = field["type"]
        if any(len(p) == len(path) and is_prefix(path, p) for p in assigned):
            fields.append(field)
        elif (
            isinstance(kind, dict)
            and kind.get("type") == "struct"
            and (star or any(is_prefix(path, p) for p in assigned))
        ):
            fields.append({**field, "type": _filter(kind, path, assigned, star, r)})
        elif star:
            fields.append(field)
    return {**struct, "fields": fields}


def struct_fields(struct: Mapping[str, object]) -> list[dict[str, object]]:
    """The fields of a struct's JSON."""
    fields = struct.get("fields", [])
    assert isinstance(fields, list)
    return [f for f in fields if isinstance(f, dict)]
