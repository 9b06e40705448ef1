"""GitLab: the pack as a project upload, linked from an issue note (REST API v4).

``POST /projects/:id/uploads`` (multipart, field ``file``) answers 201 with the upload's
``url`` (``/uploads/<secret>/<name>``, relative to the project); then
``POST /projects/:id/issues/:iid/notes`` with ``{"body"}`` links it, or
``POST /projects/:id/issues`` with ``{"title", "description", "labels"}`` opens an issue.
``:id`` is the numeric id or the URL-encoded path (``group%2Fproject``). Token:
``GITLAB_TOKEN`` in ``PRIVATE-TOKEN``; a personal, project or group access token with the
``api`` scope and at least the Reporter role (Guest cannot upload on private projects).
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

from forensics.core.errors import UsageError
from forensics.tickets.body import markdown
from forensics.tickets.http import Auth, HttpClient, Request
from forensics.tickets.tracker import Links, Message, Posted

API_URL = "https://gitlab.com/api/v4"
BODY_LIMIT = 1_000_000
TITLE_LIMIT = 255
TOKEN_ENV = "GITLAB_TOKEN"
SCOPES = "the api scope and at least the Reporter role on the project"


def gitlab_auth(token: str) -> Auth:
    return Auth("PRIVATE-TOKEN", token, (token,), source=TOKEN_ENV, scopes=SCOPES)


class GitLab:
    name = "gitlab"

    def __init__(self, project: str, http: HttpClient, api_url: str = API_URL) -> None:
        if not project.strip("/") or " " in project:
            raise UsageError(
                f"--gitlab: expected a project id or GROUP/PROJECT path, got {project!r}"
            )
        self.project = project.strip("/")
        self.http = http
        self.api_url = api_url.rstrip("/")
        self.destination = f"gitlab:{self.api_url}/{self.project}"
        self._base = f"{self.api_url}/projects/{quote(self.project, safe='')}"

    def comment(self, issue: str, message: Message) -> Posted:
        if not issue.isdigit():
            raise UsageError(f"--issue: a GitLab issue IID (the number after #), got {issue!r}")
        links = self._upload(message)
        response = self.http.send(
            Request(
                "POST",
                f"{self._base}/issues/{issue}/notes",
                what=f"issue {self.project}#{issue}",
                json={"body": markdown(message.document(links), BODY_LIMIT)},
            )
        )
        note = f" (note {response.json().get('id')})" if response is not None else ""
        return Posted(self.name, f"{self.project}#{issue}{note}", "commented on", key=issue)

    def open(self, message: Message, labels: Sequence[str]) -> Posted:
        links = self._upload(message)
        document = message.document(links)
        response = self.http.send(
            Request(
                "POST",
                f"{self._base}/issues",
                what=f"project {self.project}",
                json={
                    "title": document.title[:TITLE_LIMIT],
                    "description": markdown(document, BODY_LIMIT),
                    "labels": ",".join(labels),
                },
            )
        )
        if response is None:
            return Posted(self.name, f"{self.project}#(new)", "would open")
        data = response.json()
        iid = str(data.get("iid"))
        return Posted(self.name, f"{self.project}#{iid}", "opened", data.get("web_url"), iid)

    def _upload(self, message: Message) -> Links:
        links: Links = {}
        for attachment in message.attachments:
            response = self.http.send(
                Request(
                    "POST",
                    f"{self._base}/uploads",
                    what=f"project {self.project}",
                    files=[("file", attachment)],
                )
            )
            links[attachment.name] = (
                str(response.json().get("url"))
                if response is not None
                else f"/uploads/<secret>/{attachment.name}"
            )
        return links
