"""Summaries for a terminal: one host (status, findings worst first, trees, timeline), or a
whole sweep (what was collected, what was not and why, what changed, one line per host)."""

from __future__ import annotations

import io
import shutil

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from forensics.core.escaping import inert
from forensics.fleet.report import NOT_COLLECTED
from forensics.judge.host_report import HostReport
from forensics.probes.system import SystemFacts
from forensics.reports.environments import text_environment
from forensics.reports.fleet import FleetSummary
from forensics.reports.headline import headline
from forensics.reports.topics import topics

_STYLE = {
    "critical": "bold red",
    "warning": "yellow",
    "info": "cyan",
    "not_collected": "magenta",
    "clean": "green",
}


def terminal_width() -> int:
    """The width of the terminal the tool runs in: ``COLUMNS`` when set, else the
    terminal's own, else 80 (a pipe or cron mail)."""
    return max(40, shutil.get_terminal_size(fallback=(80, 24)).columns)


def plain_console(buffer: io.StringIO, width: int | None = None) -> Console:
    """A console that writes plain text (no colour codes) into ``buffer``, wrapping at the
    terminal's width: tables wrap their cells rather than cut them."""
    return Console(
        file=buffer, width=width or terminal_width(), force_terminal=False, color_system=None
    )


def plain_table(*columns: str) -> Table:
    """A table for a terminal of any width: a rule under the header and no side borders,
    so more room for text; headers are never cut, long cells wrap (a long path folds)."""
    table = Table(
        show_header=True,
        header_style="bold",
        expand=False,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=(0, 1, 0, 0),
    )
    for column in columns:
        table.add_column(column, min_width=len(column), overflow="fold")
    return table


def render_terminal(report: HostReport, width: int | None = None) -> str:
    buffer = io.StringIO()
    console = plain_console(buffer, width)
    system = report.facts.of(SystemFacts)
    header = Text(f"{inert(report.target.name)}: {report.status.value}", style="bold")
    if report.status_reason:
        header.append(f" ({inert(report.status_reason)})")
    console.print(header)
    if system and system.hostname:
        kind = f", container: {system.container}" if system.container else ""
        console.print(
            Text(
                inert(
                    f"host {system.hostname}, kernel {system.kernel_release}, "
                    f"{system.os_name or 'unknown OS'}{kind}, PID 1: {system.pid1_name}"
                )
            )
        )
    verdict = headline(report)
    console.print(Text(inert(verdict.text), style=_STYLE.get(verdict.severity or "", "bold")))
    if report.findings:
        table = plain_table("severity", "finding", "what")
        for finding in report.findings:
            table.add_row(
                Text(finding.severity.value, style=_STYLE[finding.severity.value]),
                Text(finding.id),
                Text(inert(finding.title)),
            )
        console.print(table)
        for finding in report.findings:
            if finding.next_steps:
                console.print(Text(f"{finding.id}: next: {inert(finding.next_steps[0])}"))
    for topic in topics(report, "txt"):
        partial = text_environment().get_template(f"partials/{topic}.txt.j2")
        section = partial.render(facts=getattr(report.facts, topic)).rstrip("\n")
        if section:
            console.print(Text(section))
    _print_timeline(console, report)
    if report.host_key and report.host_key.note:
        console.print(Text(f"host key: {inert(report.host_key.note)}"))
    if report.bundle:
        console.print(Text(f"bundle: {inert(report.bundle)}"))
    return buffer.getvalue()


def render_fleet_terminal(summary: FleetSummary, width: int | None = None) -> str:
    """For a terminal or cron mail: how many hosts were collected, the ones that were not
    and why, counts by finding id, what changed, then one line per host, worst first."""
    fleet = summary.fleet
    buffer = io.StringIO()
    console = plain_console(buffer, width)
    seconds = (fleet.finished - fleet.started).total_seconds()
    console.print(
        Text(
            f"sweep {fleet.sweep_id}: collected {len(fleet.collected)} of {len(fleet.hosts)} "
            f"hosts in {seconds:.1f}s",
            style="bold",
        )
    )
    if fleet.interrupted_by:
        console.print(Text(f"stopped early by {fleet.interrupted_by}"))
    missing = [host.run for host in summary.hosts if host.standing == NOT_COLLECTED]
    if missing:
        console.print(Text(f"not collected ({len(missing)}):"))
        for run in missing:
            console.print(
                Text(f"  {inert(run.name)}  {run.status.value}: {inert(run.reason or '')}")
            )
    if summary.counts:
        console.print(Text("findings by id:"))
        for count in summary.counts:
            console.print(
                Text(
                    f"  {count.severity.value:<8} {count.id}: {count.hosts} "
                    f"host{'s' if count.hosts != 1 else ''}, {count.total} finding"
                    f"{'s' if count.total != 1 else ''}"
                )
            )
    _print_changes(console, summary)
    table = plain_table("standing", "host", "status", "time", "headline")
    for host in summary.hosts:
        duration = host.run.duration_s
        table.add_row(
            Text(host.standing.replace("_", " "), style=_STYLE[host.standing]),
            Text(inert(host.name)),
            Text(host.run.status.value),
            Text(f"{duration:.1f}s" if duration is not None else "-"),
            Text(inert(host.headline)),
        )
    console.print(table)
    return buffer.getvalue()


def _print_changes(console: Console, summary: FleetSummary) -> None:
    if not summary.compared:
        console.print(Text("no earlier run of these hosts to compare with: every finding is new"))
        return
    totals = summary.fleet.change_totals()
    words = f"{totals['new']} new, {totals['still']} still present, {totals['resolved']} resolved"
    if totals["not_rechecked"]:
        words += f", {totals['not_rechecked']} not re-checked (section incomplete)"
    console.print(Text(f"since the previous run of each host: {words}"))
    for change in summary.changes():
        finding = change.finding
        console.print(
            Text(
                f"  {change.kind:<9} {inert(change.host.name)}: {finding.severity.value} "
                f"{finding.id}: {inert(finding.title)}"
            )
        )


TIMELINE_SHOWN = 15


def _print_timeline(console: Console, report: HostReport) -> None:
    """The latest events, oldest first: the end of the story is what was asked about."""
    if not report.timeline:
        return
    shown = report.timeline[-TIMELINE_SHOWN:]
    left_out = len(report.timeline) - len(shown)
    console.print(
        Text(
            "timeline (UTC, ~ approximate)"
            + (f", last {len(shown)} of {len(report.timeline)}:" if left_out else ":")
        )
    )
    for event in shown:
        mark = "~" if event.approximate else " "
        when = event.time.strftime("%Y-%m-%d %H:%M:%S")
        console.print(Text(f" {mark}{when}  {inert(event.text)}"))
