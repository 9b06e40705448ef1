"""``collect --sudo`` and the inventory's ``sudo: true``: the script runs as root through the
real ``sudo -n``, on scenario hosts whose sessions run as an unprivileged user; a sudo that
wants a password is one clear line, and that host's row in a sweep."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.fleet import Fleet, fleet
from tests.scenario import write_executable
from tests.sshd import sshd_available

UNPRIVILEGED = 65534  # nobody
SECRET_LINE = "only root can read this line"
NOPASSWD = "nobody ALL=(root) NOPASSWD: /bin/sh\n"
PASSWORD = "nobody ALL=(root) /bin/sh\n"


def _unprivileged_host(root: Path, rule: str) -> str:
    """A ForceCommand that gives the session its own /etc/sudoers (``rule``, nothing else)
    in a private mount namespace, then drops to ``nobody`` before running the command."""
    sudoers = root / "sudoers"
    sudoers.parent.mkdir(parents=True, exist_ok=True)
    sudoers.write_text("Defaults !syslog, !lecture\n" + rule)
    sudoers.chmod(0o440)  # sudo refuses a sudoers file anyone else may write
    wrapper = write_executable(
        root / "unprivileged.sh",
        "#!/bin/sh\n"
        "exec unshare -m /bin/sh -c '\n"
        f"mount --bind {sudoers} /etc/sudoers &&\n"
        f"exec setpriv --reuid={UNPRIVILEGED} --regid={UNPRIVILEGED} --clear-groups "
        '/bin/sh -c "$SSH_ORIGINAL_COMMAND"\n'
        "'\n",
    )
    return str(wrapper)


@pytest.fixture(scope="module")
def sudo_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Fleet, Path]]:
    """Two hosts logging in as nobody: one may sudo without a password, one may not; and a
    log only root can reach (its directory is 0700)."""
    if not sshd_available():
        pytest.skip("OpenSSH server not installed (apt-get install openssh-server)")
    if shutil.which("sudo") is None or shutil.which("setpriv") is None:
        pytest.skip("sudo or setpriv not installed (apt-get install sudo util-linux)")
    root = tmp_path_factory.mktemp("sudo")
    private = root / "root-only"
    private.mkdir(mode=0o700)
    log = private / "daemon.log"
    log.write_text(f"starting\n{SECRET_LINE}\n")
    with fleet(root / "fleet") as made:
        made.add("sudo-ok", force_command=_unprivileged_host(root / "ok", NOPASSWD))
        made.add("sudo-password", force_command=_unprivileged_host(root / "pw", PASSWORD))
        yield made, log


def _collect(made: Fleet, name: str, log: Path, out: Path, *extra: str) -> dict[str, object]:
    host = made.host(name)
    result = run_cli(
        "collect", f"root@127.0.0.1:{host.port}", "--identity", str(made.client_key),
        "--known-hosts", str(made.known_hosts), "--ssh-config", str(made.root / "ssh_config"),
        "--probe", "logs", "--expect-log", str(log), "--log", str(log),
        "--out", str(out), "--format", "json", "--fail-on", "never", *extra,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    report: dict[str, object] = json.loads(result.stdout)
    return report


def _tail(report: dict[str, object]) -> list[str]:
    files = report["facts"]["logs"]["files"]  # type: ignore[index]
    return [line["text"] for file in files for line in file["tail"]]


def test_with_sudo_the_script_reads_what_only_root_can(
    sudo_hosts: tuple[Fleet, Path], tmp_path: Path
) -> None:
    made, log = sudo_hosts
    plain = _collect(made, "sudo-ok", log, tmp_path)
    ids = {finding["id"] for finding in plain["findings"]}  # type: ignore[attr-defined]
    assert "log.expected_missing" in ids  # nobody cannot see into a 0700 directory
    assert SECRET_LINE not in _tail(plain)
    elevated = _collect(made, "sudo-ok", log, tmp_path, "--sudo")
    assert SECRET_LINE in _tail(elevated)
    ids = {finding["id"] for finding in elevated["findings"]}  # type: ignore[attr-defined]
    assert "log.expected_missing" not in ids
    manifest = json.loads(next(tmp_path.glob("*/*/manifest.json")).read_text())
    assert "sudo -n /bin/sh" not in manifest["script"]  # the wrapper, not the script, elevates
    targets = [json.loads(p.read_text())["target"] for p in tmp_path.glob("*/*/manifest.json")]
    assert sorted(target["sudo"] for target in targets) == [False, True]


def test_a_sudo_that_wants_a_password_is_one_line_and_exit_3(
    sudo_hosts: tuple[Fleet, Path], tmp_path: Path
) -> None:
    made, _ = sudo_hosts
    host = made.host("sudo-password")
    result = run_cli(
        "collect", f"root@127.0.0.1:{host.port}", "--identity", str(made.client_key),
        "--known-hosts", str(made.known_hosts), "--ssh-config", str(made.root / "ssh_config"),
        "--probe", "system", "--out", str(tmp_path), "--sudo",
    )  # fmt: skip
    assert result.exit_code == 3, result
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "sudo refused to run the collection as root" in result.stderr
    assert "a password is required" in result.stderr
    assert "NOPASSWD" in result.stderr


def test_the_inventory_wires_sudo_logs_and_thresholds_into_a_sweep(
    sudo_hosts: tuple[Fleet, Path], tmp_path: Path
) -> None:
    made, log = sudo_hosts
    inventory = made.write_inventory(
        tmp_path / "inventory.yaml",
        user="root",
        sudo=True,
        probes=["logs", "memory"],
        logs=[str(log)],
        expected_logs=[str(log)],
        thresholds={"available_warning_percent": 100},  # any host is "low" on memory now
    )
    result = run_cli(
        "sweep", "--inventory", str(inventory), "--out", str(tmp_path / "out"),
        "--format", "json", "--fail-on", "never", "--allow-unreachable", "1", timeout=90,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "not used by this version" not in result.stderr
    hosts = {host["name"]: host for host in json.loads(result.stdout)["hosts"]}
    refused = hosts["sudo-password"]
    assert refused["status"] == "auth_failed"
    assert "a password is required" in refused["reason"]
    # The fleet report keeps findings; the facts are in the bundle its row links.
    ids = {finding["id"] for finding in hosts["sudo-ok"]["report"]["findings"]}
    assert "memory.available_low" in ids and "log.expected_missing" not in ids
    report = json.loads((Path(hosts["sudo-ok"]["bundle"]) / "report.json").read_text())
    assert report["target"]["sudo"] is True
    assert SECRET_LINE in _tail(report)
