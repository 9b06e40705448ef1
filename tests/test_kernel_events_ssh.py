"""Kernel and GPU events end to end, over SSH, on scenario hosts whose dmesg, journalctl,
lspci and /var/log show what this machine cannot: a GPU lost without an Xid, an OOM kill
in the previous boot's persistent journal, a general protection fault in 3.10's words."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.kernel_samples import sample
from tests.kernel_scenario import KernelScenario, collect_json, findings
from tests.sshd import SshServer

MakeSshd = Callable[..., SshServer]

LOST_GPU = (
    "[    0.000000] Linux version 6.5.0-41-generic (buildd@lcy02-amd64-011) #41~22.04.2-Ubuntu\n"
    "[    4.210004] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07\n"
    "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
    "               NVRM: (PCI ID: 10de:2330) installed in this system has\n"
    "               NVRM: fallen off the bus and is not responding to commands.\n"
    "[ 1843.308301] nvidia: probe of 0000:b3:00.0 failed with error -1\n"
    "[ 2001.220010] pcieport 0000:5d:00.0: AER: Corrected error received: 0000:5e:00.0\n"
    "[ 2001.220030] nvme 0000:5e:00.0: AER: PCIe Bus Error: severity=Corrected, "
    "type=Physical Layer, (Receiver ID)\n"
)


def run_scenario(make_sshd: MakeSshd, tmp_path: Path, scenario: KernelScenario) -> dict[str, Any]:
    server = make_sshd(force_command=scenario.force_command())
    return collect_json(server, tmp_path / "bundles")


def boot_time() -> int:
    return next(
        int(line.split()[1])
        for line in Path("/proc/stat").read_text().splitlines()
        if line.startswith("btime ")
    )


def test_gpu_lost_without_an_xid_is_critical_and_named_by_bus_id_with_lspci(
    make_sshd: MakeSshd, tmp_path: Path
) -> None:
    scenario = KernelScenario(
        tmp_path / "host",
        dmesg=LOST_GPU,
        lspci={
            "0000:b3:00.0": "b3:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] "
            "(rev ff)",
            "0000:5e:00.0": "5e:00.0 Non-Volatile memory controller: Samsung Electronics Co Ltd "
            "NVMe SSD Controller PM9A1/PM9A3/980PRO",
        },
    )
    report = run_scenario(make_sshd, tmp_path, scenario)
    assert findings(report, "gpu.xid") == []
    [lost] = findings(report, "gpu.fallen_off_bus")
    assert lost["severity"] == "critical"
    assert lost["subject"]["bus_id"] == "00000000:B3:00.0"
    assert "(rev ff)" in lost["subject"]["lspci"] and "(rev ff)" in lost["explanation"]
    first, last = (e["excerpt"] for e in lost["evidence"])
    assert first.endswith("NVRM: The NVIDIA GPU 0000:b3:00.0")
    assert last.endswith("fallen off the bus and is not responding to commands.")
    [aer] = findings(report, "kernel.pcie_aer")
    assert aer["subject"]["device"] == "0000:5e:00.0" and aer["subject"]["driver"] == "nvme"
    assert "Samsung" in aer["title"] and findings(report, "kernel.machine_check") == []


def test_oom_kill_of_the_previous_boot_is_read_from_the_persistent_journal(
    make_sshd: MakeSshd, tmp_path: Path
) -> None:
    killed_at = datetime.fromtimestamp(boot_time() - 600, UTC)
    stamp = killed_at.strftime("%Y-%m-%dT%H:%M:%S.331201+00:00")
    previous = (
        f"{stamp} gpu-b kernel: vllm invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE"
        "|__GFP_COMP|__GFP_ZERO), order=0, oom_score_adj=0\n"
        f"{stamp} gpu-b kernel: Out of memory: Killed process 20411 (vllm) total-vm:312004112kB, "
        "anon-rss:250112004kB, file-rss:402112kB, shmem-rss:2097152kB, UID:998 "
        "pgtables:520004kB oom_score_adj:0\n"
        f"{stamp} gpu-b kernel: audit: type=1131 audit(1764441000.120:812): pid=1 uid=0\n"
    )
    scenario = KernelScenario(
        tmp_path / "host", dmesg=sample("no-oom-6.1.dmesg"), previous_journal=previous
    )
    report = run_scenario(make_sshd, tmp_path, scenario)
    log = report["facts"]["kernel_log"]
    assert log["source"] == "dmesg"
    assert log["previous_boot"]["exit_status"] == 0 and log["previous_boot"]["said"] == "ok"
    [killed] = findings(report, "oom.killed")
    assert killed["subject"]["pid"] == 20411 and killed["subject"]["previous_boot"] is True
    assert killed["severity"] == "warning" and "before the last boot" in killed["title"]
    assert datetime.fromisoformat(killed["subject"]["time"]) == killed_at.replace(
        microsecond=331201
    )
    raw = (Path(report["bundle"]) / "raw" / "kernel_log.txt").read_text().splitlines()
    assert "=== previous boot ===" in raw
    assert "Killed process 20411 (vllm)" in raw[killed["evidence"][-1]["first_line"] - 1]
    assert "audit:" not in "\n".join(raw), "only matching lines of the previous boot are sent"
    # This boot is still judged on its own: read whole from boot, nothing killed.
    [verdict] = findings(report, "oom.ruled_out")
    assert "Before the last boot, 1 process(es) were OOM-killed (vllm)" in verdict["explanation"]


def test_a_host_without_a_persistent_journal_says_why_the_previous_boot_is_missing(
    make_sshd: MakeSshd, tmp_path: Path
) -> None:
    scenario = KernelScenario(tmp_path / "host", dmesg=sample("no-oom-6.1.dmesg"))
    report = run_scenario(make_sshd, tmp_path, scenario)
    previous = report["facts"]["kernel_log"]["previous_boot"]
    assert previous["exit_status"] == 1 and "no persistent journal" in previous["said"]
    assert findings(report, "oom.killed") == []


def test_general_protection_fault_in_3_10_words_is_a_crash(
    make_sshd: MakeSshd, tmp_path: Path
) -> None:
    def stamp(seconds: float) -> str:
        return time.strftime("%b %e %H:%M:%S", time.localtime(boot_time() + seconds))

    messages = (
        f"{stamp(3600)} app-3 kernel: traps: java[31337] general protection ip:7f3a9c2b1d40 "
        "sp:7f3a1b7fd9a0 error:0 in libjvm.so[7f3a9b600000+1000000]\n"
        f"{stamp(3601)} app-3 systemd: app.service: main process exited, code=killed, "
        "status=11/SEGV\n"
    )
    scenario = KernelScenario(tmp_path / "host", var_log={"messages": messages})
    report = run_scenario(make_sshd, tmp_path, scenario)
    assert report["facts"]["kernel_log"]["source"] == "/var/log/messages"
    [crash] = findings(report, "kernel.segfault")
    assert crash["subject"]["name"] == "java" and crash["subject"]["pid"] == 31337
    assert crash["subject"]["kind"] == "general protection fault"
    assert "SIGSEGV" in crash["title"] and "libjvm.so" in crash["title"]
