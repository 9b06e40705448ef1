"""``forensics arm``, the flight recorder, on real processes: a daemon whose exit status
is read from its zombie, a real memcg OOM kill, a ``Zl`` zombie, a connection cut under the
recorder, and nothing left on the host after Ctrl-C (in a PID namespace)."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from forensics.remote import bundle
from tests.fleet import fleet
from tests.recorder_scenario import DAEMON, SLOW_HOG, arm, wait_armed
from tests.sshd import SshServer
from tests.test_oom_real import LIMIT_BYTES, memory_cgroup  # noqa: F401 (a fixture)
from tests.test_processes_ssh import ZL_CODE, Freezer


def _report(stdout: str) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(stdout)
    return report


def _findings(report: dict[str, Any], finding_id: str) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["id"] == finding_id]


def _marker(word: str) -> str:
    # Random, not from the pid: the kernel log outlives a run, and fresh containers reuse pids.
    return f"fx{word}{secrets.token_hex(3)}"


@pytest.fixture
def reaped() -> Iterator[list[subprocess.Popen[Any]]]:
    """Processes the test starts; killed and reaped afterwards."""
    started: list[subprocess.Popen[Any]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()


def test_a_daemon_that_exits_42_is_caught_from_its_zombie_with_its_rss_ramp(
    sshd: SshServer, tmp_path: Path, reaped: list[subprocess.Popen[Any]]
) -> None:
    name = _marker("d42")
    go = tmp_path / "go"
    daemon = subprocess.Popen(
        [sys.executable, "-c", DAEMON, name, str(go), "25"], stdout=subprocess.PIPE, text=True
    )
    reaped.append(daemon)
    armed = arm(
        *sshd.target_args(), "--focus", f"^{name}$", "--out", str(tmp_path / "out"),
        "--format", "json", "--snapshot-gap", "0", "--for", "90s",
    )  # fmt: skip
    armed.wait_for(": armed")
    go.touch()
    status, out, err = armed.finish()
    assert daemon.stdout is not None
    zombie_line = daemon.stdout.readline().split()
    zombie_at = float(zombie_line[2])
    assert status == 1, err
    report = _report(out)
    [exited] = _findings(report, "focus.exited")
    assert exited["severity"] == "critical"
    assert exited["subject"]["exit"] == "exit status 42"
    assert exited["subject"]["pid"] == int(zombie_line[1])
    assert "read from its zombie" in exited["title"] and name in exited["title"]
    assert "RSS grew" in exited["explanation"]
    # The collection ran while the zombie still existed: the process table shows it.
    assert "is a zombie" in _findings(report, "focus.not_running")[0]["title"]
    manifest, captures = bundle.load(Path(report["bundle"]))
    started = manifest.started.timestamp()
    assert started - zombie_at < 2.0, f"collection began {started - zombie_at:.2f}s after exit"
    recording = [json.loads(line) for line in captures["recorder"].lines]
    rss = [
        p["rss_kb"]
        for record in recording
        if record["record"] == "sample"
        for p in record.get("processes", [])
        if p.get("rss_kb") is not None
    ]
    assert max(rss) - min(rss) >= 100 * 1024, rss
    timeline = [event["text"] for event in report["timeline"] if event["source"] == "recorder"]
    assert any("fired on zombie" in text for text in timeline)


def test_a_real_memcg_oom_kill_fires_the_oom_event_with_the_usage_reaching_the_limit(
    sshd: SshServer,
    memory_cgroup: Path,  # noqa: F811
    tmp_path: Path,
    reaped: list[subprocess.Popen[Any]],
) -> None:
    name = _marker("hog")
    go = tmp_path / "go"
    hog = subprocess.Popen([sys.executable, "-c", SLOW_HOG, name, str(memory_cgroup), str(go)])
    reaped.append(hog)
    armed = arm(
        *sshd.target_args(), "--focus", f"^{name}$", "--on", "oom", "--every", "250ms", "--out",
        str(tmp_path / "out"), "--format", "json", "--snapshot-gap", "0", "--for", "90s",
    )  # fmt: skip
    armed.wait_for(": armed")
    go.touch()
    status, out, err = armed.finish()
    assert status == 1, err
    assert hog.wait(10) == -signal.SIGKILL
    report = _report(out)
    events = report["facts"]["recorder"]["events"]
    assert [event["kind"] for event in events] == ["oom"]
    assert memory_cgroup.name in events[0]["detail"]
    [triggered] = _findings(report, "recorder.triggered")
    assert triggered["severity"] == "critical"
    assert "limit" in triggered["explanation"]
    killed = [f for f in _findings(report, "oom.killed") if f["subject"].get("pid") == hog.pid]
    assert killed and killed[0]["subject"]["name"] == name
    usage = [
        cgroup["usage_bytes"]
        for sample in report["facts"]["recorder"]["samples"]
        for cgroup in sample["cgroups"]
        if cgroup["path"].endswith(memory_cgroup.name) and cgroup.get("usage_bytes")
    ]
    # Climbing in 2 MiB steps to the 64 MiB limit, sampled every 250 ms.
    assert max(usage) >= 0.8 * LIMIT_BYTES and min(usage) < 0.5 * LIMIT_BYTES, usage


def test_a_zl_zombie_fires_and_the_report_says_it_has_not_finished_dying(
    tmp_path: Path, reaped: list[subprocess.Popen[Any]]
) -> None:
    name = _marker("zl")
    go = tmp_path / "go"
    # Named and alive before the recorder starts, so its first look finds it (a process that
    # appears later is found at the next look, every 30 s); its main thread exits on "go",
    # while the recorder watches, and another thread lives on for 30 s: a Zl zombie.
    code = ZL_CODE.replace("120", "30").replace(
        "libc.pthread_exit",
        f"while not os.path.exists({str(go)!r}): time.sleep(0.05)\nlibc.pthread_exit",
    )
    code = "import os\n" + code.replace('b"zl-demo"', repr(name.encode()))
    zl = subprocess.Popen([sys.executable, "-c", code])
    reaped.append(zl)
    comm = Path(f"/proc/{zl.pid}/comm")
    deadline = time.monotonic() + 30
    while comm.read_text().strip() != name:
        assert time.monotonic() < deadline, "the Zl demo never took its name"
        time.sleep(0.05)
    armed = arm(
        "local", "--focus", f"^{name}$", "--out", str(tmp_path / "out"), "--format", "json",
        "--snapshot-gap", "0", "--for", "60s", "--on", "zombie",
    )  # fmt: skip
    armed.wait_for(f": armed; focus: {name} ({zl.pid})")
    go.touch()
    status, out, err = armed.finish()
    assert status == 1, err
    assert "state Zl" in err, err
    report = _report(out)
    [exited] = _findings(report, "focus.exited")
    assert "has not finished dying" in exited["title"], exited["title"]
    assert exited["severity"] == "critical"


def _sshd_children(server: SshServer) -> list[int]:
    assert server.process is not None
    path = Path(f"/proc/{server.process.pid}/task/{server.process.pid}/children")
    return [int(pid) for pid in path.read_text().split()]


def test_a_cut_connection_is_retried_and_the_gap_is_reported(
    make_sshd: type[SshServer], tmp_path: Path, reaped: list[subprocess.Popen[Any]]
) -> None:
    server = make_sshd()
    marker = _marker("cut")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", marker])
    reaped.append(sleeper)
    armed = arm(
        *server.target_args(), "--focus", marker, "--on", "exit", "--out",
        str(tmp_path / "out"), "--format", "json", "--snapshot-gap", "0", "--for", "90s",
    )  # fmt: skip
    armed.wait_for(": armed")
    sessions = _sshd_children(server)
    assert sessions, "the recorder's session should be open"
    for pid in sessions:
        os.kill(pid, signal.SIGKILL)
    armed.wait_for("connection back after")
    wait_armed(1)  # the first samples after reconnecting
    sleeper.kill()
    sleeper.wait()
    status, out, err = armed.finish()
    assert status == 1, err
    assert "connection lost" in err and "connection back after" in err
    report = _report(out)
    [gap] = _findings(report, "recorder.gap")
    assert gap["severity"] == "warning"
    [exited] = _findings(report, "focus.exited")
    assert "parent reaped it" in exited["title"]


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)")
@pytest.mark.parametrize(("signal_name", "status"), [("INT", 130), ("TERM", 143)])
def test_ctrl_c_or_sigterm_leaves_nothing_running_on_the_host(
    tmp_path: Path, signal_name: str, status: int
) -> None:
    """In a PID namespace of its own, after Ctrl-C (or SIGTERM) only its PID 1 (this shell)
    is left, and the loop's private directory is gone."""
    script = (
        f"{sys.executable} -m forensics arm local --focus '^fxnothing$' --on exit "
        f"--out {tmp_path / 'out'} & pid=$!\n"
        "sleep 4\n"
        f'kill -{signal_name} "$pid"; wait "$pid"; echo "rc=$?"\n'
        'for d in /proc/[0-9]*; do read -r c <$d/comm && echo "left ${d#/proc/} $c"; done\n'
    )
    private = tmp_path / "tmp"
    private.mkdir()
    completed = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", "/bin/sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TMPDIR": str(private)},
    )
    if completed.returncode != 0 and "Operation not permitted" in completed.stderr:
        pytest.skip("no PID namespaces here")
    assert f"rc={status}" in completed.stdout, completed.stdout + completed.stderr
    left = [line for line in completed.stdout.splitlines() if line.startswith("left ")]
    assert left == ["left 1 sh"], left
    assert "nothing left on the host" in completed.stderr
    assert list(private.iterdir()) == [], "the loop's private directory was removed"


