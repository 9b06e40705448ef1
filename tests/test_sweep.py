"""Sweeps over real sshd hosts on loopback: each failure is that host's row, the sweep keeps
its deadline, an interrupted sweep keeps every finished bundle, and ProxyJump works."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from forensics.fleet.fingerprint import track
from forensics.judge.analysis import analyze
from forensics.judge.host_report import HostReport
from forensics.remote import bundle
from tests.conftest import run_cli
from tests.fleet import Fleet, fleet
from tests.rendered import markdown_headings, markdown_table
from tests.sshd import sshd_available

GOOD = ("good-1", "good-2", "good-3", "good-4")
FAILING = {
    "closed": "unreachable",
    "refusing": "auth_failed",
    "changed-key": "host_key_rejected",
    "hanging": "timeout",
}


@pytest.fixture(scope="module")
def eight_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """Four good hosts, and one each with a closed port, a refused key, a changed host key,
    and a session that hangs (ForceCommand sleeps; 30 s, so no session outlives the tests
    for long: sshd's session processes leave its process group, and stop() cannot reach them)."""
    if not sshd_available():
        pytest.skip("OpenSSH server not installed (apt-get install openssh-server)")
    with fleet(tmp_path_factory.mktemp("fleet")) as made:
        made.add("good-1")
        made.add("good-2")
        made.add("hanging", force_command="sleep 30")
        made.add("good-3")
        made.add("closed", listening=False)
        made.add("refusing", refuse_key=True)
        made.add("changed-key", wrong_host_key=True)
        made.add("good-4")
        yield made


def _sweep_dir(out: Path) -> Path:
    (found,) = [path for path in out.iterdir() if path.is_dir()]
    return found


def _bundles(sweep_dir: Path, host: str) -> list[Path]:
    return sorted((sweep_dir / host).glob("*/manifest.json"))


def _judged(path: Path) -> HostReport:
    """The bundle read back (every raw file checked against its sha256) and judged again;
    it must agree with the report written at collection time."""
    manifest, captures = bundle.load(path)
    report = analyze(manifest, captures, bundle=str(path))
    written = HostReport.model_validate_json((path / "report.json").read_text())
    assert written.findings == report.findings
    return report


def test_a_sweep_keeps_its_deadline_and_gives_each_host_its_own_status(
    eight_hosts: Fleet, tmp_path: Path
) -> None:
    inventory = eight_hosts.write_inventory(tmp_path / "inventory.yaml")
    out = tmp_path / "out"
    began = time.monotonic()
    result = run_cli(
        "sweep", "--inventory", str(inventory), "--out", str(out), "--timeout", "4",
        "--format", "json", timeout=60,
    )  # fmt: skip
    elapsed = time.monotonic() - began
    assert result.exit_code == 3, result.stderr
    assert elapsed < 15, f"the sweep took {elapsed:.1f}s for a 4s per-host deadline"
    report = json.loads(result.stdout)
    statuses = {host["name"]: host["status"] for host in report["hosts"]}
    assert statuses == {**dict.fromkeys(GOOD, "ok"), **FAILING}
    rows = {host["name"]: host for host in report["hosts"]}
    closed = rows["closed"]["reason"].lower()
    assert "connection refused" in closed or "unable to connect" in closed
    assert "HOST KEY CHANGED" in rows["changed-key"]["reason"]
    assert rows["refusing"]["report"] is None
    sweep_dir = Path(report["directory"])
    assert json.loads((sweep_dir / "fleet.json").read_text())["sweep_id"] == report["sweep_id"]
    for name in GOOD:
        (manifest,) = _bundles(sweep_dir, name)
        judged = _judged(manifest.parent)
        assert judged.status == "ok"
        # The row links the bundle and keeps its findings, not its facts.
        assert rows[name]["bundle"] == str(manifest.parent)
        assert set(rows[name]["report"]) == {
            "headline", "findings", "unchecked", "complete_sections", "traits",
        }  # fmt: skip
        assert [f["fingerprint"] for f in rows[name]["report"]["findings"]] == [
            f.fingerprint for f in track(judged.findings, name)
        ]
    for name in ("closed", "refusing", "changed-key"):
        assert not (sweep_dir / name).exists()


def test_the_summary_and_the_markdown_page_list_the_hosts_not_collected(
    eight_hosts: Fleet, tmp_path: Path
) -> None:
    inventory = eight_hosts.write_inventory(
        tmp_path / "inventory.yaml", ["good-1", "closed", "refusing"]
    )
    result = run_cli("sweep", "--inventory", str(inventory), "--out", str(tmp_path / "out"))
    assert result.exit_code == 3, result.stderr
    assert "collected 1 of 3 hosts" in result.stdout
    assert "not collected (2):" in result.stdout
    assert "  closed  unreachable: " in result.stdout
    assert "  refusing  auth_failed: " in result.stdout
    allowed = run_cli(
        "sweep",
        "--inventory",
        str(inventory),
        "--out",
        str(tmp_path / "out"),
        "--allow-unreachable",
        "2",
        "--fail-on",
        "never",
        "--format",
        "md",
    )
    assert allowed.exit_code == 0, allowed.stderr
    hosts = markdown_table(allowed.stdout, "Standing")
    statuses = {row[1]: (row[0], row[2]) for row in hosts.rows}
    assert statuses["closed"] == ("NOT COLLECTED", "unreachable")
    assert statuses["refusing"] == ("NOT COLLECTED", "auth_failed")
    assert statuses["good-1"][1] == "ok"
    assert "What changed" in markdown_headings(allowed.stdout, 2)
    assert re.search(  # the first sweep, above, is good-1's previous run
        r"\*\*Since the previous run of each host:\*\* \d+ new, \d+ still present, \d+ resolved",
        allowed.stdout,
    ), allowed.stdout


def test_sigint_keeps_finished_bundles_whole_and_lists_the_rest(
    eight_hosts: Fleet, tmp_path: Path
) -> None:
    order = ["good-1", "good-2", "hanging", "good-3", "closed", "good-4"]
    inventory = eight_hosts.write_inventory(tmp_path / "inventory.yaml", order)
    out = tmp_path / "out"
    process = subprocess.Popen(
        [sys.executable, "-m", "forensics", "sweep", "--inventory", str(inventory),
         "--out", str(out), "--concurrency", "1", "--timeout", "60", "--grace", "1s"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            sweeps = [path for path in out.glob("*") if path.is_dir()]
            if sweeps and _bundles(sweeps[0], "good-1") and _bundles(sweeps[0], "good-2"):
                break
            time.sleep(0.05)
        else:
            pytest.fail("the first two hosts were not collected within 30s")
        time.sleep(0.3)  # the hanging host is in flight now
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, stderr
    assert "collected 2 of 6 hosts" in stdout
    assert "stopped early by SIGINT" in stdout
    assert "  hanging  interrupted: " in stdout
    for name in ("good-3", "closed", "good-4"):
        assert f"  {name}  not_started: " in stdout
    assert (
        "stopped by SIGINT: collected 2 of 6 hosts; not collected: closed, good-3, good-4, "
        "hanging" in stderr
    )
    sweep_dir = _sweep_dir(out)
    for name in ("good-1", "good-2"):
        (manifest,) = _bundles(sweep_dir, name)
        assert _judged(manifest.parent).status == "ok"
    assert not list(sweep_dir.glob("*/.incomplete-*"))
    fleet_report = json.loads((sweep_dir / "fleet.json").read_text())
    assert fleet_report["interrupted_by"] == "SIGINT"
    assert {host["name"]: host["status"] for host in fleet_report["hosts"]} == {
        "good-1": "ok",
        "good-2": "ok",
        "hanging": "interrupted",
        "good-3": "not_started",
        "closed": "not_started",
        "good-4": "not_started",
    }


def test_proxy_jump_goes_through_the_bastion(eight_hosts: Fleet, tmp_path: Path) -> None:
    bastion = eight_hosts.host("good-1")
    assert bastion.server is not None
    log = bastion.server.root / "sshd.log"
    logins_before = log.read_text().count("Accepted publickey")
    inventory = tmp_path / "inventory.yaml"
    eight_hosts.write_inventory(inventory, ["good-2"])
    document = json.loads(inventory.read_text())
    document["hosts"][0]["proxy_jump"] = (
        f"{os.environ.get('USER', 'root')}@127.0.0.1:{bastion.port}"
    )
    inventory.write_text(json.dumps(document))
    result = run_cli(
        "sweep", "--inventory", str(inventory), "--out", str(tmp_path / "out"), "-f", "json",
        "--fail-on", "never",
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["hosts"][0]["status"] == "ok"
    deadline = time.monotonic() + 5
    while log.read_text().count("Accepted publickey") == logins_before:
        assert time.monotonic() < deadline, "the bastion never saw a login"
        time.sleep(0.05)


def test_a_second_scheduled_sweep_is_refused_and_sigterm_ends_the_first_cleanly(
    eight_hosts: Fleet, tmp_path: Path
) -> None:
    inventory = eight_hosts.write_inventory(tmp_path / "inventory.yaml", ["good-3"])
    out = tmp_path / "out"
    # Reports go to a file: each one is larger than a pipe's buffer, and nobody reads the
    # pipe until the end.
    report_file = (tmp_path / "reports.jsonl").open("w")
    scheduled = subprocess.Popen(
        [sys.executable, "-m", "forensics", "sweep", "--inventory", str(inventory),
         "--out", str(out), "--every", "1s", "--jitter", "0.2s", "--format", "json"],
        stdout=report_file, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while len(list(out.glob("*/fleet.json"))) < 2:
            assert time.monotonic() < deadline, "two scheduled sweeps did not run within 30s"
            time.sleep(0.05)
        second = run_cli("sweep", "--inventory", str(inventory), "--out", str(out))
        assert second.exit_code == 4
        assert f"pid {scheduled.pid}" in second.stderr
        assert "--every 1s" in second.stderr
        scheduled.send_signal(signal.SIGTERM)
        _, stderr = scheduled.communicate(timeout=30)
    finally:
        if scheduled.poll() is None:
            scheduled.kill()
            scheduled.wait()
        report_file.close()
    stdout = (tmp_path / "reports.jsonl").read_text()
    assert scheduled.returncode == 0, stderr
    reports = [json.loads(line) for line in stdout.splitlines()]
    assert len(reports) >= 2
    assert all(report["interrupted_by"] is None for report in reports)
    assert len(reports) == len(list(out.glob("*/fleet.json")))
    assert all(report["hosts"][0]["status"] == "ok" for report in reports)
    history = run_cli("history", "--out", str(out), "--json")
    assert len(history.stdout.splitlines()) == len(reports)


def test_progress_is_drawn_on_a_terminal_and_not_in_a_pipe(
    eight_hosts: Fleet, tmp_path: Path
) -> None:
    inventory = eight_hosts.write_inventory(tmp_path / "inventory.yaml", ["good-4", "closed"])
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "forensics", "sweep", "--inventory", str(inventory), "--out",
         str(tmp_path / "out")],
        stdout=subprocess.PIPE, stderr=terminal, stdin=subprocess.DEVNULL,
        env={**os.environ, "COLUMNS": "150", "TERM": "xterm"},
    )  # fmt: skip
    os.close(terminal)
    drawn = b""
    while True:
        ready, _, _ = select.select([controller], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(controller, 65536)
        except OSError:
            break
        if not chunk:
            break
        drawn += chunk
    os.close(controller)
    stdout, _ = process.communicate(timeout=30)
    shown = drawn.decode("utf-8", "replace")
    assert "in flight" in shown
    assert "closed: unreachable" in shown
    assert b"in flight" not in stdout
    piped = run_cli("sweep", "--inventory", str(inventory), "--out", str(tmp_path / "out2"))
    assert "in flight" not in piped.stderr


def test_a_tarpit_that_never_sends_a_banner_is_unreachable_within_its_connect_timeout(
    eight_hosts: Fleet, tmp_path: Path
) -> None:
    """Like endlessh: it accepts, then drips pre-banner lines forever."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def drip(connection: socket.socket) -> None:
        with connection, contextlib.suppress(OSError):
            while not stop.wait(0.3):
                connection.sendall(b"not yet\r\n")

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = server.accept()
                threading.Thread(target=drip, args=(connection,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        inventory = eight_hosts.write_inventory(tmp_path / "inventory.yaml", ["good-1"])
        document = json.loads(inventory.read_text())
        document["hosts"].append(
            {"name": "tarpit", "host": "127.0.0.1", "port": server.getsockname()[1]}
        )
        inventory.write_text(json.dumps(document))
        began = time.monotonic()
        result = run_cli(
            "sweep", "--inventory", str(inventory), "--out", str(tmp_path / "out"), "-f", "json",
            "--connect-timeout", "1",
        )  # fmt: skip
        elapsed = time.monotonic() - began
    finally:
        stop.set()
        server.close()
    assert result.exit_code == 3, result.stderr
    rows = {host["name"]: host["status"] for host in json.loads(result.stdout)["hosts"]}
    assert rows == {"good-1": "ok", "tarpit": "unreachable"}
    assert elapsed < 10
