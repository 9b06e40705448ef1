"""Check the log and GPU options of ``collect`` before anything runs on the host."""

from __future__ import annotations

from collections.abc import Sequence

from forensics.errors import UsageError
from forensics.models import CollectOptions


def log_options(
    options: CollectOptions,
    globs: Sequence[str],
    expected: Sequence[str],
    lines: int,
    gpu_timeout_s: float,
) -> CollectOptions:
    """``options`` with the logs to read; relative paths are refused, since the script runs
    in a private temp dir on the host where they would mean nothing.

    >>> log_options(CollectOptions(), ["~/b*.log"], ["/var/log/s.log"], 20, 5).logs
    ('~/b*.log',)
    >>> log_options(CollectOptions(), ["bench.log"], [], 50, 30)
    Traceback (most recent call last):
    ...
    forensics.errors.UsageError: --log 'bench.log': give an absolute path or one starting with ~/
    """
    for flag, paths in (("--log", globs), ("--expect-log", expected)):
        for path in paths:
            if not (path.startswith("/") or path.startswith("~/")) or "\n" in path:
                raise UsageError(f"{flag} {path!r}: give an absolute path or one starting with ~/")
    if not 1 <= lines <= 1000:
        raise UsageError(f"--log-lines: expected 1 to 1000, got {lines}")
    if gpu_timeout_s <= 0:
        raise UsageError("--gpu-timeout must be positive")
    return options.model_copy(
        update={
            "logs": tuple(globs),
            "expected_logs": tuple(expected),
            "log_lines": lines,
            "gpu_timeout_s": gpu_timeout_s,
        }
    )
