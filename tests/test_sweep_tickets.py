"""`sweep` opens one ticket per host and critical finding, never twice, and comments when
the finding resolves; the inventory sets the tracker per group, or the command line does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import CliResult, run_cli
from tests.sshd import SshServer
from tests.ticket_server import TicketServer

FOCUS = "cuzk-sweep-ticket-demo"


@pytest.fixture
def server() -> Iterator[TicketServer]:
    started = TicketServer().start()
    yield started
    started.stop()


def inventory(sshd: SshServer, path: Path, tickets: dict[str, object] | None) -> Path:
    group: dict[str, object] = {
        "probes": ["processes"],
        "focus": FOCUS,
        "hosts": [{"name": "prover-1", "host": "127.0.0.1", "port": sshd.port}],
    }
    if tickets is not None:
        group["tickets"] = tickets
    document = {
        "defaults": {
            "user": os.environ.get("USER", "root"),
            "identity": str(sshd.client_key),
            "known_hosts": str(sshd.known_hosts),
            "ssh_config": str(sshd.root / "ssh_config"),
        },
        "groups": {"provers": group},
    }
    path.write_text(json.dumps(document))
    return path


def sweep(server: TicketServer, inventory: Path, out: Path, *options: str) -> CliResult:
    result = run_cli(
        "sweep", "--inventory", str(inventory), "--out", str(out), "--format", "json", *options,
        env={
            "GITHUB_TOKEN": server.credentials.github_token,
            "JIRA_USER": server.credentials.jira_user,
            "JIRA_TOKEN": server.credentials.jira_token,
        },
        timeout=120,
    )  # fmt: skip
    assert result.exit_code in (0, 1), result.stderr
    for token in server.credentials.all():
        assert token not in result.stdout + result.stderr
    return result


def test_a_critical_finding_is_ticketed_once_and_its_resolution_commented(
    sshd: SshServer, server: TicketServer, tmp_path: Path
) -> None:
    tickets = {"github": "acme/infra", "api_url": server.url, "labels": ["forensics"]}
    path = inventory(sshd, tmp_path / "inventory.yaml", tickets)
    out = tmp_path / "out"
    first = sweep(server, path, out)
    created = [r for r in server.requests if r.path == "/repos/acme/infra/issues"]
    mine = [r for r in created if f"No live process matches --focus '{FOCUS}'" in r.json()["title"]]
    assert len(mine) == 1, [r.json()["title"] for r in created]
    [issue] = mine
    assert issue.json()["title"].startswith("prover-1: ")
    assert issue.json()["labels"] == ["forensics"]
    assert "### forensics: prover-1" in issue.json()["body"]
    assert "github: opened acme/infra#" in first.stderr
    server.clear()

    sweep(server, path, out)
    assert server.requests == [], "a finding already ticketed is not ticketed again"

    number = 101 + created.index(issue)
    running = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", FOCUS],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    try:
        sweep(server, path, out)
    finally:
        running.kill()
        running.wait()
    comments = [r for r in server.requests if r.path.endswith("/comments")]
    [resolved] = [r for r in comments if r.path == f"/repos/acme/infra/issues/{number}/comments"]
    assert resolved.json()["body"].startswith("**Resolved:** No live process matches")
    assert "prover-1" in resolved.json()["body"]
    server.clear()

    history = (out / "history.sqlite").read_bytes()
    for token in server.credentials.all():
        assert token.encode() not in history
        for written in out.rglob("*"):
            if written.is_file() and not written.name.endswith(".gz"):
                assert token.encode() not in written.read_bytes(), written


def test_command_line_tickets_go_to_jira_with_the_pack_attached(
    sshd: SshServer, server: TicketServer, tmp_path: Path
) -> None:
    path = inventory(sshd, tmp_path / "inventory.yaml", None)
    out = tmp_path / "out"
    options = ("--ticket-on", "critical", "--jira", server.url, "--jira-project", "OPS")
    sweep(server, path, out, *options, "--jira-api", "2")
    issues = [r for r in server.requests if r.path == "/rest/api/2/issue"]
    mine = [r for r in issues if FOCUS in r.json()["fields"]["summary"]]
    assert len(mine) == 1
    fields = mine[0].json()["fields"]
    assert fields["project"] == {"key": "OPS"} and fields["issuetype"] == {"name": "Bug"}
    assert fields["description"].startswith("h3. forensics: prover-1")
    key = f"OPS-{101 + server.requests.index(mine[0])}"
    attachments = [r for r in server.requests if r.path == f"/rest/api/2/issue/{key}/attachments"]
    assert len(attachments) == 1
    names = [part.filename for part in attachments[0].parts()]
    assert names[0].endswith(".tar.gz") and names[1].endswith(".html")
    server.clear()
    sweep(server, path, out, *options, "--jira-api", "2")
    assert not [r for r in server.requests if r.path == "/rest/api/2/issue"]


def test_an_inventory_tickets_setting_names_exactly_one_tracker(
    sshd: SshServer, tmp_path: Path
) -> None:
    path = inventory(sshd, tmp_path / "inventory.yaml", {"github": "a/b", "gitlab": "c"})
    result = run_cli("inventory", "check", str(path))
    assert result.exit_code == 2
    assert "groups.provers.tickets" in result.stderr and "exactly one tracker" in result.stderr
    secret = inventory(sshd, tmp_path / "secret.yaml", {"github": "a/b", "token": "x"})
    result = run_cli("inventory", "check", str(secret))
    assert result.exit_code == 2 and "secrets do not belong in the inventory" in result.stderr
