"""GitHub (and GitHub Enterprise Server): issue comments and new issues, REST API.

``POST /repos/{owner}/{repo}/issues/{number}/comments`` with ``{"body"}``, and
``POST /repos/{owner}/{repo}/issues`` with ``{"title", "body", "labels"}``; both answer
201 with ``html_url``. The REST API cannot attach files: the comment names the pack and
links ``--archive-url`` when given. Token: ``GITHUB_TOKEN``, sent as ``Authorization:
Bearer``; a classic token needs ``repo`` (``public_repo`` for a public repository), a
fine-grained one "Issues: read and write" on the repository.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from forensics.core.errors import UsageError
from forensics.tickets.body import markdown
from forensics.tickets.http import Auth, HttpClient, Request
from forensics.tickets.tracker import Message, Posted

API_URL = "https://api.github.com"
BODY_LIMIT = 65_536
TITLE_LIMIT = 256
TOKEN_ENV = "GITHUB_TOKEN"
SCOPES = "the repo scope (public_repo for a public repository), or Issues: read and write"
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


def github_auth(token: str) -> Auth:
    return Auth("Authorization", f"Bearer {token}", (token,), source=TOKEN_ENV, scopes=SCOPES)


class GitHub:
    name = "github"

    def __init__(self, repo: str, http: HttpClient, api_url: str = API_URL) -> None:
        if not _REPO.match(repo):
            raise UsageError(f"--github: expected OWNER/REPO, got {repo!r}")
        self.repo = repo
        self.http = http
        self.api_url = api_url.rstrip("/")
        self.destination = f"github:{api_url.rstrip('/')}/{repo}"

    def comment(self, issue: str, message: Message) -> Posted:
        if not issue.isdigit():
            raise UsageError(f"--issue: a GitHub issue number, got {issue!r}")
        body = markdown(message.document({}), BODY_LIMIT)
        response = self.http.send(
            Request(
                "POST",
                f"{self.api_url}/repos/{self.repo}/issues/{issue}/comments",
                what=f"issue {self.repo}#{issue}",
                headers=_HEADERS,
                json={"body": body},
            )
        )
        url = response.json().get("html_url") if response is not None else None
        return Posted(self.name, f"{self.repo}#{issue}", "commented on", url, issue)

    def open(self, message: Message, labels: Sequence[str]) -> Posted:
        document = message.document({})
        response = self.http.send(
            Request(
                "POST",
                f"{self.api_url}/repos/{self.repo}/issues",
                what=f"repository {self.repo}",
                headers=_HEADERS,
                json={
                    "title": document.title[:TITLE_LIMIT],
                    "body": markdown(document, BODY_LIMIT),
                    "labels": list(labels),
                },
            )
        )
        if response is None:
            return Posted(self.name, f"{self.repo}#(new)", "would open")
        data = response.json()
        number = str(data.get("number"))
        return Posted(self.name, f"{self.repo}#{number}", "opened", data.get("html_url"), number)


_HEADERS = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
