"""The OOM verdict end to end, over SSH, on scenario hosts that show what this machine
cannot: a restricted kernel log, a wrapped ring buffer, other kernels' OOM formats, the
journal and kern.log fallbacks, a log too large to send whole, a wrapped buffer that still
reaches back to a real focus zombie's start."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from forensics.probes.kernel_log import LOG_BYTES_KEPT
from tests.kernel_samples import sample
from tests.kernel_scenario import KernelScenario, collect_json, findings
from tests.sshd import SshServer

MakeSshd = Callable[..., SshServer]

# A parent that never waits, and its child, named by argv[1], that exits at once.
ZOMBIE = """
import os, sys, time
pid = os.fork()
if pid == 0:
    with open("/proc/self/comm", "w") as comm:
        comm.write(sys.argv[1])
    os._exit(1)
print(pid, flush=True)
time.sleep(60)
"""


def run_scenario(
    make_sshd: MakeSshd, tmp_path: Path, scenario: KernelScenario, *extra: str
) -> dict[str, Any]:
    server = make_sshd(force_command=scenario.force_command())
    return collect_json(server, tmp_path / "bundles", *extra)


def test_restricted_dmesg_in_a_container_is_inconclusive_not_no_oom(
    make_sshd: MakeSshd, tmp_path: Path
) -> None:
    scenario = KernelScenario(tmp_path / "host", vmstat_oom_kill=3)
    report = run_scenario(make_sshd, tmp_path, scenario, "--focus", "cuzk")
    log = report["facts"]["kernel_log"]
    assert log["source"] is None
    assert [(a["source"], a["exit_status"], a["said"]) for a in log["attempts"]] == [
        ("dmesg", 1, "dmesg: read kernel buffer failed: Operation not permitted"),
        ("journalctl", 0, "No journal files were found."),
        ("/var/log/kern.log", 127, "absent"),
        ("/var/log/messages", 127, "absent"),
        ("/var/log/syslog", 127, "absent"),
    ]
    assert findings(report, "oom.ruled_out") == [] and findings(report, "oom.killed") == []
    [verdict] = findings(report, "oom.inconclusive")
    assert verdict["subject"]["reasons"] == ["log_unreadable", "kills_unexplained"]
    assert "Operation not permitted" in verdict["explanation"]
    assert "counted 3 OOM kills" in verdict["explanation"]
    assert any("sysctl kernel.dmesg_restrict=0" in step for step in verdict["next_steps"])
    assert verdict["evidence"][0]["excerpt"].startswith("tried dmesg 1 dmesg: read kernel")


def test_wrapped_ring_buffer_is_inconclusive(make_sshd: MakeSshd, tmp_path: Path) -> None:
    scenario = KernelScenario(tmp_path / "host", dmesg=sample("wrapped-5.15.dmesg"))
    report = run_scenario(make_sshd, tmp_path, scenario)
    assert report["facts"]["kernel_log"]["reaches_boot"] is False
    [verdict] = findings(report, "oom.inconclusive")
    assert verdict["subject"]["reasons"] == ["buffer_wrapped"]
    assert "has wrapped" in verdict["explanation"]
    assert verdict["evidence"][0]["excerpt"].startswith("[86012.301002]")


def test_log_from_boot_with_zero_counters_rules_out_oom(
    make_sshd: MakeSshd, tmp_path: Path
) -> None:
    scenario = KernelScenario(tmp_path / "host", dmesg=sample("no-oom-6.1.dmesg"))
    # The probes the verdict reads: this machine's own zombies or memory are not the point.
    only = ("--probe", "system", "--probe", "cgroup", "--probe", "kernel_log")
    report = run_scenario(make_sshd, tmp_path, scenario, "--focus", "cuzk", *only)
    assert [f["id"] for f in report["findings"]] == ["oom.ruled_out"]
    assert "no process matching 'cuzk'" in report["findings"][0]["title"]


def test_counter_the_log_does_not_explain_prevents_ruling_out(
    make_sshd: MakeSshd, tmp_path: Path
) -> None:
    scenario = KernelScenario(
        tmp_path / "host", dmesg=sample("no-oom-6.1.dmesg"), cgroup_oom_kill=1
    )
    report = run_scenario(make_sshd, tmp_path, scenario)
    [verdict] = findings(report, "oom.inconclusive")
    assert verdict["subject"]["reasons"] == ["kills_unexplained"]
    assert "/sys/fs/cgroup/memory oom_kill (root/pid1 cgroup) counted 1" in verdict["explanation"]


@pytest.mark.parametrize(
    ("name", "pid", "process", "scope", "memcg"),
    [
        ("oom-4.14-global.dmesg", 23077, "java", "system", None),
        ("oom-4.19-memcg-v1.dmesg", 4410, "node", "memory_cgroup", "/docker/9f3c2b7d81e4"),
        ("oom-5.15-memcg-v2.dmesg", 461998, "pt_main_thread", "memory_cgroup", "/kubepods"),
        ("oom-6.18-memcg-v1.dmesg", 26249, "oom hog)x", "memory_cgroup", "/forensics-try"),
    ],
)
def test_oom_reports_of_other_kernels_confirm_the_kill(
    make_sshd: MakeSshd,
    tmp_path: Path,
    name: str,
    pid: int,
    process: str,
    scope: str,
    memcg: str | None,
) -> None:
    scenario = KernelScenario(tmp_path / "host", dmesg=sample(name), vmstat_oom_kill=1)
    report = run_scenario(make_sshd, tmp_path, scenario)
    [killed] = findings(report, "oom.killed")
    assert killed["severity"] == "critical"
    assert (killed["subject"]["pid"], killed["subject"]["name"]) == (pid, process)
    assert killed["subject"]["scope"] == scope
    assert (killed["subject"]["oom_memcg"] or "").startswith(memcg or "")
    assert any(f"Killed process {pid} " in e["excerpt"] for e in killed["evidence"])
    assert findings(report, "oom.inconclusive") == findings(report, "oom.ruled_out") == []


def test_journal_answers_when_dmesg_is_restricted(make_sshd: MakeSshd, tmp_path: Path) -> None:
    scenario = KernelScenario(
        tmp_path / "host", journal=sample("oom-6.12-global.journal"), vmstat_oom_kill=1
    )
    report = run_scenario(make_sshd, tmp_path, scenario)
    log = report["facts"]["kernel_log"]
    assert log["source"] == "journalctl"
    assert [a["answered"] for a in log["attempts"]] == [False, True]
    [killed] = findings(report, "oom.killed")
    assert killed["subject"]["pid"] == 391822 and killed["subject"]["scope"] == "system"


def test_kern_log_answers_when_dmesg_and_journal_do_not(
    make_sshd: MakeSshd, tmp_path: Path
) -> None:
    boot = next(
        int(line.split()[1])
        for line in Path("/proc/stat").read_text().splitlines()
        if line.startswith("btime ")
    )

    def stamp(seconds: float) -> str:
        return time.strftime("%b %e %H:%M:%S", time.localtime(boot + seconds))

    kern_log = (
        f"{stamp(-86400)} old-host kernel: [ 2210.118200] Memory cgroup out of memory: Killed "
        "process 1870 (redis-server) total-vm:412004kB, anon-rss:261120kB, file-rss:3396kB, "
        "shmem-rss:0kB, UID:999 pgtables:624kB oom_score_adj:0\n"
        f"{stamp(0)} gpu-a kernel: [    0.000000] Linux version 5.4.0-150-generic\n"
        + "".join(
            f"{stamp(5)} gpu-a kernel: [    5.000000] {line.split('] ', 1)[1]}\n"
            for line in sample("oom-5.4-memcg.kern.log").splitlines()[3:]
        )
    )
    scenario = KernelScenario(tmp_path / "host", var_log={"kern.log": kern_log}, vmstat_oom_kill=1)
    report = run_scenario(make_sshd, tmp_path, scenario)
    log = report["facts"]["kernel_log"]
    assert log["source"] == "/var/log/kern.log" and log["reaches_boot"] is True
    killed = {f["subject"]["pid"]: f for f in findings(report, "oom.killed")}
    assert killed[8821]["severity"] == "critical"
    assert killed[8821]["subject"]["task_memcg"] == "/docker/3c9e2a1b"
    assert killed[1870]["severity"] == "warning"
    assert "before the last boot" in killed[1870]["title"]
    # On the timeline from the kernel's own stamp (5 s after boot), pointing at its line.
    [kill] = [e for e in report["timeline"] if e["text"].startswith("OOM kill of python3")]
    assert (kill["kind"], kill["source"], kill["approximate"]) == ("oom_kill", "kernel_log", True)
    assert datetime.fromisoformat(kill["time"]) == datetime.fromtimestamp(boot + 5, UTC)
    raw = (Path(report["bundle"]) / "raw" / "kernel_log.txt").read_text().splitlines()
    assert "Killed process 8821 (python3)" in raw[kill["line"] - 1]


def test_huge_log_is_filtered_on_the_host_and_keeps_its_first_line(
    make_sshd: MakeSshd, tmp_path: Path
) -> None:
    noise = "".join(
        f"[{100 + n / 1000:12.6f}] docker0: port 3(veth{n:06x}) entered forwarding state\n"
        for n in range(LOG_BYTES_KEPT // 50)
    )
    lines = sample("oom-5.10-storm.dmesg").splitlines(keepends=True)
    dmesg = "".join(lines[:2]) + noise + "".join(lines[2:])
    scenario = KernelScenario(tmp_path / "host", dmesg=dmesg, vmstat_oom_kill=3)
    report = run_scenario(make_sshd, tmp_path, scenario)
    log = report["facts"]["kernel_log"]
    assert log["filtered"] is True and log["log_bytes"] == len(dmesg)
    assert log["filtered_bytes"] < LOG_BYTES_KEPT == log["cap_bytes"]
    assert log["reaches_boot"] is True
    assert [k["pid"] for k in log["oom_kills"]] == [9101, 9107, 9113]
    raw = (Path(report["bundle"]) / "raw" / "kernel_log.txt").read_text().splitlines()
    for killed in findings(report, "oom.killed"):
        for evidence in killed["evidence"]:
            assert raw[evidence["first_line"] - 1] == evidence["excerpt"]
    assert findings(report, "oom.inconclusive") == []


def test_a_wrapped_buffer_that_reaches_the_focus_zombie_start_rules_it_out(
    make_sshd: MakeSshd, tmp_path: Path
) -> None:
    """The ring buffer's first line is from 30 s ago, long after boot; the focus process, a
    real zombie, started after it, and the counters read zero: not OOM-killed since it
    started."""
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    if uptime < 60:
        pytest.skip("this machine booted too recently for a buffer that wrapped after boot")
    first = uptime - 30
    dmesg = (
        f"[{first:12.6f}] docker0: port 3(veth3a1b2c) entered forwarding state\n"
        f"[{first + 1:12.6f}] eth0: renamed from veth9d8e7f\n"
    )
    name = f"fxwrap{os.getpid() % 100000}"
    parent = subprocess.Popen([sys.executable, "-c", ZOMBIE, name], stdout=subprocess.PIPE)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        deadline = time.monotonic() + 10
        while Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline, "the child should have become a zombie"
            time.sleep(0.05)
        scenario = KernelScenario(tmp_path / "host", dmesg=dmesg)
        report = run_scenario(make_sshd, tmp_path, scenario, "--focus", f"^{name}$")
    finally:
        parent.kill()
        parent.wait()
    assert report["facts"]["kernel_log"]["reaches_boot"] is False
    assert report["facts"]["processes"]["focus"]["zombies"] == [child]
    [verdict] = findings(report, "oom.ruled_out")
    assert verdict["subject"]["since_pid"] == child
    assert f"was OOM-killed since {name} (pid {child}) started at" in verdict["title"]
    assert "It does not reach back to boot" in verdict["explanation"]
    assert findings(report, "oom.inconclusive") == []
