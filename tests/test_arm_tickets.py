"""``forensics arm --ticket-on``: the flight recorder files what it caught, over the real
sshd, at the loopback tracker (tests/ticket_server.py): a daemon's zombie becomes an issue
with the pack attached and the event in its body; the same finding firing again is a
comment, not a second issue; a refusing tracker leaves the bundle and one line."""

from __future__ import annotations

import json
import re
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult, run_cli
from tests.recorder_scenario import DAEMON, arm
from tests.sshd import SshServer
from tests.test_sweep_tickets import inventory
from tests.ticket_server import TicketServer

ALWAYS = "<1000TiB"  # a MemAvailable threshold every host meets: `memory` fires at once


@pytest.fixture
def server() -> Iterator[TicketServer]:
    started = TicketServer().start()
    yield started
    started.stop()


def _env(server: TicketServer) -> dict[str, str]:
    return {
        "GITHUB_TOKEN": server.credentials.github_token,
        "JIRA_USER": server.credentials.jira_user,
        "JIRA_TOKEN": server.credentials.jira_token,
    }


def _no_token_shown(server: TicketServer, *texts: str) -> None:
    for token in server.credentials.all():
        assert all(token not in text for text in texts)


def _arm_memory(
    server: TicketServer, sshd: SshServer, out: Path, *options: str, seconds: int = 30
) -> CliResult:
    """``arm`` over the sshd, firing on `memory` at the first sample."""
    return run_cli(
        "arm", *sshd.target_args(), "--on", "memory", "--available", ALWAYS, "--probe",
        "memory", "--snapshot-gap", "0", "--out", str(out), "--format", "json", "--for",
        f"{seconds}s", "--ticket-on", "warning", "--github", "acme/infra", "--api-url",
        server.url, *options,
        env=_env(server),
        timeout=seconds + 60,
    )  # fmt: skip


def test_a_zombie_it_caught_becomes_a_jira_issue_with_the_pack_and_the_event(
    sshd: SshServer, server: TicketServer, tmp_path: Path
) -> None:
    name = f"fxtk{secrets.token_hex(3)}"
    go = tmp_path / "go"
    daemon = subprocess.Popen(
        [sys.executable, "-c", DAEMON, name, str(go), "5"], stdout=subprocess.PIPE, text=True
    )
    try:
        armed = arm(
            *sshd.target_args(), "--focus", f"^{name}$", "--on", "zombie", "--out",
            str(tmp_path / "out"), "--format", "json", "--snapshot-gap", "0", "--probe",
            "processes", "--for", "90s", "--ticket-on", "critical", "--jira", server.url,
            "--jira-project", "OPS", "--jira-api", "2", "--label", "recorder",
            env=_env(server),
        )  # fmt: skip
        armed.wait_for(": armed")
        go.touch()
        status, out, err = armed.finish()
    finally:
        daemon.kill()
        daemon.wait()
    assert status == 1, err
    _no_token_shown(server, out, err)
    report: dict[str, Any] = json.loads(out)
    [exited] = [f for f in report["findings"] if f["id"] == "focus.exited"]
    created = [r for r in server.requests if r.path == "/rest/api/2/issue"]
    mine = [r for r in created if "exit status 42" in r.json()["fields"]["summary"]]
    assert len(mine) == 1, [r.json()["fields"]["summary"] for r in created]
    fields = mine[0].json()["fields"]
    assert fields["summary"] == f"{report['target']['name']}: {exited['title']}"
    assert fields["project"] == {"key": "OPS"} and fields["labels"] == ["recorder"]
    body = fields["description"]
    assert "*Fired:* the flight recorder" in body
    assert re.search(
        rf"\d\d:\d\d:\d\d UTC zombie {name} \(pid \d+\): state Z: exit status 42", body
    ), body
    key = f"OPS-{101 + server.requests.index(mine[0])}"
    [attached] = [r for r in server.requests if r.path == f"/rest/api/2/issue/{key}/attachments"]
    bundle = Path(report["bundle"])
    names = [part.filename for part in attached.parts()]
    assert names[0] == f"{bundle.name}.tar.gz" and names[1].endswith(f"{bundle.name}.html")
    assert attached.parts()[0].content == bundle.with_name(f"{bundle.name}.tar.gz").read_bytes()
    assert f"jira: opened {key}" in err


