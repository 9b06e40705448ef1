"""OpenSSH's client configuration read as ``ssh`` reads it: the same settings as
``ssh -G`` for a config that uses every keyword the tool acts on, Include and Match among
them; known_hosts files with hashed names, markers and ports."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from forensics.core.errors import UsageError
from forensics.remote.known_hosts import KnownHosts, host_names
from forensics.remote.ssh_config import jump_chain, resolve

SSH = shutil.which("ssh")
KEYWORDS = {
    "host", "hostname", "user", "port", "identityfile", "identitiesonly", "identityagent",
    "certificatefile", "userknownhostsfile", "globalknownhostsfile", "hostkeyalias",
    "stricthostkeychecking", "proxyjump", "proxycommand", "connecttimeout",
    "serveraliveinterval",
}  # fmt: skip

CONFIG = """\
# A fleet's config: an Include, Host patterns with a negation, tokens, Match blocks.
Include {root}/conf.d/*.conf

Host bastion
  HostName 127.0.0.2
  User ops
  Port 2200

Host gpu-* !gpu-skip
  HostName %h.fleet.example
  User root
  IdentityFile ~/.ssh/fleet_%r
  IdentityFile {root}/keys/%n-%p
  CertificateFile {root}/keys/%h-cert.pub
  UserKnownHostsFile {root}/kh/%h {root}/kh/common
  GlobalKnownHostsFile {root}/kh/global
  HostKeyAlias alias-%n
  StrictHostKeyChecking accept-new
  ProxyJump bastion,ops@127.0.0.3:2201
  IdentitiesOnly yes
  IdentityAgent {root}/agent.sock
  ConnectTimeout 7
  ServerAliveInterval=15

Match host *.fleet.example user root
  Port 2222

Match originalhost lab-* localuser {local_user}
  User lab
  StrictHostKeyChecking no

Host *
  User nobody
  ProxyCommand nc -w 5 %h %p
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "10-gpu-a.conf").write_text("Host gpu-a\n  Port 2022\n")
    path = tmp_path / "config"
    local_user = subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
    path.write_text(CONFIG.format(root=tmp_path, local_user=local_user))
    return path


def _ssh_g(config: Path, host: str, *extra: str) -> list[str]:
    assert SSH is not None
    out = subprocess.run(
        [SSH, "-F", str(config), "-G", *extra, host],
        capture_output=True, text=True, check=True, stdin=subprocess.DEVNULL,
    ).stdout  # fmt: skip
    return sorted(line for line in out.splitlines() if line.split(" ", 1)[0] in KEYWORDS)


@pytest.mark.skipif(SSH is None, reason="OpenSSH client not installed")
@pytest.mark.parametrize("host", ["gpu-a", "gpu-b", "gpu-skip", "bastion", "lab-7", "other"])
def test_settings_are_those_ssh_g_prints(config: Path, host: str) -> None:
    ours = sorted(resolve(host, config=config).ssh_g_lines())
    assert ours == _ssh_g(config, host)


@pytest.mark.skipif(SSH is None, reason="OpenSSH client not installed")
def test_the_command_line_wins_over_the_config(config: Path) -> None:
    ours = sorted(resolve("gpu-b", config=config, user="admin", port=2999).ssh_g_lines())
    assert ours == _ssh_g(config, "gpu-b", "-l", "admin", "-p", "2999")


def test_tokens_expand_in_paths(config: Path, tmp_path: Path) -> None:
    settings = resolve("gpu-b", config=config, home="/home/alice")
    assert settings.identity_paths() == [
        Path("/home/alice/.ssh/fleet_root"),
        tmp_path / "keys" / "gpu-b-2222",
    ]
    assert settings.certificate_paths() == [tmp_path / "keys" / "gpu-b.fleet.example-cert.pub"]
    assert [str(j) for j in settings.jumps()] == ["bastion", "ops@127.0.0.3:2201"]


def test_match_exec_is_not_run_and_says_so(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    config = tmp_path / "config"
    config.write_text(f'Match exec "touch {marker}"\n  Port 2022\n')
    settings = resolve("gpu-a", config=config)
    assert settings.port == 22 and not marker.exists()
    assert any("Match exec is not run" in note for note in settings.notes)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("Host a\n  Port 70000\n", "not 1..65535"),
        ("Host a\n  StrictHostKeyChecking maybe\n", "StrictHostKeyChecking"),
        ("Host a\n  HostName %z\n", "unknown token"),
        ("Host a\n  ConnectTimeout soon\n", "ConnectTimeout"),
    ],
)
def test_a_bad_config_is_one_clear_error(tmp_path: Path, text: str, said: str) -> None:
    config = tmp_path / "config"
    config.write_text(text)
    with pytest.raises(UsageError, match=said):
        resolve("a", config=config)


JUMPS = """\
Host gpu-a
  ProxyJump bastion,gate
Host gpu-b
  ProxyJump gate
Host gate
  HostName 10.0.0.2
  ProxyJump never-followed
Host bastion
  HostName 10.0.0.1
  ProxyJump ops@edge:2222
Host edge
  ProxyCommand nc -x socks.example:1080 %h %p
Host loop-a
  ProxyJump loop-b
Host loop-b
  ProxyJump loop-a
Host *.internal
  ProxyJump bastion.internal
"""


def test_the_first_jump_hosts_own_proxy_jump_is_followed_as_ssh_follows_it(
    tmp_path: Path,
) -> None:
    """ssh runs ``ssh -J bastion -W gpu-a:22 gate``: gate's own ProxyJump is not read;
    bastion's is (its ssh has no -J), and so is edge's ProxyCommand."""
    path = tmp_path / "config"
    path.write_text(JUMPS)
    chain = jump_chain(resolve("gpu-a", config=path), path)
    assert [(hop.host, hop.user, hop.port) for hop in chain.hops] == [
        ("edge", "ops", 2222),
        ("bastion", resolve("bastion", config=path).user, 22),
        ("gate", resolve("gate", config=path).user, 22),
    ]
    assert chain.first_command == "nc -x socks.example:1080 edge 2222"
    # The only hop is also the first: its own ProxyJump comes before it.
    assert [hop.host for hop in jump_chain(resolve("gpu-b", config=path), path).hops] == [
        "never-followed",
        "gate",
    ]
    assert jump_chain(resolve("edge", config=path), path) == jump_chain(
        resolve("edge", config=path, proxy_jump="none"), path
    )


@pytest.mark.parametrize(
    ("host", "via"), [("loop-a", "loop-b"), ("gpu-c.internal", "bastion.internal")]
)
def test_jump_hosts_that_lead_back_to_themselves_are_one_clear_error(
    tmp_path: Path, host: str, via: str
) -> None:
    path = tmp_path / "config"
    path.write_text(JUMPS)
    with pytest.raises(UsageError) as raised:
        jump_chain(resolve(host, config=path), path)
    assert raised.value.message.startswith("ProxyJump: jump host loop via ")
    assert via in raised.value.message and "ProxyJump none" in raised.value.message


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen not installed")
def test_known_hosts_with_hashed_names_ports_and_markers(tmp_path: Path) -> None:
    key = "AAAAC3NzaC1lZDI1NTE5AAAAIHostKeyOfGpuA"
    other = "AAAAC3NzaC1lZDI1NTE5AAAAIAnotherKey0"
    plain = tmp_path / "known_hosts"
    plain.write_text(f"[gpu-a]:2222 ssh-ed25519 {key}\ngpu-c ssh-ed25519 {key}\n")
    subprocess.run(
        ["ssh-keygen", "-H", "-f", str(plain)], check=True, capture_output=True,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert "gpu-a" not in plain.read_text(), "ssh-keygen -H hashed the names"
    marked = tmp_path / "known_hosts.marked"
    marked.write_text(
        f"@revoked * ssh-ed25519 {other}\n@cert-authority *.fleet.example ssh-ed25519 {key}\n"
    )
    known = KnownHosts.load([plain, tmp_path / "missing", marked])
    assert known.files_read == [str(plain), str(marked)]
    assert known.judge(host_names("gpu-a", 2222), "ssh-ed25519", key).verdict == "known"
    assert known.judge(host_names("gpu-a", 22), "ssh-ed25519", key).verdict == "unknown"
    changed = known.judge(host_names("gpu-c", 22), "ssh-ed25519", other)
    assert changed.verdict == "revoked"
    changed = known.judge(host_names("gpu-c", 22), "ssh-ed25519", key[:-1] + "1")
    assert changed.verdict == "changed" and changed.line is not None
    ca = known.judge(host_names("gpu-x.fleet.example", 22), "ssh-ed25519", other[:-1] + "9")
    assert ca.verdict == "cert_authority_only"
