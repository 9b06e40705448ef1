"""The fleet report's renderings and the sweep's exit status, on reports built from models."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from forensics.fingerprint import Changes, track
from forensics.fleet_report import FleetReport, HostRun, HostStatus, count_findings, host_order
from forensics.host_report import HostReport
from forensics.models import EvidenceRef, Finding, Severity, Target
from forensics.sweep_cli import exit_status
from reports.sweep_summary import SweepFormat, render_sweep

STARTED = datetime(2026, 11, 29, 20, 15, 3, tzinfo=UTC)
HOSTILE = "<script>alert(1)</script>|`x`"


def _finding(severity: Severity, pid: int, title: str = "cuzk (pid 4242) is a zombie") -> Finding:
    return Finding(
        id="process.zombie",
        severity=severity,
        title=title,
        explanation="e",
        subject={"pid": pid, "state": "Z"},
        evidence=[EvidenceRef(section="processes", first_line=3, last_line=3, excerpt="x")],
    )


def _host(name: str, status: HostStatus, findings: list[Finding] | None = None) -> HostRun:
    report = None
    if findings is not None:
        report = HostReport(
            tool_version="0",
            target=Target(name=name, host="127.0.0.1", port=22),
            status="ok",
            started=STARTED,
            finished=STARTED + timedelta(seconds=2),
            findings=findings,
        )
    changes = Changes(new=track(findings, name)) if findings else None
    return HostRun(
        name=name,
        address=f"root@127.0.0.1:{len(name)}",
        status=status,
        reason=None if status.collected else f"{name}: cannot connect",
        started=STARTED,
        finished=STARTED + timedelta(seconds=2),
        report=report,
        changes=changes,
    )


def _report(interrupted_by: str | None = None) -> FleetReport:
    hosts = [
        _host(
            "gpu-a", HostStatus.ok, [_finding(Severity.critical, 1), _finding(Severity.warning, 2)]
        ),
        _host(HOSTILE, HostStatus.ok, [_finding(Severity.warning, 3, title=HOSTILE)]),
        _host("gpu-c", HostStatus.ok, []),
        _host("gpu-d", HostStatus.unreachable),
    ]
    hosts.sort(key=host_order)
    return FleetReport(
        tool_version="0",
        sweep_id="20261129T201503Z-ab12",
        inventory="inventory.yaml",
        directory="out/20261129T201503Z-ab12",
        started=STARTED,
        finished=STARTED + timedelta(seconds=9),
        interrupted_by=interrupted_by,
        hosts=hosts,
        finding_counts=count_findings(hosts),
    )


def test_counts_by_finding_id_say_how_many_hosts_and_how_many_findings() -> None:
    (count,) = _report().finding_counts
    assert (count.id, count.severity, count.hosts, count.total) == (
        "process.zombie",
        Severity.critical,
        2,
        3,
    )


def test_hosts_are_worst_first_and_not_collected_ranks_between_critical_and_warning() -> None:
    assert [host.name for host in _report().hosts] == ["gpu-a", "gpu-d", HOSTILE, "gpu-c"]


def test_text_summary_says_how_many_were_collected_and_what_is_new() -> None:
    text = render_sweep(_report(), SweepFormat.text)
    assert "collected 3 of 4 hosts in 9.0s" in text
    assert "  gpu-d  unreachable: gpu-d: cannot connect" in text
    assert "critical process.zombie: 2 hosts, 3 findings" in text


def test_markdown_keeps_its_tables_whole_with_hostile_names() -> None:
    text = render_sweep(_report(), SweepFormat.md)
    assert text.startswith("# Fleet sweep 20261129T201503Z-ab12")
    assert "<script>" not in text
    tables = [block.splitlines() for block in text.split("\n\n") if block.startswith("| ")]
    assert len(tables) == 4
    for rows in tables:
        assert len({len(re.findall(r"(?<!\\)\|", row)) for row in rows}) == 1, rows


def test_html_is_escaped() -> None:
    text = render_sweep(_report(), SweepFormat.html)
    assert "<script>alert" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "Collected 3 of 4 hosts" in text


@pytest.mark.parametrize(
    ("interrupted_by", "fail_on", "allow", "expected"),
    [
        (None, Severity.critical, 0, 3),
        (None, Severity.critical, 1, 1),
        (None, None, 1, 0),
        ("SIGINT", Severity.critical, 5, 130),
        ("SIGTERM", None, 5, 143),
    ],
)
def test_exit_status(
    interrupted_by: str | None, fail_on: Severity | None, allow: int, expected: int
) -> None:
    assert exit_status(_report(interrupted_by), fail_on, allow) == expected
