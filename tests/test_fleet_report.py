"""The fleet report from real collections: hosts worst first, one line each, counts by
finding id, and a working anchor for every host."""

from __future__ import annotations

import json
from pathlib import Path

from forensics.collect import collect
from forensics.core.errors import CollectionError
from forensics.core.models import CollectOptions, SshOptions
from forensics.core.targets import parse_target
from forensics.fleet.report import (
    FleetReport,
    HostRun,
    HostStatus,
    count_findings,
    host_order,
)
from forensics.fleet.summary import summarise
from forensics.judge.host_report import HostReport
from forensics.reports import Format, render_fleet
from forensics.reports.fleet import FleetSummary, fleet_summary
from tests.conftest import run_cli
from tests.hostile.markup import SCRIPT, hostile_report
from tests.rendered import (
    assert_inert_page,
    markdown_headings,
    markdown_html,
    markdown_table,
    parse_html,
)
from tests.sshd import SshServer, free_port


def _unreachable(tmp_path: Path) -> HostReport:
    """What the sweep records for a host it could not reach: the real failure, as a report."""
    target = parse_target(f"root@127.0.0.1:{free_port()}", SshOptions(connect_timeout=2))
    try:
        collect(target, CollectOptions(timeout=10), tmp_path)
    except CollectionError as error:
        return HostReport(
            tool_version="0.1.0",
            target=target,
            status=error.status,
            status_reason=error.message,
            started=hostile_report("").started,
            finished=hostile_report("").finished,
        )
    raise AssertionError("a closed port was reachable")


def _fleet(sshd: SshServer, tmp_path: Path) -> FleetSummary:
    ssh = run_cli(
        "collect",
        "--fail-on",
        "never",
        "--probe",
        "system",
        *sshd.target_args(),
        "--out",
        str(tmp_path),
        "--format",
        "json",
    )
    local = run_cli(
        "collect",
        "--fail-on",
        "never",
        "--probe",
        "system",
        "--out",
        str(tmp_path),
        "--format",
        "json",
    )
    reports = [
        HostReport.model_validate_json(ssh.stdout),
        HostReport.model_validate_json(local.stdout),
        _unreachable(tmp_path),
        hostile_report("http://127.0.0.1:9/forensics-leak"),
        HostReport.model_validate_json(local.stdout),  # the same name twice: distinct anchors
    ]
    runs = [
        HostRun(
            name=report.target.name,
            address=report.target.name,
            status=HostStatus.of(report.status),
            reason=report.status_reason,
            started=report.started,
            finished=report.finished,
            bundle=report.bundle,
            report=summarise(report, report.target.name)
            if HostStatus.of(report.status).collected
            else None,
        )
        for report in reports
    ]
    runs.sort(key=host_order)  # as the sweep does
    fleet = FleetReport(
        tool_version="0.1.0",
        sweep_id="test",
        inventory="inventory.yaml",
        directory=str(tmp_path),
        started=reports[0].started,
        finished=reports[0].finished,
        hosts=runs,
        finding_counts=count_findings(runs),
    )
    return fleet_summary(fleet, title="Sweep of the test fleet")


def test_fleet_markdown_lists_hosts_worst_first_with_working_anchors(
    sshd: SshServer, tmp_path: Path
) -> None:
    summary = _fleet(sshd, tmp_path)
    assert [h.standing for h in summary.hosts] == [
        "critical", "not_collected", "clean", "clean", "clean",
    ]  # fmt: skip
    unreachable = summary.hosts[1].run
    assert summary.not_collected == 1
    assert unreachable.report is None and unreachable.status is HostStatus.unreachable
    markdown = render_fleet(summary, Format.md)
    hosts = markdown_table(markdown, "Standing")
    assert [row[0] for row in hosts.rows] == [
        "CRITICAL",
        "NOT COLLECTED",
        "CLEAN",
        "CLEAN",
        "CLEAN",
    ]
    assert hosts.rows[0][1] == f"{SCRIPT}|gpu" and hosts.rows[0][3].startswith(SCRIPT)
    assert hosts.rows[1][2] == "unreachable"
    assert hosts.rows[1][3].startswith("Not collected (unreachable): root@127.0.0.1:")
    assert "connection refused" in hosts.rows[1][3]
    anchors = [h.anchor for h in summary.hosts]
    assert len(set(anchors)) == 5 and "host-local" in anchors and "host-local-2" in anchors
    assert markdown_html(markdown) == [
        piece for anchor in anchors for piece in (f'<a id="{anchor}">', "</a>")
    ]
    counts = markdown_table(markdown, "Finding")
    assert counts.rows == [
        ["process.zombie", "CRITICAL", "1", "1"],
        ["log.errors", "WARNING", "1", "1"],
    ]
    assert markdown_headings(markdown, 2)[:4] == [
        "Hosts", "Findings by id", "What changed", "Fleet-wide patterns",
    ]  # fmt: skip
    assert len(markdown_headings(markdown, 2)) == 4 + 5


def test_fleet_html_is_inert_and_every_host_link_lands_on_its_section(
    sshd: SshServer, tmp_path: Path
) -> None:
    summary = _fleet(sshd, tmp_path)
    html = render_fleet(summary, Format.html)
    page = parse_html(html)
    assert_inert_page(page)  # includes: every href="#x" has an element with id x
    assert [link[1:] for link in page.links()] == [h.anchor for h in summary.hosts]
    assert "<script" not in html.lower()
    assert json.loads(render_fleet(summary, Format.json))["hosts"][0]["name"] == f"{SCRIPT}|gpu"
    text = render_fleet(summary, Format.text)
    assert "not collected" in text and "\x1b" not in text
