"""A stream that writes one Azure block blob whole.

pyarrow's ``AzureFileSystem`` creates an empty blob when a stream opens and commits the
blocks written so far at every flush, so a checkpoint written in place through it is
listed, empty or half written, before it is complete. This stream stages blocks as it
fills and commits the block list once, when it closes: until then the blob does not
change (the Put Block / Put Block List protocol of the Blob service).
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["BLOCK_SIZE", "BlockBlobOutputStream"]

T = TypeVar("T")

#: Bytes per staged block (a blob holds at most 50,000 blocks: 400 GB at this size).
BLOCK_SIZE = 8 * 1024 * 1024


class BlockBlobOutputStream(io.RawIOBase):
    """Writes the blob behind ``blob`` (an ``azure.storage.blob.BlobClient``); ``call`` runs
    one request with the store's retries and error translation."""

    def __init__(self, blob: Any, call: Callable[[Callable[[], Any], str], Any], uri: str) -> None:
        super().__init__()
        self._blob = blob
        self._call = call
        self._uri = uri
        self._prefix = uuid.uuid4().hex
        self._buffer = bytearray()
        self._blocks: list[str] = []
        self._written = 0

    def writable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._written

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self._buffer += view
        self._written += len(view)
        while len(self._buffer) >= BLOCK_SIZE:
            self._stage(bytes(self._buffer[:BLOCK_SIZE]))
            del self._buffer[:BLOCK_SIZE]
        return len(view)

    def _stage(self, chunk: bytes) -> None:
        block_id = f"{self._prefix}-{len(self._blocks):06d}"  # one length for every block
        self._call(
            lambda: self._blob.stage_block(block_id, chunk, length=len(chunk)), f"staging a block of {self._uri}"
        )
        self._blocks.append(block_id)

    def close(self) -> None:
        if self.closed:
            return
        try:
            if not self._blocks:
                data = bytes(self._buffer)
                self._call(
                    lambda: self._blob.upload_blob(data, overwrite=True, length=len(data)), f"writing {self._uri}"
                )
                return
            if self._buffer:
                self._stage(bytes(self._buffer))
            from azure.storage.blob import BlobBlock

            blocks = [BlobBlock(block_id=b) for b in self._blocks]
            self._call(lambda: self._blob.commit_block_list(blocks), f"committing the blocks of {self._uri}")
        finally:
            self._buffer = bytearray()
            super().close()
