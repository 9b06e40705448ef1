"""OOM kills in a kernel log, in every format the kernel has printed since 4.x.

One kill as 6.18 prints it for a memory cgroup (captured on the test VM, trimmed)::

    [  759.234497] hog worker invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, ...
    [  759.235302] memory: usage 65536kB, limit 65536kB, failcnt 92
    [  759.235876] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,
                   oom_memcg=/fmtdemo,task_memcg=/fmtdemo,task=hog worker,pid=15618,uid=0
    [  759.235889] Memory cgroup out of memory: Killed process 15618 (hog worker)
                   total-vm:74132kB, anon-rss:64128kB, file-rss:6496kB, shmem-rss:0kB, UID:0
                   pgtables:188kB oom_score_adj:0

and before 5.1, a scored task and the task really killed, which may be its child::

    Out of memory: Kill process 23051 (java) score 912 or sacrifice child
    Killed process 23077 (java) total-vm:18213044kB, anon-rss:14120188kB, file-rss:2024kB

RHEL 7 puts the UID after the name: ``Killed process 18177 (palo_be), UID 0, total-vm:…``.

Kills are counted from the ``Killed process`` lines only: the header, the memcg block and
the ``oom-kill:`` line are rate-limited (``oom_kill_process: 43 callbacks suppressed``) and
only enrich the kill that follows them, and only when nothing separates them: the kernel
prints one event's lines within milliseconds, so a report whose last line is more than
``REPORT_SPAN_S`` older than the kill, a rate-limit line in between, or an ``oom-kill:``
line naming another PID belong to another event whose own kill line is missing. Such a
kill says its report is ``unpaired``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from forensics.core.models import EvidenceRef
from forensics.kernel.lines import KernelLine

Scope = Literal["memory_cgroup", "system", "cpuset", "memory_policy", "unknown"]
Pairing = Literal["paired", "unpaired", "none"]

REPORT_SPAN_S = 10.0
"""Most seconds between an OOM report's last line and its kill (printed within milliseconds;
the slack absorbs a slow console and whole-second syslog stamps)."""


_PREFIX = (
    r"(?:(?P<prefix>Out of memory(?: \(oom_kill_allocating_task\))?|"
    r"Memory cgroup out of memory): )?"
)
_KILLED = re.compile(
    _PREFIX + r"Killed process (?P<pid>\d+)(?:, UID (?P<old_uid>\d+),)? \((?P<name>.*)\)"
    r"(?P<rest>[ ,].*)?$"
)
_SCORED = re.compile(
    _PREFIX + r"Kill process (?P<pid>\d+) \((?P<name>.*)\) score (?P<score>\d+) "
    r"or sacrifice child"
)
_HEADER = re.compile(r"^(?P<name>.+?) invoked oom-killer: gfp_mask=(?P<gfp>[^,]*),")
_CPUSET = re.compile(r"^(?P<name>.+?) cpuset=(?P<cpuset>\S*) mems_allowed=(?P<mems>\S*)$")
_TASK_IN = re.compile(r"^Task in (?P<task>\S+) killed as a result of limit of (?P<oom>\S+)")
_LIMIT_REACHED = re.compile(r"^Memory limit reached of cgroup (?P<oom>\S+)")
_MEMCG_USAGE = re.compile(r"^memory: usage (?P<usage>\d+)kB, limit (?P<limit>\d+)kB")
_REAPED = re.compile(r"^oom_reaper: reaped process (?P<pid>\d+) \(")
_SUPPRESSED = re.compile(r"^(?P<function>\S+): (?P<count>\d+) callbacks suppressed")
_FIGURE = re.compile(r"(?P<key>[A-Za-z_-]+):(?P<value>-?\d+)(?:kB)?")
_UID_WORD = re.compile(r"(?:^|, )UID (?P<uid>\d+)(?:,|$)")
_CONTEXT_KEY = re.compile(r"(?:^|,)(constraint|nodemask|cpuset|mems_allowed|oom_memcg|task_memcg)=")
_CONTEXT_TAIL = re.compile(r",pid=\s*(?P<pid>\d+),uid=\s*(?P<uid>\d+)\s*$")
_KEYWORDS = (
    "oom",
    "Killed process",
    "Kill process",
    "Task in ",
    "Memory limit reached",
    "memory: usage",
    "callbacks suppressed",
    " cpuset=",
)
_SCOPES: dict[str, Scope] = {
    "CONSTRAINT_MEMCG": "memory_cgroup",
    "CONSTRAINT_NONE": "system",
    "CONSTRAINT_CPUSET": "cpuset",
    "CONSTRAINT_MEMORY_POLICY": "memory_policy",
}


class OomKill(BaseModel):
    """One process the OOM killer killed, with what the report around it said."""

    pid: int = Field(description="Host PID (init namespace), as the kernel prints it.")
    name: str = Field(description="comm, at most 15 characters; may hold spaces.")
    scope: Scope = Field(description="memory_cgroup: a cgroup hit its limit; system: RAM ran out.")
    constraint: str | None = Field(default=None, description="CONSTRAINT_* of the oom-kill line.")
    oom_memcg: str | None = Field(default=None, description="The cgroup whose limit was hit.")
    task_memcg: str | None = Field(default=None, description="The victim's own cgroup.")
    uid: int | None = None
    total_vm_kb: int | None = None
    anon_rss_kb: int | None = None
    file_rss_kb: int | None = None
    shmem_rss_kb: int | None = None
    pgtables_kb: int | None = None
    oom_score_adj: int | None = None
    scored_pid: int | None = Field(default=None, description="Before 5.1: the task scored.")
    scored_name: str | None = None
    score: int | None = None
    invoked_by: str | None = Field(default=None, description="The task whose allocation failed.")
    gfp_mask: str | None = None
    order: int | None = None
    memcg_usage_kb: int | None = None
    memcg_limit_kb: int | None = None
    reaped: bool = Field(default=False, description="oom_reaper freed its memory.")
    report: Pairing = Field(
        default="none",
        description="paired: the report lines before it are its own; unpaired: a report was "
        "there but another event's (separated in time or by a rate limit); none: no report.",
    )
    monotonic_s: float | None = Field(default=None, description="Seconds since boot.")
    time: datetime | None = Field(default=None, description="UTC, from the boot time.")
    previous_boot: bool = False
    killed_line: int = Field(description="Section line of the 'Killed process' line.")
    evidence: list[EvidenceRef] = Field(default_factory=list)

    @property
    def rss_kb(self) -> int | None:
        parts = [self.anon_rss_kb, self.file_rss_kb, self.shmem_rss_kb]
        known = [part for part in parts if part is not None]
        return sum(known) if known else None


class OomScan(BaseModel):
    kills: list[OomKill] = Field(default_factory=list)
    callbacks_suppressed: int = Field(
        default=0, description="OOM report lines the kernel's rate limit dropped."
    )
    suppressed_evidence: list[EvidenceRef] = Field(default_factory=list)


@dataclass
class _Report:
    """What an OOM report printed before its ``Killed process`` line."""

    evidence: list[EvidenceRef] = field(default_factory=list)
    invoked_by: str | None = None
    gfp_mask: str | None = None
    order: int | None = None
    task_memcg: str | None = None
    oom_memcg: str | None = None
    memcg_usage_kb: int | None = None
    memcg_limit_kb: int | None = None
    context: dict[str, str] | None = None
    context_pid: int | None = None
    context_uid: int | None = None
    scored: re.Match[str] | None = None
    scored_ref: EvidenceRef | None = None
    last_monotonic_s: float | None = None
    last_time: datetime | None = None
    separated: bool = False

    @property
    def empty(self) -> bool:
        return not self.evidence and self.scored is None

    def seen(self, line: KernelLine) -> None:
        self.last_monotonic_s, self.last_time = line.monotonic_s, line.time

    def belongs_to(self, line: KernelLine, pid: int) -> bool:
        """Nothing separates this report from the kill on ``line`` of ``pid``."""
        if self.context is not None:
            return self.context_pid == pid
        if self.separated:
            return False
        if self.last_monotonic_s is not None and line.monotonic_s is not None:
            return line.monotonic_s - self.last_monotonic_s <= REPORT_SPAN_S
        if self.last_time is not None and line.time is not None:
            return (line.time - self.last_time).total_seconds() <= REPORT_SPAN_S
        return True


def find_oom_kills(lines: Sequence[KernelLine], section: str) -> OomScan:
    """Every OOM kill in ``lines``, in order, with its report's details.

    >>> from forensics.kernel.lines import Clock, read_lines
    >>> log = (
    ...     "[  500.1] java invoked oom-killer: gfp_mask=0x14200ca(GFP_HIGHUSER_MOVABLE), "
    ...     "nodemask=(null),  order=0, oom_score_adj=0\\n"
    ...     "[  500.3] Out of memory: Kill process 23051 (java) score 912 or sacrifice child\\n"
    ...     "[  500.3] Killed process 23077 (java) total-vm:18213044kB, anon-rss:14120188kB, "
    ...     "file-rss:2024kB, shmem-rss:0kB\\n"
    ...     "[  761.0] oom_kill_process: 43 callbacks suppressed\\n"
    ...     "[  761.0] Memory cgroup out of memory: Killed process 8821 (python3) "
    ...     "total-vm:12004kB, anon-rss:4310kB, file-rss:3396kB, shmem-rss:0kB\\n"
    ... )
    >>> scan = find_oom_kills(read_lines(log, 1, Clock()), "kernel_log")
    >>> for k in scan.kills:
    ...     print(k.pid, k.name, k.scope, k.scored_pid, k.invoked_by, k.rss_kb)
    23077 java system 23051 java 14122212
    8821 python3 memory_cgroup None None 7706
    >>> scan.callbacks_suppressed, [e.first_line for e in scan.kills[0].evidence]
    (43, [1, 2, 3])
    """
    scan = OomScan()
    report = _Report()
    by_pid: dict[int, OomKill] = {}
    for line in lines:
        message = line.message
        if not any(keyword in message for keyword in _KEYWORDS):
            continue
        ref = line.evidence(section)
        killed = _KILLED.search(message) if "Killed process" in message else None
        if killed:
            kill = _kill(killed, line, report, ref)
            scan.kills.append(kill)
            by_pid[kill.pid] = kill
            report = _Report()
        elif "invoked oom-killer:" in message:
            report = _Report()
            _read_header(report, message, ref)
            report.seen(line)
        elif "callbacks suppressed" in message:
            if _read_suppressed(scan, message, ref):
                report.separated = True
        elif message.startswith("oom_reaper: reaped process"):
            _read_reaper(by_pid, message, ref)
        elif _read_report_line(report, message, ref):
            report.seen(line)
    return scan


def _read_header(report: _Report, message: str, ref: EvidenceRef) -> None:
    match = _HEADER.search(message)
    if not match:
        return
    report.invoked_by = match.group("name")
    report.gfp_mask = match.group("gfp")
    order = re.search(r"order=(-?\d+)", message)
    report.order = int(order.group(1)) if order else None
    report.evidence.append(ref)


def _read_suppressed(scan: OomScan, message: str, ref: EvidenceRef) -> bool:
    match = _SUPPRESSED.match(message)
    if not match:
        return False
    function = match.group("function")
    if "oom" in function or function in ("dump_header", "out_of_memory"):
        scan.callbacks_suppressed += int(match.group("count"))
        scan.suppressed_evidence.append(ref)
        return True
    return False


def _read_reaper(by_pid: dict[int, OomKill], message: str, ref: EvidenceRef) -> None:
    match = _REAPED.match(message)
    kill = by_pid.get(int(match.group("pid"))) if match else None
    if kill is not None:
        kill.reaped = True
        kill.evidence.append(ref)


def _read_report_line(report: _Report, message: str, ref: EvidenceRef) -> bool:
    """Read one line of a report; True when it was one."""
    if message.startswith("oom-kill:"):
        return _read_context(report, message[len("oom-kill:") :], ref)
    if (scored := _SCORED.search(message)) is not None:
        report.scored, report.scored_ref = scored, ref
    elif (task_in := _TASK_IN.match(message)) is not None:
        report.task_memcg, report.oom_memcg = task_in.group("task"), task_in.group("oom")
        report.evidence.append(ref)
    elif (reached := _LIMIT_REACHED.match(message)) is not None:
        report.oom_memcg = reached.group("oom")
        report.evidence.append(ref)
    elif (usage := _MEMCG_USAGE.match(message)) is not None and report.memcg_limit_kb is None:
        report.memcg_usage_kb = int(usage.group("usage"))
        report.memcg_limit_kb = int(usage.group("limit"))
        report.evidence.append(ref)
    elif report.invoked_by and _CPUSET.match(message):
        report.evidence.append(ref)
    else:
        return False
    return True


def _read_context(report: _Report, body: str, ref: EvidenceRef) -> bool:
    """``constraint=…,nodemask=…,cpuset=…,mems_allowed=0-1,3,oom_memcg=…,task_memcg=…,
    task=NAME,pid=N,uid=N``: values may hold commas (node lists) and the name may too, so
    the tail is taken from the right and the keys are found by name."""
    tail = _CONTEXT_TAIL.search(body)
    if not tail:
        return False
    body = body[: tail.start()]
    start = body.find(",task_memcg=")
    task_at = body.find(",task=", max(start, 0))
    if task_at < 0:
        return False
    keyed = body[:task_at]
    values: dict[str, str] = {}
    keys = list(_CONTEXT_KEY.finditer(keyed))
    for index, key in enumerate(keys):
        end = keys[index + 1].start() if index + 1 < len(keys) else len(keyed)
        value = keyed[key.end() : end]
        values[key.group(1)] = value.removesuffix(",global_oom")
    report.context = values
    report.context_pid = int(tail.group("pid"))
    report.context_uid = int(tail.group("uid"))
    report.evidence.append(ref)
    return True


def _kill(killed: re.Match[str], line: KernelLine, report: _Report, ref: EvidenceRef) -> OomKill:
    pid = int(killed.group("pid"))
    pairing: Pairing = "none" if report.empty else "paired"
    if pairing == "paired" and not report.belongs_to(line, pid):
        pairing, report = "unpaired", _Report()
    kill = OomKill(
        pid=pid,
        name=killed.group("name"),
        scope="unknown",
        monotonic_s=line.monotonic_s,
        time=line.time,
        previous_boot=line.previous_boot,
        report=pairing,
        killed_line=line.number,
        invoked_by=report.invoked_by,
        gfp_mask=report.gfp_mask,
        order=report.order,
        task_memcg=report.task_memcg,
        oom_memcg=report.oom_memcg,
        memcg_usage_kb=report.memcg_usage_kb,
        memcg_limit_kb=report.memcg_limit_kb,
        evidence=list(report.evidence),
    )
    if killed.group("old_uid"):
        kill.uid = int(killed.group("old_uid"))
    _read_figures(kill, killed.group("rest") or "")
    prefix = killed.group("prefix")
    if report.scored is not None and report.scored_ref is not None:
        kill.scored_pid = int(report.scored.group("pid"))
        kill.scored_name = report.scored.group("name")
        kill.score = int(report.scored.group("score"))
        prefix = prefix or report.scored.group("prefix")
        kill.evidence.append(report.scored_ref)
    if report.context is not None and report.context_pid == pid:
        _apply_context(kill, report.context, report.context_uid)
    kill.scope = _scope(prefix, kill)
    kill.evidence.append(ref)
    kill.evidence.sort(key=lambda evidence: evidence.first_line)
    return kill


def _read_figures(kill: OomKill, rest: str) -> None:
    figures = {m.group("key"): int(m.group("value")) for m in _FIGURE.finditer(rest)}
    kill.total_vm_kb = figures.get("total-vm")
    kill.anon_rss_kb = figures.get("anon-rss")
    kill.file_rss_kb = figures.get("file-rss")
    kill.shmem_rss_kb = figures.get("shmem-rss")
    kill.oom_score_adj = figures.get("oom_score_adj")
    kill.uid = figures.get("UID", kill.uid)
    if kill.uid is None and (word := _UID_WORD.search(rest)) is not None:
        kill.uid = int(word.group("uid"))
    pgtables = figures.get("pgtables")
    # Early 5.4.x printed pgtables in bytes with a kB suffix; page tables never outgrow
    # the address space they map, so a larger figure can only be bytes.
    if pgtables is not None and kill.total_vm_kb is not None and pgtables > kill.total_vm_kb:
        pgtables //= 1024
    kill.pgtables_kb = pgtables


def _apply_context(kill: OomKill, context: dict[str, str], uid: int | None) -> None:
    kill.constraint = context.get("constraint")
    kill.oom_memcg = context.get("oom_memcg", kill.oom_memcg)
    kill.task_memcg = context.get("task_memcg", kill.task_memcg)
    kill.uid = kill.uid if kill.uid is not None else uid


def _scope(prefix: str | None, kill: OomKill) -> Scope:
    if kill.constraint in _SCOPES:
        return _SCOPES[kill.constraint]
    if prefix == "Memory cgroup out of memory" or kill.oom_memcg:
        return "memory_cgroup"
    if prefix:
        return "system"
    return "unknown"
