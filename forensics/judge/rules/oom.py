"""Was it OOM-killed? Confirmed, ruled out, or inconclusive, and exactly why.

- ``oom.killed`` (critical), one per victim in the kernel log. With ``--focus``, victims
  that do not match are a warning: they are context, not the answer. A victim matches by
  the name the kernel logged; or, outside containers, by being a focus process of the
  process table that has ended (a zombie, or gone by the second snapshot): same PID,
  killed after that process started; or by a name cut to 15 characters that starts the
  program name of a focus process, which the pattern matches (another run of it).
- ``oom.ruled_out`` (info) only when all of this holds: the kernel log was read whole, it
  reaches back to boot, it holds no OOM kill of the process in question (without a focus:
  none at all), and the OOM counters could be read and count no kill the log does not show.
  When the process table knows when the focus processes started, a log that reaches back
  to the earliest of those starts is enough, and counted kills missing from it are older
  than its first line, hence older than the process: the verdict then says "since it
  started", not "since boot".
- ``oom.inconclusive`` (warning) otherwise, each reason in words with the way to get the
  missing evidence.

Kills are counted from ``Killed process`` lines (never rate-limited). Every kill the kernel
makes also increments ``/proc/vmstat oom_kill`` and the victim's cgroup counter, so a
counter above the log's count means kills whose victims the log does not show.
"""

from __future__ import annotations

from dataclasses import dataclass

from forensics.core.facts import CrossRule, Facts
from forensics.core.focus import Focus, FocusError
from forensics.core.models import EvidenceRef, Finding, Severity
from forensics.core.probe import RuleContext
from forensics.kernel.oom_report import OomKill
from forensics.probes.cgroup import CgroupFacts
from forensics.probes.kernel_log import KernelLogFacts
from forensics.probes.processes import ProcessEntry, ProcessesFacts
from forensics.probes.system import SystemFacts

VICTIM_FINDINGS_MAX = 20
# Kill and start times are both boot time plus a kernel clock; a syslog stamp has whole
# seconds. A PID reused within this slack of a kill would be mistaken for the victim.
START_SLACK_S = 1.0
# The kernel keeps 15 characters of a process name (TASK_COMM_LEN 16, with its NUL).
COMM_CHARS = 15


@dataclass(frozen=True)
class _Counter:
    """One OOM kill counter the host showed us."""

    label: str
    value: int
    evidence: EvidenceRef | None


@dataclass(frozen=True)
class _Reason:
    code: str
    words: str
    steps: tuple[str, ...]
    evidence: tuple[EvidenceRef, ...] = ()


@dataclass(frozen=True)
class _Match:
    """Why a victim is the process in question: ``name`` (the pattern matches the name the
    kernel logged), ``pid`` (it is a focus process of the process table that has ended:
    same PID, killed after it started), ``program`` (the kernel cut the name to 15
    characters; a focus process runs a program whose name starts with them and matches the
    pattern: the same program, most likely another run of it)."""

    how: str
    process: ProcessEntry | None = None


@dataclass(frozen=True)
class _Focus:
    """The process in question: the --focus pattern, and what the process table knows."""

    pattern: Focus | None
    processes: tuple[ProcessEntry, ...] = ()
    ended: frozenset[int] = frozenset()
    pids_comparable: bool = False

    def match(self, kill: OomKill) -> _Match | None:
        if self.pattern is None:
            return _Match("name")
        same = self._same_process(kill)
        if same is not None:
            return _Match("pid", same)
        if self.pattern.search(kill.name):
            return _Match("name")
        if len(kill.name) != COMM_CHARS:
            return None
        for process in self.processes:
            program = process.argv[0].rsplit("/", 1)[-1] if process.argv else ""
            cut = process.name == kill.name and program.startswith(kill.name)
            if cut and self.pattern.search(program):
                return _Match("program", process)
        return None

    def _same_process(self, kill: OomKill) -> ProcessEntry | None:
        """Only a process that has ended (a zombie, or gone by the second snapshot) can be a
        victim; a PID reused after the kill started later than it."""
        if not self.pids_comparable or kill.previous_boot or kill.time is None:
            return None
        process = next((p for p in self.processes if p.pid == kill.pid), None)
        if process is None or process.pid not in self.ended or process.started_at is None:
            return None
        after_start = (kill.time - process.started_at).total_seconds() >= -START_SLACK_S
        return process if after_start else None

    @property
    def earliest_start(self) -> ProcessEntry | None:
        """The focus process that started first, when every one's start is known."""
        if not self.processes or any(p.started_at is None for p in self.processes):
            return None
        return min(self.processes, key=lambda p: (p.started_at, p.pid))


