"""Where tickets go, as the command line or an inventory group (``tickets:``) says it.

One declaration for both: the fields are the ``--ticket-on``, ``--github``, ``--gitlab``,
``--jira``, ``--jira-project``, ``--jira-api``, ``--api-url`` and ``--label`` options of
``sweep`` and ``arm`` (``cli/options.py``; ``ticket`` takes all but ``--ticket-on``), and
the keys of an inventory's ``tickets:``.
Credentials are never settings: they come from the environment only (docs/TICKETS.md)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from forensics.core.declared import CommandLine
from forensics.core.models import Severity

ApiVersion = Literal["2", "3"]


class TicketSettings(BaseModel):
    """One tracker: exactly one of ``github``, ``gitlab`` or ``jira``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    on: Annotated[Severity, CommandLine(flag="--ticket-on", metavar="SEVERITY")] = Field(
        default=Severity.critical,
        description="Ticket each finding at least this severe (info, warning, critical): one "
        "ticket per host and finding.",
    )
    github: Annotated[str | None, CommandLine(metavar="OWNER/REPO")] = Field(
        default=None, description="Tickets go to this GitHub repository (token: GITHUB_TOKEN)."
    )
    gitlab: Annotated[str | None, CommandLine(metavar="PROJECT")] = Field(
        default=None,
        description="Tickets go to this GitLab project: id or GROUP/PROJECT (token: GITLAB_TOKEN).",
    )
    jira: Annotated[str | None, CommandLine(metavar="URL")] = Field(
        default=None,
        description="Tickets go to this Jira server (JIRA_PAT, or JIRA_USER and JIRA_TOKEN).",
    )
    jira_project: Annotated[str | None, CommandLine(metavar="KEY")] = Field(
        default=None, description="Jira project key for new issues, e.g. OPS."
    )
    jira_api: Annotated[ApiVersion | None, CommandLine(metavar="2|3")] = Field(
        default=None, description="Jira REST API 2 (wiki) or 3 (ADF); default: ask the server."
    )
    api_url: Annotated[str | None, CommandLine(metavar="URL")] = Field(
        default=None,
        description="API base: GitHub Enterprise (https://HOST/api/v3) or GitLab (/api/v4).",
    )
    labels: Annotated[tuple[str, ...], CommandLine(metavar="LABEL")] = Field(
        default=(), description="Label of each new issue."
    )

    @model_validator(mode="after")
    def _one_tracker(self) -> TicketSettings:
        chosen = [name for name in ("github", "gitlab", "jira") if getattr(self, name)]
        if len(chosen) != 1:
            raise ValueError(
                f"name exactly one tracker (github, gitlab or jira), got {chosen or 'none'}"
            )
        return self
