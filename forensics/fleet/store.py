"""The sweep history: an embedded SQLite database of sweeps, host runs and their findings.

Several sweeps may write at once (WAL journal, one writer at a time, each host's run in one
short ``BEGIN IMMEDIATE`` transaction, a generous busy timeout). History is a convenience,
never a reason to lose a sweep: a missing database is started, a corrupt one is moved aside
and rebuilt with a warning, and any later database error turns history off for the rest of
the sweep with one warning.

Only a file this tool could have made is ever moved aside: a regular file, owned by the
user running the sweep, that starts with SQLite's header and that SQLite itself calls
corrupt. A path to a device, a directory, a symlink, another user's file or a file that is
not SQLite at all is left untouched (history is off for that run), and so is a healthy
database on a full, read-only or forbidden file system: that is said, never "corrupt".
``forensics history`` opens the database read-only and never changes anything.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import stat
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from forensics.core.errors import UsageError
from forensics.core.models import Severity
from forensics.fleet.fingerprint import TrackedFinding
from forensics.fleet.report import HostRun, HostStatus

SCHEMA_VERSION = "1"
SQLITE_HEADER = b"SQLite format 3\x00"
_CORRUPTION_CODES = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
_FULL_BELOW_BYTES = 256 * 1024
BUSY_TIMEOUT_MS = 30_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sweeps (
    id TEXT PRIMARY KEY, started TEXT NOT NULL, finished TEXT, inventory TEXT,
    hosts INTEGER NOT NULL, collected INTEGER, interrupted_by TEXT
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY, sweep_id TEXT, host TEXT NOT NULL, status TEXT NOT NULL,
    reason TEXT, started TEXT NOT NULL, finished TEXT, bundle TEXT, worst TEXT,
    findings INTEGER NOT NULL, new INTEGER, resolved INTEGER
);
CREATE INDEX IF NOT EXISTS runs_by_host ON runs (host, started);
CREATE UNIQUE INDEX IF NOT EXISTS runs_once_per_sweep ON runs (sweep_id, host);
CREATE TABLE IF NOT EXISTS findings (
    run_id INTEGER NOT NULL REFERENCES runs (id), fingerprint TEXT NOT NULL,
    finding_id TEXT NOT NULL, severity TEXT NOT NULL, title TEXT NOT NULL,
    subject TEXT NOT NULL, sections TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS findings_by_run ON findings (run_id);
CREATE TABLE IF NOT EXISTS tickets (
    fingerprint TEXT NOT NULL, destination TEXT NOT NULL, host TEXT NOT NULL,
    finding_id TEXT NOT NULL, issue TEXT NOT NULL, url TEXT, opened TEXT NOT NULL,
    resolved TEXT, PRIMARY KEY (fingerprint, destination)
);
"""

Warn = Callable[[str], None]


@dataclass(frozen=True)
class PreviousRun:
    started: datetime
    sweep_id: str | None
    findings: list[TrackedFinding]


@dataclass(frozen=True)
class RunRow:
    """One host's run as ``forensics history`` lists it."""

    sweep_id: str | None
    host: str
    status: str
    reason: str | None
    started: datetime
    bundle: str | None
    worst: str | None
    findings: int
    new: int | None
    resolved: int | None


class HistoryStore(Protocol):
    """What a sweep, ``history`` and ``fleet-report`` need from a history, whatever holds it
    (``History``: SQLite, the default; ``PostgresHistory``: a shared PostgreSQL database)."""

    @property
    def location(self) -> str: ...

    @property
    def available(self) -> bool: ...

    def begin_sweep(self, sweep_id: str, started: datetime, inventory: str, hosts: int) -> None: ...

    def end_sweep(
        self, sweep_id: str, finished: datetime, collected: int, interrupted_by: str | None
    ) -> None: ...

    def previous(self, host: str) -> PreviousRun | None: ...

    def record(
        self, sweep_id: str | None, host: HostRun, tracked: list[TrackedFinding]
    ) -> None: ...

    def runs(self, host: str | None = None, limit: int = 50) -> list[RunRow]: ...

    def latest_runs(self, since: datetime) -> list[RunRow]: ...

    def ticket(self, fingerprint: str, destination: str) -> TicketRow | None: ...

    def record_ticket(self, ticket: TicketRow) -> None: ...

    def close(self) -> None: ...


_LATEST_RUNS = (
    "SELECT sweep_id, host, status, reason, started, bundle, worst, findings, new, resolved "
    "FROM runs AS r WHERE started >= {p} AND id = (SELECT id FROM runs AS s "
    "WHERE s.host = r.host ORDER BY started DESC, id DESC LIMIT 1) ORDER BY host"
)
"""Each host's latest run, when it started at or after the bound (``{p}``: the placeholder)."""


