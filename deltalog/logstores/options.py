"""Storage options: a string mapping that never shows its secrets.

Option names follow delta-rs and the cloud SDKs (``AWS_ENDPOINT_URL``,
``AZURE_STORAGE_CONNECTION_STRING``, ...). Lookups are case-insensitive, since both
``aws_region`` and ``AWS_REGION`` are common spellings.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

__all__ = ["StorageOptions", "is_secret_key", "redact"]

_SECRET_KEY = re.compile(
    r"SECRET|PASSWORD|TOKEN|CONNECTION_STRING|ACCOUNT_KEY|ACCESS_KEY|SAS|CREDENTIAL|PRIVATE",
    re.IGNORECASE,
)
_REDACTED = "***"


def is_secret_key(key: str) -> bool:
    """Whether an option of this name may hold a secret (and must never be shown)."""
    return bool(_SECRET_KEY.search(key))


def redact(text: str, options: Mapping[str, str]) -> str:
    """Replace every secret value of ``options`` that occurs in ``text``."""
    for key, value in options.items():
        if value and len(value) >= 4 and is_secret_key(key):
            text = text.replace(value, _REDACTED)
    return text


class StorageOptions(Mapping[str, str]):
    """Immutable, case-insensitive mapping of storage options with redacting ``repr``."""

    __slots__ = ("_items",)

    def __init__(self, options: Mapping[str, object] | None = None) -> None:
        items: dict[str, tuple[str, str]] = {}
        for key, value in (options or {}).items():
            if value is None:
                continue
            if not isinstance(key, str):
                raise TypeError(f"storage option names must be strings, got {key!r}")
            items[key.upper()] = (key, value if isinstance(value, str) else str(value))
        self._items = items

    def __getitem__(self, key: str) -> str:
        return self._items[key.upper()][1]

    def __iter__(self) -> Iterator[str]:
        return (original for original, _ in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def first(self, *keys: str, default: str | None = None) -> str | None:
        """The value of the first of ``keys`` that is set."""
        for key in keys:
            hit = self._items.get(key.upper())
            if hit is not None:
                return hit[1]
        return default

    def flag(self, *keys: str, default: bool = False) -> bool:
        """A boolean option (``true/false/1/0/yes/no``)."""
        value = self.first(*keys)
        if value is None:
            return default
        return value.strip().lower() in ("1", "true", "yes", "on")

    def on_unless_false(self, *keys: str) -> bool:
        """A switch that is on by default (a safety check, a log of what ran): off only when
        the first of ``keys`` that is set says ``false/0/no/off``; any other value keeps it on."""
        value = self.first(*keys)
        return value is None or value.strip().lower() not in ("false", "0", "no", "off")

    def to_dict(self) -> dict[str, str]:
        """A plain dict with the secrets in it (for rebuilding a store elsewhere)."""
        return {original: value for original, value in self._items.values()}

    def redacted(self) -> dict[str, str]:
        """A plain dict safe to print or log."""
        return {original: (_REDACTED if is_secret_key(original) else value) for original, value in self._items.values()}

    def __repr__(self) -> str:
        return f"StorageOptions({self.redacted()!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StorageOptions):
            return self._items == other._items
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._items.items())))

    def __reduce__(self) -> tuple[type[StorageOptions], tuple[dict[str, str]]]:
        return (StorageOptions, (self.to_dict(),))
