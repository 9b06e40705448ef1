"""processes: the process table read straight from /proc, twice, a few seconds apart.

The first snapshot (section ``processes``) opens the host script and the second (section
``processes_again``: each process's stat again) closes it, so every other probe runs in
the gap; the second sleeps only what is left of ``--snapshot-gap`` by the host's
/proc/uptime, and both readings are recorded, so the gap reported is the one that was.
Asked alone (``--probe processes``), and in bundles written before the split, one
``processes`` section holds both snapshots; the parser reads either shape.

No procps: one ``head -v -c N`` per 200 processes and file kind, shell builtins for the rest.
After every file ``head`` also prints a private separator file whose content is a random
nonce read from ``/proc/sys/kernel/random/uuid``, so no command line, comm or cgroup path
can forge a file boundary, whatever bytes it holds (newlines, ``==> x <==``, NUL). Real
output (tests/samples/processes-pidns-zombies.txt, a PID namespace whose PID 1 is ``sh``)::

    nonce d198af9b-3319-404d
    clock_ticks 100
    page_size 4096
    btime 1795987298
    self 9
    snapshot 1 1648.38
    ==> /proc/1/stat <==
    1 (sh) S 0 0 0 0 -1 4194560 98 75 0 0 0 0 0 0 20 0 1 0 164775 2654208 409 ... 0

    ==> .s <==
    d198af9b-3319-404d

    ==> /proc/2/stat <==
    2 (zl-demo) Z 1 0 0 0 -1 4227084 2025 0 1 0 3 0 0 0 20 0 2 0 164775 0 0 ... 0
    ...                      (then status, cmdline, wchan and cgroup the same way)
    threads
    tasks 2 2
    thread 2 2 Z 0 zl-demo
    thread 2 8 S hrtimer_nanosleep zl-demo
    links
    lrwxrwxrwx 1 0 0 0 Nov 29 21:49 /proc/1/exe -> /usr/bin/dash
    lrwxrwxrwx 1 0 0 0 Nov 29 21:49 /proc/2/exe
    ==> .s <==
    d198af9b-3319-404d

and then ``processes_again`` (its nonce read back from the same separator file; the
sample file holds both in one section, as a bundle from before the split does)::

    nonce d198af9b-3319-404d
    snapshot 2 1648.91
    ==> /proc/1/stat <==
    ...
    end

and returns ``ProcessesFacts`` with one ``ProcessEntry`` per user-space process (kernel
threads only when they are stuck in D), the trees around the focus process and each
zombie, and what the focus pattern matched. Command lines are redacted here, before they
enter any model; the raw bundle keeps the exact bytes.
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, Field

from forensics.core.focus import Focus, FocusError
from forensics.core.models import CollectOptions, SectionSpec
from forensics.core.numbers import parse_float, parse_int
from forensics.core.probe import Captures, Probe, ProbeFacts, open_section
from forensics.core.redaction import redact, redact_argv
from forensics.probes.system import KNOWN_INITS
from forensics.remote.host_script import ShellValue, probe_shell

PROBE_NAME = "processes"
SECTION = "processes"
AGAIN = "processes_again"
SEPARATOR_FILE = ".s"
BATCH = 200
MAX_THREADS_LISTED = 64
MAX_THREAD_LINES = 4096
CMDLINE_CAP = 4096
STATUS_CAP = 256
STAT_CAP = 1024
CGROUP_CAP = 1024
MAX_TREES = 12
MAX_FOCUS_TREES = 3


def shell() -> str:
    """The first snapshot's shell text (``processes.sh``, with ``_dump``)."""
    values: dict[str, ShellValue] = {
        "batch": BATCH,
        "threads_per_process": MAX_THREADS_LISTED,
        "thread_lines": MAX_THREAD_LINES,
        "stat_cap": STAT_CAP,
        "status_cap": STATUS_CAP,
        "cmdline_cap": CMDLINE_CAP,
        "cgroup_cap": CGROUP_CAP,
    }
    return probe_shell(__name__, values, "dump", "")


