"""What could not be checked: the report's last word, so a silence is never read as "fine".

Two sources: sections that did not finish, timed out or were cut (the manifest), and
probes whose facts say ``unavailable`` (the convention every probe follows: a facts model
with an ``unavailable: str | None`` field, set to the reason when nothing could be read).
"""

from __future__ import annotations

from forensics.judge.host_report import HostReport, Unchecked


def unchecked(report: HostReport) -> list[Unchecked]:
    """Every gap in the evidence, sections first.

    >>> from datetime import UTC, datetime
    >>> from forensics.core.models import SectionResult, Target
    >>> from forensics.core.facts import Facts
    >>> from forensics.probes.system import SystemFacts
    >>> now = datetime(2025, 11, 29, tzinfo=UTC)
    >>> cut = SectionResult(name="system", command="", exit_status=None, duration_s=10.0,
    ...     bytes=0, truncated=False, timed_out=True, finished=True)
    >>> report = HostReport(tool_version="0", target=Target(name="gpu-a"), status="ok",
    ...     started=now, finished=now, sections=[cut],
    ...     facts=Facts(system=SystemFacts(unavailable="section system timed out")))
    >>> for gap in unchecked(report):
    ...     print(f"{gap.what}: {gap.why}")
    section system: was stopped by its per-section timeout
    system facts: section system timed out
    """
    gaps = [
        Unchecked(what=f"section {result.name}", why=problem)
        for result in report.sections
        if (problem := result.problem()) is not None
    ]
    for name, facts in report.facts:
        reason = getattr(facts, "unavailable", None)
        if isinstance(reason, str) and reason:
            gaps.append(Unchecked(what=f"{name} facts", why=reason))
    return gaps
