"""Render reports for people (terminal, Markdown) and for scripts (JSON)."""

from __future__ import annotations

import enum
from datetime import datetime
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from forensics.host_report import HostReport
from reports.escaping import inert, markdown_fence, markdown_inline
from reports.process_tree import tree_text

TEMPLATES = Path(__file__).parent / "templates"


class Format(enum.StrEnum):
    text = "text"
    json = "json"
    md = "md"


def _utc(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "unknown"


def markdown_environment() -> Environment:
    environment = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=False,
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters.update(md=markdown_inline, fence=markdown_fence, utc=_utc, inert=inert)
    environment.globals["process_tree"] = tree_text
    return environment


def render_host(report: HostReport, format: Format) -> str:
    if format is Format.json:
        return report.model_dump_json(indent=2)
    if format is Format.md:
        return markdown_environment().get_template("host.md.j2").render(report=report)
    from reports.terminal import render_terminal

    return render_terminal(report)
