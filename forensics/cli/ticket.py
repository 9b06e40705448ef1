"""``forensics ticket``: post what a bundle shows, with its redacted pack, to an issue."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from forensics.cli.messages import say
from forensics.cli.options import Given, declared_options
from forensics.core.errors import UsageError
from forensics.core.ticket_settings import TicketSettings


@declared_options(
    TicketSettings, only=[name for name in TicketSettings.model_fields if name != "on"]
)
def ticket_command(
    bundle: Annotated[
        Path, typer.Argument(metavar="BUNDLE", help="A bundle directory (packed first) or a pack.")
    ],
    issue: Annotated[
        str | None, typer.Option(help="Issue number (GitHub), IID (GitLab) or key (Jira).")
    ] = None,
    create: Annotated[
        bool, typer.Option("--create", help="Open a new issue titled by the headline instead.")
    ] = False,
    archive_url: Annotated[
        str | None, typer.Option(help="Where the pack can be fetched (GitHub cannot attach).")
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Where the pack goes (default BUNDLE.tar.gz)."),
    ] = None,
    no_redact: Annotated[
        bool, typer.Option("--no-redact", help="Post unredacted evidence (think twice).")
    ] = False,
    obfuscate_hosts: Annotated[
        bool, typer.Option("--obfuscate-hosts", help="Host names and addresses as pseudonyms.")
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Print each request (method, URL, headers with the token masked, body) and "
            "send nothing.",
        ),
    ] = False,
    *,
    given: Given,
) -> None:
    """Post the headline, the findings table, each finding's next steps and evidence, and
    the redacted pack to an issue (docs/TICKETS.md).

    Examples:

      forensics ticket BUNDLE --github acme/infra --issue 4211 --archive-url https://files/x.tar.gz

      forensics ticket BUNDLE --gitlab acme/infra --issue 17

      forensics ticket BUNDLE --jira https://acme.atlassian.net --issue INC-4211

      forensics ticket BUNDLE --github acme/infra --create --label incident --dry-run

    Exit status: 0 posted (or printed with --dry-run); 2 usage error or unusable bundle;
    4 the tracker refused or could not be reached (one line says why).
    """
    from forensics.tickets.evidence import gather
    from forensics.tickets.trackers import make_tracker

    settings = given.read(TicketSettings)
    if create == (issue is not None):
        raise UsageError("pass --issue to comment on an issue, or --create to open one (not both)")
    tracker = make_tracker(settings, dry_run=dry_run, for_new_issues=create)
    evidence = gather(
        bundle, output, redact=not no_redact, obfuscate_hosts=obfuscate_hosts, say=say
    )
    message = evidence.message(archive_url)
    if create:
        posted = tracker.open(message, settings.labels)
    else:
        assert issue is not None
        posted = tracker.comment(issue, message)
    if dry_run:
        say("dry run: nothing was sent")
    else:
        sys.stdout.write(posted.line() + "\n")
