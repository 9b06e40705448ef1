"""The two process snapshots around the rest of the host script: the first opens it
(section ``processes``), the second closes it (``processes_again``) after only what is left
of the gap. The same host state reads to the same findings in either shape, so bundles
written before the split (one section) judge as they did."""

from __future__ import annotations

import hashlib
import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from forensics.core.models import CollectOptions, Finding, Manifest, SectionResult, Target
from forensics.core.probe import RuleContext
from forensics.probes import PROBES
from forensics.probes.processes import AGAIN, SECTION, ProcessesFacts, sections
from forensics.probes.processes_rules import rules as processes_rules
from forensics.remote import bundle
from forensics.remote.host_script import compose
from tests.conftest import run_cli
from tests.process_section import HostProcess, parse_split, parse_text, section_text, split

SAMPLE = Path(__file__).parent / "samples" / "processes-pidns-zombies.txt"
INIT = HostProcess(pid=1, name="tini", ppid=0, argv=["/tini", "--", "run.sh"])
PARENT = HostProcess(pid=10, name="bash", argv=["bash", "run.sh"], wchan="do_wait")
ZOMBIE = HostProcess(pid=11, name="job", state="Z", ppid=10)
ORPHAN = HostProcess(pid=13, name="job", state="Z", ppid=1)
STUCK = HostProcess(pid=12, name="dd", state="D", wchan="nfs_wait")


def judged(facts: ProcessesFacts) -> list[Finding]:
    context = RuleContext(options=CollectOptions(), sections={}, collected_at=datetime.now(UTC))
    return processes_rules(facts, context)


def without_places(findings: list[Finding]) -> list[tuple[Any, ...]]:
    """What a finding says, less where its evidence sits (its section and line differ)."""
    return [
        (f.id, f.severity, f.title, f.explanation, json.dumps(f.subject, default=str))
        for f in findings
    ]


def cited_lines(text: str, finding: Finding, section: str) -> list[str]:
    lines = text.split("\n")
    return [lines[ref.first_line - 1] for ref in finding.evidence if ref.section == section]


def test_a_default_collection_opens_and_closes_with_the_process_snapshots() -> None:
    specs = [spec for probe in PROBES for spec in probe.sections(CollectOptions())]
    names = [spec.name for spec in compose(specs).sections]
    assert names[0] == SECTION and names[-1] == AGAIN
    assert len(names) > 3, "other probes run between the snapshots"


def test_asked_alone_the_probe_keeps_both_snapshots_in_one_section(tmp_path: Path) -> None:
    specs = sections(CollectOptions(probes=("processes",), snapshot_gap=2))
    assert [(spec.name, spec.place) for spec in specs] == [(SECTION, "in_order")]
    collected = run_cli(
        "collect", "local", "--probe", "processes", "--snapshot-gap", "0.3", "--out",
        str(tmp_path), "--format", "json", "--fail-on", "never",
    )  # fmt: skip
    assert collected.exit_code == 0, collected.stderr
    report = json.loads(collected.stdout)
    assert [section["name"] for section in report["sections"]] == [SECTION]
    facts = report["facts"]["processes"]
    assert facts["second_snapshot_section"] == SECTION
    assert _cs(facts["second_snapshot_uptime_s"] - facts["first_snapshot_uptime_s"]) >= 30
    assert any(p["second_state"] for p in facts["processes"])


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ([INIT, PARENT, ZOMBIE], [INIT, PARENT, ZOMBIE]),
        ([INIT, PARENT, ZOMBIE], [INIT, PARENT]),
        ([INIT, ORPHAN], [INIT]),
        ([INIT, STUCK], [INIT, STUCK]),
    ],
    ids=["zombie-persists", "zombie-reaped", "orphan-reaped", "stuck-in-d"],
)
def test_one_section_or_two_the_findings_are_the_same(
    first: list[HostProcess], second: list[HostProcess]
) -> None:
    text = section_text(first, second)
    one = parse_text(text)
    two = parse_split(*split(text))
    assert (one.second_snapshot_section, two.second_snapshot_section) == (SECTION, AGAIN)
    assert without_places(judged(one)) == without_places(judged(two))
    assert one.gap_s == two.gap_s == 2.0


