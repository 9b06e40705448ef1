"""Jira: attach the pack and the HTML report to an issue and comment (REST API v2 or v3).

``POST /rest/api/{2|3}/issue/{KEY}/attachments`` (multipart, one ``file`` field per file,
header ``X-Atlassian-Token: no-check``) answers 200 with the attachments; then
``POST /rest/api/{2|3}/issue/{KEY}/comment`` with ``{"body"}``: wiki markup in v2 (Jira Data
Center and Server), an Atlassian Document Format ``doc`` in v3 (Jira Cloud). Without
``--jira-api``, ``GET /rest/api/2/serverInfo`` decides: ``deploymentType`` "Cloud" means v3.
A new issue (sweeps): ``POST /rest/api/{2|3}/issue`` with ``fields`` project, summary,
issuetype, labels and description. Credentials: ``JIRA_PAT`` (a Data Center personal access
token, ``Authorization: Bearer``) or ``JIRA_USER`` + ``JIRA_TOKEN`` (an Atlassian API token,
Basic); the account needs Browse projects, Add comments and Create attachments (and Create
issues for sweeps).
"""

from __future__ import annotations

import base64
import sys
from collections.abc import Sequence
from typing import Any

from forensics.core.errors import UsageError
from forensics.core.ticket_settings import ApiVersion
from forensics.tickets.body import Document, adf, jira_wiki
from forensics.tickets.http import Auth, HttpClient, Request
from forensics.tickets.tracker import Links, Message, Posted

BODY_LIMIT = 32_767
SUMMARY_LIMIT = 255
SCOPES = "Browse projects, Add comments and Create attachments on the project"


def jira_auth(user: str | None, token: str | None, pat: str | None) -> Auth:
    if pat:
        return Auth("Authorization", f"Bearer {pat}", (pat,), source="JIRA_PAT", scopes=SCOPES)
    if user and token:
        pair = base64.b64encode(f"{user}:{token}".encode()).decode()
        return Auth(
            "Authorization",
            f"Basic {pair}",
            (token, pair),
            source="JIRA_USER and JIRA_TOKEN",
            scopes=SCOPES,
        )
    raise UsageError(
        "Jira credentials: set JIRA_PAT (personal access token) or JIRA_USER and JIRA_TOKEN "
        "(API token)"
    )


class Jira:
    name = "jira"

    def __init__(
        self,
        url: str,
        http: HttpClient,
        api: ApiVersion | None = None,
        project: str | None = None,
        issue_type: str = "Bug",
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"--jira: expected the server's URL (https://...), got {url!r}")
        self.url = url.rstrip("/")
        self.http = http
        self.project = project
        self.issue_type = issue_type
        self.destination = f"jira:{self.url}"
        self._api = api

    @property
    def api(self) -> ApiVersion:
        """The REST API version: as given, else what serverInfo says (Cloud: 3)."""
        if self._api is None:
            response = self.http.send(
                Request("GET", f"{self.url}/rest/api/2/serverInfo", what="the Jira server")
            )
            if response is None:
                sys.stderr.write(
                    "forensics: dry run: assuming REST API v2; pass --jira-api 3 for Cloud\n"
                )
                self._api = "2"
            else:
                cloud = response.json().get("deploymentType") == "Cloud"
                self._api = "3" if cloud else "2"
        return self._api

    def comment(self, issue: str, message: Message) -> Posted:
        if not issue.replace("-", "").isalnum() or "-" not in issue:
            raise UsageError(f"--issue: a Jira issue key such as OPS-42, got {issue!r}")
        links = self._attach(issue, message)
        response = self.http.send(
            Request(
                "POST",
                f"{self.url}/rest/api/{self.api}/issue/{issue}/comment",
                what=f"issue {issue}",
                json={"body": self._body(message.document(links))},
            )
        )
        url = f"{self.url}/browse/{issue}"
        if response is not None and response.json().get("id"):
            url += f"?focusedCommentId={response.json()['id']}"
        return Posted(self.name, issue, "commented on", url, issue)

    def open(self, message: Message, labels: Sequence[str]) -> Posted:
        if not self.project:
            raise UsageError(
                "--jira-project: needed to open Jira issues (a project key such as OPS)"
            )
        document = message.document({attachment.name: None for attachment in message.attachments})
        fields: dict[str, Any] = {
            "project": {"key": self.project},
            "summary": document.title.replace("\n", " ")[:SUMMARY_LIMIT],
            "issuetype": {"name": self.issue_type},
            "labels": [label.replace(" ", "-") for label in labels],
            "description": self._body(document),
        }
        response = self.http.send(
            Request(
                "POST",
                f"{self.url}/rest/api/{self.api}/issue",
                what=f"project {self.project}",
                json={"fields": fields},
            )
        )
        key = str(response.json().get("key")) if response is not None else f"{self.project}-(new)"
        self._attach(key, message)
        if response is None:
            return Posted(self.name, key, "would open")
        return Posted(self.name, key, "opened", f"{self.url}/browse/{key}", key)

    def _attach(self, issue: str, message: Message) -> Links:
        if message.attachments:
            self.http.send(
                Request(
                    "POST",
                    f"{self.url}/rest/api/{self.api}/issue/{issue}/attachments",
                    what=f"issue {issue}",
                    headers={"X-Atlassian-Token": "no-check"},
                    files=[("file", attachment) for attachment in message.attachments],
                )
            )
        return {attachment.name: None for attachment in message.attachments}

    def _body(self, document: Document) -> Any:
        return adf(document, BODY_LIMIT) if self.api == "3" else jira_wiki(document, BODY_LIMIT)
