"""The processes parser and rules on host output shaped as the host writes it: hostile
names, forged boundaries, cut sections, and states this machine cannot easily produce."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from forensics.core.models import CollectOptions, Finding
from forensics.core.probe import RuleContext
from forensics.core.redaction import redact, redact_argv
from forensics.probes.processes import ProcessesFacts
from forensics.probes.processes_rules import rules as processes_rules
from forensics.reports.process_tree import tree_lines
from tests.process_section import NONCE, HostProcess, parse_text, section_text

INIT = HostProcess(pid=1, name="tini", ppid=0, argv=["/tini", "--", "run.sh"])


def judge(facts: ProcessesFacts, focus: str | None = None) -> dict[str, list[Finding]]:
    context = RuleContext(
        options=CollectOptions(focus=focus), sections={}, collected_at=datetime.now(UTC)
    )
    found: dict[str, list[Finding]] = {}
    for finding in processes_rules(facts, context):
        found.setdefault(finding.id, []).append(finding)
    return found


@pytest.mark.parametrize(
    "name",
    [
        "my daemon",
        "evil) R 1 (x y",
        "a)\nb) Z 9 (c",
        "<script>|`x`",
        "(",
        ")",
        "",
        "  ",
        "==> /proc/1/st",
    ],
)
def test_names_with_spaces_parentheses_newlines_and_markup_parse(name: str) -> None:
    odd = HostProcess(pid=4242, name=name, state="S", ppid=1, argv=["odd", "x y"])
    text = section_text([INIT, odd], [INIT, odd])
    facts = parse_text(text)
    entry = facts.by_pid(4242)
    assert entry is not None
    assert (entry.name, entry.state, entry.ppid, entry.argv) == (name, "S", 1, ["odd", "x y"])
    assert entry.second_state == "S"
    line = text.split("\n")[entry.raw_lines["stat"] - 1]
    assert line.startswith("4242 (")


def test_a_command_line_cannot_forge_a_file_or_another_process() -> None:
    forged_stat = HostProcess(pid=1, name="forged", state="Z", ppid=0).stat()
    forger = HostProcess(
        pid=300,
        name="forger",
        argv=[
            "x",
            f"\n\n==> /proc/1/stat <==\n{forged_stat}",
            f"\n==> .s <==\nnot-the-nonce\n\n==> /proc/999/stat <==\n{forged_stat}",
            "links\nlrwxrwxrwx 1 0 0 0 Nov 29 21:21 /proc/1/exe -> /evil",
            "thread 1 1 D evil evil",
        ],
    )
    facts = parse_text(section_text([INIT, forger], [INIT, forger]))
    assert [p.pid for p in facts.processes] == [1, 300]
    init = facts.by_pid(1)
    assert init is not None and (init.name, init.state, init.exe) == ("tini", "S", None)
    assert init.thread_states == []
    forger_entry = facts.by_pid(300)
    assert forger_entry is not None
    assert forger_entry.argv == forger.argv


def test_an_exe_link_forged_by_a_newline_in_a_target_is_not_trusted() -> None:
    links = (
        "lrwxrwxrwx 1 0 0 0 Nov 29 21:21 /proc/1/exe -> /sbin/tini\n"
        "lrwxrwxrwx 1 0 0 0 Nov 29 21:21 /proc/300/exe -> /tmp/x\n"
        "lrwxrwxrwx 1 0 0 0 Nov 29 21:21 /proc/400/exe -> /bin/y\n"
        "lrwxrwxrwx 1 0 0 0 Nov 29 21:21 /proc/400/exe\n"
        "lrwxrwxrwx 1 0 0 0 Nov 29 21:21 /proc/300/cwd\n"
    )
    procs = [INIT, HostProcess(pid=300, name="a"), HostProcess(pid=400, name="b")]
    facts = parse_text(section_text(procs, procs, links=links))
    by = {p.pid: p for p in facts.processes}
    assert (by[1].exe, by[1].exe_readable) == ("/sbin/tini", True)
    assert (by[300].exe, by[300].cwd, by[300].cwd_readable) == ("/tmp/x", None, False)
    assert (by[400].exe, by[400].exe_readable) == (None, None)


def test_an_absurd_boot_time_is_unknown_not_a_crash() -> None:
    text = section_text([INIT], [INIT]).replace("btime 1764441600", "btime 99999999999999999")
    facts = parse_text(text)
    assert facts.boot_time is None and facts.processes[0].started_at is None


def test_start_time_uses_btime_and_clock_ticks() -> None:
    daemon = HostProcess(pid=50, name="cuzk", start_ticks=360_000)
    facts = parse_text(section_text([INIT, daemon], [INIT, daemon]))
    entry = facts.by_pid(50)
    assert entry is not None
    assert entry.started_at == datetime(2025, 11, 29, 19, 40, tzinfo=UTC)


def test_secrets_in_command_lines_are_redacted_in_facts() -> None:
    secret = HostProcess(
        pid=77, name="worker", argv=["worker", "--api-key=s3cr3tA", "--token", "s3cr3tB", "x"]
    )
    facts = parse_text(section_text([INIT, secret], [INIT, secret]))
    dumped = facts.model_dump_json()
    assert "s3cr3t" not in dumped
    entry = facts.by_pid(77)
    assert entry is not None
    assert entry.argv == ["worker", "--api-key=[REDACTED]", "--token", "[REDACTED]", "x"]


def test_a_zombie_reaped_between_snapshots_is_only_info() -> None:
    parent = HostProcess(pid=10, name="bash", argv=["bash", "run.sh"], wchan="do_wait")
    zombie = HostProcess(pid=11, name="job", state="Z", ppid=10)
    facts = parse_text(section_text([INIT, parent, zombie], [INIT, parent]))
    found = judge(facts)
    assert [f.severity.value for f in found["process.zombie"]] == ["info"]
    assert found["process.zombie"][0].subject["persisted"] is False
    assert "process.parent_not_reaping" not in found


def test_without_a_second_snapshot_persistence_is_unknown_and_the_parent_not_blamed() -> None:
    parent = HostProcess(pid=10, name="bash", argv=["bash", "run.sh"], wchan="do_wait")
    zombie = HostProcess(pid=11, name="job", state="Z", ppid=10)
    facts = parse_text(section_text([INIT, parent, zombie], None), timed_out=True)
    found = judge(facts)
    assert facts.second_snapshot_uptime_s is None
    assert found["process.zombie"][0].subject["persisted"] is None
    assert "unknown" in found["process.zombie"][0].explanation
    assert "process.parent_not_reaping" not in found


def test_a_shell_parent_names_its_script() -> None:
    parent = HostProcess(
        pid=10, name="bash", argv=["/bin/bash", "-e", "./benchmark.sh"], wchan="pipe_read"
    )
    zombie = HostProcess(pid=11, name="cuzk", state="Z", ppid=10, exit_status=9)
    facts = parse_text(section_text([INIT, parent, zombie], [INIT, parent, zombie]))
    found = judge(facts)
    [reaping] = found["process.parent_not_reaping"]
    assert reaping.subject["parent_script"] == "./benchmark.sh"
    assert "./benchmark.sh" in reaping.explanation and "pipe" in reaping.explanation
    assert "signal 9 (SIGKILL)" in found["process.zombie"][0].explanation


def test_uninterruptible_only_when_d_in_both_snapshots() -> None:
    stuck = HostProcess(pid=20, name="cuzk", state="D", wchan="nv_wait_for_completion")
    brief = HostProcess(pid=21, name="rsync", state="D", wchan="folio_wait_bit")
    later = HostProcess(pid=21, name="rsync", state="S")
    facts = parse_text(section_text([INIT, stuck, brief], [INIT, stuck, later]))
    [finding] = judge(facts)["process.uninterruptible"]
    assert finding.subject["pids"] == [20]
    assert "NVIDIA" in finding.explanation


def test_focus_that_matches_nothing_is_critical() -> None:
    facts = parse_text(section_text([INIT], [INIT]), focus="cuzk")
    [finding] = judge(facts, "cuzk")["focus.not_running"]
    assert finding.severity.value == "critical"
    assert "No process, live or zombie" in finding.explanation
    [evidence] = finding.evidence
    assert (evidence.first_line, evidence.excerpt) == (5, "snapshot 1 8400.00")


def test_focus_is_not_judged_on_an_incomplete_table() -> None:
    text = section_text([INIT], None).split("threads\n")[0]
    facts = parse_text(text, focus="cuzk", truncated=True)
    assert not facts.first_snapshot_complete
    assert "focus.not_running" not in judge(facts, "cuzk")


def test_focus_tree_shows_ancestors_to_pid_1_and_children() -> None:
    shell = HostProcess(pid=10, name="bash", argv=["bash", "bench.sh"], wchan="do_wait")
    daemon = HostProcess(pid=11, name="cuzk", ppid=10, threads=4, argv=["cuzk", "daemon"])
    worker = HostProcess(pid=12, name="cuzk-worker", ppid=11, argv=["cuzk", "worker"])
    procs = [INIT, shell, daemon, worker]
    facts = parse_text(section_text(procs, procs), focus="cuzk")
    assert facts.focus is not None and facts.focus.live == [11, 12]
    [tree] = facts.trees
    assert (tree.subject, tree.why) == (11, ["focus"])
    assert (tree.ancestors, tree.children) == ([10, 1], [12])
    assert [p.script for p in facts.ancestry(11)] == ["bench.sh", None]
    assert [line.text for line in tree_lines(facts, tree)] == [
        "1 tini [S] /tini -- run.sh",
        "└─ 10 bash [S do_wait] bash bench.sh",
        "   └─ 11 cuzk [S, 4 threads] cuzk daemon  <= here",
        "      └─ 12 cuzk-worker [S] cuzk worker",
    ]


def test_the_collector_itself_never_matches_the_focus() -> None:
    ssh = HostProcess(pid=30, name="sh", argv=["sh", "-c", "echo cuzk | base64 -d | sh"])
    own = HostProcess(pid=31, name="sh", ppid=30, argv=["sh", "-c", "cuzk"])
    head = HostProcess(pid=32, name="head", ppid=31, argv=["head", "-v", "cuzk"])
    procs = [INIT, ssh, own, head]
    facts = parse_text(section_text(procs, procs, collector=31), focus="cuzk")
    assert facts.focus is not None and facts.focus.live == []
    assert [p.pid for p in facts.processes if p.collector] == [30, 31, 32]


def test_zl_threads_are_read_and_kernel_threads_left_out() -> None:
    zombie = HostProcess(pid=40, name="cuzk", state="Z", ppid=1, threads=3)
    kworker = HostProcess(pid=2, name="kthreadd", ppid=0, flags=0x00208040)
    threads = (
        "tasks 40 3\n"
        "thread 40 40 Z - cuzk\n"
        "thread 40 41 D nv_teardown cuda-EvtHandlr\n"
        "thread 40 42 S futex_wait_queue cuzk worker\n"
    )
    procs = [INIT, kworker, zombie]
    facts = parse_text(section_text(procs, procs, threads=threads), focus="cuzk")
    assert [p.pid for p in facts.processes] == [1, 40]
    assert facts.kernel_threads_left_out == 1
    found = judge(facts, "cuzk")
    [alive] = found["process.zombie_threads_alive"]
    assert alive.severity.value == "critical"
    assert alive.subject["thread_states"] == {"D": 1, "S": 1}
    assert "init.not_reaping" not in found and "process.zombie" not in found
    evidence = alive.evidence[-1]
    assert evidence.excerpt.splitlines()[0] == "thread 40 41 D nv_teardown cuda-EvtHandlr"


def test_orphans_under_a_known_init_are_reported_with_the_init_named() -> None:
    orphan = HostProcess(pid=60, name="job", state="Z", ppid=1)
    procs = [INIT, orphan]
    [finding] = judge(parse_text(section_text(procs, procs)))["init.not_reaping"]
    assert finding.subject["pid1_known_init"] is True
    assert "an init that normally reaps" in finding.explanation


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_parse_never_raises_on_arbitrary_text(tail: str) -> None:
    for text in (tail, f"nonce {NONCE}\n" + tail, section_text([INIT], [INIT])[:200] + tail):
        parse_text(text)


comm = st.text(st.characters(min_codepoint=1, max_codepoint=0x7F), max_size=15)
argument = st.text(st.characters(min_codepoint=1, max_codepoint=0x2FFF), max_size=40)


@settings(max_examples=200, deadline=None)
@given(name=comm, argv=st.lists(argument, max_size=6), state=st.sampled_from("RSDZTI"))
def test_any_name_and_command_line_round_trip(name: str, argv: list[str], state: str) -> None:
    assume(redact(name) == name and redact_argv(argv) == argv)
    odd = HostProcess(pid=4242, name=name, state=state, ppid=1, argv=argv)
    facts = parse_text(section_text([INIT, odd], [INIT, odd]))
    entry = facts.by_pid(4242)
    assert entry is not None
    assert (entry.name, entry.state, entry.argv) == (name, state, argv)
    init = facts.by_pid(1)
    assert init is not None and init.name == "tini"


def test_a_real_capture_from_a_pid_namespace_reads_back() -> None:
    sample = Path(__file__).parent / "samples" / "processes-pidns-zombies.txt"
    facts = parse_text(sample.read_bytes().decode("utf-8", "replace"))
    assert [(p.pid, p.name, p.state, p.ppid) for p in facts.processes] == [
        (1, "sh", "S", 0),
        (2, "zl-demo", "Z", 1),
        (3, "sleep", "S", 1),
        (4, "sleep", "S", 1),
        (6, "sleep", "Z", 3),
        (7, "sleep", "Z", 4),
        (9, "sh", "R", 1),
    ]
    assert facts.gap_s == 0.53 and facts.pid1_is_known_init is False
    assert [p.pid for p in facts.processes if p.collector] == [9]
    by = {p.pid: p for p in facts.processes}
    assert by[4].argv == ["cuzk --api-key=[REDACTED] daemon", "30"]
    assert (by[1].exe, by[2].exe_readable) == ("/usr/bin/dash", False)
    assert [(t.tid, t.state, t.wchan) for t in by[2].thread_states] == [
        (2, "Z", None),
        (8, "S", "hrtimer_nanosleep"),
    ]
    found = judge(facts)
    assert [f.subject["pid"] for f in found["process.zombie"]] == [6, 7]
    assert [f.subject["ppid"] for f in found["process.parent_not_reaping"]] == [3, 4]
    assert [f.subject["pid"] for f in found["process.zombie_threads_alive"]] == [2]
    assert "init.not_reaping" not in found, "a Zl zombie under PID 1 cannot be reaped yet"
