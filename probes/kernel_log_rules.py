"""What else the kernel log says went wrong: crashed processes, hung tasks, hardware errors.
One finding per process, task, or kind of hardware error, with the count and the first
lines as evidence. GPU Xid errors are read with nvidia-smi's facts in
``forensics/judge/rules/gpu_errors.py`` (``gpu.xid``).

- ``kernel.segfault`` (warning): a process killed with SIGSEGV (segfault or general
  protection fault); ``kernel.trap`` (warning) for the other CPU traps (SIGILL, SIGFPE).
- ``kernel.hung_task`` (warning): a task blocked in the kernel (D state) past the limit.
- ``kernel.machine_check``: critical when uncorrected, warning otherwise.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from itertools import islice

from forensics.core.models import EvidenceRef, Finding, Severity
from forensics.core.probe import RuleContext
from forensics.kernel.faults import UserFault, page_fault_words
from forensics.kernel.hung_tasks import HungTask
from forensics.kernel.machine_checks import MachineCheck
from forensics.probes.kernel_log import KernelLogFacts

EVIDENCE_LINES_MAX = 5


def rules(facts: KernelLogFacts, context: RuleContext) -> list[Finding]:
    return (
        _faults(facts.faults)
        + _hung_tasks(facts.hung_tasks)
        + _machine_checks(facts.machine_checks)
    )


def _faults(faults: list[UserFault]) -> list[Finding]:
    groups: dict[tuple[str, str], list[UserFault]] = defaultdict(list)
    for fault in faults:
        groups[(fault.name, fault.signal or fault.kind)].append(fault)
    findings = []
    for (name, _), group in groups.items():
        last = group[-1]
        segv = last.signal == "SIGSEGV"
        kinds = sorted({fault.kind for fault in group})
        where = f" in {last.where}" if last.where else ""
        times = f" {len(group)} times" if len(group) > 1 else ""
        signal = f" ({last.signal})" if last.signal else ""
        detail = ""
        if last.kind == "segfault":
            detail = (
                f" The last one was a {page_fault_words(last.error)} "
                f"(address {last.address}, error {last.error})."
            )
        findings.append(
            Finding(
                id="kernel.segfault" if segv else "kernel.trap",
                severity=Severity.warning,
                title=f"{name} crashed{times}: {' / '.join(kinds)}{signal}{where}",
                explanation=(
                    f"The kernel killed {name} with {last.signal or 'a signal'} for a "
                    f"{last.kind}{times}, last as pid {last.pid}{_at(last.time)}, with the "
                    f"instruction pointer {last.ip}{where}.{detail} The process had no "
                    "handler for it, so it died (exit status 139 for SIGSEGV, 132 SIGILL, "
                    "136 SIGFPE)."
                ),
                next_steps=[
                    "Get a core dump next time: `ulimit -c unlimited` before starting it, and "
                    "check where cores go: `cat /proc/sys/kernel/core_pattern`.",
                    f"Map the address to code: `addr2line -e <{last.where or 'binary'}> "
                    "<offset>` (offset = ip - mapping start, shown in brackets in the line).",
                ],
                subject={"name": name, "kind": last.kind, "count": len(group), "pid": last.pid},
                evidence=_evidence(fault.evidence for fault in group),
            )
        )
    return findings


def _hung_tasks(tasks: list[HungTask]) -> list[Finding]:
    groups: dict[tuple[str, int], list[HungTask]] = defaultdict(list)
    for task in tasks:
        groups[(task.name, task.pid)].append(task)
    findings = []
    for (name, pid), group in groups.items():
        longest = max(task.blocked_s for task in group)
        findings.append(
            Finding(
                id="kernel.hung_task",
                severity=Severity.warning,
                title=f"{name} (pid {pid}) hung in the kernel for more than {longest} s",
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
                subject={"name": name, "pid": pid, "blocked_s": longest, "count": len(group)},
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


def _at(moment: datetime | None) -> str:
    return f" at {moment:%Y-%m-%d %H:%M:%S} UTC" if moment else ""


def _evidence(refs: Iterable[EvidenceRef]) -> list[EvidenceRef]:
    return list(islice(refs, EVIDENCE_LINES_MAX))
