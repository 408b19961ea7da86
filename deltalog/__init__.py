"""deltalog: the Delta Lake transaction log in Python, with pluggable storage."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deltalog.errors import DeltaError

if TYPE_CHECKING:
    from deltalog.txn.delta_log import DeltaLog

__version__ = "0.1.0.dev0"

__all__ = ["DeltaError", "DeltaLog", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "DeltaLog":  # imported lazily so that `import deltalog` stays light
        from deltalog.txn.delta_log import DeltaLog

        return DeltaLog
    raise AttributeError(f"module 'deltalog' has no attribute {name!r}")