def shell_again(gap_s: float) -> str:
    """The second snapshot's shell text (``processes.again.sh``, with ``_dump``): ``gap_s``
    seconds after the first, by the host's /proc/uptime."""
    gap_cs = math.ceil(round(gap_s * 100, 6))
    values = {"gap_cs": gap_cs, "batch": BATCH, "stat_cap": STAT_CAP}
    return probe_shell(__name__, values, "dump", "again")


def sections(options: CollectOptions) -> list[SectionSpec]:
    """The first snapshot opens the host script and the second closes it, so the other
    probes' sections run during the gap instead of after it. Asked alone, the probe runs
    both in one section, as it did before there were two."""
    gap = options.snapshot_gap
    if options.probes == (PROBE_NAME,):
        both = shell() + shell_again(gap)
        return [SectionSpec(name=SECTION, shell=both, timeout_s=30 + gap, max_bytes=32 << 20)]
    return [
        SectionSpec(name=SECTION, shell=shell(), timeout_s=30, max_bytes=32 << 20, place="opening"),
        SectionSpec(
            name=AGAIN,
            shell=shell_again(gap),
            timeout_s=30 + gap,
            max_bytes=8 << 20,
            place="closing",
        ),
    ]


# --- facts ---------------------------------------------------------------------------------

PF_KTHREAD = 0x00200000
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"})
_SHELL_OPTIONS_WITH_ARGUMENT = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})


class ThreadState(BaseModel):
    """One thread of a multi-threaded process, from ``/proc/PID/task/TID/{stat,wchan,comm}``."""

    tid: int
    name: str = Field(description="Thread name (comm), redacted.")
    state: str = Field(description="State letter (R S D Z T t X I P), '?' when unreadable.")
    wchan: str | None = Field(default=None, description="Kernel function it waits in; None: not.")
    raw_line: int = Field(description="Line of its `thread` record in the section.")


class ProcessEntry(BaseModel):
    """One process as the first snapshot saw it, and what became of it in the second."""

    pid: int
    ppid: int = Field(description="0 when the parent is outside this PID namespace.")
    name: str = Field(description="comm from /proc/PID/stat (last ')' rule), redacted.")
    state: str = Field(description="R S D Z T t X I P, from /proc/PID/stat.")
    kernel_thread: bool = False
    threads: int = Field(description="num_threads from /proc/PID/stat.")
    start_ticks: int = Field(description="starttime: clock ticks after boot.")
    started_at: datetime | None = Field(default=None, description="UTC, from btime + ticks.")
    uid: int | None = Field(default=None, description="Real uid, from /proc/PID/status.")
    rss_bytes: int | None = None
    exit_status: int | None = Field(
        default=None, description="Raw wait status of a zombie (stat field 52), when readable."
    )
    wchan: str | None = Field(default=None, description="Kernel wait function; None: not waiting.")
    cgroup: str | None = Field(
        default=None, description="Memory cgroup path: v1 memory line, else the v2 '0::' line."
    )
    argv: list[str] = Field(default_factory=list, description="Command line, redacted per arg.")
    cmdline: str = Field(default="", description="argv joined by spaces, redacted.")
    cmdline_truncated: bool = False
    exe: str | None = Field(default=None, description="/proc/PID/exe target when readable.")
    exe_readable: bool | None = Field(default=None, description="None: not listed.")
    cwd: str | None = Field(default=None, description="/proc/PID/cwd target when readable.")
    cwd_readable: bool | None = None
    script: str | None = Field(
        default=None, description="For a shell: the script it runs (argv), redacted."
    )
    task_count: int | None = Field(default=None, description="Entries in /proc/PID/task.")
    thread_states: list[ThreadState] = Field(
        default_factory=list,
        description="Listed only for zombies, focus matches and processes with a D thread.",
    )
    collector: bool = Field(default=False, description="One of this collection's own processes.")
    second_state: str | None = Field(
        default=None,
        description="State in the second snapshot; None when gone or not taken.",
    )
    second_ppid: int | None = None
    raw_lines: dict[str, int] = Field(
        default_factory=dict,
        description="Where its files start in the section: stat, cmdline, wchan, second_stat.",
    )

    @property
    def is_zombie(self) -> bool:
        return self.state == "Z"

    @property
    def live_threads(self) -> list[ThreadState]:
        """Threads other than an exited leader."""
        return [t for t in self.thread_states if t.state not in ("Z", "X")]


