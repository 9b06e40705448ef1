"""The tracker the settings name, with credentials from the environment."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from typing import TextIO

from forensics.core.errors import UsageError
from forensics.core.ticket_settings import TicketSettings
from forensics.tickets import github, gitlab
from forensics.tickets.http import Auth, HttpClient
from forensics.tickets.jira import Jira, jira_auth
from forensics.tickets.tracker import Tracker

# A dry run needs no credentials; the header shows this (masked) in their place.
UNSET = "(not set)"


def make_tracker(
    settings: TicketSettings,
    *,
    dry_run: bool = False,
    out: TextIO | None = None,
    environ: Mapping[str, str] | None = None,
    for_new_issues: bool = False,
) -> Tracker:
    env = os.environ if environ is None else environ
    if settings.github:
        auth = _placeholder(github.github_auth, _token(env, github.TOKEN_ENV, dry_run))
        client = HttpClient("github", auth, dry_run=dry_run, out=out)
        return github.GitHub(settings.github, client, settings.api_url or github.API_URL)
    if settings.gitlab:
        auth = _placeholder(gitlab.gitlab_auth, _token(env, gitlab.TOKEN_ENV, dry_run))
        client = HttpClient("gitlab", auth, dry_run=dry_run, out=out)
        return gitlab.GitLab(settings.gitlab, client, settings.api_url or gitlab.API_URL)
    assert settings.jira is not None
    if for_new_issues and not settings.jira_project:
        raise UsageError("--jira-project: needed to open Jira issues (a project key such as OPS)")
    pat, user, token = env.get("JIRA_PAT"), env.get("JIRA_USER"), env.get("JIRA_TOKEN")
    if dry_run and not pat and not (user and token):
        auth = dataclasses.replace(jira_auth(None, None, UNSET), secrets=())
    else:
        auth = jira_auth(user, token, pat)
    client = HttpClient("jira", auth, dry_run=dry_run, out=out)
    return Jira(settings.jira, client, api=settings.jira_api, project=settings.jira_project)


def _token(env: Mapping[str, str], name: str, dry_run: bool) -> str:
    value = env.get(name, "").strip()
    if value:
        return value
    if dry_run:
        return UNSET
    raise UsageError(f"{name} is not set: export a token for the tracker (see docs/TICKETS.md)")


def _placeholder(make: Callable[[str], Auth], token: str) -> Auth:
    """The tracker's auth; under a dry run without a token, one that hides nothing."""
    auth = make(token)
    return dataclasses.replace(auth, secrets=()) if token == UNSET else auth
