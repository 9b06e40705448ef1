"""Judge the process table: who is a zombie and why, whether PID 1 reaps, who is stuck in
the kernel, and whether the focus process is still alive.

The three kinds of zombie are told apart because each has a different cure:

- ``Z`` with one thread, parent alive and not waiting: ``process.parent_not_reaping``;
- ``Z`` whose parent is PID 1 that is not an init: ``init.not_reaping``;
- ``Zl``: the leader exited while other threads live on: ``process.zombie_threads_alive``.
  It has not finished dying, holds its memory, and nobody can reap it yet.
"""

from __future__ import annotations

from forensics.core.evidence import cite
from forensics.core.models import EvidenceRef, Finding, Severity
from forensics.core.probe import RuleContext
from forensics.probes.processes import ProcessEntry, ProcessesFacts, ThreadState

SECTION = "processes"
MAX_ZOMBIE_FINDINGS = 10
MAX_LISTED = 8

SIGNALS = {
    1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT",
    7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2",
    13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM",
}  # fmt: skip

# What a process blocked in these kernel functions is doing, in words.
WCHAN_MEANINGS = {
    "do_wait": "waiting for a child to exit, but not this one (it waits for a specific "
    "other pid, or only for its current foreground job)",
    "kernel_wait4": "waiting for a specific child to exit, not this one",
    "pipe_read": "blocked reading a pipe; a shell reading a command substitution `$(...)` or a "
    "`| while read` loop reaps its children only when that read ends",
    "anon_pipe_read": "blocked reading a pipe; a shell reading a command substitution `$(...)` "
    "or a `| while read` loop reaps its children only when that read ends",
    "pipe_wait": "blocked on a pipe",
    "pipe_write": "blocked writing to a full pipe whose reader is not reading",
    "hrtimer_nanosleep": "a sleep() call",
    "do_nanosleep": "a sleep() call",
    "do_sys_poll": "waiting for I/O in an event loop that does not call wait() on SIGCHLD",
    "do_select": "waiting for I/O in an event loop that does not call wait() on SIGCHLD",
    "ep_poll": "waiting for I/O in an event loop that does not call wait() on SIGCHLD",
    "poll_schedule_timeout": "waiting for I/O in an event loop that does not call wait() on "
    "SIGCHLD",
    "do_epoll_wait": "waiting for I/O in an event loop that does not call wait() on SIGCHLD",
    "futex_wait_queue": "waiting on a lock or condition variable (futex), possibly deadlocked",
    "futex_wait_queue_me": "waiting on a lock or condition variable (futex), possibly deadlocked",
    "futex_do_wait": "waiting on a lock or condition variable (futex), possibly deadlocked",
    "sigsuspend": "waiting for a signal",
    "do_sigtimedwait": "waiting for a signal",
    "n_tty_read": "waiting for terminal input",
    "wait_woken": "waiting on a socket or terminal",
    "unix_stream_read_generic": "waiting on a socket",
    "inet_csk_accept": "waiting for a network connection",
    "do_signal_stop": "stopped by a signal (SIGSTOP, Ctrl-Z)",
    "ptrace_stop": "stopped under a debugger or tracer",
}
STATE_WORDS = {
    "R": "running",
    "S": "sleeping",
    "D": "blocked in the kernel (D)",
    "T": "stopped",
    "t": "stopped by a tracer",
    "Z": "a zombie",
    "X": "dead",
    "I": "idle",
}


def rules(facts: ProcessesFacts, context: RuleContext) -> list[Finding]:
    if facts.unavailable:
        return []
    findings = _zombies(facts)
    findings += _init_not_reaping(facts)
    findings += _uninterruptible(facts)
    findings += _focus_not_running(facts)
    return findings


# --- zombies -----------------------------------------------------------------------------