def tracked_rows(rows: Sequence[Sequence[Any]]) -> list[TrackedFinding]:
    """Rows of ``fingerprint, finding_id, severity, title, subject, sections`` (the
    ``findings`` table of either store) as the findings they record."""
    return [
        TrackedFinding(
            fingerprint=mark,
            id=finding_id,
            severity=Severity(severity),
            title=title,
            subject=json.loads(subject),
            sections=json.loads(sections),
        )
        for mark, finding_id, severity, title, subject, sections in rows
    ]


_TICKET = (
    "SELECT fingerprint, destination, host, finding_id, issue, url, opened, resolved "
    "FROM tickets WHERE fingerprint = {p} AND destination = {p}"
)
"""The ticket of one finding at one destination (``{p}``: the placeholder)."""


def _moment(value: object) -> datetime:
    """A time as either store returns it: SQLite's ISO text, PostgreSQL's timestamp."""
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


def ticket_row(row: Sequence[Any]) -> TicketRow:
    """A ``TicketRow`` from the columns ``_TICKET`` selects, in that order."""
    fingerprint, destination, host, finding_id, issue, url, opened, resolved = row
    return TicketRow(
        fingerprint=fingerprint,
        destination=destination,
        host=host,
        finding_id=finding_id,
        issue=issue,
        url=url,
        opened=_moment(opened),
        resolved=_moment(resolved) if resolved else None,
    )


def run_row(row: tuple[object, ...] | Sequence[object]) -> RunRow:
    """A ``RunRow`` from the columns ``runs`` and ``latest_runs`` select, in that order."""
    started = row[4]
    return RunRow(
        sweep_id=row[0],  # type: ignore[arg-type]
        host=str(row[1]),
        status=str(row[2]),
        reason=row[3],  # type: ignore[arg-type]
        started=_moment(started),
        bundle=row[5],  # type: ignore[arg-type]
        worst=row[6],  # type: ignore[arg-type]
        findings=int(row[7]),  # type: ignore[call-overload]
        new=row[8],  # type: ignore[arg-type]
        resolved=row[9],  # type: ignore[arg-type]
    )


@dataclass(frozen=True)
class TicketRow:
    """A ticket opened for a finding (by fingerprint) at a destination (``github:URL/o/r``);
    issue references and URLs only, never credentials."""

    fingerprint: str
    destination: str
    host: str
    finding_id: str
    issue: str
    url: str | None
    opened: datetime
    resolved: datetime | None = None


