"""A local collection cut short (its deadline, Ctrl-C) ends the script so that it cleans
up, removes what is left from here, and says in one line what was kept."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.hostile.crafted import SLACK_S, assert_one_inert_line


def test_a_local_collection_cut_by_its_deadline_leaves_no_temp_dir(tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    started = time.monotonic()
    completed = subprocess.run(
        [
            sys.executable, "-m", "forensics", "collect", "local", "--timeout", "3",
            "--snapshot-gap", "30", "--fail-on", "never", "--out", str(tmp_path / "out"),
            "-f", "json",
        ],
        capture_output=True, text=True, timeout=60, env={**os.environ, "TMPDIR": str(scratch)},
    )  # fmt: skip
    assert time.monotonic() - started < 3 + SLACK_S
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout)
    assert report["status"] == "partial" and "deadline" in report["status_reason"]
    assert list(scratch.iterdir()) == []
    assert (Path(report["bundle"]) / "report.json").is_file()


def test_ctrl_c_says_what_was_kept_and_exits_130(tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    process = subprocess.Popen(
        [
            sys.executable, "-m", "forensics", "collect", "local", "--snapshot-gap", "30",
            "--out", str(tmp_path / "out"),
        ],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TMPDIR": str(scratch)},
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not any(scratch.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 130
    line = assert_one_inert_line(stderr)
    assert "interrupted (SIGINT)" in line and "sections had come back, kept in" in line, line
    bundle = Path(line.rsplit("kept in ", 1)[1].strip())
    assert (bundle / "manifest.json").is_file()
    assert json.loads((bundle / "manifest.json").read_text())["status"] == "partial"
    assert stdout == ""
    assert list(scratch.iterdir()) == []


def test_ctrl_c_ends_a_watch_quietly_with_status_0() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "forensics", "watch", "local", "--every", "1s", "--for", "30s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    process.stdout.readline()
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr  # Ctrl-C is how a watch ends
    assert stderr == ""
