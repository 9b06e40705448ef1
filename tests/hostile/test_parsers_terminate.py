"""Parsing and judging what a host sent ends promptly whatever it sent: a real collection
whose words are swapped for hostile ones (negative, huge, non-numeric numbers; relative
paths) is analysed within a time bound, and a parser that cannot read it costs only its
probe (``collection.section_unreadable``)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forensics.core.models import CollectOptions, SectionResult
from forensics.core.probe import Captured, Captures
from forensics.judge.analysis import analyze
from forensics.probes.cgroup import parse as parse_cgroup
from forensics.remote import bundle
from tests.hostile.bounds import within

HOSTILE_WORDS = [
    "-1", "-9223372036854775809", "99999999999999999999999", "0", "nan", "inf", "1e308",
    "\u00b2", "job", "a//b", "..", "/", "", "-", "\x1b]0;x\x07", "\u202e",
]  # fmt: skip


def test_a_relative_cgroup_name_ends_the_walk_to_the_root() -> None:
    text = (
        "dir 1 job\nwant 1 self job\n"
        "==> /sys/fs/cgroup/memoryjob/memory.limit_in_bytes <==\n1073741824\n\n"
        "==> /sys/fs/cgroup/memoryjob/memory.usage_in_bytes <==\n1048576000\n"
    )
    result = SectionResult(
        name="cgroup", command="", exit_status=0, duration_s=0.1, bytes=len(text),
        truncated=False, timed_out=False, finished=True,
    )  # fmt: skip
    with within(2):
        facts = parse_cgroup({"cgroup": Captured(result=result, text=text)}, CollectOptions())
    assert [c.cgroup for c in facts.cgroups] == ["job"]


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, Captures]:
    out = tmp_path_factory.mktemp("collected")
    completed = subprocess.run(
        [
            sys.executable, "-m", "forensics", "collect", "local", "--out", str(out),
            "-f", "json", "--fail-on", "never", "--snapshot-gap", "0.2",
        ],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    return bundle.load(Path(json.loads(completed.stdout)["bundle"]))


@settings(
    max_examples=40,
    deadline=timedelta(seconds=5),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_any_words_the_host_swaps_in_are_analysed_promptly(
    collected: tuple[object, Captures], data: st.DataObject
) -> None:
    manifest, captures = collected
    mutated: dict[str, Captured] = {}
    for name, capture in captures.items():
        words = capture.text.split(" ")
        for _ in range(data.draw(st.integers(min_value=0, max_value=30), label=name)):
            if words:
                index = data.draw(st.integers(min_value=0, max_value=len(words) - 1))
                words[index] = data.draw(st.sampled_from(HOSTILE_WORDS))
        mutated[name] = Captured(result=capture.result, text=" ".join(words), stderr="")
    with within(10):
        report = analyze(manifest, mutated, bundle=None)  # type: ignore[arg-type]
    for finding in report.findings:
        if finding.id == "collection.section_unreadable":
            assert finding.subject["probe"]
