"""One test per conformance check; collected by ``pytest --pyargs deltalog.conformance``.

The store comes from ``--logstore-uri`` (see :mod:`deltalog.conformance.plugin`). A
check that does not apply to the store passes and is marked NOT_APPLICABLE, with its
reason, in the report printed at the end of the run.
"""

from __future__ import annotations

import pytest

from deltalog.conformance.catalog import check_names
from deltalog.conformance.plugin import ConformanceSession


@pytest.mark.parametrize("check", check_names())
def test_logstore_conformance(check: str, deltalog_conformance: ConformanceSession) -> None:
    result = deltalog_conformance.check(check)
    if result.failed:
        pytest.fail(f"{check}: {result.detail}", pytrace=False)
