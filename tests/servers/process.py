"""Start a server process on a free loopback port, wait until it answers, stop it.

A server that cannot start is an error, never a skip: CI must prove every backend.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, port)) == 0


class ServerStartError(RuntimeError):
    """A test server did not come up; the message carries its output."""


@dataclass
class ServerProcess:
    """A running server. ``stop()`` ends it (and its children)."""

    name: str
    port: int
    process: subprocess.Popen[bytes]
    log_path: str
    env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as handle:
                return handle.read()[-4000:]
        except OSError:
            return ""

    def pause(self) -> None:
        os.killpg(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.killpg(self.process.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGCONT)
                os.killpg(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                return
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


def start_server(
    name: str,
    command: Sequence[str],
    port: int,
    log_dir: str,
    ready: Callable[[], bool] | None = None,
    timeout: float = 60.0,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
) -> ServerProcess:
    """Start ``command`` (which must listen on ``port``) and wait until ``ready()``
    (default: the port accepts connections)."""
    os.makedirs(log_dir, exist_ok=True)
    log_path = os.path.join(log_dir, f"{name}-{port}.log")
    full_env = {**os.environ, **(env or {})}
    with open(log_path, "wb") as log:
        try:
            proc = subprocess.Popen(
                list(command),
                stdout=log,
                stderr=subprocess.STDOUT,
                env=full_env,
                cwd=cwd,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            raise ServerStartError(f"cannot start {name}: {exc}. Run scripts/setup.sh.") from exc
    server = ServerProcess(name, port, proc, log_path, env or {})
    check = ready or (lambda: port_open(port))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerStartError(f"{name} exited with {proc.returncode}:\n{server.output()}")
        try:
            if check():
                return server
        except Exception:
            pass
        time.sleep(0.1)
    server.stop()
    raise ServerStartError(f"{name} did not answer on port {port} within {timeout:.0f}s:\n{server.output()}")
