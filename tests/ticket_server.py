"""A loopback HTTP server that answers like GitHub, GitLab and Jira for the endpoints the
tickets use, checks credentials like they do, and records every request.

The request and response shapes follow the public REST documentation of each tracker
(GitHub: issues and issue comments; GitLab v4: project uploads, issues and notes; Jira REST
v2/v3: serverInfo, issue, comment, attachments); the values are our own. ``script`` makes
the next requests answer a chosen status (401, 404, 413, 422, 429 with Retry-After, 500...).
"""

from __future__ import annotations

import base64
import email.parser
import email.policy
import itertools
import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Part:
    name: str
    filename: str | None
    content_type: str
    content: bytes


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    at: float

    def json(self) -> Any:
        return json.loads(self.body)

    def parts(self) -> list[Part]:
        """The multipart/form-data body, parsed by the standard library's MIME parser."""
        head = f"Content-Type: {self.headers['content-type']}\r\n\r\n".encode()
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + self.body)
        parts = []
        for part in message.iter_parts():
            disposition = part.get("Content-Disposition", "")
            name = re.search(r'\bname="([^"]*)"', disposition)
            parts.append(
                Part(
                    name=name.group(1) if name else "",
                    filename=part.get_filename(),
                    content_type=part.get_content_type(),
                    content=part.get_payload(decode=True) or b"",
                )
            )
        return parts


@dataclass
class Scripted:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Credentials:
    github_token: str = "ghp_T0kenForTheLoopbackServer0000000001"
    gitlab_token: str = "glpat-T0kenForTheLoopback0002"
    jira_user: str = "oncall@example.test"
    jira_token: str = "jiraApiT0kenLoopback0003"
    jira_pat: str = "jiraPatT0kenLoopback0004"

    def all(self) -> list[str]:
        return [self.github_token, self.gitlab_token, self.jira_token, self.jira_pat]


