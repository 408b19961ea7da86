"""Version checksum files (PROTOCOL "Version Checksum File"): ``_delta_log/N.crc``.

After each commit the engine writes ``N.crc`` with the table's state at ``N``:
``tableSizeBytes``, ``numFiles``, ``numMetadata``, ``numProtocol``, ``metadata``,
``protocol``, ``inCommitTimestampOpt`` (when in-commit timestamps are on), ``txnId``, the
``setTransactions`` (Delta's incremental rule: from version 0 on, up to 100, none once
``delta.setTransactionRetentionDuration`` is set) and the live ``domainMetadata`` (up to ten
domains, as Delta). The file histogram and
``allFiles`` are optional and not written. As Delta's
``RecordChecksum``, the counts are derived incrementally from the previous version's
checksum and the commit's actions when that is exact, else computed from the snapshot;
the file is written only after the commit, never overwritten, and a failed write is
logged, never failing the commit.

A snapshot loaded from the log whose version has a ``.crc`` is validated against it
(Delta's ``ValidateChecksum``): metadata, protocol, application transactions and domain
metadata at once, the file
count and table size when the snapshot's files are first loaded. A mismatch raises
:class:`~deltalog.txn.protocol.errors.ChecksumMismatchError` (Delta's default,
``checksum.mismatch.fatal=true``). A missing, empty or unreadable ``.crc`` is ignored.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltalog.logstores.errors import FileAlreadyExistsError
from deltalog.txn.protocol.actions import (
    Action,
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
    decode_path,
)
from deltalog.txn.protocol.errors import ChecksumMismatchError
from deltalog.txn.protocol.file_names import checksum_file, log_path

if TYPE_CHECKING:
    from deltalog.logstores.base import LogStore
    from deltalog.txn.log.snapshot import Snapshot

__all__ = [
    "VersionChecksum",
    "checksum_for_commit",
    "checksum_mismatches",
    "derive_checksum",
    "read_checksum",
    "record_checkpoint_checksum",
    "record_commit_checksum",
    "validate_checksum",
    "write_checksum",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class VersionChecksum:
    """The content of one ``N.crc`` file (the fields deltalog writes and checks)."""

    table_size_bytes: int
    num_files: int
    #: None in a checksum written by an old Delta (then not compared)
    metadata: Metadata | None
    protocol: Protocol | None
    num_metadata: int = 1
    num_protocol: int = 1
    txn_id: str | None = None
    in_commit_timestamp: int | None = None
    #: live domains, tombstones excluded; None: not recorded in the file
    domain_metadata: tuple[DomainMetadata, ...] | None = None
    #: the application transactions (newest per app id); None: not recorded in the file
    set_transactions: tuple[SetTransaction, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {}
        if self.txn_id is not None:
            d["txnId"] = self.txn_id
        d["tableSizeBytes"] = self.table_size_bytes
        d["numFiles"] = self.num_files
        d["numMetadata"] = self.num_metadata
        d["numProtocol"] = self.num_protocol
        if self.in_commit_timestamp is not None:
            d["inCommitTimestampOpt"] = self.in_commit_timestamp
        if self.set_transactions is not None:
            d["setTransactions"] = [t.to_dict() for t in self.set_transactions]
        if self.domain_metadata is not None:
            d["domainMetadata"] = [dm.to_dict() for dm in self.domain_metadata]
        if self.metadata is not None:
            d["metadata"] = self.metadata.to_dict()
        if self.protocol is not None:
            d["protocol"] = self.protocol.to_dict()
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> VersionChecksum:
        domains = d.get("domainMetadata")
        txns = d.get("setTransactions")
        return cls(
            table_size_bytes=int(d["tableSizeBytes"]),
            num_files=int(d["numFiles"]),
            metadata=None if d.get("metadata") is None else Metadata.from_dict(d["metadata"]),
            protocol=None if d.get("protocol") is None else Protocol.from_dict(d["protocol"]),
            num_metadata=int(d.get("numMetadata", 1)),
            num_protocol=int(d.get("numProtocol", 1)),
            txn_id=d.get("txnId"),
            in_commit_timestamp=None if d.get("inCommitTimestampOpt") is None else int(d["inCommitTimestampOpt"]),
            domain_metadata=None if domains is None else tuple(DomainMetadata.from_dict(x) for x in domains),
            set_transactions=None if txns is None else tuple(SetTransaction.from_dict(x) for x in txns),
        )


def read_checksum(store: LogStore, log_uri: str, version: int) -> VersionChecksum | None:
    """The checksum of ``version``, or None when its file is missing, empty or unreadable
    (readers must keep working without it): as Delta's ``readChecksum``, any failure to read
    the file (a storage error included) or to parse it is no checksum, logged."""
    path = log_path(log_uri, checksum_file(version))
    try:
        lines = [line for line in store.read(path) if line.strip()]
    except FileNotFoundError:
        return None
    except Exception as exc:
        log.warning("cannot read the checksum file %s (%s); ignoring it", path, exc)
        return None
    if not lines:
        return None
    try:
        return VersionChecksum.from_dict(json.loads(lines[0]))
    except Exception as exc:  # any shape of garbage: wrong types, huge numbers, deep nesting
        log.warning("the checksum file %s cannot be parsed (%s: %s); ignoring it", path, type(exc).__name__, exc)
        return None


def write_checksum(store: LogStore, log_uri: str, version: int, checksum: VersionChecksum) -> bool:
    """Write ``N.crc`` unless it exists (never overwritten). Returns whether it was
    written; a failure is logged, never raised (the commit it describes stands)."""
    path = log_path(log_uri, checksum_file(version))
    try:
        store.write_auxiliary(path, [checksum.to_json()])
    except FileAlreadyExistsError:
        log.info("the checksum file %s exists already; not overwriting it", path)
        return False
    except Exception:
        log.warning("failed to write the checksum file for version %d (%s)", version, path, exc_info=True)
        return False
    return True


#: Delta's ``domainMetadatasInCrc.maxAllowed``: with more live domains the checksum has no
#: ``domainMetadata`` field (the field is optional; a reader then takes them from the log)
MAX_DOMAIN_METADATAS_IN_CRC = 10


def _live_domains(snapshot: Snapshot) -> tuple[DomainMetadata, ...]:
    domains = snapshot.non_file_state.domains
    return tuple(domains[name] for name in sorted(domains) if not domains[name].removed)


def _tracked_domains(snapshot: Snapshot) -> tuple[DomainMetadata, ...] | None:
    """The live domains the checksum records: none past :data:`MAX_DOMAIN_METADATAS_IN_CRC`."""
    live = _live_domains(snapshot)
    return live if len(live) <= MAX_DOMAIN_METADATAS_IN_CRC else None


#: Delta's ``setTransactionsInCrc.maxAllowed``: with more application transactions the
#: checksum has no ``setTransactions`` field
MAX_SET_TRANSACTIONS_IN_CRC = 100


def _tracked_set_transactions(
    snapshot: Snapshot, actions: Sequence[Action], previous: tuple[SetTransaction, ...] | None
) -> tuple[SetTransaction, ...] | None:
    """The application transactions the checksum records, as Delta's
    ``incrementallyComputeSetTransactions``: those of the previous version's checksum
    (``previous``; ``()`` before version 0) updated with the commit's, and none when that
    checksum has none, past :data:`MAX_SET_TRANSACTIONS_IN_CRC`, or when
    ``delta.setTransactionRetentionDuration`` is set. Once a version has none, no later one
    has them: after a retention, a checkpoint may have dropped expired transactions that a
    writer's cached state still holds, so only the chain from version 0 is sure to be what a
    fresh reader rebuilds."""
    if previous is None or snapshot.properties.set_transaction_retention is not None:
        return None
    txns = {t.app_id: t for t in previous}
    txns.update((a.app_id, a) for a in actions if isinstance(a, SetTransaction))
    if len(txns) > MAX_SET_TRANSACTIONS_IN_CRC:
        return None
    return tuple(txns[app_id] for app_id in sorted(txns))


def _in_commit_timestamp(actions: Sequence[Action], metadata: Metadata) -> int | None:
    if not metadata.properties.enable_in_commit_timestamps:
        return None
    info = next((a for a in actions if isinstance(a, CommitInfo)), None)
    return None if info is None else info.in_commit_timestamp


def _incremental_counts(previous: tuple[int, int], actions: Sequence[Action]) -> tuple[int, int] | None:
    """(numFiles, tableSizeBytes) after ``actions``, or None when the actions alone cannot
    say (a remove without a size; an add with dataChange=false of a path the commit does
    not remove, which may re-add a live file)."""
    removed = {decode_path(a.path) for a in actions if isinstance(a, RemoveFile)}
    files, size = previous
    for action in actions:
        if isinstance(action, AddFile):
            if not action.data_change and decode_path(action.path) not in removed:
                return None
            files += 1
            size += action.size
        elif isinstance(action, RemoveFile):
            if action.size is None:
                return None
            files -= 1
            size -= action.size
    return files, size


def checksum_for_commit(
    snapshot: Snapshot,
    actions: Sequence[Action],
    previous: VersionChecksum | None,
    txn_id: str | None = None,
) -> VersionChecksum:
    """The checksum of ``snapshot``, the state right after the commit made of ``actions``:
    counts derived from ``previous`` (the checksum of the version before; nothing before
    version 0) when exact, otherwise computed from the snapshot's files (which loads them)."""
    if snapshot.version == 0:
        counts = _incremental_counts((0, 0), actions)
        previous_txns: tuple[SetTransaction, ...] | None = ()
    elif previous is not None:
        counts = _incremental_counts((previous.num_files, previous.table_size_bytes), actions)
        previous_txns = previous.set_transactions
    else:
        counts = previous_txns = None
    if counts is None:
        counts = (snapshot.num_files, snapshot.size_in_bytes)
    return _checksum(snapshot, actions, counts, txn_id, previous_txns)


