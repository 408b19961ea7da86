"""Delta's GenerateSymlinkManifest post-commit hook.

When ``delta.compatibility.symlinkFormatManifest.enabled`` is true, every commit that adds
or removes files rewrites ``_symlink_format_manifest/``: one ``manifest`` file per partition
directory (``_symlink_format_manifest/a=1/b=2/manifest``, or a single
``_symlink_format_manifest/manifest`` for an unpartitioned table) listing the fully
qualified paths of that partition's current data files, one per line. Presto, Trino and
Athena read tables through these manifests. Manifests of partitions that no longer hold
files are deleted; an unpartitioned table without files keeps an empty manifest, as Delta
writes it. A table with deletion vectors cannot be described by manifests
(:class:`GenerateWithDeletionVectorsError`), nor one with column mapping, whose files sit in
directories and under partition keys that name physical columns
(:class:`ManifestWithColumnMappingError`), as in Delta.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from deltalog.txn.protocol.actions import Action, absolute_path
from deltalog.txn.protocol.errors import DeltaLogError, UnsupportedFeatureError
from deltalog.txn.protocol.partition_paths import partition_directory

if TYPE_CHECKING:
    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.log.snapshot_management import SnapshotManagement

__all__ = [
    "MANIFEST_DIR",
    "GenerateWithDeletionVectorsError",
    "ManifestWithColumnMappingError",
    "generate_symlink_manifest",
]

MANIFEST_DIR = "_symlink_format_manifest"


class GenerateWithDeletionVectorsError(UnsupportedFeatureError):
    """Symlink manifests of a table version with deletion vectors (Delta's
    ``DELTA_UNSUPPORTED_GENERATE_WITH_DELETION_VECTORS``): a manifest lists whole files."""

    error_class = "DELTA_UNSUPPORTED_GENERATE_WITH_DELETION_VECTORS"

    def __init__(self, table: str) -> None:
        DeltaLogError.__init__(
            self,
            f"[{self.error_class}] The 'GENERATE symlink_format_manifest' command is not supported on table "
            f"versions with deletion vectors ({table}). If you need to generate manifests, consider disabling "
            "deletion vectors on this table using 'ALTER TABLE table SET TBLPROPERTIES "
            "(delta.enableDeletionVectors = false)' and purging them with 'REORG TABLE table APPLY (PURGE)' "
            "(deltalog: DeltaTable.optimize().executePurge(), or optimize(log, purge=True)).",
        )
        self.features = ("deletionVectors",)
        self.operation = "generate symlink manifests for"


class ManifestWithColumnMappingError(DeltaLogError):
    """Symlink manifests of a table with column mapping (Delta's
    ``DELTA_UNSUPPORTED_MANIFEST_GENERATION_WITH_COLUMN_MAPPING``): readers of manifests
    cannot map its physical column names."""

    error_class = "DELTA_UNSUPPORTED_MANIFEST_GENERATION_WITH_COLUMN_MAPPING"

    def __init__(self, table: str) -> None:
        super().__init__(
            f"[{self.error_class}] Manifest generation is not supported for tables that leverage column mapping, "
            f"as external readers cannot read these Delta tables ({table}). No manifest was written."
        )


def generate_symlink_manifest(
    delta_log: SnapshotManagement, version: int, snapshot: Snapshot, actions: Sequence[Action]
) -> None:
    """Rewrite the table's symlink manifests from ``snapshot``'s files."""
    import pyarrow.fs as pafs

    if snapshot.metadata.properties.column_mapping_mode != "none":
        raise ManifestWithColumnMappingError(delta_log.table_uri)
    files = snapshot.files
    if any(f.deletion_vector is not None for f in files):
        raise GenerateWithDeletionVectorsError(delta_log.table_uri)
    columns = tuple(snapshot.metadata.partition_columns)
    by_dir: dict[str, list[str]] = defaultdict(list)
    if not columns:
        by_dir[""] = []  # an empty manifest when the table has no file
    for f in files:
        by_dir[partition_directory(columns, f.partition_values)].append(absolute_path(delta_log.table_uri, f.path))

    store = delta_log.store
    fs = store.filesystem()
    root_uri = f"{delta_log.table_uri}/{MANIFEST_DIR}"
    root = store.fs_path(root_uri)
    wanted: set[str] = set()
    for directory, paths in by_dir.items():
        manifest_uri = f"{root_uri}/{directory}/manifest" if directory else f"{root_uri}/manifest"
        manifest = store.fs_path(manifest_uri)
        wanted.add(manifest)
        parent = manifest.rsplit("/", 1)[0]
        fs.create_dir(parent, recursive=True)
        with fs.open_output_stream(manifest) as out:
            out.write("".join(f"{p}\n" for p in sorted(paths)).encode("utf-8"))
    try:
        infos = fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
    except FileNotFoundError:
        infos = []
    for info in infos:
        if info.type == pafs.FileType.File and info.base_name == "manifest" and info.path not in wanted:
            fs.delete_file(info.path)