def _zombies(facts: ProcessesFacts) -> list[Finding]:
    focus = set(facts.focus.zombies) if facts.focus else set()
    zombies = [p for p in facts.processes if p.is_zombie and not p.collector]
    zombies.sort(key=lambda p: (p.pid not in focus, _persisted(facts, p) is not True, p.pid))
    findings: list[Finding] = []
    plain = 0
    left_over: list[ProcessEntry] = []
    for zombie in zombies:
        if _threads_alive(zombie) > 0:
            findings.append(_threads_alive_finding(facts, zombie, zombie.pid in focus))
            continue
        if plain >= MAX_ZOMBIE_FINDINGS:
            left_over.append(zombie)
            continue
        plain += 1
        findings.append(_zombie_finding(facts, zombie))
        parent = facts.by_pid(zombie.ppid)
        if (
            parent is not None
            and parent.pid != 1
            and _persisted(facts, zombie)
            and _alive_in_second(zombie, parent)
        ):
            findings.append(_parent_not_reaping(facts, zombie, parent))
    if left_over:
        findings.append(_more_zombies(facts, left_over))
    return findings


def _zombie_finding(facts: ProcessesFacts, zombie: ProcessEntry) -> Finding:
    parent = facts.by_pid(zombie.ppid)
    persisted = _persisted(facts, zombie)
    if persisted is True:
        over_time = (
            f"It was still a zombie in a second snapshot {facts.gap_s} s later, so nobody "
            "is reaping it."
        )
    elif persisted is False:
        over_time = (
            f"It was gone from a second snapshot {facts.gap_s} s later: it was being reaped "
            "while we looked, which is normal."
        )
    else:
        over_time = "No second snapshot completed, so whether it is being reaped is unknown."
    ended = exit_words(zombie.exit_status)
    started = _when(zombie)
    explanation = (
        f"Process {_who(zombie)} has exited and is a zombie (state Z in /proc/{zombie.pid}/stat, "
        f"1 thread){started}. {ended[0].upper() + ended[1:]}. A zombie holds no memory: it "
        "keeps only its pid and exit status until its parent calls wait(). "
        f"Its parent is {_parent_words(zombie, parent)}. {over_time}"
    )
    return Finding(
        id="process.zombie",
        severity=Severity.info if persisted is False else Severity.warning,
        title=f"Zombie process {_who(zombie)}, parent {_who_pid(facts, zombie.ppid)}"
        + (" (reaped during collection)" if persisted is False else ""),
        explanation=explanation,
        next_steps=[
            f"See what the parent is doing: cat /proc/{zombie.ppid}/wchan; "
            f"cat /proc/{zombie.ppid}/stack (as root); ls -l /proc/{zombie.ppid}/fd",
            "A zombie cannot be killed (it is already dead). It goes away when its parent "
            "calls wait(), or when the parent exits and PID 1, if it is a real init, reaps it.",
        ],
        subject={
            "pid": zombie.pid,
            "name": zombie.name,
            "ppid": zombie.ppid,
            "parent_name": parent.name if parent else None,
            "parent_state": parent.state if parent else None,
            "parent_wchan": parent.wchan if parent else None,
            "started_at": zombie.started_at.isoformat() if zombie.started_at else None,
            "persisted": persisted,
            "exit_status": zombie.exit_status,
        },
        evidence=_stat_refs(facts, zombie)
        + (_stat_refs(facts, parent, second=False) if parent else []),
    )


def _parent_not_reaping(
    facts: ProcessesFacts, zombie: ProcessEntry, parent: ProcessEntry
) -> Finding:
    doing = _doing(parent)
    script = ""
    steps = [
        f"See what the parent is doing: cat /proc/{parent.pid}/wchan; "
        f"cat /proc/{parent.pid}/stack (as root); ls -l /proc/{parent.pid}/fd",
    ]
    if parent.script:
        script = (
            f" {parent.pid} is a shell running the script {parent.script}: a script that starts "
            "a program in the background (`cmd &`) or in a pipeline and then blocks elsewhere "
            "does not reap it until it waits; the script.* findings read that script."
        )
        where = f" (relative to its cwd {parent.cwd})" if parent.cwd else ""
        steps.append(f"Read the script: {parent.script}{where}.")
    elif parent.name in ("sh", "bash", "dash", "zsh", "ash", "busybox") and parent.cmdline:
        script = f" {parent.pid} is a shell running an inline command: {parent.cmdline[:200]}."
    steps.append(
        "To clear the zombie, make the parent wait() for it, or end the parent: its zombies "
        "are then re-parented to PID 1, which reaps them if it is a real init."
    )
    return Finding(
        id="process.parent_not_reaping",
        severity=Severity.warning,
        title=f"{_who(parent)} is alive but does not reap its zombie child {_who(zombie)}",
        explanation=(
            f"The zombie {_who(zombie)} was still there in a second snapshot {facts.gap_s} s "
            f"later, and its parent {_who(parent)} stayed alive. Only the parent can reap it, "
            f"by calling wait(), and it has not. The parent is {doing}.{script}"
        ),
        next_steps=steps,
        subject={
            "pid": zombie.pid,
            "name": zombie.name,
            "ppid": parent.pid,
            "parent_name": parent.name,
            "parent_state": parent.state,
            "parent_wchan": parent.wchan,
            "parent_script": parent.script,
        },
        evidence=_stat_refs(facts, zombie) + _stat_refs(facts, parent) + _wchan_refs(parent),
    )


