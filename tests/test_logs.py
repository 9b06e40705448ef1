"""The logs probe on real files with real mtimes, next to real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.core.models import CollectOptions, SectionResult
from forensics.core.probe import Captured, RuleContext
from forensics.probes import logs
from tests.conftest import run_cli
from tests.sshd import SshServer

TWO_HOURS_AGO = time.time() - 7200


def _report(*args: str) -> dict[str, Any]:
    result = run_cli(*args, "-f", "json", "--fail-on", "never")
    assert result.exit_code == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def _raw(report: dict[str, Any], section: str = "logs") -> list[str]:
    return (Path(report["bundle"]) / "raw" / f"{section}.txt").read_text().split("\n")


def _findings(report: dict[str, Any], finding_id: str) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["id"] == finding_id]


def test_error_lines_far_from_the_tail_are_found_counted_and_capped_over_ssh(
    sshd: SshServer, tmp_path: Path
) -> None:
    log = tmp_path / "bench.log"
    lines = [f"step {n} ok" for n in range(1, 10001)]
    errors_at = [100, *range(2000, 2020), 9000]
    for n in errors_at:
        lines[n - 1] = f"step {n} CUDA error: out of memory (device 0)"
    lines[4999] = "liberror-prone 2.18 loaded"  # 'error' inside a word is no error line
    log.write_text("\n".join(lines) + "\n")
    os.utime(log, (TWO_HOURS_AGO, TWO_HOURS_AGO))

    report = _report(
        "collect", *sshd.target_args(), "--out", str(tmp_path / "out"),
        "--log", str(tmp_path / "*.log"),
    )  # fmt: skip

    facts = report["facts"]["logs"]
    (found,) = facts["files"]
    assert found["path"] == str(log) and found["sources"] == ["glob"]
    assert found["size_bytes"] == log.stat().st_size
    assert datetime.fromisoformat(found["modified"]).timestamp() == int(TWO_HOURS_AGO)
    assert [line["text"] for line in found["tail"]] == lines[-50:]
    assert found["error_count"] == len(errors_at)
    kept = [line["file_line"] for line in found["errors"]]
    assert kept == [*errors_at[:5], *errors_at[-5:]]
    (finding,) = _findings(report, "log.errors")
    raw = _raw(report)
    first, last = finding["evidence"]
    assert raw[first["first_line"] - 1] == "|100:" + lines[99]
    assert raw[last["first_line"] - 1] == "|9000:" + lines[8999]
    # Only what matters crossed the wire: the tail and a few error lines, not the file.
    assert len("\n".join(raw)) < 8000 < log.stat().st_size


def test_missing_expected_logs_are_reported_with_their_directory(tmp_path: Path) -> None:
    present = tmp_path / "daemon.log"
    present.write_text("started\n")
    missing = tmp_path / "supervisor.log"
    no_directory = tmp_path / "cuzk" / "cuzk.log"

    report = _report(
        "collect", "local", "--probe", "logs", "--out", str(tmp_path / "out"),
        "--expect-log", str(present), "--expect-log", str(missing),
        "--expect-log", str(no_directory),
    )  # fmt: skip

    expected = {e["path"]: e for e in report["facts"]["logs"]["expected"]}
    assert expected[str(present)]["present"] is True
    assert expected[str(missing)] | {"raw_line": 0} == {
        "path": str(missing), "present": False, "directory_present": True, "raw_line": 0,
    }  # fmt: skip
    assert expected[str(no_directory)]["directory_present"] is False
    findings = _findings(report, "log.expected_missing")
    assert sorted(f["subject"]["path"] for f in findings) == sorted(
        [str(missing), str(no_directory)]
    )
    raw = _raw(report)
    for finding in findings:
        line = raw[finding["evidence"][0]["first_line"] - 1]
        assert line.startswith("expected_missing") and line.endswith(finding["subject"]["path"])


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str, Path]]:
    """A live process holding its log open for writing, named so that --focus finds it."""
    name = f"fx7-writer-{os.getpid()}"
    log = tmp_path / "writer.log"
    code = (
        "import sys, time\n"
        "log = open(sys.argv[1], 'a')\n"
        "log.write('listening on :9000\\n'); log.flush()\n"
        "print('ready', flush=True)\n"
        "time.sleep(120)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", code, str(log), name], stdout=subprocess.PIPE)
    assert process.stdout is not None and process.stdout.readline() == b"ready\n"
    yield process, name, log
    process.kill()
    process.wait()


def test_stale_log_beside_a_live_process_is_found_through_its_open_files(
    tmp_path: Path, writer: tuple[subprocess.Popen[bytes], str, Path]
) -> None:
    process, name, log = writer
    two_hours_ago = time.time() - 7200
    os.utime(log, (two_hours_ago, two_hours_ago))

    report = _report(
        "collect", "local", "--probe", "logs", "--out", str(tmp_path / "out"), "--focus", name
    )

    facts = report["facts"]["logs"]
    assert [p["pid"] for p in facts["focus_processes"]] == [process.pid]
    assert facts["focus_processes"][0]["state"] == "S"
    # Its stderr (a deleted pytest capture file) is open for writing too: also found.
    (found,) = [f for f in facts["files"] if f["path"] == str(log)]
    assert found["sources"] == [f"open:{process.pid}:3"]
    assert found["tail"][-1]["text"] == "listening on :9000"
    (stale,) = _findings(report, "log.stale")
    assert stale["subject"]["pid"] == process.pid
    assert 7190 <= stale["subject"]["silent_s"] <= 7300
    assert "2 h" in stale["title"]


def test_a_fresh_log_beside_a_live_process_is_not_stale(
    tmp_path: Path, writer: tuple[subprocess.Popen[bytes], str, Path]
) -> None:
    _, name, log = writer
    report = _report(
        "collect", "local", "--probe", "logs", "--out", str(tmp_path / "out"), "--focus", name,
        "--log", str(log),
    )  # fmt: skip
    (found,) = [f for f in report["facts"]["logs"]["files"] if f["path"] == str(log)]
    assert found["sources"][0] == "glob" and found["sources"][1].startswith("open:")
    assert not _findings(report, "log.stale")


def test_log_of_a_process_that_became_a_zombie_ended_early(tmp_path: Path) -> None:
    # A script's comm is its file name, which a zombie keeps while its cmdline empties.
    name = f"fx7z{os.getpid()}"
    log = tmp_path / "bench.log"
    script = tmp_path / name
    script.write_text(
        f"#!/bin/sh\necho 'loading params' >>{log}\necho 'CUDA error: out of memory' >>{log}\n"
        "exit 1\n"
    )
    script.chmod(0o755)
    parent = subprocess.Popen(
        [sys.executable, "-c",
         "import subprocess, sys, time\n"
         "child = subprocess.Popen([sys.argv[1]])\n"
         "print(child.pid, flush=True)\n"
         "time.sleep(120)\n",
         str(script)],
        stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        deadline = time.monotonic() + 10
        while Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        parent_name = Path(f"/proc/{parent.pid}/comm").read_text().strip()
        report = _report(
            "collect", "local", "--fail-on", "never", "--out", str(tmp_path / "out"),
            "--focus", f"^{name}$", "--log", str(log),
        )  # fmt: skip
    finally:
        parent.kill()
        parent.wait()

    (zombie,) = report["facts"]["logs"]["focus_processes"]
    assert (zombie["pid"], zombie["state"], zombie["name"]) == (child, "Z", name)
    (ended,) = _findings(report, "log.ended_early")
    assert "zombie" in ended["title"] and ended["subject"]["pid"] == child
    assert "CUDA error: out of memory" in ended["evidence"][1]["excerpt"]
    # One start per process (from the process table): the zombie's, and its parent's. Other
    # zombies of this shared machine may be on the timeline too.
    starts = [
        e
        for e in report["timeline"]
        if e["kind"] == "process_start" and f"{name} (pid {child})" in e["text"]
    ]
    assert sorted(e["text"].split(" started")[0] for e in starts) == [
        f"focus process {name} (pid {child})",
        f"parent of zombie {name} (pid {child}): {parent_name} (pid {parent.pid})",
    ]
    assert all(e["approximate"] and e["source"] == "processes" for e in starts)
    when = {e["kind"]: datetime.fromisoformat(e["time"]) for e in report["timeline"]}
    (focus,) = [e for e in starts if e["text"].startswith("focus process")]
    started = datetime.fromisoformat(focus["time"])
    # mtimes have whole seconds, so the write may sort just before the (approximate) start.
    assert abs((when["log_last_write"] - started).total_seconds()) < 2
    assert max(when["log_last_write"], started) <= when["collection"]


def test_log_lines_that_look_like_records_cannot_forge_them(tmp_path: Path) -> None:
    log = tmp_path / "hostile.log"
    log.write_text("file glob /etc/shadow\nstat 1 1 0 root\nerrors-count 999\n|x\nerror: real\n")
    report = _report(
        "collect", "local", "--probe", "logs", "--out", str(tmp_path / "out"),
        "--log", str(log),
    )  # fmt: skip
    (found,) = report["facts"]["logs"]["files"]
    # "errors-count 999" is a line of the log (it says "error"), not a record.
    assert found["path"] == str(log) and found["error_count"] == 2
    assert found["tail"][0]["text"] == "file glob /etc/shadow"


def test_a_glob_matching_nothing_and_a_relative_path_are_told_apart(tmp_path: Path) -> None:
    report = _report(
        "collect", "local", "--probe", "logs", "--out", str(tmp_path / "out"),
        "--log", str(tmp_path / "nothing-*.log"),
    )  # fmt: skip
    assert report["facts"]["logs"]["globs"][0]["matched"] is False
    refused = run_cli("collect", "--fail-on", "never", "local", "--log", "bench.log")
    assert refused.exit_code == 2 and "absolute" in refused.stderr


_LOG_LINES = st.sampled_from(
    [
        "limits 50 16384 400 5", "limits x", "btime 1764441600", "clock 1764450000",
        "clk_tck 0", "clk_tck 100", "focus-pid 42 42 (a) b) Z 1 2 3 4 5 6 7 8 9 10 11 12 13 14 "
        "15 16 17 18 99999999999999999 0", "focus-pid 42", "focus-capped x", "glob /a*",
        "glob-more /a*", "glob-empty /a*", "file glob /a", "file open:1:3 /b (deleted)", "file",
        "stat 1 2 3 root", "stat x y", "stat 1 999999999999999 0", "tail", "tail-read 9",
        "errors", "|12:boom", "|no number", "errors-count 3", "expected-missing /x",
        "expected-present /a", "expected-missing-directory /d/x", "unreadable", "compressed",
    ]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(_LOG_LINES | st.text(max_size=30), max_size=30))
def test_logs_parser_and_rules_never_raise(lines: list[str]) -> None:
    text = "\n".join(lines)
    result = SectionResult(
        name="logs", command="", exit_status=0, duration_s=0.1, bytes=len(text),
        truncated=False, timed_out=False, finished=True,
    )  # fmt: skip
    options = CollectOptions(focus="a", logs=("/a*",))
    facts = logs.parse({"logs": Captured(result=result, text=text)}, options)
    context = RuleContext(options=options, sections={}, collected_at=datetime.now(UTC))
    assert all(f.id.startswith("log.") for f in logs.rules(facts, context))
