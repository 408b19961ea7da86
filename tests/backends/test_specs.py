"""Specs rebuild each store, and its data filesystem, in another process."""

from __future__ import annotations

import base64
import pickle
import subprocess
import sys

import pytest

from tests.backends.conftest import Backend, subprocess_env

CHILD = r"""
import base64, pickle, sys
spec = pickle.loads(base64.b64decode(sys.argv[1]))
root = sys.argv[2]
store = spec.build()
print("read:", list(store.read(root + "/_delta_log/00000000000000000000.json")))
store.write(root + "/_delta_log/00000000000000000001.json", ["from the child"])
fs = store.filesystem()
with fs.open_output_stream(store.fs_path(root + "/part-0.parquet")) as out:
    out.write(b"child data")
try:
    store.write(root + "/_delta_log/00000000000000000000.json", ["again"])
except FileExistsError:
    print("exists: ok")
"""


def run_child(spec_bytes: bytes, root: str, **env: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", CHILD, base64.b64encode(spec_bytes).decode(), root],
        capture_output=True,
        text=True,
        timeout=120,
        env=subprocess_env(**env),
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_spec_rebuilds_the_store_in_a_subprocess(backend: Backend) -> None:
    store = backend.store()
    store.write(f"{backend.root}/_delta_log/{0:020d}.json", ["from the parent"])
    out = run_child(pickle.dumps(store.spec()), backend.root)
    assert "read: ['from the parent']" in out and "exists: ok" in out
    assert list(store.read(f"{backend.root}/_delta_log/{1:020d}.json")) == ["from the child"]
    assert store.read_bytes(f"{backend.root}/part-0.parquet") == b"child data"
    # a store pickles as its options, not as live SDK clients
    assert pickle.loads(pickle.dumps(store)).options == store.options


def test_credentials_from_the_chain_are_not_pickled(s3: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    options = s3.options()
    key, secret = options.pop("AWS_ACCESS_KEY_ID"), options.pop("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    store = s3.store_class(options)
    store.write(f"{s3.root}/_delta_log/{0:020d}.json", ["chain"])
    data = pickle.dumps(store.spec())
    assert secret.encode() not in data and key.encode() not in data
    out = run_child(data, s3.root, AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret)
    assert "read: ['chain']" in out


def test_missing_sdk_names_the_extra(tmp_path) -> None:
    # A child whose import system hides boto3, as on a machine without deltalog[s3].
    code = r"""
import sys
class Hide:
    def __init__(self, inner):
        self.inner = inner
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("boto3", "azure", "google"):
            return None
        return self.inner.find_spec(name, path, target)
    def find_distributions(self, *args, **kwargs):
        return getattr(self.inner, "find_distributions", lambda *a, **k: [])(*args, **kwargs)
    def invalidate_caches(self):
        getattr(self.inner, "invalidate_caches", lambda: None)()
sys.meta_path[:] = [Hide(finder) for finder in sys.meta_path]
from deltalog.logstores.registry import store_class_for_uri
for uri in ("s3://b/t", "az://c/t", "gs://b/t"):
    try:
        store_class_for_uri(uri)
    except ImportError as exc:
        print(type(exc).__name__, exc)
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=subprocess_env()
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 3
    for line, extra in zip(lines, ("s3", "azure", "gcs")):
        assert line.startswith("MissingDependencyError") and f"deltalog[{extra}]" in line