def _threads_alive_finding(facts: ProcessesFacts, zombie: ProcessEntry, focus: bool) -> Finding:
    live = zombie.live_threads
    count = _threads_alive(zombie)
    stuck = [t for t in live if t.state == "D"]
    parent = facts.by_pid(zombie.ppid)
    listed = "; ".join(_thread_words(t) for t in live[:MAX_LISTED])
    if len(live) > MAX_LISTED:
        listed += f"; and {len(live) - MAX_LISTED} more"
    if not live:
        listed = "their states were not read"
    in_kernel = (
        f" {len(stuck)} of them are in D: blocked inside the kernel (for a GPU process, often "
        "the driver tearing down its memory) and unkillable until that call returns."
        if stuck
        else ""
    )
    stuck_words = f", {len(stuck)} stuck in the kernel" if stuck else ""
    return Finding(
        id="process.zombie_threads_alive",
        severity=Severity.critical if focus else Severity.warning,
        title=f"{_who(zombie)} is a zombie with {count} live thread{_s(count)}{stuck_words}: "
        "it has not finished dying",
        explanation=(
            f"The main thread of {_who(zombie)} has exited, but {count} other "
            f"thread{_s(count)} still run{'s' if count == 1 else ''} (ps shows `Zl`): {listed}."
            f"{in_kernel} Until the last thread exits, the process has not finished dying: its "
            "memory, pinned host memory and GPU memory may still be held, and its parent, "
            f"{_parent_words(zombie, parent)}, cannot reap it yet: this is not the parent's "
            f"fault.{_when(zombie, sentence=True)}"
        ),
        next_steps=[
            "Measure the memory instead of guessing: `forensics watch` on this host, or on the "
            f'host: watch -n 5 \'grep -E "^(Threads|VmRSS)" /proc/{zombie.pid}/status; '
            "grep MemAvailable /proc/meminfo'",
            f"Look at the threads: grep -H State /proc/{zombie.pid}/task/*/status; "
            f"cat /proc/{zombie.pid}/task/*/wchan; as root: cat /proc/{zombie.pid}/task/*/stack",
            "Do not start a replacement yet: it may not get the GPU or pinned memory that this "
            "process still holds.",
        ],
        subject={
            "pid": zombie.pid,
            "name": zombie.name,
            "ppid": zombie.ppid,
            "parent_name": parent.name if parent else None,
            "live_threads": count,
            "thread_states": _state_counts(live),
            "focus": focus,
        },
        evidence=_stat_refs(facts, zombie) + _thread_refs(zombie.pid, live),
    )


def _more_zombies(facts: ProcessesFacts, zombies: list[ProcessEntry]) -> Finding:
    listed = ", ".join(f"{_who(z)} parent {z.ppid}" for z in zombies[:MAX_LISTED])
    return Finding(
        id="process.zombie",
        severity=Severity.warning,
        title=f"{len(zombies)} more zombie processes",
        explanation=(
            f"Besides the zombies reported one by one, {len(zombies)} more were found: "
            f"{listed}{' ...' if len(zombies) > MAX_LISTED else ''}."
        ),
        next_steps=["List them all: grep -s '^State:.Z' /proc/[0-9]*/status"],
        subject={"pids": [z.pid for z in zombies]},
        evidence=[ref for z in zombies[:3] for ref in _stat_refs(facts, z, second=False)],
    )


