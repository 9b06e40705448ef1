"""A short summary for a terminal: status, host, findings worst first, what was not checked."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table
from rich.text import Text

from forensics.host_report import HostReport
from reports.escaping import inert
from reports.fleet import FleetSummary
from reports.headline import headline
from reports.process_tree import tree_lines

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
    """One line per host, worst first: standing, name, headline."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=False, color_system=None)
    table = Table(show_header=True, header_style="bold", expand=False, title=summary.title)
    table.add_column("standing")
    table.add_column("host")
    table.add_column("headline")
    for host in summary.hosts:
        table.add_row(
            Text(host.standing.replace("_", " "), style=_STYLE[host.standing]),
            Text(inert(host.name)),
            Text(inert(host.headline)),
        )
    console.print(table)
    return buffer.getvalue()


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
