"""recorder: what ``forensics arm`` saw before it fired; a section the client writes.

This probe runs nothing on the host (``client_sections``): the flight recorder samples the
host over its own channel while armed (``forensics/watch/recorder.sh``) and, when an event
fires, writes what it kept into the bundle as the section ``recorder``, one JSON object a
line, with its sha256 in the manifest like any host section, so ``forensics analyze``
reads it again offline::

    {"record":"armed","time":"2026-11-29T21:00:00Z","focus":"cuzk","every_s":1.0}
    {"record":"sample","time":"2026-11-29T21:00:01Z",
     "processes":[{"pid":42,"state":"S","threads":3,"rss_kb":1048576}]}
    {"record":"sample","time":"2026-11-29T21:00:41Z",
     "processes":[{"pid":42,"state":"Z","threads":1,"exit_code":10752}]}
    {"record":"event","time":"2026-11-29T21:00:41Z","kind":"zombie","pid":42,
     "name":"cuzk","exit_code":10752,"detail":"state Z"}

(each record on one line in the section; split here to fit the page)
and returns ``RecorderFacts`` with the samples, the gaps and the events; its rules raise
``focus.exited`` (exit status 42 here: 10752 is the wait status, 42 << 8),
``recorder.triggered`` and ``recorder.gap``.
"""

from __future__ import annotations

import json
import signal
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from forensics.core.models import CollectOptions, EvidenceRef, Finding, SectionSpec, Severity
from forensics.core.probe import Captures, Probe, ProbeFacts, RuleContext, open_section
from forensics.core.timeline_event import PROCESS_EXIT, TimelineEvent
from forensics.core.units import describe_duration, gib

SECTION = "recorder"
RECORDER_EVENT = "recorder_event"
RECORDER_GAP = "recorder_gap"
# RSS growth before an exit worth naming in the finding.
RSS_GROWTH_WORTH_SAYING_KB = 64 * 1024
EXCERPT_CHARS = 300


class HostSample(BaseModel):
    uptime_s: float | None = None
    mem_total_kb: int | None = None
    mem_available_kb: int | None = None
    oom_kill: int | None = Field(default=None, description="/proc/vmstat oom_kill.")
    pressure_some_avg10: float | None = None
    pressure_full_avg10: float | None = None


class ProcessSample(BaseModel):
    pid: int
    state: str = Field(description="From /proc/PID/stat; 'gone' when /proc/PID was gone.")
    threads: int | None = None
    rss_kb: int | None = None
    exit_code: int | None = Field(
        default=None, description="/proc/PID/stat field 52 (a wait status); set once it exits."
    )
    threads_in_d: int | None = None


class CgroupSample(BaseModel):
    path: str
    usage_bytes: int | None = None
    limit_bytes: int | None = None
    oom_kill: int | None = Field(default=None, description="The cgroup's own OOM-kill counter.")


class Armed(BaseModel):
    record: Literal["armed"] = "armed"
    time: datetime
    focus: str | None = None
    every_s: float | None = None
    keep_s: float | None = None
    events: list[str] = Field(default_factory=list)
    names: dict[int, str] = Field(default_factory=dict)
    cgroup_of: dict[int, str] = Field(default_factory=dict)


class Sample(BaseModel):
    record: Literal["sample"] = "sample"
    time: datetime
    host: HostSample | None = None
    processes: list[ProcessSample] = Field(default_factory=list)
    cgroups: list[CgroupSample] = Field(default_factory=list)


class Event(BaseModel):
    record: Literal["event"] = "event"
    time: datetime
    kind: str
    pid: int | None = None
    name: str | None = None
    exit_code: int | None = None
    threads: int | None = None
    detail: str = ""


class Gap(BaseModel):
    record: Literal["gap"] = "gap"
    start: datetime
    end: datetime
    reason: str = ""

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()


Record = Annotated[Armed | Sample | Event | Gap, Field(discriminator="record")]
_RECORD: TypeAdapter[Armed | Sample | Event | Gap] = TypeAdapter(Record)


class RecorderFacts(ProbeFacts):
    armed: Armed | None = None
    samples: list[Sample] = Field(default_factory=list)
    events: list[Event] = Field(default_factory=list)
    gaps: list[Gap] = Field(default_factory=list)
    lines: dict[str, int] = Field(
        default_factory=dict, description="1-based line of each event and gap, for evidence."
    )
    unreadable_lines: int = 0


def recording_line(record: Armed | Sample | Event | Gap) -> str:
    """One line of the section, as the client writes it."""
    return record.model_dump_json(exclude_none=True) + "\n"


def sections(options: CollectOptions) -> list[SectionSpec]:
    return []


