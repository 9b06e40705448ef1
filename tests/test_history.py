"""History across sweeps: what is new, still present and resolved; `history`, `diff`; a
corrupt database is rebuilt; concurrent writers are safe."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from forensics.cli.history import render_runs
from forensics.fleet.store import History
from tests.conftest import run_cli
from tests.sshd import SshServer

# Files the `system` section reads with `head -c 65536` each: five of them at 128 KiB push
# the section past its 256 KiB cap, so the host really sends a section that gets cut.
INFLATED = (
    "/etc/os-release",
    "/proc/sys/kernel/hostname",
    "/proc/sys/kernel/osrelease",
    "/sys/devices/system/cpu/online",
    "/proc/1/sched",
)


def _scenario_host(make_sshd: type[SshServer], root: Path) -> tuple[SshServer, Path]:
    """A host whose small files become huge while ``flag`` exists: the session runs in a
    private mount namespace with a big file bind-mounted over each of them."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("the scenario host needs root and unshare(1) for a private mount namespace")
    big = root / "big.txt"
    big.write_text("a line of a file that grew far beyond what anyone expected\n" * 2300)
    flag = root / "inflate"
    binds = "; ".join(f"mount --bind {big} {path} || exit 97" for path in INFLATED)
    wrapper = root / "scenario.sh"
    wrapper.write_text(
        "#!/bin/sh\n"
        f"if [ -e {flag} ]; then\n"
        f"  exec unshare -m /bin/sh -c '{binds}; exec /bin/sh -c \"$SSH_ORIGINAL_COMMAND\"'\n"
        "fi\n"
        'exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n'
    )
    server = make_sshd(force_command=f"/bin/sh {wrapper}")
    return server, flag


def _inventory(server: SshServer, path: Path, name: str, **settings: object) -> Path:
    path.write_text(
        json.dumps(
            {
                "defaults": {
                    "user": os.environ.get("USER", "root"),
                    "identity": str(server.client_key),
                    "known_hosts": str(server.known_hosts),
                    "ssh_config": str(server.root / "ssh_config"),
                },
                "hosts": [{"name": name, "host": "127.0.0.1", "port": server.port, **settings}],
            }
        )
    )
    return path


def _sweep(inventory: Path, out: Path) -> dict:  # type: ignore[type-arg]
    result = run_cli(
        "sweep", "--inventory", str(inventory), "--out", str(out), "-f", "json", timeout=60
    )
    assert result.exit_code in (0, 1), result.stderr
    report = json.loads(result.stdout)
    (host,) = report["hosts"]
    assert host["status"] == "ok", host["reason"]
    return host  # type: ignore[no-any-return]


def _ids(findings: list[dict]) -> list[str]:  # type: ignore[type-arg]
    return [finding["id"] for finding in findings]


def test_a_cut_section_is_new_then_still_present_then_resolved(
    make_sshd: type[SshServer], tmp_path: Path
) -> None:
    server, flag = _scenario_host(make_sshd, tmp_path)
    # Only the system probe: other probes' findings (a real OOM kill elsewhere on this
    # machine between two sweeps) would be true changes, but not this test's.
    inventory = _inventory(server, tmp_path / "inventory.yaml", "scenario", probes=["system"])
    out = tmp_path / "out"

    first = _sweep(inventory, out)
    assert first["changes"]["previous_run"] is None
    assert "collection.section_incomplete" not in _ids(first["report"]["findings"])

    flag.touch()
    second = _sweep(inventory, out)
    assert _ids(second["changes"]["new"]) == ["collection.section_incomplete"]
    assert second["changes"]["new"][0]["subject"]["section"] == "system"
    assert "cut at 262144 bytes" in second["changes"]["new"][0]["title"]

    third = _sweep(inventory, out)
    assert _ids(third["changes"]["still"]) == ["collection.section_incomplete"]
    assert third["changes"]["new"] == []

    flag.unlink()
    fourth = _sweep(inventory, out)
    assert _ids(fourth["changes"]["resolved"]) == ["collection.section_incomplete"]
    assert fourth["changes"]["new"] == fourth["changes"]["still"] == []

    listed = run_cli("history", "--out", str(out), "--host", "scenario", "--json")
    assert listed.exit_code == 0, listed.stderr
    runs = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [(run["new"], run["resolved"]) for run in runs] == [(0, 1), (0, 0), (1, 0), (0, 0)]
    store = History.open(out / "history.sqlite", pytest.fail)
    table = render_runs(store.runs())
    store.close()
    assert table.count("scenario") == 4

    changed = run_cli("diff", first["bundle"], second["bundle"], "--json")
    assert changed.exit_code == 0, changed.stderr
    assert _ids(json.loads(changed.stdout)["new"]) == ["collection.section_incomplete"]
    back = run_cli("diff", second["bundle"], fourth["bundle"])
    assert "0 new, 0 still present, 1 resolved" in back.stdout
    assert "resolved  warning  collection.section_incomplete" in back.stdout


