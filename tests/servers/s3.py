"""moto_server (S3) in its own process on a free loopback port.

moto runs out of process on purpose: delta-rs hangs when moto runs inside the same
Python process, and a separate process is what a real S3 endpoint looks like.
"""

from __future__ import annotations

import sys
import urllib.request

from tests.servers.process import ServerProcess, free_port, start_server

ACCESS_KEY = "testing-access-key"
SECRET_KEY = "testing-secret-key-do-not-leak"
REGION = "us-east-1"


def start_moto(log_dir: str) -> ServerProcess:
    port = free_port()

    def ready() -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/", timeout=1) as resp:
            return bool(resp.status == 200)

    return start_server(
        "moto",
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        port,
        log_dir,
        ready=ready,
        env={"MOTO_ALLOW_NONEXISTENT_REGION": "true"},
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
