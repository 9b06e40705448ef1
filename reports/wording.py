"""A finding's subject and next steps as a person writes them: no Python ``None`` or
``True``, times in UTC words, sizes with units, commands as code.

Subjects are the stable keys of a finding (they feed fingerprints), so their raw form stays
in the JSON; only the page says them in words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from forensics.reports.figures import human_bytes, human_duration

HIDDEN = frozenset({"monotonic_s"})
"""Internal keys a reader has no use for: the kernel's seconds since boot are shown as the
time they convert to, which the subject carries beside them."""

_UNITS: tuple[tuple[str, str], ...] = (
    ("_bytes", "bytes"),
    ("_kb", "kib"),
    ("_kib", "kib"),
    ("_mib", "mib"),
    ("_s", "seconds"),
)
_ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?$")
_CODE = re.compile(r"`([^`]+)`")


@dataclass(frozen=True)
class Piece:
    """A run of a next step: plain words, or a command to copy."""

    kind: Literal["text", "code"]
    text: str


def subject_items(subject: dict[str, Any]) -> list[tuple[str, str]]:
    """The subject as (label, value) pairs in words.

    >>> subject_items({"pid": 4242, "rss_kb": 72304, "in_question": True,
    ...     "monotonic_s": 706.5, "time": "2026-12-01T13:28:57Z", "memcg_oom_kill": None,
    ...     "pids": [1, 2], "thread_states": {"S": 1}, "gap_s": 130})
    ... # doctest: +NORMALIZE_WHITESPACE
    [('pid', '4242'), ('rss', '70.6 MiB'), ('in question', 'yes'),
     ('time', '2026-12-01 13:28:57 UTC'), ('memcg oom kill', 'unknown'), ('pids', '1, 2'),
     ('thread states', 'S: 1'), ('gap', '2 min 10 s')]
    """
    items = []
    for key, value in subject.items():
        if key in HIDDEN:
            continue
        label, unit = key, ""
        for suffix, name in _UNITS:
            if (
                key.endswith(suffix)
                and isinstance(value, int | float)
                and not isinstance(value, bool)
            ):
                label, unit = key.removesuffix(suffix), name
                break
        items.append((label.replace("_", " "), _value(value, unit)))
    return items


def _value(value: Any, unit: str = "") -> str:
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float) and unit:
        scale = {"bytes": 1, "kib": 1024, "mib": 1024**2}.get(unit)
        if scale is not None:
            return human_bytes(int(value * scale))
        return human_duration(float(value))
    if isinstance(value, list | tuple):
        return ", ".join(_value(item) for item in value) or "none"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_value(v)}" for k, v in value.items()) or "none"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S UTC")
    if isinstance(value, str) and _ISO_TIME.match(value):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value
        return moment.strftime("%Y-%m-%d %H:%M:%S UTC")
    return str(value)


def step_pieces(step: str) -> list[Piece]:
    """A next step split into words and commands (the rules write commands in backticks).

    >>> step_pieces("Read the OOM report: `dmesg | tail`")
    [Piece(kind='text', text='Read the OOM report: '), Piece(kind='code', text='dmesg | tail')]
    >>> step_pieces("Nothing to run here")
    [Piece(kind='text', text='Nothing to run here')]
    """
    pieces: list[Piece] = []
    position = 0
    for match in _CODE.finditer(step):
        if match.start() > position:
            pieces.append(Piece("text", step[position : match.start()]))
        pieces.append(Piece("code", match.group(1)))
        position = match.end()
    if position < len(step):
        pieces.append(Piece("text", step[position:]))
    return pieces


def step_command(step: str) -> str | None:
    """The command when a step is nothing but a command (shown as a block to copy), or
    when it is a short lead-in ending in a colon followed by one command.

    >>> step_command("`forensics watch gpu-a --every 2s`")
    'forensics watch gpu-a --every 2s'
    >>> step_command("Read the OOM report: `dmesg | tail`")
    'dmesg | tail'
    >>> step_command("Check `dmesg` and then `journalctl -k`") is None
    True
    """
    pieces = [p for p in step_pieces(step) if p.kind == "code" or p.text.strip()]
    if len(pieces) == 1 and pieces[0].kind == "code":
        return pieces[0].text
    if (
        len(pieces) == 2
        and pieces[0].kind == "text"
        and pieces[0].text.rstrip().endswith(":")
        and pieces[1].kind == "code"
    ):
        return pieces[1].text
    return None
