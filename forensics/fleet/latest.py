"""``forensics fleet-report --since``: one fleet report across every shard's latest runs.

Each host's latest run in the history (whichever collector made it) is taken when it
started within the window; a collected host's bundle is judged again with today's rules, so
the report, its counts and its fleet-wide patterns read exactly like a single sweep's. A
bundle this machine cannot read (another collector's disk) leaves the host with its
recorded status and no findings, and is said once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from forensics import __version__
from forensics.core.errors import BundleError
from forensics.fleet.inventory import ResolvedHost
from forensics.fleet.patterns import fleet_patterns
from forensics.fleet.report import FleetReport, HostRun, HostStatus, count_findings, host_order
from forensics.fleet.store import HistoryStore, RunRow, Warn
from forensics.fleet.summary import summarise
from forensics.judge.analysis import analyze
from forensics.remote import bundle


def latest_fleet_report(
    store: HistoryStore,
    since_s: float,
    inventory: str,
    known: Mapping[str, ResolvedHost],
    warn: Warn,
    now: datetime | None = None,
) -> FleetReport:
    """The fleet as the latest runs since ``now - since_s`` saw it."""
    finished = now or datetime.now(UTC)
    rows = store.latest_runs(finished - timedelta(seconds=since_s))
    unread: list[str] = []
    hosts = sorted((_host_run(row, known.get(row.host), unread) for row in rows), key=host_order)
    if unread:
        warn(
            f"{len(unread)} host(s) whose bundle is not readable here count with their recorded "
            f"status only (no findings, no patterns): {', '.join(unread[:5])}"
            + (" ..." if len(unread) > 5 else "")
        )
    started = min((row.started for row in rows), default=finished)
    sweeps = sorted({row.sweep_id for row in rows if row.sweep_id})
    return FleetReport(
        tool_version=__version__,
        sweep_id=f"latest since {started:%Y-%m-%dT%H:%M:%SZ} ({len(sweeps)} sweeps)",
        inventory=inventory,
        directory=_common_directory([row.bundle for row in rows if row.bundle]),
        started=started,
        finished=finished,
        history=store.location,
        hosts=hosts,
        finding_counts=count_findings(hosts),
        patterns=fleet_patterns(hosts),
    )


def _host_run(row: RunRow, host: ResolvedHost | None, unread: list[str]) -> HostRun:
    status = HostStatus(row.status)
    report = None
    if status.collected and row.bundle:
        try:
            manifest, captures = bundle.load(Path(row.bundle))
            report = analyze(manifest, captures, bundle=row.bundle)
        except BundleError:
            unread.append(row.host)
    summary = summarise(report, row.host) if report is not None else None
    return HostRun(
        name=row.host,
        group=host.group if host else None,
        address=host.address if host else row.host,
        tags=list(host.tags) if host else [],
        status=status,
        reason=row.reason,
        started=row.started,
        finished=report.finished if report is not None else None,
        bundle=row.bundle,
        report=summary,
    )


def _common_directory(bundles: Sequence[str]) -> str:
    parents = [str(Path(path).parent.parent) for path in bundles]
    return parents[0] if parents and all(p == parents[0] for p in parents) else "(several)"
