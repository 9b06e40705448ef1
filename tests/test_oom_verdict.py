"""The OOM verdict on facts parsed from real-shaped sections: confirmed, ruled out only when
truly ruled out, inconclusive with the right reason otherwise."""

from __future__ import annotations

from datetime import UTC, datetime

from forensics.core.facts import Facts
from forensics.core.models import CollectOptions, EvidenceRef, Finding, Severity
from forensics.core.probe import RuleContext
from forensics.judge.rules import gpu_errors, oom
from forensics.probes import kernel_log_rules
from forensics.probes.cgroup import CgroupCounters, CgroupFacts
from forensics.probes.system import SystemFacts
from tests.kernel_samples import parse_section, sample, section_text
from tests.process_section import HostProcess
from tests.process_section import parse_text as parse_processes
from tests.process_section import section_text as process_table

INIT = HostProcess(pid=1, name="tini", argv=["tini", "--", "run.sh"], start_ticks=100)
# A zombie daemon that started 25 h after boot, after the wrapped buffer's first line.
LATE_DAEMON = HostProcess(pid=4242, name="cuzk", state="Z", start_ticks=90_000_00)
KILL_LINE = (
    "[{at:>12.6f}] Memory cgroup out of memory: Killed process {pid} ({name}) total-vm:120kB, "
    "anon-rss:64kB, file-rss:4kB, shmem-rss:0kB, UID:0 pgtables:8kB oom_score_adj:0\n"
)

RESTRICTED = (
    "dmesg_restrict 1\nbtime 1764441600\nuptime 5000.0\nutc_offset +0000\n"
    "tried dmesg 1 dmesg: read kernel buffer failed: Operation not permitted\n"
    "tried journalctl 127 not installed\ntried /var/log/kern.log 127 absent\nsource none\n"
)


def counters(vmstat: int | None = 0, root: int | None = 0) -> CgroupFacts:
    ref = EvidenceRef(section="cgroup", first_line=5, last_line=5, excerpt="oom_kill")
    groups = []
    if root is not None:
        groups.append(
            CgroupCounters(
                path="/sys/fs/cgroup/memory",
                cgroup="/",
                version=1,
                roles=["root", "pid1"],
                oom_kill=root,
                oom_kill_evidence=ref,
            )
        )
    return CgroupFacts(
        layout="v1",
        cgroups=groups,
        vmstat_oom_kill=vmstat,
        vmstat_evidence=ref if vmstat is not None else None,
    )


def verdict(
    section: str,
    cgroup: CgroupFacts | None,
    focus: str | None = None,
    container: bool = False,
    processes: list[HostProcess] | None = None,
) -> list[Finding]:
    """The verdict on ``section``; ``processes`` is the table the processes probe read
    (boot at BTIME, like the section; ``start_ticks`` are hundredths of a second)."""
    facts = Facts(
        kernel_log=parse_section(section),
        cgroup=cgroup,
        system=SystemFacts(container="docker" if container else None),
        processes=parse_processes(process_table([INIT, *processes]), focus=focus)
        if processes is not None
        else None,
    )
    context = RuleContext(
        options=CollectOptions(focus=focus), sections={}, collected_at=datetime.now(UTC)
    )
    return oom.oom_verdict(facts, context)


def only(findings: list[Finding], finding_id: str) -> Finding:
    [finding] = [f for f in findings if f.id == finding_id]
    return finding


def test_unreadable_log_with_counted_kills_is_inconclusive_victims_unknown() -> None:
    findings = verdict(RESTRICTED, counters(vmstat=3), focus="cuzk", container=True)
    assert [f.id for f in findings] == ["oom.inconclusive"]
    finding = findings[0]
    assert finding.severity is Severity.warning
    assert finding.subject["reasons"] == ["log_unreadable", "kills_unexplained"]
    assert "Operation not permitted" in finding.explanation
    assert "inside this docker container" in finding.explanation
    assert "counted 3 OOM kills" in finding.explanation
    assert any("dmesg_restrict=0" in step for step in finding.next_steps)
    assert any("provider" in step for step in finding.next_steps)
    assert [e.first_line for e in finding.evidence][:3] == [5, 6, 7]


