"""Durations as operators type them: ``90``, ``90s``, ``15m``, ``1h30m``, ``2.5m``."""

from __future__ import annotations

import re

_PART = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float | None:
    """Seconds in ``text``, or None when it is not a duration.

    >>> parse_duration("15m"), parse_duration("1h30m"), parse_duration("90"), parse_duration("2.5s")
    (900.0, 5400.0, 90.0, 2.5)
    >>> parse_duration("soon") is None, parse_duration("") is None, parse_duration("5m5") is None
    (True, True, True)
    """
    cleaned = text.strip().lower()
    if re.fullmatch(r"\d+(?:\.\d+)?", cleaned):
        return float(cleaned)
    if not cleaned or not re.fullmatch(rf"(?:{_PART.pattern})+", cleaned):
        return None
    return float(sum(float(number) * _SECONDS[unit] for number, unit in _PART.findall(cleaned)))
