"""One chronological list, in UTC, of everything the facts can date.

Each contributor is a pure function ``(Facts) -> list[TimelineEvent]`` listed in
``CONTRIBUTORS``; a probe that learns a time adds one function and one line there, and its
events appear in every report. The collection itself is added by ``build_timeline``, since
it is not a fact of the host.

Times from the host are the host's clock (mtimes, ``btime``, ``date``); kernel log stamps
are seconds since boot, turned into wall-clock time with ``kernel_time_to_utc`` and marked
approximate: ``btime`` has whole seconds, and the kernel's clock stops during suspend.
Process starts are ``btime`` plus clock ticks: approximate too. They come from the process
table when the ``processes`` probe read it, else from the focus lines of the ``logs``
probe: one source, so a start is never listed twice.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime, timedelta

from forensics.core.facts import Facts
from forensics.core.timeline_event import (
    COLLECTION,
    GPU_INIT_FAILED,
    GPU_LOST,
    HUNG_TASK,
    KERNEL_CRASH,
    MACHINE_CHECK,
    OOM_KILL,
    PCIE_ERROR,
    PROCESS_START,
    SEGFAULT,
    SXID,
    TRAP,
    XID,
    TimelineEvent,
)
from forensics.core.units import describe_duration
from forensics.kernel.oom_report import OomKill
from forensics.probes import PROBES
from forensics.probes.kernel_log import KernelLogFacts
from forensics.probes.logs import LogsFacts
from forensics.probes.processes import ProcessEntry, ProcessesFacts
from forensics.probes.system import SystemFacts

# Larger than this, the difference between the host's clock and ours is worth saying.
CLOCK_SKEW_WORTH_SAYING_S = 5
# An OOM storm or a flood of segfaults must not bury the rest: the newest of each kind.
KERNEL_EVENTS_PER_KIND = 20
# A broad --focus (``python``) matches many processes; the oldest starts tell the story.
FOCUS_STARTS_MAX = 8
TEXT_CHARS = 160


Contributor = Callable[[Facts], list[TimelineEvent]]


def kernel_time_to_utc(
    monotonic_s: float, boot_time: datetime, uptime_s: float | None = None
) -> datetime | None:
    """Wall-clock time of a kernel log stamp (``[ 9836.058240]``: seconds since boot).

    None when the stamp cannot belong to this boot: negative, not a number, or later than
    the uptime (a line that ``kern.log`` kept from an earlier boot). The stamp needs no
    help from the ring buffer, so an event older than a wrapped buffer's first line, read
    from ``kern.log``, converts the same way.

    >>> from datetime import UTC
    >>> boot = datetime(2025, 11, 29, 18, 40, tzinfo=UTC)
    >>> kernel_time_to_utc(9836.05824, boot).isoformat()
    '2025-11-29T21:23:56.058240+00:00'
    >>> kernel_time_to_utc(180042.11848, boot, uptime_s=8400.0) is None
    True
    """
    if not math.isfinite(monotonic_s) or monotonic_s < 0:
        return None
    if uptime_s is not None and monotonic_s > uptime_s + 1:
        return None
    try:
        return boot_time + timedelta(seconds=monotonic_s)
    except OverflowError:
        return None


def process_start_events(facts: Facts) -> list[TimelineEvent]:
    """Starts of the focus processes, the zombies and the zombies' parents."""
    table = facts.of(ProcessesFacts)
    if table is not None and table.processes:
        return _table_starts(table)
    return _focus_line_starts(facts)


