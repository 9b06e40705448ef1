"""Tickets from the flight recorder (``forensics arm --ticket-on``): each triggered bundle
filed as it is written, off the recorders' threads.

For each finding of the triggered report at or above ``on``: one that has no ticket at that
tracker yet gets a new issue, titled ``HOST: finding title``, with the bundle's redacted pack
attached and, first in the body, the events that fired; one already ticketed (by an earlier
fire, another recorder or a sweep sharing the history) gets a "Fired again" comment with
the new pack instead. Tickets are remembered in the history, as a sweep's are
(``tickets/filing.py``).

One thread files them in order, so a slow or refusing tracker never blinds a recorder: a
failure is one line on stderr naming the host and the tracker, the bundle stays where it was
written, and ``failed`` names the host for the command's exit status.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from forensics.core.errors import ForensicsError
from forensics.core.models import Finding
from forensics.core.ticket_settings import TicketSettings
from forensics.fleet.fingerprint import track
from forensics.fleet.history_location import open_history
from forensics.fleet.store import HistoryStore
from forensics.judge.host_report import HostReport
from forensics.probes.recorder import Event, RecorderFacts
from forensics.tickets.body import Document, fired_document
from forensics.tickets.evidence import Evidence, gather
from forensics.tickets.filing import Filing, Say, new_tracker, packed_finding
from forensics.tickets.tracker import Links, Message, Tracker

OpenHistory = Callable[[str | Path, Say], HistoryStore]


@dataclass(frozen=True)
class FiredBundle:
    """One triggered collection to ticket: ``report`` as collected (its findings are
    fingerprinted as a sweep's are), ``bundle`` the directory that is packed and posted."""

    host: str
    settings: TicketSettings
    bundle: Path
    report: HostReport


class FiredTickets:
    """``start()`` once (it checks every tracker's credentials and opens the history),
    ``submit`` each bundle as it fires, ``finish()`` to file what is left."""

    def __init__(
        self,
        history: str | Path,
        say: Say,
        *,
        dry_run: bool = False,
        out: TextIO | None = None,
        environ: Mapping[str, str] | None = None,
        opener: OpenHistory = open_history,
    ) -> None:
        self.history = history
        self.say = say
        self.dry_run = dry_run
        self.out = out
        self.environ = environ
        self.failed: list[str] = []
        self._opener = opener
        self._queue: queue.Queue[FiredBundle | None] = queue.Queue()
        self._trackers: dict[TicketSettings, Tracker] = {}
        self._opened = threading.Event()
        self._crash: BaseException | None = None
        self._filing: FiredBundle | None = None
        self._thread = threading.Thread(target=self._work, name="arm tickets", daemon=True)

    def start(self, settings: Iterable[TicketSettings]) -> None:
        """Make each tracker now (``UsageError``: a token is missing), before anything is
        armed rather than when it fires; open the history in the thread that uses it."""
        for chosen in settings:
            if chosen not in self._trackers:
                self._trackers[chosen] = new_tracker(chosen, self.dry_run, self.out, self.environ)
        self._thread.start()
        self._opened.wait()
        if self._crash is not None:
            raise self._crash

    def submit(self, host: str, settings: TicketSettings, report: HostReport) -> None:
        if report.bundle is None:
            self.say(f"{host}: ticket not filed: the collection wrote no bundle")
            self.failed.append(host)
            return
        self._queue.put(FiredBundle(host, settings, Path(report.bundle), report))

    def finish(self) -> None:
        """File what is queued and stop; a bug in the thread is raised here."""
        self._queue.put(None)
        self._thread.join()
        if self._crash is not None:
            raise self._crash

    def abandon(self) -> None:
        """Stopped before they were filed: say which bundles have no ticket, the one the
        tracker was still answering for first."""
        filing = self._filing
        if filing is not None:
            self.say(
                f"{filing.host}: ticket perhaps not filed: stopped while the tracker was "
                f"answering; the bundle is kept: {filing.bundle} (look for the ticket before "
                "filing it again with forensics ticket BUNDLE --create)"
            )
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if item is not None:
                self.say(
                    f"{item.host}: ticket not filed: stopped first; the bundle is kept: "
                    f"{item.bundle} (forensics ticket BUNDLE --create files it)"
                )

    def _work(self) -> None:
        try:
            store = self._opener(self.history, self.say)
        except BaseException as error:  # reported by finish(), in the command's thread
            self._crash = error
            self._opened.set()
            return
        self._opened.set()
        filing = Filing(store, self.say, self.dry_run, self.out, self.environ, self._trackers)
        try:
            while (item := self._queue.get()) is not None:
                self._filing = item
                self._file(filing, item)
                self._filing = None
        except BaseException as error:
            self._crash = error
        finally:
            store.close()

    def _file(self, filing: Filing, item: FiredBundle) -> None:
        if not filing.usable(item.host):
            self.failed.append(item.host)
            return
        try:
            _ticket(filing, item, self.say)
        except ForensicsError as error:
            self.say(
                f"{item.host}: ticket not filed: {error.message}; the bundle is kept: {item.bundle}"
            )
            self.failed.append(item.host)


def _ticket(filing: Filing, item: FiredBundle, say: Say) -> None:
    tracker = filing.tracker(item.settings)
    evidence: Evidence | None = None
    for tracked in track(item.report.findings, item.host):
        if tracked.severity.rank < item.settings.on.rank:
            continue
        evidence = evidence or gather(item.bundle, say=say)
        finding = packed_finding(evidence, tracked, item.host)
        existing = filing.known(tracker, tracked)
        if existing is not None and existing.issue:
            filing.comment(tracker, existing.issue, _message(evidence, finding, again=True))
            if existing.resolved is not None:
                filing.remember(existing, resolved=None)
        else:
            filing.open(tracker, item.settings, item.host, tracked, _message(evidence, finding))


def _message(evidence: Evidence, finding: Finding, again: bool = False) -> Message:
    recorded = evidence.report.facts.of(RecorderFacts)
    events: list[Event] = recorded.events if recorded is not None else []

    def write(links: Links) -> Document:
        return fired_document(
            evidence.report, finding, events, evidence.archive.name, links, again=again
        )

    return Message(write, evidence.attachments())
