"""Transient errors between a store and its real server, injected by a proxy on 127.0.0.1."""

from __future__ import annotations

import json
import logging

import pytest

from deltalog.logstores.errors import AmbiguousWriteError, FileAlreadyExistsError, TransientStorageError
from tests.backends.conftest import Backend
from tests.backends.faultproxy import Fault, FaultProxy

NAME = "00000000000000000007.json"


def error_reply(backend: Backend, status: int, code: str, message: str) -> dict[str, object]:
    """The body and headers the real service sends with an error."""
    if backend.name == "s3":
        body = f"<?xml version='1.0'?><Error><Code>{code}</Code><Message>{message}</Message></Error>"
        return {"status": status, "body": body.encode(), "headers": {"Content-Type": "application/xml"}}
    if backend.name == "azure":
        body = f"<?xml version='1.0'?><Error><Code>{code}</Code><Message>{message}</Message></Error>"
        return {
            "status": status,
            "body": body.encode(),
            "headers": {"Content-Type": "application/xml", "x-ms-error-code": code},
        }
    body = json.dumps({"error": {"code": status, "message": message, "errors": [{"reason": code}]}})
    return {"status": status, "body": body.encode(), "headers": {"Content-Type": "application/json"}}


def publish_match(backend: Backend) -> dict[str, str]:
    """Which requests publish a log file (GCS names the object in the body)."""
    if backend.name == "gcs":
        return {"method": "POST", "path_contains": "/upload/storage/v1/"}
    return {"method": "PUT", "path_contains": NAME}


def throttle(backend: Backend, times: int, secret: str = "", **match: str) -> Fault:
    code = {"s3": "SlowDown", "azure": "ServerBusy", "gcs": "backendError"}[backend.name]
    reply = error_reply(backend, 503, code, f"Please reduce your request rate {secret}".strip())
    return Fault("status", times=times, **match, **reply)  # type: ignore[arg-type]


def publishes(proxy: FaultProxy, backend: Backend) -> int:
    match = publish_match(backend)
    return proxy.count(match["method"], lambda path: match["path_contains"] in path)


def target(backend: Backend) -> str:
    return f"{backend.root}/_delta_log/{NAME}"


def test_throttled_publish_is_retried(backend: Backend, proxy_for) -> None:
    proxy = proxy_for(backend)
    proxy.add(throttle(backend, 2, **publish_match(backend)))
    backend.store(proxy.url).write(target(backend), ["mine"])
    assert publishes(proxy, backend) == 3
    assert list(backend.store().read(target(backend))) == ["mine"]


def test_publish_gives_up_and_leaves_no_file(backend: Backend, proxy_for) -> None:
    proxy = proxy_for(backend)
    proxy.add(throttle(backend, 100, **publish_match(backend)))
    store = backend.store(proxy.url, DELTALOG_RETRY_MAX_ATTEMPTS="3")
    with pytest.raises(TransientStorageError) as info:
        store.write(target(backend), ["mine"])
    assert "after 3 attempts" in str(info.value)
    assert publishes(proxy, backend) == 3
    with pytest.raises(FileNotFoundError):
        backend.store().read_bytes(target(backend))


def test_lost_answer_of_our_own_put_is_success(backend: Backend, proxy_for) -> None:
    proxy = proxy_for(backend)
    proxy.add(Fault("lose_answer", times=1, **publish_match(backend)))
    backend.store(proxy.url).write(target(backend), ["mine", "two"])
    assert publishes(proxy, backend) == 2  # the retry got "exists" and read back our bytes
    assert list(backend.store().read(target(backend))) == ["mine", "two"]


def test_server_error_after_landing_is_success(backend: Backend, proxy_for) -> None:
    proxy = proxy_for(backend)
    reply = error_reply(backend, 500, "InternalError", "We encountered an internal error")
    proxy.add(Fault("error_after", times=1, **publish_match(backend), **reply))  # type: ignore[arg-type]
    backend.store(proxy.url).write(target(backend), ["mine"])
    assert list(backend.store().read(target(backend))) == ["mine"]


def test_lost_answer_then_another_writers_file_is_already_exists(backend: Backend, proxy_for) -> None:
    proxy = proxy_for(backend)
    direct = backend.store()
    proxy.add(
        Fault("drop", times=1, on_hit=lambda: direct.write(target(backend), ["theirs"]), **publish_match(backend))
    )
    with pytest.raises(FileAlreadyExistsError):
        backend.store(proxy.url).write(target(backend), ["mine"])
    assert list(direct.read(target(backend))) == ["theirs"]


def test_unknown_outcome_is_ambiguous_not_success(backend: Backend, proxy_for) -> None:
    proxy = proxy_for(backend)
    proxy.add(Fault("drop", times=100, **publish_match(backend)))
    store = backend.store(proxy.url, DELTALOG_RETRY_MAX_ATTEMPTS="3")
    with pytest.raises(AmbiguousWriteError) as info:
        store.write(target(backend), ["mine"])
    assert info.value.path == target(backend)
    with pytest.raises(FileNotFoundError):  # the proxy really dropped every attempt
        backend.store().read_bytes(target(backend))


def test_reads_and_lists_are_retried(backend: Backend, proxy_for) -> None:
    backend.store().write(target(backend), ["x"])
    proxy = proxy_for(backend)
    store = backend.store(proxy.url)
    object_part = NAME if backend.name != "gcs" else "_delta_log"  # GCS escapes the slashes
    proxy.add(throttle(backend, 2, method="GET", path_contains=object_part))
    assert list(store.read(target(backend))) == ["x"]
    proxy.clear()
    proxy.add(throttle(backend, 2, method="GET"))
    assert [s.name for s in store.list_from(f"{backend.root}/_delta_log/")] == [NAME]
    assert proxy.count("GET") == 3


def test_retry_errors_and_logs_never_show_secrets(backend: Backend, proxy_for, caplog) -> None:
    # S3 and Azure carry a real secret (the key); the GCS emulator needs none, so plant one.
    secret = backend.secret or "planted-secret-token-value"
    proxy = proxy_for(backend)
    # The (fake) service echoes the secret back in its error message.
    proxy.add(throttle(backend, 100, secret=secret, method="GET"))
    store = backend.store(proxy.url, DELTALOG_RETRY_MAX_ATTEMPTS="2", EXTRA_SECRET_TOKEN=secret)
    caplog.set_level(logging.DEBUG, logger="deltalog")
    with pytest.raises(TransientStorageError) as info:
        store.read_bytes(target(backend))
    ours = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("deltalog"))
    text = "\n".join([str(info.value), repr(store), repr(store.spec()), ours])
    assert "reduce your request rate" in str(info.value).lower()  # the message is there...
    assert "retry 1" in ours
    assert secret not in text  # ...without the secret
