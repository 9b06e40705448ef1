"""The cgroup probe and the headroom findings: a real v1 memory cgroup on this machine,
collected through the real sshd, and scenario hosts for the layouts it cannot produce."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.collect import collect as collect_host
from forensics.core.models import CollectOptions
from forensics.core.probe import Captured, RuleContext
from forensics.core.targets import parse_target
from forensics.probes import cgroup, cgroup_rules
from tests.cgroup_scenario import Holder, memory_cgroup, scenario_command, v1_memory_writable
from tests.cgroup_scenario import write_tree as write_files
from tests.conftest import run_cli
from tests.sshd import SshServer

GIB = 1 << 30
MIB = 1 << 20
SAMPLES = Path(__file__).parent / "samples" / "cgroup"
needs_v1 = pytest.mark.skipif(not v1_memory_writable(), reason="no writable v1 memory cgroup")


def collect(server: SshServer, out: Path, *extra: str) -> dict[str, Any]:
    result = run_cli(
        "collect", *server.target_args(), "--out", str(out), "--format", "json",
        "--fail-on", "never", *extra,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    assert_evidence_is_in_the_bundle(report)
    return report


def assert_evidence_is_in_the_bundle(report: dict[str, Any]) -> None:
    """Every evidence line range names the raw lines its excerpt quotes (an excerpt with
    " ..." quotes the start of its line, and may say which snapshot it is: the processes
    probe cites a stat line that way, and any zombie on this machine brings one)."""
    for finding in report["findings"]:
        for evidence in finding["evidence"]:
            raw = Path(report["bundle"], "raw", f"{evidence['section']}.txt").read_text()
            lines = raw.split("\n")[evidence["first_line"] - 1 : evidence["last_line"]]
            quoted = evidence["excerpt"].split(" ...", 1)[0]
            assert "\n".join(lines).startswith(quoted), (finding["id"], evidence)


def findings(report: dict[str, Any], finding_id: str) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["id"] == finding_id]


def counters(report: dict[str, Any], path: str, version: int) -> dict[str, Any]:
    found = [
        c for c in report["facts"]["cgroup"]["cgroups"]
        if c["cgroup"] == path and c["version"] == version
    ]  # fmt: skip
    assert len(found) == 1, [c["cgroup"] for c in report["facts"]["cgroup"]["cgroups"]]
    return found[0]


def test_this_machine_is_hybrid_by_its_files_and_the_mount_table_agrees(
    sshd: SshServer, tmp_path: Path
) -> None:
    facts = collect(sshd, tmp_path, "--probe", "cgroup")["facts"]["cgroup"]
    assert facts["layout"] == "hybrid"
    assert facts["memory_controller"] == "v1"
    assert facts["mount_layout"] == "hybrid"
    assert facts["layout_disagreements"] == []
    mine = Path(f"/proc/{os.getpid()}/cgroup").read_text()
    session = next(line.split(":", 2)[2] for line in mine.splitlines() if ":memory:" in line)
    looked = [c for c in facts["cgroups"] if "self" in c["roles"]]
    assert [c["cgroup"] for c in looked] == [session]
    ancestors = {c["cgroup"] for c in facts["cgroups"] if c["roles"] == ["ancestor"]}
    parent = session.rsplit("/", 1)[0]
    assert parent in ancestors or parent == ""


@needs_v1
def test_real_cgroup_near_its_limit_is_reported_with_its_figures(
    sshd: SshServer, tmp_path: Path
) -> None:
    marker = f"fx-holder-{os.getpid()}"
    with memory_cgroup("forensics-test", limit_bytes=512 * MIB) as path:
        holder = Holder(path, marker)
        try:
            holder.ask("fill 0.93")
            report = collect(sshd, tmp_path / "a", "--focus", f"fx-hold[e]r-{os.getpid()}")
            measured = _working_set(path)
            holder.ask("fill 0.98")
            worse = collect(sshd, tmp_path / "b", "--focus", f"fx-hold[e]r-{os.getpid()}")
        finally:
            holder.stop()
    name = f"/{path.name}"
    facts = report["facts"]["cgroup"]
    assert [(p["pid"], p["cgroup_v1"]) for p in facts["focus_processes"]] == [(holder.pid, name)]
    [near] = findings(report, "cgroup.memory_near_limit")
    subject = near["subject"]
    assert subject["cgroup"] == name
    assert subject["limit_set_by"] == name
    assert subject["limit_gib"] == 0.5
    assert abs(subject["working_set_gib"] * GIB - measured) < 8 * MIB
    assert 90 <= subject["percent"] < 97
    assert near["severity"] == "warning"
    assert f"focus process {holder.pid}" in near["explanation"]
    assert "of its 0.50 GiB limit" in near["title"]
    [critical] = findings(worse, "cgroup.memory_near_limit")
    assert critical["severity"] == "critical"
    assert critical["subject"]["percent"] >= 97


def _working_set(path: Path) -> int:
    stat = dict(line.split() for line in (path / "memory.stat").read_text().splitlines())
    return int((path / "memory.usage_in_bytes").read_text()) - int(stat["total_inactive_file"])


def _stat(**values: float) -> str:
    return "".join(f"{key} {int(value * GIB)}\n" for key, value in values.items())


# From a real 6.x memcg OOM report's memory.stat block (in kernel order).
V2_STAT_KEYS = (
    "anon file kernel kernel_stack pagetables sec_pagetables percpu sock vmalloc shmem "
    "zswap zswapped file_mapped file_dirty file_writeback swapcached anon_thp file_thp "
    "shmem_thp inactive_anon active_anon inactive_file active_file unevictable "
    "slab_reclaimable slab_unreclaimable slab workingset_refault_anon "
    "workingset_refault_file pgscan pgsteal pgfault pgmajfault"
)


def _v2_stat(**values: float) -> str:
    """memory.stat with the keys, in the order, of a real 6.x kernel; figures in GiB."""
    keys = V2_STAT_KEYS.split()
    return _stat(**{key: values.get(key, 0) for key in keys})


PSI_HIGH = (
    "some avg10=42.10 avg60=20.00 avg300=5.00 total=99000000\n"
    "full avg10=12.50 avg60=4.00 avg300=1.00 total=31000000\n"
)
MEMINFO_AFTER_KILL = (
    "MemTotal:       1584842752 kB\nMemFree:        20971520 kB\n"
    "MemAvailable:   62914560 kB\nBuffers:          102400 kB\nCached:          3145728 kB\n"
    "Shmem:           2097152 kB\nUnevictable:   419430400 kB\nMlocked:       419430400 kB\n"
    "SwapTotal:             0 kB\nSwapFree:              0 kB\nAnonHugePages:         0 kB\n"
    "HugePages_Total:       0\nHugePages_Free:        0\nHugePages_Rsvd:        0\n"
    "HugePages_Surp:        0\nHugepagesize:       2048 kB\n"
)


def test_v2_host_whose_limit_sits_on_an_ancestor(
    make_sshd: type[SshServer], tmp_path: Path
) -> None:
    ctr = "kubepods.slice/pod-a.slice/ctr.scope"
    tree = write_files(
        tmp_path / "cgroup",
        {
            "cgroup.controllers": "cpuset cpu io memory hugetlb pids rdma misc\n",
            "memory.stat": _v2_stat(anon=1, kernel=0.5),
            "memory.pressure": "some avg10=0.00 avg60=0.00 avg300=0.00 total=1\n"
            "full avg10=0.00 avg60=0.00 avg300=0.00 total=1\n",
            "kubepods.slice/cgroup.controllers": "memory pids\n",
            "kubepods.slice/memory.max": f"{400 * GIB}\n",
            "kubepods.slice/memory.high": "max\n",
            "kubepods.slice/memory.current": f"{393 * GIB}\n",
            "kubepods.slice/memory.peak": f"{399 * GIB}\n",
            "kubepods.slice/memory.events": "low 0\nhigh 0\nmax 812\noom 0\noom_kill 0\n",
            "kubepods.slice/memory.stat": _v2_stat(
                anon=384,
                file=3,
                kernel=6.3,
                pagetables=3.1,
                kernel_stack=0.05,
                slab_reclaimable=0.4,
                slab_unreclaimable=0.7,
                inactive_file=1,
            ),
            "kubepods.slice/pod-a.slice/cgroup.controllers": "memory pids\n",
            "kubepods.slice/pod-a.slice/memory.max": "max\n",
            "kubepods.slice/pod-a.slice/memory.current": f"{390 * GIB}\n",
            f"{ctr}/cgroup.controllers": "\n",
            f"{ctr}/memory.max": "max\n",
            f"{ctr}/memory.high": "max\n",
            f"{ctr}/memory.current": f"{389 * GIB}\n",
            f"{ctr}/memory.events": "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n",
            f"{ctr}/memory.stat": _v2_stat(
                anon=380,
                file=2.5,
                kernel=6.2,
                pagetables=3.1,
                kernel_stack=0.05,
                percpu=0.01,
                sock=0.02,
                vmalloc=0.04,
                slab_reclaimable=0.4,
                slab_unreclaimable=0.6,
                inactive_file=0.9,
            ),
            f"{ctr}/memory.pressure": PSI_HIGH,
        },
    )
    proc = write_files(
        tmp_path / "proc",
        {
            "pid1-cgroup": f"0::/{ctr}\n",
            "focus-cgroup": f"0::/{ctr}\n",
            "meminfo": MEMINFO_AFTER_KILL,
            "pressure-memory": "some avg10=31.50 avg60=12.02 avg300=3.10 total=98811234\n"
            "full avg10=8.25 avg60=2.00 avg300=0.51 total=21000000\n",
        },
    )
    marker = f"fx-v2focus-{os.getpid()}"
    focus = subprocess.Popen([marker, "60"], executable="/bin/sleep")
    try:
        server = make_sshd(
            force_command=scenario_command(
                tmp_path / "scenario",
                {
                    "/sys/fs/cgroup": tree,
                    "/proc/1/cgroup": proc / "pid1-cgroup",
                    f"/proc/{focus.pid}/cgroup": proc / "focus-cgroup",
                    "/proc/meminfo": proc / "meminfo",
                    "/proc/pressure/memory": proc / "pressure-memory",
                },
            )
        )
        report = collect(server, tmp_path / "out", "--focus", f"fx-v2focu[s]-{os.getpid()}")
    finally:
        focus.kill()
        focus.wait()
    facts = report["facts"]["cgroup"]
    assert (facts["layout"], facts["memory_controller"]) == ("v2", "v2")
    assert facts["v2_controllers"][:4] == ["cpuset", "cpu", "io", "memory"]
    assert any("mount table says hybrid" in d for d in facts["layout_disagreements"])
    assert any("/proc/self/cgroup puts memory on v1" in d for d in facts["layout_disagreements"])
    leaf = counters(report, f"/{ctr}", 2)
    assert sorted(leaf["roles"]) == ["focus", "pid1"]
    assert leaf["effective_limit_bytes"] == 400 * GIB
    assert leaf["effective_limit_cgroup"] == "/kubepods.slice"
    assert leaf["missing_files"] == [
        "memory.events.local", "memory.peak", "memory.swap.current", "memory.swap.max"
    ]  # fmt: skip
    assert counters(report, "/kubepods.slice/pod-a.slice", 2)["roles"] == ["ancestor"]

    [near] = findings(report, "cgroup.memory_near_limit")
    assert near["severity"] == "critical"
    assert near["subject"]["cgroup"] == "/kubepods.slice"
    assert (near["subject"]["limit_gib"], near["subject"]["working_set_gib"]) == (400.0, 392.0)
    assert near["subject"]["percent"] == 98.0
    assert "PID 1" in near["explanation"]
    assert f"focus process {focus.pid} (sleep)" in near["explanation"]
    [kernel] = findings(report, "cgroup.kernel_memory_high")
    assert kernel["severity"] == "warning"
    assert kernel["subject"]["cgroup"] == "/kubepods.slice"
    assert list(kernel["subject"]["parts_gib"])[:2] == ["pagetables", "other_kernel"]
    assert "6.30 GiB" in kernel["title"] and "pagetables 3.10 GiB" in kernel["title"]

    pressure = {
        f["subject"]["scope"]: f["severity"] for f in findings(report, "memory.pressure_high")
    }
    assert pressure == {"the host": "warning", f"/{ctr}": "warning"}
    [available] = findings(report, "memory.available_low")
    assert available["severity"] == "critical"
    assert available["subject"]["available_gib"] == 60.0
    [locked] = findings(report, "memory.locked_large")
    assert locked["severity"] == "warning"
    assert "400.0 GiB" in locked["title"]


def test_hybrid_container_with_unlimited_sentinel_and_a_limit_above_its_view(
    make_sshd: type[SshServer], tmp_path: Path
) -> None:
    tree = write_files(
        tmp_path / "cgroup",
        {
            "unified/cgroup.controllers": "",
            "memory/memory.limit_in_bytes": "9223372036854771712\n",
            "memory/memory.usage_in_bytes": f"{int(15.9 * GIB)}\n",
            "memory/memory.failcnt": "0\n",
            "memory/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n",
            "memory/memory.stat": "cache 214748364\nrss 16858000000\n"
            "hierarchical_memory_limit 17179869184\n"
            "hierarchical_memsw_limit 9223372036854771712\n"
            f"total_cache 214748364\ntotal_rss 16858000000\ntotal_inactive_file {int(0.2 * GIB)}\n",
        },
    )
    pid1 = write_files(tmp_path / "proc", {"cgroup": "12:memory:/docker/3f2a\n0::/\n"})
    server = make_sshd(
        force_command=scenario_command(
            tmp_path / "scenario", {"/sys/fs/cgroup": tree, "/proc/1/cgroup": pid1 / "cgroup"}
        )
    )
    report = collect(server, tmp_path / "out", "--probe", "cgroup")
    facts = report["facts"]["cgroup"]
    assert (facts["layout"], facts["memory_controller"]) == ("hybrid", "v1")
    root = counters(report, "/", 1)
    assert (root["unlimited"], root["limit_bytes"]) == (True, None)
    assert root["effective_limit_bytes"] == 16 * GIB
    assert root["effective_limit_cgroup"] is None
    assert root["missing_files"] == ["memory.max_usage_in_bytes", "memory.kmem.usage_in_bytes"]
    assert any(note.startswith("pid1 cgroup v1 /docker/3f2a") for note in facts["not_visible"])
    [near] = findings(report, "cgroup.memory_near_limit")
    assert near["severity"] == "critical"
    assert near["subject"]["limit_set_by"] == "an ancestor outside this view"
    assert near["subject"]["percent"] == pytest.approx(100 * 15.7 / 16, abs=0.1)
    assert "hierarchical_memory_limit" in near["explanation"]


def test_a_regex_grep_refuses_is_refused_by_the_cli_and_reported_by_the_host(
    tmp_path: Path,
) -> None:
    result = run_cli(
        "collect", "--probe", "cgroup", "--focus", "[[:foo:]]", "--out", str(tmp_path),
        "--format", "json",
    )  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "[:foo:] is not a character class" in result.stderr
    # Options from elsewhere (an older bundle, the API) reach grep: its refusal is a fact.
    options = CollectOptions(probes=("cgroup",), focus="[[:foo:]]", timeout=30)
    report = collect_host(parse_target("local"), options, tmp_path)
    facts = report.facts.cgroup
    assert facts is not None and facts.focus_error and "grep" in facts.focus_error
    assert facts.focus_processes == []


def test_focus_matching_everything_is_capped(tmp_path: Path) -> None:
    # A container may hold only a handful of processes: start more than the cap ourselves.
    sleepers = [subprocess.Popen(["sleep", "60"]) for _ in range(cgroup.FOCUS_PIDS_MAX + 2)]
    try:
        result = run_cli(
            "collect", "--probe", "cgroup", "--focus", ".", "--out", str(tmp_path),
            "--format", "json",
        )  # fmt: skip
    finally:
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()
    facts = json.loads(result.stdout)["facts"]["cgroup"]
    assert len(facts["focus_processes"]) == cgroup.FOCUS_PIDS_MAX
    assert facts["focus_more"] is True


def test_captured_hybrid_section_parses_to_the_files_it_holds() -> None:
    text = (SAMPLES / "hybrid-debian12-6.18.txt").read_text()
    facts = cgroup.parse({"cgroup": Captured.complete("cgroup", text)}, CollectOptions())
    assert facts.layout == "hybrid"
    root = facts.cgroups[0]
    assert (root.cgroup, root.roles[0], root.unlimited) == ("/", "root", True)
    assert root.stat["total_inactive_file"] == root.inactive_file_bytes
    usage = root.evidence["usage"]
    assert usage.excerpt == f"==> {cgroup.V1_ROOT}/memory.usage_in_bytes <==\n{root.usage_bytes}"
    assert text.split("\n")[usage.first_line - 1 : usage.last_line] == usage.excerpt.split("\n")
    assert facts.vmstat_oom_kill is not None


LINES = st.sampled_from(
    [
        "want 1 root /", "want 2 self /a", "want 1 focus /a b", "dir 1 /", "dir 2 /a",
        "dir 1 /a b", "pid1 v1 /", "self v2 /a", "focus 12 v1 /a", "focus_name 12 x",
        "focus_more", "focus_error grep: bad", "vmstat_oom_kill 3", "vmstat_oom_kill ²",
        "mount / /sys/fs/cgroup cgroup2 cgroup2 rw", "mount x", "==> /sys/fs/cgroup/memory.max <==",
        "==> /sys/fs/cgroup/memory/memory.stat <==", "==> /sys/fs/cgroup/a/memory.pressure <==",
        "max", "9223372036854771712", "-5", "inactive_file 9", "total_inactive_file x",
        "kernel 10", "pagetables 99999999999", "some avg10=nan avg60=1 avg300=1 total=1",
        "full avg10=1.0 avg60=1 avg300=1 total=1", "oom_kill 1", "0", "", "\x00",
        "hierarchical_memory_limit 0", "==> /sys/fs/cgroup/memory/memory.usage_in_bytes <==",
    ]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(LINES, st.text(max_size=40)), max_size=40))
def test_parser_and_rules_never_raise_on_any_section(lines: list[str]) -> None:
    options = CollectOptions(focus="x")
    facts = cgroup.parse({"cgroup": Captured.complete("cgroup", "\n".join(lines))}, options)
    facts.counted_oom_kills()
    context = RuleContext(options=options, sections={}, collected_at=datetime.now(UTC))
    for finding in cgroup_rules.rules(facts, context):
        assert finding.evidence, finding.id
