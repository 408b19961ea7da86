from __future__ import annotations

import uuid
from pathlib import Path

import pytest


@pytest.fixture(params=["local", "memory"])
def table_uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh table location on the local disk and in the memory store."""
    if request.param == "local":
        return str(tmp_path / "table")
    return f"memory://ops-{uuid.uuid4().hex}/table"
