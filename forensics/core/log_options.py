"""Check the log and GPU options of ``collect`` (and an inventory's ``logs:``) before
anything runs on the host."""

from __future__ import annotations

from collections.abc import Sequence

from forensics.core.errors import UsageError
from forensics.core.models import CollectOptions


def log_path_problem(path: str) -> str | None:
    """Why ``path`` cannot name a log on the host, or None. The script runs in a private
    temp dir there, so a relative path would mean nothing.

    >>> log_path_problem("~/bench*.log") is None
    True
    >>> log_path_problem("bench.log")
    'give an absolute path or one starting with ~/'
    """
    if not (path.startswith("/") or path.startswith("~/")) or "\n" in path:
        return "give an absolute path or one starting with ~/"
    return None


def log_options(
    options: CollectOptions,
    globs: Sequence[str],
    expected: Sequence[str],
    lines: int,
    gpu_timeout_s: float,
) -> CollectOptions:
    """``options`` with the logs to read; a path ``log_path_problem`` refuses is an error.

    >>> log_options(CollectOptions(), ["~/b*.log"], ["/var/log/s.log"], 20, 5).logs
    ('~/b*.log',)
    >>> log_options(CollectOptions(), ["bench.log"], [], 50, 30)
    Traceback (most recent call last):
    ...
    forensics.core.errors.UsageError: --log 'bench.log': give an absolute path or one starting ...
    """
    for flag, paths in (("--log", globs), ("--expect-log", expected)):
        for path in paths:
            problem = log_path_problem(path)
            if problem is not None:
                raise UsageError(f"{flag} {path!r}: {problem}")
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
