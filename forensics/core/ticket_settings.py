"""Where tickets go, as the command line or an inventory group (``tickets:``) says it.

Credentials are never settings: they come from the environment only (docs/TICKETS.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from forensics.core.models import Severity

ApiVersion = Literal["2", "3"]


class TicketSettings(BaseModel):
    """One tracker: exactly one of ``github``, ``gitlab`` or ``jira``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    on: Severity = Field(
        default=Severity.critical, description="Open a ticket for findings at least this severe."
    )
    github: str | None = Field(default=None, description="OWNER/REPO")
    gitlab: str | None = Field(default=None, description="Project id or GROUP/PROJECT path.")
    jira: str | None = Field(default=None, description="The Jira server's URL.")
    jira_project: str | None = Field(default=None, description="Project key for new issues.")
    jira_api: ApiVersion | None = Field(default=None, description="2 or 3; default: ask.")
    api_url: str | None = Field(default=None, description="GitHub Enterprise or GitLab API URL.")
    labels: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _one_tracker(self) -> TicketSettings:
        chosen = [name for name in ("github", "gitlab", "jira") if getattr(self, name)]
        if len(chosen) != 1:
            raise ValueError(
                f"name exactly one tracker (github, gitlab or jira), got {chosen or 'none'}"
            )
        return self