class History:
    """Open with ``History.open``; every method is a no-op once the database failed."""

    def __init__(self, path: Path, connection: sqlite3.Connection | None, warn: Warn) -> None:
        self.path = path
        self._connection = connection
        self._warn = warn

    @property
    def available(self) -> bool:
        return self._connection is not None

    @property
    def location(self) -> str:
        return str(self.path)

    @classmethod
    def open(cls, path: Path, warn: Warn) -> History:
        """Open or create ``path``; rebuild it only when it is our database and corrupt."""
        refused = _not_ours(path)
        if refused is not None:
            warn(f"history is off for this run: {path} {refused}; left it untouched")
            return cls(path, None, warn)
        if not path.exists():
            warn(f"no history at {path} yet; starting it (every finding counts as new this time)")
        try:
            return cls(path, _connect(path), warn)
        except sqlite3.Error as error:
            problem = error
        if not _is_corruption(problem):
            warn(
                f"history is off for this run: cannot use {path}: {_why_unusable(path, problem)}; "
                "left it untouched"
            )
            return cls(path, None, warn)
        aside = path.with_name(f"{path.name}.corrupt-{datetime.now(UTC):%Y%m%dT%H%M%SZ}")
        warn(
            f"history database {path} is unreadable ({problem}); moved it to {aside} and "
            "started a new one: changes since the last sweep are unknown this time"
        )
        try:
            for suffix in ("", "-wal", "-shm"):
                side = path.with_name(path.name + suffix)
                if side.is_symlink() or side.exists():
                    if _not_ours(side, header=not suffix) is not None:
                        raise OSError(errno.EPERM, f"{side} is not ours to move")
                    side.rename(aside.with_name(aside.name + suffix))
            return cls(path, _connect(path), warn)
        except (OSError, sqlite3.Error) as error:
            warn(f"history is off for this run: cannot rebuild {path}: {error}")
            return cls(path, None, warn)

    @classmethod
    def open_read_only(cls, path: Path) -> History:
        """Open ``path`` for reading only; ``UsageError`` when it cannot be read."""
        refused = _not_ours(path, owner=False)
        if refused is not None:
            raise UsageError(f"history {path} {refused}")
        # A WAL database cannot be opened read-only on a read-only mount (no -shm can be
        # made); nothing can change it there, so it is opened as immutable.
        frozen = "&immutable=1" if _read_only_mount(path) else ""
        try:
            connection = sqlite3.connect(
                f"{path.resolve().as_uri()}?mode=ro{frozen}",
                uri=True,
                timeout=BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,
            )
            connection.execute("SELECT count(*) FROM runs").fetchone()
        except sqlite3.Error as error:
            why = "corrupt" if _is_corruption(error) else _why_unusable(path, error)
            raise UsageError(
                f"history {path} is unreadable ({why}); left it untouched "
                "(the next sweep moves a corrupt database aside)"
            ) from error
        return cls(path, connection, lambda message: None)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection | None]:
        connection = self._connection
        if connection is None:
            yield None
            return
        try:
            connection.execute("BEGIN IMMEDIATE")
            yield connection
            connection.execute("COMMIT")
        except sqlite3.Error as error:
            self._give_up(error)

    def _give_up(self, error: sqlite3.Error) -> None:
        self._warn(f"history is off for the rest of this run: {self.path}: {error}")
        if self._connection is not None:
            try:
                self._connection.close()
            finally:
                self._connection = None

    def begin_sweep(self, sweep_id: str, started: datetime, inventory: str, hosts: int) -> None:
        with self._writing() as db:
            if db is not None:
                db.execute(
                    "INSERT INTO sweeps (id, started, inventory, hosts) VALUES (?, ?, ?, ?)",
                    (sweep_id, started.isoformat(), inventory, hosts),
                )

    def end_sweep(
        self, sweep_id: str, finished: datetime, collected: int, interrupted_by: str | None
    ) -> None:
        with self._writing() as db:
            if db is not None:
                db.execute(
                    "UPDATE sweeps SET finished = ?, collected = ?, interrupted_by = ? "
                    "WHERE id = ?",
                    (finished.isoformat(), collected, interrupted_by, sweep_id),
                )

    def previous(self, host: str) -> PreviousRun | None:
        """The latest run of ``host`` that reached it (ok or partial), with its findings."""
        if self._connection is None:
            return None
        try:
            row = self._connection.execute(
                "SELECT id, started, sweep_id FROM runs WHERE host = ? AND status IN (?, ?) "
                "ORDER BY started DESC, id DESC LIMIT 1",
                (host, HostStatus.ok.value, HostStatus.partial.value),
            ).fetchone()
            if row is None:
                return None
            findings = self._connection.execute(
                "SELECT fingerprint, finding_id, severity, title, subject, sections FROM findings "
                "WHERE run_id = ?",
                (row[0],),
            ).fetchall()
        except sqlite3.Error as error:
            self._give_up(error)
            return None
        return PreviousRun(
            started=datetime.fromisoformat(row[1]),
            sweep_id=row[2],
            findings=tracked_rows(findings),
        )

    def record(self, sweep_id: str | None, host: HostRun, tracked: list[TrackedFinding]) -> None:
        """Record one host's run and its findings, in one transaction."""
        started = host.started or datetime.now(UTC)
        worst = host.worst.value if host.worst is not None else None
        changes = host.changes
        with self._writing() as db:
            if db is None:
                return
            cursor = db.execute(
                "INSERT OR IGNORE INTO runs (sweep_id, host, status, reason, started, finished, "
                "bundle, worst, findings, new, resolved) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    sweep_id,
                    host.name,
                    host.status.value,
                    host.reason,
                    started.isoformat(),
                    host.finished.isoformat() if host.finished else None,
                    host.bundle,
                    worst,
                    len(tracked),
                    len(changes.new) if changes is not None else None,
                    len(changes.resolved) if changes is not None else None,
                ),
            )
            if cursor.rowcount == 0:
                return  # this sweep recorded the host already: never twice
            db.executemany(
                "INSERT INTO findings (run_id, fingerprint, finding_id, severity, title, subject, "
                "sections) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        cursor.lastrowid,
                        finding.fingerprint,
                        finding.id,
                        finding.severity.value,
                        finding.title,
                        json.dumps(finding.subject, sort_keys=True, default=str),
                        json.dumps(finding.sections),
                    )
                    for finding in tracked
                ],
            )

    def ticket(self, fingerprint: str, destination: str) -> TicketRow | None:
        """The ticket opened for this finding at this destination, if any."""
        if self._connection is None:
            return None
        try:
            row = self._connection.execute(
                _TICKET.format(p="?"), (fingerprint, destination)
            ).fetchone()
        except sqlite3.Error as error:
            self._give_up(error)
            return None
        return ticket_row(row) if row is not None else None

    def record_ticket(self, ticket: TicketRow) -> None:
        with self._writing() as db:
            if db is not None:
                db.execute(
                    "INSERT OR REPLACE INTO tickets (fingerprint, destination, host, finding_id, "
                    "issue, url, opened, resolved) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        ticket.fingerprint,
                        ticket.destination,
                        ticket.host,
                        ticket.finding_id,
                        ticket.issue,
                        ticket.url,
                        ticket.opened.isoformat(),
                        ticket.resolved.isoformat() if ticket.resolved else None,
                    ),
                )

    def runs(self, host: str | None = None, limit: int = 50) -> list[RunRow]:
        """The latest runs, newest first, of one host or of all."""
        if self._connection is None:
            return []
        where, parameters = ("WHERE host = ?", (host,)) if host else ("", ())
        try:
            rows = self._connection.execute(
                "SELECT sweep_id, host, status, reason, started, bundle, worst, findings, new, "
                f"resolved FROM runs {where} ORDER BY started DESC, id DESC LIMIT ?",
                (*parameters, limit),
            ).fetchall()
        except sqlite3.Error as error:
            self._give_up(error)
            return []
        return [run_row(row) for row in rows]

    def latest_runs(self, since: datetime) -> list[RunRow]:
        """Each host's latest run, when it started at or after ``since``: every shard's
        latest sweep, host by host."""
        if self._connection is None:
            return []
        try:
            rows = self._connection.execute(
                _LATEST_RUNS.format(p="?"), (since.isoformat(),)
            ).fetchall()
        except sqlite3.Error as error:
            self._give_up(error)
            return []
        return [run_row(row) for row in rows]


