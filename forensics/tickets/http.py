"""The one HTTP client of the ticket trackers: timeouts, bounded retries, one-line errors,
``--dry-run``, and tokens that never show.

Retries: at most ``MAX_RETRIES`` more attempts, only on 429, 502, 503 and 504 (and on
GitHub's 403 with ``x-ratelimit-remaining: 0``), waiting what ``Retry-After`` (seconds or
an HTTP date) or GitHub's ``x-ratelimit-reset`` (epoch seconds) asks, else 1, 2, 4 s. A
wait longer than ``MAX_WAIT_S`` is not slept through: it is the error. A request that
timed out is not repeated: the server may have acted on it (a second comment).

Every error becomes ``TicketError`` (exit status 4) with one line naming the tracker, the
status, the method and URL, and what to do; the server's own words are redacted and any
token is masked before they are shown.
"""

from __future__ import annotations

import contextlib
import email.utils
import gzip
import hashlib
import json
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

import httpx

from forensics import __version__
from forensics.core.errors import ForensicsError
from forensics.core.escaping import inert, inert_json
from forensics.core.exit_status import ExitStatus
from forensics.core.redaction import redact

MAX_RETRIES = 3
MAX_WAIT_S = 120.0
RETRY_STATUSES = frozenset({429, 502, 503, 504})
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 60.0
MASK = "****"
_AUTH_HEADERS = ("authorization", "private-token")
_SIZE = re.compile(r"\d+(?:[.,]\d+)?\s*(?:[KMGT]i?B|[KMGT]B|bytes?|[KMG]\b)", re.IGNORECASE)


class TicketError(ForensicsError):
    """The tracker refused or could not be reached; nothing more was sent."""

    exit_code = ExitStatus.tracker_refused


@dataclass(frozen=True)
class Attachment:
    name: str
    content: bytes
    content_type: str = "application/octet-stream"


@dataclass(frozen=True)
class Request:
    """One call to a tracker. ``what`` names the thing it is about, for a 404."""

    method: str
    url: str
    what: str
    headers: dict[str, str] = field(default_factory=dict)
    json: Any = None
    files: Sequence[tuple[str, Attachment]] = ()


@dataclass(frozen=True)
class Auth:
    """A header that carries a credential; ``secrets`` are every form of it that must never
    be shown or sent in a body; ``source`` and ``scopes`` tell the user which one was
    refused and what it needs."""

    header: str
    value: str
    secrets: tuple[str, ...]
    source: str = ""
    scopes: str = ""


