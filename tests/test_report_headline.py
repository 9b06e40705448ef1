"""The headline is one sentence a tired on-call engineer can read: the worst finding's
title, the process it is about where the title does not say, and nothing for machines."""

from __future__ import annotations

from datetime import UTC, datetime

from forensics.core.facts import Facts
from forensics.core.models import CollectOptions, Finding, Target
from forensics.core.probe import RuleContext
from forensics.judge.analysis import sort_findings
from forensics.judge.host_report import HostReport
from forensics.judge.rules import oom
from forensics.probes import kernel_log_rules
from forensics.reports.headline import headline
from tests.kernel_samples import parse_section, sample, section_text

NOW = datetime(2025, 11, 30, tzinfo=UTC)


def _findings(log: str, focus: str | None = None) -> list[Finding]:
    facts = Facts(kernel_log=parse_section(section_text(sample(log))))
    context = RuleContext(options=CollectOptions(focus=focus), sections={}, collected_at=NOW)
    return sort_findings(
        oom.oom_verdict(facts, context) + kernel_log_rules.rules(facts.kernel_log, context)
    )


def _headline(findings: list[Finding]) -> str:
    report = HostReport(
        tool_version="0", target=Target(name="gpu-a"), status="ok", started=NOW, finished=NOW,
        findings=findings,
    )  # fmt: skip
    return headline(report).text


def test_an_oom_kill_headline_is_its_title_without_times_or_scopes() -> None:
    findings = _findings("oom-6.18-memcg-v1.dmesg")
    killed = findings[0]
    assert killed.id == "oom.killed" and "monotonic_s" in killed.subject
    text = _headline(findings)
    assert [f.id for f in findings] == ["oom.killed"]
    assert text == killed.title + "."
    for internal in ("[", "scope", "monotonic", "memory_cgroup", "+00:00", "rss_kb"):
        assert internal not in text


def test_a_title_without_the_pid_gets_it_and_nothing_else() -> None:
    findings = [f for f in _findings("events-6.x.dmesg") if f.id == "kernel.segfault"]
    assert "pid" not in findings[0].title
    text = _headline(findings)
    assert text.startswith(findings[0].title + " (pid 48213); ")
    assert "kind" not in text and "count" not in text