class FocusMatch(BaseModel):
    pattern: str
    error: str | None = Field(default=None, description="Why the pattern could not be used.")
    live: list[int] = Field(default_factory=list, description="Matching live processes.")
    zombies: list[int] = Field(default_factory=list, description="Matching zombies.")
    exited: list[int] = Field(
        default_factory=list, description="Matched in the first snapshot, gone in the second."
    )


class ProcessTree(BaseModel):
    """The neighbourhood of one process: its ancestors up to PID 1 and its children."""

    subject: int
    why: list[str] = Field(description="focus, zombie.")
    ancestors: list[int] = Field(description="Parent first, up to PID 1 (or the namespace top).")
    children: list[int]


class ProcessesFacts(ProbeFacts):
    clock_ticks_per_s: int = 100
    page_size: int = 4096
    boot_time: datetime | None = None
    collector_pid: int | None = None
    client_pids: list[int] = Field(
        default_factory=list,
        description="The collector's own pids when the host is the machine it ran on.",
    )
    first_snapshot_uptime_s: float | None = None
    first_snapshot_line: int | None = Field(default=None, description="Its `snapshot 1` line.")
    first_snapshot_complete: bool = False
    second_snapshot_uptime_s: float | None = Field(
        default=None, description="None when the second snapshot did not complete."
    )
    second_snapshot_section: str = Field(
        default=SECTION,
        description="The section that holds the second snapshot: processes_again, or "
        "processes itself when the probe ran alone or the bundle is older than the split.",
    )
    processes: list[ProcessEntry] = Field(default_factory=list, description="By pid.")
    kernel_threads_left_out: int = 0
    pid1_is_known_init: bool | None = None
    focus: FocusMatch | None = None
    trees: list[ProcessTree] = Field(default_factory=list)

    @property
    def gap_s(self) -> float | None:
        if self.first_snapshot_uptime_s is None or self.second_snapshot_uptime_s is None:
            return None
        return round(self.second_snapshot_uptime_s - self.first_snapshot_uptime_s, 2)

    def by_pid(self, pid: int) -> ProcessEntry | None:
        index = bisect.bisect_left([p.pid for p in self.processes], pid)
        if index < len(self.processes) and self.processes[index].pid == pid:
            return self.processes[index]
        return None

    def ancestry(self, pid: int) -> list[ProcessEntry]:
        """The parent of ``pid``, its parent, and so on up to PID 1 or the namespace top."""
        table = {p.pid: p for p in self.processes}
        chain: list[ProcessEntry] = []
        seen = {pid}
        current = table.get(pid)
        while current is not None and current.ppid in table and current.ppid not in seen:
            current = table[current.ppid]
            seen.add(current.pid)
            chain.append(current)
        return chain

    def children(self, pid: int) -> list[ProcessEntry]:
        return [p for p in self.processes if p.ppid == pid and p.pid != pid]


# --- parse -------------------------------------------------------------------------------

_HEADER = re.compile(r"(?:^|\n)==> /proc/(\d{1,10})/(stat|status|cmdline|wchan|cgroup) <==\n")
_LINK = re.compile(r"^l\S*\s.*?\s/proc/(\d{1,10})/(exe|cwd)(?: -> (.*))?$")
_STATES = frozenset("RSDZTtXxKWPI")


@dataclass
class _Raw:
    """What one process's files said in the first snapshot, before it becomes an entry."""

    stat: str | None = None
    files: dict[str, str] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)


@dataclass
class _Stat:
    pid: int
    name: str
    state: str
    ppid: int
    flags: int
    threads: int
    start_ticks: int
    rss_pages: int | None
    exit_status: int | None