# --- PID 1 -------------------------------------------------------------------------------


def _init_not_reaping(facts: ProcessesFacts) -> list[Finding]:
    init = facts.by_pid(1)
    if init is None:
        return []
    orphans = [
        p
        for p in facts.processes
        if p.is_zombie and p.ppid == 1 and p.pid != 1 and _threads_alive(p) == 0
    ]
    persisted = [p for p in orphans if _persisted(facts, p)]
    seen_once = facts.second_snapshot_uptime_s is None
    if not persisted and not (seen_once and orphans and not facts.pid1_is_known_init):
        return []
    zombies = persisted or orphans
    listed = ", ".join(_who(z) for z in zombies[:MAX_LISTED])
    if len(zombies) > MAX_LISTED:
        listed += f" and {len(zombies) - MAX_LISTED} more"
    over_time = (
        f"were still there in a second snapshot {facts.gap_s} s later"
        if persisted
        else "were seen (no second snapshot completed, so it is not certain they stay)"
    )
    n = len(zombies)
    command = init.cmdline or init.name
    if facts.pid1_is_known_init:
        title = f"PID 1 ({init.name}) has not reaped {n} zombie{_s(n)} whose parent it is"
        why = (
            f"PID 1 is {init.name}, an init that normally reaps every orphan, yet {n} "
            f"zombie{_s(n)} with parent 1 {over_time}: {listed}. PID 1 is "
            f"{_doing(init)}; it may be stuck, or busy. Collect again: if they stay, PID 1 "
            "is not doing its job."
        )
    else:
        title = f"PID 1 ({init.name}) is not an init and does not reap orphans: {n} zombie{_s(n)}"
        why = (
            f"PID 1 here is `{command[:200]}`, which is not an init (tini, dumb-init, "
            "docker-init, catatonit, s6-svscan, runit, systemd). When a process's parent exits, "
            "the kernel re-parents it to PID 1, and only PID 1 can then reap it. "
            f"{n} zombie{_s(n)} with parent 1 {over_time}: {listed}. Each keeps a pid until the "
            "container restarts; enough of them make fork() fail."
        )
    return [
        Finding(
            id="init.not_reaping",
            severity=Severity.warning,
            title=title,
            explanation=why,
            next_steps=[
                "Run the container with an init: `docker run --init ...`, or make tini the "
                'entrypoint (ENTRYPOINT ["tini", "--", ...]); on Kubernetes, '
                "shareProcessNamespace: true makes the pause container PID 1, and it reaps.",
                "Killing the zombies does nothing (they are already dead); restarting the "
                "container clears them. List them: grep -s '^State:.Z' /proc/[0-9]*/status",
            ],
            subject={
                "pid1_name": init.name,
                "pid1_known_init": facts.pid1_is_known_init,
                "zombies": [z.pid for z in zombies],
                "persisted": bool(persisted),
            },
            evidence=_stat_refs(facts, init, second=False)
            + [ref for z in zombies[:3] for ref in _stat_refs(facts, z)],
        )
    ]


# --- D state -----------------------------------------------------------------------------