def _not_ours(path: Path, header: bool = True, owner: bool = True) -> str | None:
    """Why ``path`` is not a history database this tool may open and move, or None.

    A missing path or an empty file (SQLite's own start) is fine.
    """
    try:
        status = path.lstat()
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"cannot be inspected ({error.strerror})"
    if stat.S_ISLNK(status.st_mode):
        return "is a symbolic link, not a history database"
    if not stat.S_ISREG(status.st_mode):
        return "is not a regular file (a device, a directory or a pipe), not a history database"
    if owner and status.st_uid != os.geteuid():
        return f"belongs to another user (uid {status.st_uid})"
    if not header or status.st_size == 0:
        return None
    try:
        with path.open("rb") as handle:
            start = handle.read(len(SQLITE_HEADER))
    except OSError as error:
        return f"cannot be read ({error.strerror})"
    if start != SQLITE_HEADER:
        return "is not an SQLite database (no SQLite header), so not a history this tool wrote"
    return None


def _read_only_mount(path: Path) -> bool:
    try:
        return bool(os.statvfs(path.parent).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _is_corruption(error: sqlite3.Error) -> bool:
    """SQLite says the file itself is damaged, as opposed to the disk, the file system or
    the permissions around it."""
    if isinstance(error, _Corrupt):
        return True
    code = getattr(error, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in _CORRUPTION_CODES


def _why_unusable(path: Path, error: sqlite3.Error) -> str:
    """Name what stands in the way: a read-only or full file system, or permissions."""
    directory = path.parent if path.parent.exists() else Path(".")
    try:
        space = os.statvfs(directory)
    except OSError:
        return str(error)
    code = (getattr(error, "sqlite_errorcode", None) or 0) & 0xFF
    if space.f_flag & os.ST_RDONLY:
        return f"its file system is read-only (EROFS; SQLite says: {error})"
    if code == sqlite3.SQLITE_FULL or space.f_bavail * space.f_frsize < _FULL_BELOW_BYTES:
        return f"its file system is full (ENOSPC; SQLite says: {error})"
    if code in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM, sqlite3.SQLITE_CANTOPEN) or not (
        os.access(directory, os.W_OK) and (not path.exists() or os.access(path, os.W_OK))
    ):
        return f"permission denied (EACCES; SQLite says: {error})"
    return str(error)


class _Corrupt(sqlite3.DatabaseError):
    """``PRAGMA quick_check`` found damage."""


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    try:
        connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        check = connection.execute("PRAGMA quick_check").fetchone()
        if check is None or check[0] != "ok":
            raise _Corrupt(f"integrity check says: {check[0] if check else 'nothing'}")
        connection.execute("PRAGMA journal_mode = WAL")
        connection.executescript(f"BEGIN IMMEDIATE;{_SCHEMA}COMMIT;")
        connection.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)",
            (SCHEMA_VERSION,),
        )
    except sqlite3.Error:
        connection.close()
        raise
    return connection