class TicketServer:
    def __init__(self, jira_deployment: str = "Server") -> None:
        self.credentials = Credentials()
        self.jira_deployment = jira_deployment
        self.requests: list[Recorded] = []
        self.scripted: deque[Scripted] = deque()
        self._numbers = itertools.count(101)
        self._lock = threading.Lock()
        self.held = threading.Event()
        self._hold: threading.Event | None = None
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> TicketServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def script(self, status: int, body: Any = None, times: int = 1, **headers: str) -> None:
        """The next ``times`` requests answer ``status`` whatever they ask."""
        for _ in range(times):
            self.scripted.append(
                Scripted(status, body, {k.replace("_", "-"): v for k, v in headers.items()})
            )

    def hold(self) -> None:
        """From now on, hold every request unanswered until ``release`` (a tracker that
        hangs); ``held`` is set once one is waiting."""
        self._hold = threading.Event()

    def release(self) -> None:
        if self._hold is not None:
            self._hold.set()

    def wait_if_held(self) -> None:
        hold = self._hold
        if hold is not None:
            self.held.set()
            hold.wait(120)

    def clear(self) -> None:
        self.requests.clear()
        self.scripted.clear()

    # The routes: (method, path pattern) -> handler returning (status, JSON body).

    def respond(self, request: Recorded) -> tuple[int, Any, dict[str, str]]:
        with self._lock:
            self.requests.append(request)
            if self.scripted:
                answer = self.scripted.popleft()
                return answer.status, answer.body, answer.headers
        for method, pattern, handler in _ROUTES:
            match = re.fullmatch(pattern, request.path)
            if match and method == request.method:
                refused = self._refuse(request, pattern)
                if refused is not None:
                    return refused
                status, body = handler(self, request, **match.groupdict())
                return status, body, {}
        return 404, {"message": "Not Found"}, {}

    def _refuse(self, request: Recorded, pattern: str) -> tuple[int, Any, dict[str, str]] | None:
        headers = request.headers
        if pattern.startswith("/repos"):
            if headers.get("authorization") != f"Bearer {self.credentials.github_token}":
                return 401, {"message": "Bad credentials"}, {}
        elif pattern.startswith("/api/v4"):
            if headers.get("private-token") != self.credentials.gitlab_token:
                return 401, {"message": "401 Unauthorized"}, {}
        elif pattern.startswith("/rest/api"):
            pair = f"{self.credentials.jira_user}:{self.credentials.jira_token}".encode()
            allowed = {
                f"Basic {base64.b64encode(pair).decode()}",
                f"Bearer {self.credentials.jira_pat}",
            }
            if "serverInfo" not in pattern and headers.get("authorization") not in allowed:
                return 401, {"errorMessages": ["You are not authenticated."], "errors": {}}, {}
            if pattern.endswith("attachments") and headers.get("x-atlassian-token") != "no-check":
                return 403, {"errorMessages": ["XSRF check failed"], "errors": {}}, {}
        return None

    def _github_comment(self, request: Recorded, repo: str, number: str) -> tuple[int, Any]:
        body = request.json().get("body")
        if not isinstance(body, str) or not body:
            return 422, {"message": "Validation Failed", "errors": [{"field": "body"}]}
        comment = next(self._numbers)
        return 201, {
            "id": comment,
            "body": body,
            "html_url": f"{self.url}/{repo}/issues/{number}#issuecomment-{comment}",
        }

    def _github_issue(self, request: Recorded, repo: str) -> tuple[int, Any]:
        data = request.json()
        if not data.get("title"):
            return 422, {"message": "Validation Failed", "errors": [{"field": "title"}]}
        number = next(self._numbers)
        return 201, {
            "number": number,
            "title": data["title"],
            "html_url": f"{self.url}/{repo}/issues/{number}",
        }

    def _gitlab_upload(self, request: Recorded, project: str) -> tuple[int, Any]:
        files = [part for part in request.parts() if part.name == "file"]
        if len(files) != 1 or not files[0].filename:
            return 400, {"error": "file is missing"}
        secret = f"{next(self._numbers):032x}"
        name = files[0].filename
        return 201, {
            "id": int(secret, 16),
            "alt": name,
            "url": f"/uploads/{secret}/{name}",
            "full_path": f"/-/project/7/uploads/{secret}/{name}",
            "markdown": f"[{name}](/uploads/{secret}/{name})",
        }

    def _gitlab_note(self, request: Recorded, project: str, iid: str) -> tuple[int, Any]:
        return 201, {
            "id": next(self._numbers),
            "body": request.json()["body"],
            "noteable_iid": int(iid),
        }

    def _gitlab_issue(self, request: Recorded, project: str) -> tuple[int, Any]:
        iid = next(self._numbers)
        return 201, {
            "iid": iid,
            "title": request.json()["title"],
            "web_url": f"{self.url}/{project}/-/issues/{iid}",
        }

    def _jira_server_info(self, request: Recorded, version: str) -> tuple[int, Any]:
        return 200, {
            "baseUrl": self.url,
            "version": "1001.0.0" if self.jira_deployment == "Cloud" else "9.12.4",
            "deploymentType": self.jira_deployment,
            "serverTitle": "Jira",
        }

    def _jira_attachments(self, request: Recorded, version: str, key: str) -> tuple[int, Any]:
        files = [part for part in request.parts() if part.name == "file"]
        return 200, [
            {
                "id": str(next(self._numbers)),
                "filename": part.filename,
                "size": len(part.content),
                "mimeType": part.content_type,
                "content": f"{self.url}/secure/attachment/{part.filename}",
            }
            for part in files
        ]

    def _jira_comment(self, request: Recorded, version: str, key: str) -> tuple[int, Any]:
        body = request.json().get("body")
        wanted = dict if version == "3" else str
        if not isinstance(body, wanted):
            return 400, {"errorMessages": [], "errors": {"comment": "Comment body is not valid."}}
        comment = str(next(self._numbers))
        return 201, {
            "id": comment,
            "self": f"{self.url}/rest/api/{version}/issue/{key}/comment/{comment}",
        }

    def _jira_issue(self, request: Recorded, version: str) -> tuple[int, Any]:
        fields = request.json().get("fields", {})
        if not fields.get("summary"):
            return 400, {
                "errorMessages": [],
                "errors": {"summary": "You must specify a summary of the issue."},
            }
        number = next(self._numbers)
        key = f"{fields['project']['key']}-{number}"
        return 201, {
            "id": str(number),
            "key": key,
            "self": f"{self.url}/rest/api/{version}/issue/{number}",
        }


_REPO = r"/repos/(?P<repo>[^/]+/[^/]+)"
_PROJECT = r"/api/v4/projects/(?P<project>[^/]+)"
_JIRA = r"/rest/api/(?P<version>[23])"
_KEY = r"(?P<key>[A-Z][A-Z0-9]*-\d+)"
_ROUTES: list[tuple[str, str, Any]] = [
    ("POST", rf"{_REPO}/issues/(?P<number>\d+)/comments", TicketServer._github_comment),
    ("POST", rf"{_REPO}/issues", TicketServer._github_issue),
    ("POST", rf"{_PROJECT}/uploads", TicketServer._gitlab_upload),
    ("POST", rf"{_PROJECT}/issues/(?P<iid>\d+)/notes", TicketServer._gitlab_note),
    ("POST", rf"{_PROJECT}/issues", TicketServer._gitlab_issue),
    ("GET", rf"{_JIRA}/serverInfo", TicketServer._jira_server_info),
    ("POST", rf"{_JIRA}/issue/{_KEY}/attachments", TicketServer._jira_attachments),
    ("POST", rf"{_JIRA}/issue/{_KEY}/comment", TicketServer._jira_comment),
    ("POST", rf"{_JIRA}/issue", TicketServer._jira_issue),
]


def _handler(server: TicketServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._answer()

        def do_POST(self) -> None:
            self._answer()

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            recorded = Recorded(
                method=self.command,
                path=self.path,
                headers={name.lower(): value for name, value in self.headers.items()},
                body=body,
                at=time.monotonic(),
            )
            server.wait_if_held()
            status, answer, headers = server.respond(recorded)
            data = b"" if answer is None else json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler
