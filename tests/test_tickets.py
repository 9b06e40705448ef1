"""`forensics ticket` end to end: a real bundle with secrets is packed, verified and posted to
a loopback server that answers like GitHub, GitLab and Jira; errors map to one line and
exit 4; a 429 is retried once after Retry-After; no token reaches any output or file."""

from __future__ import annotations

import gzip
import io
import json
import shutil
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import CliResult, run_cli
from tests.secret_bundle import ALL_SECRETS, collect_with_secrets
from tests.ticket_server import Recorded, TicketServer


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return collect_with_secrets(tmp_path_factory.mktemp("ticket-bundle"))


@pytest.fixture
def server() -> Iterator[TicketServer]:
    started = TicketServer().start()
    yield started
    started.stop()


def tokens_env(server: TicketServer, **overrides: str) -> dict[str, str]:
    credentials = server.credentials
    env = {
        "GITHUB_TOKEN": credentials.github_token,
        "GITLAB_TOKEN": credentials.gitlab_token,
        "JIRA_USER": credentials.jira_user,
        "JIRA_TOKEN": credentials.jira_token,
        "JIRA_PAT": "",
    }
    return {**env, **overrides}


def readable(path: Path) -> bytes:
    """A file's bytes, and for a tar.gz the bytes of every member too."""
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        data += gzip.decompress(data)
        with tarfile.open(path, "r:gz") as tar:
            for member in tar.getmembers():
                if member.isfile():
                    data += tar.extractfile(member).read()  # type: ignore[union-attr]
    return data


def assert_no_token(server: TicketServer, result: CliResult, *roots: Path) -> None:
    for token in server.credentials.all():
        assert token not in result.stdout and token not in result.stderr
        for root in roots:
            for path in root.rglob("*"):
                if path.is_file():
                    assert token.encode() not in readable(path), f"{token} in {path}"


def ticket(server: TicketServer, bundle: Path, tmp_path: Path, *args: str, **env: str) -> CliResult:
    result = run_cli(
        "ticket", str(bundle), "-o", str(tmp_path / "evidence.tar.gz"), *args,
        env=tokens_env(server, **env),
    )  # fmt: skip
    assert "Traceback" not in result.stderr
    assert_no_token(server, result, tmp_path)
    return result


def no_secret_in(request: Recorded) -> None:
    body = request.body
    for part in request.parts() if "multipart" in request.headers.get("content-type", "") else []:
        if part.filename and part.filename.endswith(".tar.gz"):
            body += readable_bytes(part.content)
    for secret in ALL_SECRETS:
        assert secret.encode() not in body, f"{secret} was sent to {request.path}"


def readable_bytes(archive: bytes) -> bytes:
    data = b""
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        for member in tar.getmembers():
            if member.isfile():
                data += tar.extractfile(member).read()  # type: ignore[union-attr]
    return data


