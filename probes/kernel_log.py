"""kernel_log: the kernel's own record of OOM kills, crashes, hangs, GPU and hardware errors.

Runs ``kernel_log.sh`` on the host (one section). It tries the sources in order, keeps the
first that answers, and says why each one that did not answer failed::

    dmesg_restrict 1
    btime 1764441600
    uptime 8400.12
    utc_offset +0000
    tried dmesg 1 dmesg: read kernel buffer failed: Operation not permitted
    tried journalctl 0 no kernel messages for this boot
    tried /var/log/kern.log 0 ok
    source /var/log/kern.log
    log_bytes 48213
    log_lines 402
    memcg /docker/3f2a
    lspci 0000:5e:00.0 5e:00.0 Non-Volatile memory controller: Samsung Electronics ...
    previous_boot journalctl 0 812004 2210 ok
    ==> /sys/fs/cgroup/memory/docker/3f2a/memory.oom_control <==
    oom_kill_disable 0
    under_oom 0
    oom_kill 1

    === kernel log ===
    May 15 23:09:27 gpu-a kernel: [  514.682838] Memory cgroup out of memory: Killed ...
    === previous boot ===
    2026-05-14T22:58:02.331201+00:00 gpu-a kernel: Out of memory: Killed process 20411 ...

``dmesg`` runs without options: its default stamp, seconds since boot (``[  514.682838]``),
is the one every dmesg (util-linux, busybox) prints and the one that does not depend on
locale or suspend; wall-clock times come from ``btime``. Then ``journalctl -k -b -o
short-monotonic`` (the same stamp), then the tail of ``/var/log/kern.log``,
``/var/log/messages`` or ``/var/log/syslog`` (kernel lines only).

When the log is larger than ``LOG_BYTES_KEPT``, only lines worth reading cross the wire:
the first line (how far back the buffer reaches) and the lines matching ``INTERESTING``
with three lines of context, the newest ``LOG_BYTES_KEPT`` bytes of them; the header says
so (``filtered KEPT CAP``). The counters of the memory cgroups that OOM lines name
(``oom_memcg=``, ``task_memcg=``, ``Task in``) are read too, where this host can see them,
and ``lspci -s`` describes the devices that PCIe errors and lost GPUs name. The previous
boot comes from ``journalctl -k -b -1`` (a persistent journal only): its matching lines,
the newest ``PREVIOUS_BYTES_KEPT`` bytes, after ``=== previous boot ===``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Literal

from pydantic import BaseModel, Field

from forensics.core.cgroup_paths import V1_ROOT, V2_ROOT
from forensics.core.evidence import cite
from forensics.core.models import CollectOptions, EvidenceRef, SectionSpec
from forensics.core.numbers import parse_flag, parse_float, parse_int
from forensics.core.probe import Captures, Probe, ProbeFacts, open_section
from forensics.kernel.crashes import KernelCrash, find_crashes
from forensics.kernel.faults import UserFault, find_faults, suppressed_faults
from forensics.kernel.gpu_driver import GpuDriverEvent, find_gpu_driver_events
from forensics.kernel.hung_tasks import HungTask, find_hung_tasks
from forensics.kernel.lines import Clock, KernelLine, read_lines
from forensics.kernel.machine_checks import MachineCheck, find_machine_checks
from forensics.kernel.oom_report import OomKill, OomScan, find_oom_kills
from forensics.kernel.pcie_aer import PcieError, find_pcie_errors
from forensics.kernel.sxid import SxidEvent, find_sxids
from forensics.kernel.xid import XidEvent, find_xids
from forensics.remote.file_dump import DumpedFile, dumped_files
from forensics.remote.host_script import probe_shell

SECTION = "kernel_log"
MARKER = "=== kernel log ==="
LOG_BYTES_KEPT = 1 << 20
CONTEXT_LINES = 3
MEMCG_PATHS_READ = 16
# A buffer whose first stamp is this close to boot has not lost anything that matters: no
# workload runs in the kernel's first seconds.
BOOT_SLACK_S = 10.0
SYSLOG_TAIL_LINES = 200_000
INTERESTING = (
    "oom|Out of memory|out of memory|Killed process|Kill process|callbacks suppressed|"
    "memory: usage|Task in |cpuset=|segfault at|general protection|traps: |"
    "blocked for more than|NVRM|Hardware Error|Machine check|mce: |EDAC|"
    "BUG|Oops|\\[#[0-9]|Kernel panic|LOCKUP|INFO: rcu|AER: |PCIe Bus Error|SXid"
)
PREVIOUS_BOOT_MARKER = "=== previous boot ==="
PREVIOUS_BYTES_KEPT = 256 << 10
LSPCI_DEVICES = 8
# The devices that PCIe errors and lost GPUs name, as lspci -s takes them.
DEVICE_LINES = "AER: |PCIe Bus Error|device_id: |The NVIDIA GPU |fallen off the bus|RmInitAdapter"
FILE_SOURCES = ("/var/log/kern.log", "/var/log/messages", "/var/log/syslog")

SHELL = probe_shell(
    __name__,
    {
        "file_sources": " ".join(FILE_SOURCES),
        "syslog_tail_lines": SYSLOG_TAIL_LINES,
        "memcg_paths_read": MEMCG_PATHS_READ,
        "log_bytes_kept": LOG_BYTES_KEPT,
        "context_lines": CONTEXT_LINES,
        "interesting": INTERESTING,
        "v1_root": V1_ROOT,
        "v2_root": V2_ROOT,
        "marker": MARKER,
        "device_lines": DEVICE_LINES,
        "lspci_devices": LSPCI_DEVICES,
        "previous_bytes_kept": PREVIOUS_BYTES_KEPT,
        "previous_marker": PREVIOUS_BOOT_MARKER,
    },
)

Source = Literal["dmesg", "journalctl", "file"]


class LogSourceAttempt(BaseModel):
    """One source the section tried, and what came of it."""

    source: str = Field(description="dmesg, journalctl, or a log file's path.")
    exit_status: int | None
    answered: bool
    said: str = Field(description="'ok', its first line of stderr, or why it gave nothing.")
    evidence: EvidenceRef


class MemcgCounters(BaseModel):
    """OOM counters of a memory cgroup that an OOM line names, as this host sees it."""

    cgroup: str = Field(description="The path the OOM line printed, e.g. /docker/3f2a.")
    directory: str
    version: Literal[1, 2]
    oom_kill: int | None = None
    oom: int | None = Field(default=None, description="v2 memory.events oom.")
    oom_kill_local: int | None = Field(default=None, description="v2 memory.events.local.")
    under_oom: bool | None = Field(default=None, description="v1 oom_control under_oom.")
    failcnt: int | None = Field(default=None, description="v1 memory.failcnt.")
    evidence: EvidenceRef | None = Field(default=None, description="The oom_kill line.")


class PreviousBoot(BaseModel):
    """The boot before this one, read from a persistent journal (``journalctl -k -b -1``)."""

    exit_status: int | None = None
    log_bytes: int | None = Field(default=None, description="Its whole kernel log.")
    kept_bytes: int | None = Field(default=None, description="Matching lines sent, capped.")
    said: str = Field(description="'ok', or journalctl's first line of stderr.")
    evidence: EvidenceRef

    @property
    def read(self) -> bool:
        return self.exit_status == 0 and bool(self.log_bytes)


class KernelLogFacts(ProbeFacts):
    source: str | None = Field(default=None, description="The source that answered, if any.")
    attempts: list[LogSourceAttempt] = Field(default_factory=list)
    dmesg_restrict: int | None = None
    boot_time: datetime | None = None
    uptime_s: float | None = None
    utc_offset: str | None = Field(default=None, description="The host's, e.g. +0000.")
    time_basis: str | None = Field(default=None, description="How wall-clock times were made.")
    log_bytes: int | None = Field(default=None, description="Size of the log on the host.")
    log_lines: int | None = None
    filtered: bool = Field(default=False, description="Only matching lines crossed the wire.")
    filtered_bytes: int | None = Field(default=None, description="Matching lines + context.")
    cap_bytes: int | None = Field(default=None, description="Most bytes of them kept.")
    earliest_monotonic_s: float | None = None
    earliest_time: datetime | None = None
    earliest_evidence: EvidenceRef | None = None
    reaches_boot: bool | None = Field(
        default=None, description="The log starts at boot; False: older lines are gone."
    )
    only_earlier_boots: bool = Field(
        default=False, description="A log file whose every line predates this boot."
    )
    previous_boot: PreviousBoot | None = Field(
        default=None, description="What journalctl -k -b -1 gave, when it was tried."
    )
    oom_kills: list[OomKill] = Field(default_factory=list)
    oom_callbacks_suppressed: int = 0
    suppressed_evidence: list[EvidenceRef] = Field(default_factory=list)
    faults: list[UserFault] = Field(default_factory=list)
    faults_suppressed: int = Field(
        default=0, description="Fault messages the kernel's rate limit dropped."
    )
    hung_tasks: list[HungTask] = Field(default_factory=list)
    xids: list[XidEvent] = Field(default_factory=list)
    machine_checks: list[MachineCheck] = Field(default_factory=list)
    crashes: list[KernelCrash] = Field(default_factory=list)
    pcie_errors: list[PcieError] = Field(default_factory=list)
    gpu_driver_events: list[GpuDriverEvent] = Field(default_factory=list)
    sxids: list[SxidEvent] = Field(default_factory=list)
    lspci: dict[str, str] = Field(
        default_factory=dict, description="lspci -s of each device PCIe errors name."
    )
    memcg_counters: list[MemcgCounters] = Field(default_factory=list)
    incomplete: str | None = Field(
        default=None, description="Why what was read may be missing its end."
    )

    @property
    def readable(self) -> bool:
        return self.source is not None

    @property
    def dropped_old_matches(self) -> bool:
        """The filtered lines were more than the cap: the oldest of them were dropped."""
        return (
            self.filtered
            and self.filtered_bytes is not None
            and self.cap_bytes is not None
            and self.filtered_bytes > self.cap_bytes
        )

    def source_kind(self) -> Source | None:
        if self.source is None:
            return None
        if self.source in ("dmesg", "journalctl"):
            return "dmesg" if self.source == "dmesg" else "journalctl"
        return "file"


def sections(options: CollectOptions) -> list[SectionSpec]:
    return [
        SectionSpec(
            name=SECTION,
            shell=SHELL,
            timeout_s=30,
            max_bytes=2 * LOG_BYTES_KEPT + PREVIOUS_BYTES_KEPT + (256 << 10),
        )
    ]


def parse(captures: Captures, options: CollectOptions) -> KernelLogFacts:
    """Read the ``kernel_log`` section.

    >>> from forensics.core.probe import Captured
    >>> text = (
    ...     "dmesg_restrict 0\\nbtime 1764441600\\nuptime 8400.12\\nutc_offset +0000\\n"
    ...     "tried dmesg 0 ok\\nsource dmesg\\nlog_bytes 300\\nlog_lines 3\\nmemcg /job\\n"
    ...     "==> /sys/fs/cgroup/memory/job/memory.oom_control <==\\n"
    ...     "oom_kill_disable 0\\nunder_oom 0\\noom_kill 1\\n\\n=== kernel log ===\\n"
    ...     "[    0.000000] Linux version 6.18.44\\n"
    ...     "[  759.235876] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
    ...     "mems_allowed=0,oom_memcg=/job,task_memcg=/job,task=hog worker,pid=15618,uid=0\\n"
    ...     "[  759.235889] Memory cgroup out of memory: Killed process 15618 (hog worker) "
    ...     "total-vm:74132kB, anon-rss:64128kB, file-rss:6496kB, shmem-rss:0kB, UID:0 "
    ...     "pgtables:188kB oom_score_adj:0\\n"
    ... )
    >>> facts = parse({"kernel_log": Captured.complete("kernel_log", text)}, CollectOptions())
    >>> facts.source, facts.reaches_boot, facts.dmesg_restrict
    ('dmesg', True, 0)
    >>> kill = facts.oom_kills[0]
    >>> kill.pid, kill.name, kill.scope, kill.task_memcg, kill.killed_line, kill.time.isoformat()
    (15618, 'hog worker', 'memory_cgroup', '/job', 18, '2025-11-29T18:52:39.235889+00:00')
    >>> [(c.cgroup, c.oom_kill, c.evidence.first_line) for c in facts.memcg_counters]
    [('/job', 1, 13)]
    """
    captured, reason = open_section(captures, SECTION)
    if captured is None:
        return KernelLogFacts(unavailable=reason)
    facts = KernelLogFacts(incomplete=captured.result.problem())
    head, log_text, log_first_line = _split(captured.text)
    memcg_paths = _read_header(facts, head)
    facts.memcg_counters = _memcg_counters(head, memcg_paths)
    if facts.source is None:
        facts.unavailable = _why_unreadable(facts, reason)
        return facts
    if log_text is None:
        facts.source = None
        facts.unavailable = reason or "the section ended before the log itself"
        return facts
    offset = _utc_offset(facts.utc_offset)
    clock = Clock(boot_time=facts.boot_time, uptime_s=facts.uptime_s, utc_offset=offset)
    current, previous, previous_first_line = _split_previous(log_text, log_first_line)
    lines = read_lines(current, log_first_line, clock)
    facts.time_basis = _time_basis(facts, offset)
    _read_reach(facts, lines)
    if previous is not None:
        lines += read_lines(previous, previous_first_line, clock, previous_boot=True)
    _read_events(facts, lines)
    return facts


def _read_events(facts: KernelLogFacts, lines: list[KernelLine]) -> None:
    scan: OomScan = find_oom_kills(lines, SECTION)
    facts.oom_kills = scan.kills
    facts.oom_callbacks_suppressed = scan.callbacks_suppressed
    facts.suppressed_evidence = scan.suppressed_evidence
    facts.faults = find_faults(lines, SECTION)
    facts.faults_suppressed = suppressed_faults(lines)
    facts.hung_tasks = find_hung_tasks(lines, SECTION)
    facts.xids = find_xids(lines, SECTION)
    pcie = find_pcie_errors(lines, SECTION)
    facts.pcie_errors = pcie.errors
    facts.machine_checks = find_machine_checks(lines, SECTION, pcie.hardware_error_lines)
    facts.crashes = find_crashes(lines, SECTION)
    facts.gpu_driver_events = find_gpu_driver_events(lines, SECTION)
    facts.sxids = find_sxids(lines, SECTION)


def _split_previous(text: str, first_line: int) -> tuple[str, str | None, int]:
    """This boot's log, the previous boot's lines after ``PREVIOUS_BOOT_MARKER`` (the last
    one: ours comes after the whole log), and the section line they start on."""
    lines = text.split("\n")
    if PREVIOUS_BOOT_MARKER not in lines:
        return text, None, 0
    index = len(lines) - 1 - lines[::-1].index(PREVIOUS_BOOT_MARKER)
    current = "\n".join(lines[:index]) + ("\n" if index else "")
    return current, "\n".join(lines[index + 1 :]), first_line + index + 1


def _split(text: str) -> tuple[str, str | None, int]:
    """The header (with the cgroup dumps), the log, and the section line the log starts on.
    The first marker is ours: the header comes before anything the log could hold."""
    lines = text.split("\n")
    if MARKER not in lines:
        return text, None, 0
    index = lines.index(MARKER)
    return "\n".join(lines[:index]) + "\n", "\n".join(lines[index + 1 :]), index + 2


def _read_header(facts: KernelLogFacts, head: str) -> list[str]:
    memcg_paths: list[str] = []
    for number, line in enumerate(head.split("\n==> ", 1)[0].splitlines(), start=1):
        key, _, value = line.partition(" ")
        if key == "dmesg_restrict":
            facts.dmesg_restrict = parse_int(value)
        elif key == "btime" and parse_int(value) is not None:
            facts.boot_time = _epoch(parse_int(value))
        elif key == "uptime":
            facts.uptime_s = parse_float(value, minimum=0)
        elif key == "utc_offset" and value:
            facts.utc_offset = value.strip()
        elif key == "tried":
            facts.attempts.append(_attempt(value, number, line))
        elif key == "source" and value and value != "none":
            facts.source = value
        elif key in ("log_bytes", "log_lines"):
            setattr(facts, key, parse_int(value))
        elif key == "filtered":
            kept, _, cap = value.partition(" ")
            facts.filtered = True
            facts.filtered_bytes, facts.cap_bytes = parse_int(kept), parse_int(cap)
        elif key == "memcg" and value.startswith("/"):
            memcg_paths.append(value)
        elif key == "lspci":
            device, _, described = value.partition(" ")
            if device and described.strip():
                facts.lspci[device] = described.strip()
        elif key == "previous_boot":
            facts.previous_boot = _previous_boot(value, number, line)
    return memcg_paths


def _previous_boot(value: str, number: int, line: str) -> PreviousBoot:
    """``journalctl STATUS LOG_BYTES KEPT_BYTES ok|first line of stderr``."""
    words = value.split(" ", 4)
    words += [""] * (5 - len(words))
    return PreviousBoot(
        exit_status=parse_int(words[1]),
        log_bytes=parse_int(words[2]),
        kept_bytes=parse_int(words[3]),
        said=words[4] or "?",
        evidence=cite(SECTION, number, line),
    )


def _attempt(value: str, number: int, line: str) -> LogSourceAttempt:
    source, _, rest = value.partition(" ")
    status, _, said = rest.partition(" ")
    return LogSourceAttempt(
        source=source,
        exit_status=parse_int(status),
        answered=said == "ok",
        said=said or "?",
        evidence=cite(SECTION, number, line),
    )


def _why_unreadable(facts: KernelLogFacts, reason: str | None) -> str:
    failed = [
        a.said if a.said.startswith(a.source + ":") else f"{a.source}: {a.said}"
        for a in facts.attempts
        if not a.answered
    ]
    if not failed:
        return reason or "no source of the kernel log was tried"
    return "; ".join(failed)


def _memcg_counters(head: str, cgroups: list[str]) -> list[MemcgCounters]:
    wanted = []
    for cgroup in cgroups:
        wanted += [f"{V1_ROOT}{cgroup}/memory.oom_control", f"{V1_ROOT}{cgroup}/memory.failcnt"]
        wanted += [f"{V2_ROOT}{cgroup}/memory.events", f"{V2_ROOT}{cgroup}/memory.events.local"]
    files = dumped_files(head, wanted)
    counters = []
    for cgroup in cgroups:
        control = files.get(f"{V1_ROOT}{cgroup}/memory.oom_control")
        events = files.get(f"{V2_ROOT}{cgroup}/memory.events")
        if control is not None:
            keyed = control.keyed()
            counters.append(
                MemcgCounters(
                    cgroup=cgroup,
                    directory=V1_ROOT + cgroup,
                    version=1,
                    oom_kill=parse_int(keyed.get("oom_kill", "")),
                    under_oom=parse_flag(keyed.get("under_oom")),
                    failcnt=parse_int(_content(files.get(f"{V1_ROOT}{cgroup}/memory.failcnt"))),
                    evidence=_line_of(control, "oom_kill"),
                )
            )
        if events is not None:
            local = files.get(f"{V2_ROOT}{cgroup}/memory.events.local")
            keyed = events.keyed()
            counters.append(
                MemcgCounters(
                    cgroup=cgroup,
                    directory=V2_ROOT + cgroup,
                    version=2,
                    oom_kill=parse_int(keyed.get("oom_kill", "")),
                    oom=parse_int(keyed.get("oom", "")),
                    oom_kill_local=parse_int(local.keyed().get("oom_kill", "")) if local else None,
                    evidence=_line_of(events, "oom_kill"),
                )
            )
    return counters


def _read_reach(facts: KernelLogFacts, lines: list[KernelLine]) -> None:
    """How far back the log goes: its earliest stamp of this boot, and whether that is boot."""
    if facts.source_kind() == "file":
        timed = [line for line in lines if line.stamped and line.time is not None]
        this_boot = [line for line in timed if not line.previous_boot]
        # A file whose every line predates boot says nothing about this boot.
        facts.only_earlier_boots = bool(timed) and not this_boot
        earliest = min(timed, key=_wall) if timed else None
        if earliest is not None and earliest.time is not None:
            facts.earliest_time = earliest.time
            facts.earliest_monotonic_s = earliest.monotonic_s
            if facts.boot_time is not None:
                facts.reaches_boot = not facts.only_earlier_boots and (
                    earliest.time <= facts.boot_time + timedelta(seconds=BOOT_SLACK_S)
                )
    else:
        stamped = [line for line in lines if line.stamped and line.monotonic_s is not None]
        earliest = min(stamped, key=_monotonic) if stamped else None
        if earliest is not None and earliest.monotonic_s is not None:
            facts.earliest_monotonic_s = earliest.monotonic_s
            facts.earliest_time = earliest.time
            facts.reaches_boot = earliest.monotonic_s <= BOOT_SLACK_S
        if lines and lines[0].message.startswith("Linux version "):
            earliest, facts.reaches_boot = lines[0], True
    if earliest is not None:
        facts.earliest_evidence = cite(SECTION, earliest.number, earliest.text[:400])


def _wall(line: KernelLine) -> datetime:
    return line.time or datetime.max.replace(tzinfo=UTC)


def _monotonic(line: KernelLine) -> float:
    return line.monotonic_s if line.monotonic_s is not None else float("inf")


def _time_basis(facts: KernelLogFacts, offset: timedelta | None) -> str:
    if facts.source_kind() == "file":
        zone = facts.utc_offset if offset is not None else "unknown (times left out)"
        return f"syslog stamps in the host's local time, UTC offset {zone}"
    if facts.boot_time is None:
        return "seconds since boot; boot time unknown, so no wall-clock times"
    return (
        "seconds since boot plus the boot time (btime); off by the time the host spent "
        "suspended or its VM paused"
    )


def _utc_offset(text: str | None) -> timedelta | None:
    """``+0530`` as a timedelta.

    >>> _utc_offset("+0530"), _utc_offset("-0800"), _utc_offset("bogus")
    (datetime.timedelta(seconds=19800), datetime.timedelta(days=-1, seconds=57600), None)
    """
    if not text or len(text) != 5 or text[0] not in "+-" or not text[1:].isdecimal():
        return None
    minutes = int(text[1:3]) * 60 + int(text[3:5])
    return timedelta(minutes=minutes if text[0] == "+" else -minutes)


def _line_of(dumped: DumpedFile, key: str) -> EvidenceRef | None:
    index = dumped.key_index(key)
    if index is None:
        return None
    return cite(SECTION, dumped.line_of(index), dumped.content.splitlines()[index])


def _content(dumped: DumpedFile | None) -> str:
    return dumped.content.strip() if dumped else ""


def _epoch(seconds: int | None) -> datetime | None:
    if seconds is None or seconds <= 0:
        return None
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None


PROBE = Probe(
    name="kernel_log",
    run_order=60,
    report_order=80,
    sections=sections,
    facts_model=KernelLogFacts,
    parse=parse,
    rules_module="forensics.probes.kernel_log_rules",
)