def oom_verdict(facts: Facts, context: RuleContext) -> list[Finding]:
    log = facts.of(KernelLogFacts)
    if log is None:
        return []
    focus = _focus(facts, context.options.focus)
    in_question = [k for k in log.oom_kills if focus.match(k)]
    others = [k for k in log.oom_kills if not focus.match(k)]
    findings = _victims(log, facts, focus, in_question, others)
    if any(not kill.previous_boot for kill in in_question):
        return findings
    counters = _counters(facts.of(CgroupFacts), log)
    since = _reach_to_start(log, focus)
    reasons = _reasons(facts, log, counters, since)
    if reasons:
        findings.append(_inconclusive(log, context.options.focus, counters, reasons))
    else:
        findings.append(_ruled_out(log, context.options.focus, counters, others, since))
    return findings


def _focus(facts: Facts, focus: str | None) -> _Focus:
    pattern = _focus_pattern(focus)
    table = facts.of(ProcessesFacts)
    if pattern is None or table is None or table.focus is None or table.focus.error:
        return _Focus(pattern)
    ended = table.focus.zombies + table.focus.exited
    matched = sorted(table.focus.live + ended)
    processes = tuple(p for pid in matched if (p := table.by_pid(pid)) is not None)
    # Inside a container the table's PIDs are its namespace's; the kernel logs host PIDs.
    container = _container(facts)
    return _Focus(pattern, processes, frozenset(ended), pids_comparable=container is None)


def _focus_pattern(focus: str | None) -> Focus | None:
    if not focus:
        return None
    try:
        return Focus.compile(focus)
    except FocusError:
        # A bundle written before the pattern was checked as grep -E reads it: the
        # processes probe says so; here the pattern is the name itself.
        return Focus.literal(focus)


def _reach_to_start(log: KernelLogFacts, focus: _Focus) -> ProcessEntry | None:
    """The focus process whose start the log reaches back to, when it does not reach boot."""
    first = focus.earliest_start
    if log.reaches_boot is not False or first is None or first.started_at is None:
        return None
    if log.earliest_time is None or log.earliest_time > first.started_at:
        return None
    return first


def _victims(
    log: KernelLogFacts,
    facts: Facts,
    focus: _Focus,
    in_question: list[OomKill],
    others: list[OomKill],
) -> list[Finding]:
    # This boot before earlier ones, newest first: when the list is capped, the kills that
    # remain one by one are the ones most likely asked about.
    def recent_first(kill: OomKill) -> tuple[bool, float]:
        return kill.previous_boot, -(kill.monotonic_s or 0.0)

    ordered = sorted(in_question, key=recent_first) + sorted(others, key=recent_first)
    findings = [
        _killed(log, facts, kill, focus.match(kill), focused=focus.pattern is not None)
        for kill in ordered[:VICTIM_FINDINGS_MAX]
    ]
    rest = ordered[VICTIM_FINDINGS_MAX:]
    if rest:
        critical = any(kill in in_question and not kill.previous_boot for kill in rest)
        findings.append(_more_victims(rest, Severity.critical if critical else Severity.warning))
    return findings


