"""What else the kernel log says went wrong: crashed processes, hung tasks, the kernel's own
failures, hardware errors. One finding per process, task, failure or device, with the
count and the first lines as evidence; what happened before the last boot (read from a
persistent journal, or a log file's older lines) says so in its title and subject. GPU
errors are read with nvidia-smi's facts in ``forensics/judge/rules/gpu_errors.py``.

- ``kernel.segfault`` (warning): a process killed with SIGSEGV (segfault or general
  protection fault); ``kernel.trap`` (warning) for the other CPU traps (SIGILL, SIGFPE,
  SIGTRAP). The error code is quoted as the log prints it (hex) with its meaning.
- ``kernel.hung_task`` (warning): a task blocked in the kernel (D state) past the limit.
- ``kernel.oops`` (critical): the kernel hit a bad access or a ``BUG()``; the task and the
  module it was in when the log names them. ``kernel.bug`` (warning): other ``BUG:``
  reports (scheduling while atomic, bad page state, workqueue lockup, ...).
- ``kernel.panic`` (critical): the kernel stopped (``Kernel panic - not syncing``).
- ``kernel.soft_lockup`` (warning), ``kernel.hard_lockup`` (critical): a CPU stuck in the
  kernel; ``kernel.rcu_stall`` (warning): RCU grace periods stalled.
- ``kernel.machine_check``: CPU/memory errors (MCE, EDAC); critical when uncorrected.
- ``kernel.pcie_aer``: a PCIe device reported a bus error; one per device, named by its bus
  id (and ``lspci``'s words when the host has lspci); critical when fatal, warning when
  uncorrected, info when corrected.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from itertools import islice

from forensics.core.models import EvidenceRef, Finding, Severity
from forensics.core.probe import RuleContext
from forensics.kernel.crashes import KernelCrash
from forensics.kernel.faults import UserFault, page_fault_words
from forensics.kernel.hung_tasks import HungTask
from forensics.kernel.machine_checks import MachineCheck
from forensics.kernel.pcie_aer import PcieError
from forensics.probes.kernel_log import KernelLogFacts

EVIDENCE_LINES_MAX = 5
BEFORE_BOOT = " (before the last boot)"


def rules(facts: KernelLogFacts, context: RuleContext) -> list[Finding]:
    return (
        _faults(facts.faults, facts.faults_suppressed)
        + _hung_tasks(facts.hung_tasks)
        + _crashes(facts.crashes)
        + _machine_checks(facts.machine_checks)
        + _pcie_errors(facts)
    )


def _faults(faults: list[UserFault], suppressed: int) -> list[Finding]:
    groups: dict[tuple[str, str, bool], list[UserFault]] = defaultdict(list)
    for fault in faults:
        groups[(fault.name, fault.signal or fault.kind, fault.previous_boot)].append(fault)
    findings = []
    for (name, _, previous), group in groups.items():
        last = group[-1]
        segv = last.signal == "SIGSEGV"
        kinds = sorted({fault.kind for fault in group})
        where = f" in {last.where}" if last.where else ""
        at_least = "at least " if suppressed else ""
        times = f" {at_least}{len(group)} times" if len(group) > 1 or suppressed else ""
        limited = (
            f" The kernel rate-limited these messages ({suppressed} suppressed): every count "
            "is a lower bound."
            if suppressed
            else ""
        )
        signal = f" ({last.signal})" if last.signal else ""
        detail = ""
        if last.kind == "segfault":
            detail = (
                f" The last one was a {page_fault_words(last.error)} (address {last.address}; "
                f"the log's error {last.error_text} is hex 0x{last.error_text})."
            )
        before = BEFORE_BOOT if previous else ""
        findings.append(
            Finding(
                id="kernel.segfault" if segv else "kernel.trap",
                severity=Severity.warning,
                title=f"{name} crashed{times}{before}: {' / '.join(kinds)}{signal}{where}",
                explanation=(
                    f"The kernel killed {name} with {last.signal or 'a signal'} for a "
                    f"{last.kind}{times}, last as pid {last.pid}{_at(last.time)}, with the "
                    f"instruction pointer {last.ip}{where}.{detail} The process had no "
                    "handler for it, so it died (exit status 139 for SIGSEGV, 132 SIGILL, "
                    f"136 SIGFPE).{limited}"
                ),
                next_steps=[
                    "Get a core dump next time: `ulimit -c unlimited` before starting it, and "
                    "check where cores go: `cat /proc/sys/kernel/core_pattern`.",
                    f"Map the address to code: `addr2line -e <{last.where or 'binary'}> "
                    "<offset>` (offset = ip - mapping start, shown in brackets in the line).",
                ],
                subject={
                    "name": name,
                    "kind": last.kind,
                    "count": len(group),
                    "pid": last.pid,
                    "error": last.error_text,
                    "lower_bound": suppressed > 0,
                    "previous_boot": previous,
                },
                evidence=_evidence(fault.evidence for fault in group),
            )
        )
    return findings


def _hung_tasks(tasks: list[HungTask]) -> list[Finding]:
    groups: dict[tuple[str, int, bool], list[HungTask]] = defaultdict(list)
    for task in tasks:
        groups[(task.name, task.pid, task.previous_boot)].append(task)
    findings = []
    for (name, pid, previous), group in groups.items():
        longest = max(task.blocked_s for task in group)
        before = BEFORE_BOOT if previous else ""
        findings.append(
            Finding(
                id="kernel.hung_task",
                severity=Severity.warning,
                title=f"{name} (pid {pid}) hung in the kernel for more than {longest} s{before}",
                explanation=(
                    f"The kernel's hung-task detector found {name} (pid {pid}) blocked in "
                    f"uninterruptible sleep (D state) for more than {longest} s"
                    f"{_at(group[0].time)}, reported {len(group)} time(s). Such a task cannot "
                    "be killed until the kernel call returns: storage, NFS, or a GPU driver "
                    "call are the usual causes. Only the first 10 hangs per boot are reported "
                    "(kernel.hung_task_warnings), so later ones may be silent."
                ),
                next_steps=[
                    f"If it is still there: `cat /proc/{pid}/stack` and `cat /proc/{pid}/wchan` "
                    "(as root) show where it waits; `ps -eo pid,stat,wchan:32,comm | awk "
                    "'$2 ~ /D/'` lists every task in D state.",
                    "Read the stack trace printed after the line in the kernel log.",
                ],
                subject={
                    "name": name,
                    "pid": pid,
                    "blocked_s": longest,
                    "count": len(group),
                    "previous_boot": previous,
                },
                evidence=_evidence(task.evidence for task in group),
            )
        )
    return findings


def _machine_checks(checks: list[MachineCheck]) -> list[Finding]:
    if not checks:
        return []
    uncorrected = [check for check in checks if check.uncorrected]
    corrected = [check for check in checks if check.uncorrected is False]
    severity = Severity.critical if uncorrected else Severity.warning
    if uncorrected:
        what = f"{len(uncorrected)} uncorrected hardware error line(s)"
    elif corrected:
        what = f"{len(corrected)} corrected hardware error line(s)"
    else:
        what = f"{len(checks)} hardware error line(s)"
    shown = uncorrected or checks
    return [
        Finding(
            id="kernel.machine_check",
            severity=severity,
            title=f"The kernel logged {what} (machine check / EDAC)",
            explanation=(
                f"The kernel logged {len(checks)} hardware error line(s), first"
                f"{_at(checks[0].time)}. Uncorrected errors can corrupt data or kill "
                "processes; corrected ones were fixed by the hardware but a rising count "
                "predicts a failing DIMM or CPU."
                + (" Some are uncorrected." if uncorrected else "")
            ),
            next_steps=[
                "Decode them with `rasdaemon` (`ras-mc-ctl --summary`) or `mcelog` on the host; "
                "check `edac-util -v` or /sys/devices/system/edac/mc/*/ce_count.",
                "Report the node to the provider or hardware team with these lines.",
            ],
            subject={
                "count": len(checks),
                "uncorrected": len(uncorrected),
                "corrected": len(corrected),
            },
            evidence=_evidence(check.evidence for check in shown),
        )
    ]


def _crashes(crashes: list[KernelCrash]) -> list[Finding]:
    groups: dict[tuple[object, ...], list[KernelCrash]] = defaultdict(list)
    for number, crash in enumerate(crashes):
        key: tuple[object, ...]
        if crash.kind == "oops":
            key = (crash.kind, number)
        elif crash.kind == "soft_lockup":
            key = (crash.kind, crash.name, crash.pid, crash.previous_boot)
        elif crash.kind == "hard_lockup":
            key = (crash.kind, crash.cpu, crash.previous_boot)
        else:
            key = (crash.kind, crash.detail, crash.previous_boot)
        groups[key].append(crash)
    return [_crash_finding(group) for group in groups.values()]


def _crash_finding(group: list[KernelCrash]) -> Finding:
    first = group[0]
    words = _CRASH_WORDS[first.kind]
    times = f", {len(group)} times" if len(group) > 1 else ""
    before = BEFORE_BOOT if first.previous_boot else ""
    task = f"{first.name} (pid {first.pid})" if first.name and first.pid is not None else None
    subject: dict[str, object] = {
        "kind": first.detail,
        "count": len(group),
        "previous_boot": first.previous_boot,
        "time": first.time.isoformat() if first.time else None,
    }
    if first.kind == "oops":
        inside = f" in {first.function}" if first.function else ""
        module = f" (module {first.module})" if first.module else ""
        at = f" at {first.where}" if first.where else ""
        title = (
            f"Kernel oops{before}: {_OOPS_WORDS.get(first.detail, first.detail)}{at}{inside}"
            f"{module}" + (f", while running {task}" if task else "")
        )
        subject.update(
            {"name": first.name, "pid": first.pid, "module": first.module, "where": first.where}
        )
        subject["function"] = first.function
    elif first.kind == "panic":
        title = f"The kernel panicked{before}: {first.detail}"
        subject = {"reason": first.detail, **subject}
    elif first.kind == "soft_lockup":
        longest = max(crash.stuck_s or 0 for crash in group)
        title = f"CPU {first.cpu} stuck in the kernel for {longest} s{before} running {task}{times}"
        subject.update({"cpu": first.cpu, "name": first.name, "pid": first.pid})
        subject["stuck_s"] = longest
    elif first.kind == "hard_lockup":
        title = f"CPU {first.cpu} locked up hard (no interrupts){before}{times}"
        subject["cpu"] = first.cpu
    elif first.kind == "rcu_stall":
        title = f"RCU stalls ({first.detail}){before}{times}"
        subject["flavor"] = first.detail
    else:
        title = f"Kernel BUG report{before}: {first.message[5:120]}{times}"
    explanation = (
        f"The kernel logged {words[0]}{_at(first.time)}{times}. {words[1]}"
        + (f" The task running was {task}." if task and first.kind != "soft_lockup" else "")
        + (" It happened before the last boot." if first.previous_boot else "")
    )
    steps = list(words[2])
    evidence = _evidence(ref for crash in group for ref in crash.evidence)
    said = {"title": title, "explanation": explanation, "next_steps": steps}
    # One literal id per kind: the finding catalogue reads them from the code.
    match first.kind:
        case "oops":
            return Finding(
                id="kernel.oops", severity=Severity.critical, **said, subject=subject,
                evidence=evidence,
            )  # fmt: skip
        case "panic":
            return Finding(
                id="kernel.panic", severity=Severity.critical, **said, subject=subject,
                evidence=evidence,
            )  # fmt: skip
        case "hard_lockup":
            return Finding(
                id="kernel.hard_lockup", severity=Severity.critical, **said, subject=subject,
                evidence=evidence,
            )  # fmt: skip
        case "soft_lockup":
            return Finding(
                id="kernel.soft_lockup", severity=Severity.warning, **said, subject=subject,
                evidence=evidence,
            )  # fmt: skip
        case "rcu_stall":
            return Finding(
                id="kernel.rcu_stall", severity=Severity.warning, **said, subject=subject,
                evidence=evidence,
            )  # fmt: skip
        case _:
            return Finding(
                id="kernel.bug", severity=Severity.warning, **said, subject=subject,
                evidence=evidence,
            )  # fmt: skip


_OOPS_WORDS = {
    "null_pointer": "NULL pointer dereference",
    "paging_request": "bad kernel memory access (page fault)",
    "general_protection": "general protection fault in kernel mode",
    "invalid_opcode": "invalid opcode in kernel mode",
    "kernel_bug": "kernel BUG()",
    "oops": "oops",
}
_CRASH_WORDS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "oops": (
        "an oops (the kernel itself faulted)",
        "The task it was running was killed, and the kernel may be unstable until the next "
        "reboot (locks held at the time stay held). A module named in the evidence (nvidia, "
        "nvidia_uvm, a filesystem) is the first suspect.",
        (
            "Read the whole oops with its call trace: `dmesg | grep -B 5 -A 40 'Oops\\|BUG:'`.",
            "Reboot the node soon; if the module is a driver (nvidia*), update it; report the "
            "trace to the module's maintainer.",
        ),
    ),
    "bug": (
        "a BUG: report (the kernel caught itself breaking one of its own rules)",
        "The kernel kept running, but such reports precede hangs and crashes.",
        (
            "Read the report and the trace after it in the kernel log; update the kernel or the "
            "module it names.",
        ),
    ),
    "panic": (
        "a kernel panic (the kernel stopped)",
        "Everything on the host died at that moment; the host then rebooted (or hung, if "
        "kernel.panic is 0).",
        (
            "Read the lines before the panic: they say why (an oops, a hard lockup, panic_on_oom).",
            "Keep the next crash: configure kdump (`kdump-config show` / `kdumpctl status`) "
            "or pstore (`ls /sys/fs/pstore`).",
        ),
    ),
    "soft_lockup": (
        "a soft lockup (a CPU ran kernel code without scheduling for the time shown)",
        "Work on that CPU stalled; the task named was running. A driver looping in the kernel "
        "(often a GPU or storage driver) or a hypervisor that stole the CPU are the usual "
        "causes.",
        (
            "Read the stack trace after the line: the top frames name the code that looped.",
            "On a VM, check the host for CPU steal (`top`, %st); otherwise update the driver "
            "named in the trace.",
        ),
    ),
    "hard_lockup": (
        "a hard lockup (a CPU stopped taking interrupts)",
        "The CPU was stuck with interrupts off; the kernel usually panics after it.",
        ("Read the trace after the line; check firmware/BIOS and hardware logs (BMC SEL).",),
    ),
    "rcu_stall": (
        "an RCU stall (CPUs or tasks held up RCU grace periods for a long time)",
        "Often a CPU stuck in the kernel (see soft lockups) or starved by a hypervisor; the "
        "host may be slow or about to hang.",
        (
            "Read the stall report: it names the stalled CPUs and tasks; look for soft lockups "
            "and hung tasks at the same time.",
        ),
    ),
}


def _pcie_errors(log: KernelLogFacts) -> list[Finding]:
    groups: dict[tuple[str, bool], list[PcieError]] = defaultdict(list)
    for error in log.pcie_errors:
        groups[(error.device, error.previous_boot)].append(error)
    findings = []
    order = ("unknown", "corrected", "uncorrected_nonfatal", "uncorrected_fatal")
    for (device, previous), group in groups.items():
        worst = max((error.severity for error in group), key=order.index)
        driver = next((error.driver for error in group if error.driver), None)
        kinds = sorted({error.error_type for error in group if error.error_type})
        described = log.lspci.get(device)
        name = f"{device} ({described})" if described else device
        if driver and not described:
            name = f"{device} (driver {driver})"
        before = BEFORE_BOOT if previous else ""
        severity = {
            "uncorrected_fatal": Severity.critical,
            "uncorrected_nonfatal": Severity.warning,
        }.get(worst, Severity.info)
        times = f"{len(group)} time(s)"
        findings.append(
            Finding(
                id="kernel.pcie_aer",
                severity=severity,
                title=f"PCIe device {name} reported {_AER_WORDS[worst]} bus errors{before}",
                explanation=(
                    f"The PCIe device {name} reported bus errors (AER) {times}, worst "
                    f"{_AER_WORDS[worst]}, first{_at(group[0].time)}"
                    + (f"; layers: {', '.join(kinds)}" if kinds else "")
                    + ". This is the PCIe link or the device, not the CPU or memory. "
                    "Corrected errors were retried by the hardware; many of them mean a "
                    "marginal link (slot, riser, cable). Uncorrected ones lose transactions: "
                    "the device's driver may reset it or fail."
                ),
                next_steps=[
                    f"`lspci -s {device} -vv` (as root) shows the link's AER status and speed.",
                    "Reseat or move the device; check its firmware; a GPU: `nvidia-smi -q`; "
                    "an NVMe drive: `nvme smart-log` / `smartctl -a`.",
                ],
                subject={
                    "device": device,
                    "severity": worst,
                    "count": len(group),
                    "driver": driver,
                    "lspci": described,
                    "previous_boot": previous,
                },
                evidence=_evidence(ref for error in group for ref in error.evidence),
            )
        )
    return findings


_AER_WORDS = {
    "corrected": "corrected",
    "uncorrected_nonfatal": "uncorrected (non-fatal)",
    "uncorrected_fatal": "uncorrected fatal",
    "unknown": "unclassified",
}


def _at(moment: datetime | None) -> str:
    return f" at {moment:%Y-%m-%d %H:%M:%S} UTC" if moment else ""


def _evidence(refs: Iterable[EvidenceRef]) -> list[EvidenceRef]:
    return list(islice(refs, EVIDENCE_LINES_MAX))