def test_the_same_finding_firing_again_is_a_comment_on_its_ticket(
    sshd: SshServer, server: TicketServer, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    result = _arm_memory(server, sshd, out, "--keep-armed", "--label", "forensics", seconds=20)
    assert result.exit_code == 1, result.stderr
    _no_token_shown(server, result.stdout, result.stderr)
    fires = result.stderr.count(": fired (memory:")
    assert fires >= 2, result.stderr
    created = [r for r in server.requests if r.path == "/repos/acme/infra/issues"]
    mine = [r for r in created if "fired on memory" in r.json()["title"]]
    assert len(mine) == 1, [r.json()["title"] for r in created]
    assert mine[0].json()["labels"] == ["forensics"]
    number = 101 + server.requests.index(mine[0])
    again = [r for r in server.requests if r.path == f"/repos/acme/infra/issues/{number}/comments"]
    assert again, "a second fire of the same finding comments on its ticket"
    assert all(r.json()["body"].count("**Fired again:**") == 1 for r in again)
    assert "UTC memory: MemAvailable" in again[0].json()["body"]
    assert result.stderr.count(f"github: commented on acme/infra#{number}") == len(again)


@pytest.mark.parametrize("status", [401, 500])
def test_a_refusing_tracker_keeps_the_bundle_says_one_line_and_exits_4(
    sshd: SshServer, server: TicketServer, tmp_path: Path, status: int
) -> None:
    server.script(status, {"message": "no"}, times=4)
    out = tmp_path / "out"
    result = _arm_memory(server, sshd, out)
    assert result.exit_code == 4, result.stderr
    _no_token_shown(server, result.stdout, result.stderr)
    [line] = [line for line in result.stderr.splitlines() if "ticket not filed" in line]
    host = json.loads(result.stdout)["target"]["name"]
    assert line.startswith(f"forensics: {host}: ticket not filed: github: {status} ")
    bundle = Path(json.loads(result.stdout)["bundle"])
    assert line.endswith(f"the bundle is kept: {bundle}")
    assert (bundle / "manifest.json").is_file()
    if status == 401:
        assert "GITHUB_TOKEN were refused" in line


def test_stopped_while_the_tracker_hangs_it_names_each_bundle_that_may_have_no_ticket(
    sshd: SshServer, server: TicketServer, tmp_path: Path
) -> None:
    """Two hosts fire; the tracker hangs on the first one's ticket, the second waits behind
    it; Ctrl-C names both bundles, each in its own words."""
    tickets = {"github": "acme/provers", "api_url": server.url, "on": "warning"}
    path = inventory(sshd, tmp_path / "inventory.yaml", tickets)
    document = json.loads(path.read_text())
    [first] = document["groups"]["provers"]["hosts"]
    document["groups"]["provers"]["hosts"].append({**first, "name": "prover-2"})
    path.write_text(json.dumps(document))
    server.hold()
    armed = arm(
        "--inventory", str(path), "--on", "memory", "--available", ALWAYS, "--probe",
        "memory", "--snapshot-gap", "0", "--out", str(tmp_path / "out"), "--for", "90s",
        "--format", "json",
        env=_env(server),
    )  # fmt: skip
    try:
        assert server.held.wait(60), "the recorder never reached the tracker"
        deadline = time.monotonic() + 60
        while sum("; bundle in " in line for line in armed.said) < 2:
            assert time.monotonic() < deadline, "".join(armed.said)
            time.sleep(0.05)
        time.sleep(1)  # each bundle is queued for its ticket just after it is announced
        armed.stop(signal.SIGINT)
        status, out, err = armed.finish()
    finally:
        server.release()
    assert status == 130, err
    _no_token_shown(server, out, err)
    in_flight = [line for line in err.splitlines() if "ticket perhaps not filed" in line]
    queued = [line for line in err.splitlines() if "ticket not filed: stopped first" in line]
    assert len(in_flight) == 1 and len(queued) == 1, err
    assert "stopped while the tracker was answering" in in_flight[0]
    bundles = {
        Path(line.split("the bundle is kept: ", 1)[1].split(" (", 1)[0])
        for line in in_flight + queued
    }
    assert {bundle.parent.name for bundle in bundles} == {"prover-1", "prover-2"}
    assert all((bundle / "manifest.json").is_file() for bundle in bundles)


def test_each_inventory_group_files_at_its_own_tracker(
    sshd: SshServer, server: TicketServer, tmp_path: Path
) -> None:
    tickets = {"github": "acme/provers", "api_url": server.url, "on": "warning"}
    path = inventory(sshd, tmp_path / "inventory.yaml", tickets)
    result = run_cli(
        "arm", "--inventory", str(path), "--on", "memory", "--available", ALWAYS, "--probe",
        "memory", "--snapshot-gap", "0", "--out", str(tmp_path / "out"), "--for", "30s",
        "--format", "json",
        env=_env(server),
        timeout=90,
    )  # fmt: skip
    assert result.exit_code == 1, result.stderr
    created = [r for r in server.requests if r.path == "/repos/acme/provers/issues"]
    assert [r.json()["title"] for r in created if "fired on memory" in r.json()["title"]]
    assert all(r.json()["title"].startswith("prover-1: ") for r in created)


def test_a_missing_token_is_a_usage_error_before_anything_is_armed(tmp_path: Path) -> None:
    result = run_cli(
        "arm", "local", "--on", "memory", "--available", ALWAYS, "--out", str(tmp_path / "out"),
        "--github", "acme/infra", "--for", "5s",
        env={"GITHUB_TOKEN": ""},
    )  # fmt: skip
    assert result.exit_code == 2, result.stderr
    assert "GITHUB_TOKEN is not set" in result.stderr
    assert "arming" not in result.stderr


def test_sweep_arm_and_ticket_take_the_same_tracker_options_from_one_declaration() -> None:
    import typer.main

    from forensics.cli.app import app
    from forensics.cli.options import flag_of
    from forensics.core.ticket_settings import TicketSettings

    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    flags = {flag_of(name, info) for name, info in TicketSettings.model_fields.items()}
    flags.add("--ticket-dry-run")
    shown = [
        {opt: param.help for param in commands[name].params for opt in param.opts if opt in flags}
        for name in ("sweep", "arm")
    ]
    assert set(shown[0]) == flags and shown[0] == shown[1]
    by_hand = {opt: param.help for param in commands["ticket"].params for opt in param.opts}
    assert {
        flag: shown[0][flag] for flag in flags - {"--ticket-on", "--ticket-dry-run"}
    }.items() <= by_hand.items()
