"""The memory store publishes a file only whole, through its log API and its filesystem alike.

A file its filesystem was still writing used to be in the store from the moment it was
opened: listed (a partial checkpoint, against the store's ``partial_write_visible=False``),
and measured by a listing in another thread while the writer wrote, which failed the
writer with ``BufferError`` (a checkpoint written while another thread committed)."""

from __future__ import annotations

import gc
import uuid

from deltalog.logstores.memory import MemoryLogStore


def _table() -> str:
    return f"memory://store-{uuid.uuid4().hex}/_delta_log"


def test_a_file_written_through_the_filesystem_is_listed_only_once_closed() -> None:
    store = MemoryLogStore()
    log = _table()
    store.write(f"{log}/{0:020d}.json", ['{"commitInfo":{}}'])
    fs = store.filesystem()
    stream = fs.open_output_stream(store.fs_path(f"{log}/{0:020d}.checkpoint.parquet"))
    stream.write(b"PAR1 part of a checkpoint")
    assert [s.path.rsplit("/", 1)[1] for s in store.list_from(f"{log}/{0:020d}")] == [f"{0:020d}.json"]
    stream.write(b" and the rest")
    stream.close()
    listed = {s.path.rsplit("/", 1)[1]: s.size for s in store.list_from(f"{log}/{0:020d}")}
    assert listed == {f"{0:020d}.checkpoint.parquet": 38, f"{0:020d}.json": 18}
    assert store.read_bytes(f"{log}/{0:020d}.checkpoint.parquet") == b"PAR1 part of a checkpoint and the rest"



def test_two_readers_of_one_file_each_have_their_own_position() -> None:
    store = MemoryLogStore()
    path = f"{_table()}/{0:020d}.checkpoint.parquet"
    fs = store.filesystem()
    with fs.open_output_stream(store.fs_path(path)) as stream:
        stream.write(b"0123456789")
    first = fs.open_input_stream(store.fs_path(path))
    assert first.read(4) == b"0123"
    second = fs.open_input_stream(store.fs_path(path))
    assert first.read(4) == b"4567" and second.read(2) == b"01"


def test_a_deleted_file_stays_deleted() -> None:
    # the file's finalizer closes it again: that must not publish it a second time
    store = MemoryLogStore()
    path = f"{_table()}/part-0.parquet"
    stream = store.filesystem().open_output_stream(store.fs_path(path))
    stream.write(b"data")
    stream.close()
    del stream
    store.delete(path)
    gc.collect()
    assert list(store.list_from(path)) == []
