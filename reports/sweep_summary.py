"""Render a ``FleetReport`` as ``sweep`` prints it: a plain-text summary for terminals and
cron mail, JSON for scripts, and minimal Markdown and HTML pages (``templates/sweep.*.j2``,
each environment escaping host text)."""

from __future__ import annotations

import enum
import io
from datetime import datetime
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from rich.console import Console
from rich.table import Table
from rich.text import Text

from forensics.fleet_report import FleetReport, HostRun
from reports.escaping import inert, markdown_inline

TEMPLATES = Path(__file__).parent / "templates"


class SweepFormat(enum.StrEnum):
    text = "text"
    json = "json"
    md = "md"
    html = "html"


def render_sweep(report: FleetReport, format: SweepFormat) -> str:
    if format is SweepFormat.json:
        return report.model_dump_json(indent=2)
    if format is SweepFormat.text:
        return render_sweep_text(report)
    markdown = format is SweepFormat.md
    return _environment(markdown).get_template(f"sweep.{format.value}.j2").render(report=report)


def host_line(host: HostRun) -> str:
    """One line for one host: why it was not collected, or its worst finding."""
    if not host.status.collected:
        return host.reason or host.status.value
    if host.report is None or not host.report.findings:
        return "no findings"
    first = host.report.findings[0]
    more = len(host.report.findings) - 1
    return first.title + (f" (+{more} more)" if more else "")


def render_sweep_text(report: FleetReport, width: int = 120) -> str:
    buffer = io.StringIO()
    console = Console(
        file=buffer, width=width, force_terminal=False, color_system=None, soft_wrap=True
    )
    seconds = (report.finished - report.started).total_seconds()
    total = len(report.hosts)
    console.print(
        Text(
            f"sweep {report.sweep_id}: collected {len(report.collected)} of {total} hosts "
            f"in {seconds:.1f}s",
            style="bold",
        )
    )
    if report.interrupted_by:
        console.print(Text(f"stopped early by {report.interrupted_by}"))
    missing = report.not_collected
    if missing:
        console.print(Text(f"not collected ({len(missing)}):"))
        for host in missing:
            console.print(
                Text(f"  {inert(host.name)}  {host.status.value}: {inert(host.reason or '')}")
            )
    if report.finding_counts:
        console.print(Text("findings by id:"))
        for count in report.finding_counts:
            console.print(
                Text(
                    f"  {count.severity.value:<8} {count.id}: {count.hosts} "
                    f"host{'s' if count.hosts != 1 else ''}, {count.total} finding"
                    f"{'s' if count.total != 1 else ''}"
                )
            )
    _print_changes(console, report)
    table = Table(show_header=True, header_style="bold", expand=False)
    for column in ("host", "status", "worst", "time"):
        table.add_column(column, no_wrap=True)
    table.add_column("what", no_wrap=True, overflow="ellipsis", max_width=64)
    for host in report.hosts:
        duration = host.duration_s
        table.add_row(
            Text(inert(host.name)),
            Text(host.status.value),
            Text(host.worst.value if host.worst is not None else "-"),
            Text(f"{duration:.1f}s" if duration is not None else "-"),
            Text(inert(host_line(host))),
        )
    console.print(table, soft_wrap=False, width=width)
    return buffer.getvalue()


def _print_changes(console: Console, report: FleetReport) -> None:
    compared = [
        host for host in report.hosts if host.changes and host.changes.previous_run is not None
    ]
    if not compared:
        console.print(Text("no earlier run of these hosts to compare with: every finding is new"))
        return
    totals = report.change_totals()
    words = f"{totals['new']} new, {totals['still']} still present, {totals['resolved']} resolved"
    if totals["not_rechecked"]:
        words += f", {totals['not_rechecked']} not re-checked (section incomplete)"
    console.print(Text(f"since the previous run of each host: {words}"))
    for host in compared:
        assert host.changes is not None
        for kind in ("new", "resolved", "not_rechecked"):
            for finding in getattr(host.changes, kind):
                console.print(
                    Text(
                        f"  {kind:<9} {inert(host.name)}: {finding.severity.value} {finding.id}: "
                        f"{inert(finding.title)}"
                    )
                )


def _utc(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "unknown"


def _environment(markdown: bool) -> Environment:
    """Markdown: no HTML autoescape, every host string through ``md``; HTML: autoescape."""
    environment = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=not markdown,
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters.update(utc=_utc, inert=inert, md=markdown_inline)
    environment.globals.update(host_line=host_line)
    return environment
