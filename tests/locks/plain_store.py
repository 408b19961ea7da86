"""A test-only store without mutual exclusion, over a local directory.

``write(path, lines, overwrite=False)`` checks that the file is absent and then puts it
(temp file + ``os.replace``): atomic visibility, no exclusion, last writer wins -- what an
object store without conditional puts does. It declares ``MutualExclusion.NONE``, so the
engine must not use it without a lock. ``PausingPlainStore`` adds fault injection: it
stops its own process with SIGSTOP before a chosen write.
"""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterable

from deltalog.logstores.base import MutualExclusion, StoreSemantics
from deltalog.logstores.errors import FileAlreadyExistsError
from deltalog.logstores.local import LocalLogStore, local_path


class PlainPutLogStore(LocalLogStore):
    name = "test-plain-put"
    schemes = ("test-plain-put",)  # never registered: tests build it directly
    default_semantics = StoreSemantics(MutualExclusion.NONE, partial_write_visible=False)

    def write(self, path: str, lines: Iterable[str], overwrite: bool = False) -> None:
        target = local_path(path)
        if not overwrite and os.path.exists(target):
            raise FileAlreadyExistsError(path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        temp = f"{target}.{uuid.uuid4().hex}.put"
        with open(temp, "wb") as handle:
            handle.write("".join(line + "\n" for line in lines).encode("utf-8"))
        os.replace(temp, target)


class PausingPlainStore(PlainPutLogStore):
    """Stops this process (SIGSTOP) once, just before writing a file whose name matches.

    ``pause_at="temp"`` pauses before the temp file of a commit (before the claim);
    ``pause_at="publish"`` before ``N.json`` itself (after the claim and its check).
    """

    def __init__(self, pause_at: str | None = None) -> None:
        super().__init__()
        self.pause_at = pause_at

    def write(self, path: str, lines: Iterable[str], overwrite: bool = False) -> None:
        name = path.rsplit("/", 1)[-1]
        is_temp = "/.tmp/" in path
        hit = (self.pause_at == "temp" and is_temp) or (
            self.pause_at == "publish" and not is_temp and name.endswith(".json")
        )
        if hit:
            self.pause_at = None
            os.kill(os.getpid(), signal.SIGSTOP)
        super().write(path, lines, overwrite)