class HttpClient:
    """Sends ``Request``s for one tracker; ``dry_run`` prints them instead."""

    def __init__(
        self,
        tracker: str,
        auth: Auth,
        *,
        dry_run: bool = False,
        out: TextIO | None = None,
        sleep: Callable[[float], None] = time.sleep,
        timeout: httpx.Timeout | None = None,
    ) -> None:
        self.tracker = tracker
        self.auth = auth
        self.dry_run = dry_run
        self.out = out or sys.stdout
        self._sleep = sleep
        self._secrets = [secret for secret in auth.secrets if secret]
        self._client = httpx.Client(
            timeout=timeout or httpx.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S),
            headers={"User-Agent": f"forensics/{__version__}"},
            follow_redirects=False,
            trust_env=False,
        )

    def close(self) -> None:
        self._client.close()

    def send(self, request: Request) -> httpx.Response | None:
        """The response of a successful call; None under ``dry_run``."""
        self._refuse_own_secret(request)
        built = self._build(request)
        if self.dry_run:
            self.out.write(self._describe(request, built))
            self.out.flush()
            return None
        for attempt in range(MAX_RETRIES + 1):
            try:
                response = self._client.send(built)
            except httpx.TimeoutException as error:
                raise TicketError(
                    self.mask(
                        f"{self.tracker}: {request.method} {request.url} timed out "
                        f"({type(error).__name__}); not repeated, as the server may have acted "
                        "on it: check the ticket before running again"
                    )
                ) from None
            except httpx.HTTPError as error:
                raise TicketError(
                    self.mask(f"{self.tracker}: cannot reach {request.url}: {error}")
                ) from None
            if response.is_success:
                return response
            if attempt < MAX_RETRIES and _retryable(response):
                wait = _wait_seconds(response, attempt)
                if wait > MAX_WAIT_S:
                    raise TicketError(
                        f"{self.tracker}: {response.status_code} from {request.method} "
                        f"{request.url}: the server asks to wait {wait:.0f} s (over "
                        f"{MAX_WAIT_S:.0f} s); try again later"
                    )
                self._sleep(wait)
                built = self._build(request)
                continue
            raise self._error(request, response, retried=attempt)
        raise AssertionError("unreachable: the loop returns or raises")

    def mask(self, text: str) -> str:
        """Every form of the token replaced; used on everything this client shows."""
        for secret in sorted(self._secrets, key=len, reverse=True):
            text = text.replace(secret, MASK)
        return text

    def _refuse_own_secret(self, request: Request) -> None:
        """The credential must never travel in a body: not in the JSON, not in an attached
        file (a gzip attachment is searched decompressed)."""
        payloads = [json.dumps(request.json, ensure_ascii=False).encode()]
        for _, item in request.files:
            payloads.append(item.content)
            if item.content[:2] == b"\x1f\x8b":
                with contextlib.suppress(OSError, EOFError):
                    payloads.append(gzip.decompress(item.content))
        for secret in self._secrets:
            if any(secret.encode() in payload for payload in payloads):
                raise TicketError(
                    f"{self.tracker}: refusing to send {request.method} {request.url}: the "
                    f"credential from {self.auth.source} appears in what would be sent; "
                    "rotate it, and pack again"
                )

    def _build(self, request: Request) -> httpx.Request:
        headers = {**request.headers, self.auth.header: self.auth.value}
        if request.files:
            files = [
                (name, (item.name, item.content, item.content_type)) for name, item in request.files
            ]
            return self._client.build_request(
                request.method, request.url, headers=headers, files=files
            )
        if request.json is not None:
            return self._client.build_request(
                request.method, request.url, headers=headers, json=request.json
            )
        return self._client.build_request(request.method, request.url, headers=headers)

    def _describe(self, request: Request, built: httpx.Request) -> str:
        """Method, URL, headers (secrets masked) and body, as they would go on the wire;
        a file part is shown by name, type, size and sha256, not its bytes."""
        lines = [f"{built.method} {built.url}"]
        for name, value in built.headers.items():
            shown = _masked_header(name, value)
            lines.append(f"{_header_case(name)}: {shown}")
        lines.append("")
        if request.files:
            boundary = built.headers.get("content-type", "").partition("boundary=")[2]
            for field_name, item in request.files:
                digest = hashlib.sha256(item.content).hexdigest()
                lines.append(
                    f'--{boundary}\nContent-Disposition: form-data; name="{field_name}"; '
                    f'filename="{item.name}"\nContent-Type: {item.content_type}\n\n'
                    f"<{len(item.content)} bytes, sha256 {digest}>"
                )
            lines.append(f"--{boundary}--")
        elif request.json is not None:
            lines.append(inert_json(json.dumps(request.json, indent=2, ensure_ascii=False)))
        return self.mask(inert("\n".join(lines))) + "\n\n"

    def _error(self, request: Request, response: httpx.Response, retried: int) -> TicketError:
        status = response.status_code
        where = (
            f"{self.tracker}: {status} {response.reason_phrase} from {request.method} {request.url}"
        )
        said = self.mask(redact(_server_message(response)))
        if status in (401, 403):
            scopes = f"; it needs {self.auth.scopes}" if self.auth.scopes else ""
            text = f"{where}: the credentials in {self.auth.source} were refused{scopes}"
        elif status == 404:
            text = f"{where}: {request.what} not found, or the credentials cannot see it"
        elif status == 413:
            size = sum(len(item.content) for _, item in request.files)
            stated = _SIZE.search(said)
            limit = (
                f"the server's limit is {stated.group(0)}"
                if stated
                else "the server did not say its limit"
            )
            text = f"{where}: the upload is {_human_bytes(size)} ({size} bytes); {limit}"
        elif status == 422:
            text = f"{where}: the server said: {said or '(nothing)'}"
        elif status in RETRY_STATUSES:
            text = f"{where}: still {status} after {retried} retries; try again later"
        else:
            text = f"{where}" + (f": {said}" if said else "")
        if said and status in (401, 403, 404):
            text += f" (server: {said})"
        return TicketError(self.mask(text))


