"""Never two sweeps at once over the same output: an advisory lock on a file that says who
holds it. The kernel drops the lock when its holder dies, so a stale file never blocks."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import stat
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import IO

from forensics.core.errors import ForensicsError, UsageError
from forensics.core.exit_status import ExitStatus


class SweepLocked(ForensicsError):
    """Another sweep holds the lock; this one did nothing."""

    exit_code = ExitStatus.locked


class SweepLock:
    """``with SweepLock(path):`` holds the lock for the block, or raises ``SweepLocked``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: IO[str] | None = None

    def __enter__(self) -> SweepLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = _open_lock_file(self.path)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = _describe(handle.read())
            handle.close()
            raise SweepLocked(
                f"another sweep holds {self.path}: {holder}; it must finish first (or stop "
                "it with SIGTERM: it finishes its current sweep, then exits)"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(
            json.dumps(
                {
                    "pid": os.getpid(),
                    "host": socket.gethostname(),
                    "since": datetime.now(UTC).isoformat(timespec="seconds"),
                    "command": " ".join(["forensics", *sys.argv[1:]]),
                }
            )
            + "\n"
        )
        handle.flush()
        self._handle = handle
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._handle is not None:
            self._handle.seek(0)
            self._handle.truncate()
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None


def _open_lock_file(path: Path) -> IO[str]:
    """Open (or create) the lock file, refusing anything that is not one: it is rewritten
    while held, so a symlink, a device or a file with other content is never touched."""
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as error:
        raise UsageError(
            f"--lock {path}: cannot use it as a lock file ({error.strerror})"
        ) from error
    handle = os.fdopen(descriptor, "a+")
    status = os.fstat(descriptor)
    problem = None
    if not stat.S_ISREG(status.st_mode):
        problem = "is not a regular file"
    else:
        handle.seek(0)
        text = handle.read(4096)
        if text.strip() and _holder(text) is None:
            problem = "is not a sweep lock file (it has other content)"
    if problem is not None:
        handle.close()
        raise UsageError(f"--lock {path}: {problem}; left it untouched")
    return handle


def _holder(text: str) -> dict[str, object] | None:
    try:
        holder = json.loads(text)
    except ValueError:
        return None
    return holder if isinstance(holder, dict) and "pid" in holder else None


def _describe(text: str) -> str:
    """Who holds the lock, from what it wrote.

    >>> _describe('{"pid": 41, "host": "ops-1", "since": "2026-11-29T20:15:03+00:00", '
    ...           '"command": "forensics sweep --every 15m"}')
    'pid 41 on ops-1 since 2026-11-29T20:15:03+00:00 (forensics sweep --every 15m)'
    >>> _describe("")
    'a process that has not written its name yet'
    """
    try:
        holder = json.loads(text)
        return (
            f"pid {holder['pid']} on {holder['host']} since {holder['since']} ({holder['command']})"
        )
    except (ValueError, KeyError, TypeError):
        return "a process that has not written its name yet"
