"""Durations and sizes: the one grammar every command and the inventory read, and the
one way reports write them back for people.

Durations: a bare number is seconds (``90``, ``2.5``); otherwise one or more parts, each
a number and a unit, largest first: ``500ms``, ``90s``, ``2m``, ``1h30m``, ``1d``.
Sizes: ``KiB MiB GiB TiB`` (and the short ``K M G T``, as ``free -g`` and docker mean
them) are powers of 1024; ``KB MB GB TB`` are powers of 1000; ``B`` is bytes. A unit is
required, so that ``500`` is never silently 500 bytes.

Both refuse what is not finite (``nan``, ``inf``) and what is negative; a range beyond
that belongs to the option that uses the value (its declaration says it).
"""

from __future__ import annotations

import math
import re
from typing import Annotated

from pydantic import BeforeValidator

from forensics.core.declared import CommandLine

GIB = 1 << 30

_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)"
_DURATION_PART = re.compile(rf"({_NUMBER})(ms|s|m|h|d)")
_DURATION_UNITS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_DURATION_HINT = "write e.g. 90, 90s, 500ms, 2m, 1h30m or 1d"

_SIZE = re.compile(rf"^\s*({_NUMBER})\s*([A-Za-z]*)\s*$")
_SIZE_UNITS = {
    "b": 1,
    "k": 1 << 10, "kib": 1 << 10, "kb": 10**3,
    "m": 1 << 20, "mib": 1 << 20, "mb": 10**6,
    "g": 1 << 30, "gib": 1 << 30, "gb": 10**9,
    "t": 1 << 40, "tib": 1 << 40, "tb": 10**12,
}  # fmt: skip


class UnitError(ValueError):
    """A duration or size that the grammar does not read; the message says what to type."""


def parse_duration(text: str) -> float:
    """Seconds in ``text``; ``UnitError`` otherwise.

    >>> [parse_duration(t) for t in ("90", "90s", "500ms", "2m", "1h30m", "1d", "2.5m")]
    [90.0, 90.0, 0.5, 120.0, 5400.0, 86400.0, 150.0]
    >>> parse_duration(" 1M30S "), parse_duration("0")
    (90.0, 0.0)
    >>> parse_duration("soon")
    Traceback (most recent call last):
    ...
    forensics.core.units.UnitError: 'soon' is not a duration: write e.g. 90, 90s, 500ms, ...
    >>> parse_duration("nan")
    Traceback (most recent call last):
    ...
    forensics.core.units.UnitError: 'nan' is not a duration: write e.g. 90, 90s, 500ms, ...
    >>> parse_duration("30s1h")
    Traceback (most recent call last):
    ...
    forensics.core.units.UnitError: '30s1h' is not a duration: write e.g. 90, 90s, 500ms, ...
    """
    compact = text.strip().lower()
    if re.fullmatch(_NUMBER, compact):
        return _finite(float(compact), text)
    parts = _DURATION_PART.findall(compact)
    units = [_DURATION_UNITS[unit] for _, unit in parts]
    if not compact or _DURATION_PART.sub("", compact) or units != sorted(set(units), reverse=True):
        raise UnitError(f"{text!r} is not a duration: {_DURATION_HINT}")
    return _finite(sum(float(number) * _DURATION_UNITS[unit] for number, unit in parts), text)


def duration_seconds(value: object) -> float:
    """A duration from a number of seconds (YAML, JSON, Python) or from text.

    >>> duration_seconds(90), duration_seconds("1h"), duration_seconds(0.5)
    (90.0, 3600.0, 0.5)
    >>> duration_seconds(float("nan"))
    Traceback (most recent call last):
    ...
    forensics.core.units.UnitError: nan is not a duration: write e.g. 90, 90s, 500ms, 2m, ...
    >>> duration_seconds(-1)
    Traceback (most recent call last):
    ...
    forensics.core.units.UnitError: -1 is not a duration: durations are not negative
    """
    if isinstance(value, bool):
        raise UnitError(f"{value!r} is not a duration: {_DURATION_HINT}")
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise UnitError(f"{value!r} is not a duration: {_DURATION_HINT}")
        if value < 0:
            raise UnitError(f"{value!r} is not a duration: durations are not negative")
        return float(value)
    if isinstance(value, str):
        return parse_duration(value)
    raise UnitError(f"{value!r} is not a duration: {_DURATION_HINT}")


# A model field of this type reads both a number of seconds and the duration grammar.
Duration = Annotated[float, BeforeValidator(duration_seconds), CommandLine(metavar="DURATION")]


def parse_size(text: str) -> int:
    """Bytes in ``text``; ``UnitError`` (one line, says what to type) otherwise.

    >>> parse_size("512MiB"), parse_size("1.5GiB"), parse_size("400G"), parse_size("1GB")
    (536870912, 1610612736, 429496729600, 1000000000)
    >>> parse_size("500")
    Traceback (most recent call last):
    ...
    forensics.core.units.UnitError: '500' has no unit: write e.g. 500GiB (also MiB, TiB, GB)
    >>> parse_size("5 parsecs")
    Traceback (most recent call last):
    ...
    forensics.core.units.UnitError: '5 parsecs': unknown unit 'parsecs'; use B, KiB, MiB, ...
    """
    match = _SIZE.match(text)
    if not match:
        raise UnitError(f"{text!r} is not a size: write e.g. 512MiB, 1.5GiB or 400G")
    number, unit = match.groups()
    if not unit:
        raise UnitError(f"{text!r} has no unit: write e.g. {number}GiB (also MiB, TiB, GB)")
    factor = _SIZE_UNITS.get(unit.lower())
    if factor is None:
        raise UnitError(
            f"{text!r}: unknown unit {unit!r}; use B, KiB, MiB, GiB, TiB "
            "(1024-based, also K, M, G, T) or KB, MB, GB, TB (1000-based)"
        )
    return int(_finite(float(number) * factor, text))


def _finite(value: float, text: str) -> float:
    if not math.isfinite(value):
        raise UnitError(f"{text!r} is too large")
    return value


def describe_duration(seconds: float, *, tenths: bool = False) -> str:
    """Two units at most, largest first; under a minute in tenths of a second when
    ``tenths`` (a measured wait), else whole seconds (a gap between two events).

    >>> describe_duration(4.2), describe_duration(75), describe_duration(7980)
    ('4 s', '1 min 15 s', '2 h 13 min')
    >>> describe_duration(3 * 86400 + 7200), describe_duration(-3), describe_duration(3601)
    ('3 d 2 h', '0 s', '1 h')
    >>> describe_duration(8.64, tenths=True), describe_duration(95, tenths=True)
    ('8.6 s', '1 min 35 s')
    """
    if tenths and seconds < 59.95:
        return f"{max(0.0, seconds):.1f} s"
    total = max(0, round(seconds))
    units = (("d", 86400), ("h", 3600), ("min", 60), ("s", 1))
    for index, (name, size) in enumerate(units):
        if total < size and name != "s":
            continue
        first, rest = divmod(total, size)
        if name != "s":
            next_name, next_size = units[index + 1]
            if rest // next_size:
                return f"{first} {name} {rest // next_size} {next_name}"
        return f"{first} {name}"
    return "0 s"


def gib(value: int | float) -> str:
    """Bytes as GiB with enough digits to see a change.

    >>> gib(367219703808), gib(429496729), gib(0)
    ('342.0 GiB', '0.40 GiB', '0.00 GiB')
    """
    amount = value / GIB
    return f"{amount:.1f} GiB" if abs(amount) >= 10 else f"{amount:.2f} GiB"