def derive_checksum(previous: VersionChecksum, snapshot: Snapshot, actions: Sequence[Action]) -> VersionChecksum | None:
    """The checksum of ``snapshot`` (``previous``'s version plus the commit ``actions``)
    when the actions alone give the counts, else None. Never loads files."""
    counts = _incremental_counts((previous.num_files, previous.table_size_bytes), actions)
    if counts is None:
        return None
    info = next((a for a in actions if isinstance(a, CommitInfo)), None)
    txn_id = None if info is None else info.txn_id
    return _checksum(snapshot, actions, counts, txn_id, previous.set_transactions)


def _checksum(
    snapshot: Snapshot,
    actions: Sequence[Action],
    counts: tuple[int, int],
    txn_id: str | None,
    previous_txns: tuple[SetTransaction, ...] | None,
) -> VersionChecksum:
    """The checksum of ``snapshot`` with its (file count, table size) ``counts``;
    ``previous_txns``: the application transactions of the previous version's checksum."""
    metadata = snapshot.metadata
    return VersionChecksum(
        table_size_bytes=counts[1],
        num_files=counts[0],
        metadata=metadata,
        protocol=snapshot.protocol,
        txn_id=txn_id,
        in_commit_timestamp=_in_commit_timestamp(actions, metadata),
        domain_metadata=_tracked_domains(snapshot),
        set_transactions=_tracked_set_transactions(snapshot, actions, previous_txns),
    )


