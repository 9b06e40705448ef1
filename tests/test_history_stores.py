"""One suite, both history stores: SQLite (the default) and PostgreSQL (a real throwaway
cluster, ``tests/postgres.py``) record, list and compare runs identically; PostgreSQL
migrates from empty and from the previous schema, refuses a newer one in one line, and
several writers at once never lose or double a run."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from forensics.core.errors import UsageError
from forensics.core.models import Severity
from forensics.fleet.fingerprint import TrackedFinding, compare
from forensics.fleet.history_location import open_history, open_history_read_only
from forensics.fleet.report import HostRun, HostStatus
from forensics.fleet.store import HistoryStore, TicketRow
from forensics.fleet.store_postgres import SCHEMA_VERSION, migrate, schema_version
from tests.conftest import run_cli
from tests.postgres import PostgresServer

T0 = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)
Opener = Callable[[], HistoryStore]


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "history.sqlite")
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def store(location: str) -> Iterator[HistoryStore]:
    warnings: list[str] = []
    opened = open_history(location, warnings.append)
    assert opened.available, warnings
    yield opened
    opened.close()


def _finding(mark: str, finding_id: str = "process.zombie") -> TrackedFinding:
    return TrackedFinding(
        fingerprint=mark,
        id=finding_id,
        severity=Severity.warning,
        title=f"finding {mark}",
        subject={"name": mark},
        sections=["processes"],
    )


def _run(host: str, started: datetime, status: HostStatus = HostStatus.ok) -> HostRun:
    return HostRun(
        name=host,
        address=host,
        status=status,
        started=started,
        finished=started + timedelta(seconds=3),
        bundle=f"/bundles/{host}/{started:%H%M}",
    )


def test_runs_previous_and_changes_read_the_same_on_both_stores(store: HistoryStore) -> None:
    store.begin_sweep("s1", T0, "inventory.yaml", 2)
    store.record("s1", _run("gpu-a", T0), [_finding("a1"), _finding("a2")])
    store.record("s1", _run("gpu-b", T0, HostStatus.unreachable), [])
    store.end_sweep("s1", T0 + timedelta(minutes=1), 1, None)

    previous = store.previous("gpu-a")
    assert previous is not None and previous.sweep_id == "s1" and previous.started == T0
    assert sorted(f.fingerprint for f in previous.findings) == ["a1", "a2"]
    assert previous.findings[0].subject == {"name": previous.findings[0].fingerprint}
    assert store.previous("gpu-b") is None  # never reached: nothing to compare with

    later = T0 + timedelta(minutes=15)
    changes = compare(previous.findings, [_finding("a2"), _finding("a3")], {"processes"}, True)
    assert [f.fingerprint for f in changes.new] == ["a3"]
    assert [f.fingerprint for f in changes.still] == ["a2"]
    assert [f.fingerprint for f in changes.resolved] == ["a1"]
    row = _run("gpu-a", later).model_copy(update={"changes": changes})
    store.begin_sweep("s2", later, "inventory.yaml", 1)
    store.record("s2", row, [_finding("a2"), _finding("a3")])

    runs = store.runs()
    assert [(r.host, r.sweep_id, r.status, r.findings, r.new, r.resolved) for r in runs] == [
        ("gpu-a", "s2", "ok", 2, 1, 1),
        ("gpu-b", "s1", "unreachable", 0, None, None),
        ("gpu-a", "s1", "ok", 2, None, None),
    ]
    assert [r.started for r in store.runs("gpu-a", limit=1)] == [later]
    latest = store.latest_runs(T0)
    assert [(r.host, r.sweep_id) for r in latest] == [("gpu-a", "s2"), ("gpu-b", "s1")]
    assert [r.host for r in store.latest_runs(later)] == ["gpu-a"]


def test_a_run_recorded_twice_by_one_sweep_counts_once(store: HistoryStore) -> None:
    store.begin_sweep("s1", T0, "inventory.yaml", 1)
    store.record("s1", _run("gpu-a", T0), [_finding("a1")])
    store.record("s1", _run("gpu-a", T0), [_finding("a1")])
    assert len(store.runs()) == 1
    previous = store.previous("gpu-a")
    assert previous is not None and len(previous.findings) == 1


def test_history_lists_the_same_rows_from_both_stores(store: HistoryStore, location: str) -> None:
    store.begin_sweep("s1", T0, "inventory.yaml", 1)
    store.record("s1", _run("gpu-a", T0), [_finding("a1")])
    store.close()
    result = run_cli("history", "--history", location, "--json")
    assert result.exit_code == 0, result.stderr
    assert '"host": "gpu-a"' in result.stdout and '"findings": 1' in result.stdout
    reader = open_history_read_only(location)
    try:
        assert [r.host for r in reader.runs()] == ["gpu-a"]
    finally:
        reader.close()


def test_tickets_are_kept_by_fingerprint_and_destination_on_both_stores(
    store: HistoryStore,
) -> None:
    opened = TicketRow(
        fingerprint="a1",
        destination="github:https://api.github.com/acme/infra",
        host="gpu-a",
        finding_id="gpu.xid",
        issue="#17",
        url="https://github.com/acme/infra/issues/17",
        opened=T0,
    )
    assert store.ticket("a1", opened.destination) is None
    store.record_ticket(opened)
    assert store.ticket("a1", opened.destination) == opened
    assert store.ticket("a1", "gitlab:elsewhere") is None
    closed = TicketRow(**{**opened.__dict__, "resolved": T0 + timedelta(hours=1)})
    store.record_ticket(closed)
    assert store.ticket("a1", opened.destination) == closed


WRITER = """
import sys
from datetime import UTC, datetime, timedelta
from forensics.core.models import Severity
from forensics.fleet.fingerprint import TrackedFinding
from forensics.fleet.history_location import open_history
from forensics.fleet.report import HostRun, HostStatus