def _table_starts(table: ProcessesFacts) -> list[TimelineEvent]:
    why: dict[int, str] = {}
    focus = table.focus
    if focus is not None:
        for pid in sorted(focus.live + focus.zombies + focus.exited)[:FOCUS_STARTS_MAX]:
            why[pid] = "focus process"
    for tree in table.trees:
        if "zombie" not in tree.why:
            continue
        why.setdefault(tree.subject, "zombie")
        if tree.ancestors:
            zombie = table.by_pid(tree.subject)
            name = zombie.name if zombie else "?"
            why.setdefault(tree.ancestors[0], f"parent of zombie {name} (pid {tree.subject}):")
    events = []
    for pid, role in why.items():
        entry = table.by_pid(pid)
        if entry is None or entry.started_at is None:
            continue
        events.append(
            TimelineEvent(
                time=entry.started_at,
                approximate=True,
                source="processes",
                line=entry.raw_lines.get("stat"),
                kind=PROCESS_START,
                text=_start_text(role, entry),
                pid=entry.pid,
            )
        )
    return events


def _start_text(role: str, entry: ProcessEntry) -> str:
    state = entry.state + ("l" if entry.is_zombie and entry.live_threads else "")
    return f"{role} {entry.name} (pid {entry.pid}) started; state at collection: {state}"


def _focus_line_starts(facts: Facts) -> list[TimelineEvent]:
    logs = facts.of(LogsFacts)
    if logs is None:
        return []
    return [
        TimelineEvent(
            time=process.started,
            approximate=True,
            source="logs",
            line=process.raw_line,
            kind=PROCESS_START,
            text=f"focus process {process.name} (pid {process.pid}) started; "
            f"state at collection: {process.state}",
            pid=process.pid,
        )
        for process in logs.focus_processes
        if process.started is not None
    ]


def kernel_events(facts: Facts) -> list[TimelineEvent]:
    """OOM kills, CPU faults, Xid errors, hung tasks, kernel crashes and lockups, machine
    checks, PCIe errors, lost or uninitialised GPUs and NVSwitch errors of the kernel log."""
    log = facts.of(KernelLogFacts)
    if log is None:
        return []
    system = facts.of(SystemFacts)
    boot = system.boot_time if system and system.boot_time else log.boot_time
    uptime = system.uptime_s if system and system.uptime_s is not None else log.uptime_s

    def at(monotonic_s: float | None, logged: datetime | None) -> datetime | None:
        """The kernel's own stamp when there is one (one clock for every source), else the
        syslog stamp of a line that has none (``/var/log/messages`` on RHEL)."""
        if monotonic_s is None:
            return logged
        if boot is None:
            return None
        return kernel_time_to_utc(monotonic_s, boot, uptime)

    found: list[tuple[str, datetime | None, int, str, int | None]] = []
    for kill in log.oom_kills:
        moment = at(kill.monotonic_s, kill.time)
        found.append((OOM_KILL, moment, kill.killed_line, _oom_text(kill), kill.pid))
    for fault in log.faults:
        kind = SEGFAULT if fault.signal == "SIGSEGV" else TRAP
        signal = f" ({fault.signal})" if fault.signal else ""
        text = f"{fault.name} (pid {fault.pid}) killed by a {fault.kind}{signal}"
        moment = at(fault.monotonic_s, fault.time)
        found.append((kind, moment, fault.evidence.first_line, text, fault.pid))
    for xid in log.xids:
        text = f"GPU {xid.bus_id} reported Xid {xid.code}: {xid.meaning.meaning}"
        if xid.pid is not None:
            text += f", pid {xid.pid}" + (f" ({xid.process})" if xid.process else "")
        found.append((XID, at(xid.monotonic_s, xid.time), xid.evidence.first_line, text, xid.pid))
    for task in log.hung_tasks:
        text = f"{task.name} (pid {task.pid}) hung in the kernel for more than {task.blocked_s} s"
        moment = at(task.monotonic_s, task.time)
        found.append((HUNG_TASK, moment, task.evidence.first_line, text, task.pid))
    for check in log.machine_checks:
        moment = at(check.monotonic_s, check.time)
        found.append((MACHINE_CHECK, moment, check.evidence.first_line, check.message, None))
    for crash in log.crashes:
        text = f"kernel {crash.kind.replace('_', ' ')} ({crash.detail})"
        if crash.name:
            text += f", task {crash.name} (pid {crash.pid})"
        moment = at(crash.monotonic_s, crash.time)
        found.append((KERNEL_CRASH, moment, crash.evidence[0].first_line, text, crash.pid))
    for error in log.pcie_errors:
        text = f"PCIe device {error.device} reported a {error.severity} bus error"
        moment = at(error.monotonic_s, error.time)
        found.append((PCIE_ERROR, moment, error.evidence[0].first_line, text, None))
    for event in log.gpu_driver_events:
        if event.kind == "rate_limited":
            continue
        kind = GPU_LOST if event.kind == "fallen_off_bus" else GPU_INIT_FAILED
        what = "fell off the bus" if kind == GPU_LOST else "could not be initialised"
        text = f"GPU {event.bus_id or '(bus id not printed)'} {what}"
        moment = at(event.monotonic_s, event.time)
        found.append((kind, moment, event.evidence[-1].first_line, text, None))
    for sxid in log.sxids:
        level = "fatal " if sxid.fatal else ""
        text = f"NVSwitch {sxid.switch} ({sxid.pci}) reported {level}SXid {sxid.code}"
        moment = at(sxid.monotonic_s, sxid.time)
        found.append((SXID, moment, sxid.evidence[0].first_line, text, None))
    events = [
        TimelineEvent(
            time=moment,
            approximate=True,
            source="kernel_log",
            line=line,
            kind=kind,
            text=text[:TEXT_CHARS],
            pid=pid,
        )
        for kind, moment, line, text, pid in found
        if moment is not None
    ]
    newest: list[TimelineEvent] = []
    for kind in dict.fromkeys(event.kind for event in events):
        same = sorted((e for e in events if e.kind == kind), key=lambda event: event.time)
        newest += same[-KERNEL_EVENTS_PER_KIND:]
    return newest