def parse(captures: Captures, options: CollectOptions) -> RecorderFacts:
    """The recording, one record a line; lines that are not records are counted.

    >>> from forensics.core.models import SectionResult
    >>> text = __doc__.split("::", 1)[1].split("and returns")[0]
    >>> text = text.split("(each")[0].strip().replace("\\n     ", "")
    >>> result = SectionResult(name=SECTION, command="", exit_status=0, duration_s=None,
    ...                        bytes=len(text), truncated=False, timed_out=False, finished=True)
    >>> from forensics.core.probe import Captured
    >>> facts = parse({SECTION: Captured(result=result, text=text)}, CollectOptions())
    >>> len(facts.samples), facts.events[0].kind, exit_words(facts.events[0].exit_code)
    (2, 'zombie', 'exit status 42')
    """
    captured, reason = open_section(captures, SECTION)
    if captured is None:
        return RecorderFacts(unavailable=reason)
    facts = RecorderFacts(unavailable=reason)
    for number, line in enumerate(captured.lines, start=1):
        if not line.strip():
            continue
        try:
            record = _RECORD.validate_python(json.loads(line))
        except (ValueError, ValidationError):
            facts.unreadable_lines += 1
            continue
        if isinstance(record, Armed):
            facts.armed = record
        elif isinstance(record, Sample):
            facts.samples.append(record)
        elif isinstance(record, Event):
            facts.lines[f"event{len(facts.events)}"] = number
            facts.events.append(record)
        else:
            facts.lines[f"gap{len(facts.gaps)}"] = number
            facts.gaps.append(record)
    return facts


def exit_words(code: int | None) -> str | None:
    """A wait status (``/proc/PID/stat`` field 52) in words; None when unknown.

    >>> exit_words(42 << 8), exit_words(9), exit_words(None)
    ('exit status 42', 'killed by signal 9 (SIGKILL)', None)
    >>> exit_words(0x86)
    'killed by signal 6 (SIGABRT), core dumped'
    """
    if code is None:
        return None
    signal_number = code & 0x7F
    if signal_number == 0:
        return f"exit status {(code >> 8) & 0xFF}"
    words = f"killed by signal {signal_number}{_signal_name(signal_number)}"
    return words + (", core dumped" if code & 0x80 else "")


def _signal_name(number: int) -> str:
    try:
        return f" ({signal.Signals(number).name})"
    except ValueError:
        return ""


def _failed(code: int | None) -> bool:
    return code is None or code != 0


def rules(facts: RecorderFacts, context: RuleContext) -> list[Finding]:
    findings = [_gap_finding(facts, index, gap) for index, gap in enumerate(facts.gaps)]
    for index, event in enumerate(facts.events):
        if event.kind in ("exit", "zombie"):
            findings.append(_exited(facts, index, event))
        else:
            findings.append(_triggered(facts, index, event))
    return findings


def _evidence(facts: RecorderFacts, key: str, record: BaseModel) -> list[EvidenceRef]:
    line = facts.lines.get(key)
    if line is None:
        return []
    excerpt = record.model_dump_json(exclude_none=True)[:EXCERPT_CHARS]
    return [EvidenceRef(section=SECTION, first_line=line, last_line=line, excerpt=excerpt)]


def _who(event: Event) -> str:
    return f"{event.name or 'the focus process'} (pid {event.pid})"


def _rss_story(facts: RecorderFacts, event: Event) -> str | None:
    """How the process's RSS moved over the samples before the event, in one sentence."""
    points = [
        (sample.time, process.rss_kb)
        for sample in facts.samples
        if sample.time <= event.time
        for process in sample.processes
        if process.pid == event.pid and process.rss_kb is not None
    ]
    if len(points) < 2:
        return None
    (first_time, first), (last_time, _) = points[0], points[-1]
    peak = max(rss for _, rss in points)
    seconds = describe_duration((last_time - first_time).total_seconds(), tenths=True)
    if peak - first < RSS_GROWTH_WORTH_SAYING_KB:
        return f"RSS held at about {gib(peak * 1024)} over the {seconds} before."
    return (
        f"RSS grew {gib((peak - first) * 1024)} (from {gib(first * 1024)} to "
        f"{gib(peak * 1024)}) in the {seconds} before."
    )


def _exited(facts: RecorderFacts, index: int, event: Event) -> Finding:
    words = exit_words(event.exit_code)
    still_running = event.kind == "zombie" and (event.threads or 0) > 1
    if still_running:
        title = (
            f"{_who(event)} has not finished dying: its main thread exited, "
            f"{event.threads} threads still run (state Zl)"
        )
        severity = Severity.critical
        how = (
            "The recorder saw the process turn into a zombie whose other threads still run: "
            "it holds its memory and GPU until they end, and its parent cannot reap it yet."
        )
    elif words is None:
        title = (
            f"{_who(event)} exited; its exit status could not be read: its parent reaped it "
            "before the recorder's next sample"
        )
        severity = Severity.critical
        how = "The process was gone between two samples, without a zombie to read."
    else:
        title = f"{_who(event)} exited: {words} (read from its zombie)"
        severity = Severity.critical if _failed(event.exit_code) else Severity.warning
        how = (
            "The recorder read the exit status from /proc/PID/stat while the zombie still "
            "existed, before any parent or wrapper could lose it."
        )
    story = _rss_story(facts, event)
    return Finding(
        id="focus.exited",
        severity=severity,
        title=title,
        explanation=" ".join(part for part in (how, story) if part),
        next_steps=[
            "Read the kernel and GPU findings of this bundle for what ended it (oom.*, kernel.*).",
            "See the samples before it: forensics analyze BUNDLE --format json "
            "(facts.recorder.samples).",
        ],
        subject={
            "pid": event.pid,
            "name": event.name,
            "event": event.kind,
            "exit": words,
            "exit_code": event.exit_code,
            "time": event.time.isoformat(),
        },
        evidence=_evidence(facts, f"event{index}", event),
    )