@pytest.mark.skipif(
    importlib.util.find_spec("forensics.probes.processes") is None,
    reason="needs the `processes` probe (probes/processes.py, process.zombie findings), "
    "which is not in this build yet; runs by itself once it is",
)
def test_a_real_zombie_is_new_in_the_second_sweep_and_resolved_once_reaped(
    sshd: SshServer, tmp_path: Path
) -> None:
    inventory = _inventory(sshd, tmp_path / "inventory.yaml", "zombie-host")
    out = tmp_path / "out"
    _sweep(inventory, out)
    # The parent forks a child that exits at once, and waits for it only when told to.
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, sys\n"
            "child = os.fork()\n"
            "if child == 0:\n    os._exit(0)\n"
            "print(child, flush=True)\n"
            "sys.stdin.readline()\n"
            "os.waitpid(child, 0)\n"
            "print('reaped', flush=True)\n"
            "sys.stdin.readline()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdin is not None and parent.stdout is not None
    try:
        zombie = parent.stdout.readline().strip()
        second = _sweep(inventory, out)
        new = [f for f in second["changes"]["new"] if f["id"] == "process.zombie"]
        assert any(zombie in map(str, f["subject"].values()) for f in new), second["changes"]
        parent.stdin.write("reap\n")
        parent.stdin.flush()
        assert parent.stdout.readline().strip() == "reaped"
        third = _sweep(inventory, out)
        resolved = [f for f in third["changes"]["resolved"] if f["id"] == "process.zombie"]
        assert any(zombie in map(str, f["subject"].values()) for f in resolved)
    finally:
        parent.kill()
        parent.wait()


def test_a_corrupt_history_is_moved_aside_and_rebuilt_without_failing_the_sweep(
    sshd: SshServer, tmp_path: Path
) -> None:
    inventory = _inventory(sshd, tmp_path / "inventory.yaml", "local-sshd")
    out = tmp_path / "out"
    out.mkdir()
    _torn_database(out / "history.sqlite")
    result = run_cli(
        "sweep", "--inventory", str(inventory), "--out", str(out), "--fail-on", "never"
    )
    assert result.exit_code == 0, result.stderr
    assert "history database" in result.stderr and "is unreadable" in result.stderr
    assert "moved it to" in result.stderr
    assert len(list(out.glob("history.sqlite.corrupt-*"))) == 1
    listed = run_cli("history", "--out", str(out), "--json")
    assert [json.loads(line)["host"] for line in listed.stdout.splitlines()] == ["local-sshd"]
    assert listed.stderr == ""


def _torn_database(path: Path) -> None:
    """A real SQLite database whose pages after the header were overwritten."""
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE t (x TEXT)")
    connection.executemany("INSERT INTO t VALUES (?)", [("x" * 100,)] * 200)
    connection.commit()
    connection.close()
    data = path.read_bytes()
    path.write_bytes(data[:100] + (b"torn write " * len(data))[: len(data) - 100])


WRITER = """
import sys
from datetime import UTC, datetime
from pathlib import Path
from forensics.fleet.fingerprint import TrackedFinding
from forensics.fleet.report import HostRun, HostStatus
from forensics.core.models import Severity
from forensics.fleet.store import History

store = History.open(Path(sys.argv[1]), lambda message: print(message, file=sys.stderr))
for number in range(40):
    host = HostRun(name=f"{sys.argv[2]}-{number}", address="h", status=HostStatus.ok,
                     started=datetime.now(UTC))
    findings = [TrackedFinding(fingerprint=f"{sys.argv[2]}{number}{k}", id="a.b",
                               severity=Severity.info, title="t") for k in range(3)]
    store.record("sweep", host, findings)
store.close()
"""


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    database = tmp_path / "history.sqlite"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(database), name],
            stderr=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parent.parent,
        )
        for name in ("a", "b", "c")
    ]
    errors = [writer.communicate(timeout=60)[1] for writer in writers]
    assert [writer.returncode for writer in writers] == [0, 0, 0], errors
    assert not any("history is off" in error for error in errors), errors
    import sqlite3

    with sqlite3.connect(database) as connection:
        assert connection.execute("SELECT count(*) FROM runs").fetchone() == (120,)
        assert connection.execute("SELECT count(*) FROM findings").fetchone() == (360,)
