"""The scripts probe against real wrappers and real children, collected through sshd.

The story's wrapper runs a real daemon that becomes `Zl` (its main thread exits, another
thread lives on) and later exits with status 42; while the wrapper waits on it, the
collection must point at the lines that will swallow that 42.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from forensics.collect import collect as collect_host
from forensics.core.models import CollectOptions
from forensics.core.targets import parse_target
from tests.conftest import run_cli
from tests.sshd import SshServer

# A daemon whose main thread exits first (the process shows `Zl`), then dies with 42 once
# the test releases it; the way the story's daemon ended.
DAEMON = """\
import ctypes, os, sys, threading, time
def linger():
    deadline = time.monotonic() + 60
    while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
        time.sleep(0.05)
    os._exit(42)
threading.Thread(target=linger).start()
print("cuzk daemon up", flush=True)
ctypes.CDLL(None).pthread_exit(None)
"""

BENCHMARK = """\
#!/usr/bin/env bash
# benchmark.sh: runs the proving daemon and retries when it fails (or so it thinks).
set -euo pipefail
LOG="$1"
DAEMON="$2"
RELEASE="$3"
rc=0
for attempt in 1 2 3; do
  if ! python3 "$DAEMON" "$RELEASE" | tee -a "$LOG"; then
    echo "daemon exited with status $?" | tee -a "$LOG"
    rc=$?
  fi
  if [ "$rc" -eq 0 ]; then
    echo "benchmark finished" | tee -a "$LOG"
    break
  fi
  sleep 30
done
"""
MASKED_LINES = [10, 11, 13]


@dataclass
class Wrapper:
    process: subprocess.Popen[bytes]
    script: Path
    log: Path
    release: Path


@contextlib.contextmanager
def running(
    argv: list[str], cwd: Path, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    try:
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def children(pid: int) -> list[tuple[int, str]]:
    """(pid, state) of the processes whose parent is ``pid``, from /proc."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                found.append((int(stat.parent.name), fields[0]))
    return found


