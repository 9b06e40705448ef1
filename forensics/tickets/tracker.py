"""The one interface every ticket target implements; a new tracker is one module.

A tracker takes a ``Message``: the files to attach (trackers that cannot attach ignore
them) and a function that writes the document once it knows where the files went (GitLab's
upload URL, Jira's attachment names, GitHub's ``--archive-url``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from forensics.tickets.body import Document
from forensics.tickets.http import Attachment

# name of an attached file -> where it can be fetched (None: attached to the ticket itself)
Links = dict[str, str | None]


@dataclass(frozen=True)
class Message:
    document: Callable[[Links], Document]
    attachments: Sequence[Attachment] = field(default_factory=tuple)


@dataclass(frozen=True)
class Posted:
    """What was done: ``issue`` as people name it (``owner/repo#12``, ``OPS-7``), ``key`` as
    ``comment`` takes it (``12``, ``OPS-7``; None when nothing was sent)."""

    tracker: str
    issue: str
    action: str
    url: str | None = None
    key: str | None = None

    def line(self) -> str:
        return f"{self.tracker}: {self.action} {self.issue}" + (f": {self.url}" if self.url else "")


class Tracker(Protocol):
    name: str
    destination: str  # what the history remembers a ticket by, with the issue: "github:o/r"

    def comment(self, issue: str, message: Message) -> Posted:
        """Add a comment (and the attachments) to an existing issue."""
        ...

    def open(self, message: Message, labels: Sequence[str]) -> Posted:
        """Open a new issue titled by the document's title."""
        ...
