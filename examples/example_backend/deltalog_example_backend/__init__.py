"""An example third-party deltalog backend: the Delta log in SQLite, data on local disk."""

from deltalog_example_backend.broken import BrokenLogStore
from deltalog_example_backend.store import ExampleLogStore

__all__ = ["BrokenLogStore", "ExampleLogStore"]
