"""Every command of the CLI, fed hostile input (a host whose names and files are escape
sequences, inventories and vast.ai exports whose labels are, file names that are), prints
nothing a terminal would obey: no ESC, no C1 control, no bidi control, on stdout or stderr.

Each command gets the cases below that reach its deeper output paths, and every command,
including one added later, gets a generic run with hostile arguments."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer.main

from forensics.cli.app import app
from tests.hostile.crafted import RAW_CONTROL
from tests.hostile.markup import hostile_host
from tests.sshd import SshServer, sshd_available

# OSC 52 (clipboard), OSC 0 (title), CSI as a raw C1, a right-to-left override.
HOSTILE = "\x1b]52;c;aGFja2Vk\x07\x1b]0;owned\x07\x9b31m\u202eexe.txt"


def commands() -> list[str]:
    """Every leaf command, e.g. ``collect``, ``inventory check``."""
    found: list[str] = []

    def walk(group: object, prefix: str) -> None:
        for name, command in sorted(getattr(group, "commands", {}).items()):
            if hasattr(command, "commands"):
                walk(command, f"{prefix}{name} ")
            else:
                found.append(f"{prefix}{name}")

    walk(typer.main.get_command(app), "")
    return found


@dataclass
class Seen:
    exit_code: int
    stdout: str
    stderr: str


def forensics(*args: str, cwd: Path | None = None, stdin: bytes = b"") -> Seen:
    completed = subprocess.run(
        [sys.executable, "-m", "forensics", *args],
        input=stdin,
        capture_output=True,
        timeout=180,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    )
    seen = Seen(
        completed.returncode,
        completed.stdout.decode("utf-8", "surrogateescape"),
        completed.stderr.decode("utf-8", "surrogateescape"),
    )
    for name, text in (("stdout", seen.stdout), ("stderr", seen.stderr)):
        found = RAW_CONTROL.search(text.replace("\n", "").replace("\t", ""))
        assert found is None, f"{args[:2]} {name}: {text[:3000]!a}"
        assert not any("\udc80" <= c <= "\udcff" for c in text), f"{name}: bytes not UTF-8"
    assert "Traceback" not in seen.stderr and seen.exit_code != 70, seen.stderr
    return seen


@dataclass
class Hostile:
    root: Path
    host: SshServer
    bundle: Path
    inventory: Path


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    if not sshd_available():
        pytest.skip("OpenSSH server not installed")
    root = tmp_path_factory.mktemp("hostile")
    servers: list[SshServer] = []

    def make_sshd(**kwargs: object) -> SshServer:
        server = SshServer(root=root / "sshd", **kwargs).start()  # type: ignore[arg-type]
        servers.append(server)
        return server

    host = hostile_host(make_sshd, root / "scenario", "http://127.0.0.1:9")
    try:
        collected = forensics(
            "collect", *host.target_args(), "--out", str(root / "out"), "-f", "json",
            "--fail-on", "never", "--focus", HOSTILE[:4] + "init",
        )  # fmt: skip
        assert collected.exit_code == 0, collected.stderr
        inventory = root / "inventory.yaml"
        name = json.dumps(HOSTILE)  # a YAML double-quoted scalar: \u001b and friends
        inventory.write_text(
            "defaults:\n"
            f"  identity: {host.client_key}\n  known_hosts: {host.known_hosts}\n"
            f"  ssh_config: {host.root / 'ssh_config'}\n"
            "hosts:\n"
            f"  - {{name: {name}, host: 127.0.0.1, port: {host.port}, tags: [{name}]}}\n"
            f"  - {{name: {json.dumps('down' + HOSTILE)}, host: 127.0.0.1, port: 1}}\n"
        )
        yield Hostile(root, host, Path(json.loads(collected.stdout)["bundle"]), inventory)
    finally:
        for server in servers:
            server.stop()


def test_collect_and_analyze_show_a_hostile_host_inert(hostile: Hostile) -> None:
    for format in ("text", "json", "md"):
        forensics("analyze", str(hostile.bundle), "-f", format, "--fail-on", "never")
        forensics("report", str(hostile.bundle), "-f", format)
    collected = forensics(
        "collect", *hostile.host.target_args(), "--out", str(hostile.root / "out"),
        "--fail-on", "never",
    )  # fmt: skip
    assert "\\x1b[31mRED" in collected.stdout  # shown, not obeyed
    diffed = forensics("diff", str(hostile.bundle), str(hostile.bundle))
    assert diffed.exit_code == 0, diffed.stderr
    forensics("diff", str(hostile.bundle), str(hostile.bundle), "--json")


def test_sweep_history_and_inventory_show_hostile_names_inert(hostile: Hostile) -> None:
    out = hostile.root / "sweeps"
    for format in ("text", "json", "md"):
        swept = forensics(
            "sweep", "--inventory", str(hostile.inventory), "--out", str(out), "-f", format,
            "--connect-timeout", "2s", "--fail-on", "never", "--allow-unreachable", "1",
        )  # fmt: skip
        assert swept.exit_code == 0, swept.stderr
    assert "\\x1b]52;" in forensics("history", "--out", str(out)).stdout
    forensics("history", "--out", str(out), "--json")
    forensics("history", "--out", str(out), "--host", HOSTILE + "absent")
    forensics("inventory", "check", str(hostile.inventory))
    forensics("inventory", "check", str(hostile.inventory), "--json")


def test_imported_vastai_labels_are_inert(hostile: Hostile) -> None:
    rows = [
        {"id": 1, "label": HOSTILE, "ssh_host": "ssh1.vast.ai", "ssh_port": 2222},
        {"id": 2, "label": HOSTILE + "\nskipped", "actual_status": "exited"},
    ]
    forensics("inventory", "import-vastai", "-", stdin=json.dumps(rows).encode())


def test_lint_script_shows_a_hostile_script_inert(hostile: Hostile) -> None:
    script = hostile.root / f"run{HOSTILE}.sh"
    script.write_text(f"#!/bin/sh\n# {HOSTILE}\necho '{HOSTILE}'\ndaemon{HOSTILE} || true\n$?\n")
    for format in ("text", "json"):
        forensics("lint-script", str(script), "-f", format, "--daemon", "daemon")


def test_watch_and_wait_show_a_hostile_cgroup_inert(hostile: Hostile) -> None:
    forensics("watch", "local", "--for", "0.3s", "--every", "0.1s", "--cgroup", f"/{HOSTILE}")
    forensics("wait", "local", "--available", ">=1KiB", "--cgroup", f"/{HOSTILE}")


@pytest.mark.parametrize("command", commands())
def test_every_command_given_hostile_arguments_prints_nothing_raw(
    command: str, tmp_path: Path
) -> None:
    hostile_file = tmp_path / HOSTILE
    hostile_file.write_text(f"{HOSTILE}: [{HOSTILE}\n")
    words = command.split()
    forensics(*words, str(hostile_file), cwd=tmp_path)
    forensics(*words, str(hostile_file), str(hostile_file), cwd=tmp_path)
    forensics(*words, f"--{HOSTILE}", cwd=tmp_path)
    forensics(*words, "--format", HOSTILE, cwd=tmp_path)