@dataclass
class _Reading:
    header: dict[str, str] = field(default_factory=dict)
    uptime: dict[int, float] = field(default_factory=dict)
    snapshot_lines: dict[int, int] = field(default_factory=dict)
    first: dict[int, _Raw] = field(default_factory=dict)
    second: dict[int, tuple[_Stat, int]] = field(default_factory=dict)
    tasks: dict[int, int] = field(default_factory=dict)
    threads: dict[int, list[ThreadState]] = field(default_factory=dict)
    links: dict[tuple[int, str], list[str | None]] = field(default_factory=dict)
    threads_started: bool = False
    ended: bool = False
    second_section: str = SECTION


def parse(captures: Captures, options: CollectOptions) -> ProcessesFacts:
    """Read the ``processes`` section.

    >>> from forensics.core.probe import Captured
    >>> sep = "==> .s <==\\nN1\\n"
    >>> text = (
    ...     "nonce N1\\nclock_ticks 100\\npage_size 4096\\nbtime 1764441600\\nself 77\\n"
    ...     "snapshot 1 8400.00\\n"
    ...     "==> /proc/1/stat <==\\n1 (tini) S 0 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 5"
    ...     " 0 100 0\\n\\n" + sep +
    ...     "\\n==> /proc/1/cmdline <==\\n/tini\\x00--\\x00run.sh\\x00\\n" + sep +
    ...     "\\n==> /proc/900/stat <==\\n900 (cu) zk) Z 1 900 1 0 -1 4227084 0 0 0 0 0 0 0 0 20"
    ...     " 0 1 0 840000 0 0 0\\n\\n" + sep +
    ...     "threads\\nlinks\\n" + sep + "snapshot 2 8402.00\\n"
    ...     "==> /proc/900/stat <==\\n900 (cu) zk) Z 1 900 1 0 -1 4227084 0 0 0 0 0 0 0 0 20"
    ...     " 0 1 0 840000 0 0 0\\n\\n" + sep + "end\\n"
    ... )
    >>> facts = parse({"processes": Captured.complete("processes", text)}, CollectOptions())
    >>> [(p.pid, p.name, p.state, p.ppid, p.second_state) for p in facts.processes]
    [(1, 'tini', 'S', 0, None), (900, 'cu) zk', 'Z', 1, 'Z')]
    >>> facts.processes[0].argv, facts.pid1_is_known_init, facts.gap_s
    (['/tini', '--', 'run.sh'], True, 2.0)
    >>> facts.processes[1].started_at.isoformat(), facts.trees[0].ancestors
    ('2025-11-29T21:00:00+00:00', [1])
    """
    captured, reason = open_section(captures, SECTION)
    if captured is None:
        return ProcessesFacts(unavailable=reason)
    reading = _Reading()
    if not _read(captured.text, reading):
        return ProcessesFacts(unavailable=reason or "section processes has no nonce line")
    again = captures.get(AGAIN)
    # Since the split the second snapshot is a section of its own; before it (and when the
    # probe runs alone) it follows the first in ``processes``.
    if 2 not in reading.snapshot_lines and again is not None:
        reading.second_section = AGAIN
        _read(again.text, reading, again=True)
    return _facts(reading, options)


def _read(text: str, reading: _Reading, again: bool = False) -> bool:
    """Read one section into ``reading``; False when it has no nonce line. The second
    snapshot's own section (``again``) may only hold the second snapshot."""
    first_line, _, _ = text.partition("\n")
    if not first_line.startswith("nonce ") or not first_line[6:].strip():
        return False
    delimiter = f"==> {SEPARATOR_FILE} <==\n{first_line[6:]}\n"
    newlines = [match.start() for match in re.finditer("\n", text)]
    snapshot = 0
    start = 0
    while start <= len(text):
        end = text.find(delimiter, start)
        closed = end >= 0
        chunk = text[start:] if not closed else text[start:end]
        snapshot = _read_chunk(reading, chunk, start, closed, snapshot, newlines, again)
        if not closed:
            break
        start = end + len(delimiter)
    return True


