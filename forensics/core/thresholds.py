"""How a measured value compares with a warning and a critical threshold (the thresholds
themselves are declared in ``MemoryThresholds``, ``core/models.py``)."""

from __future__ import annotations

from forensics.core.models import Severity


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