def test_an_inventory_arms_every_host_and_only_the_one_that_fired_writes_a_bundle(
    tmp_path: Path, reaped: list[subprocess.Popen[Any]]
) -> None:
    marker_a, marker_b = _marker("inva"), _marker("invb")
    for marker in (marker_a, marker_b):
        reaped.append(
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", marker])
        )
    with fleet(tmp_path / "fleet") as made:
        made.add("alpha", focus=marker_a)
        made.add("bravo", focus=marker_b)
        inventory = made.write_inventory(tmp_path / "inventory.yaml")
        armed = arm(
            "--inventory", str(inventory), "--on", "exit", "--out", str(tmp_path / "out"),
            "--format", "json", "--snapshot-gap", "0", "--for", "20s",
        )  # fmt: skip
        armed.wait_for("alpha: armed", "bravo: armed")
        reaped[0].kill()
        reaped[0].wait()
        status, out, err = armed.finish()
    assert status == 1, err
    assert "alpha: fired (exit:" in err and "bravo: fired" not in err
    report = _report(out)
    assert report["target"]["name"] == "alpha"
    assert [path.name for path in (tmp_path / "out").iterdir()] == ["alpha"]


def test_keep_armed_fires_again_when_the_focus_process_restarts(
    tmp_path: Path, reaped: list[subprocess.Popen[Any]]
) -> None:
    marker = _marker("restart")
    argv = [sys.executable, "-c", "import time; time.sleep(300)", marker]
    reaped.append(subprocess.Popen(argv))
    armed = arm(
        "local", "--focus", marker, "--on", "exit", "--on", "new-focus", "--keep-armed",
        "--out", str(tmp_path / "out"), "--snapshot-gap", "0", "--probe", "processes",
        "--for", "12s", "--format", "json",
    )  # fmt: skip
    armed.wait_for(": armed")
    reaped[0].kill()
    reaped[0].wait()
    reaped.append(subprocess.Popen(argv))  # the supervisor restarts it
    status, _, err = armed.finish()
    assert status == 1, err
    assert "fired (exit:" in err and "fired (new-focus:" in err, err
    assert len(list((tmp_path / "out" / "local").iterdir())) == 2


