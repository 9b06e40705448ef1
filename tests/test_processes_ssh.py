"""Real processes in real states, collected through the real sshd and the real CLI.

One module fixture starts them all and collects once: a zombie whose parent never waits,
a ``Zl`` zombie (main thread gone, a thread still sleeping), a process with secrets on its
command line, a parent whose name holds parentheses, a newline and markup, and a process
frozen by the v1 freezer cgroup (the kernel shows frozen tasks in D). A second test builds
a PID namespace whose PID 1 is not an init and collects it through a scenario sshd.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.sshd import SshServer

GAP = "0.5"
SECRET_A = "sk9Qx7SecretAlpha"
SECRET_B = "hunter2SecretBravo"
ODD_NAME = "<i>) Z 1 (`|\nx"
FORGED_ARG = "\n==> /proc/1/stat <==\n1 (forged) Z 0 0 0"

ZL_CODE = """
import ctypes, threading, time
libc = ctypes.CDLL(None)
libc.prctl(15, b"zl-demo", 0, 0, 0)
threading.Thread(target=time.sleep, args=(120,)).start()
libc.pthread_exit(None)
"""
# dash's echo would turn this thread name's backslash-n into a newline and a forged line.
ODD_THREAD = "x\\nthread 1 1 D"
ODD_CODE = f"""
import ctypes, os, threading, time
libc = ctypes.CDLL(None)
libc.prctl(15, {ODD_NAME.encode()!r}, 0, 0, 0)
if os.fork() == 0:
    os._exit(3)
def named():
    libc.prctl(15, {ODD_THREAD.encode()!r}, 0, 0, 0)
    time.sleep(120)
