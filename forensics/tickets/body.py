"""What a ticket says, built once from a ``HostReport`` and written in each tracker's markup.

``report_document`` builds the content: the headline, the findings table, each finding's
explanation, next steps and evidence, and where the evidence pack is. Three writers turn it
into Markdown (GitHub, GitLab), Jira wiki text (REST v2) or Atlassian Document Format (Jira
Cloud, REST v3). Each stops before the tracker's size limit with a line that says where the
full report is. Host text is escaped by the reports' one escaping module.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from forensics.core.models import Finding
from forensics.judge.host_report import HostReport
from forensics.probes.recorder import Event
from forensics.reports.escaping import (
    inert,
    jira_wiki_block,
    jira_wiki_inline,
    markdown_fence,
    markdown_inline,
)
from forensics.reports.headline import headline

EXCERPT_LINES = 20


@dataclass(frozen=True)
class Span:
    text: str
    strong: bool = False
    code: bool = False
    url: str | None = None


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 3


@dataclass(frozen=True)
class Paragraph:
    spans: tuple[Span, ...]


@dataclass(frozen=True)
class Bullets:
    items: tuple[tuple[Span, ...], ...]


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Preformatted:
    text: str


Block = Heading | Paragraph | Bullets | Table | Preformatted


@dataclass(frozen=True)
class Document:
    title: str
    blocks: list[Block] = field(default_factory=list)
    cut_note: str = "the full report is report.md and report.html in the evidence pack"


def text(*spans: Span | str) -> Paragraph:
    return Paragraph(tuple(Span(s) if isinstance(s, str) else s for s in spans))


def report_document(report: HostReport, archive: str, links: Mapping[str, str | None]) -> Document:
    """The ticket for one host. ``archive`` is the pack's file name; ``links`` maps each file
    that went with the ticket to where it can be fetched (GitLab's upload URL, GitHub's
    ``--archive-url``), or to None when it is attached to the ticket itself (Jira)."""
    said = headline(report)
    severity = said.severity.value.upper() if said.severity else None
    blocks: list[Block] = [
        Heading(f"forensics: {report.target.name}"),
        text(*([Span(f"{severity}: ", strong=True)] if severity else []), said.text),
        text(
            f"Collected {report.started:%Y-%m-%d %H:%M:%S} to {report.finished:%H:%M:%S} UTC, "
            f"status {report.status.value}, forensics {report.tool_version}."
        ),
        _evidence_paragraph(archive, links),
    ]
    if report.findings:
        blocks.append(Heading("Findings", 4))
        blocks.append(
            Table(
                ("#", "Severity", "Finding", "ID"),
                tuple(
                    (str(number), finding.severity.value, finding.title, finding.id)
                    for number, finding in enumerate(report.findings, 1)
                ),
            )
        )
        for number, finding in enumerate(report.findings, 1):
            blocks.extend(_finding_blocks(number, finding))
    return Document(
        title=said.text,
        blocks=blocks,
        cut_note=f"the full report is report.md and report.html in {archive}",
    )


def finding_document(
    report: HostReport, finding: Finding, archive: str, links: Mapping[str, str | None]
) -> Document:
    """A new ticket about one finding of a sweep: that finding first, then the host's report."""
    whole = report_document(report, archive, links)
    first = _finding_blocks(1, finding)
    return Document(
        title=f"{report.target.name}: {finding.title}",
        blocks=[*whole.blocks[:4], *first[1:], *whole.blocks[4:]],
        cut_note=whole.cut_note,
    )


def fired_document(
    report: HostReport,
    finding: Finding,
    events: Sequence[Event],
    archive: str,
    links: Mapping[str, str | None],
    again: bool = False,
) -> Document:
    """A ticket (or, ``again``, a comment on it) about one finding of a bundle that the
    flight recorder (``forensics arm``) collected: the events that fired it, then the
    finding, then the host's report.

    >>> from datetime import datetime, UTC
    >>> from forensics.core.models import Target
    >>> report = HostReport(target=Target(name="gpu-a", host="gpu-a"),
    ...     started=datetime(2026, 11, 29, 21, 0, 3, tzinfo=UTC),
    ...     finished=datetime(2026, 11, 29, 21, 0, 4, tzinfo=UTC), status="ok", tool_version="1")
    >>> finding = Finding(id="focus.exited", severity="critical", title="cuzk (4242) exited",
    ...     explanation="x")
    >>> event = Event(time=datetime(2026, 11, 29, 21, 0, 2, tzinfo=UTC), kind="zombie",
    ...     pid=4242, name="cuzk", detail="state Z: exit status 42")
    >>> print(markdown(fired_document(report, finding, [event], "b.tar.gz", {}), 2000))
    ... # doctest: +ELLIPSIS
    ### forensics: gpu-a
    <BLANKLINE>
    **Fired:** the flight recorder (forensics arm) collected this bundle the moment it saw:
    <BLANKLINE>
    - 21:00:02 UTC zombie cuzk (pid 4242): state Z: exit status 42
    <BLANKLINE>
    ...
    """
    whole = finding_document(report, finding, archive, links)
    lead = text(
        Span("Fired again: " if again else "Fired: ", strong=True),
        "the flight recorder (forensics arm) collected this bundle the moment it saw:",
    )
    seen = Bullets(tuple((Span(_event_words(event)),) for event in events))
    return Document(
        title=whole.title,
        blocks=[whole.blocks[0], lead, *([seen] if events else []), *whole.blocks[1:]],
        cut_note=whole.cut_note,
    )


