"""The ticket body: within each tracker's limit, cut with a line that says where the full
report is; host text cannot break the Markdown table or the Jira wiki table."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from forensics.core.models import EvidenceRef, Finding, Severity, Target
from forensics.judge.host_report import HostReport
from forensics.tickets.body import adf, jira_wiki, markdown, report_document

NOW = datetime(2026, 11, 29, 20, 15, 3, tzinfo=UTC)


def report_with(findings: int, excerpt_lines: int = 30) -> HostReport:
    excerpt = "\n".join(
        f"[ 7{n:05d}.000001] a kernel line | with <b>markup</b> {n}" for n in range(excerpt_lines)
    )
    return HostReport(
        tool_version="0.1.0",
        target=Target(name="gpu-a"),
        status="ok",
        started=NOW,
        finished=NOW,
        findings=[
            Finding(
                id="process.zombie",
                severity=Severity.warning,
                title=f"cuzk|{n} (pid {n}) is a zombie <script>alert(1)</script>",
                explanation="A zombie holds only its pid. " * 5,
                next_steps=["See what the parent is doing: cat /proc/1/wchan"],
                evidence=[
                    EvidenceRef(
                        section="processes", first_line=n + 1, last_line=n + 1, excerpt=excerpt
                    )
                ],
            )
            for n in range(findings)
        ],
    )


def test_a_huge_report_is_cut_within_each_limit_with_a_line_saying_where_the_rest_is() -> None:
    document = report_document(report_with(400), "gpu-a.tar.gz", {})
    cut = "the full report is report.md and report.html in gpu-a.tar.gz"
    github = markdown(document, 65_536)
    assert len(github) <= 65_536 and github.rstrip().endswith(f"{cut}.)")
    assert "| 400 | warning |" in github, "the findings table comes before the details"
    wiki = jira_wiki(document, 32_767)
    assert len(wiki) <= 32_767 and wiki.rstrip().endswith(f"{cut}.)")
    doc = adf(document, 32_767)
    assert len(json.dumps(doc)) <= 32_767
    assert cut in doc["content"][-1]["content"][0]["text"]


def test_host_text_cannot_split_a_table_row() -> None:
    document = report_document(report_with(3, excerpt_lines=2), "p.tar.gz", {})
    rows = [line for line in markdown(document, 65_536).splitlines() if line.startswith("| ")]
    assert len(rows) == 4  # header and three findings
    assert all(row.replace("\\|", "").count("|") == 5 for row in rows)
    assert "<script>" not in markdown(document, 65_536)
    wiki_rows = [line for line in jira_wiki(document, 32_767).splitlines() if line.startswith("|")]
    assert all(row.replace("\\|", "").count("|") == 5 for row in wiki_rows[1:])
