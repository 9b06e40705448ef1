"""Collecting the machine the tool runs on over SSH (``collect root@127.0.0.1``): the
collector's own process, whose command line holds the --focus regex, never matches it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import run_cli
from tests.sshd import SshServer


def test_the_collector_never_matches_its_own_focus_over_ssh_to_itself(
    make_sshd: Any, tmp_path: Path
) -> None:
    server: SshServer = make_sshd()
    marker = "no-such-daemon-7f3a"
    result = run_cli(
        "collect", *server.target_args(), "--focus", marker, "--probe", "processes",
        "--probe", "cgroup", "--probe", "logs", "--snapshot-gap", "0", "--out",
        str(tmp_path), "-f", "json", "--fail-on", "never",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    facts = report["facts"]
    assert facts["processes"]["client_pids"], "the host saw it is the collector's machine"
    client = set(facts["processes"]["client_pids"])
    focus = facts["processes"]["focus"]
    assert focus["live"] == focus["zombies"] == focus["exited"] == []
    assert not [p for p in facts["cgroup"]["focus_processes"] if p["pid"] in client]
    assert not facts["logs"]["focus_processes"]
    ids = [finding["id"] for finding in report["findings"]]
    assert "focus.not_running" in ids