def _uninterruptible(facts: ProcessesFacts) -> list[Finding]:
    stuck = [
        p for p in facts.processes if p.state == "D" and p.second_state == "D" and not p.collector
    ]
    if not stuck:
        return []
    n = len(stuck)
    listed = "; ".join(
        f"{_who(p)} in {p.wchan or 'an unknown kernel function'}" for p in stuck[:MAX_LISTED]
    )
    gpu = any(_is_gpu_driver(p.wchan) for p in stuck)
    return [
        Finding(
            id="process.uninterruptible",
            severity=Severity.warning,
            title=f"{n} process{'es' if n != 1 else ''} stuck in uninterruptible sleep (D) for "
            f"at least {facts.gap_s} s",
            explanation=(
                "A process in state D is blocked inside the kernel and cannot be interrupted "
                "or killed, not even by SIGKILL, until the kernel call returns. These were in "
                f"D in both snapshots {facts.gap_s} s apart: {listed}. Short D states are "
                "normal during disk I/O; long ones point at slow or failed storage, a network "
                "filesystem, or a driver"
                + (" (here the wchan names the NVIDIA driver)." if gpu else ".")
            ),
            next_steps=[
                f"See the kernel stack (as root): cat /proc/{stuck[0].pid}/stack",
                "Look for hung-task and driver messages: dmesg | grep -E 'blocked for more "
                "than|Xid|NVRM'",
                "If the GPU driver is involved, nvidia-smi may hang too: run it as "
                "`timeout 20 nvidia-smi`.",
            ],
            subject={"pids": [p.pid for p in stuck], "wchans": [p.wchan for p in stuck]},
            evidence=[ref for p in stuck[:3] for ref in _stat_refs(facts, p) + _wchan_refs(p)],
        )
    ]


def _is_gpu_driver(wchan: str | None) -> bool:
    return bool(wchan) and str(wchan).startswith(("nv", "os_", "uvm", "_nv"))


# --- focus -------------------------------------------------------------------------------


def _focus_not_running(facts: ProcessesFacts) -> list[Finding]:
    focus = facts.focus
    if focus is None or focus.error or focus.live or not facts.first_snapshot_complete:
        return []
    zombies = [p for p in (facts.by_pid(pid) for pid in focus.zombies) if p is not None]
    exited = [p for p in (facts.by_pid(pid) for pid in focus.exited) if p is not None]
    if zombies:
        first = zombies[0]
        alive = _threads_alive(first)
        threads = f" with {alive} live thread{_s(alive)}" if alive else ""
        what = (
            f"A zombie matches: {_who(first)} is a zombie{threads}; "
            f"{exit_words(first.exit_status)}."
        )
        title_tail = f": {_who(first)} is a zombie"
    elif exited:
        what = (
            f"{_who(exited[0])} matched in the first snapshot and was gone {facts.gap_s} s "
            "later: it exited during the collection."
        )
        title_tail = f": {_who(exited[0])} exited during collection"
    else:
        what = (
            f"No process, live or zombie, matches among the {len(facts.processes)} read "
            "(this collection's own processes are left out): it exited and was reaped, never "
            "started, or the pattern is wrong."
        )
        title_tail = ""
    return [
        Finding(
            id="focus.not_running",
            severity=Severity.critical,
            title=f"No live process matches --focus {focus.pattern!r}{title_tail}",
            explanation=(
                f"{what} The pattern is a regular expression searched in each process's name "
                "and in its command line joined by spaces."
            ),
            next_steps=[
                "Find how it ended: the oom.* and kernel-log findings, its log files, and its "
                "parent (the process tree section).",
                "Check the pattern by hand: ps -eo pid,stat,lstart,args | grep -E "
                f"{_quote(focus.pattern)}",
            ],
            subject={
                "pattern": focus.pattern,
                "zombies": focus.zombies,
                "exited": focus.exited,
            },
            evidence=[ref for p in (zombies + exited)[:3] for ref in _stat_refs(facts, p)]
            or _snapshot_refs(facts),
        )
    ]


# --- words and evidence ------------------------------------------------------------------


def exit_words(status: int | None) -> str:
    """What a raw wait status says about how a process ended.

    >>> exit_words(1792), exit_words(9)
    ('it exited with code 7', 'it was killed by signal 9 (SIGKILL)')
    >>> exit_words(0x86)
    'it was killed by signal 6 (SIGABRT) and dumped core'
    """
    if status is None:
        return "its exit status could not be read"
    signal = status & 0x7F
    if signal == 0:
        code = (status >> 8) & 0xFF
        if code == 0:
            return "it exited with code 0 (or its exit status is hidden from this user)"
        return f"it exited with code {code}"
    core = " and dumped core" if status & 0x80 else ""
    return f"it was killed by signal {signal} ({SIGNALS.get(signal, 'unknown')}){core}"