def test_unreadable_log_with_zero_counters_is_still_inconclusive() -> None:
    finding = only(verdict(RESTRICTED, counters()), "oom.inconclusive")
    assert finding.subject["reasons"] == ["log_unreadable"]
    assert "read zero" in finding.explanation


def test_kernel_log_section_that_timed_out_empty_is_inconclusive() -> None:
    facts = Facts(kernel_log=parse_section("", timed_out=True), cgroup=counters())
    context = RuleContext(options=CollectOptions(), sections={}, collected_at=datetime.now(UTC))
    [finding] = oom.oom_verdict(facts, context)
    assert finding.id == "oom.inconclusive"
    assert "was not collected (section kernel_log was stopped by its per-section timeout)" in (
        finding.explanation
    )


def test_wrapped_ring_buffer_is_inconclusive() -> None:
    finding = only(
        verdict(section_text(sample("wrapped-5.15.dmesg")), counters()), "oom.inconclusive"
    )
    assert finding.subject["reasons"] == ["buffer_wrapped"]
    assert "has wrapped" in finding.explanation and "2025-11-30" in finding.explanation
    assert finding.evidence[0].first_line == 11


def test_log_from_boot_without_kills_and_zero_counters_rules_it_out() -> None:
    findings = verdict(section_text(sample("no-oom-6.1.dmesg")), counters(), focus="cuzk")
    assert [f.id for f in findings] == ["oom.ruled_out"]
    finding = findings[0]
    assert finding.severity is Severity.info
    assert "matching 'cuzk'" in finding.title
    assert "/proc/vmstat oom_kill (the whole kernel, since boot) = 0" in finding.explanation
    assert [e.section for e in finding.evidence] == ["kernel_log", "cgroup", "cgroup"]


def test_no_ruling_out_without_any_counter_to_cross_check() -> None:
    finding = only(verdict(section_text(sample("no-oom-6.1.dmesg")), None), "oom.inconclusive")
    assert finding.subject["reasons"] == ["counters_unreadable"]
    assert "cgroup probe did not run" in finding.explanation


def test_counter_above_the_log_count_is_inconclusive() -> None:
    section = section_text(sample("no-oom-6.1.dmesg"))
    finding = only(verdict(section, counters(vmstat=2)), "oom.inconclusive")
    assert finding.subject["reasons"] == ["kills_unexplained"]
    assert "counted 2 OOM kills, but the kernel log shows 0" in finding.explanation


def test_kill_of_another_process_is_context_and_the_focus_is_ruled_out() -> None:
    section = section_text(sample("oom-5.4-global.dmesg"))
    findings = verdict(section, counters(vmstat=1), focus="^cuzk$")
    assert [(f.id, f.severity) for f in findings] == [
        ("oom.killed", Severity.warning),
        ("oom.ruled_out", Severity.info),
    ]
    assert "not the process in question" in findings[0].explanation
    assert "1 OOM kills of other processes (pt_main_thread)" in findings[1].explanation


def test_kill_of_the_focus_process_is_confirmed_with_no_other_verdict() -> None:
    section = section_text(sample("oom-5.15-memcg-v2.dmesg"))
    findings = verdict(section, counters(vmstat=1), focus="pt_main", container=True)
    assert [f.id for f in findings] == ["oom.killed"]
    finding = findings[0]
    assert finding.severity is Severity.critical
    assert finding.subject["pid"] == 461998 and finding.subject["scope"] == "memory_cgroup"
    assert "kubepods-burstable-pod1c2d3e4f.slice hit its limit of 32.0 GiB" in finding.title
    assert "host PIDs" in finding.explanation
    assert finding.evidence[-1].excerpt.endswith("oom_score_adj:937")


def test_pre_5_1_kill_names_the_scored_parent_and_the_killed_child() -> None:
    finding = only(verdict(section_text(sample("oom-4.14-global.dmesg")), counters()), "oom.killed")
    assert finding.subject["pid"] == 23077
    assert "scored java (pid 23051) worst and killed its child java (pid 23077)" in (
        finding.explanation
    )
    assert "the machine ran out of memory" in finding.title


