"""Render reports for people (terminal, Markdown, HTML) and for scripts (JSON).

Host report, top to bottom: the headline verdict, the findings table, each finding in
detail with its evidence, the timeline, one section per probe that has a partial
(docs/REPORTS.md), what could not be checked, and how the collection went.
"""

from __future__ import annotations

from typing import Any

from jinja2 import Template

from forensics.core.escaping import inert_json
from forensics.core.report_format import Format as Format
from forensics.judge.host_report import HostReport
from forensics.reports.environments import html_environment, markdown_environment
from forensics.reports.fleet import FleetSummary
from forensics.reports.headline import headline
from forensics.reports.timeline import timeline_points
from forensics.reports.topics import topics
from forensics.reports.unchecked import unchecked


def render_host(report: HostReport, format: Format) -> str:
    if format is Format.json:
        return inert_json(report.model_dump_json(indent=2))
    if format is Format.text:
        from forensics.reports.terminal import render_terminal

        return render_terminal(report)
    context = _host_context(report, format.value)
    return _template(format, "host").render(report=report, **context)


def render_fleet(summary: FleetSummary, format: Format) -> str:
    """The sweep's report: hosts worst first, counts by finding id, what changed, a section
    per host. JSON is the sweep's ``FleetReport`` itself."""
    if format is Format.json:
        return inert_json(summary.fleet.model_dump_json(indent=2))
    if format is Format.text:
        from forensics.reports.terminal import render_fleet_terminal

        return render_fleet_terminal(summary)
    gaps = {
        host.anchor: host.run.report.unchecked if host.run.report is not None else []
        for host in summary.hosts
    }
    return _template(format, "fleet").render(summary=summary, fleet=summary.fleet, gaps=gaps)


def _host_context(report: HostReport, extension: str) -> dict[str, Any]:
    return {
        "headline": headline(report),
        "topics": topics(report, extension),
        "timeline": timeline_points(report),
        "gaps": unchecked(report),
    }


def _template(format: Format, name: str) -> Template:
    environment = html_environment() if format is Format.html else markdown_environment()
    return environment.get_template(f"{name}.{format.value}.j2")
