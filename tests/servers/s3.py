"""moto_server (S3) in its own process on a free loopback port.

moto runs out of process on purpose: delta-rs hangs when moto runs inside the same
Python process, and a separate process is what a real S3 endpoint looks like.
"""

from __future__ import annotations

import os
import sys
import urllib.request

from tests.servers.process import ServerProcess, free_port, start_server

ACCESS_KEY = "testing-access-key"
SECRET_KEY = "testing-secret-key-do-not-leak"
REGION = "us-east-1"
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def start_moto(log_dir: str, atomic: bool = True) -> ServerProcess:
    """moto's S3 server in its own process. ``atomic`` (the default) runs it through
    :mod:`tests.servers.moto_atomic`, whose conditional puts are atomic as S3's are;
    ``atomic=False`` is the stock ``python -m moto.server``."""
    port = free_port()
    module = "tests.servers.moto_atomic" if atomic else "moto.server"

    def ready() -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/", timeout=1) as resp:
            return bool(resp.status == 200)

    return start_server(
        "moto",
        [sys.executable, "-m", module, "-H", "127.0.0.1", "-p", str(port)],
        port,
        log_dir,
        ready=ready,
        env={
            "MOTO_ALLOW_NONEXISTENT_REGION": "true",
            "PYTHONPATH": _ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
        },
    )


def s3_options(endpoint: str) -> dict[str, str]:
    """Storage options that point a deltalog (or delta-rs) S3 client at ``endpoint``."""
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_REGION": REGION,
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_ALLOW_HTTP": "true",
    }
