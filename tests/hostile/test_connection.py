"""Hosts that fail the connection in hostile or confusing ways: each is one line naming the
right machine, with the right exit status, within the connect timeout."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from tests.hostile.crafted import SLACK_S, assert_one_inert_line, silent_listener, timed_cli
from tests.sshd import SshServer

MakeSshd = Callable[..., SshServer]
USER = os.environ.get("USER", "root")


def test_a_host_that_never_sends_its_banner_is_one_line_naming_the_stall(tmp_path: Path) -> None:
    with silent_listener() as port:
        run = timed_cli(
            "collect", f"root@127.0.0.1:{port}", "--connect-timeout", "2",
            "--known-hosts", str(tmp_path / "known_hosts"), "--out", str(tmp_path / "out"),
        )  # fmt: skip
    assert run.seconds < 2 + SLACK_S
    assert run.result.exit_code == 3
    assert "no SSH banner within 2s" in assert_one_inert_line(run.result.stderr)
    assert not (tmp_path / "out").exists()


def test_a_sweep_with_stalled_hosts_prints_no_traceback(tmp_path: Path) -> None:
    with silent_listener() as port:
        inventory = tmp_path / "inventory.yaml"
        inventory.write_text(
            "defaults:\n  connect_timeout: 2s\n"
            f"  known_hosts: {tmp_path / 'known_hosts'}\n"
            "hosts:\n"
            + "".join(f"  - {{name: stalled{n}, host: 127.0.0.1, port: {port}}}\n" for n in (1, 2))
        )
        run = timed_cli(
            "sweep", "--inventory", str(inventory), "--out", str(tmp_path / "out"), "-f", "json"
        )
    assert run.seconds < 2 + SLACK_S
    assert run.result.exit_code == 3
    assert "Traceback" not in run.result.stderr and "paramiko" not in run.result.stderr
    hosts = json.loads(run.result.stdout)["hosts"]
    assert [host["status"] for host in hosts] == ["unreachable", "unreachable"]
    assert all("no SSH banner within 2s" in host["reason"] for host in hosts)
    swept = json.loads(run.result.stdout)["directory"]
    assert [p.name for p in Path(swept).iterdir()] == ["fleet.json"]  # no host bundle


def test_an_identity_of_random_bytes_is_a_usage_error(sshd: SshServer, tmp_path: Path) -> None:
    key = tmp_path / "id_random"
    key.write_bytes(os.urandom(512))
    args = [*sshd.target_args(), "--identity", str(key), "--out", str(tmp_path / "out")]
    run = timed_cli("collect", *args)
    assert run.seconds < SLACK_S
    assert run.result.exit_code == 2, run.result
    assert "is not a private key" in assert_one_inert_line(run.result.stderr)
    assert not (tmp_path / "out").exists()


def test_a_public_key_as_identity_says_so(sshd: SshServer, tmp_path: Path) -> None:
    public = sshd.client_key.with_suffix(".pub")
    args = [*sshd.target_args(), "--identity", str(public), "--out", str(tmp_path / "out")]
    run = timed_cli("collect", *args)
    assert run.seconds < SLACK_S
    assert run.result.exit_code == 2, run.result
    line = assert_one_inert_line(run.result.stderr)
    assert "is a public key" in line and str(sshd.client_key) in line
    assert not (tmp_path / "out").exists()


def _behind_a_jump_host(make_sshd: MakeSshd, jump_known: str) -> tuple[SshServer, SshServer]:
    """A target reached through a jump host (ssh_config ProxyJump); known_hosts holds the
    target's key and ``jump_known`` for the jump host."""
    target, jump = make_sshd(), make_sshd()
    jump_authorized = jump.root / "authorized_keys"
    jump_authorized.write_text(target.client_key.with_suffix(".pub").read_text())
    # The jump host by an alias of its own: "Host 127.0.0.1" would give it a ProxyJump to
    # itself, a loop ssh refuses ("jumphost loop").
    (target.root / "ssh_config").write_text(
        f"Host 127.0.0.1\n  ProxyJump {USER}@jump\n"
        f"Host jump\n  HostName 127.0.0.1\n  Port {jump.port}\n"
    )
    with target.known_hosts.open("a") as known:
        known.write(jump_known)
    return target, jump


def test_an_unknown_jump_host_key_names_the_jump_host(make_sshd: MakeSshd, tmp_path: Path) -> None:
    target, jump = _behind_a_jump_host(make_sshd, "")
    out = tmp_path / "out"
    run = timed_cli("collect", *target.target_args(), "--out", str(out), "--probe", "system")
    assert run.seconds < 10 + SLACK_S
    assert run.result.exit_code == 3, run.result
    assert not out.exists()
    line = assert_one_inert_line(run.result.stderr)
    assert f"jump host {USER}@127.0.0.1:{jump.port}: host key" in line and "is not in" in line


def test_a_changed_jump_host_key_names_the_jump_host(make_sshd: MakeSshd, tmp_path: Path) -> None:
    other = make_sshd()  # a different host key, recorded under the jump host's name
    wrong = other.host_key.with_suffix(".pub").read_text().split()[:2]
    jump_port_placeholder = "{port}"
    target, jump = _behind_a_jump_host(make_sshd, jump_port_placeholder)
    known = target.known_hosts.read_text().replace(
        jump_port_placeholder, f"[127.0.0.1]:{jump.port} {wrong[0]} {wrong[1]}\n"
    )
    target.known_hosts.write_text(known)
    out = tmp_path / "out"
    run = timed_cli("collect", *target.target_args(), "--out", str(out), "--probe", "system")
    assert run.seconds < 10 + SLACK_S
    assert run.result.exit_code == 3, run.result
    assert not out.exists()
    line = assert_one_inert_line(run.result.stderr)
    assert f"jump host {USER}@127.0.0.1:{jump.port}: HOST KEY CHANGED" in line
    assert f"ssh-keygen -R '[127.0.0.1]:{jump.port}'" in line


def test_a_jump_host_that_is_the_target_itself_is_refused(sshd: SshServer, tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text(f"Host 127.0.0.1\n  ProxyJump root@127.0.0.1:{sshd.port}\n")
    args = [*sshd.target_args(), "--ssh-config", str(config), "--out", str(tmp_path / "out")]
    run = timed_cli("collect", *args)
    assert run.seconds < SLACK_S
    assert run.result.exit_code == 2, run.result
    assert "is the target itself" in assert_one_inert_line(run.result.stderr)
    assert not (tmp_path / "out").exists()


def test_a_host_that_refuses_every_session_is_one_line_for_collect_and_watch(
    make_sshd: MakeSshd, tmp_path: Path
) -> None:
    """Logged in, but sshd opens no session channel (MaxSessions 0): paramiko raises from
    inside the channel open; the operator reads one line, exit 3, for each command."""
    server = make_sshd(extra_config="MaxSessions 0")
    out = tmp_path / "out"
    run = timed_cli("collect", *server.target_args(), "--out", str(out), "--probe", "system")
    assert run.result.exit_code == 3, run.result
    line = assert_one_inert_line(run.result.stderr)
    assert "connected, but no command could start: sshd refused to open a session" in line, line
    watched = timed_cli("watch", *server.target_args(), "--every", "1s", "--for", "3s")
    assert watched.result.exit_code == 3, watched.result
    line = assert_one_inert_line(watched.result.stderr)
    assert "connected, but no command could start: sshd refused to open a session" in line, line
