"""The memory probe (/proc/meminfo, PSI, swap) and the thresholds that shape its findings."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.core.models import CollectOptions
from forensics.core.pressure import parse_pressure
from forensics.core.probe import Captured, RuleContext
from forensics.probes import memory, memory_rules
from tests.conftest import run_cli

SAMPLES = Path(__file__).parent / "samples" / "memory"


def test_captured_meminfo_reads_in_bytes_and_hugepages_as_counts() -> None:
    text = (SAMPLES / "debian12-6.18.txt").read_text()
    facts = memory.parse({"memory": Captured.complete("memory", text)}, CollectOptions())
    assert facts.total_bytes == 24684084 * 1024
    assert facts.huge_pages_total == 0
    assert facts.huge_page_size_bytes == 2048 * 1024
    assert facts.pressure is not None and facts.pressure.full is not None
    assert facts.swap_devices == 0
    line = text.splitlines()[facts.evidence["MemAvailable"].first_line - 1]
    assert line.startswith("MemAvailable:")


def test_host_without_psi_says_why() -> None:
    text = "==> /proc/meminfo <==\nMemTotal: 1000 kB\nMemAvailable: 10 kB\n"
    facts = memory.parse({"memory": Captured.complete("memory", text)}, CollectOptions())
    assert facts.pressure is None
    assert facts.pressure_unavailable is not None and "psi=0" in facts.pressure_unavailable
    assert facts.used_bytes == 990 * 1024


def test_collect_local_reads_this_machine_and_thresholds_change_the_verdict(
    tmp_path: Path,
) -> None:
    default = run_cli("collect", "--probe", "memory", "--out", str(tmp_path), "-f", "json")
    strict = run_cli(
        "collect", "--probe", "memory", "--out", str(tmp_path), "-f", "json",
        "--threshold", "available_warning_percent=100", "--threshold", "locked_percent=0.001",
        "--fail-on", "never",
    )  # fmt: skip
    assert default.exit_code == 0 and strict.exit_code == 0, strict.stderr
    total_kb = int(Path("/proc/meminfo").read_text().split()[1])
    report = json.loads(default.stdout)
    assert report["facts"]["memory"]["total_bytes"] == total_kb * 1024
    ids = {f["id"] for f in report["findings"]}
    assert "memory.available_low" not in ids
    strict_ids = {f["id"]: f["severity"] for f in json.loads(strict.stdout)["findings"]}
    assert strict_ids["memory.available_low"] == "warning"
    assert strict_ids["memory.locked_large"] == "info"


def test_a_bad_threshold_is_one_line_and_exit_2(tmp_path: Path) -> None:
    for value in ("near=85", "near_limit_warning_percent", "near_limit_warning_percent=lots"):
        result = run_cli("collect", "--threshold", value, "--out", str(tmp_path))
        assert result.exit_code == 2, result
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
        assert result.stderr.startswith("forensics: --threshold")


MEMORY_LINES = st.sampled_from(
    [
        "==> /proc/meminfo <==", "==> /proc/pressure/memory <==", "==> /proc/swaps <==",
        "MemTotal: 12 kB", "MemAvailable: ² kB", "HugePages_Total: 9", "Mlocked:",
        "some avg10=1 avg60=2 avg300=3 total=x", "full avg10=inf avg60=1 avg300=1 total=1",
    ]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(MEMORY_LINES, st.text(max_size=30)), max_size=30))
def test_parsers_and_rules_never_raise(lines: list[str]) -> None:
    text = "\n".join(lines)
    options = CollectOptions()
    facts = memory.parse({"memory": Captured.complete("memory", text)}, options)
    parse_pressure(text)
    context = RuleContext(options=options, sections={}, collected_at=datetime.now(UTC))
    for finding in memory_rules.rules(facts, context):
        assert finding.evidence, finding.id
