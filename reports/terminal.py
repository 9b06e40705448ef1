"""A short summary for a terminal: status, host, findings worst first, what was not checked."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table
from rich.text import Text

from forensics.host_report import HostReport
from reports.escaping import inert
from reports.process_tree import tree_text

_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}


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
    else:
        console.print("No findings.")
    processes = report.facts.processes
    if processes is not None:
        for tree in processes.trees:
            why = ", ".join(tree.why)
            console.print(Text(f"process tree ({why} {tree.subject}):", style="bold"))
            console.print(Text(tree_text(processes, tree)))
    if report.bundle:
        console.print(Text(f"bundle: {inert(report.bundle)}"))
    return buffer.getvalue()
