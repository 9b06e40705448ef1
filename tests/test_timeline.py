"""The timeline: kernel seconds turned into UTC, every dated fact in order, in every format."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from forensics import timeline
from forensics.facts import Facts
from forensics.host_report import HostReport
from forensics.models import CollectOptions, CollectStatus, Target
from forensics.probe import RuleContext
from forensics.rules.log_end import log_ended_early
from forensics.timeline import TimelineEvent, build_timeline, kernel_time_to_utc
from probes.focus_pids import FocusProcess
from probes.gpu import GpuFacts, SmiRun
from probes.logs import LogFile, LogLine, LogsFacts
from probes.system import SystemFacts
from reports import Format, render_host

BOOT = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
UPTIME_S = 90000.0
COLLECTED = BOOT + timedelta(seconds=UPTIME_S)


def _facts() -> Facts:
    daemon_started = BOOT + timedelta(seconds=100)
    return Facts(
        system=SystemFacts(boot_time=BOOT, uptime_s=UPTIME_S, host_clock=COLLECTED),
        logs=LogsFacts(
            requested=True,
            host_clock=COLLECTED,
            focus_processes=[
                FocusProcess(pid=4242, name="cuzk", state="Z", started=daemon_started, raw_line=5)
            ],
            files=[
                LogFile(
                    path="/work/bench.log",
                    sources=["glob"],
                    raw_line=7,
                    stat_line=8,
                    size_bytes=4089,
                    modified=daemon_started + timedelta(seconds=2),
                    tail=[LogLine(raw_line=10, text="[prove] synthesizing circuit")],
                ),
                LogFile(
                    path="/var/log/cuzk-old.log",
                    sources=["glob"],
                    raw_line=12,
                    stat_line=13,
                    size_bytes=900_000,
                    modified=BOOT - timedelta(days=3),
                ),
            ],
        ),
        gpu=GpuFacts(
            smi_present=True,
            host_clock=COLLECTED,
            failure="timed_out",
            failure_message="nvidia-smi (gpus query) did not answer in time",
            failure_run=SmiRun(query="gpus", exit_status=None, first_line=2, last_line=2),
        ),
    )


def test_kernel_seconds_since_boot_become_utc() -> None:
    assert kernel_time_to_utc(0.0, BOOT) == BOOT
    assert kernel_time_to_utc(9836.05824, BOOT) == BOOT + timedelta(seconds=9836.05824)
    assert kernel_time_to_utc(UPTIME_S, BOOT, uptime_s=UPTIME_S) == COLLECTED


@pytest.mark.parametrize("stamp", [-1.0, float("nan"), float("inf"), 1e300, UPTIME_S + 60])
def test_impossible_kernel_stamps_are_refused(stamp: float) -> None:
    assert kernel_time_to_utc(stamp, BOOT, uptime_s=UPTIME_S) is None


def test_dated_facts_come_out_oldest_first_with_their_sources() -> None:
    events = build_timeline(_facts(), COLLECTED - timedelta(seconds=1))
    assert [e.time for e in events] == sorted(e.time for e in events)
    assert [e.kind for e in events] == [
        "log_last_write", "boot", "process_start", "log_last_write", "collection", "gpu_failure",
    ]  # fmt: skip
    start = events[2]
    assert start.approximate and (start.source, start.line) == ("logs", 5)
    assert events[3].text == "last write to /work/bench.log (4089 bytes)"
    assert all(e.time.tzinfo is not None for e in events)


def test_a_skewed_host_clock_is_said_on_the_collection_event() -> None:
    events = build_timeline(_facts(), COLLECTED - timedelta(minutes=3))
    (collection,) = [e for e in events if e.kind == "collection"]
    assert collection.text.endswith("the host's clock is 3 min ahead of ours")


def test_a_kernel_event_older_than_the_wrapped_ring_buffer_still_lands_in_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The ring buffer wrapped: its first line is at 86000 s. kern.log kept an OOM kill
    from 103.5 s; a later probe plugs in a contributor, and the event sorts before the
    buffer's lines, right after the log's last write, and explains why the log ended."""
    kern_log = [
        (4, 103.5, "Memory cgroup out of memory: Killed process 4242 (cuzk)"),
        (9, 86000.2, "perf: interrupt took too long"),
        (10, 180042.1, "a line from an earlier boot, longer than this uptime"),
    ]

    def kernel_events(facts: Facts) -> list[TimelineEvent]:
        assert facts.system is not None and facts.system.boot_time is not None
        events = []
        for line, stamp, text in kern_log:
            moment = kernel_time_to_utc(stamp, facts.system.boot_time, facts.system.uptime_s)
            if moment is not None:
                kind = timeline.OOM_KILL if "Killed process" in text else "kernel"
                events.append(
                    TimelineEvent(
                        time=moment,
                        approximate=True,
                        source="kernel_log",
                        line=line,
                        kind=kind,
                        text=text,
                    )
                )
        return events

    monkeypatch.setattr(timeline, "CONTRIBUTORS", (*timeline.CONTRIBUTORS, kernel_events))
    facts = _facts()
    events = build_timeline(facts, COLLECTED)
    texts = [e.text for e in events]
    oom = texts.index(kern_log[0][2])
    assert texts[oom - 1] == "last write to /work/bench.log (4089 bytes)"
    assert oom < texts.index(kern_log[1][2])
    assert kern_log[2][2] not in texts

    context = RuleContext(options=CollectOptions(), sections={}, collected_at=COLLECTED)
    (ended,) = log_ended_early(facts, context)
    assert ended.subject == {"path": "/work/bench.log", "event": "oom_kill", "gap_s": 2}
    assert "1 s before" in ended.title or "2 s before" in ended.title
    assert ended.evidence[-1].section == "kernel_log" and ended.evidence[-1].first_line == 4


def test_a_big_log_or_a_live_writer_did_not_end_early() -> None:
    facts = _facts()
    assert facts.logs is not None
    facts.logs.focus_processes[0].state = "S"
    context = RuleContext(options=CollectOptions(), sections={}, collected_at=COLLECTED)
    assert log_ended_early(facts, context) == []
    facts.logs.focus_processes[0].state = "Z"
    (ended,) = log_ended_early(facts, context)
    assert ended.subject["path"] == "/work/bench.log"


def test_the_timeline_is_in_every_report_format() -> None:
    events = build_timeline(_facts(), COLLECTED)
    report = HostReport(
        tool_version="0", target=Target(name="gpu-a"), status=CollectStatus.ok,
        started=COLLECTED, finished=COLLECTED, facts=_facts(), timeline=events,
    )  # fmt: skip
    markdown = render_host(report, Format.md)
    assert "## Timeline" in markdown
    assert "~2026-11-29 08:01:40 UTC | focus process cuzk (pid 4242) started" in markdown
    assert markdown.index("08:01:42 UTC | last write to /work/bench.log") > markdown.index(
        "08:01:40 UTC | focus process"
    )
    text = render_host(report, Format.text)
    assert "~2026-11-29 08:01:40  focus process cuzk (pid 4242) started" in text
    assert '"timeline"' in render_host(report, Format.json)
