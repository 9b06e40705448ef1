"""The dated events a host report can place on its timeline.

Today: the host's boot (``btime``), and the collection itself. Every probe that learns a
date (a process start, a kernel event, a log's last write) adds its events here, or, once
``HostReport`` carries a ``timeline`` list, this function maps that list instead.
"""

from __future__ import annotations

from forensics.host_report import HostReport
from reports.figures import TimelinePoint, human_duration

CLOCK_SKEW_S = 5.0
"""Beyond this, the host's clock is said to disagree with ours; its own times shift by it."""


def timeline_points(report: HostReport) -> list[TimelinePoint]:
    """Events in time order; empty when nothing but the collection is dated.

    >>> from datetime import UTC, datetime
    >>> from forensics.models import Target
    >>> from forensics.facts import Facts
    >>> from probes.system import SystemFacts
    >>> boot = datetime(2025, 10, 23, 18, 40, tzinfo=UTC)
    >>> now = datetime(2025, 11, 29, 20, 15, tzinfo=UTC)
    >>> report = HostReport(tool_version="0", target=Target(name="gpu-a"), status="ok",
    ...     started=now, finished=now, facts=Facts(system=SystemFacts(boot_time=boot)))
    >>> [(p.at.isoformat(), p.label) for p in timeline_points(report)]
    [('2025-10-23T18:40:00+00:00', 'host booted'), ('2025-11-29T20:15:00+00:00', 'collected')]
    """
    system = report.facts.system
    if system is None or system.boot_time is None:
        return []
    took = (report.finished - report.started).total_seconds()
    collected = "collected" if took < 1 else f"collected (took {human_duration(took)})"
    points = [TimelinePoint(at=system.boot_time, label="host booted")]
    if system.host_clock is not None:
        skew = (system.host_clock - report.started).total_seconds()
        if abs(skew) > CLOCK_SKEW_S:
            ahead = "ahead of" if skew > 0 else "behind"
            collected += f"; host clock {human_duration(abs(skew))} {ahead} ours"
    points.append(TimelinePoint(at=report.started, label=collected))
    return sorted(points, key=lambda p: p.at)
