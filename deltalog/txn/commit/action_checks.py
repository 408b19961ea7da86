"""The per-action rules of one commit (Delta's ``prepareCommit`` checks), shared by the
commit of a list of actions and the streamed ``commit_large``.

- one add or remove per file (and deletion vector);
- an add's partition values name exactly the table's partition columns;
- no ``dataChange=true`` remove on an append-only table;
- no deletion vector on an add where the table does not allow new ones, and none on an
  add whose statistics lack ``numRecords`` or (for an operation that adds new deletion
  vectors) do not say ``tightBounds: false`` (Delta's ``getAssertDeletionVectorWellFormedFunc``);
- one ``txn`` action per application id and one ``domainMetadata`` action per domain, and
  ``domainMetadata`` actions only when the protocol supports the ``domainMetadata`` feature
  (Delta's ``validateDomainMetadataSupportedAndNoDuplicate``).

:func:`assert_removable` is Delta's ``DeltaLog.assertRemovable``: the check a command that
may remove rows (DELETE, UPDATE, an overwrite, a stream's complete mode) makes before it
does anything, whether or not it would remove a file.
"""

from __future__ import annotations

from collections.abc import Iterable

from deltalog.txn.commit.commit_errors import (
    AddingDeletionVectorsDisallowedError,
    AppendOnlyViolationError,
    DeletionVectorMissingNumRecordsError,
    DeletionVectorTightBoundsError,
    DuplicateFileActionError,
    InvalidTransactionError,
)
from deltalog.txn.protocol.actions import (
    Action,
    AddFile,
    DomainMetadata,
    Metadata,
    RemoveFile,
    SetTransaction,
    decode_path,
)

__all__ = ["APPEND_ONLY_ERROR", "CommitActionChecks", "assert_removable"]

#: Delta's error class and message for a command that would remove data of an append-only table
APPEND_ONLY_ERROR = (
    "DELTA_CANNOT_MODIFY_APPEND_ONLY: This table is configured to only allow appends "
    "(delta.appendOnly=true). If you would like to permit updates or deletes, set delta.appendOnly=false"
)


def assert_removable(metadata: Metadata | None) -> None:
    """:class:`AppendOnlyViolationError` when the table of ``metadata`` (None: no table yet)
    only accepts appends: Delta's ``DeltaLog.assertRemovable``, made before a DELETE, an UPDATE,
    an overwrite or a stream's complete mode writes anything."""
    if metadata is not None and metadata.properties.append_only:
        raise AppendOnlyViolationError(APPEND_ONLY_ERROR + ".")


class CommitActionChecks:
    """Check the actions of one commit one by one, as they are listed or streamed."""

    def __init__(
        self,
        partition_columns: Iterable[str],
        append_only: bool,
        dv_adds_allowed: bool = True,
        domains_allowed: bool = True,
        wide_bounds_required: bool = True,
    ) -> None:
        self._partition_columns = set(partition_columns)
        self._domains_allowed = domains_allowed
        self._append_only = append_only
        self._dv_adds_allowed = dv_adds_allowed
        self._wide_bounds_required = wide_bounds_required
        # decoded path -> deletion vector id, of the adds and of the removes
        self._added: dict[str, str | None] = {}
        self._removed: dict[str, str | None] = {}
        self._app_ids: dict[str, int] = {}
        self._domains: set[str] = set()

    def check_all(self, actions: Iterable[Action], in_place: bool = False) -> list[Action]:
        """Check every action; returns those to commit (a repeated txn action dropped)."""
        return [action for action in actions if self.check(action, in_place)]

    def check(self, action: Action, in_place: bool = False) -> bool:
        """Raise when ``action`` breaks a rule, given the actions checked before it; False
        when it is to be dropped: a ``txn`` action repeating an earlier one's app id and
        version (Delta's ``checkForSetTransactionConflictAndDedup``). ``in_place``: a live
        file re-added as it is (a row tracking backfill), whose deletion vector is not a new one."""
        if isinstance(action, (AddFile, RemoveFile)):
            self._check_file_action(action, in_place)
        elif isinstance(action, SetTransaction):
            return self._check_set_transaction(action)
        elif isinstance(action, DomainMetadata):
            if not self._domains_allowed:
                raise InvalidTransactionError(
                    f"DELTA_DOMAIN_METADATA_NOT_SUPPORTED: the commit has a domainMetadata action (domain "
                    f"{action.domain!r}) but the table does not support the domainMetadata feature; enable it "
                    "first with 'delta.feature.domainMetadata' = 'supported'"
                )
            if action.domain in self._domains:
                raise DuplicateFileActionError(
                    f"the commit has more than one domainMetadata action for domain {action.domain!r}"
                )
            self._domains.add(action.domain)
        return True

    def _check_set_transaction(self, action: SetTransaction) -> bool:
        seen = self._app_ids.get(action.app_id)
        if seen is None:
            self._app_ids[action.app_id] = action.version
            return True
        if seen != action.version:
            raise DuplicateFileActionError(
                f"the commit has more than one txn action for application {action.app_id!r}: two "
                f"SetTransaction actions within the same transaction have the same appId {action.app_id} "
                f"but different versions {seen} and {action.version}"
            )
        return False

    def _check_file_action(self, action: AddFile | RemoveFile, in_place: bool) -> None:
        self._check_duplicate(action)
        if isinstance(action, AddFile):
            self._check_partition_values(action)
            if action.deletion_vector is not None and not (self._dv_adds_allowed or in_place):
                raise AddingDeletionVectorsDisallowedError(decode_path(action.path))
            if action.deletion_vector is not None:
                self._check_deletion_vector_stats(action, in_place)
        elif self._append_only and action.data_change:
            raise AppendOnlyViolationError(
                f"{APPEND_ONLY_ERROR} (cannot remove {decode_path(action.path)} with dataChange=true)."
            )

    def _check_duplicate(self, action: AddFile | RemoveFile) -> None:
        """Delta's ``checkNoDuplicateActions``: one add and one remove per path at most, and
        not both with the same deletion vector (a deletion vector update removes the file
        with its old one and re-adds it with the new one)."""
        path, dv_id = action.logical_key
        same, other = (self._added, self._removed) if isinstance(action, AddFile) else (self._removed, self._added)
        clash = path in same or (path in other and other[path] == dv_id)
        if clash:
            raise DuplicateFileActionError(
                f"the commit has more than one add/remove action for the file {path}"
                + (f" (deletion vector {dv_id})" if dv_id else "")
            )
        same[path] = dv_id

    def _check_deletion_vector_stats(self, add: AddFile, in_place: bool) -> None:
        """The protocol's rules for the statistics of a file with a deletion vector: they carry
        ``numRecords``; and, unless the operation recommits files as they were (or this one is
        re-added in place), ``tightBounds: false``."""
        stats = add.parsed_stats()
        if stats.get("numRecords") is None:
            raise DeletionVectorMissingNumRecordsError(decode_path(add.path))
        if self._wide_bounds_required and not in_place and stats.get("tightBounds") is not False:
            raise DeletionVectorTightBoundsError(decode_path(add.path))

    def _check_partition_values(self, add: AddFile) -> None:
        keys = set(add.partition_values)
        if keys != self._partition_columns:
            raise InvalidTransactionError(
                f"the add action for {add.path} has partition values for {sorted(keys)} but the table "
                f"is partitioned by {sorted(self._partition_columns)}"
            )