def _persisted(facts: ProcessesFacts, entry: ProcessEntry) -> bool | None:
    if facts.second_snapshot_uptime_s is None:
        return None
    return entry.second_state == entry.state


def _alive_in_second(zombie: ProcessEntry, parent: ProcessEntry) -> bool:
    return (
        parent.second_state is not None
        and parent.second_state not in ("Z", "X")
        and zombie.second_ppid == parent.pid
    )


def _threads_alive(zombie: ProcessEntry) -> int:
    if zombie.thread_states:
        return len(zombie.live_threads)
    return max(0, zombie.threads - 1)


def _doing(entry: ProcessEntry) -> str:
    state = STATE_WORDS.get(entry.state, f"in state {entry.state}")
    if entry.wchan:
        # The kernel may print a compiler-made variant: poll_schedule_timeout.constprop.0
        meaning = WCHAN_MEANINGS.get(entry.wchan.split(".", 1)[0])
        where = f"waiting in {entry.wchan}" + (f": {meaning}" if meaning else "")
        return f"{state}, {where}"
    return state


def _parent_words(zombie: ProcessEntry, parent: ProcessEntry | None) -> str:
    if parent is None:
        return f"{zombie.ppid} (outside this PID namespace or gone)"
    return f"{_who(parent)}, {_doing(parent)}"


def _who(entry: ProcessEntry) -> str:
    """Name and pid on one line: a newline in a name would split a title in two."""
    name = entry.name.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")
    return f"{name} (pid {entry.pid})"


def _who_pid(facts: ProcessesFacts, pid: int) -> str:
    entry = facts.by_pid(pid)
    return _who(entry) if entry else f"pid {pid}"


def _when(entry: ProcessEntry, sentence: bool = False) -> str:
    if entry.started_at is None:
        return ""
    moment = entry.started_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    return f" It started at {moment}." if sentence else f", started at {moment}"


def _thread_words(thread: ThreadState) -> str:
    where = f" in {thread.wchan}" if thread.wchan else ""
    return f"thread {thread.tid} ({thread.name}) {thread.state}{where}"


def _state_counts(threads: list[ThreadState]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for thread in threads:
        counts[thread.state] = counts.get(thread.state, 0) + 1
    return counts


def _s(count: int) -> str:
    return "" if count == 1 else "s"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def _stat_refs(
    facts: ProcessesFacts, entry: ProcessEntry, second: bool = True
) -> list[EvidenceRef]:
    """The stat line(s) of ``entry``: its first 4 fields are verbatim (comm redacted)."""
    refs = []
    span = entry.name.count("\n")
    line = entry.raw_lines.get("stat")
    if line:
        refs.append(
            cite(
                SECTION,
                line,
                f"{entry.pid} ({entry.name}) {entry.state} {entry.ppid} ...",
                last_line=line + span,
            )
        )
    line = entry.raw_lines.get("second_stat")
    if second and line and entry.second_state is not None:
        refs.append(
            cite(
                facts.second_snapshot_section,
                line,
                f"{entry.pid} ({entry.name}) {entry.second_state} "
                f"{entry.second_ppid} ... (second snapshot)",
                last_line=line + span,
            )
        )
    return refs


def _snapshot_refs(facts: ProcessesFacts) -> list[EvidenceRef]:
    """Where the table that holds no match begins."""
    line = facts.first_snapshot_line
    if not line or facts.first_snapshot_uptime_s is None:
        return []
    return [cite(SECTION, line, f"snapshot 1 {facts.first_snapshot_uptime_s:.2f}")]


def _wchan_refs(entry: ProcessEntry) -> list[EvidenceRef]:
    line = entry.raw_lines.get("wchan")
    if not line:
        return []
    return [cite(SECTION, line, entry.wchan or "0")]


def _thread_refs(pid: int, threads: list[ThreadState]) -> list[EvidenceRef]:
    shown = threads[:MAX_LISTED]
    if not shown:
        return []
    return [
        cite(
            SECTION,
            min(t.raw_line for t in shown),
            "\n".join(f"thread {pid} {t.tid} {t.state} {t.wchan or '-'} {t.name}" for t in shown),
            last_line=max(t.raw_line for t in shown),
        )
    ]
