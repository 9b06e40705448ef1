"""``forensics verify``: check a pack against its PACK.json, extracting nothing."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from forensics.cli.messages import say
from forensics.core.exit_status import ExitStatus
from forensics.evidence.verify import verify


def verify_command(
    archive: Annotated[Path, typer.Argument(metavar="FILE.tar.gz", help="A pack.")],
) -> None:
    """Check every file of a pack against the sha256 in its PACK.json, in memory.

    Example: forensics verify 2026-11-29T20-15-03Z.tar.gz

    Exit status: 0 every file matches; 1 a file changed, is missing or is not listed;
    2 not a readable pack, or refused unread: a member with an absolute path, '..', a link
    (symbolic or hard), a device or FIFO.
    """
    result = verify(archive)
    for problem in result.problems:
        say(f"{archive}: {problem}")
    if not result.ok:
        say(f"{archive}: {len(result.problems)} problem(s); do not trust this pack")
        raise typer.Exit(ExitStatus.findings)
    manifest = result.manifest
    sys.stdout.write(
        f"ok: {result.checked} files match PACK.json ({manifest.directory}; "
        f"{'redacted' if manifest.redacted else 'NOT redacted'}"
        f"{', hosts obfuscated' if manifest.hosts_obfuscated else ''})\n"
    )
    raise typer.Exit(ExitStatus.ok)
