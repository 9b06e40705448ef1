"""The two enums the command line needs before any model is built: how bad a finding is,
and how far a collection got. Plain enums, so that ``forensics --help`` and the error
types load without pydantic; ``forensics.core.models`` re-exports both."""

from __future__ import annotations

import enum
from collections.abc import Iterable


class Severity(enum.StrEnum):
    info = "info"
    warning = "warning"
    critical = "critical"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "critical": 2}[self.value]

    @staticmethod
    def worst(severities: Iterable[Severity]) -> Severity | None:
        """The highest of ``severities``; None when there are none.

        >>> Severity.worst([Severity.warning, Severity.critical, Severity.info])
        <Severity.critical: 'critical'>
        >>> Severity.worst([]) is None
        True
        """
        return max(severities, key=lambda severity: severity.rank, default=None)


class CollectStatus(enum.StrEnum):
    """How far a collection got; anything but ``ok`` and ``partial`` means no report body."""

    ok = "ok"
    partial = "partial"
    unreachable = "unreachable"
    auth_failed = "auth_failed"
    host_key_rejected = "host_key_rejected"
    timeout = "timeout"