def wait_for(condition: Any, what: str, timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def story_wrapper(tmp_path: Path) -> Iterator[Wrapper]:
    script = tmp_path / "benchmark.sh"
    script.write_text(BENCHMARK)
    daemon, log, release = tmp_path / "daemon.py", tmp_path / "bench.log", tmp_path / "release"
    daemon.write_text(DAEMON)
    argv = ["bash", "-e", "benchmark.sh", str(log), str(daemon), str(release)]
    with running(argv, tmp_path) as process:
        wrapper = Wrapper(process, script, log, release)
        wait_for(lambda: any(s == "Z" for _, s in children(process.pid)), "the Zl daemon")
        yield wrapper
        release.touch()


def collect(target_args: list[str], out: Path, *extra: str) -> tuple[int, dict[str, Any], Path]:
    result = run_cli("collect", *target_args, "--out", str(out), "--format", "json", *extra)
    assert result.exit_code in (0, 1), result.stderr
    report = json.loads(result.stdout)
    return result.exit_code, report, Path(report["bundle"])


def findings(report: dict[str, Any], finding_id: str, path: Path) -> list[dict[str, Any]]:
    return [
        f
        for f in report["findings"]
        if f["id"] == finding_id and f["subject"]["path"] == os.path.realpath(path)
    ]


def busybox_host(make_sshd: Any, tmp_path: Path) -> SshServer:
    """A scenario host whose /bin/sh and tools are busybox, in a private mount namespace."""
    busybox = "/bin/busybox"
    if not Path(busybox).exists():
        pytest.skip("busybox not installed")
    shims = tmp_path / "busybox-shims"
    shims.mkdir()
    for tool in ("head", "tr", "grep", "wc", "cat", "readlink", "timeout", "base64", "rm",
                 "mkdir", "sleep", "date", "kill"):  # fmt: skip
        (shims / tool).symlink_to(busybox)
    session = (
        f"mount --bind {busybox} /bin/sh && PATH={shims}:$PATH && export PATH && "
        'exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"'
    )
    wrapper = tmp_path / "force-busybox"
    wrapper.write_text(f"#!/bin/sh\nexec unshare -m /bin/sh -c '{session}'\n")
    wrapper.chmod(0o755)
    server: SshServer = make_sshd(force_command=str(wrapper))
    return server


@pytest.mark.parametrize("host", ["dash", "busybox"])
def test_story_wrapper_with_a_zombie_child_is_flagged_critical_at_its_lines(
    host: str, story_wrapper: Wrapper, sshd: SshServer, make_sshd: Any, tmp_path: Path
) -> None:
    server = sshd if host == "dash" else busybox_host(make_sshd, tmp_path)
    status, report, bundle = collect(server.target_args(), tmp_path / "out")

    (masked,) = findings(report, "script.exit_status_masked", story_wrapper.script)
    zombie_pid = next(pid for pid, state in children(story_wrapper.process.pid) if state == "Z")
    assert status == 1 and masked["severity"] == "critical"
    assert masked["subject"]["lines"] == MASKED_LINES
    assert masked["subject"]["patterns"] == ["negated_status_read", "retry_on_masked_status"]
    assert masked["subject"]["pids"] == [story_wrapper.process.pid]
    assert f"the parent of zombie PID {zombie_pid} (python3)" in masked["explanation"]
    assert (
        '`!` inverts the status of `python3 "$DAEMON" "$RELEASE" | tee -a "$LOG"`'
        in (masked["explanation"])
    )
    assert (
        'Fix: `rc=${PIPESTATUS[0]}; echo "daemon exited with status $rc"' in (masked["explanation"])
    )
    assert any(f"/proc/{zombie_pid}/stat" in step for step in masked["next_steps"])

    raw = (bundle / "raw" / "scripts.txt").read_text().split("\n")
    script_lines = BENCHMARK.split("\n")
    cited = [e for e in masked["evidence"] if e["excerpt"].startswith(str(story_wrapper.script))]
    assert [int(e["excerpt"].split(":")[1]) for e in cited] == MASKED_LINES
    for evidence, line in zip(cited, MASKED_LINES, strict=True):
        assert raw[evidence["last_line"] - 1] == script_lines[line - 1]
    process_record = masked["evidence"][0]
    assert raw[process_record["first_line"] - 1].startswith(f"process {story_wrapper.process.pid} ")

    facts = report["facts"]["scripts"]
    (script,) = [s for s in facts["scripts"] if s["path"] == str(story_wrapper.script)]
    assert script["read_via"] == "fd255" and script["size_bytes"] == len(BENCHMARK)
    (process,) = script["processes"]
    assert process["script_argument"] == "benchmark.sh"
    assert process["interpreter"] == "bash" and process["interpreter_options"] == ["-e"]
    assert process["zombie_children"] == [zombie_pid] and process["has_zombie_child"] is True
    assert process["cwd"] == str(story_wrapper.script.parent)

    # The masking is real: released, the daemon exits 42 and the wrapper logs 0 and stops.
    story_wrapper.release.touch()
    assert story_wrapper.process.wait(timeout=20) == 0
    log = story_wrapper.log.read_text()
    assert "daemon exited with status 0" in log and "benchmark finished" in log


OR_TRUE = """\
#!/bin/bash
set -e
python3 -c 'import time; time.sleep(60)' "$MARKER" 2>&1 | tee -a "$1" || true
echo "daemon stopped: $?"
"""

CORRECT = """\
#!/bin/bash
set -euo pipefail
rc=0
python3 -c 'import time; time.sleep(60)' "$MARKER" 2>&1 | tee -a "$1" || rc=$?
echo "daemon stopped: $rc"
exit "$rc"
"""


def test_ancestors_of_the_focus_process_are_read_and_only_the_masking_one_flagged(
    sshd: SshServer, tmp_path: Path
) -> None:
    marker = f"cuzk-marker-{os.getpid()}"
    (tmp_path / "or-true.sh").write_text(OR_TRUE)
    (tmp_path / "correct.sh").write_text(CORRECT)
    with (
        running(["bash", "or-true.sh", "a.log"], tmp_path, {"MARKER": f"{marker}-a"}) as masked_run,
        running(
            ["bash", "correct.sh", "b.log"], tmp_path, {"MARKER": f"{marker}-b"}
        ) as correct_run,
    ):
        daemons = wait_for(
            lambda: (
                [
                    pid
                    for wrapper in (masked_run, correct_run)
                    for pid, _ in children(wrapper.pid)
                    if marker in Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
                ]
                if all(len(children(w.pid)) == 2 for w in (masked_run, correct_run))
                else None
            ),
            "both daemons",
        )
        status, report, _ = collect(
            sshd.target_args(), tmp_path / "out", "--focus", f"{marker}-[ab]"
        )

    facts = report["facts"]["scripts"]
    assert sorted(facts["focus_matches"]) == sorted(daemons)
    (masked,) = findings(report, "script.exit_status_masked", tmp_path / "or-true.sh")
    assert status == 1 and masked["severity"] == "critical"
    assert masked["subject"]["lines"] == [3]  # the `$?` of line 4 reads the same lost status
    assert masked["subject"]["patterns"] == ["status_discarded"]
    assert "an ancestor of the focus process" in masked["explanation"]
    assert findings(report, "script.exit_status_masked", tmp_path / "correct.sh") == []
    (correct,) = [s for s in facts["scripts"] if s["path"] == str(tmp_path / "correct.sh")]
    assert correct["analysis"]["issues"] == []
    assert correct["processes"][0]["ancestor_of_focus"] is True
    assert correct["processes"][0]["pid"] == correct_run.pid


def test_odd_and_missing_script_files_become_facts_not_crashes(
    sshd: SshServer, tmp_path: Path
) -> None:
    legacy = tmp_path / "legacy-wrapper.sh"
    text = (Path(__file__).parent / "samples" / "scripts" / "benchmark_masked.sh").read_text()
    text = text.replace("# benchmark.sh", "# r\xe9sum\xe9 " + "z" * 100_000 + " benchmark.sh")
    legacy.write_bytes(text.replace("\n", "\r\n").encode("latin-1"))
    fifo = tmp_path / "fifo.sh"
    os.mkfifo(fifo)
    missing = tmp_path / "gone.sh"
    args = ["--probe", "scripts", "--script", str(legacy), "--script", str(missing)]
    args += ["--script", str(fifo)]

    status, report, _ = collect(sshd.target_args(), tmp_path / "out", *args)

    scripts = {s["path"]: s for s in report["facts"]["scripts"]["scripts"]}
    read = scripts[str(legacy)]
    assert read["requested"] is True and read["truncated"] is False
    assert read["shape"]["utf8"] is False and read["shape"]["line_endings"] == "crlf"
    assert read["shape"]["longest_line"] > 100_000
    assert [i["line"] for i in read["analysis"]["issues"]] == [8, 9, 11]
    (masked,) = findings(report, "script.exit_status_masked", legacy)
    assert masked["severity"] == "warning"
    (lint,) = findings(report, "script.lint", legacy)
    assert "CRLF line endings" in lint["explanation"] and "not UTF-8" in lint["explanation"]

    assert scripts[str(missing)]["unavailable"].startswith("no such file on the host")
    assert scripts[str(fifo)]["unavailable"].startswith("not a regular file")
    for path in (missing, fifo):
        (unchecked,) = findings(report, "script.lint", path)
        assert unchecked["title"].startswith(f"Could not check {path}")
    assert status == 0  # warnings only: nothing supervises the focus process here


def test_a_truncated_scripts_section_keeps_what_came_whole(tmp_path: Path) -> None:
    """Parsing a section cut by its byte cap: the cut script is marked, nothing raises."""
    from forensics.core.models import CollectOptions, SectionResult
    from forensics.core.probe import Captured
    from forensics.probes.scripts import parse

    text = (
        "scripts 1 262144 6\nzombies 0\nrequested\narg 0\n/x.sh\npath 0\n/x.sh\nvia path\n"
        "size 900\ncontent 40\nset -e\n./d | tee log\nrc=$?\n"
    )
    result = SectionResult(
        name="scripts", command="", exit_status=0, duration_s=0.1, bytes=len(text),
        truncated=True, timed_out=False, finished=True,
    )  # fmt: skip
    facts = parse({"scripts": Captured(result=result, text=text)}, CollectOptions())
    (script,) = facts.scripts
    assert script.truncated is True
    assert [issue.line for issue in script.analysis.issues] == [2]  # type: ignore[union-attr]
    assert sys.getrecursionlimit() >= 1000


POSIX_WRAPPER = """\
#!/bin/sh
set -e
if ! python3 -c 'import time; time.sleep(60)' "$MARKER" | tee -a daemon.log; then
  echo "daemon failed: $?"
fi
"""


def test_dash_wrappers_are_read_from_their_directory_and_a_deleted_one_is_reported(
    sshd: SshServer, tmp_path: Path
) -> None:
    """dash keeps no fd 255: the path is resolved in /proc/PID/cwd; a script deleted
    under a running shell is a clear fact, not a crash."""
    marker = f"dash-marker-{os.getpid()}"
    kept, doomed = tmp_path / "kept", tmp_path / "doomed"
    for directory in (kept, doomed):
        directory.mkdir()
        (directory / "run.sh").write_text(POSIX_WRAPPER)
    with (
        running(["dash", "run.sh"], kept, {"MARKER": f"{marker}-kept"}) as kept_run,
        running(["dash", "run.sh"], doomed, {"MARKER": f"{marker}-doomed"}) as doomed_run,
    ):
        wait_for(lambda: all(len(children(r.pid)) == 2 for r in (kept_run, doomed_run)), "daemons")
        (doomed / "run.sh").unlink()
        status, report, _ = collect(
            sshd.target_args(), tmp_path / "out", "--focus", f"{marker}-(kept|doomed)"
        )

    scripts = {s["path"]: s for s in report["facts"]["scripts"]["scripts"]}
    read = scripts[str(kept / "run.sh")]
    assert read["read_via"] == "cwd" and read["processes"][0]["interpreter"] == "dash"
    assert read["analysis"]["dialect"] == "dash"
    (masked,) = findings(report, "script.exit_status_masked", kept / "run.sh")
    assert masked["subject"]["lines"] == [3, 4] and masked["severity"] == "critical"
    assert "dash has no pipefail" in masked["explanation"]
    gone = scripts[str(doomed / "run.sh")]
    assert gone["unavailable"].startswith("no such file on the host")
    (unchecked,) = findings(report, "script.lint", doomed / "run.sh")
    assert f"ls -l /proc/{doomed_run.pid}/fd" in unchecked["next_steps"][0]
    assert status == 1


def test_a_focus_regex_grep_rejects_is_reported_and_the_rest_still_runs(
    sshd: SshServer, tmp_path: Path
) -> None:
    refused = run_cli("collect", *sshd.target_args(), "--focus", "cuzk[[:foo:]]")
    assert refused.exit_code == 2 and "[:foo:] is not a character class" in refused.stderr
    # Options from elsewhere (an older bundle, the API) reach grep: its refusal is a fact.
    options = CollectOptions(probes=("scripts",), focus="cuzk[[:foo:]]", timeout=30)
    report = collect_host(parse_target("local"), options, tmp_path / "out")
    facts = report.facts.scripts
    assert facts is not None and facts.focus_error and "grep" in facts.focus_error
    assert facts.focus_matches == [] and facts.zombie_count is not None


def test_analyze_replays_a_scripts_bundle_to_the_same_findings(
    story_wrapper: Wrapper, sshd: SshServer, tmp_path: Path
) -> None:
    _, report, bundle = collect(sshd.target_args(), tmp_path / "out", "--probe", "scripts")
    replay = run_cli("analyze", str(bundle), "--format", "json")
    assert replay.exit_code == 1, replay.stderr
    again = json.loads(replay.stdout)
    assert again["findings"] == report["findings"]
    assert findings(again, "script.exit_status_masked", story_wrapper.script)


def test_shellcheck_unable_to_run_is_no_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ShellCheck that is missing, fails or times out says nothing about the host."""
    from datetime import UTC, datetime

    from forensics.core.models import CollectOptions, SectionResult
    from forensics.core.probe import Captured, RuleContext
    from forensics.probes.scripts import parse, rules

    monkeypatch.setenv("FORENSICS_SHELLCHECK", "/nonexistent/shellcheck")
    text = (
        "scripts 1 262144 6\nzombies 0\nrequested\narg 0\n/x.sh\npath 0\n/x.sh\nvia path\n"
        "size 40\ncontent 3\n#!/bin/bash\nset -euo pipefail\n./d | tee log\n\n"
    )
    result = SectionResult(
        name="scripts", command="", exit_status=0, duration_s=0.1, bytes=len(text),
        truncated=False, timed_out=False, finished=True,
    )  # fmt: skip
    options = CollectOptions()
    facts = parse({"scripts": Captured(result=result, text=text)}, options)
    context = RuleContext(options=options, sections={}, collected_at=datetime.now(UTC))
    assert [finding.id for finding in rules(facts, context)] == []
