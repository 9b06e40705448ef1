"""One sweep: collect many hosts concurrently, each within its own deadline, losing nothing.

Each host is collected by ``forensics.collect.collect`` in its own thread, at most
``concurrency`` at a time. ``collect`` writes the host's bundle and report the moment the
host finishes; the main thread then records the run in the history and tells the observer.
A host that fails (unreachable, auth, host key, timeout, anything else) is that host's row,
never the sweep's end. A host whose thread outlives its deadline by ``WATCHDOG_SLACK_S`` is
given up as ``timeout`` and left behind (its thread is a daemon).

Stopping (``StopRequest``, set from a signal handler): no new host starts, hosts in flight
get ``grace_s`` to finish, the rest are ``interrupted`` or ``not_started``, and the report
says which. A second request skips the grace.
"""

from __future__ import annotations

import contextlib
import queue
import secrets
import shutil
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Protocol

from forensics import __version__
from forensics.collect import collect
from forensics.core.errors import CollectionError, ForensicsError, OutputUnwritable
from forensics.fleet.fingerprint import compare
from forensics.fleet.inventory import ResolvedHost
from forensics.fleet.patterns import fleet_patterns
from forensics.fleet.report import (
    FleetReport,
    HostRun,
    HostStatus,
    count_findings,
    host_order,
)
from forensics.fleet.store import HistoryStore
from forensics.fleet.summary import summarise
from forensics.remote.bundle import STAGING_PREFIX, CommitGate

FLEET_REPORT = "fleet.json"
WATCHDOG_SLACK_S = 10.0
_POLL_S = 0.1
_THREAD_PREFIX = "sweep-"


class SweepObserver(Protocol):
    """Told what happens, in the main thread; a progress bar or nothing."""

    def host_started(self, host: ResolvedHost) -> None: ...

    def host_finished(self, row: HostRun) -> None: ...


class QuietObserver:
    def host_started(self, host: ResolvedHost) -> None:
        pass

    def host_finished(self, row: HostRun) -> None:
        pass


@dataclass
class StopRequest:
    """Set from a signal handler: the first request stops new hosts, the second the grace."""

    reason: str | None = None
    hurry: bool = False
    since: float | None = None

    def request(self, reason: str) -> None:
        if self.reason is not None:
            self.hurry = True
            return
        self.reason = reason
        self.since = time.monotonic()


@contextlib.contextmanager
def signal_handlers(handlers: Mapping[signal.Signals, Callable[[str], None]]) -> Iterator[None]:
    """Route each signal to ``handler(signal name)`` inside the block, then restore."""

    def route(number: int, frame: FrameType | None) -> None:
        kind = signal.Signals(number)
        handlers[kind](kind.name)

    previous = {kind: signal.signal(kind, route) for kind in handlers}
    try:
        yield
    finally:
        for kind, handler in previous.items():
            signal.signal(kind, handler)


def new_sweep_id(started: datetime) -> str:
    return f"{started:%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}"


@dataclass
class _InFlight:
    host: ResolvedHost
    started: datetime
    give_up_at: float
    gate: CommitGate = field(default_factory=CommitGate)