def _killed(
    log: KernelLogFacts, facts: Facts, kill: OomKill, match: _Match | None, focused: bool
) -> Finding:
    in_question = match is not None
    when = _when(kill)
    why = _scope_words(kill)
    counters = [
        c
        for c in log.memcg_counters
        if c.oom_kill is not None and c.cgroup in (kill.task_memcg, kill.oom_memcg)
    ]
    sentences = [
        f"The kernel's OOM killer sent SIGKILL to {kill.name} (pid {kill.pid}){when}: {why}.",
        "This is certain: the kernel logged the kill (evidence below).",
    ]
    sentences += _kill_details(kill)
    sentences += [
        f"The cgroup's own counter agrees: {c.directory} oom_kill = {c.oom_kill}." for c in counters
    ]
    if _container(facts):
        sentences.append(
            "PIDs in the kernel log are host PIDs: inside this container the same process "
            "may have had another PID."
        )
    if focused and not in_question:
        sentences.append("It does not match --focus: it is not the process in question.")
    sentences += _match_words(kill, match)
    if kill.previous_boot:
        sentences.append("It happened before the last boot.")
    severity = Severity.critical if in_question and not kill.previous_boot else Severity.warning
    previous = " (before the last boot)" if kill.previous_boot else ""
    evidence = list(kill.evidence) + [c.evidence for c in counters if c.evidence is not None]
    return Finding(
        id="oom.killed",
        severity=severity,
        title=f"{kill.name} (pid {kill.pid}) was OOM-killed{when}{previous}: {why}",
        explanation=" ".join(sentences),
        next_steps=_kill_steps(log, kill),
        subject={
            "pid": kill.pid,
            "name": kill.name,
            "scope": kill.scope,
            "oom_memcg": kill.oom_memcg,
            "task_memcg": kill.task_memcg,
            "time": kill.time.isoformat() if kill.time else None,
            "monotonic_s": kill.monotonic_s,
            "rss_kb": kill.rss_kb,
            "memcg_oom_kill": counters[0].oom_kill if counters else None,
            "uid": kill.uid,
            "report": kill.report,
            "previous_boot": kill.previous_boot,
            "in_question": in_question,
            "matched_by": match.how if match else None,
            "source": log.source,
        },
        evidence=evidence,
    )


def _match_words(kill: OomKill, match: _Match | None) -> list[str]:
    if match is None or match.process is None:
        return []
    process = match.process
    state = "a zombie now" if process.is_zombie else "gone by the second snapshot"
    if match.how == "pid":
        return [
            f"It is the --focus process of the process table itself: pid {kill.pid}, "
            f"{state}, killed after it started."
        ]
    return [
        f"Its name does not match --focus, but the kernel cuts names to 15 characters: "
        f"{kill.name} is how it names {process.argv[0]}, which the --focus process pid "
        f"{process.pid} runs. Most likely the same program, another run of it."
    ]


def _when(kill: OomKill) -> str:
    if kill.time is not None:
        return f" at {kill.time:%Y-%m-%d %H:%M:%S} UTC"
    if kill.monotonic_s is not None:
        return f" {kill.monotonic_s:.0f} s after boot"
    return ""


def _scope_words(kill: OomKill) -> str:
    if kill.scope == "memory_cgroup":
        cgroup = kill.oom_memcg or kill.task_memcg
        where = f"memory cgroup {cgroup}" if cgroup else "its memory cgroup"
        limit = f" of {_mib(kill.memcg_limit_kb)}" if kill.memcg_limit_kb else ""
        return f"{where} hit its limit{limit}"
    return {
        "system": "the machine ran out of memory (not a cgroup limit)",
        "cpuset": "the memory nodes of its cpuset ran out",
        "memory_policy": "the memory nodes of its NUMA policy ran out",
    }.get(kill.scope, "global or cgroup unknown: the report's header was not logged")


