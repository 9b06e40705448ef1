"""Every finding id, declared once: its severities, what it means, the question it answers,
what to do next, and the module that raises it.

Rules raise only ids listed here (``tests/test_finding_catalogue.py`` reads every
``Finding(id=...)`` in the code and checks it against this list, both ways).
``docs/FINDINGS.md`` is this catalogue printed as Markdown; regenerate it with
``python3 -m forensics.judge.catalogue > docs/FINDINGS.md``. ``forensics explain ID``
prints one entry.

The first word of an id names what the operator looks at (``init``, ``focus``), not the
module: ids are a stable contract (history fingerprints, tickets), so they never move when
a rule does; ``raised_by`` says where each one is raised today.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from forensics.core.models import Severity

WARNING = (Severity.warning,)
INFO = (Severity.info,)
CRITICAL = (Severity.critical,)
WARNING_OR_CRITICAL = (Severity.warning, Severity.critical)
INFO_OR_WARNING = (Severity.info, Severity.warning)
ANY = (Severity.info, Severity.warning, Severity.critical)


@dataclass(frozen=True)
class FindingKind:
    """One catalogued finding id."""

    id: str
    severities: tuple[Severity, ...]
    meaning: str
    question: str
    next_steps: tuple[str, ...]
    raised_by: str

    def to_text(self) -> str:
        """The entry as ``forensics explain ID`` prints it.

        >>> print(CATALOGUE["disk.full"].to_text().splitlines()[0])
        disk.full  (critical)
        """
        steps = "\n".join(f"  - {step}" for step in self.next_steps)
        return (
            f"{self.id}  ({', '.join(s.value for s in self.severities)})\n"
            f"question:  {self.question}\n"
            f"meaning:   {self.meaning}\n"
            f"raised by: {self.raised_by}\n"
            f"next steps:\n{steps}"
        )

    def to_markdown(self) -> str:
        steps = "\n".join(f"- {step}" for step in self.next_steps)
        return (
            f"## `{self.id}`\n\n"
            f"**Severity:** {', '.join(s.value for s in self.severities)}. "
            f"**Raised by:** `{self.raised_by}`.\n\n"
            f"**Question:** {self.question}\n\n"
            f"{self.meaning}\n\n"
            f"**Next steps:**\n\n{steps}\n"
        )


_ENTRIES = (
    FindingKind(
        id="collection.section_incomplete",
        severities=WARNING,
        question="Was everything read, so that a missing answer is not taken for a 'no'?",
        meaning="A section of the host script did not finish, was stopped by its timeout, or "
        "was cut at its byte cap. Whatever depends on it is reported as unknown, not absent.",
        next_steps=(
            "Collect again with a longer --timeout if the host was slow.",
            "Run the section's command by hand on the host (the finding quotes it).",
        ),
        raised_by="forensics.judge.rules.collection",
    ),
    FindingKind(
        id="collection.section_unreadable",
        severities=WARNING,
        question="Was everything read, so that a missing answer is not taken for a 'no'?",
        meaning="A probe's parser failed on what the host sent (a tool that printed "
        "something unexpected, or a forged stream). That probe's facts are unknown; the "
        "rest of the report stands, and the raw output is in the bundle.",
        next_steps=(
            "Read the section's raw file in the bundle (the finding names it).",
            "Report it with that file, so that the parser learns to read it.",
        ),
        raised_by="forensics.judge.analysis",
    ),
    FindingKind(
        id="oom.killed",
        severities=WARNING_OR_CRITICAL,
        question="Was it OOM-killed?",
        meaning="The kernel log shows an OOM kill: pid, name, time, whether the whole machine "
        "or a memory cgroup ran out (and its limit), the victim's RSS. Critical for the "
        "process in question (the --focus match, or every victim without --focus); victims "
        "that do not match the focus, or kills before the last boot, are warnings.",
        next_steps=(
            "Read the kernel log lines around the kill (the finding names the command).",
            "Compare the cgroup's limit with what the process needs; raise the limit or "
            "lower the process's memory.",
        ),
        raised_by="forensics.judge.rules.oom",
    ),
    FindingKind(
        id="oom.ruled_out",
        severities=INFO,
        question="Was it OOM-killed?",
        meaning="No: the kernel log was read whole, reaches back to boot (or to the start of "
        "the focus processes), shows no OOM kill of the process in question, and the OOM "
        "counters count no kill the log does not show.",
        next_steps=(
            "Look elsewhere for the cause: the process's exit status, its logs, "
            "kernel.segfault and gpu.* findings.",
        ),
        raised_by="forensics.judge.rules.oom",
    ),
    FindingKind(
        id="oom.inconclusive",
        severities=WARNING,
        question="Was it OOM-killed?",
        meaning="Cannot tell: the kernel log was not readable (restricted dmesg in a "
        "container), the ring buffer wrapped, the log was too large, no counter was "
        "readable, or the counters count kills the log does not explain. Each reason is "
        "said with how to get the missing evidence.",
        next_steps=(
            "Read the kernel log as root on the host (dmesg, journalctl -k, kern.log).",
            "Read the cgroup's memory.events (v2) or memory.oom_control (v1) oom_kill counter.",
        ),
        raised_by="forensics.judge.rules.oom",
    ),
    FindingKind(
        id="kernel.segfault",
        severities=WARNING,
        question="Did a process crash?",
        meaning="The kernel log shows a process killed by SIGSEGV (a segfault or general "
        "protection fault, in every wording from 3.10's 'general protection' on). The kernel "
        "prints this only for a signal the process does not handle, so it died there. The "
        "error code is quoted as the log prints it (hex) with what it means.",
        next_steps=(
            "Look for a core dump (coredumpctl list, or the core_pattern path).",
            "Read the process's own log up to that time.",
        ),
        raised_by="forensics.probes.kernel_log_rules",
    ),
    FindingKind(
        id="kernel.trap",
        severities=WARNING,
        question="Did a process crash?",
        meaning="The kernel log shows a process killed by a CPU trap other than a segfault "
        "(SIGILL, SIGFPE, SIGTRAP): an illegal instruction (a binary built for another CPU), "
        "a division by zero, a breakpoint.",
        next_steps=(
            "Check the binary was built for this CPU (an AVX-512 build on an older CPU).",
            "Look for a core dump and the process's own log.",
        ),
        raised_by="forensics.probes.kernel_log_rules",
    ),
    FindingKind(
        id="kernel.hung_task",
        severities=WARNING,
        question="Is something stuck in the kernel?",
        meaning="The kernel's hung-task detector reported a task blocked in uninterruptible "
        "sleep (D) past its limit: slow or failed storage, a network filesystem, or a driver.",
        next_steps=(
            "Read the stack the kernel printed below the line.",
            "Check the storage and the driver named there (dmesg | grep -E 'Xid|NVRM|I/O error').",
        ),
        raised_by="forensics.probes.kernel_log_rules",
    ),
    FindingKind(
        id="kernel.machine_check",
        severities=WARNING_OR_CRITICAL,
        question="Is the hardware failing?",
        meaning="The kernel log shows machine check events: hardware errors the CPU reported "
        "(memory, cache, bus; EDAC memory errors). Critical when uncorrected, warning when "
        "corrected. PCIe device errors are kernel.pcie_aer, not this.",
        next_steps=(
            "Decode them with rasdaemon (ras-mc-ctl --errors) or mcelog.",
            "Repeated errors on one DIMM or CPU: plan a replacement with the provider.",
        ),
        raised_by="forensics.probes.kernel_log_rules",
    ),
    FindingKind(
        id="kernel.oops",
        severities=CRITICAL,
        question="Did the kernel itself crash?",
        meaning="The kernel faulted (NULL pointer dereference, bad paging request, general "
        "protection fault or invalid opcode in kernel mode, a BUG() assertion). The task it "
        "ran was killed and the kernel may be unstable until the next reboot; the finding "
        "names the task and the module it was in (nvidia, nvidia_uvm, a filesystem) when the "
        "log does.",
        next_steps=(
            "Read the whole oops and its call trace in the kernel log.",
            "Reboot the node soon; update the module named, or report the trace to its maintainer.",
        ),
        raised_by="forensics.probes.kernel_log_rules",
    ),
    FindingKind(
        id="kernel.bug",
        severities=WARNING,
        question="Did the kernel itself crash?",
        meaning="The kernel logged a BUG: report other than an oops or a lockup (scheduling "
        "while atomic, sleeping in atomic context, bad page state, workqueue lockup, KASAN): "
        "it caught itself breaking its own rules, which often precedes hangs and crashes.",
        next_steps=(
            "Read the report and the trace after it in the kernel log.",
            "Update the kernel or the module the trace names.",
        ),
        raised_by="forensics.probes.kernel_log_rules",
    ),
    FindingKind(
        id="kernel.panic",
        severities=CRITICAL,
        question="Did the kernel itself crash?",
        meaning="The kernel panicked ('Kernel panic - not syncing: REASON'): everything on "
        "the host died then. Usually read from the previous boot's journal, or a log file's "
        "lines from before the last boot; the reason says why (an oops, a hard lockup, "
        "panic_on_oom).",
        next_steps=(
            "Read the lines before the panic.",
            "Keep the next crash: configure kdump or pstore.",
        ),
        raised_by="forensics.probes.kernel_log_rules",
    ),
    FindingKind(
        id="kernel.soft_lockup",
        severities=WARNING,
        question="Is something stuck in the kernel?",
        meaning="A CPU ran kernel code without scheduling for 20 s or more ('BUG: soft lockup "
        "- CPU#N stuck for Ns! [NAME:PID]'): a driver looping in the kernel, or a hypervisor "
        "stealing the CPU. One finding per task, with the longest time.",
        next_steps=(
            "Read the stack trace after the line: its top frames name the code that looped.",
            "On a VM, check the host for CPU steal; otherwise update the driver named.",
        ),
        raised_by="forensics.probes.kernel_log_rules",
    ),
    FindingKind(
        id="kernel.hard_lockup",
        severities=CRITICAL,
        question="Is something stuck in the kernel?",
        meaning="A CPU stopped taking interrupts ('Watchdog detected hard LOCKUP on cpu N'); "
        "the kernel usually panics after it.",
        next_steps=(
            "Read the trace after the line.",
            "Check firmware and the BMC's event log; hardware ticket if it recurs.",
        ),
        raised_by="forensics.probes.kernel_log_rules",
    ),
    FindingKind(
        id="kernel.rcu_stall",
        severities=WARNING,
        question="Is something stuck in the kernel?",
        meaning="RCU reported stalled CPUs or tasks ('rcu_sched/rcu_preempt detected stalls'): "
        "a CPU stuck in the kernel or starved by a hypervisor; the host may be slow or about "
        "to hang.",
        next_steps=(
            "Read the stall report: it names the CPUs and tasks.",
            "Look for soft lockups and hung tasks at the same time.",
        ),
        raised_by="forensics.probes.kernel_log_rules",
    ),
    FindingKind(
        id="kernel.pcie_aer",
        severities=ANY,
        question="Is the hardware failing?",
        meaning="A PCIe device reported bus errors (AER, or firmware-first APEI records): its "
        "link or the device, not the CPU or memory. One finding per device, named by bus id "
        "(and lspci's words when the host has lspci). Critical when fatal, warning when "
        "uncorrected, info when corrected.",
        next_steps=(
            "`lspci -s BUS_ID -vv` as root: the link's AER status and speed.",
            "Reseat or move the device; check its firmware (a GPU: nvidia-smi -q; an NVMe "
            "drive: nvme smart-log).",
        ),
        raised_by="forensics.probes.kernel_log_rules",
    ),
    FindingKind(
        id="gpu.xid",
        severities=ANY,
        question="What went wrong with the GPU?",
        meaning="The NVIDIA driver reported an Xid error in the kernel log: one finding per "
        "GPU and code, with the code's meaning, who usually owns it (application, driver, "
        "hardware, thermal/power, a follow-up of another Xid) and NVIDIA's action, from the "
        "whole published catalogue in forensics/kernel/xid_catalog.py. When the driver "
        "rate-limited its lines for that GPU, the count is a lower bound.",
        next_steps=(
            "Follow the code's own next step (in the finding).",
            "Reset or drain the GPU for hardware and firmware codes; fix the application "
            "for application codes.",
        ),
        raised_by="forensics.judge.rules.gpu_errors",
    ),
    FindingKind(
        id="gpu.smi_failed",
        severities=WARNING_OR_CRITICAL,
        question="Can the GPUs be read at all?",
        meaning="nvidia-smi failed: hung, GPU lost or inaccessible, driver/library version "
        "mismatch, no driver. Critical for a lost, inaccessible or hung GPU; cites the Xid "
        "79 (119, 120) lines that explain it when the kernel log has them.",
        next_steps=(
            "Run `timeout 20 nvidia-smi` on the host and read its message.",
            "A lost GPU needs a reset or a reboot; a version mismatch needs the driver reloaded.",
        ),
        raised_by="forensics.judge.rules.gpu_errors",
    ),
    FindingKind(
        id="gpu.fallen_off_bus",
        severities=CRITICAL,
        question="What went wrong with the GPU?",
        meaning="The NVIDIA driver says a GPU has fallen off the bus and is not responding, "
        "with no Xid 79 for it (at driver load, or when it found the GPU gone): the GPU is "
        "lost until the node reboots. Named by bus id, with lspci's words when available.",
        next_steps=(
            "Drain the node and reboot it; hardware ticket if it recurs.",
            "`lspci -s BUS_ID -vv` (rev ff: gone from the bus); the BMC's event log.",
        ),
        raised_by="forensics.judge.rules.gpu_errors",
    ),
    FindingKind(
        id="gpu.init_failed",
        severities=CRITICAL,
        question="What went wrong with the GPU?",
        meaning="The NVIDIA driver could not initialise a GPU ('RmInitAdapter failed! "
        "(0x..:0x..:N)', 'rm_init_adapter failed'): the GPU is unusable until the host is "
        "fixed (a reset or power cycle, a matching driver and firmware, enough PCIe address "
        "space in a VM, or a replacement).",
        next_steps=(
            "Read the NVRM lines just before it in the kernel log.",
            "Reset the GPU or power-cycle the node; check the driver version against the "
            "installed packages.",
        ),
        raised_by="forensics.judge.rules.gpu_errors",
    ),
    FindingKind(
        id="gpu.sxid",
        severities=WARNING_OR_CRITICAL,
        question="What went wrong with the GPU?",
        meaning="An NVSwitch reported an error (SXid), one finding per switch and code. A "
        "fatal SXid takes the switch's links down: the GPUs lose their NVLink peers until "
        "the fabric is reset.",
        next_steps=(
            "Read the Fabric Manager log and `nvidia-smi nvlink -s`.",
            "Fatal: drain the node and reset the fabric (reboot).",
        ),
        raised_by="forensics.judge.rules.gpu_errors",
    ),
    FindingKind(
        id="gpu.memory_held_without_process",
        severities=WARNING,
        question="Who holds the GPU's memory?",
        meaning="At least 1 GiB is used on a GPU while nvidia-smi lists no compute process: "
        "a process in another PID namespace, a zombie whose threads still hold the context, "
        "or a leaked context.",
        next_steps=(
            "Look for zombies with live threads (process.zombie_threads_alive).",
            "List who has the device open: fuser -v /dev/nvidia*",
        ),
        raised_by="forensics.probes.gpu",
    ),
    FindingKind(
        id="gpu.ecc_errors",
        severities=WARNING_OR_CRITICAL,
        question="Is the GPU's memory failing?",
        meaning="ECC errors, a failed or pending row remap, or a pending page retirement. "
        "Critical for uncorrected errors since the driver loaded or a remap failure.",
        next_steps=(
            "nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT",
            "A pending remap or retirement needs a GPU reset; a failure needs a replacement.",
        ),
        raised_by="forensics.probes.gpu",
    ),
    FindingKind(
        id="process.zombie",
        severities=INFO_OR_WARNING,
        question="Why is this process a zombie?",
        meaning="A process has exited and its parent has not reaped it (state Z, one "
        "thread). It holds no memory, only its pid and exit status. Info when it was reaped "
        "between the two snapshots, warning otherwise; also the summary of zombies beyond "
        "the ones listed one by one.",
        next_steps=(
            "Read its exit status from /proc/PID/stat (field 52) to learn how it ended.",
            "Look at its parent: what it waits in (process.parent_not_reaping).",
        ),
        raised_by="forensics.probes.processes_rules",
    ),
    FindingKind(
        id="process.parent_not_reaping",
        severities=WARNING,
        question="Why does nobody reap this zombie?",
        meaning="The zombie persisted across both snapshots and its parent (not PID 1) is "
        "alive: the parent is blocked elsewhere (its wchan says where) and does not call "
        "wait().",
        next_steps=(
            "Read the parent's wchan and stack: cat /proc/PPID/wchan /proc/PPID/stack",
            "Fix or restart the parent; killing the zombie does nothing.",
        ),
        raised_by="forensics.probes.processes_rules",
    ),
    FindingKind(
        id="process.zombie_threads_alive",
        severities=WARNING_OR_CRITICAL,
        question="Has this process finished dying?",
        meaning="A `Zl` zombie: the leader exited while other threads live on. It has not "
        "finished dying, may still hold its memory (GPU pinned memory too), and nobody can "
        "reap it yet. Critical for the focus process, warning otherwise.",
        next_steps=(
            "Read the live threads' states and wchans: ls /proc/PID/task; cat "
            "/proc/PID/task/*/wchan",
            "Watch its memory drain: forensics watch HOST --pid PID",
        ),
        raised_by="forensics.probes.processes_rules",
    ),
    FindingKind(
        id="init.not_reaping",
        severities=WARNING,
        question="Does PID 1 reap orphans?",
        meaning="Zombies whose parent is PID 1 persisted: PID 1 is not an init (a container "
        "started without --init), or an init that is stuck or busy.",
        next_steps=(
            "Run the container with an init: docker run --init, or tini as the entrypoint.",
            "Restarting the container clears the zombies; killing them does nothing.",
        ),
        raised_by="forensics.probes.processes_rules",
    ),
    FindingKind(
        id="process.uninterruptible",
        severities=WARNING,
        question="Is a process stuck in the kernel?",
        meaning="Processes were in state D (uninterruptible sleep) in both snapshots: blocked "
        "inside a kernel call that SIGKILL cannot interrupt (storage, network filesystem, "
        "a driver such as NVIDIA's).",
        next_steps=(
            "See the kernel stack as root: cat /proc/PID/stack",
            "Look for hung-task and driver messages in the kernel log.",
        ),
        raised_by="forensics.probes.processes_rules",
    ),
    FindingKind(
        id="focus.not_running",
        severities=CRITICAL,
        question="Is the process in question still running?",
        meaning="No live process matches --focus in a complete process table; says whether "
        "a zombie matches or the process exited during the collection.",
        next_steps=(
            "Find how it ended: the oom.* and kernel.* findings, its logs, its parent.",
            "Check the pattern by hand: ps -eo pid,stat,lstart,args | grep -E PATTERN",
        ),
        raised_by="forensics.probes.processes_rules",
    ),
    FindingKind(
        id="cgroup.memory_near_limit",
        severities=WARNING_OR_CRITICAL,
        question="How close is memory to its limit?",
        meaning="A cgroup's working set is near the smallest memory limit on its path "
        "(warning at 90%, critical at 97% by default; --threshold changes them). Says which "
        "cgroup sets the limit.",
        next_steps=(
            "See what uses it: the cgroup's memory.stat (anon, file, kernel).",
            "Raise the limit or lower the workload before the OOM killer does.",
        ),
        raised_by="forensics.probes.cgroup_rules",
    ),
    FindingKind(
        id="cgroup.kernel_memory_high",
        severities=INFO_OR_WARNING,
        question="What holds the memory that RSS does not show?",
        meaning="A cgroup's kernel memory (page tables, slab, driver allocations) is large "
        "(>= 4 GiB or >= 20% of its usage by default): memory budgets made from RSS miss "
        "it. Warning when the cgroup is near its limit.",
        next_steps=(
            "Read the kernel parts in the cgroup's memory.stat.",
            "Count it in the memory budget of the workload.",
        ),
        raised_by="forensics.probes.cgroup_rules",
    ),
    FindingKind(
        id="memory.pressure_high",
        severities=WARNING_OR_CRITICAL,
        question="Is the machine or a cgroup stalling for memory?",
        meaning="Pressure stall information (PSI) is high, host-wide or in a v2 cgroup: "
        "`some avg10` >= 20% or `full avg10` >= 5% (warning), `full avg10` >= 20% "
        "(critical), by default.",
        next_steps=(
            "cat /proc/pressure/memory (or the cgroup's memory.pressure) again to see the trend.",
            "Free memory or move work elsewhere; reclaim is stalling tasks.",
        ),
        raised_by="forensics.probes.memory_rules",
    ),
    FindingKind(
        id="memory.available_low",
        severities=WARNING_OR_CRITICAL,
        question="Is the host running out of memory?",
        meaning="MemAvailable is low against MemTotal (warning below 10%, critical below 5% "
        "by default).",
        next_steps=(
            "See who uses it: ps -eo pid,rss,args --sort=-rss | head",
            "Check pinned memory (memory.locked_large) and the page cache.",
        ),
        raised_by="forensics.probes.memory_rules",
    ),
    FindingKind(
        id="memory.locked_large",
        severities=INFO_OR_WARNING,
        question="How much memory is pinned?",
        meaning="Mlocked or Unevictable memory is large against MemTotal (info at 10%, "
        "warning at 25% by default): pinned host memory, e.g. CUDA pinned pools, which "
        "comes back slowly or not at all after a kill.",
        next_steps=(
            "Find who pins it: grep -H VmLck /proc/[0-9]*/status | sort -k2 -n | tail",
            "After killing its owner, measure the drain: forensics watch HOST",
        ),
        raised_by="forensics.probes.memory_rules",
    ),
    FindingKind(
        id="log.expected_missing",
        severities=WARNING,
        question="Does the log that should exist exist?",
        meaning="An --expect-log path (or its directory) does not exist on the host: the "
        "process never started, logs elsewhere, or its supervisor is not configured.",
        next_steps=(
            "Check the supervisor's configuration for the log path.",
            "Look for the process's open files: ls -l /proc/PID/fd",
        ),
        raised_by="forensics.probes.logs",
    ),
    FindingKind(
        id="log.stale",
        severities=WARNING,
        question="Is the live process still making progress?",
        meaning="The focus process is alive but its log has been silent for more than "
        "10 minutes: it may be stuck.",
        next_steps=(
            "Look at what it waits in: cat /proc/PID/wchan; the process.uninterruptible finding.",
            "Compare with the GPU's utilisation (nvidia-smi).",
        ),
        raised_by="forensics.probes.logs",
    ),
    FindingKind(
        id="log.errors",
        severities=WARNING,
        question="What did the process say went wrong?",
        meaning="A log has lines matching panic, Traceback, CUDA error, out of memory, "
        "std::bad_alloc, Killed, segfault, fatal or error: the count and the first and last "
        "matches.",
        next_steps=("Read the lines around the first match: grep -n -m1 -B5 -A20 PATTERN LOG",),
        raised_by="forensics.probes.logs",
    ),
    FindingKind(
        id="log.ended_early",
        severities=WARNING,
        question="Did the log stop because its process died?",
        meaning="A small log (<= 64 KiB) stopped just before a process-ending event on the "
        "timeline (an OOM kill, a segfault or trap, an Xid, an exit) of one of its writers, "
        "or its focus process is now a zombie: its last lines are the last thing the "
        "process said.",
        next_steps=(
            "Read the ending event's finding (oom.killed, kernel.segfault, gpu.xid).",
            "Read the log's last lines in the report.",
        ),
        raised_by="forensics.judge.rules.log_end",
    ),
    FindingKind(
        id="disk.full",
        severities=CRITICAL,
        question="Is a filesystem full?",
        meaning="A checked filesystem is at >= 95% of its blocks or inodes: writes fail with "
        "'No space left on device', which many programs and wrappers swallow.",
        next_steps=(
            "df -h MOUNT; df -i MOUNT",
            "du -xh --max-depth=2 MOUNT | sort -h | tail -20; deleted-but-open files: "
            "ls -l /proc/*/fd | grep deleted",
        ),
        raised_by="forensics.probes.disk",
    ),
    FindingKind(
        id="script.exit_status_masked",
        severities=WARNING_OR_CRITICAL,
        question="Does a wrapper script swallow the exit status?",
        meaning="A shell script running on the host loses the exit status it acts on "
        "(`if ! daemon | tee log` then `$?`, a pipeline into tee without pipefail on some "
        "path that reaches it, `$?` read too late, `daemon || true`, a retry loop deciding on "
        "such a value, ...): it reports success for every crash. One place per lost status; "
        "functions are judged with their callers' options. Critical when it is a zombie's "
        "parent or runs the focus process.",
        next_steps=(
            "Fix a copy and check it: forensics lint-script FILE",
            "Until then trust the daemon's own log and exit status, not the wrapper's.",
        ),
        raised_by="forensics.probes.scripts",
    ),
    FindingKind(
        id="script.lint",
        severities=INFO,
        question="What else is wrong with the script's error handling?",
        meaning="ShellCheck's error-handling notes (SC2181, SC2319, ...), unusual files "
        "(CRLF endings, not UTF-8), or a script that could not be read. ShellCheck itself "
        "missing, failing or timing out is a fact, not this finding.",
        next_steps=("Review locally: forensics lint-script FILE",),
        raised_by="forensics.probes.scripts",
    ),
)

CATALOGUE: dict[str, FindingKind] = {entry.id: entry for entry in _ENTRIES}


def lookup(finding_id: str) -> FindingKind:
    """The entry for ``finding_id``; ``KeyError`` says the nearest ids, if any.

    >>> lookup("oom.killed").question
    'Was it OOM-killed?'
    >>> lookup("oom.kill")
    Traceback (most recent call last):
    KeyError: "unknown finding id 'oom.kill'; did you mean oom.killed?"
    """
    entry = CATALOGUE.get(finding_id)
    if entry is not None:
        return entry
    near = difflib.get_close_matches(finding_id, list(CATALOGUE), n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(near)}?" if near else "; `forensics explain` lists them"
    raise KeyError(f"unknown finding id {finding_id!r}{hint}")


def markdown() -> str:
    """``docs/FINDINGS.md``: every entry, grouped by the id's first word."""
    head = (
        "# Findings\n\n"
        "Generated from `forensics/judge/catalogue.py`; do not edit by hand. Regenerate "
        "with:\n\n"
        "    python3 -m forensics.judge.catalogue > docs/FINDINGS.md\n\n"
        "`forensics explain ID` prints one entry; `forensics explain` lists them all.\n\n"
        "| id | severity | question |\n|---|---|---|\n"
    )
    rows = "".join(
        f"| [`{e.id}`](#{e.id.replace('.', '')}) | "
        f"{', '.join(s.value for s in e.severities)} | {e.question} |\n"
        for e in _ENTRIES
    )
    return head + rows + "\n" + "\n".join(entry.to_markdown() for entry in _ENTRIES)


if __name__ == "__main__":
    print(markdown(), end="")
