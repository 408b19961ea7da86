"""The ``compression`` write option: Spark's Parquet codec names, as Delta's writes take them.

Delta hands a write's ``compression`` option to Spark's Parquet writer (``ParquetOptions``):
``none`` / ``uncompressed``, ``snappy`` (the default), ``gzip``, ``lzo``, ``brotli``, ``lz4``
(Hadoop's framing), ``lz4_raw`` and ``zstd``; any other name is refused. A file's name carries
the codec's extension (``part-...c000.zstd.parquet``, none for ``uncompressed``), as parquet-mr's
``CompressionCodecName.getExtension``. Spark's own writer (native writes) writes every codec;
Python tasks write through pyarrow, which has no ``lzo`` and does not say which of the two
``lz4`` framings it writes: a task asked for ``lzo``, ``lz4`` or ``lz4_raw`` fails, and nothing
is committed.
"""

from __future__ import annotations

from deltalog.contrib.spark.errors import InvalidWriteOptionError

__all__ = ["DEFAULT_CODEC", "file_extension", "parquet_codec", "pyarrow_compression"]

DEFAULT_CODEC = "snappy"
#: Spark's codec names (``ParquetOptions.shortParquetCompressionCodecNames``) -> file extension
_EXTENSIONS = {
    "uncompressed": "",
    "snappy": ".snappy",
    "gzip": ".gz",
    "lzo": ".lzo",
    "brotli": ".br",
    "lz4": ".lz4hadoop",
    "lz4_raw": ".lz4raw",
    "zstd": ".zstd",
}
#: the codecs pyarrow writes as Spark names them (its ``lz4`` is not told apart from ``lz4_raw``)
_PYARROW = {"uncompressed": "none", "snappy": "snappy", "gzip": "gzip", "brotli": "brotli", "zstd": "zstd"}


def parquet_codec(value: str | None) -> str:
    """The codec the ``compression`` option names (Spark's spelling, ``none`` as
    ``uncompressed``); :data:`DEFAULT_CODEC` when not given. Refuses an unknown name as Spark's
    ``ParquetOptions`` does."""
    if value is None:
        return DEFAULT_CODEC
    codec = value.strip().lower()
    codec = "uncompressed" if codec == "none" else codec
    if codec not in _EXTENSIONS:
        raise InvalidWriteOptionError(
            f"Codec [{value}] is not available. Available codecs are brotli, uncompressed, lz4, lz4_raw, gzip, lzo, "
            "snappy, none, zstd."
        )
    return codec


def file_extension(codec: str) -> str:
    """The codec's part of a data file's name (``.zstd``; empty for ``uncompressed``)."""
    return _EXTENSIONS[codec]


def python_tasks_write(value: str) -> bool:
    """Whether the Python tasks' Parquet writer writes the codec ``value`` names."""
    codec = value.strip().lower()
    return ("uncompressed" if codec == "none" else codec) in _PYARROW


def pyarrow_compression(codec: str) -> str:
    """pyarrow's name of the codec, for the Python tasks' Parquet writer."""
    if codec not in _PYARROW:
        raise InvalidWriteOptionError(
            f"the Python write tasks cannot write Parquet compressed with {codec} "
            "(pyarrow has no such codec, or none it tells apart): "
            "use another compression, or a write by Spark's own writer (write_table to storage Spark reaches)"
        )
    return _PYARROW[codec]