def _kill_details(kill: OomKill) -> list[str]:
    details = []
    if kill.rss_kb is not None:
        parts = ", ".join(
            f"{label} {_mib(value)}"
            for label, value in (
                ("anon", kill.anon_rss_kb),
                ("file", kill.file_rss_kb),
                ("shmem", kill.shmem_rss_kb),
            )
            if value is not None
        )
        virtual = f" of {_mib(kill.total_vm_kb)} virtual" if kill.total_vm_kb else ""
        details.append(f"It held {_mib(kill.rss_kb)} resident ({parts}){virtual}.")
    if kill.memcg_usage_kb is not None and kill.memcg_limit_kb is not None:
        details.append(
            f"The cgroup used {_mib(kill.memcg_usage_kb)} of its {_mib(kill.memcg_limit_kb)} limit."
        )
    if kill.scored_pid is not None and kill.scored_pid != kill.pid:
        details.append(
            f"The kernel scored {kill.scored_name} (pid {kill.scored_pid}) worst and killed "
            f"its child {kill.name} (pid {kill.pid}) instead (kernels before 5.1)."
        )
    if kill.invoked_by and kill.invoked_by != kill.name:
        details.append(f"The allocation that failed was made by {kill.invoked_by}.")
    if kill.report == "unpaired":
        details.append(
            "The OOM report printed before it belongs to another OOM event (too far apart in "
            "time, or cut by the kernel's rate limit): which task's allocation failed and "
            "whether a cgroup limit or the whole machine ran out is unknown beyond the kill "
            "line's own words."
        )
    if kill.reaped:
        details.append("The oom_reaper then freed its memory.")
    return details


def _kill_steps(log: KernelLogFacts, kill: OomKill) -> list[str]:
    steps = [f"Read the whole OOM report: {_log_command(log, f'Killed process {kill.pid} ')}"]
    if kill.scope == "memory_cgroup":
        steps.append(
            "Compare the limit with what the process needs (peak: memory.max_usage_in_bytes "
            "on cgroup v1, memory.peak on v2); raise the limit or cut the process's memory."
        )
    else:
        steps.append(
            "Find what else held memory then: the task table above the kill lists every "
            "process's rss (in pages). Add memory or swap, or run fewer jobs on this host."
        )
    steps.append(
        "A process killed this way exits with status 137 (128+SIGKILL): a supervisor or "
        "wrapper that logged 137 at that time agrees."
    )
    return steps


def _log_command(log: KernelLogFacts, needle: str) -> str:
    grep = f"grep -B 40 -A 2 '{needle}'"
    if log.source == "journalctl":
        return f"`journalctl -k -b --no-pager | {grep}`"
    if log.source and log.source.startswith("/"):
        return f"`{grep} {log.source}`"
    return f"`dmesg | {grep}`"


def _more_victims(rest: list[OomKill], severity: Severity) -> Finding:
    names = sorted({kill.name for kill in rest})
    return Finding(
        id="oom.killed",
        severity=severity,
        title=f"{len(rest)} more processes were OOM-killed ({', '.join(names[:5])}"
        f"{', ...' if len(names) > 5 else ''})",
        explanation=(
            f"The kernel log shows {len(rest)} more OOM kills than are listed one by one; "
            "the first lines of each are the evidence."
        ),
        next_steps=["See facts.kernel_log.oom_kills in the JSON report for every victim."],
        subject={"more_victims": len(rest), "names": names},
        evidence=[kill.evidence[-1] for kill in rest[:10] if kill.evidence],
    )


def _counters(cgroup: CgroupFacts | None, log: KernelLogFacts) -> list[_Counter]:
    counters = []
    if cgroup is not None:
        if cgroup.vmstat_oom_kill is not None:
            counters.append(
                _Counter(
                    "/proc/vmstat oom_kill (the whole kernel, since boot)",
                    cgroup.vmstat_oom_kill,
                    cgroup.vmstat_evidence,
                )
            )
        for group in cgroup.cgroups:
            if group.oom_kill is not None:
                roles = "/".join(group.roles)
                counters.append(
                    _Counter(
                        f"{group.path} oom_kill ({roles} cgroup)",
                        group.oom_kill,
                        group.oom_kill_evidence,
                    )
                )
    for memcg in log.memcg_counters:
        if memcg.oom_kill is not None:
            counters.append(
                _Counter(
                    f"{memcg.directory} oom_kill (named in the log)", memcg.oom_kill, memcg.evidence
                )
            )
    return counters


