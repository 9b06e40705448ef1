"""What ``forensics wait`` waits for: ``--available '>=500GiB'``, ``--cgroup-current '<=2G'``."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from forensics.core.errors import UsageError
from forensics.core.units import UnitError, gib, parse_size
from forensics.watch.sampler import MemorySample

Metric = Literal["available", "cgroup_current"]
_COMPARE: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}
_CONDITION = re.compile(r"^\s*(>=|<=|>|<)\s*(\S.*)$")
_NAMES: dict[Metric, str] = {"available": "MemAvailable", "cgroup_current": "cgroup usage"}


@dataclass(frozen=True)
class Condition:
    metric: Metric
    comparison: str
    threshold_bytes: int

    @property
    def label(self) -> str:
        return _NAMES[self.metric]

    def value(self, sample: MemorySample) -> int | None:
        if self.metric == "available":
            return sample.mem_available_bytes
        return sample.cgroup_current_bytes

    def holds(self, value: int) -> bool:
        return _COMPARE[self.comparison](value, self.threshold_bytes)

    def wants_more(self) -> bool:
        """True when the value has to rise to meet the condition."""
        return self.comparison in (">=", ">")

    def describe(self) -> str:
        return f"{self.label} {self.comparison} {gib(self.threshold_bytes)}"


def parse_condition(metric: Metric, text: str) -> Condition:
    """``>=500GiB`` and friends; ``UsageError`` with a one-line hint otherwise.

    >>> parse_condition("available", ">=500GiB").describe()
    'MemAvailable >= 500.0 GiB'
    >>> parse_condition("cgroup_current", "<= 250 G").threshold_bytes
    268435456000
    >>> parse_condition("available", "500GiB")
    Traceback (most recent call last):
    ...
    forensics.core.errors.UsageError: --available '500GiB': start with >=, <=, > or <, e.g. ...
    """
    option = "--" + metric.replace("_", "-")
    match = _CONDITION.match(text)
    if not match:
        raise UsageError(f"{option} {text!r}: start with >=, <=, > or <, e.g. '>=500GiB'")
    comparison, size = match.groups()
    try:
        return Condition(metric, comparison, parse_size(size))
    except UnitError as error:
        raise UsageError(f"{option} {comparison} {error}") from error
