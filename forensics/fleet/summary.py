"""What a fleet report keeps of one host's report (``HostSummary``), made where the host was
collected, so the sweep never holds or writes every host's facts; and the reading of a
fleet.json written before that (schema 1, whole reports), which ``forensics report`` still
accepts.
"""

from __future__ import annotations

from typing import Any

from forensics.fleet.fingerprint import fully_read_sections, track
from forensics.fleet.patterns import host_traits
from forensics.fleet.report import SCHEMA_VERSION, HostSummary
from forensics.judge.host_report import HostReport
from forensics.reports.headline import headline
from forensics.reports.unchecked import unchecked


def summarise(report: HostReport, host: str) -> HostSummary:
    """``report`` as the fleet report keeps it; ``host`` is the name findings are
    fingerprinted under (the inventory's).

    >>> from datetime import UTC, datetime
    >>> from forensics.core.models import Finding, Target
    >>> now = datetime(2026, 11, 29, tzinfo=UTC)
    >>> zombie = Finding(id="process.zombie", severity="warning", explanation="a long story",
    ...     title="cuzk (pid 4242) is a zombie", subject={"pid": 4242, "name": "cuzk"})
    >>> kept = summarise(HostReport(tool_version="0", target=Target(name="gpu-a"),
    ...     status="ok", started=now, finished=now, findings=[zombie]), "gpu-a")
    >>> kept.headline, [(f.id, f.title) for f in kept.findings]
    ('cuzk (pid 4242) is a zombie.', [('process.zombie', 'cuzk (pid 4242) is a zombie')])
    """
    # Built from a report that was redacted when it was made: validating it again would
    # only redact the same text twice, once per host of the sweep.
    return HostSummary.model_construct(
        headline=headline(report).text,
        findings=track(report.findings, host),
        unchecked=unchecked(report),
        complete_sections=sorted(fully_read_sections(report.sections)),
        traits=host_traits(report),
    )


def upgraded(document: Any) -> Any:
    """A fleet report document as parsed from JSON, with each host's whole report (schema 1)
    replaced by its summary; anything else is returned as it is, for validation to judge."""
    if not isinstance(document, dict) or not isinstance(document.get("hosts"), list):
        return document
    document["schema_version"] = SCHEMA_VERSION
    for host in document["hosts"]:
        report = host.get("report") if isinstance(host, dict) else None
        if isinstance(report, dict) and "target" in report:
            summary = summarise(HostReport.model_validate(report), str(host.get("name")))
            host["report"] = summary.model_dump(mode="json")
    return document