def _read_chunk(
    reading: _Reading,
    chunk: str,
    offset: int,
    closed: bool,
    snapshot: int,
    newlines: list[int],
    again: bool,
) -> int:
    """Read control lines, then at most one file; return the snapshot now being read."""
    header = _HEADER.search(chunk)
    control = chunk if header is None else chunk[: header.start()]
    snapshot = _read_control(reading, control, offset, snapshot, newlines, again)
    if header is None or not closed:
        return snapshot
    content = chunk[header.end() :]
    # head writes one newline before the separator's header; it is not part of the file.
    content = content[:-1] if content.endswith("\n") else content
    pid, kind = int(header.group(1)), header.group(2)
    line = _line_of(offset + header.end(), newlines)
    if snapshot == 1:
        raw = reading.first.setdefault(pid, _Raw())
        raw.lines[kind] = line
        if kind == "stat":
            raw.stat = content
        else:
            raw.files[kind] = content
    elif snapshot == 2 and kind == "stat":
        stat = parse_stat(content)
        if stat is not None and stat.pid == pid:
            reading.second[pid] = (stat, line)
    return snapshot


def _read_control(
    reading: _Reading,
    control: str,
    offset: int,
    snapshot: int,
    newlines: list[int],
    again: bool,
) -> int:
    in_links = False
    position = offset
    for line in control.split("\n"):
        here = position
        position += len(line) + 1
        if in_links:
            _read_link(reading, line)
            continue
        key, _, rest = line.partition(" ")
        if again and key not in ("snapshot", "end"):
            continue
        if key == "snapshot":
            number, _, uptime = rest.partition(" ")
            snapshot = int(number) if number in (("2",) if again else ("1", "2")) else 0
            value = parse_float(uptime)
            if snapshot and value is not None:
                reading.uptime[snapshot] = value
                reading.snapshot_lines[snapshot] = _line_of(here, newlines)
        elif key in ("nonce", "clock_ticks", "page_size", "btime", "self", "client"):
            reading.header.setdefault(key, rest.strip())
        elif key == "threads":
            reading.threads_started = True
        elif key == "tasks":
            _read_tasks(reading, rest)
        elif key == "thread":
            _read_thread(reading, rest, _line_of(here, newlines))
        elif key == "links":
            in_links = True
        elif key == "end" and snapshot == 2:
            reading.ended = True
    return snapshot


def _read_tasks(reading: _Reading, rest: str) -> None:
    words = rest.split()
    if len(words) == 2 and words[0].isdigit() and words[1].isdigit():
        reading.tasks[int(words[0])] = int(words[1])


def _read_thread(reading: _Reading, rest: str, line: int) -> None:
    words = rest.split(" ", 4)
    if len(words) < 4 or not (words[0].isdigit() and words[1].isdigit()):
        return
    pid, tid, state, wchan = int(words[0]), int(words[1]), words[2], words[3]
    reading.threads.setdefault(pid, []).append(
        ThreadState(
            tid=tid,
            name=redact(words[4] if len(words) > 4 else ""),
            state=state if len(state) == 1 and state in _STATES else "?",
            wchan=_wchan(wchan),
            raw_line=line,
        )
    )


def _read_link(reading: _Reading, line: str) -> None:
    match = _LINK.match(line)
    if match:
        key = (int(match.group(1)), match.group(2))
        reading.links.setdefault(key, []).append(match.group(3))


