"""Numbers read from host text: one reading for every parser, None for anything else.

Host text is untrusted: a number is ASCII digits with an optional minus sign, at most 20 of
them; a float must be finite and below 1e12 in size (no ``nan``, ``inf`` or ``1e400``).
"""

from __future__ import annotations

import math

MAX_DIGITS = 20
FLOAT_LIMIT = 1e12


def parse_int(text: str | None, *, minimum: int | None = None) -> int | None:
    """The integer ``text`` holds (spaces around it allowed), or None.

    >>> parse_int(" 4089\\n"), parse_int("-20"), parse_int("max"), parse_int("٣")
    (4089, -20, None, None)
    >>> parse_int("-1", minimum=0) is None
    True
    """
    if text is None:
        return None
    text = text.strip()
    digits = text[1:] if text[:1] == "-" else text
    if not digits or len(digits) > MAX_DIGITS or not (digits.isascii() and digits.isdigit()):
        return None
    value = int(text)
    return None if minimum is not None and value < minimum else value


def parse_float(text: str | None, *, minimum: float | None = None) -> float | None:
    """The finite number ``text`` holds (spaces around it allowed), or None.

    >>> parse_float("9836.058240"), parse_float("nan"), parse_float("-1.5", minimum=0)
    (9836.05824, None, None)
    """
    if text is None:
        return None
    try:
        value = float(text.strip())
    except ValueError:
        return None
    if not math.isfinite(value) or abs(value) >= FLOAT_LIMIT:
        return None
    return None if minimum is not None and value < minimum else value


def parse_flag(text: str | None) -> bool | None:
    """A kernel 0/1 switch (``oom_kill_disable 1``, ``dmesg_restrict``): any other integer is
    on too; None when ``text`` holds no integer.

    >>> parse_flag("1"), parse_flag("0"), parse_flag("yes")
    (True, False, None)
    """
    value = parse_int(text)
    return None if value is None else value != 0