def checksum_mismatches(
    snapshot: Snapshot, checksum: VersionChecksum, file_counts: tuple[int, int] | None = None
) -> dict[str, str]:
    """Field -> what differs between ``checksum`` and the snapshot's state.
    ``file_counts``: the snapshot's (numFiles, tableSizeBytes), when known, compared too."""
    found: dict[str, str] = {}
    if checksum.metadata is not None and checksum.metadata != snapshot.metadata:
        found["metadata"] = "the metadata differs"
    if checksum.protocol is not None and not _same_protocol(checksum.protocol, snapshot.protocol):
        found["protocol"] = f"expected {checksum.protocol.to_dict()}, computed {snapshot.protocol.to_dict()}"
    if checksum.num_metadata != 1:
        found["numMetadata"] = f"expected 1, found {checksum.num_metadata}"
    if checksum.num_protocol != 1:
        found["numProtocol"] = f"expected 1, found {checksum.num_protocol}"
    if checksum.domain_metadata is not None and set(checksum.domain_metadata) != set(_live_domains(snapshot)):
        found["domainMetadata"] = "the live metadata domains differ"
    if checksum.set_transactions is not None and snapshot.properties.set_transaction_retention is None:
        recorded = {t.app_id: t.version for t in checksum.set_transactions}
        if recorded != {app_id: t.version for app_id, t in snapshot.set_transactions.items()}:
            found["setTransactions"] = "the application transactions (appId -> version) differ"
    if file_counts is not None:
        num_files, size = file_counts
        if checksum.num_files != num_files:
            found["numFiles"] = f"expected {checksum.num_files}, computed {num_files}"
        if checksum.table_size_bytes != size:
            found["tableSizeBytes"] = f"expected {checksum.table_size_bytes}, computed {size}"
    return found


def _same_protocol(a: Protocol, b: Protocol) -> bool:
    """Equal protocols (feature lists compared as sets: their order is not part of it)."""

    def key(p: Protocol) -> tuple[int, int, frozenset[str] | None, frozenset[str] | None]:
        readers = None if p.reader_features is None else frozenset(p.reader_features)
        writers = None if p.writer_features is None else frozenset(p.writer_features)
        return p.min_reader_version, p.min_writer_version, readers, writers

    return key(a) == key(b)


