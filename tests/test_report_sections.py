"""Every probe has its section in every human format: a clean host's report shows the
memory, cgroup, disk, GPU, kernel-log, logs and scripts figures, not only the findings."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from forensics.core.facts import Facts
from forensics.core.models import Finding, Severity, Target
from forensics.judge.host_report import HostReport
from forensics.probes import PROBES
from forensics.reports import Format, render_host
from forensics.reports.topics import PARTIALS
from tests.conftest import run_cli
from tests.gpu_shim import shim_directory
from tests.rendered import (
    assert_inert_page,
    markdown_headings,
    markdown_inline_kinds,
    markdown_table,
    parse_html,
)

FORMATS = ("md", "html", "txt")


@pytest.mark.parametrize("probe", [probe.name for probe in PROBES])
def test_every_probe_has_a_section_in_every_format(probe: str) -> None:
    assert probe in Facts.model_fields, f"{probe} has no field in Facts"
    missing = [ext for ext in FORMATS if not (PARTIALS / f"{probe}.{ext}.j2").is_file()]
    assert not missing, f"probe {probe} has no report section for {', '.join(missing)}"


@pytest.fixture(scope="module")
def gpu_host_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real collection of this machine with every probe, nvidia-smi answering from the
    healthy sample through a shim first on PATH, and a log that exists."""
    root = tmp_path_factory.mktemp("sections")
    shims = shim_directory(root, "healthy")
    log = root / "bench.log"
    log.write_text("step 1 ok\nstep 2 ok\nERROR: step 3 failed\n")
    result = run_cli(
        "collect", "local", "--out", str(root / "out"), "-f", "json", "--fail-on", "never",
        "--snapshot-gap", "0", "--log", str(log), "--expect-log", str(root / "missing.log"),
        env={"PATH": f"{shims}:{os.environ['PATH']}"},
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    return Path(json.loads(result.stdout)["bundle"])


def test_markdown_report_shows_each_probe_with_its_figures(gpu_host_bundle: Path) -> None:
    result = run_cli("report", str(gpu_host_bundle), "-f", "md")
    assert result.exit_code == 0, result.stderr
    headings = markdown_headings(result.stdout, 2)
    for title in ("Memory cgroups", "Memory", "GPUs", "Logs", "Disk", "Kernel log", "Host"):
        assert title in headings, headings
    gpus = markdown_headings(result.stdout, 3)
    assert "GPU 0: NVIDIA H100 80GB HBM3" in gpus
    gpu = markdown_table(result.stdout, "Figure")
    assert gpu.rows, "no figures table"
    text = result.stdout
    assert "00000000:3B:00.0" in text and "59.8 GiB used of 79.6 GiB" in text
    assert "pid 391822" in text
    assert "ERROR: step 3 failed" in text and "missing.log" in text
    memory = markdown_table(text.split("## Memory\n", 1)[1], "Figure")
    assert memory.rows[0][0] == "Total" and memory.rows[0][1].endswith("GiB")
    disk = markdown_table(text, "Mount")
    assert any(row[0] == "/" for row in disk.rows)
    cgroups = markdown_table(text, "Cgroup")
    assert any("root" in row[1] for row in cgroups.rows)


def test_html_report_has_a_section_per_probe_with_bars(gpu_host_bundle: Path) -> None:
    result = run_cli("report", str(gpu_host_bundle), "-f", "html")
    assert result.exit_code == 0, result.stderr
    page = parse_html(result.stdout)
    assert_inert_page(page)
    for section in ("cgroup", "memory", "gpu", "logs", "disk", "kernel_log", "system"):
        assert section in page.ids, page.ids
    bars = [
        attrs for tag, attrs in page.tags if tag == "svg" and "memory" in (attrs.get("class") or "")
    ]
    assert len(bars) >= 3, "memory bar for the host and one per GPU"
    assert "59.8 GiB of 79.6 GiB" in page.visible_text


def test_terminal_report_lists_each_probe(gpu_host_bundle: Path) -> None:
    result = run_cli("report", str(gpu_host_bundle), "-f", "text")
    assert result.exit_code == 0, result.stderr
    for heading in (
        "memory cgroups:",
        "memory:",
        "GPUs:",
        "logs:",
        "disk:",
        "kernel log:",
        "host:",
    ):
        assert heading in result.stdout.splitlines(), heading
    assert "NVIDIA H100 80GB HBM3" in result.stdout
    assert "\x1b" not in result.stdout


def _report_with_one_finding() -> HostReport:
    now = datetime(2026, 12, 1, 12, 11, 19, tzinfo=UTC)
    finding = Finding(
        id="oom.killed",
        severity=Severity.critical,
        title="cuzk (pid 4242) was OOM-killed",
        explanation="The kernel killed it.",
        next_steps=[
            "Read the whole OOM report: `dmesg | grep -B 40 'Killed process 4242 '`",
            "Compare `memory.max` with `memory.peak` before restarting the daemon",
            "`forensics watch gpu-a --every 2s`",
        ],
        subject={
            "pid": 4242,
            "in_question": True,
            "monotonic_s": 706.5,
            "memcg_oom_kill": None,
            "time": "2026-12-01T12:11:19Z",
            "rss_kb": 72304,
        },
    )
    return HostReport(
        tool_version="0", target=Target(name="gpu-a"), status="ok", started=now,
        finished=now, findings=[finding],
    )  # fmt: skip


def test_next_steps_show_commands_as_code_and_subjects_in_words() -> None:
    report = _report_with_one_finding()
    markdown = render_host(report, Format.md)
    kinds = markdown_inline_kinds(markdown)
    assert "code_inline" in kinds
    assert "\\`" not in markdown, "a command shown as escaped backticks"
    assert "```sh\n   dmesg | grep -B 40 'Killed process 4242 '\n   ```" in markdown
    assert "`memory.max`" in markdown and "`memory.peak`" in markdown
    for raw in ("None", "True", "False", "monotonic", "2026-12-01T12:11:19Z", "rss_kb"):
        assert raw not in markdown, raw
    assert "in question: yes" in markdown and "2026-12-01 12:11:19 UTC" in markdown
    assert "rss: 70.6 MiB" in markdown
    html = render_host(report, Format.html)
    page = parse_html(html)
    assert_inert_page(page)
    codes = [attrs for tag, attrs in page.tags if tag == "code"]
    assert len(codes) >= 4
    assert "`" not in page.visible_text.split("Next steps", 1)[1].split("Timeline", 1)[0]
    for raw in ("None", "True", "monotonic"):
        assert raw not in page.visible_text, raw
    assert "oom.<wbr>killed" in html


def test_a_path_that_does_not_exist_is_named_as_such(tmp_path: Path) -> None:
    for command in ("analyze", "report"):
        result = run_cli(command, str(tmp_path / "nowhere"))
        assert result.exit_code == 2
        assert "does not exist" in result.stderr and result.stderr.count("\n") == 1