def parse_stat(text: str) -> _Stat | None:
    """One ``/proc/PID/stat`` line; comm runs from the first '(' to the LAST ')'.

    >>> s = parse_stat("7133 (evil) R 1 (x y) S 7129 7129 2799 0 -1 4194304 0 0 0 0 0 0 0 0"
    ...                " 20 0 2 0 840 0 12 0")
    >>> (s.pid, s.name, s.state, s.ppid, s.threads, s.start_ticks, s.rss_pages)
    (7133, 'evil) R 1 (x y', 'S', 7129, 2, 840, 12)
    >>> parse_stat("garbage") is None
    True
    """
    head, paren, _ = text.partition(" (")
    close = text.rfind(")")
    if not paren or close < len(head) + 2 or not head.strip().isdigit():
        return None
    fields = text[close + 1 :].split()
    if len(fields) < 20 or fields[0] not in _STATES:
        return None
    ppid, flags, threads, start = (parse_int(fields[i]) for i in (1, 6, 17, 19))
    if ppid is None or flags is None or threads is None or start is None:
        return None
    return _Stat(
        pid=int(head),
        name=text[len(head) + 2 : close],
        state=fields[0],
        ppid=ppid,
        flags=flags,
        threads=threads,
        start_ticks=start,
        rss_pages=parse_int(fields[21]) if len(fields) > 21 else None,
        exit_status=parse_int(fields[49]) if len(fields) > 49 else None,
    )


def _facts(reading: _Reading, options: CollectOptions) -> ProcessesFacts:
    ticks = _positive(reading.header.get("clock_ticks"), 100)
    page = _positive(reading.header.get("page_size"), 4096)
    boot = _boot_time(parse_int(reading.header.get("btime", "")))
    facts = ProcessesFacts(
        clock_ticks_per_s=ticks,
        page_size=page,
        boot_time=boot,
        collector_pid=parse_int(reading.header.get("self", "")),
        client_pids=[
            pid
            for word in reading.header.get("client", "").split()
            if (pid := parse_int(word)) is not None
        ],
        first_snapshot_uptime_s=reading.uptime.get(1),
        first_snapshot_line=reading.snapshot_lines.get(1),
        first_snapshot_complete=reading.threads_started,
        second_snapshot_uptime_s=reading.uptime.get(2) if reading.ended else None,
        second_snapshot_section=reading.second_section,
    )
    for pid, raw in sorted(reading.first.items()):
        entry = _entry(pid, raw, facts, reading)
        if entry is None:
            continue
        if entry.kernel_thread and entry.state not in ("D", "Z"):
            facts.kernel_threads_left_out += 1
            continue
        facts.processes.append(entry)
    _mark_collector(facts)
    pid1 = facts.by_pid(1)
    if pid1 is not None:
        facts.pid1_is_known_init = is_known_init(pid1)
    facts.focus = _match_focus(facts, options.focus, reading)
    _keep_threads_of_interest(facts, reading)
    facts.trees = _trees(facts)
    return facts


def _entry(pid: int, raw: _Raw, facts: ProcessesFacts, reading: _Reading) -> ProcessEntry | None:
    stat = parse_stat(raw.stat) if raw.stat is not None else None
    if stat is None or stat.pid != pid:
        return None
    argv, truncated = _argv(raw.files.get("cmdline", ""))
    second = reading.second.get(pid)
    same = second is not None and second[0].start_ticks == stat.start_ticks
    exe = _link(reading, pid, "exe")
    cwd = _link(reading, pid, "cwd")
    redacted = redact_argv(argv)
    entry = ProcessEntry(
        pid=pid,
        ppid=stat.ppid,
        name=redact(stat.name),
        state=stat.state,
        kernel_thread=bool(stat.flags & PF_KTHREAD),
        threads=stat.threads,
        start_ticks=stat.start_ticks,
        started_at=_started(facts, stat.start_ticks),
        uid=_uid(raw.files.get("status")),
        rss_bytes=stat.rss_pages * facts.page_size if stat.rss_pages is not None else None,
        exit_status=stat.exit_status if stat.state == "Z" else None,
        wchan=_wchan(raw.files.get("wchan", "")),
        cgroup=memory_cgroup(raw.files.get("cgroup")),
        argv=redacted,
        cmdline=redact(" ".join(redacted)),
        cmdline_truncated=truncated,
        exe=exe[1],
        exe_readable=exe[0],
        cwd=cwd[1],
        cwd_readable=cwd[0],
        script=script_of(stat.name, redacted),
        task_count=reading.tasks.get(pid),
        second_state=second[0].state if second is not None and same else None,
        second_ppid=second[0].ppid if second is not None and same else None,
        raw_lines=_lines(raw, second[1] if second is not None and same else None),
    )
    return entry