def validate_checksum(
    snapshot: Snapshot, checksum: VersionChecksum, file_counts: tuple[int, int] | None = None
) -> None:
    """Raise :class:`ChecksumMismatchError` when ``checksum`` disagrees with the snapshot."""
    mismatches = checksum_mismatches(snapshot, checksum, file_counts)
    if mismatches:
        raise ChecksumMismatchError(snapshot.table_uri, snapshot.version, mismatches)


def record_commit_checksum(
    store: LogStore,
    log_uri: str,
    snapshot: Snapshot,
    actions: Sequence[Action],
    before: Snapshot | None,
    txn_id: str | None = None,
) -> VersionChecksum | None:
    """Write the ``.crc`` of the version ``snapshot`` just committed with ``actions``
    (``before``: the snapshot it was committed on). The counts are derived from the
    previous version's checksum (``before``'s, or else its ``.crc``) and the actions, or
    counted from files already in memory; a commit never reads the table's files for it:
    without either, no ``.crc`` is written for this version (the next checkpoint writes one,
    see :func:`record_checkpoint_checksum`). Never raises: a failure is logged and the
    commit stands. The checksum is kept on ``snapshot`` to seed the next commit's."""
    version = snapshot.version
    try:
        previous = _previous(store, log_uri, version, before)
        counts = _commit_counts(snapshot, actions, previous.counts)
    except Exception:
        log.warning("failed to compute the checksum of version %d of %s", version, log_uri, exc_info=True)
        return None
    if counts is None:
        log.info(
            "no checksum for version %d of %s: version %d has none to derive it from and the "
            "table's files are not in memory (the next checkpoint writes one)",
            version,
            log_uri,
            version - 1,
        )
        return None
    return _record(store, log_uri, snapshot, _checksum(snapshot, actions, counts, txn_id, previous.set_transactions))


def record_checkpoint_checksum(
    store: LogStore, log_uri: str, snapshot: Snapshot, actions: Sequence[Action], counts: tuple[int, int]
) -> VersionChecksum | None:
    """Write the ``.crc`` of ``snapshot`` (committed with ``actions``) from the file count
    and table size a checkpoint of it just streamed, when the commit could not derive one:
    the commits after it derive theirs from it again. Its application transactions are the
    ones the checkpoint holds, which a fresh reader rebuilds (Delta starts them again from a
    computed state the same way). Never raises."""
    if snapshot.checksum is not None:
        return None
    info = next((a for a in actions if isinstance(a, CommitInfo)), None)
    txns = snapshot.set_transactions
    held = tuple(txns[app_id] for app_id in sorted(txns))
    checksum = _checksum(snapshot, actions, counts, None if info is None else info.txn_id, held)
    return _record(store, log_uri, snapshot, checksum)


def _record(store: LogStore, log_uri: str, snapshot: Snapshot, checksum: VersionChecksum) -> VersionChecksum:
    write_checksum(store, log_uri, snapshot.version, checksum)
    snapshot.checksum = checksum
    return checksum


def _commit_counts(
    snapshot: Snapshot, actions: Sequence[Action], previous: tuple[int, int] | None
) -> tuple[int, int] | None:
    """(numFiles, tableSizeBytes) at ``snapshot`` without reading its files: derived from
    ``previous`` (the version before's), else counted when the files are in memory; None
    otherwise."""
    counts = None if previous is None else _incremental_counts(previous, actions)
    if counts is None and snapshot.files_in_memory:
        counts = (snapshot.num_files, snapshot.size_in_bytes)
    return counts


@dataclass(frozen=True)
class _Previous:
    """What a commit's checksum derives from, when known without reading files: the
    (numFiles, tableSizeBytes) of the version before and the application transactions its
    checksum records."""

    counts: tuple[int, int] | None = None
    set_transactions: tuple[SetTransaction, ...] | None = None


def _previous(store: LogStore, log_uri: str, version: int, before: Snapshot | None) -> _Previous:
    """What is known of ``version - 1``: ``before``'s checksum, else its ``.crc`` file (not
    read when the listing ``before`` came from showed there is none), the counts taken from
    ``before``'s files when they are in memory."""
    if version == 0:
        return _Previous((0, 0), ())
    in_memory = None
    if before is not None and before.version == version - 1:
        if before.checksum is not None:
            counts = (before.checksum.num_files, before.checksum.table_size_bytes)
            return _Previous(counts, before.checksum.set_transactions)
        if before.files_in_memory:
            in_memory = (before.num_files, before.size_in_bytes)
        if before.listed_without_checksum:
            return _Previous(in_memory)
    crc = read_checksum(store, log_uri, version - 1)
    if crc is None:
        return _Previous(in_memory)
    return _Previous(in_memory or (crc.num_files, crc.table_size_bytes), crc.set_transactions)