def _event_words(event: Event) -> str:
    who = f" {event.name or '?'} (pid {event.pid})" if event.pid is not None else ""
    return f"{event.time:%H:%M:%S} UTC {event.kind}{who}: {event.detail}"


def resolved_document(host: str, finding_title: str, finding_id: str, sweep: str) -> Document:
    return Document(
        title=f"{host}: resolved",
        blocks=[
            text(
                Span("Resolved: ", strong=True),
                f"{finding_title} ({finding_id}) was not seen on {host} by sweep {sweep}, which "
                "read the evidence it came from in full.",
            )
        ],
    )


def reappeared_document(host: str, finding_title: str, finding_id: str, sweep: str) -> Document:
    return Document(
        title=f"{host}: seen again",
        blocks=[
            text(
                Span("Seen again: ", strong=True),
                f"{finding_title} ({finding_id}) is back on {host} in sweep {sweep}.",
            )
        ],
    )


def _evidence_paragraph(archive: str, links: Mapping[str, str | None]) -> Paragraph:
    where: list[Span] = [Span("Evidence: ", strong=True)]
    url = links.get(archive)
    where.append(Span(archive, code=url is None, url=url))
    attached = [name for name, link in links.items() if link is None]
    others = [(name, link) for name, link in links.items() if link and name != archive]
    if attached:
        where.append(Span(f" (attached: {', '.join(attached)})"))
    elif archive not in links:
        where.append(Span(" (the redacted pack; not attached, ask whoever posted this)"))
    for name, link in others:
        where.append(Span(", "))
        where.append(Span(name, url=link))
    where.append(Span("; check it with "))
    where.append(Span(f"forensics verify {archive}", code=True))
    return Paragraph(tuple(where))


def _finding_blocks(number: int, finding: Finding) -> list[Block]:
    blocks: list[Block] = [
        Heading(f"{number}. [{finding.severity.value}] {finding.title}", 4),
        text(finding.explanation),
    ]
    if finding.next_steps:
        blocks.append(text(Span("Next steps:", strong=True)))
        blocks.append(Bullets(tuple((Span(step),) for step in finding.next_steps)))
    for evidence in finding.evidence:
        lines = evidence.excerpt.split("\n")
        excerpt = "\n".join(lines[:EXCERPT_LINES])
        if len(lines) > EXCERPT_LINES:
            excerpt += f"\n... ({len(lines) - EXCERPT_LINES} more lines in the pack)"
        blocks.append(
            text(
                Span("Evidence: ", strong=True),
                Span(f"raw/{evidence.section}.txt", code=True),
                f" lines {evidence.first_line}-{evidence.last_line}",
            )
        )
        blocks.append(Preformatted(excerpt))
    return blocks


def _cut_line(note: str) -> str:
    return f"(Cut here to stay within the tracker's size limit: {note}.)"


# Markdown (GitHub, GitLab)


def markdown(document: Document, limit: int) -> str:
    """The document in Markdown, at most ``limit`` characters.

    >>> doc = Document("t", [Heading("Host a|b"), text(Span("CRIT: ", strong=True), "x_y")])
    >>> print(markdown(doc, 1000))
    ### Host a\\|b
    <BLANKLINE>
    **CRIT:** x\\_y
    >>> len(markdown(Document("t", [text("x" * 50)] * 10), 200)) <= 200
    True
    """
    return _fit([_markdown_block(block) for block in document.blocks], document, limit, "\n\n")


def _markdown_block(block: Block) -> str:
    if isinstance(block, Heading):
        return f"{'#' * block.level} {markdown_inline(block.text)}"
    if isinstance(block, Paragraph):
        return "".join(_markdown_span(span) for span in block.spans)
    if isinstance(block, Bullets):
        return "\n".join(
            "- " + "".join(_markdown_span(span) for span in item) for item in block.items
        )
    if isinstance(block, Table):
        head = "| " + " | ".join(markdown_inline(cell) for cell in block.header) + " |"
        rule = "|" + "---|" * len(block.header)
        rows = [
            "| " + " | ".join(markdown_inline(cell) for cell in row) + " |" for row in block.rows
        ]
        return "\n".join([head, rule, *rows])
    return markdown_fence(block.text)


def _markdown_span(span: Span) -> str:
    shown = markdown_inline(span.text)
    if span.code:
        shown = "`" + inert(span.text).replace("`", "'") + "`"
    if span.strong:
        shown = f"**{shown.rstrip()}**" + (" " if shown.endswith(" ") else "")
    if span.url:
        shown = f"[{shown}](<{span.url.replace('>', '%3E')}>)"
    return shown