location, name = sys.argv[1], sys.argv[2]
store = open_history(location, lambda message: print(message, file=sys.stderr))
start = datetime(2026, 11, 29, tzinfo=UTC)
store.begin_sweep(f"sweep-{name}", start, "inventory.yaml", 40)
for index in range(40):
    host = f"{name}-{index:02d}"
    run = HostRun(name=host, address=host, status=HostStatus.ok,
                  started=start + timedelta(seconds=index))
    findings = [TrackedFinding(fingerprint=f"{host}-{k}", id="process.zombie",
                               severity=Severity.warning, title="t") for k in range(3)]
    store.record(f"sweep-{name}", run, findings)
    store.record(f"sweep-{name}", run, findings)  # a retry never doubles it
store.close()
"""


def test_three_writers_at_once_lose_and_double_nothing(location: str, tmp_path: Path) -> None:
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, location, name],
            stderr=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parent.parent,
        )
        for name in ("a", "b", "c")
    ]
    errors = [writer.communicate(timeout=120)[1] for writer in writers]
    assert [writer.returncode for writer in writers] == [0, 0, 0], errors
    assert not any("history is off" in error for error in errors), errors
    reader = open_history_read_only(location)
    try:
        runs = reader.runs(limit=1000)
        assert len(runs) == 120
        assert len({(run.sweep_id, run.host) for run in runs}) == 120
        assert all(run.findings == 3 for run in runs)
        assert len(reader.latest_runs(T0 - timedelta(days=1))) == 120
    finally:
        reader.close()


def test_postgres_migrates_an_empty_database(postgres_url: str) -> None:
    store = open_history(postgres_url, pytest.fail)
    store.close()
    with psycopg.connect(postgres_url) as connection:
        assert schema_version(connection) == SCHEMA_VERSION
        applied = connection.execute("SELECT version FROM forensics_schema ORDER BY 1").fetchall()
    assert [version for (version,) in applied] == list(range(1, SCHEMA_VERSION + 1))


def test_postgres_migrates_from_the_previous_schema_keeping_its_runs(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        assert migrate(connection, "test", upto=SCHEMA_VERSION - 1) == SCHEMA_VERSION - 1
        connection.execute(
            "INSERT INTO runs (sweep_id, host, status, started, findings) "
            "VALUES ('old', 'gpu-a', 'ok', %s, 0)",
            (T0,),
        )
    store = open_history(postgres_url, pytest.fail)
    try:
        assert [(r.sweep_id, r.host) for r in store.runs()] == [("old", "gpu-a")]
        store.record("old", _run("gpu-a", T0), [])  # the new unique key is in force
        assert len(store.runs()) == 1
    finally:
        store.close()
    with psycopg.connect(postgres_url) as connection:
        assert schema_version(connection) == SCHEMA_VERSION


def test_postgres_refuses_a_newer_schema_in_one_line(postgres_url: str) -> None:
    open_history(postgres_url, pytest.fail).close()
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("INSERT INTO forensics_schema (version) VALUES (%s)", (99,))
    with pytest.raises(UsageError, match="schema version 99, newer than"):
        open_history(postgres_url, pytest.fail)
    result = run_cli("history", "--history", postgres_url)
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert "schema version 99, newer than this forensics knows" in result.stderr


def test_an_unreachable_postgres_turns_history_off_with_one_warning(
    postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGPASSWORD", "not-the-password")
    warnings: list[str] = []
    store = open_history(postgres.new_database(), warnings.append)
    assert not store.available
    assert len(warnings) == 1 and "history is off for this run" in warnings[0]
    assert "not-the-password" not in warnings[0]
    store.record("s1", _run("gpu-a", T0), [])  # a no-op, never an exception


def test_a_password_in_the_inventory_url_is_refused(tmp_path: Path) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(
        "history: postgresql://forensics:hunter2@db/fleet\nhosts:\n  - {name: a, host: 127.0.0.1}\n"
    )
    result = run_cli("sweep", "--inventory", str(inventory), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert "a password in the URL; put it in PGPASSWORD" in result.stderr
    assert "hunter2" not in result.stderr
