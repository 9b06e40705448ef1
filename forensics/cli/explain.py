"""``forensics explain [ID]``: what a finding id means, from the catalogue."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from forensics.core.errors import UsageError
from forensics.judge.catalogue import CATALOGUE, lookup


def explain_command(
    finding_id: Annotated[
        str | None,
        typer.Argument(metavar="ID", help="A finding id, e.g. oom.killed; none lists them all."),
    ] = None,
) -> None:
    """Explain a finding id: severities, the question it answers, what it means, next steps.

    Examples:

      forensics explain                 # every id, its severities and question

      forensics explain init.not_reaping

    Exit status: 0 explained; 2 unknown id (with the nearest ids).
    """
    if finding_id is None:
        width = max(len(entry_id) for entry_id in CATALOGUE)
        for entry in CATALOGUE.values():
            severities = "/".join(s.value for s in entry.severities)
            sys.stdout.write(f"{entry.id:<{width}}  {severities:<16}  {entry.question}\n")
        return
    try:
        entry = lookup(finding_id)
    except KeyError as error:
        raise UsageError(str(error.args[0])) from None
    sys.stdout.write(entry.to_text() + "\n")
