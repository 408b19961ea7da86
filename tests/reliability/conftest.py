"""Shared fixtures of the reliability suite: the crash seed and the S3 server."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator

import pytest

from tests.servers.process import ServerProcess
from tests.servers.s3 import start_moto

ENV_SEED = "DELTALOG_CRASH_SEED"


@pytest.fixture
def crash_seed() -> int:
    """``DELTALOG_CRASH_SEED`` when set (to replay a failure), else a fresh random seed.
    The seed is printed and is part of every assertion message."""
    text = os.environ.get(ENV_SEED)
    seed = int(text) if text else random.SystemRandom().randrange(1, 2**31)
    print(f"crash seed: {seed} (rerun with {ENV_SEED}={seed})")
    return seed


@pytest.fixture(scope="session")
def reliability_moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = start_moto(str(tmp_path_factory.mktemp("moto-logs")))
    try:
        yield server
    finally:
        server.stop()