def test_storm_of_victims_is_listed_one_by_one_up_to_a_limit() -> None:
    line = (
        "[  {n}.5] Memory cgroup out of memory: Killed process {pid} (worker) total-vm:10kB, "
        "anon-rss:5kB, file-rss:1kB, shmem-rss:0kB, UID:0 pgtables:4kB oom_score_adj:0\n"
    )
    log = "[    0.000000] Linux version 6.1.0\n" + "".join(
        line.format(n=100 + n, pid=5000 + n) for n in range(25)
    )
    findings = verdict(section_text(log), counters(vmstat=25))
    killed = [f for f in findings if f.id == "oom.killed"]
    assert len(killed) == 21
    assert killed[-1].subject["more_victims"] == 5
    assert all(f.severity is Severity.critical for f in killed)


def test_dropped_matches_of_a_huge_log_prevent_ruling_out() -> None:
    section = section_text(sample("no-oom-6.1.dmesg"), header="filtered 3000000 1048576")
    finding = only(verdict(section, counters()), "oom.inconclusive")
    assert finding.subject["reasons"] == ["matches_dropped"]


def test_kernel_events_become_one_finding_per_process_and_kind() -> None:
    facts = Facts(kernel_log=parse_section(section_text(sample("events-6.x.dmesg"))))
    context = RuleContext(options=CollectOptions(), sections={}, collected_at=datetime.now(UTC))
    findings = kernel_log_rules.rules(facts.kernel_log, context)
    summary = [(f.id, f.severity.value) for f in findings]
    assert summary == [
        ("kernel.segfault", "warning"),
        ("kernel.segfault", "warning"),
        ("kernel.trap", "warning"),
        ("kernel.hung_task", "warning"),
        ("kernel.machine_check", "critical"),
    ]
    assert "user-mode read of an unmapped address" in findings[0].explanation


def test_xids_become_one_gpu_xid_finding_per_gpu_and_code() -> None:
    facts = Facts(kernel_log=parse_section(section_text(sample("events-6.x.dmesg"))))
    context = RuleContext(options=CollectOptions(), sections={}, collected_at=datetime.now(UTC))
    findings = gpu_errors.gpu_errors(facts, context)
    summary = [(f.id, f.severity.value, f.subject["code"]) for f in findings]
    assert summary == [
        ("gpu.xid", "warning", 31),
        ("gpu.xid", "warning", 45),
        ("gpu.xid", "warning", 94),
        ("gpu.xid", "warning", 63),
        ("gpu.xid", "critical", 79),
    ]
    fallen = findings[4]
    assert fallen.subject["count"] == 2 and len(fallen.evidence) == 2
    assert fallen.subject["gpu_uuid"] == "GPU-0d3b9a61-7c2e-4f10-8e55-1b2c3d4e5f60"
    assert (
        fallen.title == "GPU 00000000:B1:00.0 reported Xid 79 2 times: GPU has fallen off the bus"
    )
    assert "python3 (pid 40112)" in findings[0].explanation


def test_a_log_that_reaches_the_focus_process_start_rules_out_since_that_start() -> None:
    """The ring buffer wrapped (first line 86012 s after boot), but the focus zombie started
    at 90000 s: every kill since it started is in the log. The two kills /proc/vmstat
    counted are older than the log, so older than the process."""
    findings = verdict(
        section_text(sample("wrapped-5.15.dmesg")),
        counters(vmstat=2),
        focus="^cuzk$",
        processes=[LATE_DAEMON],
    )
    finding = only(findings, "oom.ruled_out")
    assert finding.title == (
        "Not OOM-killed: no process matching '^cuzk$' was OOM-killed since cuzk (pid 4242) "
        "started at 2025-11-30 19:40:00 UTC"
    )
    assert finding.subject["since_pid"] == 4242
    assert finding.subject["since"] == "2025-11-30T19:40:00+00:00"
    assert "does not reach back to boot: its first line is from 2025-11-30 18:33:32 UTC" in (
        finding.explanation
    )
    assert "before its first line, so before pid 4242 started" in finding.explanation
    assert "An earlier run of it, before 2025-11-30 18:33:32 UTC, is not covered" in (
        finding.explanation
    )
    assert finding.evidence[0].excerpt.startswith("[86012.301002]")