# Jira wiki markup (REST v2: Jira Data Center and Server)


def jira_wiki(document: Document, limit: int) -> str:
    """The document in Jira wiki markup, at most ``limit`` characters.

    >>> print(jira_wiki(Document("t", [Table(("#", "What"), (("1", "a|b"),))]), 1000))
    ||\\#||What||
    |1|a\\|b|
    """
    return _fit([_wiki_block(block) for block in document.blocks], document, limit, "\n\n")


def _wiki_block(block: Block) -> str:
    if isinstance(block, Heading):
        return f"h{block.level}. {jira_wiki_inline(block.text)}"
    if isinstance(block, Paragraph):
        return "".join(_wiki_span(span) for span in block.spans)
    if isinstance(block, Bullets):
        return "\n".join("* " + "".join(_wiki_span(span) for span in item) for item in block.items)
    if isinstance(block, Table):
        head = "||" + "||".join(jira_wiki_inline(cell) for cell in block.header) + "||"
        rows = [
            "|" + "|".join(jira_wiki_inline(cell) or " " for cell in row) + "|"
            for row in block.rows
        ]
        return "\n".join([head, *rows])
    return jira_wiki_block(block.text)


def _wiki_span(span: Span) -> str:
    shown = jira_wiki_inline(span.text)
    if span.code:
        shown = "{{" + shown + "}}"
    if span.strong:
        shown = f"*{shown.rstrip()}*" + (" " if shown.endswith(" ") else "")
    if span.url:
        shown = f"[{shown}|{span.url.replace('|', '%7C').replace(']', '%5D')}]"
    return shown


def _fit(parts: list[str], document: Document, limit: int, joiner: str) -> str:
    """Whole blocks while they fit, then the cut line."""
    whole = joiner.join(parts)
    if len(whole) <= limit:
        return whole
    cut = _cut_line(document.cut_note)
    kept: list[str] = []
    used = len(cut)
    for part in parts:
        if used + len(joiner) + len(part) > limit:
            break
        kept.append(part)
        used += len(joiner) + len(part)
    return joiner.join([*kept, cut])[:limit]


# Atlassian Document Format (REST v3: Jira Cloud)


def adf(document: Document, limit: int) -> dict[str, Any]:
    """The document as an ADF ``doc`` whose JSON is at most ``limit`` characters.

    >>> adf(Document("t", [text(Span("x", strong=True))]), 1000)["content"][0]["content"]
    [{'type': 'text', 'text': 'x', 'marks': [{'type': 'strong'}]}]
    """
    nodes = [_adf_block(block) for block in document.blocks]
    cut = {"type": "paragraph", "content": [_adf_text(_cut_line(document.cut_note))]}
    kept: list[dict[str, Any]] = []
    budget = limit - len(json.dumps({"type": "doc", "version": 1, "content": [cut]}))
    for node in nodes:
        size = len(json.dumps(node)) + 2
        if size > budget:
            kept.append(cut)
            break
        kept.append(node)
        budget -= size
    return {"type": "doc", "version": 1, "content": kept}


def _adf_block(block: Block) -> dict[str, Any]:
    if isinstance(block, Heading):
        return {
            "type": "heading",
            "attrs": {"level": block.level},
            "content": [_adf_text(block.text)],
        }
    if isinstance(block, Paragraph):
        return _adf_paragraph(block.spans)
    if isinstance(block, Bullets):
        return {
            "type": "bulletList",
            "content": [
                {"type": "listItem", "content": [_adf_paragraph(item)]} for item in block.items
            ],
        }
    if isinstance(block, Table):
        rows = [
            {
                "type": "tableRow",
                "content": [
                    {"type": "tableHeader", "content": [_adf_paragraph((Span(cell),))]}
                    for cell in block.header
                ],
            }
        ]
        rows.extend(
            {
                "type": "tableRow",
                "content": [
                    {"type": "tableCell", "content": [_adf_paragraph((Span(cell),))]}
                    for cell in row
                ],
            }
            for row in block.rows
        )
        return {"type": "table", "content": rows}
    return {
        "type": "codeBlock",
        "attrs": {"language": "text"},
        "content": [_adf_text(block.text or " ")],
    }


def _adf_paragraph(spans: Sequence[Span]) -> dict[str, Any]:
    content = [
        _adf_text(span.text, span) for span in spans if span.text
    ]  # ADF refuses empty text nodes
    return {"type": "paragraph", "content": content}


def _adf_text(value: str, span: Span | None = None) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "text", "text": inert(value)}
    marks: list[dict[str, Any]] = []
    if span is not None:
        if span.strong:
            marks.append({"type": "strong"})
        if span.code:
            marks.append({"type": "code"})
        if span.url:
            marks.append({"type": "link", "attrs": {"href": span.url}})
    if marks:
        node["marks"] = marks
    return node