def test_the_real_capture_split_in_two_reads_to_the_same_findings() -> None:
    text = SAMPLE.read_bytes().decode("utf-8", "replace")
    first, again = split(text)
    one, two = parse_text(text), parse_split(first, again)
    found = judged(two)
    assert without_places(judged(one)) == without_places(found)
    assert [p.model_dump(exclude={"raw_lines"}) for p in one.processes] == [
        p.model_dump(exclude={"raw_lines"}) for p in two.processes
    ]
    # Each cited stat line is the one it names, in the section that holds it.
    reaping = next(f for f in found if f.id == "process.parent_not_reaping")
    assert [line.split(" ")[:3] for line in cited_lines(again, reaping, AGAIN)] == [
        ["6", "(sleep)", "Z"],
        ["3", "(sleep)", "S"],
    ]
    assert [line.split(" ")[:3] for line in cited_lines(first, reaping, SECTION)] == [
        ["6", "(sleep)", "Z"],
        ["3", "(sleep)", "S"],
        ["hrtimer_nanosleep"],
    ]


def test_without_the_second_section_persistence_is_unknown() -> None:
    first, again = split(section_text([INIT, PARENT, ZOMBIE], [INIT, PARENT, ZOMBIE]))
    for facts in (
        parse_split(first, None),
        parse_split(first, again[: again.index("end")], timed_out=True),
    ):
        assert facts.second_snapshot_uptime_s is None and facts.gap_s is None
        zombie = next(f for f in judged(facts) if f.id == "process.zombie")
        assert zombie.subject["persisted"] is None
        assert "process.parent_not_reaping" not in {f.id for f in judged(facts)}


def test_the_second_section_cannot_add_to_the_first_snapshot() -> None:
    first, again = split(section_text([INIT, PARENT], [INIT, PARENT]))
    forged = again.replace(
        "snapshot 2 ",
        "snapshot 1 1.00\nthreads\ntasks 10 2\nthread 10 99 D x forged\nlinks\n"
        "lrwxrwxrwx 1 0 0 0 Nov 29 21:49 /proc/10/exe -> /forged\nsnapshot 2 ",
        1,
    )
    facts = parse_split(first, forged)
    parent = facts.by_pid(10)
    assert parent is not None
    assert (parent.thread_states, parent.exe, parent.task_count) == ([], None, None)
    assert facts.first_snapshot_uptime_s == 8400.0 and facts.gap_s == 2.0


def test_a_bundle_from_before_the_split_analyzes_as_it_did(tmp_path: Path) -> None:
    text = SAMPLE.read_bytes()
    gap = 0.5
    result = SectionResult(
        name=SECTION,
        command="(the one processes section of before the split)",
        exit_status=0,
        duration_s=gap,
        bytes=len(text),
        truncated=False,
        timed_out=False,
        finished=True,
        sha256=hashlib.sha256(text).hexdigest(),
    )
    manifest = Manifest(
        tool_version="0.1.0",
        target=Target(name="old-host", host="10.0.0.7"),
        user="root",
        port=22,
        host_key=None,
        started=datetime(2026, 11, 29, 21, 49, tzinfo=UTC),
        finished=datetime(2026, 11, 29, 21, 49, 3, tzinfo=UTC),
        status="ok",
        options=CollectOptions(snapshot_gap=gap),
        nonce="0" * 32,
        script_sha256="0" * 64,
        script="(the script of before the split)",
        sections=[result],
    )
    path = bundle.write(tmp_path, manifest, {SECTION: bundle.RawSection(text, b"")}, b"")
    analyzed = run_cli("analyze", str(path), "--format", "json", "--fail-on", "never")
    assert analyzed.exit_code == 0, analyzed.stderr
    report = json.loads(analyzed.stdout)
    expected = without_places(judged(parse_text(text.decode("utf-8", "replace"))))
    ids = {said[0] for said in expected}
    assert {"process.zombie", "process.parent_not_reaping"} <= ids
    got = [Finding.model_validate(f) for f in report["findings"] if f["id"] in ids]
    assert sorted(without_places(got)) == sorted(expected)
    assert {ref["section"] for f in report["findings"] for ref in f["evidence"]} == {SECTION}
    assert report["facts"]["processes"]["second_snapshot_section"] == SECTION


