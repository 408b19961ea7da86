"""Rebuilding a store elsewhere, and keeping its secrets."""

from __future__ import annotations

import pickle

from deltalog.conformance.check import Check, expect
from deltalog.conformance.context import CheckContext
from deltalog.conformance.result import CheckFailed, NotApplicable
from deltalog.logstores.options import is_secret_key

__all__ = ["CHECKS"]


def spec_rebuild(ctx: CheckContext) -> str:
    store = ctx.store
    spec = store.spec()
    try:
        spec = pickle.loads(pickle.dumps(spec))
    except Exception as exc:
        raise CheckFailed(f"store.spec() does not pickle: {type(exc).__name__}: {exc}") from None
    try:
        rebuilt = spec.build()
    except Exception as exc:
        raise CheckFailed(f"store.spec().build() failed: {type(exc).__name__}: {exc}") from None
    expect(type(rebuilt) is type(store), f"spec rebuilt a {type(rebuilt).__name__}, not a {type(store).__name__}")
    expect(
        rebuilt.semantics == store.semantics,
        f"the rebuilt store declares {rebuilt.semantics}, the original {store.semantics}",
    )
    uri = ctx.uri("00000000000000000000.json")
    ctx.write(uri, ["written by the original"])
    expect(list(rebuilt.read(uri)) == ["written by the original"], "the rebuilt store reads other content")
    expect(rebuilt.resolve_path(uri) == store.resolve_path(uri), "the rebuilt store resolves paths differently")
    expect(
        [s.name for s in rebuilt.list_from(uri)] == [uri.rsplit("/", 1)[-1]],
        "the rebuilt store lists other files",
    )
    return f"spec() = {spec.impl} pickles and rebuilds a store that sees the same files"


def secrets_redacted(ctx: CheckContext) -> str:
    store = ctx.store
    secrets = {k: v for k, v in store.options.items() if is_secret_key(k) and len(v) >= 4}
    if not secrets:
        raise NotApplicable("no secret storage options were given")
    shown = {
        "repr(store)": repr(store),
        "repr(store.spec())": repr(store.spec()),
        "store.describe()": repr(store.describe()),
        "str(store.options)": str(store.options),
    }
    for where, text in shown.items():
        leaked = [key for key, value in secrets.items() if value in text]
        expect(not leaked, f"{where} shows the value of {', '.join(leaked)}")
    return f"{len(secrets)} secret options never appear in repr, spec or describe()"


CHECKS = (
    Check("spec_rebuild", "store.spec() pickles and rebuilds an equivalent store", spec_rebuild),
    Check("secrets_redacted", "secret storage options never appear in repr()/describe()", secrets_redacted),
)
