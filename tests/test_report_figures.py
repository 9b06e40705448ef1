"""The drawings and the process tree that probe partials place in reports."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.core.models import Severity
from forensics.reports.environments import html_environment, markdown_environment
from forensics.reports.escaping import inert
from forensics.reports.figures import MemoryPart, TimelinePoint, memory_bar_svg, timeline_svg
from forensics.reports.process_tree import ProcessRow, tree_around
from tests.hostile.markup import ANSI, SCRIPT
from tests.rendered import assert_inert_page, markdown_tokens, parse_html

BOOT = datetime(2025, 10, 23, 18, 40, tzinfo=UTC)


def _svg(markup: str) -> ElementTree.Element:
    return ElementTree.fromstring(str(markup))


def test_timeline_orders_events_and_writes_each_gap_on_the_strip() -> None:
    points = [
        TimelinePoint(BOOT + timedelta(days=37, seconds=2), "log last written"),
        TimelinePoint(BOOT, "host booted"),
        TimelinePoint(BOOT + timedelta(days=37), "cuzk started", Severity.warning),
        TimelinePoint(BOOT + timedelta(days=37, seconds=9), f"{SCRIPT}{ANSI}", approximate=True),
    ]
    svg = _svg(timeline_svg(points))
    labels = [t.text for t in svg.iter("text") if t.get("class") == "label"]
    gaps = [t.text for t in svg.iter("text") if t.get("class") == "gap"]
    assert labels[:3] == ["host booted", "cuzk started", "log last written"]
    assert labels[3] == f"{SCRIPT}…"  # shortened on the strip, whole in the tooltip
    assert [t.text for t in svg.iter("title")][3] == inert(f"{SCRIPT}{ANSI}")
    assert gaps == ["+37 d", "+2.0 s", "+7.0 s"]
    classes = [g.get("class") for g in svg.iter("g")]
    assert classes == [
        "event none solid", "event warning solid", "event none solid", "event none hollow",
    ]  # fmt: skip


def test_a_long_timeline_wraps_into_rows_that_continue_the_line() -> None:
    points = [TimelinePoint(BOOT + timedelta(minutes=n), f"event {n}") for n in range(14)]
    svg = _svg(timeline_svg(points))
    circles = list(svg.iter("circle"))
    assert len(circles) == 14 and len({c.get("cy") for c in circles}) == 3
    assert [t.text for t in svg.iter("text") if t.get("class") == "gap"] == ["+1 min"] * 13


def test_memory_bar_splits_usage_against_the_limit() -> None:
    gib = 2**30
    svg = _svg(
        memory_bar_svg(
            330 * gib, 342 * gib, [MemoryPart("anon", 300 * gib), MemoryPart(SCRIPT, 6 * gib)]
        )
    )
    rects = [r for r in svg.iter("rect") if r.get("class") != "track"]
    widths = [float(r.get("width", "0")) for r in rects]
    assert [round(w) for w in widths] == [877, 18, 70]  # anon, kernel-ish, other
    assert sum(widths) < 1000
    texts = [t.text for t in svg.iter("text")]
    assert texts[0] == "330.0 GiB of 342.0 GiB (96%)"
    assert texts[1] == f"anon 300.0 GiB · {SCRIPT} 6.0 GiB"


def test_memory_bar_without_a_limit_says_so() -> None:
    svg = _svg(memory_bar_svg(5 * 2**30, None))
    assert [t.text for t in svg.iter("text")] == ["5.0 GiB used, no limit"]


@settings(max_examples=200, deadline=None)
@given(
    used=st.integers(min_value=-(2**40), max_value=2**64),
    limit=st.none() | st.integers(min_value=-(2**40), max_value=2**64),
    parts=st.lists(
        st.builds(MemoryPart, st.text(max_size=20), st.integers(-(2**40), 2**64)), max_size=8
    ),
)
def test_memory_bar_never_overflows_its_track(
    used: int, limit: int | None, parts: list[MemoryPart]
) -> None:
    svg = _svg(memory_bar_svg(used, limit, parts))
    widths = [float(r.get("width", "0")) for r in svg.iter("rect") if r.get("class") != "track"]
    assert all(w >= 0 for w in widths) and sum(widths) <= 1000.5


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.text(max_size=40)), max_size=20))
def test_timeline_draws_any_events_as_valid_svg(events: list[tuple[int, str]]) -> None:
    points = [TimelinePoint(BOOT + timedelta(seconds=s), label) for s, label in events]
    svg = _svg(timeline_svg(points))
    assert len(list(svg.iter("circle"))) == len(points)


def test_tree_shows_ancestors_and_children_of_marked_processes_only() -> None:
    rows = [
        ProcessRow(1, 0, "tini", "S"),
        ProcessRow(7, 1, "sshd", "S"),
        ProcessRow(40, 1, "bash", "S", "benchmark.sh"),
        ProcessRow(4242, 40, "cuzk", "Z", "3 threads alive"),
        ProcessRow(4243, 40, "tee", "S"),
        ProcessRow(4300, 4242, SCRIPT, "D"),
        ProcessRow(900, 1, "python3", "S"),
        ProcessRow(901, 900, "sleep", "Z"),
    ]
    lines = tree_around(rows, {4242, 901})
    assert [line.text for line in lines] == [
        "1 tini [S]",
        "├─ 40 bash [S] benchmark.sh",
        "│  └─ 4242 cuzk [Z] 3 threads alive  <= here",
        f"│     └─ 4300 {SCRIPT} [D]",
        "└─ 900 python3 [S]",
        "   └─ 901 sleep [Z]  <= here",
    ]
    assert [line.pid for line in lines if line.marked] == [4242, 901]


def test_tree_survives_parent_loops_and_missing_parents() -> None:
    rows = [ProcessRow(2, 3, "a"), ProcessRow(3, 2, "b"), ProcessRow(5, 99, "orphan")]
    lines = tree_around(rows, {2, 5, 12345})
    assert sorted(line.pid for line in lines) == [2, 3, 5]


PARTIAL_MD = """{% import "macros.md.j2" as m %}
## Processes

{{ m.process_tree(tree_around([ProcessRow(1, 0, "tini"), ProcessRow(9, 1, name, "Z")], [9])) }}
"""
PARTIAL_HTML = """{% import "macros.html.j2" as m %}
<section id="processes">
{{ m.process_tree(tree_around([ProcessRow(1, 0, "tini"), ProcessRow(9, 1, name, "Z")], [9])) }}
{{ memory_bar_svg(used, limit, [MemoryPart(name, used // 2)]) }}
</section>
"""


def test_a_probe_partial_draws_with_the_shared_pieces_and_stays_escaped() -> None:
    """What docs/REPORTS.md tells a probe's partial to use works from a template."""
    markdown = markdown_environment().from_string(PARTIAL_MD).render(name=SCRIPT + "|`x`")
    fence = [t.content for t in markdown_tokens(markdown) if t.type == "fence"]
    assert fence == [f"1 tini\n└─ 9 {SCRIPT}|`x` [Z]  <= here\n"]
    html = (
        html_environment()
        .from_string(PARTIAL_HTML)
        .render(name=SCRIPT, used=3 * 2**30, limit=4 * 2**30)
    )
    page = parse_html(html)
    assert_inert_page(page)
    assert f"└─ 9 {SCRIPT} [Z]  <= here" in page.visible_text
    assert "3.0 GiB of 4.0 GiB (75%)" in page.visible_text
    assert [tag for tag, attrs in page.tags if attrs.get("class") == "mark"] == ["span"]