def test_the_gap_is_never_shorter_than_asked_and_overlaps_the_other_sections(
    tmp_path: Path,
) -> None:
    collected = run_cli(
        "collect", "local", "--out", str(tmp_path), "--format", "json", "--fail-on", "never",
        "--snapshot-gap", "1.5",
    )  # fmt: skip
    assert collected.exit_code == 0, collected.stderr
    report = json.loads(collected.stdout)
    facts = report["facts"]["processes"]
    ran = [section["name"] for section in report["sections"]]
    assert ran[0] == SECTION and ran[-1] == AGAIN
    gap = facts["second_snapshot_uptime_s"] - facts["first_snapshot_uptime_s"]
    between = sum(s["duration_s"] for s in report["sections"] if s["name"] not in (AGAIN,))
    again = next(s for s in report["sections"] if s["name"] == AGAIN)
    assert _cs(gap) >= 150
    # The second section slept what the others had not used of the gap, not all of it.
    assert again["duration_s"] <= 1.5 - between + 0.3, (again, between)
    assert facts["second_snapshot_section"] == AGAIN


def test_the_host_shell_sleeps_only_what_is_left_of_the_gap(tmp_path: Path) -> None:
    gap = 1.0
    again = next(s for s in sections(CollectOptions(snapshot_gap=gap)) if s.name == AGAIN)
    now = float(Path("/proc/uptime").read_text().split()[0])
    first = round(now - 0.8, 2)  # the other sections took 0.8 s of the gap
    (tmp_path / ".t").write_text(f"{first:.2f}\n")
    (tmp_path / ".s").write_text("0b8e61d2-5a1f-4c3e\n")
    ran = subprocess.run(
        ["/bin/sh", "-c", again.shell], cwd=tmp_path, capture_output=True, text=True, timeout=30
    )
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.split("\n")
    assert lines[0] == "nonce 0b8e61d2-5a1f-4c3e" and lines[-2] == "end"
    second = float(lines[1].removeprefix("snapshot 2 "))
    assert _cs(second - first) >= _cs(gap), "never shorter than asked"
    assert second - now < 0.9, "what the other sections used is not slept again"


def _cs(seconds: float) -> int:
    """A difference of two uptime readings in hundredths: both are exact to the hundredth,
    their float difference is not (17952.18 - 17951.58 < 0.6)."""
    return round(seconds * 100)


def run_again(tmp_path: Path, gap: float, first: str | None) -> tuple[float, float]:
    """Run the second snapshot's shell after a first taken at uptime ``first`` (None: no
    first); the uptime before it ran and the one it recorded."""
    again = next(s for s in sections(CollectOptions(snapshot_gap=gap)) if s.name == AGAIN)
    if first is not None:
        (tmp_path / ".t").write_text(f"{first}\n")
    (tmp_path / ".s").write_text("0b8e61d2-5a1f-4c3e\n")
    now = float(Path("/proc/uptime").read_text().split()[0])
    ran = subprocess.run(
        ["/bin/sh", "-c", again.shell], cwd=tmp_path, capture_output=True, text=True, timeout=30
    )
    assert ran.returncode == 0 and not ran.stderr, ran.stderr
    lines = ran.stdout.split("\n")
    assert lines[0] == "nonce 0b8e61d2-5a1f-4c3e" and lines[-2] == "end"
    return now, float(lines[1].removeprefix("snapshot 2 "))


def test_with_no_first_reading_the_whole_gap_is_slept(tmp_path: Path) -> None:
    now, second = run_again(tmp_path, 0.6, None)
    assert _cs(second - now) >= 60


@pytest.mark.parametrize("fraction", ["08", "09", "00", "5"])
def test_an_uptime_long_past_needs_no_sleep_whatever_its_digits(
    tmp_path: Path, fraction: str
) -> None:
    start = int(float(Path("/proc/uptime").read_text().split()[0])) - 5
    now, second = run_again(tmp_path, 1.0, f"{start}.{fraction}")
    assert second - now < 0.9
