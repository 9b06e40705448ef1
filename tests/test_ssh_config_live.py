"""OpenSSH's client config honoured against real sshd servers on loopback: Include, Match,
HostName, Port, User, IdentityFile (several, one missing), IdentitiesOnly,
UserKnownHostsFile with tokens and hashed entries, @revoked, @cert-authority,
StrictHostKeyChecking, and a ProxyJump through a bastion sshd."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from forensics.remote.known_hosts import hashed_name
from tests.conftest import run_cli
from tests.sshd import SshServer, keygen

USER = os.environ.get("USER", "root")


def _host_key(server: SshServer) -> str:
    kind, key = server.host_key.with_suffix(".pub").read_text().split()[:2]
    return f"{kind} {key}"


def _config(root: Path, target: SshServer, bastion: SshServer, strict: str = "yes") -> Path:
    (root / "conf.d").mkdir(exist_ok=True)
    (root / "kh").mkdir(exist_ok=True)
    (root / "conf.d" / "10-prover-a.conf").write_text(f"Host prover-a\n  Port {target.port}\n")
    config = root / "ssh_config"
    config.write_text(
        f"Include {root}/conf.d/*.conf\n"
        f"Host bastion\n  HostName 127.0.0.1\n  Port {bastion.port}\n"
        f"Host prover-b\n  Port {target.port}\n  ProxyJump bastion\n"
        f"Host prover-* bastion\n"
        f"  HostName 127.0.0.1\n"
        f"  User {USER}\n"
        f"  IdentityFile {root}/no-such-key\n"
        f"  IdentityFile {target.client_key}\n"
        f"  IdentityFile {bastion.client_key}\n"
        f"  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {root}/kh/%h-%p {root}/kh/common\n"
        f"  GlobalKnownHostsFile {root}/kh/global\n"
        f"  StrictHostKeyChecking {strict}\n"
        f"Match host 127.0.0.1 user {USER}\n"
        f"  ConnectTimeout 5\n"
    )
    return config


def _collect(config: Path, host: str, root: Path, *extra: str) -> Any:
    return run_cli(
        "collect", host, "--ssh-config", str(config), "--probe", "system", "--out",
        str(root / "out"), "-f", "json", "--fail-on", "never", *extra,
    )  # fmt: skip


@pytest.fixture
def servers(make_sshd: Any) -> tuple[SshServer, SshServer]:
    return make_sshd(), make_sshd()


def test_a_host_known_in_a_config_named_hashed_known_hosts_file_is_collected(
    servers: tuple[SshServer, SshServer], tmp_path: Path
) -> None:
    target, bastion = servers
    config = _config(tmp_path, target, bastion)
    name = hashed_name(f"[127.0.0.1]:{target.port}", os.urandom(20))
    (tmp_path / "kh" / "common").write_text(f"{name} {_host_key(target)}\n")
    result = _collect(config, "prover-a", tmp_path)
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["host_key"]["trust"] == "known_hosts"
    assert report["facts"]["system"]["hostname"]


def test_a_revoked_key_is_refused_in_one_line(
    servers: tuple[SshServer, SshServer], tmp_path: Path
) -> None:
    target, bastion = servers
    config = _config(tmp_path, target, bastion)
    (tmp_path / "kh" / "common").write_text(
        f"[127.0.0.1]:{target.port} {_host_key(target)}\n@revoked * {_host_key(target)}\n"
    )
    result = _collect(config, "prover-a", tmp_path)
    assert result.exit_code == 3
    assert "@revoked" in result.stderr and result.stderr.count("\n") == 1


def test_a_cert_authority_line_alone_is_refused_and_says_why(
    servers: tuple[SshServer, SshServer], tmp_path: Path
) -> None:
    target, bastion = servers
    config = _config(tmp_path, target, bastion)
    authority = keygen(tmp_path / "ca")
    ca_key = " ".join(authority.with_suffix(".pub").read_text().split()[:2])
    (tmp_path / "kh" / "global").write_text(f"@cert-authority [127.0.0.1]:* {ca_key}\n")
    result = _collect(config, "prover-a", tmp_path)
    assert result.exit_code == 3
    assert "cannot verify host certificates" in result.stderr
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("strict", ["accept-new", "no"])
def test_strict_host_key_checking_accept_new_records_the_key(
    servers: tuple[SshServer, SshServer], tmp_path: Path, strict: str
) -> None:
    target, bastion = servers
    config = _config(tmp_path, target, bastion, strict=strict)
    result = _collect(config, "prover-a", tmp_path)
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["host_key"]["trust"] == "accepted_new"
    assert (report["host_key"]["note"] is not None) == (strict == "no")
    written = (tmp_path / "kh" / f"127.0.0.1-{target.port}").read_text()
    assert written.startswith(f"[127.0.0.1]:{target.port} {_host_key(target)}")
    again = _collect(config, "prover-a", tmp_path)
    assert json.loads(again.stdout)["host_key"]["trust"] == "known_hosts"


def test_an_unknown_key_is_refused_under_strict_checking_naming_the_files(
    servers: tuple[SshServer, SshServer], tmp_path: Path
) -> None:
    target, bastion = servers
    config = _config(tmp_path, target, bastion)
    result = _collect(config, "prover-a", tmp_path)
    assert result.exit_code == 3
    assert f"{tmp_path}/kh/common" in result.stderr and "--accept-new-host-key" in result.stderr


def test_proxy_jump_from_the_config_goes_through_the_bastion(
    servers: tuple[SshServer, SshServer], tmp_path: Path
) -> None:
    target, bastion = servers
    config = _config(tmp_path, target, bastion)
    (tmp_path / "kh" / "common").write_text(
        f"[127.0.0.1]:{target.port} {_host_key(target)}\n"
        f"[127.0.0.1]:{bastion.port} {_host_key(bastion)}\n"
    )
    (bastion.root / "authorized_keys").write_text(
        bastion.client_key.with_suffix(".pub").read_text()
        + target.client_key.with_suffix(".pub").read_text()
    )
    result = _collect(config, "prover-b", tmp_path)
    assert result.exit_code == 0, result.stderr
    deadline = time.monotonic() + 10
    while "Accepted publickey" not in (bastion.root / "sshd.log").read_text():
        assert time.monotonic() < deadline, "the bastion never saw a login"
        time.sleep(0.1)


def _logins(server: SshServer) -> int:
    return (server.root / "sshd.log").read_text().count("Accepted publickey")


def test_a_jump_hosts_own_proxy_jump_is_followed_through_two_bastions(
    make_sshd: Any, tmp_path: Path
) -> None:
    """prover-c jumps through inner, and the config gives inner a jump of its own, edge:
    ssh goes edge -> inner -> prover-c, and so do we (each bastion logs our login)."""
    target, inner, edge = make_sshd(), make_sshd(), make_sshd()
    config = _config(tmp_path, target, inner)
    config.write_text(
        f"Host prover-c\n  Port {target.port}\n  ProxyJump inner\n"
        f"Host inner\n  Port {inner.port}\n  ProxyJump edge\n"
        f"Host edge\n  Port {edge.port}\n"
        + config.read_text().replace("Host prover-* bastion", "Host prover-* inner edge")
    )
    (tmp_path / "kh" / "common").write_text(
        "".join(f"[127.0.0.1]:{s.port} {_host_key(s)}\n" for s in (target, inner, edge))
    )
    keys = "".join(s.client_key.with_suffix(".pub").read_text() for s in (target, inner))
    for bastion in (inner, edge):
        (bastion.root / "authorized_keys").write_text(keys)
    before = {"inner": _logins(inner), "edge": _logins(edge)}
    result = _collect(config, "prover-c", tmp_path)
    assert result.exit_code == 0, result.stderr
    deadline = time.monotonic() + 10
    while _logins(inner) == before["inner"] or _logins(edge) == before["edge"]:
        assert time.monotonic() < deadline, "a bastion never saw our login"
        time.sleep(0.1)
    explained = run_cli("collect", "prover-c", "--ssh-config", str(config), "--explain-ssh")
    hops = [line for line in explained.stdout.splitlines() if line.endswith(":")]
    assert hops == [
        f"# jump host {USER}@127.0.0.1:{edge.port}:",
        f"# jump host {USER}@127.0.0.1:{inner.port}:",
        f"# {USER}@127.0.0.1:{target.port}:",
    ], explained.stdout


@pytest.mark.skipif(shutil.which("ssh") is None, reason="OpenSSH client not installed")
def test_explain_ssh_prints_what_ssh_g_prints(
    servers: tuple[SshServer, SshServer], tmp_path: Path
) -> None:
    target, bastion = servers
    config = _config(tmp_path, target, bastion)
    for host in ("prover-a", "prover-b", "bastion"):
        result = run_cli("collect", host, "--ssh-config", str(config), "--explain-ssh")
        assert result.exit_code == 0, result.stderr
        ours = sorted(line for line in result.stdout.splitlines() if not line.startswith("#"))
        keywords = {line.split(" ", 1)[0] for line in ours}
        theirs = subprocess.run(
            ["ssh", "-F", str(config), "-G", host],
            capture_output=True, text=True, check=True, stdin=subprocess.DEVNULL,
        ).stdout.splitlines()  # fmt: skip
        assert ours == sorted(line for line in theirs if line.split(" ", 1)[0] in keywords)
        assert "# config files read:" in result.stdout