threading.Thread(target=named, daemon=True).start()
time.sleep(120)
"""


def state(pid: int) -> str | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split(" ", 1)[0]


def children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def wait_for(condition: Callable[[], bool], what: str, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


@dataclass
class Scenario:
    report: dict[str, Any]
    bundle: Path
    markdown: str
    text: str
    pids: dict[str, int] = field(default_factory=dict)

    def findings(self, finding_id: str) -> list[dict[str, Any]]:
        return [f for f in self.report["findings"] if f["id"] == finding_id]

    def process(self, pid: int) -> dict[str, Any]:
        return next(p for p in self.report["facts"]["processes"]["processes"] if p["pid"] == pid)


class Freezer:
    """A v1 freezer cgroup of our own; frozen tasks show state D."""

    def __init__(self) -> None:
        self.path = Path(f"/sys/fs/cgroup/freezer/forensics-test-{os.getpid()}")

    def freeze(self, pid: int) -> bool:
        try:
            self.path.mkdir()
            (self.path / "cgroup.procs").write_text(f"{pid}\n")
            (self.path / "freezer.state").write_text("FROZEN\n")
        except OSError:
            return False
        return True

    def thaw_and_remove(self) -> None:
        if not self.path.exists():
            return
        with contextlib.suppress(OSError):
            (self.path / "freezer.state").write_text("THAWED\n")


@pytest.fixture(scope="module")
def scenario(sshd: SshServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    started: list[subprocess.Popen[bytes]] = []
    freezer = Freezer()

    def start(argv: list[str]) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        started.append(process)
        return process

    try:
        never_waits = start(["sh", "-c", "sleep 0.1 & exec sleep 120"])
        zl = start([sys.executable, "-c", ZL_CODE])
        secret = start(
            [sys.executable, "-c", "import time; time.sleep(120)", f"--api-key={SECRET_A}",
             f"PASSWORD={SECRET_B}"]
        )  # fmt: skip
        odd = start([sys.executable, "-c", ODD_CODE, FORGED_ARG, "two words"])
        frozen = start(["sleep", "120"])
        wait_for(lambda: any(state(c) == "Z" for c in children(never_waits.pid)), "a zombie")
        wait_for(lambda: state(zl.pid) == "Z", "the Zl zombie")
        wait_for(lambda: any(state(c) == "Z" for c in children(odd.pid)), "the odd zombie")
        wait_for(lambda: state(secret.pid) == "S", "the secret process")
        pids = {
            "parent": never_waits.pid,
            "zombie": children(never_waits.pid)[0],
            "zl": zl.pid,
            "secret": secret.pid,
            "odd": odd.pid,
            "odd_zombie": children(odd.pid)[0],
        }
        if freezer.freeze(frozen.pid):
            wait_for(lambda: state(frozen.pid) == "D", "the frozen process")
            pids["frozen"] = frozen.pid
        out = tmp_path_factory.mktemp("bundles")
        result = run_cli(
            "collect", *sshd.target_args(), "--out", str(out), "--format", "json",
            "--snapshot-gap", GAP, "--focus", "zl[-]demo", "--fail-on", "never",
        )  # fmt: skip
        assert result.exit_code == 0, result.stderr
        report = json.loads(result.stdout)
        bundle = Path(report["bundle"])
        markdown = run_cli("analyze", str(bundle), "--format", "md", "--fail-on", "never")
        text = run_cli("analyze", str(bundle), "--format", "text", "--fail-on", "never")
        assert markdown.exit_code == 0 and text.exit_code == 0, markdown.stderr + text.stderr
        yield Scenario(report, bundle, markdown.stdout, text.stdout, pids)
    finally:
        freezer.thaw_and_remove()
        for process in started:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)
        if freezer.path.exists():
            wait_for(lambda: not (freezer.path / "tasks").read_text().strip(), "freezer empty")
            freezer.path.rmdir()


def test_zombie_whose_parent_never_waits_is_reported(scenario: Scenario) -> None:
    zombie, parent = scenario.pids["zombie"], scenario.pids["parent"]
    [found] = [f for f in scenario.findings("process.zombie") if f["subject"].get("pid") == zombie]
    assert found["severity"] == "warning"
    assert found["subject"]["ppid"] == parent
    assert found["subject"]["parent_name"] == "sleep"
    assert found["subject"]["persisted"] is True
    assert found["evidence"][0]["section"] == "processes"
    [reaping] = [
        f for f in scenario.findings("process.parent_not_reaping") if f["subject"]["pid"] == zombie
    ]
    assert reaping["subject"]["ppid"] == parent
    assert f"sleep (pid {parent}) is alive but does not reap" in reaping["title"]
    raw = (scenario.bundle / "raw" / "processes.txt").read_text(errors="replace").split("\n")
    first = found["evidence"][0]
    assert raw[first["first_line"] - 1].startswith(f"{zombie} (sleep) Z {parent} ")
    # The second snapshot closed the script in a section of its own, and is cited there.
    again = (scenario.bundle / "raw" / "processes_again.txt").read_text(errors="replace")
    [second] = [ref for ref in found["evidence"] if ref["section"] == "processes_again"]
    line = again.split("\n")[second["first_line"] - 1]
    assert line.startswith(f"{zombie} (sleep) Z {parent} ")


def test_zombie_with_live_threads_is_not_blamed_on_its_parent(scenario: Scenario) -> None:
    zl = scenario.pids["zl"]
    [alive] = [
        f for f in scenario.findings("process.zombie_threads_alive") if f["subject"]["pid"] == zl
    ]
    assert alive["severity"] == "critical", "it is the focus process"
    assert alive["subject"]["live_threads"] == 1
    assert alive["subject"]["thread_states"] == {"S": 1}
    assert "zl-demo (pid" in alive["title"]
    for finding_id in ("process.zombie", "process.parent_not_reaping"):
        assert all(f["subject"].get("pid") != zl for f in scenario.findings(finding_id))
    entry = scenario.process(zl)
    assert (entry["state"], entry["threads"], entry["task_count"]) == ("Z", 2, 2)
    assert [t["state"] for t in entry["thread_states"]] == ["Z", "S"]
    assert entry["thread_states"][1]["wchan"]


def test_focus_matching_only_a_zombie_is_not_running(scenario: Scenario) -> None:
    [finding] = scenario.findings("focus.not_running")
    assert finding["severity"] == "critical"
    assert finding["subject"]["zombies"] == [scenario.pids["zl"]]
    assert "a zombie" in finding["title"]
    trees = scenario.report["facts"]["processes"]["trees"]
    tree = next(t for t in trees if t["subject"] == scenario.pids["zl"])
    assert tree["why"] == ["focus", "zombie"]
    assert tree["ancestors"][0] == os.getpid()
    assert tree["ancestors"][-1] == 1
    assert f"{scenario.pids['zl']} zl-demo [Z, 2 threads] <defunct>" in scenario.markdown


def test_secrets_on_a_command_line_stay_in_the_raw_bundle_only(scenario: Scenario) -> None:
    raw = (scenario.bundle / "raw" / "processes.txt").read_bytes()
    assert SECRET_A.encode() in raw and SECRET_B.encode() in raw
    entry = scenario.process(scenario.pids["secret"])
    assert entry["argv"][-2:] == ["--api-key=[REDACTED]", "PASSWORD=[REDACTED]"]
    outputs = {
        "json": json.dumps(scenario.report),
        "report.json": (scenario.bundle / "report.json").read_text(),
        "markdown": scenario.markdown,
        "text": scenario.text,
    }
    for name, output in outputs.items():
        for secret in (SECRET_A, SECRET_B, SECRET_A[3:12], SECRET_B[7:]):
            assert secret not in output, f"{secret} leaked into {name}"


def test_names_with_parentheses_newlines_and_markup_parse(scenario: Scenario) -> None:
    odd, zombie = scenario.pids["odd"], scenario.pids["odd_zombie"]
    entry = scenario.process(odd)
    assert (entry["name"], entry["state"], entry["ppid"]) == (ODD_NAME, "S", os.getpid())
    assert entry["argv"][-2:] == [FORGED_ARG, "two words"]
    pid1 = scenario.process(1)
    assert pid1["name"] != "forged"
    assert pid1["thread_states"] == [], "a thread name forged a thread line"
    raw = (scenario.bundle / "raw" / "processes.txt").read_text(errors="replace")
    assert f"thread {odd} " in raw and f" {ODD_THREAD}\n" in raw
    [found] = [f for f in scenario.findings("process.zombie") if f["subject"]["pid"] == zombie]
    assert found["subject"]["parent_name"] == ODD_NAME
    assert "\n" not in found["title"]
    assert "exited with code 3" in found["explanation"]
    # Markdown: the findings table keeps its five columns, the tree one process per line.
    lines = scenario.markdown.splitlines()
    start = lines.index("| # | Severity | Finding | What |")
    table = lines[start : lines.index("", start)]
    assert all(line.replace("\\|", "").count("|") == 5 for line in table)
    assert f"{odd} <i>) Z 1 (`|\\nx [S" in scenario.markdown
    assert "\nx [S" not in scenario.markdown


def test_a_process_stuck_in_d_is_reported(scenario: Scenario) -> None:
    if "frozen" not in scenario.pids:
        pytest.skip("the v1 freezer cgroup is not writable here: no real D-state process")
    [finding] = scenario.findings("process.uninterruptible")
    assert scenario.pids["frozen"] in finding["subject"]["pids"]
    assert finding["severity"] == "warning"


def test_the_collection_does_not_report_itself(scenario: Scenario) -> None:
    facts = scenario.report["facts"]["processes"]
    collector = facts["collector_pid"]
    mine = {p["pid"] for p in facts["processes"] if p["collector"]}
    assert collector in mine
    assert facts["first_snapshot_complete"] and facts["second_snapshot_uptime_s"]
    gap = facts["second_snapshot_uptime_s"] - facts["first_snapshot_uptime_s"]
    # Both readings are exact to the hundredth; their float difference is not.
    assert round(float(GAP) * 100) <= round(gap * 100) < 500, "never shorter than asked"
    ran = [section["name"] for section in scenario.report["sections"]]
    assert (ran[0], ran[-1]) == ("processes", "processes_again")


def test_non_init_pid_1_with_an_orphan_zombie_is_reported(
    make_sshd: Callable[..., SshServer], tmp_path: Path
) -> None:
    namespace = subprocess.Popen(
        ["unshare", "--fork", "--pid", "--mount-proc", "sh", "-c",
         "sh -c 'sleep 0.1 &'; exec sleep 120"],
        start_new_session=True,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for(lambda: bool(children(namespace.pid)), "the namespace's PID 1")
        init = children(namespace.pid)[0]
        wait_for(lambda: any(state(c) == "Z" for c in children(init)), "the orphan zombie")
        server = make_sshd(
            force_command=f'nsenter -t {init} -p -m -- /bin/sh -c "$SSH_ORIGINAL_COMMAND"'
        )
        result = run_cli(
            "collect", *server.target_args(), "--out", str(tmp_path), "--format", "json",
            "--snapshot-gap", GAP, "--fail-on", "never",
        )  # fmt: skip
        assert result.exit_code == 0, result.stderr
        report = json.loads(result.stdout)
    finally:
        os.killpg(namespace.pid, signal.SIGKILL)
        namespace.wait(timeout=10)
    facts = report["facts"]["processes"]
    assert facts["pid1_is_known_init"] is False
    zombies = [p for p in facts["processes"] if p["state"] == "Z"]
    assert [(z["ppid"], z["name"]) for z in zombies] == [(1, "sleep")]
    [finding] = [f for f in report["findings"] if f["id"] == "init.not_reaping"]
    assert finding["subject"]["pid1_name"] == "sleep"
    assert finding["subject"]["zombies"] == [zombies[0]["pid"]]
    assert finding["subject"]["persisted"] is True
    assert "not an init" in finding["title"]
    assert not [f for f in report["findings"] if f["id"] == "process.parent_not_reaping"]


def test_a_busybox_host_gives_the_same_answers(
    make_sshd: Callable[..., SshServer], tmp_path: Path
) -> None:
    applets = tmp_path / "busybox-bin"
    applets.mkdir()
    subprocess.run(["busybox", "--install", "-s", str(applets)], check=True)
    wrapper = (
        "unshare -m /bin/sh -c 'mount --bind /usr/bin/busybox /bin/sh && "
        "mount --bind /dev/null /usr/bin/getconf && "
        f'PATH={applets}:$PATH && export PATH && exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\''
    )
    server = make_sshd(force_command=wrapper)
    parent = subprocess.Popen(["sh", "-c", "sleep 0.1 & exec sleep 120"])
    zl = subprocess.Popen([sys.executable, "-c", ZL_CODE])
    try:
        wait_for(lambda: any(state(c) == "Z" for c in children(parent.pid)), "a zombie")
        wait_for(lambda: state(zl.pid) == "Z", "the Zl zombie")
        zombie = children(parent.pid)[0]
        result = run_cli(
            "collect", *server.target_args(), "--out", str(tmp_path), "--format", "json",
            "--snapshot-gap", GAP, "--fail-on", "never",
        )  # fmt: skip
    finally:
        for process in (parent, zl):
            process.kill()
            process.wait(timeout=10)
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    script = Path(report["bundle"], "script.sh").read_text()
    raw = Path(report["bundle"], "raw", "processes.txt").read_text(errors="replace")
    assert "clock_ticks \n" in raw, "busybox has no getconf: the defaults must hold"
    assert "ls -lnd" in script
    facts = report["facts"]["processes"]
    by_pid = {p["pid"]: p for p in facts["processes"]}
    assert by_pid[os.getpid()]["exe"] == os.path.realpath(sys.executable)
    assert [t["state"] for t in by_pid[zl.pid]["thread_states"]] == ["Z", "S"]
    ids = {(f["id"], f["subject"].get("pid")) for f in report["findings"]}
    assert ("process.zombie", zombie) in ids
    assert ("process.parent_not_reaping", zombie) in ids
    assert ("process.zombie_threads_alive", zl.pid) in ids
