"""Summaries for a terminal: one host (status, findings worst first, trees, timeline), or a
whole sweep (what was collected, what was not and why, what changed, one line per host)."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table
from rich.text import Text

from forensics.core.escaping import inert
from forensics.fleet.report import NOT_COLLECTED
from forensics.judge.host_report import HostReport
from forensics.reports.fleet import FleetSummary
from forensics.reports.headline import headline
from forensics.reports.process_tree import tree_lines

_STYLE = {
    "critical": "bold red",
    "warning": "yellow",
    "info": "cyan",
    "not_collected": "magenta",
    "clean": "green",
}


def render_terminal(report: HostReport, width: int = 100) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=False, color_system=None)
    system = report.facts.system
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
        table = Table(show_header=True, header_style="bold", expand=False)
        table.add_column("severity")
        table.add_column("finding")
        table.add_column("what")
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
    processes = report.facts.processes
    if processes is not None:
        for tree in processes.trees:
            why = ", ".join(tree.why)
            console.print(Text(f"process tree ({why} {tree.subject}):", style="bold"))
            for line in tree_lines(processes, tree):
                console.print(Text(line.text))
    _print_timeline(console, report)
    if report.bundle:
        console.print(Text(f"bundle: {inert(report.bundle)}"))
    return buffer.getvalue()


def render_fleet_terminal(summary: FleetSummary, width: int = 120) -> str:
    """For a terminal or cron mail: how many hosts were collected, the ones that were not
    and why, counts by finding id, what changed, then one line per host, worst first."""
    fleet = summary.fleet
    buffer = io.StringIO()
    console = Console(
        file=buffer, width=width, force_terminal=False, color_system=None, soft_wrap=True
    )
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
    table = Table(show_header=True, header_style="bold", expand=False)
    for column in ("standing", "host", "status", "time"):
        table.add_column(column, no_wrap=True)
    table.add_column("headline", no_wrap=True, overflow="ellipsis", max_width=64)
    for host in summary.hosts:
        duration = host.run.duration_s
        table.add_row(
            Text(host.standing.replace("_", " "), style=_STYLE[host.standing]),
            Text(inert(host.name)),
            Text(host.run.status.value),
            Text(f"{duration:.1f}s" if duration is not None else "-"),
            Text(inert(host.headline)),
        )
    console.print(table, soft_wrap=False, width=width)
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