_TRIGGER_SEVERITY = {"oom": Severity.critical, "stuck": Severity.critical}


def _triggered(facts: RecorderFacts, index: int, event: Event) -> Finding:
    story = _rss_story(facts, event) if event.pid is not None else None
    cgroup_story = _cgroup_story(facts, event)
    return Finding(
        id="recorder.triggered",
        severity=_TRIGGER_SEVERITY.get(event.kind, Severity.warning),
        title=f"the flight recorder fired on {event.kind}: {event.detail}",
        explanation=" ".join(
            part
            for part in (
                "forensics arm collected this bundle the moment this was seen.",
                story,
                cgroup_story,
            )
            if part
        ),
        next_steps=["Read this bundle's other findings: they were collected at that moment."],
        subject={"event": event.kind, "pid": event.pid, "time": event.time.isoformat()},
        evidence=_evidence(facts, f"event{index}", event),
    )


def _cgroup_story(facts: RecorderFacts, event: Event) -> str | None:
    before = [sample for sample in facts.samples if sample.time <= event.time]
    if event.kind != "oom" or not before:
        return None
    for cgroup in before[-1].cgroups:
        peak = max(
            (
                sampled.usage_bytes
                for sample in before
                for sampled in sample.cgroups
                if sampled.path == cgroup.path and sampled.usage_bytes is not None
            ),
            default=None,
        )
        if peak is not None and cgroup.limit_bytes:
            share = 100 * peak / cgroup.limit_bytes
            return (
                f"The cgroup {cgroup.path} used up to {gib(peak)} of its {gib(cgroup.limit_bytes)} "
                f"limit ({share:.0f}%) in the samples before."
            )
    return None


def _gap_finding(facts: RecorderFacts, index: int, gap: Gap) -> Finding:
    return Finding(
        id="recorder.gap",
        severity=Severity.warning,
        title=(
            f"the recorder was blind for {describe_duration(gap.seconds, tenths=True)}: "
            f"{gap.reason}"
        ),
        explanation=(
            f"From {gap.start.isoformat()} to {gap.end.isoformat()} the SSH connection was "
            "down and no sample was taken; an event in that window was seen only afterwards."
        ),
        next_steps=["Check the network path and the host's sshd log for that window."],
        subject={"start": gap.start.isoformat(), "end": gap.end.isoformat()},
        evidence=_evidence(facts, f"gap{index}", gap),
    )


def timeline(facts: RecorderFacts) -> list[TimelineEvent]:
    events = []
    if facts.armed is not None:
        events.append(
            TimelineEvent(
                time=facts.armed.time,
                source=SECTION,
                kind=RECORDER_EVENT,
                text=f"flight recorder armed (focus {facts.armed.focus!r})",
            )
        )
    if facts.samples:
        first, last = facts.samples[0], facts.samples[-1]
        events.append(
            TimelineEvent(
                time=first.time,
                source=SECTION,
                kind=RECORDER_EVENT,
                text=f"first kept sample: {_sample_text(first)}",
            )
        )
        events.append(
            TimelineEvent(
                time=last.time,
                source=SECTION,
                kind=RECORDER_EVENT,
                text=f"last sample: {_sample_text(last)}",
            )
        )
    for index, gap in enumerate(facts.gaps):
        events.append(
            TimelineEvent(
                time=gap.start,
                source=SECTION,
                line=facts.lines.get(f"gap{index}"),
                kind=RECORDER_GAP,
                text=(
                    f"connection lost for {describe_duration(gap.seconds, tenths=True)}: "
                    f"{gap.reason}"
                ),
            )
        )
    for index, event in enumerate(facts.events):
        exited = event.kind in ("exit", "zombie")
        events.append(
            TimelineEvent(
                time=event.time,
                source=SECTION,
                line=facts.lines.get(f"event{index}"),
                kind=PROCESS_EXIT if exited else RECORDER_EVENT,
                text=f"recorder fired on {event.kind}: {event.detail}",
                pid=event.pid,
            )
        )
    return events


def _sample_text(sample: Sample) -> str:
    parts = []
    if sample.host is not None and sample.host.mem_available_kb is not None:
        parts.append(f"MemAvailable {gib(sample.host.mem_available_kb * 1024)}")
    for process in sample.processes:
        rss = "" if process.rss_kb is None else f" RSS {gib(process.rss_kb * 1024)}"
        parts.append(f"pid {process.pid} {process.state}{rss}")
    return ", ".join(parts) or "no reading"


PROBE = Probe(
    name="recorder",
    run_order=1000,
    report_order=5,
    sections=sections,
    facts_model=RecorderFacts,
    parse=parse,
    rules=rules,
    timeline=timeline,
    client_sections=(SECTION,),
)
