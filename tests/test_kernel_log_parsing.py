"""The kernel log parsers on samples of every kernel generation (tests/samples/kernel)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from forensics.kernel.faults import find_faults
from forensics.kernel.hung_tasks import find_hung_tasks
from forensics.kernel.lines import Clock, read_lines
from forensics.kernel.machine_checks import find_machine_checks
from forensics.kernel.oom_report import OomKill, find_oom_kills
from forensics.kernel.xid import find_xids
from tests.kernel_corpus import CORPUS
from tests.kernel_samples import parse_section, sample, section_text

NO_CLOCK = Clock()


def kills(name: str, clock: Clock = NO_CLOCK) -> list[OomKill]:
    return find_oom_kills(read_lines(sample(name), 1, clock), "kernel_log").kills


def test_4_14_global_oom_kills_the_child_of_the_scored_process() -> None:
    [kill] = kills("oom-4.14-global.dmesg")
    assert (kill.pid, kill.name, kill.scope) == (23077, "java", "system")
    assert (kill.scored_pid, kill.scored_name, kill.score) == (23051, "java", 912)
    assert (kill.anon_rss_kb, kill.file_rss_kb, kill.shmem_rss_kb) == (14120188, 2024, 0)
    assert kill.invoked_by == "java" and kill.order == 0 and kill.reaped
    assert kill.monotonic_s == pytest.approx(9836.059115)
    lines = [ref.first_line for ref in kill.evidence]
    assert lines == [4, 5, 34, 35, 36]  # header, cpuset, scored, killed, reaper


def test_4_19_memcg_oom_takes_the_cgroups_from_the_task_in_line() -> None:
    [kill] = kills("oom-4.19-memcg-v1.dmesg")
    docker = "/docker/9f3c2b7d81e4a0c5d1b6f2e3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3"
    assert (kill.pid, kill.name, kill.scope) == (4410, "node", "memory_cgroup")
    assert kill.task_memcg == docker and kill.oom_memcg == docker
    assert (kill.memcg_usage_kb, kill.memcg_limit_kb) == (524288, 524288)
    assert kill.scored_pid == 4410 and kill.reaped


def test_5_4_global_oom_reads_the_oom_kill_line_with_a_node_list_and_global_oom() -> None:
    [kill] = kills("oom-5.4-global.dmesg")
    assert (kill.pid, kill.name, kill.scope, kill.constraint) == (
        48213,
        "pt_main_thread",
        "system",
        "CONSTRAINT_NONE",
    )
    assert kill.oom_memcg is None
    assert kill.task_memcg is not None and kill.task_memcg.startswith("/system.slice/docker-5b1e")
    assert (kill.uid, kill.pgtables_kb, kill.oom_score_adj) == (0, 131200, 0)
    assert kill.rss_kb == 61022840 + 80344 + 12288
    assert kill.monotonic_s == pytest.approx(180042.118798)


def test_5_10_oom_storm_counts_every_killed_line_despite_suppressed_headers() -> None:
    scan = find_oom_kills(read_lines(sample("oom-5.10-storm.dmesg"), 1, NO_CLOCK), "k")
    assert [k.pid for k in scan.kills] == [9101, 9107, 9113]
    assert all(k.scope == "memory_cgroup" for k in scan.kills)
    assert scan.kills[0].task_memcg == "/docker/4c5d6e7f8a9b"
    assert scan.kills[1].invoked_by is None and scan.kills[1].task_memcg is None
    assert scan.callbacks_suppressed == 43
    assert [ref.first_line for ref in scan.suppressed_evidence] == [16]


def test_5_15_memcg_v2_oom_names_the_ancestor_whose_limit_was_hit() -> None:
    [kill] = kills("oom-5.15-memcg-v2.dmesg")
    pod = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1c2d3e4f.slice"
    assert (kill.pid, kill.name, kill.scope) == (461998, "pt_main_thread", "memory_cgroup")
    assert kill.oom_memcg == pod
    assert kill.task_memcg == pod + "/cri-containerd-71d0a9b8c7d6e5f4.scope"
    assert kill.memcg_limit_kb == 33554432 and kill.oom_score_adj == 937
    assert kill.invoked_by == "torchrun"


def test_continuation_lines_of_a_multi_line_record_take_its_time() -> None:
    lines = read_lines(sample("oom-5.15-memcg-v2.dmesg"), 1, NO_CLOCK)
    file_line = next(line for line in lines if line.message == "file 122880")
    assert not file_line.stamped and file_line.monotonic_s == pytest.approx(7311.402630)


def test_6_12_journal_global_oom_with_uid_in_the_cpu_line() -> None:
    boot = datetime(2026, 3, 1, tzinfo=UTC)
    [kill] = kills("oom-6.12-global.journal", Clock(boot_time=boot))
    assert (kill.pid, kill.name, kill.scope, kill.uid) == (391822, "llama-server", "system", 1001)
    assert kill.task_memcg == "/user.slice/user-1001.slice/session-7.scope"
    assert kill.time == boot + timedelta(seconds=4021.552918)


def test_6_18_captured_memcg_oom_with_a_parenthesis_in_the_name() -> None:
    [kill] = kills("oom-6.18-memcg-v1.dmesg")
    assert (kill.pid, kill.name, kill.scope) == (26249, "oom hog)x", "memory_cgroup")
    assert kill.task_memcg == kill.oom_memcg == "/forensics-try-13726"
    assert kill.memcg_limit_kb == 65536 and kill.pgtables_kb == 208


def test_3_10_messages_kill_without_shmem() -> None:
    clock = Clock(
        boot_time=datetime(2026, 12, 11, 10, 40, tzinfo=UTC),
        uptime_s=3600,
        utc_offset=timedelta(0),
    )
    [kill] = kills("oom-3.10-global.messages", clock)
    assert (kill.pid, kill.name, kill.scope, kill.scored_pid) == (2592, "thrash", "system", 2592)
    assert kill.shmem_rss_kb is None and kill.rss_kb == 3922848 + 1192
    assert kill.time == datetime(2026, 12, 11, 10, 48, 9, tzinfo=UTC)


def test_kern_log_kill_of_an_earlier_boot_is_marked_and_early_5_4_pgtables_fixed() -> None:
    clock = Clock(
        boot_time=datetime(2026, 5, 15, 23, 0, tzinfo=UTC),
        uptime_s=7200,
        utc_offset=timedelta(0),
    )
    earlier, current = kills("oom-5.4-memcg.kern.log", clock)
    assert (earlier.pid, earlier.previous_boot, earlier.monotonic_s) == (1870, True, None)
    assert (current.pid, current.previous_boot, current.scope) == (8821, False, "memory_cgroup")
    assert current.pgtables_kb == 1240  # printed in bytes with a kB suffix
    assert current.memcg_limit_kb == 1048576 and current.task_memcg == "/docker/3c9e2a1b"


def test_user_faults_hung_tasks_and_machine_checks() -> None:
    lines = read_lines(sample("events-6.x.dmesg"), 1, NO_CLOCK)
    faults = find_faults(lines, "k")
    assert [(f.kind, f.signal, f.pid, f.name, f.where) for f in faults] == [
        ("segfault", "SIGSEGV", 48213, "python3", "libc.so.6"),
        ("general protection fault", "SIGSEGV", 40771, "ray::IDLE", "libcuda.so.550.90.07"),
        ("divide error", "SIGFPE", 40810, "worker", "worker"),
    ]
    assert faults[0].address == "0" and faults[0].error == 4
    [hung] = find_hung_tasks(lines, "k")
    assert (hung.name, hung.pid, hung.blocked_s, hung.evidence.first_line) == (
        "nccl-proxy",
        30412,
        122,
        9,
    )
    checks = find_machine_checks(lines, "k")
    assert [c.uncorrected for c in checks] == [None, False, False, True]


def test_xid_lines_in_every_driver_variant() -> None:
    xids = find_xids(read_lines(sample("events-6.x.dmesg"), 1, NO_CLOCK), "k")
    assert [(x.code, x.bus_id, x.pid, x.process) for x in xids] == [
        (31, "00000000:3B:00.0", 40112, "python3"),
        (45, "00000000:3B:00.0", 40112, "python3"),
        (94, "00000000:41:00.0", 8231, "vllm"),
        (63, "00000000:1C:00.0", 2206, None),
        (79, "00000000:B1:00.0", None, None),
        (79, "00000000:B1:00.0", None, None),
    ]
    assert xids[0].gpu_uuid == "GPU-5a1c0e7e-2f44-9d1b-77ab-0c93e1d2a4f0"
    assert xids[4].gpu_uuid == "GPU-0d3b9a61-7c2e-4f10-8e55-1b2c3d4e5f60"
    assert xids[2].gpu_instance == 3 and xids[2].detail.startswith("Contained: CE User")
    assert xids[1].detail == "Ch 00000018 caused by previous Xid 31"
    old, app = find_xids(read_lines(sample("old-driver-xid.dmesg"), 1, NO_CLOCK), "k")
    assert (old.code, old.pci, old.pid, old.detail) == (
        31,
        "0000:02:00",
        None,
        "Ch 0000000c, engmask 00000101, intr 10000000",
    )
    assert app.code == 13 and app.meaning.severity.value == "warning"


def test_section_reaches_boot_when_it_starts_with_the_boot_lines() -> None:
    facts = parse_section(section_text(sample("no-oom-6.1.dmesg")))
    assert facts.readable and facts.reaches_boot is True and facts.oom_kills == []
    assert facts.earliest_evidence is not None and facts.earliest_evidence.first_line == 11


def test_section_of_a_wrapped_ring_buffer_does_not_reach_boot() -> None:
    facts = parse_section(section_text(sample("wrapped-5.15.dmesg")))
    assert facts.reaches_boot is False
    assert facts.earliest_monotonic_s == pytest.approx(86012.301002)
    assert facts.earliest_time == datetime.fromtimestamp(1764441600 + 86012.301002, UTC)


def test_section_that_no_source_answered_says_why_each_failed() -> None:
    text = (
        "dmesg_restrict 1\nbtime 1764441600\nuptime 5.0\nutc_offset +0000\n"
        "tried dmesg 1 dmesg: read kernel buffer failed: Operation not permitted\n"
        "tried journalctl 0 No journal files were found.\n"
        "tried /var/log/kern.log 127 absent\nsource none\n"
    )
    facts = parse_section(text)
    assert not facts.readable and facts.dmesg_restrict == 1
    assert facts.unavailable == (
        "dmesg: read kernel buffer failed: Operation not permitted; "
        "journalctl: No journal files were found.; /var/log/kern.log: absent"
    )
    assert [a.evidence.first_line for a in facts.attempts] == [5, 6, 7]


def test_filtered_section_reports_its_cap() -> None:
    facts = parse_section(
        section_text(sample("oom-5.10-storm.dmesg"), header="filtered 3000000 1048576")
    )
    assert facts.filtered and facts.dropped_old_matches
    assert (facts.filtered_bytes, facts.cap_bytes) == (3000000, 1048576)
    assert len(facts.oom_kills) == 3


def test_a_log_file_whose_every_line_predates_boot_does_not_reach_boot() -> None:
    log = (CORPUS / "oom-5.4-kern-log-all-before-boot.log").read_text()
    facts = parse_section(section_text(log, "/var/log/kern.log"))
    assert facts.only_earlier_boots is True and facts.reaches_boot is False
    assert [(k.pid, k.previous_boot) for k in facts.oom_kills] == [(66120, True)]


def test_previous_boot_lines_are_marked_and_keep_their_own_zone() -> None:
    log = (
        "[    0.000000] Linux version 6.8.0\n"
        "=== previous boot ===\n"
        "2025-11-29T18:58:02.331201+01:00 gpu-b kernel: Out of memory: Killed process 20411 "
        "(vllm) total-vm:1kB, anon-rss:1kB, file-rss:0kB, shmem-rss:0kB, UID:998 pgtables:1kB "
        "oom_score_adj:0\n"
    )
    facts = parse_section(section_text(log))
    assert facts.reaches_boot is True
    [kill] = facts.oom_kills
    assert kill.previous_boot and kill.monotonic_s is None
    assert kill.time == datetime(2025, 11, 29, 17, 58, 2, 331201, tzinfo=UTC)
