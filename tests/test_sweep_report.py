"""The fleet report of a sweep, in every format, from a ``FleetReport`` built of models:
every host appears with its standing, status and reason, collected or not; what changed
since the previous run is listed; and the sweep's exit status."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from forensics.cli.sweep import exit_status
from forensics.core.models import EvidenceRef, Finding, Severity, Target
from forensics.fleet.fingerprint import Changes, track
from forensics.fleet.report import FleetReport, HostRun, HostStatus, count_findings, host_order
from forensics.fleet.summary import summarise
from forensics.judge.host_report import HostReport
from forensics.reports import Format, render_fleet
from forensics.reports.fleet import fleet_summary
from tests.conftest import run_cli
from tests.rendered import (
    assert_inert_page,
    markdown_headings,
    markdown_html,
    markdown_table,
    markdown_tables,
    parse_html,
)

STARTED = datetime(2026, 11, 29, 20, 15, 3, tzinfo=UTC)
EARLIER = STARTED - timedelta(minutes=15)
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


def _collected(name: str, findings: list[Finding], gone: list[Finding] | None = None) -> HostRun:
    """A collected host; with ``gone``, its previous run had those findings, now resolved."""
    report = HostReport(
        tool_version="0",
        target=Target(name=name, host="127.0.0.1", port=22),
        status="ok",
        started=STARTED,
        finished=STARTED + timedelta(seconds=2),
        findings=findings,
    )
    if gone is None:
        changes = Changes(new=track(findings, name))
    else:
        changes = Changes(
            previous_run=EARLIER, still=track(findings, name), resolved=track(gone, name)
        )
    return HostRun(
        name=name,
        address=f"root@127.0.0.1:{len(name)}",
        status=HostStatus.ok,
        started=STARTED,
        finished=STARTED + timedelta(seconds=2),
        bundle=f"out/{name}/2026-11-29T20-15-03Z",
        report=summarise(report, name),
        changes=changes,
    )


def _not_collected(name: str, status: HostStatus, reason: str) -> HostRun:
    return HostRun(
        name=name,
        address=f"root@127.0.0.1:{len(name)}",
        status=status,
        reason=reason,
        started=None if status is HostStatus.not_started else STARTED,
        finished=None if status is HostStatus.not_started else STARTED + timedelta(seconds=1),
    )


def _report(interrupted_by: str | None = None) -> FleetReport:
    hosts = [
        _collected("gpu-a", [_finding(Severity.critical, 1), _finding(Severity.warning, 2)]),
        _collected(HOSTILE, [_finding(Severity.warning, 3, title=HOSTILE)]),
        _collected("gpu-c", [], gone=[_finding(Severity.warning, 7)]),
        _not_collected("gpu-d", HostStatus.unreachable, "gpu-d: connection refused"),
        _not_collected("gpu-e", HostStatus.interrupted, "still being collected when SIGINT..."),
        _not_collected("gpu-f", HostStatus.not_started, "not started: SIGINT stopped it first"),
        _not_collected("gpu-g", HostStatus.error, "identity file not found: /k/id"),
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


NOT_COLLECTED = {
    "gpu-d": ("unreachable", "gpu-d: connection refused"),
    "gpu-e": ("interrupted", "still being collected when SIGINT..."),
    "gpu-f": ("not_started", "not started: SIGINT stopped it first"),
    "gpu-g": ("error", "identity file not found: /k/id"),
}


def test_counts_by_finding_id_say_how_many_hosts_and_how_many_findings() -> None:
    (count,) = _report().finding_counts
    assert (count.id, count.severity, count.hosts, count.total) == (
        "process.zombie",
        Severity.critical,
        2,
        3,
    )


def test_hosts_are_worst_first_and_not_collected_ranks_between_critical_and_warning() -> None:
    summary = fleet_summary(_report())
    assert [host.name for host in summary.hosts] == [
        "gpu-a", "gpu-d", "gpu-e", "gpu-f", "gpu-g", HOSTILE, "gpu-c",
    ]  # fmt: skip
    assert summary.not_collected == 4


def test_text_summary_says_how_many_were_collected_why_not_and_what_changed() -> None:
    text = render_fleet(fleet_summary(_report()), Format.text)
    assert "collected 3 of 7 hosts in 9.0s" in text
    for name, (status, reason) in NOT_COLLECTED.items():
        assert f"  {name}  {status}: {reason}" in text
    assert "critical process.zombie: 2 hosts, 3 findings" in text
    assert "since the previous run of each host: 3 new, 0 still present, 1 resolved" in text
    assert "  resolved  gpu-c: warning process.zombie: cuzk (pid 4242) is a zombie" in text


def test_markdown_lists_every_host_with_its_status_and_what_changed() -> None:
    markdown = render_fleet(fleet_summary(_report("SIGINT")), Format.md)
    assert markdown_headings(markdown, 1) == ["Fleet sweep 20261129T201503Z-ab12"]
    assert "**Stopped early by:** SIGINT" in markdown
    hosts = markdown_table(markdown, "Standing")
    rows = {row[1]: row for row in hosts.rows}
    assert len(hosts.rows) == 7
    for name, (status, reason) in NOT_COLLECTED.items():
        assert rows[name][0] == "NOT COLLECTED" and rows[name][2] == status
        assert reason.rstrip(".") in rows[name][3]
    assert rows["gpu-a"][:3] == ["CRITICAL", "gpu-a", "ok"]
    changes = markdown_table(markdown, "Change")
    assert [row[:2] for row in changes.rows] == [
        ["NEW", "gpu-a"], ["NEW", "gpu-a"], ["NEW", HOSTILE], ["RESOLVED", "gpu-c"],
    ]  # fmt: skip
    assert "3 new, 0 still present, 1 resolved" in markdown
    sections = markdown_headings(markdown, 2)
    assert sections[:4] == ["Hosts", "Findings by id", "What changed", "Fleet-wide patterns"]
    assert sections[4:] == [row[1] for row in hosts.rows]  # one section per host, same order
    anchors = [host.anchor for host in fleet_summary(_report()).hosts]
    assert markdown_html(markdown) == [
        piece for anchor in anchors for piece in (f'<a id="{anchor}">', "</a>")
    ]


def test_markdown_keeps_its_tables_whole_with_hostile_names() -> None:
    markdown = render_fleet(fleet_summary(_report()), Format.md)
    assert all(
        piece.startswith('<a id="host-') or piece == "</a>" for piece in markdown_html(markdown)
    )
    assert HOSTILE in [row[1] for row in markdown_table(markdown, "Standing").rows]
    blocks = [block.strip("\n") for block in re.split(r"\n\s*\n", markdown)]
    tables = [block.splitlines() for block in blocks if block.startswith("| ")]
    assert len(tables) == len(markdown_tables(markdown)) == 3 + 2  # 2 hosts have findings
    for rows in tables:
        assert len({len(re.findall(r"(?<!\\)\|", row)) for row in rows}) == 1, rows


def test_html_lists_every_host_and_is_inert() -> None:
    summary = fleet_summary(_report())
    html = render_fleet(summary, Format.html)
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    page = parse_html(html)
    assert_inert_page(page)
    assert [link[1:] for link in page.links()][:7] == [host.anchor for host in summary.hosts]
    assert all(host.anchor in page.ids for host in summary.hosts)
    text = page.visible_text
    assert "collected 3 of 7 hosts" in text
    for status, reason in NOT_COLLECTED.values():
        assert f"status {status} ({reason})" in text
    assert "First run of this host" in text and "Since the previous run (" in text


def test_json_is_the_fleet_report() -> None:
    report = _report()
    rendered = json.loads(render_fleet(fleet_summary(report), Format.json))
    assert rendered == json.loads(report.model_dump_json())


@pytest.mark.parametrize(
    ("interrupted_by", "fail_on", "allow", "expected"),
    [
        (None, Severity.critical, 0, 3),
        (None, Severity.critical, 4, 1),
        (None, None, 4, 0),
        ("SIGINT", Severity.critical, 5, 130),
        ("SIGTERM", None, 5, 143),
    ],
)
def test_exit_status(
    interrupted_by: str | None, fail_on: Severity | None, allow: int, expected: int
) -> None:
    assert exit_status(_report(interrupted_by), fail_on, allow) == expected


def test_a_saved_fleet_json_renders_again_with_report(tmp_path: Path) -> None:
    saved = tmp_path / "fleet.json"
    saved.write_text(_report().model_dump_json(indent=2))
    result = run_cli("report", str(saved), "-f", "html")
    assert result.exit_code == 0, result.stderr
    page = parse_html(result.stdout)
    assert_inert_page(page)
    for name in ("gpu-a", "gpu-c", "gpu-d", "gpu-g"):
        assert name in page.visible_text
    again = run_cli("report", str(saved), "-f", "md")
    assert again.exit_code == 0 and "gpu-d: connection refused" in again.stdout


def test_a_fleet_json_of_schema_1_with_whole_host_reports_still_renders(tmp_path: Path) -> None:
    """Before fleet reports kept summaries, each row held the host's whole report."""
    current = json.loads(_report().model_dump_json())
    for host in current["hosts"]:
        if host["report"] is not None:
            host["report"] = json.loads(
                HostReport(
                    tool_version="0",
                    target=Target(name=host["name"], host="127.0.0.1", port=22),
                    status="ok",
                    started=STARTED,
                    finished=STARTED + timedelta(seconds=2),
                    findings=[_finding(Severity.warning, 5, title="an old zombie password=s3cr3t")],
                ).model_dump_json()
            )
    saved = tmp_path / "fleet.json"
    saved.write_text(json.dumps({**current, "schema_version": 1}))
    result = run_cli("report", str(saved), "-f", "json")
    assert result.exit_code == 0, result.stderr
    read = json.loads(result.stdout)
    assert read["schema_version"] == 2
    gpu_a = next(host for host in read["hosts"] if host["name"] == "gpu-a")
    (finding,) = gpu_a["report"]["findings"]
    assert finding["title"] == "an old zombie password=[REDACTED]"
    assert gpu_a["report"]["headline"] == "an old zombie password=[REDACTED] (pid 5)."
    markdown = run_cli("report", str(saved), "-f", "md")
    assert markdown.exit_code == 0 and "an old zombie" in markdown.stdout
