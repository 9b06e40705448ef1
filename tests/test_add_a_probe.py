"""docs/ARCHITECTURE.md's "Adding a probe", followed literally: its files are written into a
copy of the package, and the new probe runs, parses and renders as a built-in one does."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.source_tree import PACKAGE

ARCHITECTURE = Path(__file__).parent.parent / "docs" / "ARCHITECTURE.md"
FILE_BLOCK = re.compile(r"^```\w+ file=(\S+)\n(.*?)^```$", re.M | re.S)


def _walk_through_files() -> dict[str, str]:
    text = ARCHITECTURE.read_text()
    section = text[text.index("## Adding a probe") :]
    return {path: body for path, body in FILE_BLOCK.findall(section)}


def _forensics(source: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "forensics", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=source.parent,
        env={**os.environ, "PYTHONPATH": str(source)},
        stdin=subprocess.DEVNULL,
    )


def test_the_walk_through_adds_a_probe_that_runs_parses_and_renders(tmp_path: Path) -> None:
    files = _walk_through_files()
    assert set(files) == {
        "probes/load.py",
        "probes/load.sh",
        "reports/templates/partials/load.md.j2",
        "reports/templates/partials/load.html.j2",
        "reports/templates/partials/load.txt.j2",
    }
    source = tmp_path / "src"
    shutil.copytree(PACKAGE, source / "forensics", ignore=shutil.ignore_patterns("__pycache__"))
    for path, body in files.items():
        (source / "forensics" / path).write_text(body)

    doctests = subprocess.run(
        [sys.executable, "-m", "doctest", "-v", str(source / "forensics/probes/load.py")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(source)},
    )
    assert doctests.returncode == 0 and "0 failed" in doctests.stdout, doctests.stdout

    out = tmp_path / "bundles"
    common = ("collect", "local", "--probe", "load", "--out", str(out), "--fail-on", "never")
    json_run = _forensics(source, *common, "--format", "json")
    assert json_run.returncode == 0, json_run.stderr
    report = json.loads(json_run.stdout)
    assert [section["name"] for section in report["sections"]] == ["load"]
    load = report["facts"]["load"]
    assert load["unavailable"] is None and load["tasks"] > 0 and load["one_minute"] >= 0
    assert {name for name, facts in report["facts"].items() if facts is not None} == {"load"}

    rendered = {fmt: _forensics(source, *common, "--format", fmt) for fmt in ("md", "html", "text")}
    for fmt, run in rendered.items():
        assert run.returncode == 0, (fmt, run.stderr)
    assert "## Load\n" in rendered["md"].stdout
    assert '<section id="load">' in rendered["html"].stdout
    assert "load:\n" in rendered["text"].stdout and "tasks runnable" in rendered["text"].stdout

    schema = _forensics(source, "schema")
    assert "LoadFacts" in json.loads(schema.stdout)["$defs"]