def _oom_text(kill: OomKill) -> str:
    cgroup = kill.oom_memcg or kill.task_memcg
    why = {
        "memory_cgroup": f"memory cgroup {cgroup or '(unnamed)'} hit its limit",
        "system": "the machine ran out of memory",
        "cpuset": "its cpuset's memory ran out",
        "memory_policy": "its NUMA policy's memory ran out",
    }.get(kill.scope, "scope unknown")
    earlier = " (before the last boot)" if kill.previous_boot else ""
    return f"OOM kill of {kill.name} (pid {kill.pid}): {why}{earlier}"


CROSS_CONTRIBUTORS: tuple[Contributor, ...] = (process_start_events, kernel_events)
"""The contributions that need several probes' facts; each probe adds its own with its
``timeline`` (``Probe.timeline``)."""


def host_events(facts: Facts) -> list[TimelineEvent]:
    """Every probe's events and the cross-probe ones, in time order."""
    events = [event for probe in PROBES for event in probe.events(facts.of(probe.facts_model))]
    events += [event for contributor in CROSS_CONTRIBUTORS for event in contributor(facts)]
    return sorted(events, key=lambda event: event.time)


def build_timeline(facts: Facts, collection_started: datetime) -> list[TimelineEvent]:
    """The host's events and the collection itself, in time order (stable for equal times)."""
    text = "collection started (this machine's clock)"
    system = facts.of(SystemFacts)
    host_clock = system.host_clock if system else None
    if host_clock is not None:
        skew = (host_clock - collection_started).total_seconds()
        if abs(skew) > CLOCK_SKEW_WORTH_SAYING_S:
            direction = "ahead of" if skew > 0 else "behind"
            text += f"; the host's clock is {describe_duration(abs(skew))} {direction} ours"
    collection = TimelineEvent(
        time=collection_started, source="manifest", kind=COLLECTION, text=text
    )
    return sorted([*host_events(facts), collection], key=lambda event: event.time)