def test_github_comment_carries_the_report_and_names_the_pack(
    server: TicketServer, bundle: Path, tmp_path: Path
) -> None:
    result = ticket(
        server, bundle, tmp_path, "--github", "acme/infra", "--issue", "4211",
        "--api-url", server.url, "--archive-url", "https://files.example.test/evidence.tar.gz",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/repos/acme/infra/issues/4211/comments")
    assert request.headers["authorization"] == f"Bearer {server.credentials.github_token}"
    assert request.headers["accept"] == "application/vnd.github+json"
    body = request.json()["body"]
    assert body.startswith("### forensics: local\n")
    assert "| \\# | Severity | Finding | ID |" in body
    assert "| 1 | critical | No live process matches --focus" in body
    assert "**Next steps:**" in body and "**Evidence:** `raw/" in body
    assert "[evidence.tar.gz](<https://files.example.test/evidence.tar.gz>)" in body
    assert "forensics verify evidence.tar.gz" in body
    assert len(body) <= 65_536
    no_secret_in(request)
    assert result.stdout.strip().startswith(
        "github: commented on acme/infra#4211: http://127.0.0.1"
    )
    assert run_cli("verify", str(tmp_path / "evidence.tar.gz")).exit_code == 0


def test_github_create_opens_an_issue_titled_by_the_headline(
    server: TicketServer, bundle: Path, tmp_path: Path
) -> None:
    result = ticket(
        server, bundle, tmp_path, "--github", "acme/infra", "--create", "--label", "incident",
        "--label", "gpu", "--api-url", server.url,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    [request] = server.requests
    assert request.path == "/repos/acme/infra/issues"
    sent = request.json()
    assert sent["labels"] == ["incident", "gpu"]
    report = json.loads((bundle / "report.json").read_text())
    assert sent["title"].split(";")[0].rstrip(".") in sent["body"]
    assert report["target"]["name"] == "local"
    assert result.stdout.startswith("github: opened acme/infra#101: ")


def test_gitlab_uploads_the_pack_and_links_it_in_a_note(
    server: TicketServer, bundle: Path, tmp_path: Path
) -> None:
    result = ticket(
        server, bundle, tmp_path, "--gitlab", "infra/gpu-fleet", "--issue", "17",
        "--api-url", f"{server.url}/api/v4",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    upload, page, note = server.requests
    assert upload.path == "/api/v4/projects/infra%2Fgpu-fleet/uploads"
    assert upload.headers["private-token"] == server.credentials.gitlab_token
    [part] = upload.parts()
    assert (part.name, part.filename) == ("file", "evidence.tar.gz")
    assert part.content == (tmp_path / "evidence.tar.gz").read_bytes()
    assert page.parts()[0].filename.endswith(".html")
    assert note.path == "/api/v4/projects/infra%2Fgpu-fleet/issues/17/notes"
    body = note.json()["body"]
    link = upload.path and f"[evidence.tar.gz](</uploads/{101:032x}/evidence.tar.gz>)"
    assert link in body
    for request in server.requests:
        no_secret_in(request)
    assert result.stdout.startswith("gitlab: commented on infra/gpu-fleet#17 (note 103)")


def test_jira_data_center_gets_both_attachments_and_a_wiki_comment(
    server: TicketServer, bundle: Path, tmp_path: Path
) -> None:
    result = ticket(
        server, bundle, tmp_path, "--jira", server.url, "--issue", "INC-4211",
        JIRA_PAT=server.credentials.jira_pat,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    info, attach, comment = server.requests
    assert (info.method, info.path) == ("GET", "/rest/api/2/serverInfo")
    assert attach.path == "/rest/api/2/issue/INC-4211/attachments"
    assert attach.headers["x-atlassian-token"] == "no-check"
    assert attach.headers["authorization"] == f"Bearer {server.credentials.jira_pat}"
    parts = attach.parts()
    assert parts[0].filename == "evidence.tar.gz"
    assert parts[0].content == (tmp_path / "evidence.tar.gz").read_bytes()
    assert parts[1].content_type == "text/html" and b"<html" in parts[1].content
    assert comment.path == "/rest/api/2/issue/INC-4211/comment"
    body = comment.json()["body"]
    assert isinstance(body, str) and body.startswith("h3. forensics: local")
    assert "||\\#||Severity||Finding||ID||" in body and "{noformat}" in body
    assert "(attached: evidence.tar.gz" in body
    for request in server.requests:
        no_secret_in(request)
    assert result.stdout.startswith(f"jira: commented on INC-4211: {server.url}/browse/INC-4211")


def test_jira_cloud_gets_an_atlassian_document_with_basic_auth(
    bundle: Path, tmp_path: Path
) -> None:
    server = TicketServer(jira_deployment="Cloud").start()
    try:
        result = ticket(server, bundle, tmp_path, "--jira", server.url, "--issue", "OPS-7")
        assert result.exit_code == 0, result.stderr
        _, attach, comment = server.requests
        assert attach.path == "/rest/api/3/issue/OPS-7/attachments"
        assert attach.headers["authorization"].startswith("Basic ")
        document = comment.json()["body"]
        assert document["type"] == "doc" and document["version"] == 1
        kinds = [node["type"] for node in document["content"]]
        assert kinds[:4] == ["heading", "paragraph", "paragraph", "paragraph"]
        assert "table" in kinds and "codeBlock" in kinds
        assert len(json.dumps(document)) <= 32_767
    finally:
        server.stop()


def test_dry_run_prints_each_request_with_the_token_masked_and_sends_nothing(
    server: TicketServer, bundle: Path, tmp_path: Path
) -> None:
    result = ticket(
        server, bundle, tmp_path, "--jira", server.url, "--issue", "INC-1", "--jira-api", "3",
        "--dry-run",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert server.requests == []
    out = result.stdout
    assert f"POST {server.url}/rest/api/3/issue/INC-1/attachments\n" in out
    assert "Authorization: Basic ****\n" in out and "X-Atlassian-Token: no-check" in out
    assert 'filename="evidence.tar.gz"' in out and "bytes, sha256 " in out
    assert f"POST {server.url}/rest/api/3/issue/INC-1/comment\n" in out
    assert '"type": "doc"' in out
    assert "dry run: nothing was sent" in result.stderr
    github = ticket(
        server, bundle, tmp_path, "--github", "acme/infra", "--issue", "3", "--dry-run",
        "--api-url", server.url,
    )  # fmt: skip
    assert (
        "Authorization: Bearer ****\n" in github.stdout
        and '"body": "### forensics' in github.stdout
    )
    assert server.requests == []


@pytest.mark.parametrize(
    ("tracker", "scripted", "words"),
    [
        ("github", (403, {"message": "Resource not accessible by integration"}), [
            "github: 403 Forbidden from POST", "credentials in GITHUB_TOKEN were refused",
            "repo scope", "Resource not accessible by integration",
        ]),
        ("github", (404, {"message": "Not Found"}), ["issue acme/infra#12 not found"]),
        ("gitlab", (413, {"message": "413 Request Entity Too Large: the limit is 10 MiB"}), [
            "gitlab: 413", "/uploads: the upload is", "bytes); the server's limit is 10 MiB",
        ]),
        ("github-create", (422, {"message": "Validation Failed", "errors": [
            {"resource": "Label", "code": "invalid", "field": "name"}]}), [
            "422 Unprocessable Entity", "the server said: Validation Failed: Label name invalid",
        ]),
        ("jira", (500, {"errorMessages": ["Internal server error"]}), [
            "jira: 500 Internal Server Error from GET", "Internal server error",
        ]),
    ],
    ids=["403", "404", "413", "422", "500"],
)  # fmt: skip
def test_http_errors_are_one_line_and_exit_4(
    server: TicketServer,
    bundle: Path,
    tmp_path: Path,
    tracker: str,
    scripted: tuple[int, object],
    words: list[str],
) -> None:
    server.script(*scripted)
    target = {
        "github": ["--github", "acme/infra", "--issue", "12", "--api-url", server.url],
        "github-create": ["--github", "acme/infra", "--create", "--label", "bad label"],
        "gitlab": ["--gitlab", "7", "--issue", "1", "--api-url", f"{server.url}/api/v4"],
        "jira": ["--jira", server.url, "--issue", "OPS-1"],
    }[tracker]
    if tracker == "github-create":
        target += ["--api-url", server.url]
    result = ticket(server, bundle, tmp_path, *target)
    assert result.exit_code == 4, result.stdout + result.stderr
    assert result.stderr.count("\n") - result.stderr.count("forensics: packed") == 1, result.stderr
    for word in words:
        assert word in result.stderr
    assert len(server.requests) == 1, "no retry on this status"


def test_a_refused_token_names_its_variable_and_never_shows_it(
    server: TicketServer, bundle: Path, tmp_path: Path
) -> None:
    wrong = "ghp_WrongTokenWrongTokenWrongToken0000"
    result = ticket(
        server, bundle, tmp_path, "--github", "acme/infra", "--issue", "5", "--api-url",
        server.url, GITHUB_TOKEN=wrong,
    )  # fmt: skip
    assert result.exit_code == 4
    assert "401 Unauthorized" in result.stderr and "GITHUB_TOKEN" in result.stderr
    assert wrong not in result.stderr + result.stdout


def test_a_429_is_retried_exactly_once_after_its_retry_after(
    server: TicketServer, bundle: Path, tmp_path: Path
) -> None:
    server.script(429, {"message": "slow down"}, Retry_After="1")
    result = ticket(
        server, bundle, tmp_path, "--github", "acme/infra", "--issue", "9", "--api-url", server.url
    )
    assert result.exit_code == 0, result.stderr
    first, second = server.requests
    assert first.path == second.path == "/repos/acme/infra/issues/9/comments"
    assert second.at - first.at >= 1.0
    assert first.body == second.body


def test_a_server_that_stays_unavailable_is_given_up_after_three_retries(
    server: TicketServer, bundle: Path, tmp_path: Path
) -> None:
    server.script(503, None, times=4, Retry_After="0")
    result = ticket(
        server, bundle, tmp_path, "--github", "acme/infra", "--issue", "9", "--api-url", server.url
    )
    assert result.exit_code == 4
    assert len(server.requests) == 4
    assert "still 503 after 3 retries" in result.stderr


def test_a_missing_token_is_a_usage_error_before_anything_is_packed(
    server: TicketServer, bundle: Path, tmp_path: Path
) -> None:
    result = ticket(
        server, bundle, tmp_path, "--github", "acme/infra", "--issue", "1", GITHUB_TOKEN=""
    )
    assert result.exit_code == 2
    assert "GITHUB_TOKEN is not set" in result.stderr
    assert not (tmp_path / "evidence.tar.gz").exists()
    both = ticket(server, bundle, tmp_path, "--github", "a/b", "--gitlab", "c", "--issue", "1")
    assert both.exit_code == 2 and "exactly one tracker" in both.stderr


def test_a_pack_that_would_carry_the_token_itself_is_not_sent(
    server: TicketServer, bundle: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "bundle"
    shutil.copytree(bundle, copy)
    token = server.credentials.jira_token
    (copy / "raw" / "_run.stderr.txt").write_text(f"note: the jira token is {token}\n")
    result = run_cli(
        "ticket", str(copy), "--jira", server.url, "--issue", "OPS-3", "--jira-api", "2",
        env=tokens_env(server),
    )  # fmt: skip
    assert result.exit_code == 4
    assert "the credential from JIRA_USER and JIRA_TOKEN appears in what would be sent" in (
        result.stderr
    )
    assert token not in result.stderr + result.stdout
    assert server.requests == []


def test_an_existing_pack_is_verified_and_posted_as_it_is(
    server: TicketServer, bundle: Path, tmp_path: Path
) -> None:
    archive = tmp_path / "made-earlier.tar.gz"
    assert run_cli("pack", str(bundle), "-o", str(archive)).exit_code == 0
    result = run_cli(
        "ticket", str(archive), "--gitlab", "7", "--issue", "2",
        "--api-url", f"{server.url}/api/v4", env=tokens_env(server),
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    upload = server.requests[0]
    assert upload.parts()[0].content == archive.read_bytes()
    assert "packed" not in result.stderr, "an existing pack is not packed again"
