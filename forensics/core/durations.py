"""Durations in the words an operator reads at a glance."""

from __future__ import annotations


def describe_duration(seconds: float) -> str:
    """Two units at most, largest first.

    >>> describe_duration(4.2), describe_duration(75), describe_duration(7980)
    ('4 s', '1 min 15 s', '2 h 13 min')
    >>> describe_duration(3 * 86400 + 7200), describe_duration(-3), describe_duration(3601)
    ('3 d 2 h', '0 s', '1 h')
    """
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
