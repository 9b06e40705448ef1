"""``--threshold NAME=VALUE``: override when a memory finding fires, one name at a time."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

from forensics.errors import UsageError
from forensics.models import MemoryThresholds


def parse_thresholds(pairs: Sequence[str]) -> MemoryThresholds:
    """Defaults, with each ``NAME=VALUE`` applied; ``UsageError`` names what is wrong.

    >>> parse_thresholds(["near_limit_warning_percent=85"]).near_limit_warning_percent
    85.0
    >>> parse_thresholds(["near=85"])
    Traceback (most recent call last):
    ...
    forensics.errors.UsageError: --threshold near=85: unknown name; known: ...
    """
    known = list(MemoryThresholds.model_fields)
    values: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip()
        if not sep:
            raise UsageError(
                f"--threshold {pair}: expected NAME=VALUE, e.g. near_limit_warning_percent=85"
            )
        if name not in known:
            raise UsageError(f"--threshold {pair}: unknown name; known: {', '.join(known)}")
        values[name] = value.strip()
    try:
        return MemoryThresholds.model_validate(values)
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise UsageError(f"--threshold {where}: {problem['msg']}") from error