def _lines(raw: _Raw, second: int | None) -> dict[str, int]:
    lines = {k: v for k, v in raw.lines.items() if k in ("stat", "cmdline", "wchan")}
    if second is not None:
        lines["second_stat"] = second
    return lines


def _boot_time(btime: int | None) -> datetime | None:
    if not btime:
        return None
    try:
        return datetime.fromtimestamp(btime, UTC)
    except (OverflowError, ValueError, OSError):
        return None


def _started(facts: ProcessesFacts, ticks: int) -> datetime | None:
    if facts.boot_time is None:
        return None
    try:
        return facts.boot_time + timedelta(seconds=ticks / facts.clock_ticks_per_s)
    except OverflowError:
        return None


def _argv(content: str) -> tuple[list[str], bool]:
    truncated = len(content.encode("utf-8", "replace")) >= CMDLINE_CAP
    parts = content.split("\x00")
    if parts and parts[-1] == "":
        parts.pop()
    return parts, truncated


def _uid(status: str | None) -> int | None:
    if not status:
        return None
    for line in _complete_lines(status):
        key, _, value = line.partition(":")
        if key == "Uid":
            words = value.split()
            return parse_int(words[0]) if words else None
    return None


def memory_cgroup(text: str | None) -> str | None:
    """The memory cgroup path: the v1 ``memory`` controller line, else the v2 ``0::`` line.

    >>> memory_cgroup("12:pids:/a\\n4:memory:/docker/abc\\n0::/\\n")
    '/docker/abc'
    >>> memory_cgroup("0::/system.slice/cuzk.service\\n")
    '/system.slice/cuzk.service'
    """
    if not text:
        return None
    unified = None
    for line in _complete_lines(text):
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if "memory" in parts[1].split(","):
            return parts[2]
        if parts[0] == "0" and parts[1] == "":
            unified = parts[2]
    return unified


def _complete_lines(text: str) -> list[str]:
    """Lines of a file read with a byte cap: a last line without its newline may be cut."""
    lines = text.split("\n")
    return lines[:-1]


def _link(reading: _Reading, pid: int, kind: str) -> tuple[bool | None, str | None]:
    seen = reading.links.get((pid, kind))
    # Two lines for one link mean a target with a newline tried to forge one: trust neither.
    if not seen or len(seen) != 1:
        return None, None
    target = seen[0]
    return target is not None, redact(target) if target is not None else None


def script_of(name: str, argv: list[str]) -> str | None:
    """The script a shell runs, from its argv; None for ``-c`` and interactive shells.

    >>> script_of("bash", ["/bin/bash", "-e", "-o", "pipefail", "./benchmark.sh", "x"])
    './benchmark.sh'
    >>> script_of("sh", ["sh", "-c", "sleep 1"]), script_of("cuzk", ["cuzk", "run.sh"])
    (None, None)
    >>> script_of("busybox", ["busybox", "sh", "/opt/start.sh"])
    '/opt/start.sh'
    """
    if not argv:
        return None
    program = argv[0].rsplit("/", 1)[-1].lstrip("-")
    if name not in SHELLS and program not in SHELLS:
        return None
    words = argv[1:]
    if program == "busybox" and words and words[0] in ("sh", "ash", "bash"):
        words = words[1:]
    skip_next = False
    for word in words:
        if skip_next:
            skip_next = False
        elif word == "--":
            continue
        elif word in _SHELL_OPTIONS_WITH_ARGUMENT:
            skip_next = True
        elif word.startswith(("-", "+")):
            if "c" in word.lstrip("-+") and not word.startswith("--"):
                return None
        else:
            return word
    return None


def is_known_init(entry: ProcessEntry) -> bool:
    """PID 1 is a program made to be PID 1 (it reaps orphans), not an application."""
    program = entry.argv[0].rsplit("/", 1)[-1] if entry.argv else ""
    if entry.name == "busybox" or program == "busybox":
        return program.endswith("init") or entry.argv[1:2] == ["init"]
    return entry.name in KNOWN_INITS or program in KNOWN_INITS


