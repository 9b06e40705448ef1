"""Every exit status the ``forensics`` command uses, in one place.

``forensics --help`` and the README document them; a command returns a member, never a
bare number.

>>> int(ExitStatus.findings), ExitStatus.by_signal("SIGTERM"), int(ExitStatus.tracker_refused)
(1, <ExitStatus.terminated: 143>, 4)
"""

from __future__ import annotations

import enum


class ExitStatus(enum.IntEnum):
    ok = 0
    """Collected (or the condition was met); nothing at or above ``--fail-on``."""
    findings = 1
    """Collected with a finding at or above ``--fail-on``; ``wait``: timed out; ``lint-script``:
    a masked exit status found; ``arm``: the flight recorder fired (a bundle was written)."""
    usage = 2
    """Bad command line, target, inventory or file: nothing was attempted."""
    not_collected = 3
    """Could not collect: unreachable, auth or sudo refused, host key, deadline."""
    locked = 4
    """Another sweep holds the history's lock."""
    tracker_refused = 4
    """``ticket``: the tracker refused the request or could not be reached; ``arm
    --ticket-on``: it fired and wrote the bundle, but a ticket could not be filed."""
    internal_error = 70
    """A bug (sysexits' EX_SOFTWARE); the message asks for a report."""
    interrupted = 130
    """Stopped by SIGINT (128 + 2)."""
    terminated = 143
    """Stopped by SIGTERM (128 + 15)."""

    @classmethod
    def by_signal(cls, name: str | None) -> ExitStatus:
        """The status of a run stopped by signal ``name`` (SIGINT when unknown)."""
        return cls.terminated if name == "SIGTERM" else cls.interrupted