def test_a_focus_process_older_than_the_log_leaves_it_inconclusive() -> None:
    early = HostProcess(pid=4242, name="cuzk", state="Z", start_ticks=1000_00)
    findings = verdict(
        section_text(sample("wrapped-5.15.dmesg")), counters(), focus="^cuzk$", processes=[early]
    )
    assert only(findings, "oom.inconclusive").subject["reasons"] == ["buffer_wrapped"]
    no_table = verdict(section_text(sample("wrapped-5.15.dmesg")), counters(), focus="^cuzk$")
    assert only(no_table, "oom.inconclusive").subject["reasons"] == ["buffer_wrapped"]


def test_a_victim_that_is_the_focus_zombie_itself_is_matched_by_pid_and_start() -> None:
    daemon = HostProcess(pid=4242, name="cuzk", state="Z", start_ticks=600_00)
    log = "[    0.000000] Linux version 6.1.0\n" + "".join(
        KILL_LINE.format(at=at, pid=pid, name="cuzk") for at, pid in ((300.5, 3900), (900.5, 4242))
    )
    findings = verdict(section_text(log), counters(vmstat=2), focus="^cuzk$", processes=[daemon])
    earlier, itself = sorted(findings, key=lambda f: f.subject["pid"])
    assert (itself.subject["matched_by"], itself.severity) == ("pid", Severity.critical)
    assert "It is the --focus process of the process table itself: pid 4242, a zombie now" in (
        itself.explanation
    )
    assert (earlier.subject["matched_by"], earlier.severity) == ("name", Severity.critical)
    assert "process table itself" not in earlier.explanation


def test_a_name_the_kernel_cut_to_15_characters_matches_the_program_of_the_focus() -> None:
    """The kernel logged 'cuzk-prover-wor'; the supervisor restarted the program, and the
    pattern matches the new run's program name."""
    restarted = HostProcess(
        pid=5000, name="cuzk-prover-wor", start_ticks=950_00,
        argv=["/opt/cuzk/cuzk-prover-worker", "--gpu", "0"],
    )  # fmt: skip
    log = "[    0.000000] Linux version 6.1.0\n" + KILL_LINE.format(
        at=900.5, pid=4242, name="cuzk-prover-wor"
    )
    focus = "cuzk-prover-worker"
    findings = verdict(section_text(log), counters(vmstat=1), focus=focus, processes=[restarted])
    (killed,) = findings
    assert (killed.id, killed.severity) == ("oom.killed", Severity.critical)
    assert killed.subject["matched_by"] == "program"
    assert "cuzk-prover-wor is how it names /opt/cuzk/cuzk-prover-worker" in killed.explanation
    # Without the process table the cut name does not match: context, and the focus is
    # ruled out. An interpreter's name says nothing about its script.
    alone = verdict(section_text(log), counters(vmstat=1), focus=focus)
    assert only(alone, "oom.killed").severity is Severity.warning
    script = HostProcess(pid=5000, name="python3", argv=["python3", "train.py"])
    python_log = "[    0.000000] Linux version 6.1.0\n" + KILL_LINE.format(
        at=900.5, pid=4242, name="python3"
    )
    other = verdict(section_text(python_log), counters(vmstat=1), focus="train", processes=[script])
    assert only(other, "oom.killed").severity is Severity.warning


def test_a_reused_pid_is_not_the_focus_process() -> None:
    """The victim had pid 4242 before the focus process (started later) got that pid; in
    a container the table's PIDs are not the kernel's, so no PID decides there either."""
    daemon = HostProcess(pid=4242, name="cuzk", state="Z", start_ticks=950_00)
    log = "[    0.000000] Linux version 6.1.0\n" + KILL_LINE.format(
        at=900.5, pid=4242, name="python3"
    )
    for start, container in ((950_00, False), (600_00, True)):
        daemon.start_ticks = start
        findings = verdict(
            section_text(log), counters(vmstat=1), focus="^cuzk$", processes=[daemon],
            container=container,
        )  # fmt: skip
        killed = only(findings, "oom.killed")
        assert killed.severity is Severity.warning and killed.subject["matched_by"] is None