def _reasons(
    facts: Facts, log: KernelLogFacts, counters: list[_Counter], since: ProcessEntry | None
) -> list[_Reason]:
    reasons = []
    container = _container(facts)
    if not log.readable:
        reasons.append(_unreadable(log, container))
    else:
        reasons += [r for r in _reach_reasons(log) if not (since and r.code == "buffer_wrapped")]
    if log.incomplete and log.readable:
        reasons.append(
            _Reason(
                "log_incomplete",
                f"The kernel log may be missing its newest lines: {log.incomplete}.",
                ("Re-run with a longer --timeout.",),
            )
        )
    counted = _counter_reasons(facts.of(CgroupFacts), log, counters)
    # Kills missing from a log that is whole from its first line on are older than that
    # line, so older than the focus process it reaches back to: not its death.
    reasons += [r for r in counted if not (since and r.code == "kills_unexplained")]
    return reasons


def _unreadable(log: KernelLogFacts, container: str | None) -> _Reason:
    if not log.attempts:
        return _Reason(
            "log_unreadable",
            f"The kernel log was not collected ({log.unavailable}): nothing is known about "
            "OOM kills from it.",
            ("Re-run with a longer --timeout, or read it by hand: `dmesg | grep -i oom`.",),
        )
    where = f"inside this {container} container" if container else "as this user"
    restrict = (
        f" kernel.dmesg_restrict is {log.dmesg_restrict}." if log.dmesg_restrict is not None else ""
    )
    return _Reason(
        "log_unreadable",
        f"The kernel log could not be read {where} ({log.unavailable}).{restrict} An empty "
        "answer here says nothing about OOM kills.",
        (
            "Read the kernel log on the host itself, not inside the container: "
            "`dmesg -T | grep -iE 'killed process|out of memory'`.",
            "Or let this session read it: `sysctl kernel.dmesg_restrict=0` on the host (a "
            "Docker container also needs CAP_SYSLOG: the default seccomp profile refuses "
            "syslog(2) without it).",
            "On a rented GPU host (vast.ai and the like) without host access, ask the "
            "provider for the host's kernel log around the crash, or use their console.",
        ),
        tuple(a.evidence for a in log.attempts),
    )


def _reach_reasons(log: KernelLogFacts) -> list[_Reason]:
    reasons = []
    earliest = (log.earliest_evidence,) if log.earliest_evidence else ()
    if log.reaches_boot is None:
        reasons.append(
            _Reason(
                "reach_unknown",
                f"The kernel log ({log.source}) carries no time stamps this tool can read, so "
                "how far back it goes is unknown.",
                ("Check by hand: `dmesg | head -1` should say 'Linux version'.",),
                earliest,
            )
        )
    elif not log.reaches_boot:
        reasons.append(_not_from_boot(log, earliest))
    if log.dropped_old_matches:
        reasons.append(
            _Reason(
                "matches_dropped",
                f"The log was {log.log_bytes} bytes; only the newest {log.cap_bytes} bytes of "
                f"its {log.filtered_bytes} bytes of matching lines were sent, so older OOM "
                "lines may be missing.",
                (f"Search it on the host: {_log_command(log, 'Killed process')}.",),
            )
        )
    return reasons


def _not_from_boot(log: KernelLogFacts, earliest: tuple[EvidenceRef, ...]) -> _Reason:
    start = (
        f"{log.earliest_time:%Y-%m-%d %H:%M:%S} UTC"
        if log.earliest_time
        else f"{log.earliest_monotonic_s:.0f} s after boot"
    )
    if log.source == "dmesg":
        words = (
            f"The kernel ring buffer has wrapped: its oldest line is from {start}, long after "
            "boot. Anything older, an OOM kill included, has been overwritten."
        )
        steps: tuple[str, ...] = (
            "Look in a log that keeps older lines: `journalctl -k -b` (persistent journal) "
            "or /var/log/kern.log on the host.",
            "Next time, read the log soon after the crash, or keep it: `dmesg -w >> "
            "/var/log/dmesg.keep` on the host, or boot with log_buf_len=16M.",
        )
    elif log.only_earlier_boots:
        boot = f"{log.boot_time:%Y-%m-%d %H:%M:%S} UTC" if log.boot_time else "the last boot"
        words = (
            f"Every line of the kernel log from {log.source} predates the last boot at {boot}: "
            "it says nothing about this boot (the logger may have stopped writing kernel lines)."
        )
        steps = ("Read this boot's kernel log another way: `dmesg` or `journalctl -k -b` as root.",)
    else:
        words = (
            f"The kernel log from {log.source} starts at {start}, after boot: older lines "
            "(rotated or vacuumed) are not in it."
        )
        steps = ("Look in the rotated files (/var/log/kern.log.1, ...) or the persistent journal.",)
    return _Reason("buffer_wrapped", words, steps, earliest)