def _mark_collector(facts: ProcessesFacts) -> None:
    """This collection's own shell, its descendants and its ancestors (not PID 1): they
    run on behalf of the tool and must not match ``--focus`` or count as the host's."""
    own = facts.collector_pid
    if own is None or facts.by_pid(own) is None:
        return
    mine = {own} | {p.pid for p in facts.ancestry(own) if p.pid != 1}
    mine |= {pid for pid in facts.client_pids if pid != 1}
    children: dict[int, list[int]] = {}
    for entry in facts.processes:
        children.setdefault(entry.ppid, []).append(entry.pid)
    stack = [own]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in mine:
                mine.add(child)
                stack.append(child)
    for entry in facts.processes:
        entry.collector = entry.pid in mine


def _match_focus(
    facts: ProcessesFacts, pattern: str | None, reading: _Reading
) -> FocusMatch | None:
    """Match the pattern as the host does: each name and command line as read, before
    redaction (``forensics/core/focus.py``)."""
    if pattern is None:
        return None
    match = FocusMatch(pattern=pattern)
    try:
        focus = Focus.compile(pattern)
    except FocusError as error:
        match.error = f"not a usable pattern: {error}"
        return match
    for entry in facts.processes:
        if entry.collector or entry.kernel_thread:
            continue
        raw = reading.first[entry.pid]
        stat = parse_stat(raw.stat or "")
        name = stat.name if stat is not None else entry.name
        if not focus.matches_process(name, raw.files.get("cmdline", "")):
            continue
        if entry.is_zombie:
            match.zombies.append(entry.pid)
        elif facts.second_snapshot_uptime_s is not None and entry.second_state is None:
            match.exited.append(entry.pid)
        else:
            match.live.append(entry.pid)
    return match


def _keep_threads_of_interest(facts: ProcessesFacts, reading: _Reading) -> None:
    focus = set(facts.focus.live + facts.focus.zombies) if facts.focus else set()
    for entry in facts.processes:
        threads = reading.threads.get(entry.pid, [])
        stuck = any(t.state == "D" for t in threads)
        if entry.is_zombie or entry.pid in focus or stuck:
            entry.thread_states = threads


def _trees(facts: ProcessesFacts) -> list[ProcessTree]:
    wanted: dict[int, list[str]] = {}
    if facts.focus:
        matched = set(facts.focus.live + facts.focus.zombies)
        topmost = [pid for pid in sorted(matched) if _parent_pid(facts, pid) not in matched]
        for pid in topmost[:MAX_FOCUS_TREES]:
            wanted.setdefault(pid, []).append("focus")
    zombies = [p for p in facts.processes if p.is_zombie]
    zombies.sort(key=lambda p: (p.threads <= 1, p.pid))
    for zombie in zombies:
        if len(wanted) >= MAX_TREES and zombie.pid not in wanted:
            break
        wanted.setdefault(zombie.pid, []).append("zombie")
    return [
        ProcessTree(
            subject=pid,
            why=why,
            ancestors=[p.pid for p in facts.ancestry(pid)],
            children=[p.pid for p in facts.children(pid)],
        )
        for pid, why in wanted.items()
    ]


def _parent_pid(facts: ProcessesFacts, pid: int) -> int | None:
    entry = facts.by_pid(pid)
    return entry.ppid if entry else None


def _wchan(text: str) -> str | None:
    value = text.strip()
    return None if value in ("", "0", "-") else value


def _line_of(offset: int, newlines: list[int]) -> int:
    """1-based line of ``offset``, counting only newlines, as ``sed -n Np`` does."""
    return bisect.bisect_left(newlines, offset) + 1


def _positive(text: str | None, default: int) -> int:
    value = parse_int(text or "")
    return value if value is not None and 0 < value < 1 << 30 else default


PROBE = Probe(
    name=PROBE_NAME,
    run_order=70,
    report_order=10,
    sections=sections,
    facts_model=ProcessesFacts,
    parse=parse,
    rules_module="forensics.probes.processes_rules",
)
