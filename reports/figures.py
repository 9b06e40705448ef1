"""Inline SVG drawings for the HTML report: the timeline strip and the memory bar.

Each function takes plain numbers and strings (whatever probe they come from) and returns
``Markup`` that is safe to place in the page: every piece of text is made inert and
HTML-escaped here, and the SVG references nothing outside itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from markupsafe import Markup, escape

from forensics.core.escaping import inert
from forensics.core.models import Severity

WIDTH = 1000
PER_ROW = 6
ROW_HEIGHT = 94
LABEL_CHARS = 26
BAR_HEIGHT = 28
PART_COLOURS = ("#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#b279a2")


@dataclass(frozen=True)
class TimelinePoint:
    """One dated event; ``approximate`` when the time was derived (kernel monotonic time)."""

    at: datetime
    label: str
    severity: Severity | None = None
    approximate: bool = False


@dataclass(frozen=True)
class MemoryPart:
    label: str
    bytes: int


def human_bytes(count: int) -> str:
    """Binary units, one decimal: what an operator compares with ``free -g``.

    >>> human_bytes(342 * 2**30), human_bytes(1536 * 2**20), human_bytes(512)
    ('342.0 GiB', '1.5 GiB', '512 B')
    """
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{count} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def human_duration(seconds: float) -> str:
    """The two largest units of a duration.

    >>> human_duration(0.25), human_duration(95), human_duration(37 * 86400 + 7200)
    ('0.2 s', '1 min 35 s', '37 d 2 h')
    """
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60), ("s", 1)):
        if whole >= size:
            parts.append(f"{whole // size} {unit}")
            whole %= size
    return " ".join(parts[:2])


def timeline_svg(points: Sequence[TimelinePoint]) -> Markup:
    """Events in time order, evenly spaced in rows, the gap between neighbours written on
    the line: "the log stopped 2 s after the daemon started" is read off the strip, whatever
    the spread of the times. Hollow dots are approximate times."""
    ordered = sorted(points, key=lambda p: p.at)
    rows = max(1, -(-len(ordered) // PER_ROW))
    height = rows * ROW_HEIGHT
    step = WIDTH / max(1, min(len(ordered), PER_ROW))
    axis: list[str] = []
    dots: list[str] = []
    for index, point in enumerate(ordered):
        row, column = divmod(index, PER_ROW)
        x = step * column + step / 2
        y = row * ROW_HEIGHT + 30
        if index > 0:
            # A row's first event continues from the previous row's last: a stub from the edge.
            start = x - step if column > 0 else 0.0
            gap = (point.at - ordered[index - 1].at).total_seconds()
            axis.append(
                f'<line x1="{start:.0f}" y1="{y}" x2="{x:.0f}" y2="{y}" class="axis"/>'
                f'<text x="{(start + x) / 2:.0f}" y="{y - 8}" class="gap">'
                f"+{escape(human_duration(gap))}</text>"
            )
        dots.append(_dot(point, x, y))
    return Markup(
        f'<svg class="timeline" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="timeline of {len(ordered)} events">{"".join(axis + dots)}</svg>'
    )


def _dot(point: TimelinePoint, x: float, y: int) -> str:
    label = inert(point.label)
    severity = point.severity.value if point.severity else "none"
    fill = "hollow" if point.approximate else "solid"
    when = ("~" if point.approximate else "") + point.at.strftime("%m-%d %H:%M:%S")
    lines = "".join(
        f'<text x="{x:.0f}" y="{y + 24 + 14 * index}" class="label">{escape(line)}</text>'
        for index, line in enumerate(label_lines(label))
    )
    return (
        f'<g class="event {severity} {fill}"><title>{escape(label)}</title>'
        f'<circle cx="{x:.0f}" cy="{y}" r="7"/>{lines}'
        f'<text x="{x:.0f}" y="{y + 56}" class="when">{escape(when)}</text></g>'
    )


def label_lines(label: str, width: int = LABEL_CHARS, most: int = 2) -> list[str]:
    """A timeline label wrapped at spaces into at most ``most`` lines; a longer label ends
    in an ellipsis after a whole word (the full text is the dot's hover title). A word
    longer than a line is the only thing cut, and only at the line's end.

    >>> label_lines("host booted (/proc/stat btime)")
    ['host booted (/proc/stat', 'btime)']
    >>> label_lines("OOM kill of fxhog7936 (pid 21408): memory cgroup /x hit its limit")
    ['OOM kill of fxhog7936 (pid', '21408): memory cgroup /x …']
    """
    lines: list[str] = []
    current = ""
    words = label.split()
    for index, word in enumerate(words):
        candidate = f"{current} {word}".strip()
        if len(candidate) <= width:
            current = candidate
            continue
        if current:
            lines.append(current)
        current = word if len(word) <= width else word[: width - 1] + "…"
        if len(lines) == most:
            break
        if len(lines) == most - 1 and index < len(words) - 1:
            rest = " ".join(words[index:])
            if len(rest) > width:
                cut = rest[: width - 1]
                cut = cut[: cut.rfind(" ")] if " " in cut else cut
                lines.append(cut.rstrip() + " …")
                return lines
    if current and len(lines) < most:
        lines.append(current)
    return lines


def memory_bar_svg(used: int, limit: int | None, parts: Sequence[MemoryPart] = ()) -> Markup:
    """Usage against the limit, split into ``parts`` (e.g. anon, file, kernel) when known;
    what the parts do not explain is drawn as "other". With no limit the bar is the usage.

    >>> svg = memory_bar_svg(300 * 2**30, 342 * 2**30, [MemoryPart("kernel", 6 * 2**30)])
    >>> "300.0 GiB of 342.0 GiB (88%)" in svg, svg.count("<rect")
    (True, 3)
    """
    scale = limit if limit and limit > 0 else max(used, 1)
    summary = (
        f"{human_bytes(used)} of {human_bytes(limit)} ({100 * used / limit:.0f}%)"
        if limit and limit > 0
        else f"{human_bytes(used)} used, no limit"
    )
    out = [
        f'<svg class="memory" viewBox="0 0 {WIDTH} {BAR_HEIGHT + 44}" role="img" '
        f'aria-label="{escape(summary)}">'
        f'<rect class="track" x="0" y="0" width="{WIDTH}" height="{BAR_HEIGHT}"/>'
    ]
    x = 0.0
    explained = 0
    segments = [p for p in parts if p.bytes > 0]
    for index, part in enumerate(segments):
        explained += part.bytes
        x = _segment(out, x, part.bytes, scale, PART_COLOURS[index % len(PART_COLOURS)], part)
    if used > explained:
        other = MemoryPart("other" if segments else "used", used - explained)
        _segment(out, x, other.bytes, scale, "#9d9d9d" if segments else PART_COLOURS[0], other)
    out.append(f'<text x="0" y="{BAR_HEIGHT + 20}" class="summary">{escape(summary)}</text>')
    legend = " · ".join(f"{inert(p.label)} {human_bytes(p.bytes)}" for p in segments)
    if legend:
        out.append(f'<text x="0" y="{BAR_HEIGHT + 38}" class="legend">{escape(legend)}</text>')
    out.append("</svg>")
    return Markup("".join(out))


def _segment(
    out: list[str], x: float, size: int, scale: int, colour: str, part: MemoryPart
) -> float:
    width = max(0.0, min(WIDTH - x, WIDTH * size / scale))
    out.append(
        f'<rect x="{x:.1f}" y="0" width="{width:.1f}" height="{BAR_HEIGHT}" fill="{colour}">'
        f"<title>{escape(inert(part.label))}: {escape(human_bytes(part.bytes))}</title></rect>"
    )
    return x + width
