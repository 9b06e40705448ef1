"""Every probe has its section in every human format: a clean host's report shows the
memory, cgroup, disk, GPU, kernel-log, logs and scripts figures, not only the findings."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from forensics.core.facts import Facts
from forensics.probes import PROBES
from forensics.reports.topics import PARTIALS
from tests.conftest import run_cli
from tests.gpu_shim import shim_directory
from tests.rendered import assert_inert_page, markdown_headings, markdown_table, parse_html

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
