"""``--fail-on``: which findings turn a successful run's exit status into 1."""

from __future__ import annotations

from forensics.core.errors import UsageError
from forensics.core.levels import Severity


def parse_fail_on(value: str) -> Severity | None:
    """The lowest severity that fails the run, or None for ``never``.

    >>> parse_fail_on("warning"), parse_fail_on("never")
    (<Severity.warning: 'warning'>, None)
    """
    if value == "never":
        return None
    try:
        return Severity(value)
    except ValueError as error:
        raise UsageError(
            f"--fail-on: expected warning, critical or never, got {value!r}"
        ) from error