@dataclass
class Sweep:
    """What to sweep and how; ``run`` does it once."""

    hosts: Sequence[ResolvedHost]
    inventory: str
    out: Path
    history: HistoryStore | None
    concurrency: int = 64
    grace_s: float = 5.0
    observer: SweepObserver = field(default_factory=QuietObserver)

    def run(self, stop: StopRequest) -> FleetReport:
        started = datetime.now(UTC)
        sweep_id = new_sweep_id(started)
        sweep_dir = self.out / sweep_id
        sweep_dir.mkdir(parents=True, exist_ok=True)
        if self.history is not None:
            self.history.begin_sweep(sweep_id, started, self.inventory, len(self.hosts))
        hosts = sorted(self._collect_all(stop, sweep_id, sweep_dir), key=host_order)
        _remove_staging(sweep_dir)
        report = FleetReport(
            tool_version=__version__,
            sweep_id=sweep_id,
            inventory=self.inventory,
            directory=str(sweep_dir),
            started=started,
            finished=datetime.now(UTC),
            interrupted_by=stop.reason,
            history=self.history.location
            if self.history is not None and self.history.available
            else None,
            hosts=hosts,
            finding_counts=count_findings(hosts),
            patterns=fleet_patterns(hosts),
        )
        if self.history is not None:
            self.history.end_sweep(
                sweep_id, report.finished, len(report.collected), report.interrupted_by
            )
        _write_atomically(sweep_dir / FLEET_REPORT, report.model_dump_json(indent=2) + "\n")
        return report

    def _collect_all(self, stop: StopRequest, sweep_id: str, sweep_dir: Path) -> list[HostRun]:
        """Start hosts while there is room, take results as they come, give up on hosts
        past their deadline, and after a stop request wind down; one row per host."""
        results: queue.Queue[HostRun] = queue.Queue()
        pending = deque(self.hosts)
        in_flight: dict[str, _InFlight] = {}
        rows: dict[str, HostRun] = {}
        while pending or in_flight:
            while stop.reason is None and pending and len(in_flight) < self.concurrency:
                host = pending.popleft()
                in_flight[host.name] = self._start(host, sweep_dir, results)
                self.observer.host_started(host)
            try:
                row: HostRun | None = results.get(timeout=_POLL_S)
            except queue.Empty:
                row = None
            if row is not None and row.name in in_flight:  # else: given up on already
                del in_flight[row.name]
                self._finish(row, sweep_id, rows)
            now = time.monotonic()
            for name, flight in list(in_flight.items()):
                # A host whose bundle is already committed is never given up: its row is
                # on its way, and the report must list the bundle that is on disk.
                if now > flight.give_up_at and flight.gate.close():
                    del in_flight[name]
                    self._finish(_given_up(flight), sweep_id, rows)
            if stop.reason is None:
                continue
            for host in pending:
                self._finish(_not_started(host, stop.reason), sweep_id, rows)
            pending.clear()
            assert stop.since is not None
            if in_flight and (stop.hurry or now > stop.since + self.grace_s):
                for name, flight in list(in_flight.items()):
                    if flight.gate.close():
                        del in_flight[name]
                        self._finish(_interrupted(flight, stop.reason), sweep_id, rows)
        return list(rows.values())

    def _start(
        self, host: ResolvedHost, sweep_dir: Path, results: queue.Queue[HostRun]
    ) -> _InFlight:
        hops = [hop for hop in (host.target.proxy_jump or "").split(",") if hop.strip()]
        give_up_at = (
            time.monotonic()
            + host.options.timeout
            + host.target.connect_timeout * (len(hops) + 1)
            + WATCHDOG_SLACK_S
        )
        flight = _InFlight(host=host, started=datetime.now(UTC), give_up_at=give_up_at)
        thread = threading.Thread(
            target=lambda: results.put(collect_host(host, sweep_dir, flight.gate)),
            name=f"{_THREAD_PREFIX}{host.name}",
            daemon=True,
        )
        thread.start()
        return flight

    def _finish(self, row: HostRun, sweep_id: str, rows: dict[str, HostRun]) -> None:
        tracked = row.report.findings if row.report is not None else []
        if row.status.collected and row.report is not None:
            previous = self.history.previous(row.name) if self.history is not None else None
            changes = compare(
                previous.findings if previous is not None else None,
                tracked,
                set(row.report.complete_sections),
                complete=row.status is HostStatus.ok,
            )
            if previous is not None:
                changes.previous_run = previous.started
                changes.previous_sweep = previous.sweep_id
            row = row.model_copy(update={"changes": changes})
        if self.history is not None:
            self.history.record(sweep_id, row, tracked)
        rows[row.name] = row
        self.observer.host_finished(row)


def collect_host(host: ResolvedHost, out: Path, gate: CommitGate | None = None) -> HostRun:
    """Collect one host; every way it can fail becomes its row, never an exception. The
    row keeps the report's summary: the whole report is in the bundle, written once."""
    started = datetime.now(UTC)
    common = {
        "name": host.name,
        "group": host.group,
        "address": host.address,
        "tags": list(host.tags),
    }
    try:
        report = collect(host.target, host.options, out, gate)
    except CollectionError as error:
        return HostRun(
            **common,
            status=HostStatus.of(error.status),
            reason=error.message,
            started=started,
            finished=datetime.now(UTC),
            bundle=error.bundle,
        )
    except ForensicsError as error:
        reason = error.message
    except Exception as error:
        reason = f"internal error: {type(error).__name__}: {error} (report it)"
    else:
        return HostRun(
            **common,
            status=HostStatus.of(report.status),
            reason=report.status_reason,
            started=started,
            finished=report.finished,
            bundle=report.bundle,
            report=summarise(report, host.name),
        )
    return HostRun(
        **common,
        status=HostStatus.error,
        reason=reason,
        started=started,
        finished=datetime.now(UTC),
    )


def _given_up(flight: _InFlight) -> HostRun:
    host = flight.host
    return HostRun(
        name=host.name,
        group=host.group,
        address=host.address,
        status=HostStatus.timeout,
        reason=f"still running {WATCHDOG_SLACK_S:g}s past its {host.options.timeout:g}s deadline "
        "(name resolution or the connection hung); given up",
        started=flight.started,
        finished=datetime.now(UTC),
    )


def _interrupted(flight: _InFlight, why: str) -> HostRun:
    host = flight.host
    return HostRun(
        name=host.name,
        group=host.group,
        address=host.address,
        status=HostStatus.interrupted,
        reason=f"still being collected when {why} stopped the sweep and its grace ran out",
        started=flight.started,
        finished=datetime.now(UTC),
    )


def _not_started(host: ResolvedHost, why: str) -> HostRun:
    return HostRun(
        name=host.name,
        group=host.group,
        address=host.address,
        status=HostStatus.not_started,
        reason=f"not started: {why} stopped the sweep first",
    )


def abandoned_threads() -> bool:
    """Whether a host's collection thread is still running (given up on or interrupted)."""
    return any(thread.name.startswith(_THREAD_PREFIX) for thread in threading.enumerate())


def _remove_staging(sweep_dir: Path) -> None:
    """Staging directories of hosts the sweep stopped waiting for: they can never become
    bundles (their gates are closed), and the sweep directory is this sweep's alone."""
    for staging in sweep_dir.glob(f"*/{STAGING_PREFIX}*"):
        shutil.rmtree(staging, ignore_errors=True)


def _write_atomically(path: Path, text: str) -> None:
    aside = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    try:
        aside.write_text(text)
        aside.replace(path)
    except OSError as error:
        aside.unlink(missing_ok=True)
        raise OutputUnwritable(
            f"{path}: cannot write the fleet report ({error.strerror})"
        ) from error
