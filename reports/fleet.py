"""What the fleet report shows: one line per host, worst first, and counts by finding id.

The sweep builds a ``FleetSummary`` with ``fleet_summary(reports)`` from the
``HostReport`` of every host it tried (a host it could not collect is a ``HostReport``
whose status says why, with no facts), and renders it with ``reports.render_fleet``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from forensics.host_report import HostReport
from forensics.models import CollectStatus, Severity
from reports.headline import headline

NOT_COLLECTED = "not_collected"
RANKS = {"critical": 4, NOT_COLLECTED: 3, "warning": 2, "info": 1, "clean": 0}
"""A host that could not be collected sorts below a critical one and above a warning: its
state is unknown, which is worse than a known warning and better than a known disaster."""


class FleetHost(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The target's name as the operator calls it.")
    anchor: str = Field(description="Unique HTML id of the host's section: host-<slug>.")
    standing: str = Field(description="critical, not_collected, warning, info or clean.")
    headline: str
    finding_ids: list[str] = Field(description="Distinct finding ids, worst first.")
    report: HostReport


class FindingCount(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    severity: Severity = Field(description="The worst severity this id had on any host.")
    hosts: int = Field(description="How many hosts have it.")
    total: int = Field(description="How many findings with this id, all hosts together.")


class FleetSummary(BaseModel):
    """Hosts sorted by standing (worst first, then by name); counts by finding id, the most
    severe and most widespread first."""

    model_config = ConfigDict(extra="forbid")

    title: str
    started: datetime | None = None
    finished: datetime | None = None
    hosts: list[FleetHost]
    counts: list[FindingCount]

    @property
    def not_collected(self) -> int:
        return sum(1 for host in self.hosts if host.standing == NOT_COLLECTED)


def fleet_summary(
    reports: Sequence[HostReport],
    title: str = "Fleet sweep",
    started: datetime | None = None,
    finished: datetime | None = None,
) -> FleetSummary:
    """Summarise a sweep's host reports.

    >>> from datetime import UTC, datetime
    >>> from forensics.models import Target
    >>> now = datetime(2025, 11, 29, tzinfo=UTC)
    >>> from forensics.models import Finding
    >>> zombie = Finding(id="process.zombie", severity="warning", title="A zombie",
    ...     explanation="")
    >>> def host(name, status="ok", findings=()):
    ...     return HostReport(tool_version="0", target=Target(name=name), status=status,
    ...         status_reason="connection refused" if status != "ok" else None,
    ...         started=now, finished=now, findings=list(findings))
    >>> summary = fleet_summary([host("b"), host("a", findings=[zombie]),
    ...     host("c", status="unreachable")])
    >>> [(h.name, h.standing, h.anchor) for h in summary.hosts]
    [('c', 'not_collected', 'host-c'), ('a', 'warning', 'host-a'), ('b', 'clean', 'host-b')]
    >>> [(c.id, c.hosts) for c in summary.counts]
    [('process.zombie', 1)]
    """
    used: set[str] = set()
    hosts = [
        FleetHost(
            name=report.target.name,
            anchor=_anchor(report.target.name, used),
            standing=_standing(report),
            headline=headline(report).text,
            finding_ids=list(dict.fromkeys(f.id for f in report.findings)),
            report=report,
        )
        for report in reports
    ]
    hosts.sort(key=lambda h: (-RANKS[h.standing], h.name))
    return FleetSummary(
        title=title,
        started=started,
        finished=finished,
        hosts=hosts,
        counts=_counts(reports),
    )


def _standing(report: HostReport) -> str:
    if report.status not in (CollectStatus.ok, CollectStatus.partial):
        return NOT_COLLECTED
    return report.worst.value if report.worst else "clean"


def _anchor(name: str, used: set[str]) -> str:
    base = "host-" + (re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "unnamed")
    anchor, counter = base, 2
    while anchor in used:
        anchor, counter = f"{base}-{counter}", counter + 1
    used.add(anchor)
    return anchor


def _counts(reports: Sequence[HostReport]) -> list[FindingCount]:
    worst: dict[str, Severity] = {}
    hosts: dict[str, int] = {}
    total: dict[str, int] = {}
    for report in reports:
        for finding in report.findings:
            known = worst.get(finding.id)
            if known is None or finding.severity.rank > known.rank:
                worst[finding.id] = finding.severity
            total[finding.id] = total.get(finding.id, 0) + 1
        for finding_id in {f.id for f in report.findings}:
            hosts[finding_id] = hosts.get(finding_id, 0) + 1
    counts = [
        FindingCount(id=key, severity=worst[key], hosts=hosts[key], total=total[key])
        for key in worst
    ]
    return sorted(counts, key=lambda c: (-c.severity.rank, -c.hosts, c.id))
