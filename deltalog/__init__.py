"""deltalog: the Delta Lake transaction log in Python, with pluggable storage."""

from deltalog.errors import DeltaError

__version__ = "0.1.0.dev0"

__all__ = ["DeltaError", "__version__"]
