"""When memory findings fire: ``--threshold NAME=VALUE`` on ``collect``, or an inventory's
``thresholds:`` mapping; both go through ``memory_thresholds``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import ValidationError

from forensics.core.errors import UsageError
from forensics.core.models import MemoryThresholds, Severity


class ThresholdProblem(ValueError):
    """One threshold that cannot be used: its ``name`` and what is wrong, in words."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"{name}: {problem}")
        self.name = name
        self.problem = problem


def memory_thresholds(values: Mapping[str, object]) -> MemoryThresholds:
    """Defaults, with each named value applied; ``ThresholdProblem`` for the first bad one.

    >>> memory_thresholds({"near_limit_warning_percent": 85}).near_limit_warning_percent
    85.0
    >>> memory_thresholds({"memory_used_percent": 90})
    Traceback (most recent call last):
    ...
    forensics.core.thresholds.ThresholdProblem: memory_used_percent: unknown threshold; known: ...
    """
    known = list(MemoryThresholds.model_fields)
    for name in values:
        if name not in known:
            raise ThresholdProblem(name, f"unknown threshold; known: {', '.join(known)}")
    try:
        return MemoryThresholds.model_validate(values)
    except ValidationError as error:
        detail = error.errors()[0]
        name = ".".join(str(part) for part in detail["loc"])
        message = str(detail["msg"])
        raise ThresholdProblem(
            name, f"{message[0].lower()}{message[1:]}, got {detail['input']!r}"
        ) from error


def parse_thresholds(pairs: Sequence[str]) -> MemoryThresholds:
    """``--threshold NAME=VALUE`` options; ``UsageError`` names what is wrong.

    >>> parse_thresholds(["near_limit_warning_percent=85"]).near_limit_warning_percent
    85.0
    >>> parse_thresholds(["near=85"])
    Traceback (most recent call last):
    ...
    forensics.core.errors.UsageError: --threshold near: unknown threshold; known: ...
    """
    values: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise UsageError(
                f"--threshold {pair}: expected NAME=VALUE, e.g. near_limit_warning_percent=85"
            )
        values[name.strip()] = value.strip()
    try:
        return memory_thresholds(values)
    except ThresholdProblem as problem:
        raise UsageError(f"--threshold {problem}") from problem


def severity_above(value: float, warning: float, critical: float) -> Severity | None:
    """Critical at or above ``critical``, warning at or above ``warning``, else None.

    >>> severity_above(92.0, 90, 97), severity_above(50.0, 90, 97)
    (<Severity.warning: 'warning'>, None)
    """
    if value >= critical:
        return Severity.critical
    if value >= warning:
        return Severity.warning
    return None
