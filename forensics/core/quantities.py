"""Sizes and durations as operators type them, and as reports print them.

Sizes: ``KiB MiB GiB TiB`` (and the short ``K M G T``, as ``free -g`` and docker mean
them) are powers of 1024; ``KB MB GB TB`` are powers of 1000; ``B`` is bytes. A unit is
required, so that ``500`` is never silently 500 bytes.
Durations: ``500ms``, ``2s``, ``5m``, ``1h``, ``1m30s``; a bare number is seconds.
"""

from __future__ import annotations

import math
import re

from forensics.core.errors import UsageError

GIB = 1 << 30
_SIZE_UNITS = {
    "b": 1,
    "k": 1 << 10, "kib": 1 << 10, "kb": 10**3,
    "m": 1 << 20, "mib": 1 << 20, "mb": 10**6,
    "g": 1 << 30, "gib": 1 << 30, "gb": 10**9,
    "t": 1 << 40, "tib": 1 << 40, "tb": 10**12,
}  # fmt: skip
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-z]*)\s*$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h)")
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_size(text: str, what: str = "size") -> int:
    """Bytes in ``text``; ``UsageError`` (one line, says what to type) otherwise.

    >>> parse_size("500GiB"), parse_size("1.5 TiB"), parse_size("250G"), parse_size("1GB")
    (536870912000, 1649267441664, 268435456000, 1000000000)
    >>> parse_size("500")
    Traceback (most recent call last):
    ...
    forensics.core.errors.UsageError: size '500' has no unit: write e.g. 500GiB (also MiB, TiB, GB)
    """
    match = _SIZE.match(text)
    if not match:
        raise UsageError(f"{what} {text!r} is not a size: write e.g. 500GiB, 250G or 512MiB")
    number, unit = match.groups()
    if not unit:
        raise UsageError(f"{what} {text!r} has no unit: write e.g. {number}GiB (also MiB, TiB, GB)")
    factor = _SIZE_UNITS.get(unit.lower())
    if factor is None:
        raise UsageError(
            f"{what} {text!r}: unknown unit {unit!r}; use B, KiB, MiB, GiB, TiB "
            "(1024-based, also K, M, G, T) or KB, MB, GB, TB (1000-based)"
        )
    amount = float(number) * factor
    if not math.isfinite(amount):
        raise UsageError(f"{what} {text!r} is too large")
    return int(amount)


def parse_duration(text: str, what: str = "duration") -> float:
    """Seconds in ``text``; ``UsageError`` otherwise.

    >>> parse_duration("2s"), parse_duration("1m30s"), parse_duration("500ms"), parse_duration("5")
    (2.0, 90.0, 0.5, 5.0)
    >>> parse_duration("soon")
    Traceback (most recent call last):
    ...
    forensics.core.errors.UsageError: duration 'soon' is not a duration: write e.g. 2s, ... or 1m30s
    """
    compact = text.strip().lower()
    seconds: float | None = None
    try:
        seconds = float(compact)
    except ValueError:
        if compact and _DURATION_PART.sub("", compact) == "":
            seconds = sum(
                float(number) * _DURATION_UNITS[unit]
                for number, unit in _DURATION_PART.findall(compact)
            )
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        raise UsageError(
            f"{what} {text!r} is not a duration: write e.g. 2s, 500ms, 5m, 1h or 1m30s"
        )
    return seconds


def gib(value: int | float) -> str:
    """Bytes as GiB with enough digits to see a change.

    >>> gib(367219703808), gib(429496729), gib(0)
    ('342.0 GiB', '0.40 GiB', '0.00 GiB')
    """
    amount = value / GIB
    return f"{amount:.1f} GiB" if abs(amount) >= 10 else f"{amount:.2f} GiB"


def seconds_text(value: float) -> str:
    """A duration for people.

    >>> seconds_text(8.64), seconds_text(95), seconds_text(7300)
    ('8.6 s', '1 min 35 s', '2 h 1 min')
    """
    if value < 60:
        return f"{value:.1f} s"
    minutes, seconds = divmod(round(value), 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"
