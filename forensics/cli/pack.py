"""``forensics pack``: a redacted tar.gz of a bundle, for a ticket or a colleague."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from forensics.cli.messages import say
from forensics.evidence.pack import pack


def pack_command(
    bundle: Annotated[Path, typer.Argument(metavar="BUNDLE", help="A bundle directory.")],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="The archive (default: BUNDLE.tar.gz beside it)."),
    ] = None,
    no_redact: Annotated[
        bool,
        typer.Option("--no-redact", help="Keep secrets in the pack (it stays on this machine)."),
    ] = False,
    obfuscate_hosts: Annotated[
        bool,
        typer.Option(
            "--obfuscate-hosts",
            help="Replace host names and IP addresses with stable pseudonyms; the map goes to "
            "ARCHIVE.hosts.json (mode 0600), never into the archive.",
        ),
    ] = False,
) -> None:
    """Pack a bundle into one tar.gz: raw evidence, manifest, findings JSON, Markdown and
    HTML reports, and PACK.json (sha256 of each file before and after, what was redacted
    by kind). Every file is redacted unless --no-redact; packing a pack changes nothing.

    Example: forensics pack forensics-bundles/gpu-a/2026-11-29T20-15-03Z --obfuscate-hosts

    Exit status: 0 packed; 2 not a bundle, its evidence changed, or the archive cannot be
    written.
    """
    packed = pack(bundle, output, redact=not no_redact, obfuscate_hosts=obfuscate_hosts)
    counts = ", ".join(f"{kind} {n}" for kind, n in packed.manifest.redactions.items())
    redacted = f"redacted: {counts or 'nothing found'}" if not no_redact else "NOT redacted"
    sys.stdout.write(f"{packed.archive}\n")
    say(f"packed {len(packed.manifest.files)} files into {packed.archive} ({redacted})")
    if packed.host_map is not None:
        say(f"host pseudonyms: {packed.host_map} (mode 0600, not in the pack)")