def _retryable(response: httpx.Response) -> bool:
    if response.status_code in RETRY_STATUSES:
        return True
    return response.status_code == 403 and response.headers.get("x-ratelimit-remaining") == "0"


def _wait_seconds(response: httpx.Response, attempt: int) -> float:
    """What the server asked for, else exponential backoff.

    >>> _wait_seconds(httpx.Response(429, headers={"Retry-After": "1"}), 0)
    1.0
    >>> _wait_seconds(httpx.Response(503), 2)
    4.0
    >>> reset = str(int(time.time()) + 5)  # GitHub: epoch seconds when the quota refills
    >>> 4.0 < _wait_seconds(httpx.Response(403, headers={"x-ratelimit-reset": reset}), 0) <= 7.0
    True
    """
    retry_after = response.headers.get("retry-after")
    if retry_after is not None:
        if retry_after.strip().isdigit():
            return float(retry_after.strip())
        try:
            moment = email.utils.parsedate_to_datetime(retry_after)
        except (TypeError, ValueError):
            moment = None
        if moment is not None:
            return max(0.0, (moment - datetime.now(UTC)).total_seconds())
    reset = response.headers.get("x-ratelimit-reset")
    if reset is not None and reset.strip().isdigit():
        return max(0.0, float(reset) - time.time()) + 1.0
    return float(2**attempt)


def _server_message(response: httpx.Response) -> str:
    """The server's own explanation, from the error shapes of GitHub, GitLab and Jira.

    >>> _server_message(httpx.Response(422, json={"message": "Validation Failed",
    ...     "errors": [{"resource": "Issue", "code": "invalid", "field": "labels"}]}))
    'Validation Failed: Issue labels invalid'
    >>> _server_message(httpx.Response(400, json={"errorMessages": [],
    ...     "errors": {"summary": "You must specify a summary of the issue."}}))
    'summary: You must specify a summary of the issue.'
    """
    try:
        data = response.json()
    except ValueError:
        text = response.text.strip().splitlines()
        return text[0][:300] if text else ""
    parts: list[str] = []
    if isinstance(data, dict):
        for key in ("message", "error", "error_description"):
            value = data.get(key)
            if isinstance(value, str):
                parts.append(value)
            elif isinstance(value, dict | list):
                parts.append(json.dumps(value, ensure_ascii=False))
        details = []
        for error in data.get("errors", []) if isinstance(data.get("errors"), list) else []:
            if isinstance(error, dict):
                details.append(
                    str(error.get("message"))
                    if error.get("message")
                    else " ".join(
                        str(error[k]) for k in ("resource", "field", "code") if k in error
                    )
                )
            else:
                details.append(str(error))
        if isinstance(data.get("errors"), dict):
            details.extend(f"{k}: {v}" for k, v in data["errors"].items())
        details.extend(str(m) for m in data.get("errorMessages", []) or [])
        if details:
            parts.append("; ".join(details))
    return ": ".join(parts)[:500]


def _masked_header(name: str, value: str) -> str:
    if name.lower() not in _AUTH_HEADERS:
        return value
    scheme, _, rest = value.partition(" ")
    return f"{scheme} {MASK}" if rest else MASK


def _header_case(name: str) -> str:
    return "-".join(part[:1].upper() + part[1:] for part in name.split("-"))


def _human_bytes(size: int) -> str:
    """
    >>> _human_bytes(12_345_678)
    '11.8 MiB'
    """
    value = float(size)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} bytes"