def _counter_reasons(
    cgroup: CgroupFacts | None, log: KernelLogFacts, counters: list[_Counter]
) -> list[_Reason]:
    if not counters:
        why = (
            "the cgroup probe did not run"
            if cgroup is None
            else "neither /proc/vmstat nor a memory cgroup showed an oom_kill counter"
        )
        return [
            _Reason(
                "counters_unreadable",
                f"No OOM kill counter could be read to cross-check the log ({why}).",
                (
                    "Read them by hand: `grep oom_kill /proc/vmstat`; "
                    "`cat /sys/fs/cgroup/memory.events` (cgroup v2) or "
                    "`cat /sys/fs/cgroup/memory/memory.oom_control` (v1).",
                ),
            )
        ]
    shown = sum(1 for kill in log.oom_kills if not kill.previous_boot)
    unexplained = [c for c in counters if c.value > shown]
    if not unexplained:
        return []
    worst = max(unexplained, key=lambda c: c.value)
    if log.readable:
        words = (
            f"{worst.label} counted {worst.value} OOM kills, but the kernel log shows "
            f"{shown}: the victims of {worst.value - shown} kills are unknown."
        )
    else:
        words = (
            f"{worst.label} counted {worst.value} OOM kills, and no readable log says "
            "whose: victims unknown."
        )
    return [
        _Reason(
            "kills_unexplained",
            words,
            (
                "Find the victims in the host's log: `journalctl -k | grep 'Killed process'` "
                "or /var/log/kern.log; watch the counter: `grep oom_kill /proc/vmstat`.",
            ),
            tuple(c.evidence for c in unexplained if c.evidence is not None),
        )
    ]


def _inconclusive(
    log: KernelLogFacts, focus: str | None, counters: list[_Counter], reasons: list[_Reason]
) -> Finding:
    what = f"a process matching '{focus}'" if focus else "any process"
    sentences = [reason.words for reason in reasons]
    if counters and all(c.value == 0 for c in counters):
        sentences.append(
            "The OOM counters read zero, which points to no OOM kill since boot, but without "
            "the log this cannot be confirmed."
        )
    steps: list[str] = []
    for reason in reasons:
        steps += [step for step in reason.steps if step not in steps]
    evidence: list[EvidenceRef] = []
    for reason in reasons:
        evidence += reason.evidence
    return Finding(
        id="oom.inconclusive",
        severity=Severity.warning,
        title=f"Cannot tell whether {what} was OOM-killed: {_short(reasons[0])}",
        explanation=" ".join(sentences),
        next_steps=steps,
        subject={
            "focus": focus,
            "reasons": [reason.code for reason in reasons],
            "log_source": log.source,
            "kills_in_log": len(log.oom_kills),
            "counted": {c.label: c.value for c in counters},
        },
        evidence=evidence,
    )


def _short(reason: _Reason) -> str:
    return {
        "log_unreadable": "the kernel log is not readable here",
        "buffer_wrapped": "the kernel log does not reach back to boot",
        "reach_unknown": "how far back the kernel log goes is unknown",
        "matches_dropped": "the kernel log was too large to read whole",
        "log_incomplete": "the kernel log was cut short",
        "counters_unreadable": "no OOM counter could be read",
        "kills_unexplained": "OOM kills were counted whose victims are unknown",
    }[reason.code]


