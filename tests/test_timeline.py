"""The timeline: kernel seconds turned into UTC, every dated fact in order, in every format."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from forensics.core.facts import Facts
from forensics.core.focus import FocusProcess
from forensics.core.models import CollectOptions, CollectStatus, Target
from forensics.core.probe import RuleContext
from forensics.core.timeline_event import ENDINGS
from forensics.judge import timeline
from forensics.judge.host_report import HostReport
from forensics.judge.rules.log_end import log_ended_early
from forensics.judge.timeline import build_timeline, kernel_time_to_utc
from forensics.probes.gpu import GpuFacts, SmiRun
from forensics.probes.logs import LogFile, LogLine, LogsFacts
from forensics.probes.system import SystemFacts
from forensics.reports import Format, render_host
from tests.kernel_samples import BTIME, parse_section, sample, section_text
from tests.process_section import HostProcess
from tests.process_section import parse_text as parse_processes
from tests.process_section import section_text as section_text_of_processes

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


KERN_LOG = (
    "Nov 28 09:12:00 gpu-a kernel: [ 2210.118200] Memory cgroup out of memory: Killed process "
    "1870 (redis-server) total-vm:412004kB, anon-rss:261120kB, file-rss:3396kB, shmem-rss:0kB\n"
    "Nov 29 18:40:00 gpu-a kernel: [    0.000000] Linux version 6.8.0-45-generic\n"
    "Nov 29 18:41:43 gpu-a kernel: [  103.500000] Memory cgroup out of memory: Killed process "
    "4242 (cuzk) total-vm:1204432kB, anon-rss:1039520kB, file-rss:3396kB, shmem-rss:0kB, UID:0 "
    "pgtables:2400kB oom_score_adj:0\n"
    "Nov 30 18:33:20 gpu-a kernel: [86000.200000] python3[5150]: segfault at 0 ip "
    "00007f3a9c2b1d40 sp 00007ffd6e1c2a18 error 4 in libc.so.6[7f3a9c200000+195000]\n"
)


def test_a_kernel_event_older_than_the_wrapped_ring_buffer_lands_in_place_from_kern_log() -> None:
    """The ring buffer wrapped long ago, but kern.log kept the OOM kill 103.5 s after boot
    and one from the boot before. Each lands in time order, from the kernel's own stamp,
    marked approximate and pointing at its line; the kill right after the benchmark log's
    last write is why that log ended."""
    section = section_text(KERN_LOG, source="/var/log/kern.log")
    log = parse_section(section)
    boot = datetime.fromtimestamp(BTIME, UTC)
    written = boot + timedelta(seconds=101.5)
    facts = Facts(
        system=SystemFacts(boot_time=boot, uptime_s=200000.5),
        kernel_log=log,
        logs=LogsFacts(
            requested=True,
            files=[
                LogFile(path="/work/bench.log", sources=["glob"], raw_line=1, stat_line=2,
                        size_bytes=4089, modified=written)
            ],
        ),
    )  # fmt: skip
    events = build_timeline(facts, boot + timedelta(seconds=200000))
    assert [(e.kind, e.source) for e in events] == [
        ("oom_kill", "kernel_log"), ("boot", "system"), ("log_last_write", "logs"),
        ("oom_kill", "kernel_log"), ("segfault", "kernel_log"), ("collection", "manifest"),
    ]  # fmt: skip
    earlier, _, _, kill, segfault, _ = events
    assert earlier.text == (
        "OOM kill of redis-server (pid 1870): memory cgroup (unnamed) hit its limit "
        "(before the last boot)"
    )
    assert earlier.time == datetime(2025, 11, 28, 9, 12, tzinfo=UTC)
    assert kill.time == boot + timedelta(seconds=103.5) and kill.approximate
    assert segfault.text == "python3 (pid 5150) killed by a segfault (SIGSEGV)"
    raw = section.splitlines()
    assert kill.line is not None and "Killed process 4242 (cuzk)" in raw[kill.line - 1]

    context = RuleContext(options=CollectOptions(), sections={}, collected_at=COLLECTED)
    (ended,) = log_ended_early(facts, context)
    assert ended.subject == {"path": "/work/bench.log", "event": "oom_kill", "gap_s": 2}
    assert "2 s before this: OOM kill of cuzk (pid 4242)" in ended.title
    assert (ended.evidence[-1].section, ended.evidence[-1].first_line) == ("kernel_log", kill.line)


@pytest.mark.parametrize(("victim", "ended_by"), [(5150, "zombie"), (4242, "oom_kill")])
def test_the_end_of_another_process_does_not_end_the_zombie_writers_log(
    victim: int, ended_by: str
) -> None:
    """The focus zombie cuzk (pid 4242) wrote bench.log; an OOM kill 2 s later ended the
    log only if it killed pid 4242."""
    kill = (
        "[  104.000000] Memory cgroup out of memory: Killed process {pid} (worker) "
        "total-vm:120kB, anon-rss:64kB, file-rss:4kB, shmem-rss:0kB\n"
    )
    facts = _facts().model_copy(
        update={"kernel_log": parse_section(section_text(kill.format(pid=victim)))}
    )
    context = RuleContext(options=CollectOptions(), sections={}, collected_at=COLLECTED)
    (ended,) = log_ended_early(facts, context)
    assert ended.subject["path"] == "/work/bench.log"
    assert ended.subject.get("event", "zombie") == ended_by
    (event,) = [e for e in build_timeline(facts, COLLECTED) if e.kind == "oom_kill"]
    assert event.pid == victim


def test_kernel_events_of_every_kind_get_their_kind_and_line() -> None:
    facts = Facts(kernel_log=parse_section(section_text(sample("events-6.x.dmesg"))))
    events = timeline.kernel_events(facts)
    assert all(e.approximate and e.source == "kernel_log" for e in events)
    kinds = [e.kind for e in sorted(events, key=lambda e: e.time)]
    assert (
        kinds == ["segfault", "segfault", "trap", "hung_task"] + ["xid"] * 6 + ["machine_check"] * 4
    )
    assert {"segfault", "trap", "xid"} <= ENDINGS
    assert not {"hung_task", "machine_check"} & ENDINGS
    xid = next(e for e in events if e.text.startswith("GPU 00000000:3B:00.0 reported Xid 31"))
    assert xid.text.endswith("pid 40112 (python3)") and xid.line == 23


def test_a_storm_of_kills_keeps_the_newest_of_its_kind() -> None:
    line = "[{n:>5}.5] Memory cgroup out of memory: Killed process {pid} (worker) total-vm:10kB\n"
    log = "[    0.000000] Linux version 6.1.0\n" + "".join(
        line.format(n=100 + n, pid=5000 + n) for n in range(30)
    )
    events = timeline.kernel_events(Facts(kernel_log=parse_section(section_text(log))))
    assert len(events) == timeline.KERNEL_EVENTS_PER_KIND
    assert events[-1].text.startswith("OOM kill of worker (pid 5029)")
    assert events[0].text.startswith(f"OOM kill of worker (pid {5030 - len(events)})")


def test_process_starts_come_once_from_the_process_table() -> None:
    """The focus zombie, its parent and another zombie's parent start on the timeline; the
    logs probe saw the focus process too, but the process table owns starts."""
    init = HostProcess(pid=1, name="tini", argv=["tini", "--", "bench.sh"], start_ticks=100)
    wrapper = HostProcess(pid=300, name="bench.sh", argv=["sh", "bench.sh"], start_ticks=9000)
    daemon = HostProcess(pid=4242, name="cuzk", state="Z", ppid=300, start_ticks=10000)
    other = HostProcess(pid=4300, name="sleep", state="Z", ppid=1, start_ticks=20000)
    table = section_text_of_processes([init, wrapper, daemon, other], [init, wrapper, daemon])
    boot = datetime.fromtimestamp(BTIME, UTC)
    facts = Facts(
        processes=parse_processes(table, focus="cuzk"),
        logs=LogsFacts(
            requested=True,
            focus_processes=[
                FocusProcess(pid=4242, name="cuzk", state="Z", started=boot, raw_line=3)
            ],
        ),
    )
    starts = timeline.process_start_events(facts)
    assert sorted((e.time - boot).total_seconds() for e in starts) == [1, 90, 100, 200]
    assert sorted(e.text for e in starts) == [
        "focus process cuzk (pid 4242) started; state at collection: Z",
        "parent of zombie cuzk (pid 4242): bench.sh (pid 300) started; state at collection: S",
        "parent of zombie sleep (pid 4300): tini (pid 1) started; state at collection: S",
        "zombie sleep (pid 4300) started; state at collection: Z",
    ]
    assert all(e.approximate and e.source == "processes" and e.line for e in starts)
    assert sum("pid 4242" in e.text for e in timeline.host_events(facts)) == 2


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
