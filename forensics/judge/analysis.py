"""Raw sections in, ``HostReport`` out: parse with every probe, then judge with every rule.

The same function serves a live collection and ``forensics analyze BUNDLE``, so an old
bundle is judged by today's rules exactly as a fresh one would be.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from forensics.core.escaping import one_line
from forensics.core.evidence import cite
from forensics.core.facts import Facts
from forensics.core.models import CollectOptions, Finding, Manifest, Severity
from forensics.core.probe import Captures, Probe, RuleContext
from forensics.judge.host_report import HostReport
from forensics.judge.rules import CROSS_RULES
from forensics.judge.timeline import build_timeline
from forensics.probes import PROBES


def analyze(manifest: Manifest, captures: Captures, bundle: str | None) -> HostReport:
    context = RuleContext(
        options=manifest.options,
        sections={result.name: result for result in manifest.sections},
        collected_at=manifest.started,
    )
    ran = {result.name for result in manifest.sections}
    parsed: dict[str, Any] = {}
    findings: list[Finding] = []
    for probe in PROBES:
        if not _probe_ran(probe, manifest, ran):
            continue
        try:
            facts = probe.examine(probe.parse(captures, manifest.options))
        except Exception as error:  # host output a parser cannot take is that probe's gap
            findings.append(_unreadable(probe, error, manifest.options))
            continue
        parsed[probe.name] = facts
        findings.extend(probe.judge(facts, context))
    all_facts = Facts(**parsed)
    for rule in CROSS_RULES:
        findings.extend(rule(all_facts, context))
    return HostReport(
        tool_version=manifest.tool_version,
        target=manifest.target,
        status=manifest.status,
        status_reason=manifest.status_reason,
        started=manifest.started,
        finished=manifest.finished,
        bundle=bundle,
        host_key=manifest.host_key,
        facts=all_facts,
        findings=sort_findings(findings),
        sections=manifest.sections,
        timeline=build_timeline(all_facts, manifest.started),
    )


def _unreadable(probe: Probe[Any], error: Exception, options: CollectOptions) -> Finding:
    """A probe whose parser failed on what the host sent: said, and the rest goes on."""
    sections = [spec.name for spec in probe.sections(options)]
    why = one_line(f"{type(error).__name__}: {error}", 200)
    return Finding(
        id="collection.section_unreadable",
        severity=Severity.warning,
        title=f"Could not read the output of probe {probe.name}: {why}",
        explanation=(
            f"The {probe.name} probe's parser failed on what the host sent ({why}). Its "
            "facts are unknown, not absent; the raw output is kept in the bundle. A host "
            "whose tools print something unexpected, or a forged stream, does this."
        ),
        next_steps=[
            f"Look at raw/{sections[0] if sections else probe.name}.txt in the bundle.",
            "Report it with that file: the parser should read it.",
        ],
        subject={"probe": probe.name, "error": why},
        evidence=[cite(name, 1, why) for name in sections],
    )


def _probe_ran(probe: Probe[Any], manifest: Manifest, ran: set[str]) -> bool:
    wanted = manifest.options.probes
    if wanted:
        return probe.name in wanted
    return any(spec.name in ran for spec in probe.sections(manifest.options))


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Worst first, then by id, then the most recent first (the last OOM kill is the one
    that was asked about), so the first screen answers the question.

    >>> from forensics.core.models import Severity
    >>> def kill(pid, time):
    ...     return Finding(id="oom.killed", severity=Severity.critical, title=f"pid {pid}",
    ...                    explanation="", subject={"pid": pid, "time": time})
    >>> [f.subject["pid"] for f in sort_findings([
    ...     kill(7, "2026-11-29T21:00:00+00:00"), kill(12, "2026-11-29T22:00:00+00:00"),
    ...     kill(3, None)])]
    [12, 7, 3]
    """
    return sorted(
        findings, key=lambda f: (-f.severity.rank, f.id, -_subject_time(f), str(f.subject))
    )


def _subject_time(finding: Finding) -> float:
    """The finding's time as a POSIX timestamp, 0 when it has none or none readable."""
    value = finding.subject.get("time")
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value).timestamp()
        except ValueError:
            return 0.0
    return 0.0
