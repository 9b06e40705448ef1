"""The ticket options ``sweep`` and ``arm`` share, declared once: where tickets go is
``TicketSettings`` (``@declared_options(..., TicketSettings)``: ``--ticket-on``,
``--github``, ``--gitlab``, ``--jira``, ``--jira-project``, ``--jira-api``, ``--api-url``,
``--label``), and whether to send them is ``--ticket-dry-run``."""

from __future__ import annotations

from typing import Annotated

import typer

from forensics.cli.options import Given
from forensics.core.ticket_settings import TicketSettings

TicketDryRun = Annotated[
    bool,
    typer.Option(
        "--ticket-dry-run",
        help="Print each ticket request (the token masked) instead of sending it.",
    ),
]


def chosen_tickets(given: Given) -> TicketSettings | None:
    """The tracker the command line names; None when no ticket option was typed (each
    host's inventory ``tickets:`` then). A bad value or combination is one usage line."""
    if not any(name in given.values for name in TicketSettings.model_fields):
        return None
    return given.read(TicketSettings)
