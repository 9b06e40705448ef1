"""Tickets from sweeps: one per host and finding, never two, and a word when it resolves.

After a sweep, for each collected host whose settings (the command line's, else its
inventory group's ``tickets:``) name a tracker: every finding at or above ``on`` that has no
ticket at that tracker yet gets a new issue with the host's redacted pack (a finding whose
ticket failed is tried again next sweep); a ticketed finding that the sweep saw resolved
(its evidence read again in full) gets a comment, and one that comes back after that gets
another. The history database remembers tickets by finding fingerprint and destination
(``tickets/filing.py``, shared with the flight recorder's tickets).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from forensics.core.errors import ForensicsError
from forensics.core.models import Finding
from forensics.core.ticket_settings import TicketSettings
from forensics.fleet.inventory import ResolvedHost
from forensics.fleet.report import FleetReport, HostRun
from forensics.fleet.store import HistoryStore
from forensics.tickets.body import (
    Document,
    finding_document,
    reappeared_document,
    resolved_document,
)
from forensics.tickets.evidence import Evidence, gather
from forensics.tickets.filing import Filing, Say, packed_finding, plain_message
from forensics.tickets.tracker import Links, Message


@dataclass
class SweepTickets:
    history: HistoryStore
    hosts: Mapping[str, ResolvedHost]
    say: Say
    settings: TicketSettings | None = None
    dry_run: bool = False
    out: TextIO | None = None
    environ: Mapping[str, str] | None = None
    _filing: Filing = field(init=False)

    def __post_init__(self) -> None:
        self._filing = Filing(self.history, self.say, self.dry_run, self.out, self.environ)

    def after(self, report: FleetReport) -> int:
        """Ticket what ``report`` found; the number of hosts whose tickets failed."""
        failed = 0
        for row in report.hosts:
            host = self.hosts.get(row.name)
            settings = self.settings or (host.tickets if host is not None else None)
            if settings is None or row.report is None or row.changes is None:
                continue
            if not self._filing.usable(row.name):
                continue
            try:
                self._host(row, settings, report.sweep_id)
            except ForensicsError as error:
                self.say(f"{row.name}: tickets: {error.message}")
                failed += 1
        return failed

    def _host(self, row: HostRun, settings: TicketSettings, sweep_id: str) -> None:
        assert row.changes is not None and row.report is not None
        filing = self._filing
        tracker = filing.tracker(settings)
        evidence: Evidence | None = None
        for tracked in [*row.changes.new, *row.changes.still]:
            if tracked.severity.rank < settings.on.rank:
                continue
            existing = filing.known(tracker, tracked)
            if existing is not None:
                if existing.resolved is not None and existing.issue:
                    document = reappeared_document(row.name, tracked.title, tracked.id, sweep_id)
                    filing.comment(tracker, existing.issue, plain_message(document))
                    filing.remember(existing, resolved=None)
                continue
            if row.bundle is None:
                continue
            evidence = evidence or gather(Path(row.bundle), say=self.say)
            finding = packed_finding(evidence, tracked, row.name)
            filing.open(tracker, settings, row.name, tracked, _finding_message(evidence, finding))
        for tracked in row.changes.resolved:
            existing = filing.known(tracker, tracked)
            if existing is None or existing.resolved is not None:
                continue
            document = resolved_document(row.name, tracked.title, tracked.id, sweep_id)
            filing.comment(tracker, existing.issue, plain_message(document))
            filing.remember(existing, resolved=datetime.now(UTC))


def _finding_message(evidence: Evidence, finding: Finding) -> Message:
    def write(links: Links) -> Document:
        return finding_document(evidence.report, finding, evidence.archive.name, links)

    return Message(write, evidence.attachments())
