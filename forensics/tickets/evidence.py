"""What goes with a ticket: a verified pack, its report and the HTML page to attach.

A bundle directory is packed first (redacted unless told otherwise); an existing pack is
verified, and refused when any file no longer matches, so that what a ticket says and what
it attaches are the packed, redacted evidence and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from forensics.core.errors import BundleError
from forensics.evidence.pack import REPORT_HTML, REPORT_JSON, pack
from forensics.evidence.verify import read_member, verify
from forensics.judge.host_report import HostReport
from forensics.tickets.body import Document, report_document
from forensics.tickets.http import Attachment
from forensics.tickets.tracker import Links, Message


@dataclass(frozen=True)
class Evidence:
    archive: Path
    directory: str
    report: HostReport
    html: bytes

    def attachments(self) -> tuple[Attachment, Attachment]:
        return (
            Attachment(self.archive.name, self.archive.read_bytes(), "application/gzip"),
            Attachment(f"{self.directory}.html", self.html, "text/html"),
        )

    def message(self, archive_url: str | None = None) -> Message:
        return Message(self.document(archive_url), self.attachments())

    def document(self, archive_url: str | None) -> Callable[[Links], Document]:
        def write(links: Links) -> Document:
            shown = dict(links)
            if archive_url:
                shown[self.archive.name] = archive_url
            return report_document(self.report, self.archive.name, shown)

        return write


def gather(
    source: Path,
    output: Path | None = None,
    *,
    redact: bool = True,
    obfuscate_hosts: bool = False,
    say: Callable[[str], None] = lambda line: None,
) -> Evidence:
    """Pack ``source`` (a bundle directory) or verify it (a pack)."""
    if source.is_dir():
        packed = pack(source, output, redact=redact, obfuscate_hosts=obfuscate_hosts)
        counts = ", ".join(f"{kind} {n}" for kind, n in packed.manifest.redactions.items())
        say(f"packed {packed.archive} (redacted: {counts or 'nothing found'})")
        if packed.host_map is not None:
            say(f"host pseudonyms: {packed.host_map} (mode 0600, not in the pack)")
        archive = packed.archive
    elif source.is_file():
        archive = source
    else:
        raise BundleError(f"{source}: no such bundle directory or pack")
    checked = verify(archive)
    if not checked.ok:
        raise BundleError(f"{archive}: fails verification: {checked.problems[0]}; not posted")
    try:
        report = HostReport.model_validate_json(read_member(archive, REPORT_JSON))
        html = read_member(archive, REPORT_HTML)
    except (KeyError, ValidationError) as error:
        raise BundleError(
            f"{archive}: the pack has no readable {REPORT_JSON} and {REPORT_HTML}"
        ) from error
    return Evidence(archive, checked.manifest.directory, report, html)
