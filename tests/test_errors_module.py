"""Every typed error a user may catch is importable from ``deltalog.errors``.

The check walks the whole package, so an error added anywhere later cannot be forgotten.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys
import textwrap

import deltalog
import deltalog.errors as errors
from deltalog.errors import DeltaError

# Exceptions that never reach a user: each is caught inside deltalog (or raised by check
# code for the conformance runner), so it is not part of the public error set.
INTERNAL = {
    "deltalog.logstores.gcs.GcsHttpError": "turned into a LogStoreError by the GCS store",
    "deltalog.conformance.result.CheckFailed": "a check's failure, reported by the conformance runner",
    "deltalog.conformance.result.NotApplicable": "a check that does not apply, reported by the runner",
    "deltalog.txn.protocol.sql_text_numbers.TextCastError": "raised as an UnsupportedConstraintError",
}


def _defined_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(deltalog.__path__, "deltalog."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found[f"{module.__name__}.{name}"] = obj
    return found


def test_every_public_exception_is_exported_from_deltalog_errors() -> None:
    defined = _defined_exceptions()
    assert len(defined) > 40  # the walk really found the package's errors
    missing = []
    for qualname, cls in sorted(defined.items()):
        if qualname in INTERNAL:
            assert not issubclass(cls, DeltaError), f"{qualname} is a DeltaError: export it, it is public"
            continue
        assert issubclass(cls, DeltaError), f"{qualname} must derive from deltalog.errors.DeltaError"
        exported = getattr(errors, cls.__name__, None)
        # a subclass under its base's name (the Spark ConstraintViolationError) is caught as that base
        if exported is not cls and not (isinstance(exported, type) and issubclass(cls, exported)):
            missing.append(qualname)
    assert not missing, f"add these to deltalog/errors.py (and the Errors table of docs/transactions.md): {missing}"
    for qualname in INTERNAL:
        assert qualname in defined, f"{qualname} is gone: drop it from INTERNAL"


def test_every_exported_name_resolves_to_a_delta_error() -> None:
    assert sorted(errors.__all__) == errors.__all__
    assert sorted(dir(errors)) == sorted(errors.__all__)
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert isinstance(cls, type) and issubclass(cls, DeltaError), name
        assert cls.__name__ == name


def test_errors_import_without_pyspark_and_stay_light() -> None:
    """The Spark errors come from ``deltalog.errors`` with pyspark absent, and importing
    ``deltalog.errors`` itself loads none of the layers."""
    code = textwrap.dedent(
        """
        import sys

        class NoPyspark:
            def find_spec(self, name, path=None, target=None):
                if name == "pyspark" or name.startswith("pyspark."):
                    raise ImportError("pyspark is not installed")
                return None

        sys.meta_path.insert(0, NoPyspark())
        import deltalog.errors as errors
        assert "deltalog.txn.commit.commit_errors" not in sys.modules
        from deltalog.errors import DeltaAnalysisError, SchemaMismatchError, UncheckableConstraintsError
        for name in errors.__all__:
            getattr(errors, name)
        assert not any(m == "pyspark" or m.startswith("pyspark.") for m in sys.modules)
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_docs_list_every_error() -> None:
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "transactions.md").read_text()
    section = page.split("## Errors", 1)[1]
    assert not [name for name in errors.__all__ if f"`{name}`" not in section]
