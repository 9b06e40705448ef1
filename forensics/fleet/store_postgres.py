"""The sweep history in PostgreSQL: one database shared by several collectors.

The same records as the SQLite store (``forensics.fleet.store``), behind the same
interface. The schema is versioned: ``MIGRATIONS`` are applied in order on start, each in
its own transaction under a database-wide advisory lock, so collectors starting together
migrate once; a database whose schema is newer than this tool knows is refused with one
line. Each host's run is one transaction, and a run is keyed by (sweep, host), so a
collector that retries never doubles it and one killed mid-sweep loses only the hosts it
had not finished. The password comes from libpq's own sources (``PGPASSWORD``,
``~/.pgpass``, ``passfile=``), never from this tool's configuration.

A shard of a sweep holds a session advisory lock (``shard_lock``) instead of the lock
file: the database drops it when the collector's connection goes, so a dead collector
never blocks the next.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from forensics.core.errors import UsageError
from forensics.fleet.fingerprint import TrackedFinding
from forensics.fleet.lock import SweepLocked
from forensics.fleet.report import HostRun, HostStatus
from forensics.fleet.store import (
    _LATEST_RUNS,
    _TICKET,
    PreviousRun,
    RunRow,
    TicketRow,
    Warn,
    run_row,
    ticket_row,
    tracked_rows,
)

CONNECT_TIMEOUT_S = 10
POOL_SIZE = 4
_MIGRATION_LOCK = 0x666F72656E736963  # "forensic": one key for every collector's migrations

MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE sweeps (
        id TEXT PRIMARY KEY, started TIMESTAMPTZ NOT NULL, finished TIMESTAMPTZ,
        inventory TEXT, hosts INTEGER NOT NULL, collected INTEGER, interrupted_by TEXT
    );
    CREATE TABLE runs (
        id BIGSERIAL PRIMARY KEY, sweep_id TEXT, host TEXT NOT NULL, status TEXT NOT NULL,
        reason TEXT, started TIMESTAMPTZ NOT NULL, finished TIMESTAMPTZ, bundle TEXT,
        worst TEXT, findings INTEGER NOT NULL, new INTEGER, resolved INTEGER
    );
    CREATE INDEX runs_by_host ON runs (host, started);
    CREATE TABLE findings (
        run_id BIGINT NOT NULL REFERENCES runs (id), fingerprint TEXT NOT NULL,
        finding_id TEXT NOT NULL, severity TEXT NOT NULL, title TEXT NOT NULL,
        subject TEXT NOT NULL, sections TEXT NOT NULL
    );
    CREATE INDEX findings_by_run ON findings (run_id);
    """,
    # 2: a run is recorded once per sweep and host, whoever retries; runs by start time
    # for fleet-report --since.
    """
    CREATE UNIQUE INDEX runs_once_per_sweep ON runs (sweep_id, host);
    CREATE INDEX runs_by_start ON runs (started);
    """,
    # 3: tickets opened for findings, by fingerprint and destination (forensics/tickets).
    """
    CREATE TABLE tickets (
        fingerprint TEXT NOT NULL, destination TEXT NOT NULL, host TEXT NOT NULL,
        finding_id TEXT NOT NULL, issue TEXT NOT NULL, url TEXT, opened TIMESTAMPTZ NOT NULL,
        resolved TIMESTAMPTZ, PRIMARY KEY (fingerprint, destination)
    );
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


class PostgresHistory:
    """Open with ``PostgresHistory.open``; every method is a no-op once the database failed."""

    def __init__(self, url: str, pool: ConnectionPool | None, warn: Warn) -> None:
        self.url = url
        self._pool = pool
        self._warn = warn

    @property
    def location(self) -> str:
        return describe(self.url)

    @property
    def available(self) -> bool:
        return self._pool is not None

    @classmethod
    def open(cls, url: str, warn: Warn) -> PostgresHistory:
        """Connect and migrate; a newer schema is a ``UsageError``, an unreachable database
        turns history off for this run with a warning."""
        try:
            pool = _pool(url)
        except (psycopg.Error, PoolTimeout) as error:
            warn(f"history is off for this run: cannot reach {describe(url)}: {_one_line(error)}")
            return cls(url, None, warn)
        try:
            with pool.connection() as connection:
                migrate(connection, describe(url))
        except UsageError:
            pool.close()
            raise
        except psycopg.Error as error:
            pool.close()
            warn(f"history is off for this run: {describe(url)}: {_one_line(error)}")
            return cls(url, None, warn)
        return cls(url, pool, warn)

    @classmethod
    def open_read_only(cls, url: str) -> PostgresHistory:
        try:
            pool = _pool(url)
            with pool.connection() as connection:
                version = schema_version(connection)
        except (psycopg.Error, PoolTimeout) as error:
            raise UsageError(f"history {describe(url)}: {_one_line(error)}") from error
        if version == 0:
            pool.close()
            raise UsageError(f"no history in {describe(url)}: run `forensics sweep` first")
        if version > SCHEMA_VERSION:
            pool.close()
            raise UsageError(_too_new(describe(url), version))
        return cls(url, pool, lambda message: None)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    @contextmanager
    def _transaction(self) -> Iterator[psycopg.Connection[Any] | None]:
        pool = self._pool
        if pool is None:
            yield None
            return
        try:
            with pool.connection() as connection, connection.transaction():
                yield connection
        except (psycopg.Error, PoolTimeout) as error:
            self._give_up(error)

    def _give_up(self, error: Exception) -> None:
        self._warn(f"history is off for the rest of this run: {self.location}: {_one_line(error)}")
        self.close()

    def begin_sweep(self, sweep_id: str, started: datetime, inventory: str, hosts: int) -> None:
        with self._transaction() as db:
            if db is not None:
                db.execute(
                    "INSERT INTO sweeps (id, started, inventory, hosts) VALUES (%s, %s, %s, %s) "
                    "ON CONFLICT (id) DO NOTHING",
                    (sweep_id, started, inventory, hosts),
                )

    def end_sweep(
        self, sweep_id: str, finished: datetime, collected: int, interrupted_by: str | None
    ) -> None:
        with self._transaction() as db:
            if db is not None:
                db.execute(
                    "UPDATE sweeps SET finished = %s, collected = %s, interrupted_by = %s "
                    "WHERE id = %s",
                    (finished, collected, interrupted_by, sweep_id),
                )

    def previous(self, host: str) -> PreviousRun | None:
        with self._transaction() as db:
            if db is None:
                return None
            row = db.execute(
                "SELECT id, started, sweep_id FROM runs WHERE host = %s AND status IN (%s, %s) "
                "ORDER BY started DESC, id DESC LIMIT 1",
                (host, HostStatus.ok.value, HostStatus.partial.value),
            ).fetchone()
            if row is None:
                return None
            findings = db.execute(
                "SELECT fingerprint, finding_id, severity, title, subject, sections "
                "FROM findings WHERE run_id = %s",
                (row[0],),
            ).fetchall()
            return PreviousRun(
                started=row[1],
                sweep_id=row[2],
                findings=tracked_rows(findings),
            )
        return None

    def record(self, sweep_id: str | None, host: HostRun, tracked: list[TrackedFinding]) -> None:
        """One host's run and its findings in one transaction; recorded once per sweep."""
        changes = host.changes
        with self._transaction() as db:
            if db is None:
                return
            inserted = db.execute(
                "INSERT INTO runs (sweep_id, host, status, reason, started, finished, bundle, "
                "worst, findings, new, resolved) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (sweep_id, host) DO NOTHING RETURNING id",
                (
                    sweep_id,
                    host.name,
                    host.status.value,
                    host.reason,
                    host.started or datetime.now(UTC),
                    host.finished,
                    host.bundle,
                    host.worst.value if host.worst is not None else None,
                    len(tracked),
                    len(changes.new) if changes is not None else None,
                    len(changes.resolved) if changes is not None else None,
                ),
            ).fetchone()
            if inserted is None:
                return
            with db.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO findings (run_id, fingerprint, finding_id, severity, title, "
                    "subject, sections) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    [
                        (
                            inserted[0],
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

    def runs(self, host: str | None = None, limit: int = 50) -> list[RunRow]:
        where, parameters = ("WHERE host = %s", (host,)) if host else ("", ())
        with self._transaction() as db:
            if db is None:
                return []
            rows = db.execute(
                "SELECT sweep_id, host, status, reason, started, bundle, worst, findings, new, "
                f"resolved FROM runs {where} ORDER BY started DESC, id DESC LIMIT %s",
                (*parameters, limit),
            ).fetchall()
            return [run_row(row) for row in rows]
        return []

    def latest_runs(self, since: datetime) -> list[RunRow]:
        with self._transaction() as db:
            if db is None:
                return []
            rows = db.execute(_LATEST_RUNS.format(p="%s"), (since,)).fetchall()
            return [run_row(row) for row in rows]
        return []

    def ticket(self, fingerprint: str, destination: str) -> TicketRow | None:
        """The ticket opened for this finding at this destination, if any."""
        with self._transaction() as db:
            if db is None:
                return None
            row = db.execute(_TICKET.format(p="%s"), (fingerprint, destination)).fetchone()
            return ticket_row(row) if row is not None else None
        return None

    def record_ticket(self, ticket: TicketRow) -> None:
        with self._transaction() as db:
            if db is not None:
                db.execute(
                    "INSERT INTO tickets (fingerprint, destination, host, finding_id, issue, url, "
                    "opened, resolved) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
                    "ON CONFLICT (fingerprint, destination) DO UPDATE SET host = EXCLUDED.host, "
                    "finding_id = EXCLUDED.finding_id, issue = EXCLUDED.issue, url = EXCLUDED.url, "
                    "opened = EXCLUDED.opened, resolved = EXCLUDED.resolved",
                    (
                        ticket.fingerprint,
                        ticket.destination,
                        ticket.host,
                        ticket.finding_id,
                        ticket.issue,
                        ticket.url,
                        ticket.opened,
                        ticket.resolved,
                    ),
                )

    @contextmanager
    def shard_lock(self, shard: str) -> Iterator[None]:
        """Hold shard ``shard``'s advisory lock for the block, or raise ``SweepLocked``.

        A connection of its own, outside the pool, holds it: the lock is the session's.
        """
        key = lock_key(shard)
        name = f"forensics sweep {shard} pid {os.getpid()} on {socket.gethostname()}"[:63]
        try:
            connection = psycopg.connect(
                self.url,
                autocommit=True,
                connect_timeout=CONNECT_TIMEOUT_S,
                application_name=name,
            )
        except psycopg.Error as error:
            raise UsageError(
                f"cannot lock shard {shard} in {self.location}: {_one_line(error)}"
            ) from error
        with connection:
            row = connection.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
            if row is None or not row[0]:
                holder = _lock_holder(connection, key)
                raise SweepLocked(
                    f"another collector holds shard {shard} in {self.location}: {holder}; it "
                    "must finish first (or stop it with SIGTERM: it finishes its current "
                    "sweep, then exits)"
                )
            try:
                yield
            finally:
                connection.execute("SELECT pg_advisory_unlock(%s)", (key,))


def lock_key(shard: str) -> int:
    """A signed 64-bit advisory lock key for one shard, the same on every collector.

    >>> lock_key("1/4") == lock_key("1/4") != lock_key("2/4")
    True
    """
    digest = hashlib.sha256(f"forensics sweep shard {shard}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _lock_holder(connection: psycopg.Connection[Any], key: int) -> str:
    unsigned = key & 0xFFFFFFFFFFFFFFFF
    row = connection.execute(
        "SELECT a.pid, a.application_name, a.client_addr::text, a.backend_start "
        "FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
        "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s AND l.objid = %s "
        "LIMIT 1",
        (unsigned >> 32, unsigned & 0xFFFFFFFF),
    ).fetchone()
    if row is None:
        return "a session that has just let go (try again)"
    where = f" from {row[2]}" if row[2] else ""
    return f"{row[1] or 'a session'} (backend pid {row[0]}{where}, since {row[3]:%H:%M:%S}Z)"


def _pool(url: str) -> ConnectionPool:
    """A pool once one connection has worked: a wrong password or host fails at once with
    libpq's own words, instead of the pool retrying until its timeout."""
    psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S).close()
    pool: ConnectionPool = ConnectionPool(
        url,
        min_size=1,
        max_size=POOL_SIZE,
        open=False,
        kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S},
        name="forensics-history",
    )
    pool.open(wait=True, timeout=CONNECT_TIMEOUT_S + 5)
    return pool


def schema_version(connection: psycopg.Connection[Any]) -> int:
    """The schema version the database records; 0 when it has none yet."""
    exists = connection.execute("SELECT to_regclass('forensics_schema')").fetchone()
    if exists is None or exists[0] is None:
        return 0
    row = connection.execute("SELECT max(version) FROM forensics_schema").fetchone()
    return int(row[0]) if row is not None and row[0] is not None else 0


def migrate(connection: psycopg.Connection[Any], where: str, upto: int = SCHEMA_VERSION) -> int:
    """Apply the migrations the database lacks, up to ``upto``; the version it ends at."""
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        connection.execute(
            "CREATE TABLE IF NOT EXISTS forensics_schema "
            "(version INTEGER PRIMARY KEY, applied TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        version = schema_version(connection)
        if version > SCHEMA_VERSION:
            raise UsageError(_too_new(where, version))
        for number in range(version + 1, upto + 1):
            connection.execute(MIGRATIONS[number - 1].encode())
            connection.execute("INSERT INTO forensics_schema (version) VALUES (%s)", (number,))
    return max(version, upto)


def _too_new(where: str, version: int) -> str:
    return (
        f"history {where} has schema version {version}, newer than this forensics knows "
        f"({SCHEMA_VERSION}): upgrade forensics on this collector"
    )


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def describe(location: str) -> str:
    """The location as reports may show it: a URL without its password.

    >>> describe("postgresql://f:pw@db:5432/fleet?sslmode=require")
    'postgresql://f@db:5432/fleet'
    """
    parts = urlsplit(str(location))
    user = f"{parts.username}@" if parts.username else ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{user}{parts.hostname or ''}{port}{parts.path}"
