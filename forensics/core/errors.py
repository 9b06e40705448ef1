"""One exception type per failure the operator can act on; the CLI maps each to one line.

Exit statuses (documented in the README and ``forensics --help``):
0 collected, nothing at or above ``--fail-on``; 1 collected with such a finding;
2 usage or configuration error; 3 could not collect.
"""

from __future__ import annotations

from forensics.core.models import CollectStatus

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_NOT_COLLECTED = 3


class ForensicsError(Exception):
    """Base: a message for a tired human, and the exit status that goes with it."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UsageError(ForensicsError):
    """Bad command line, target or configuration: nothing was attempted."""


class BundleError(ForensicsError):
    """A bundle directory that is missing, incomplete or not ours."""


class CollectionError(ForensicsError):
    """The host could not be collected; ``status`` says how it failed."""

    exit_code = EXIT_NOT_COLLECTED
    status: CollectStatus = CollectStatus.unreachable


class Unreachable(CollectionError):
    status = CollectStatus.unreachable


class AuthRefused(CollectionError):
    status = CollectStatus.auth_failed


class HostKeyRejected(CollectionError):
    """Unknown host key under strict checking, or a key that changed."""

    status = CollectStatus.host_key_rejected


class DeadlineExceeded(CollectionError):
    """The deadline passed before any section came back."""

    status = CollectStatus.timeout