def _ruled_out(
    log: KernelLogFacts,
    focus: str | None,
    counters: list[_Counter],
    others: list[OomKill],
    since: ProcessEntry | None,
) -> Finding:
    what = f"no process matching '{focus}'" if focus else "no process"
    whom = f"a process matching '{focus}'" if focus else "any process"
    boot = f" at {log.boot_time:%Y-%m-%d %H:%M:%S} UTC" if log.boot_time else ""
    other_words = ""
    if others:
        names = ", ".join(sorted({kill.name for kill in others}))
        other_words = f" It shows {len(others)} OOM kills of other processes ({names})."
    counted = "; ".join(f"{c.label} = {c.value}" for c in counters)
    if since is None:
        title = f"Not OOM-killed: {what} was OOM-killed since boot{boot}"
        reach = (
            f"The kernel log ({log.source}) was read whole and reaches back to boot (its first "
            f"line is in the evidence); it records no OOM kill of {whom}."
            f"{other_words} The kernel's own counters agree ({counted}): every kill they "
            f"count is in the log. {_previous_boot_words(log)}"
        )
        earlier = "For a death before the last boot: `journalctl -k -b -1 | grep 'Killed process'`."
    else:
        started = f"{since.started_at:%Y-%m-%d %H:%M:%S} UTC" if since.started_at else "?"
        first = f"{log.earliest_time:%Y-%m-%d %H:%M:%S} UTC" if log.earliest_time else "?"
        title = (
            f"Not OOM-killed: {what} was OOM-killed since {since.name} (pid {since.pid}) "
            f"started at {started}"
        )
        shown = sum(1 for kill in log.oom_kills if not kill.previous_boot)
        missing = [c for c in counters if c.value > shown]
        older = (
            f" The counters ({counted}) count kills the log does not show: those happened "
            f"before its first line, so before pid {since.pid} started."
            if missing
            else f" The kernel's own counters agree ({counted})."
        )
        reach = (
            f"The kernel log ({log.source}) was read whole. It does not reach back to boot: its "
            f"first line is from {first}, but {since.name} (pid {since.pid}), the first "
            f"--focus process to start, started at {started}, after it. The log records no "
            f"OOM kill of {whom} since then.{other_words}{older} An "
            f"earlier run of it, before {first}, is not covered."
        )
        earlier = (
            "For an earlier run that died before the log's first line: the persistent "
            "journal (`journalctl -k | grep 'Killed process'`) or /var/log/kern.log*."
        )
    return Finding(
        id="oom.ruled_out",
        severity=Severity.info,
        title=title,
        explanation=reach,
        next_steps=[
            "Look elsewhere for why it died: its exit status (137 without an OOM line means "
            "some other SIGKILL), its own log, its supervisor's log.",
            earlier,
        ],
        subject={
            "focus": focus,
            "log_source": log.source,
            "boot_time": log.boot_time.isoformat() if log.boot_time else None,
            **(
                {"since_pid": since.pid, "since": since.started_at.isoformat()}
                if since is not None and since.started_at is not None
                else {}
            ),
            "kills_of_others": len(others),
            "counted": {c.label: c.value for c in counters},
        },
        evidence=[e for e in [log.earliest_evidence] if e is not None]
        + [c.evidence for c in counters if c.evidence is not None],
    )


def _previous_boot_words(log: KernelLogFacts) -> str:
    earlier = [kill for kill in log.oom_kills if kill.previous_boot]
    if earlier:
        names = ", ".join(sorted({kill.name for kill in earlier}))
        return (
            f"Before the last boot, {len(earlier)} process(es) were OOM-killed ({names}): see "
            "the oom.killed findings marked so."
        )
    if log.previous_boot is not None and log.previous_boot.read:
        return "The previous boot's journal was read too and holds no OOM kill."
    return "An OOM kill before the last boot would not show here."


def _mib(kb: int | None) -> str:
    """Kilobytes for a person: MiB below 10 GiB, GiB above.

    >>> _mib(65536), _mib(61022840)
    ('64 MiB', '58.2 GiB')
    """
    if kb is None:
        return "?"
    if kb >= 10 * 1024 * 1024:
        return f"{kb / 1024 / 1024:.1f} GiB"
    return f"{kb / 1024:.0f} MiB"


def _container(facts: Facts) -> str | None:
    system = facts.of(SystemFacts)
    return system.container if system is not None else None


RULES: tuple[CrossRule, ...] = (oom_verdict,)
