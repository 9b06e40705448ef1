"""What the fleet report shows: one line per host, worst first, counts by finding id, and
what changed since each host's previous run.

The sweep's ``FleetReport`` holds every host it was asked for, collected or not (a collected
host carries the summary of its report, ``HostSummary``; one it could not reach, never
started, was interrupted on, or failed on for another reason has only a status and a
reason).
``fleet_summary`` adds what a page needs (anchors, standings, headlines) and
``reports.render_fleet`` renders it.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from forensics.fleet.fingerprint import TrackedFinding
from forensics.fleet.report import NOT_COLLECTED, FindingCount, FleetReport, HostRun, host_order

CHANGE_KINDS = ("new", "resolved", "not_rechecked")
"""What the report lists finding by finding; findings still present are only counted."""


class FleetHost(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The host's name as the operator calls it.")
    anchor: str = Field(description="Unique HTML id of the host's section: host-<slug>.")
    standing: str = Field(description="critical, not_collected, warning, info or clean.")
    headline: str
    finding_ids: list[str] = Field(description="Distinct finding ids, worst first.")
    run: HostRun


class Change(NamedTuple):
    host: FleetHost
    kind: str
    finding: TrackedFinding


class FleetSummary(BaseModel):
    """The sweep, and its hosts sorted by standing (worst first, then by name)."""

    model_config = ConfigDict(extra="forbid")

    title: str
    fleet: FleetReport
    hosts: list[FleetHost]

    @property
    def counts(self) -> list[FindingCount]:
        return self.fleet.finding_counts

    @property
    def not_collected(self) -> int:
        return sum(1 for host in self.hosts if host.standing == NOT_COLLECTED)

    @property
    def compared(self) -> bool:
        """Whether any host had an earlier run to compare with."""
        return any(
            host.run.changes is not None and host.run.changes.previous_run is not None
            for host in self.hosts
        )

    def changes(self) -> list[Change]:
        """New, resolved and not re-checked findings, host by host (worst host first)."""
        return [
            Change(host, kind, finding)
            for host in self.hosts
            if host.run.changes is not None
            for kind in CHANGE_KINDS
            for finding in getattr(host.run.changes, kind)
        ]


def fleet_summary(fleet: FleetReport, title: str | None = None) -> FleetSummary:
    """Summarise a sweep for a page.

    >>> from datetime import UTC, datetime
    >>> from forensics.fleet.fingerprint import TrackedFinding
    >>> from forensics.fleet.report import HostStatus, HostSummary, count_findings
    >>> now = datetime(2025, 11, 29, tzinfo=UTC)
    >>> zombie = TrackedFinding(fingerprint="f1", id="process.zombie", severity="warning",
    ...     title="A zombie")
    >>> def host(name, status="ok", findings=()):
    ...     report = HostSummary(headline="A zombie." if findings else "No findings.",
    ...         findings=list(findings))
    ...     collected = status == "ok"
    ...     return HostRun(name=name, address=name, status=status,
    ...         reason=None if collected else "not started: SIGINT stopped the sweep first",
    ...         report=report if collected else None)
    >>> runs = [host("b"), host("a", findings=[zombie]), host("c", status="not_started")]
    >>> summary = fleet_summary(FleetReport(tool_version="0", sweep_id="s1", inventory="i",
    ...     directory="d", started=now, finished=now, hosts=runs,
    ...     finding_counts=count_findings(runs)))
    >>> [(h.name, h.standing, h.anchor) for h in summary.hosts]
    [('c', 'not_collected', 'host-c'), ('a', 'warning', 'host-a'), ('b', 'clean', 'host-b')]
    >>> summary.hosts[0].headline
    'Not collected (not_started): not started: SIGINT stopped the sweep first.'
    >>> [(c.id, c.hosts) for c in summary.counts]
    [('process.zombie', 1)]
    """
    used: set[str] = set()
    hosts = [
        FleetHost(
            name=run.name,
            anchor=_anchor(run.name, used),
            standing=run.standing,
            headline=_headline(run),
            finding_ids=list(dict.fromkeys(f.id for f in run.report.findings))
            if run.report is not None
            else [],
            run=run,
        )
        for run in sorted(fleet.hosts, key=host_order)
    ]
    return FleetSummary(title=title or f"Fleet sweep {fleet.sweep_id}", fleet=fleet, hosts=hosts)


def _headline(run: HostRun) -> str:
    """The host report's headline; for a host with no report, the same words from the row."""
    if run.report is not None:
        return run.report.headline
    reason = f": {run.reason.rstrip('.')}" if run.reason else ""
    return f"Not collected ({run.status.value}){reason}."


def _anchor(name: str, used: set[str]) -> str:
    base = "host-" + (re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "unnamed")
    anchor, counter = base, 2
    while anchor in used:
        anchor, counter = f"{base}-{counter}", counter + 1
    used.add(anchor)
    return anchor
