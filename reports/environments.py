"""The two Jinja environments, each escaping by default what it prints.

HTML: Jinja's autoescape, after control characters are made visible (``inert``).
Markdown: the same autoescape machinery, with Markdown escaping in place of HTML's: every
``{{ value }}`` goes through ``markdown_inline`` unless it is already ``Markup`` (the output
of a macro, or of the ``md``, ``code``, ``fence`` and ``paragraphs`` filters). A template
writer who forgets a filter gets escaped text, never live Markdown or HTML from a host.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from forensics.core.escaping import inert
from forensics.reports.escaping import markdown_code, markdown_fence, markdown_inline
from forensics.reports.figures import (
    MemoryPart,
    human_bytes,
    human_duration,
    memory_bar_svg,
    timeline_svg,
)
from forensics.reports.process_tree import ProcessRow, tree_around, tree_lines
from forensics.reports.wording import step_command, step_pieces, subject_items

TEMPLATES = Path(__file__).parent / "templates"
LONG_EVIDENCE_LINES = 12
"""Evidence longer than this folds away (``<details>`` in Markdown, a scroll box in HTML)."""


def utc(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "unknown"


def _markdown_finalize(value: Any) -> Markup:
    # In this environment ``Markup`` means "already Markdown"; the autoescape that follows
    # finalize leaves it alone.
    return value if hasattr(value, "__html__") else Markup(markdown_inline(str(value)))


def _markdown_paragraphs(text: str) -> str:
    paragraphs = [p for p in text.replace("\r\n", "\n").split("\n\n") if p.strip()]
    return "\n\n".join(markdown_inline(p) for p in paragraphs)


def _markdown_step(step: str, indent: int = 3) -> Markup:
    """One next step: words escaped, commands as code spans; a step that is one command
    (after an optional lead-in ending in a colon) gets a block of its own to copy."""
    command = step_command(step)
    if command is not None:
        lead = step[: step.index("`")].strip()
        block = "\n".join(" " * indent + line for line in markdown_fence(command).split("\n"))
        block = block.replace("```text", "```sh", 1)
        return Markup((markdown_inline(lead) if lead else "Run:") + "\n\n" + block + "\n")
    return Markup(
        "".join(
            markdown_code(piece.text) if piece.kind == "code" else markdown_inline(piece.text)
            for piece in step_pieces(step)
        )
    )


def _made_markdown(escape: Callable[[str], str]) -> Callable[[Any], Markup]:
    return lambda value: Markup(escape(str(value)))


def _html_finalize(value: Any) -> Any:
    if isinstance(value, str) and not hasattr(value, "__html__"):
        return inert(value)
    return value


def _common(environment: Environment) -> Environment:
    environment.filters.update(utc=utc, bytes=human_bytes, duration=human_duration)
    environment.globals.update(
        subject_items=subject_items,
        step_pieces=step_pieces,
        step_command=step_command,
        long_evidence_lines=LONG_EVIDENCE_LINES,
        tree_around=tree_around,
        ProcessRow=ProcessRow,
        tree_lines=tree_lines,
    )
    return environment


@functools.cache
def markdown_environment() -> Environment:
    environment = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        finalize=_markdown_finalize,
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters.update(
        md=_made_markdown(markdown_inline),
        code=_made_markdown(markdown_code),
        fence=_made_markdown(markdown_fence),
        paragraphs=_made_markdown(_markdown_paragraphs),
        step=_markdown_step,
    )
    return _common(environment)


def _text_finalize(value: Any) -> Any:
    return inert(value) if isinstance(value, str) else value


@functools.cache
def text_environment() -> Environment:
    """Plain text for a terminal: nothing to escape but control characters, which
    ``inert`` makes visible so that host text cannot move the cursor or set a title."""
    environment = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=False,
        finalize=_text_finalize,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return _common(environment)


@functools.cache
def html_environment() -> Environment:
    environment = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        finalize=_html_finalize,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.globals.update(
        css=Markup((TEMPLATES / "page.css").read_text()),
        timeline_svg=timeline_svg,
        memory_bar_svg=memory_bar_svg,
        MemoryPart=MemoryPart,
    )
    return _common(environment)
