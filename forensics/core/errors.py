"""One exception type per failure the operator can act on; the CLI maps each to one line.

Exit statuses: ``forensics/core/exit_status.py``.
"""

from __future__ import annotations

from forensics.core.exit_status import ExitStatus
from forensics.core.models import CollectStatus


class ForensicsError(Exception):
    """Base: a message for a tired human, and the exit status that goes with it."""

    exit_code = ExitStatus.usage

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UsageError(ForensicsError):
    """Bad command line, target or configuration: nothing was attempted."""


class BundleError(ForensicsError):
    """A bundle directory that is missing, incomplete or not ours."""


class OutputUnwritable(ForensicsError):
    """The bundle could not be written (a full or read-only file system); nothing was kept."""


class Abandoned(ForensicsError):
    """A sweep stopped waiting for this host before its bundle was committed."""


class CollectionError(ForensicsError):
    """The host could not be collected; ``status`` says how it failed; ``bundle`` is the
    bundle that keeps what came back, when one was written."""

    exit_code = ExitStatus.not_collected
    status: CollectStatus = CollectStatus.unreachable
    bundle: str | None = None


class Unreachable(CollectionError):
    status = CollectStatus.unreachable


class AuthRefused(CollectionError):
    status = CollectStatus.auth_failed


class HostKeyRejected(CollectionError):
    """Unknown host key under strict checking, or a key that changed."""

    status = CollectStatus.host_key_rejected


class Interrupted(ForensicsError):
    """The operator stopped the run (SIGINT); the message says what was kept."""

    exit_code = ExitStatus.interrupted


class DeadlineExceeded(CollectionError):
    """The deadline passed before any section came back."""

    status = CollectStatus.timeout
