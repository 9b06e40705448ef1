"""Hostile findings and evidence: whatever a host wrote, the HTML stays inert, the Markdown
tables keep their shape, and the terminal obeys no escape sequence."""

from __future__ import annotations

from datetime import UTC, datetime
from html import unescape

from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.core.models import EvidenceRef, Finding, Target
from forensics.judge.host_report import HostReport
from forensics.reports import Format, render_host
from forensics.reports.escaping import inert
from tests.hostile.markup import ANSI, PIPES_AND_TICKS, SCRIPT, hostile_report
from tests.rendered import (
    assert_inert_page,
    markdown_first_paragraph,
    markdown_headings,
    markdown_html,
    markdown_inline_kinds,
    markdown_table,
    markdown_tokens,
    parse_html,
)

URL = "http://127.0.0.1:9/forensics-leak"


def test_hostile_findings_keep_the_markdown_tables_and_blocks_intact() -> None:
    report = hostile_report(URL)
    markdown = render_host(report, Format.md)
    assert markdown_headings(markdown, 1) == [f"Forensics report: {SCRIPT}|gpu"]
    findings = markdown_table(markdown, "#")
    assert [len(row) for row in findings.rows] == [4, 4]
    assert findings.rows[0][3] == inert(f"{SCRIPT} (pid 4242) is a zombie | {ANSI}")
    assert findings.rows[1][3] == f"Errors in {PIPES_AND_TICKS}"
    host = markdown_table(markdown, "Fact")
    assert len(host.rows) == 10 and all(len(row) == 2 for row in host.rows)
    assert dict((r[0], r[1]) for r in host.rows)["PID 1"].startswith("| a | b | `rm -rf /`")
    assert not markdown_inline_kinds(markdown) & {"image", "link", "html_inline"}
    # Only the report's own fold: the evidence's "</details><details open>" stays in its fence.
    assert markdown_html(markdown) == [
        "<details><summary>Evidence: processes lines 3-29 (27 lines)</summary>",
        "</details>",
    ]
    fences = [t.content for t in markdown_tokens(markdown) if t.type == "fence"]
    assert fences[0] == inert(report.findings[0].evidence[0].excerpt) + "\n"
    steps = [t for t in markdown_tokens(markdown) if t.type == "ordered_list_open"]
    assert len(steps) == 1, "a next step that looks like a list must not start one"
    assert "\x1b" not in markdown


def test_hostile_findings_render_as_text_in_html() -> None:
    report = hostile_report(URL)
    html = render_host(report, Format.html)
    page = parse_html(html)
    assert_inert_page(page)
    lowered = html.lower()
    assert "<script" not in lowered and "<img" not in lowered
    shown = page.visible_text
    assert f"{SCRIPT} (pid 4242) is a zombie | \\x1b[31mRED" in shown
    assert "</details><details open>" in shown and "\ufffd" in shown
    assert "\x1b" not in html


def test_hostile_findings_obey_nothing_in_the_terminal() -> None:
    text = render_host(hostile_report(URL), Format.text)
    assert SCRIPT in text and "\\x1b[31m" in text
    assert "\x1b" not in text


def test_the_headline_names_the_worst_finding_and_no_internal_subject_key() -> None:
    markdown = render_host(hostile_report(URL), Format.md)
    headline = markdown_first_paragraph(markdown)
    assert headline.content.startswith("**CRITICAL:** \\<script\\>")
    rendered = "".join(child.content for child in headline.children or [])
    # The title already names the process and its pid; the subject's "note" is not for people.
    assert "(pid 4242) is a zombie" in rendered and "note" not in rendered
    assert "errors in" in rendered  # the worst finding of the other topic follows


def test_undecodable_bytes_kept_as_surrogates_show_as_replacement_characters() -> None:
    name = b"cuzk\xff\xfe".decode("utf-8", "surrogateescape")
    report = _report_with(name, name, name)
    for format in (Format.md, Format.html, Format.text):
        rendered = render_host(report, format)
        assert "cuzk\ufffd\ufffd" in rendered
        rendered.encode("utf-8")  # printable: no lone surrogate left


HOST_TEXT = st.text(st.characters(codec="utf-8"), max_size=80)


def _report_with(title: str, excerpt: str, name: str) -> HostReport:
    now = datetime(2025, 11, 29, tzinfo=UTC)
    finding = Finding(
        id="log.errors",
        severity="warning",
        title=title,
        explanation=excerpt,
        next_steps=[title],
        subject={"path": name},
        evidence=[EvidenceRef(section="logs", first_line=1, last_line=2, excerpt=excerpt)],
    )
    return HostReport(
        tool_version="0", target=Target(name=name), status="ok", started=now, finished=now,
        findings=[finding, finding],
    )  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(title=HOST_TEXT, excerpt=HOST_TEXT, name=HOST_TEXT)
def test_any_host_text_keeps_the_markdown_table_shape(title: str, excerpt: str, name: str) -> None:
    markdown = render_host(_report_with(title, excerpt, name), Format.md)
    findings = markdown_table(markdown, "#")
    assert [len(row) for row in findings.rows] == [4, 4]
    assert [row[2] for row in findings.rows] == ["log.errors", "log.errors"]
    assert not markdown_inline_kinds(markdown) & {"image", "link", "html_inline"}
    assert markdown_headings(markdown, 2)[:1] == ["Findings"]


@settings(max_examples=150, deadline=None)
@given(title=HOST_TEXT, excerpt=HOST_TEXT, name=HOST_TEXT)
def test_any_host_text_is_shown_verbatim_and_inert_in_html(
    title: str, excerpt: str, name: str
) -> None:
    html = render_host(_report_with(title, excerpt, name), Format.html)
    page = parse_html(html)
    assert_inert_page(page)
    pre = html.split("<pre>", 1)[1].split("</pre>", 1)[0]
    assert unescape(pre) == inert(excerpt)