def test_memory_below_the_threshold_fires_without_a_focus(tmp_path: Path) -> None:
    armed = arm(
        "local", "--on", "memory", "--available", "<1000TiB", "--out", str(tmp_path / "out"),
        "--probe", "memory", "--format", "json", "--for", "30s",
    )  # fmt: skip
    status, out, err = armed.finish()
    assert status == 1, err
    [triggered] = _findings(_report(out), "recorder.triggered")
    assert triggered["severity"] == "warning"
    assert "MemAvailable < 1024000.0 GiB" in triggered["title"], triggered["title"]


def test_a_thread_stuck_in_d_fires_after_stuck_after(
    tmp_path: Path, reaped: list[subprocess.Popen[Any]]
) -> None:
    marker = _marker("frozen")
    frozen = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", marker])
    reaped.append(frozen)
    freezer = Freezer()
    freezer.path = freezer.path.with_name(freezer.path.name + "-arm")
    if not freezer.freeze(frozen.pid):
        pytest.skip("the v1 freezer cgroup is not writable here: no real D-state process")
    try:
        armed = arm(
            "local", "--focus", marker, "--on", "stuck", "--stuck-after", "2s",
            "--out", str(tmp_path / "out"), "--probe", "processes", "--snapshot-gap", "0",
            "--format", "json", "--for", "40s",
        )  # fmt: skip
        status, out, err = armed.finish()
    finally:
        freezer.thaw_and_remove()
        frozen.kill()
        frozen.wait()
        with contextlib.suppress(OSError):
            freezer.path.rmdir()
    assert status == 1, err
    [triggered] = _findings(_report(out), "recorder.triggered")
    assert triggered["severity"] == "critical"
    assert "in state D for" in triggered["title"], triggered["title"]
