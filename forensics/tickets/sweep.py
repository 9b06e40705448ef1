"""Tickets from sweeps: one per host and finding, never two, and a word when it resolves.

After a sweep, for each collected host whose settings (the command line's, else its
inventory group's ``tickets:``) name a tracker: every finding at or above ``on`` that has no
ticket at that tracker yet gets a new issue with the host's redacted pack (a finding whose
ticket failed is tried again next sweep); a ticketed finding that the sweep saw resolved
(its evidence read again in full) gets a comment, and one that comes back after that gets
another. The history database remembers tickets by finding fingerprint and destination.
Without a working history no ticket is opened: it could not be opened only once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from forensics.core.errors import ForensicsError
from forensics.core.models import Finding
from forensics.core.ticket_settings import TicketSettings
from forensics.fleet.fingerprint import TrackedFinding, fingerprint
from forensics.fleet.inventory import ResolvedHost
from forensics.fleet.report import FleetReport, HostRun
from forensics.fleet.store import History, TicketRow
from forensics.tickets.body import (
    Document,
    finding_document,
    reappeared_document,
    resolved_document,
)
from forensics.tickets.evidence import Evidence, gather
from forensics.tickets.tracker import Links, Message, Posted, Tracker
from forensics.tickets.trackers import make_tracker

Say = Callable[[str], None]


@dataclass
class SweepTickets:
    history: History
    hosts: Mapping[str, ResolvedHost]
    say: Say
    settings: TicketSettings | None = None
    dry_run: bool = False
    out: TextIO | None = None
    environ: Mapping[str, str] | None = None
    _trackers: dict[TicketSettings, Tracker] = field(default_factory=dict)

    def after(self, report: FleetReport) -> int:
        """Ticket what ``report`` found; the number of hosts whose tickets failed."""
        failed = 0
        for row in report.hosts:
            host = self.hosts.get(row.name)
            settings = self.settings or (host.tickets if host is not None else None)
            if settings is None or row.report is None or row.changes is None:
                continue
            if not self.history.available:
                self.say(
                    f"{row.name}: no tickets: the history is off, so none could be opened once"
                )
                continue
            try:
                self._host(row, settings, report.sweep_id)
            except ForensicsError as error:
                self.say(f"{row.name}: tickets: {error.message}")
                failed += 1
        return failed

    def _tracker(self, settings: TicketSettings) -> Tracker:
        if settings not in self._trackers:
            self._trackers[settings] = make_tracker(
                settings,
                dry_run=self.dry_run,
                out=self.out,
                environ=self.environ,
                for_new_issues=True,
            )
        return self._trackers[settings]

    def _host(self, row: HostRun, settings: TicketSettings, sweep_id: str) -> None:
        assert row.changes is not None and row.report is not None
        tracker = self._tracker(settings)
        evidence: Evidence | None = None
        for tracked in [*row.changes.new, *row.changes.still]:
            if tracked.severity.rank < settings.on.rank:
                continue
            existing = self.history.ticket(tracked.fingerprint, tracker.destination)
            if existing is not None:
                if existing.resolved is not None and existing.issue:
                    document = reappeared_document(row.name, tracked.title, tracked.id, sweep_id)
                    self._comment(tracker, existing.issue, document)
                    self._remember(existing, resolved=None)
                continue
            if row.bundle is None:
                continue
            evidence = evidence or gather(Path(row.bundle), say=self.say)
            finding = _packed_finding(evidence, tracked, row.name)
            posted = tracker.open(_finding_message(evidence, finding), settings.labels)
            self.say(posted.line())
            if posted.key is not None and not self.dry_run:
                self.history.record_ticket(
                    TicketRow(
                        fingerprint=tracked.fingerprint,
                        destination=tracker.destination,
                        host=row.name,
                        finding_id=tracked.id,
                        issue=posted.key,
                        url=posted.url,
                        opened=datetime.now(UTC),
                    )
                )
        for tracked in row.changes.resolved:
            existing = self.history.ticket(tracked.fingerprint, tracker.destination)
            if existing is None or existing.resolved is not None:
                continue
            document = resolved_document(row.name, tracked.title, tracked.id, sweep_id)
            self._comment(tracker, existing.issue, document)
            self._remember(existing, resolved=datetime.now(UTC))

    def _comment(self, tracker: Tracker, issue: str, document: Document) -> None:
        posted: Posted = tracker.comment(issue, Message(lambda links: document))
        self.say(posted.line())

    def _remember(self, ticket: TicketRow, resolved: datetime | None) -> None:
        if not self.dry_run:
            self.history.record_ticket(dataclasses.replace(ticket, resolved=resolved))


def _packed_finding(evidence: Evidence, tracked: TrackedFinding, host: str) -> Finding:
    """The finding as packed (redacted), matched by fingerprint, else by id."""
    packed = evidence.report.findings
    for finding in packed:
        if fingerprint(finding, host) == tracked.fingerprint:
            return finding
    same = [f for f in packed if f.id == tracked.id]
    if not same:
        raise ForensicsError(f"{evidence.archive}: the pack has no {tracked.id} finding to ticket")
    return same[0]


def _finding_message(evidence: Evidence, finding: Finding) -> Message:
    def write(links: Links) -> Document:
        return finding_document(evidence.report, finding, evidence.archive.name, links)

    return Message(write, evidence.attachments())
