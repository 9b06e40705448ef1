"""The dated events a host report draws: ``HostReport.timeline`` as figure points."""

from __future__ import annotations

from forensics.judge.host_report import HostReport
from forensics.reports.figures import TimelinePoint


def timeline_points(report: HostReport) -> list[TimelinePoint]:
    """The report's timeline (built by ``forensics/judge/timeline.py``) in time order.

    >>> from datetime import UTC, datetime
    >>> from forensics.core.models import Target
    >>> from forensics.core.timeline_event import TimelineEvent
    >>> boot = datetime(2025, 10, 23, 18, 40, tzinfo=UTC)
    >>> now = datetime(2025, 11, 29, 20, 15, tzinfo=UTC)
    >>> report = HostReport(tool_version="0", target=Target(name="gpu-a"), status="ok",
    ...     started=now, finished=now, timeline=[
    ...     TimelineEvent(time=now, source="system", kind="collection", text="collected"),
    ...     TimelineEvent(time=boot, source="system", kind="boot", text="host booted")])
    >>> [(p.at.isoformat(), p.label) for p in timeline_points(report)]
    [('2025-10-23T18:40:00+00:00', 'host booted'), ('2025-11-29T20:15:00+00:00', 'collected')]
    """
    points = [
        TimelinePoint(at=event.time, label=event.text, approximate=event.approximate)
        for event in report.timeline
    ]
    return sorted(points, key=lambda p: p.at)
