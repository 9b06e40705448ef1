"""Filing tickets once per host and finding: what sweeps (``tickets/sweep.py``) and the
flight recorder (``tickets/fired.py``) share.

A ticket is remembered by the finding's fingerprint and the tracker's destination in the
history (its ``tickets`` table), so a finding is opened once wherever it is seen again;
without a working history none is opened at all, since it could not be opened only once.
What is posted is the packed, redacted evidence (``tickets/evidence.py``) and nothing else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol, TextIO

from forensics.core.errors import ForensicsError
from forensics.core.models import Finding
from forensics.core.ticket_settings import TicketSettings
from forensics.fleet.fingerprint import TrackedFinding, fingerprint
from forensics.fleet.store import TicketRow
from forensics.tickets.body import Document
from forensics.tickets.evidence import Evidence
from forensics.tickets.tracker import Message, Tracker
from forensics.tickets.trackers import make_tracker

Say = Callable[[str], None]


class TicketMemory(Protocol):
    """The part of a ``HistoryStore`` that remembers tickets."""

    @property
    def available(self) -> bool: ...

    def ticket(self, fingerprint: str, destination: str) -> TicketRow | None: ...

    def record_ticket(self, ticket: TicketRow) -> None: ...


@dataclass
class Filing:
    history: TicketMemory
    say: Say
    dry_run: bool = False
    out: TextIO | None = None
    environ: Mapping[str, str] | None = None
    trackers: dict[TicketSettings, Tracker] = field(default_factory=dict)

    def usable(self, host: str) -> bool:
        """Whether tickets can be remembered; says why not, naming ``host``."""
        if not self.history.available:
            self.say(f"{host}: no tickets: the history is off, so none could be opened once")
        return self.history.available

    def tracker(self, settings: TicketSettings) -> Tracker:
        """The tracker of ``settings``, made once (``UsageError`` when its credentials are
        not in the environment)."""
        if settings not in self.trackers:
            self.trackers[settings] = new_tracker(settings, self.dry_run, self.out, self.environ)
        return self.trackers[settings]

    def known(self, tracker: Tracker, tracked: TrackedFinding) -> TicketRow | None:
        return self.history.ticket(tracked.fingerprint, tracker.destination)

    def open(
        self,
        tracker: Tracker,
        settings: TicketSettings,
        host: str,
        tracked: TrackedFinding,
        message: Message,
    ) -> None:
        """Open a ticket about ``tracked`` and remember it (not under a dry run)."""
        posted = tracker.open(message, settings.labels)
        self.say(posted.line())
        if posted.key is not None and not self.dry_run:
            self.history.record_ticket(
                TicketRow(
                    fingerprint=tracked.fingerprint,
                    destination=tracker.destination,
                    host=host,
                    finding_id=tracked.id,
                    issue=posted.key,
                    url=posted.url,
                    opened=datetime.now(UTC),
                )
            )

    def comment(self, tracker: Tracker, issue: str, message: Message) -> None:
        self.say(tracker.comment(issue, message).line())

    def remember(self, ticket: TicketRow, resolved: datetime | None) -> None:
        if not self.dry_run:
            self.history.record_ticket(dataclasses.replace(ticket, resolved=resolved))


def new_tracker(
    settings: TicketSettings,
    dry_run: bool = False,
    out: TextIO | None = None,
    environ: Mapping[str, str] | None = None,
) -> Tracker:
    """A tracker that may open issues; ``UsageError`` when the environment lacks its
    credentials (or Jira its project)."""
    return make_tracker(settings, dry_run=dry_run, out=out, environ=environ, for_new_issues=True)


def packed_finding(evidence: Evidence, tracked: TrackedFinding, host: str) -> Finding:
    """The finding as packed (redacted), matched by fingerprint, else by id."""
    packed = evidence.report.findings
    for finding in packed:
        if fingerprint(finding, host) == tracked.fingerprint:
            return finding
    same = [f for f in packed if f.id == tracked.id]
    if not same:
        raise ForensicsError(f"{evidence.archive}: the pack has no {tracked.id} finding to ticket")
    return same[0]


def plain_message(document: Document) -> Message:
    """A comment without attachments."""
    return Message(lambda links: document)
