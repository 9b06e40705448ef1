"""Did the log stop because its process died?

A small log whose last write sits just before a process's end on the timeline (an OOM
kill, a segfault, an Xid, an exit), or whose focus process is now a zombie, ended early:
its last lines are the last thing the process said, and nothing after it will come. When
the log's writers are known (processes holding it open, focus zombies that started before
its last write), the end of another process does not count; inside a container the
kernel's host PIDs cannot be compared with ours, so there every end counts.
"""

from __future__ import annotations

from forensics.core.evidence import cite
from forensics.core.facts import CrossRule, Facts
from forensics.core.focus import FocusProcess
from forensics.core.models import EvidenceRef, Finding, Severity
from forensics.core.probe import RuleContext
from forensics.core.timeline_event import ENDINGS, TimelineEvent
from forensics.core.units import describe_duration
from forensics.judge.timeline import host_events
from forensics.probes.logs import SECTION, LogFile, LogsFacts
from forensics.probes.system import SystemFacts

SMALL_LOG_BYTES = 64 * 1024
# How long before an ending event a log's last write still counts as "just before";
# kernel times are approximate to a second or so, hence the small slack after it.
BEFORE_ENDING_S = 120
AFTER_ENDING_SLACK_S = 5
CLOCK_ROUNDING_S = 2


def log_ended_early(facts: Facts, context: RuleContext) -> list[Finding]:
    logs = facts.of(LogsFacts)
    if logs is None:
        return []
    endings = [event for event in host_events(facts) if event.kind in ENDINGS]
    zombies = [process for process in logs.focus_processes if not process.alive]
    system = facts.of(SystemFacts)
    pids_comparable = system is None or system.container is None
    findings = []
    for log in logs.files:
        if log.modified is None or log.stat_line is None:
            continue
        if log.size_bytes is None or log.size_bytes > SMALL_LOG_BYTES:
            continue
        writers = _writers(log, zombies) if pids_comparable else set()
        ending = next((e for e in endings if _just_before(log, e) and _may_end(e, writers)), None)
        if ending is not None:
            findings.append(_before_ending(log, ending))
            continue
        writer = next((z for z in zombies if _written_after_start(log, z)), None)
        if writer is not None:
            findings.append(_zombie_writer(log, writer))
    return findings


def _writers(log: LogFile, zombies: list[FocusProcess]) -> set[int]:
    """PIDs known to write ``log``: holding it open, or focus zombies older than its last write."""
    return set(log.open_by) | {z.pid for z in zombies if _written_after_start(log, z)}


def _may_end(event: TimelineEvent, writers: set[int]) -> bool:
    return not writers or event.pid is None or event.pid in writers


def _written_after_start(log: LogFile, process: FocusProcess) -> bool:
    """mtimes are whole seconds and start times are derived from a whole-second btime."""
    assert log.modified is not None
    if process.started is None:
        return True
    return (log.modified - process.started).total_seconds() >= -CLOCK_ROUNDING_S


def _just_before(log: LogFile, event: TimelineEvent) -> bool:
    assert log.modified is not None
    gap = (event.time - log.modified).total_seconds()
    return -AFTER_ENDING_SLACK_S <= gap <= BEFORE_ENDING_S


def _log_evidence(log: LogFile) -> list[EvidenceRef]:
    assert log.stat_line is not None
    evidence = [
        cite(SECTION, log.stat_line, f"{log.path}: {log.size_bytes} bytes, last write {_utc(log)}")
    ]
    if log.tail:
        evidence.append(
            cite(
                SECTION,
                log.tail[0].raw_line,
                "\n".join(line.text for line in log.tail[-5:]),
                last_line=log.tail[-1].raw_line,
            )
        )
    return evidence


def _before_ending(log: LogFile, ending: TimelineEvent) -> Finding:
    assert log.modified is not None
    gap = (ending.time - log.modified).total_seconds()
    when = f"{describe_duration(abs(gap))} {'before' if gap >= 0 else 'after'}"
    evidence = _log_evidence(log)
    if ending.line is not None:
        evidence.append(cite(ending.source, ending.line, ending.text))
    return Finding(
        id="log.ended_early",
        severity=Severity.warning,
        title=f"{log.path} stopped {when} this: {ending.text[:80]}",
        explanation=(
            f"{log.path} is small ({log.size_bytes} bytes) and was last written at {_utc(log)}, "
            f"{when} '{ending.text}'"
            + (" (kernel time, approximate)" if ending.approximate else "")
            + ". The process most likely died there, so the log's last lines are its last "
            "words; read them with that event in mind."
        ),
        next_steps=[
            f"tail -n 50 {log.path}",
            "Read the event's evidence below: what killed it, and why",
        ],
        subject={"path": log.path, "event": ending.kind, "gap_s": round(gap)},
        evidence=evidence,
    )


def _zombie_writer(log: LogFile, writer: FocusProcess) -> Finding:
    assert log.modified is not None
    after = ""
    if writer.started is not None:
        after = (
            f", {describe_duration((log.modified - writer.started).total_seconds())} after "
            f"the process started"
        )
    evidence = _log_evidence(log)
    evidence.append(
        cite(SECTION, writer.raw_line, f"pid {writer.pid} ({writer.name}) state {writer.state}")
    )
    return Finding(
        id="log.ended_early",
        severity=Severity.warning,
        title=f"{log.path} stopped at {_utc(log)}{after}; {writer.name} (pid {writer.pid}) "
        "is now a zombie",
        explanation=(
            f"{log.path} is small ({log.size_bytes} bytes) and its last write was at "
            f"{_utc(log)}{after}. The focus process {writer.name} (pid {writer.pid}) is a "
            "zombie: it has exited and its parent has not collected its exit status. Its "
            "death time is not recorded anywhere we can read; the log's last write is the "
            "last sign of life we have. Likely but not certain: the log may belong to "
            "another process."
        ),
        next_steps=[
            f"tail -n 50 {log.path} (its last words)",
            f"grep PPid /proc/{writer.pid}/status, then look at that parent: it should have "
            "reaped the process and may have swallowed its exit status",
            "dmesg -T | tail -50 (a kill or segfault around that time?)",
        ],
        subject={"path": log.path, "pid": writer.pid},
        evidence=evidence,
    )


def _utc(log: LogFile) -> str:
    return log.modified.strftime("%Y-%m-%d %H:%M:%S UTC") if log.modified else "unknown"


RULES: tuple[CrossRule, ...] = (log_ended_early,)
