"""``forensics watch`` and ``forensics wait`` against real memory, over one real SSH
connection, and locally."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from forensics.core.errors import UsageError
from forensics.core.units import UnitError, parse_duration, parse_size
from forensics.watch.condition import parse_condition
from tests.cgroup_scenario import Holder, memory_cgroup, v1_memory_writable
from tests.conftest import run_cli
from tests.sshd import SshServer

MIB = 1 << 20
needs_v1 = pytest.mark.skipif(not v1_memory_writable(), reason="no writable v1 memory cgroup")


def ssh_use(server: SshServer) -> tuple[int, int]:
    """(connections authenticated, exec sessions started) according to sshd's own log."""
    log = (server.root / "sshd.log").read_text()
    return log.count("Accepted publickey for"), log.count("Starting session: command")


@needs_v1
def test_wait_returns_soon_after_a_real_release_with_an_eta_over_one_connection(
    make_sshd: type[SshServer],
) -> None:
    server = make_sshd()
    with memory_cgroup("forensics-wait") as path:
        holder = Holder(path, f"fx-release-{os.getpid()}")
        try:
            holder.ask(f"hold {1 << 30}")
            wait = subprocess.Popen(
                [
                    sys.executable, "-m", "forensics", "wait", *server.target_args(),
                    "--cgroup", str(path), "--cgroup-current", "<=300MiB",
                    "--available", ">=1MiB", "--every", "0.5s", "--timeout", "60s",
                ],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            assert wait.stdout is not None
            lines = [wait.stdout.readline() for _ in range(3)]
            holder.send(f"release 0.25 {300 * MIB}")
            lines += wait.stdout.readlines()
            exited = time.monotonic()
            status = wait.wait(timeout=10)
            crossed = float(holder.read().split()[1])
        finally:
            holder.stop()
    output = "".join(lines)
    assert status == 0, output + wait.stderr.read() if wait.stderr else output
    assert lines[0].startswith(f"{server.target}: waiting until MemAvailable >= ")
    assert re.search(r"releasing -\d+\.\d\d GiB/s\).*ETA \d+\.\d s \(fit over", output), output
    assert lines[-1].startswith("met after "), output
    assert exited - crossed < 3.0, (exited - crossed, output)
    assert ssh_use(server) == (1, 1)


def test_wait_that_never_holds_times_out_with_status_1_over_one_connection(
    make_sshd: type[SshServer],
) -> None:
    server = make_sshd()
    started = time.monotonic()
    result = run_cli(
        "wait", *server.target_args(), "--available", ">=1000TiB", "--timeout", "2s",
        "--every", "0.5s",
    )  # fmt: skip
    assert result.exit_code == 1, result
    assert time.monotonic() - started < 30
    assert result.stdout.splitlines()[-1].startswith("timed out after 2.0 s: MemAvailable ")
    assert "not reachable" in result.stdout, "a goal out of reach must say so"
    assert not re.search(r"ETA \d+(\.\d+)? h", result.stdout), result.stdout
    assert "-0.00" not in result.stdout
    assert ssh_use(server) == (1, 1)


def test_watch_over_ssh_prints_a_row_per_sample_with_rates(make_sshd: type[SshServer]) -> None:
    server = make_sshd()
    result = run_cli("watch", *server.target_args(), "--every", "0.3s", "--for", "1s")
    assert result.exit_code == 0, result
    header, columns, *rows = result.stdout.splitlines()
    assert header.startswith(f"{server.target}: every 0.3 s, cgroup v1 /sys/fs/cgroup/memory")
    assert columns.split()[:6] == ["time", "UTC", "host", "used", "host", "avail"]
    assert "cgroup usage / limit" in columns and "cgroup rate" in columns
    assert len(rows) == 4
    assert re.search(r"[+-]\d+\.\d\d GiB/s", rows[-1]), rows
    assert ssh_use(server) == (1, 1)


def test_watch_local_streams_json_lines() -> None:
    result = run_cli("watch", "local", "--every", "0.2s", "--for", "0.6s", "--format", "json")
    assert result.exit_code == 0, result
    samples = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(samples) == 4
    total = int(Path("/proc/meminfo").read_text().split()[1]) * 1024
    assert {s["mem_total_bytes"] for s in samples} == {total}
    assert all(s["mem_used_bytes"] == total - s["mem_available_bytes"] for s in samples)
    assert samples[0]["used_rate_bytes_per_s"] is None
    assert isinstance(samples[-1]["used_rate_bytes_per_s"], float)
    uptimes = [s["host_uptime_s"] for s in samples]
    assert uptimes == sorted(uptimes) and uptimes[-1] - uptimes[0] >= 0.5


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--available", "500GiB"], "start with >=, <=, > or <"),
        (["--available", ">=500"], "has no unit"),
        (["--available", ">=5 parsecs"], "unknown unit 'parsecs'"),
        (["--cgroup-current", "<=lots"], "is not a size"),
        (["--available", ">=1GiB", "--timeout", "soon"], "--timeout 'soon' is not a duration"),
        (["--available", ">=1GiB", "--every", "0s"], "the shortest interval"),
        ([], "wait needs a condition"),
    ],
)
def test_malformed_wait_is_one_line_and_exit_2(args: list[str], says: str) -> None:
    result = run_cli("wait", "local", *args)
    assert result.exit_code == 2, result
    assert result.stderr.count("\n") == 1 and says in result.stderr, result.stderr
    assert result.stdout == ""


def test_cgroup_condition_on_a_host_without_that_cgroup_is_status_3() -> None:
    result = run_cli(
        "wait", "local", "--cgroup", "/sys/fs/cgroup/nonexistent", "--cgroup-current", "<=1GiB",
        "--timeout", "5s",
    )  # fmt: skip
    assert result.exit_code == 3, result
    assert "no memory cgroup is visible" in result.stderr


@given(st.text(max_size=20))
def test_units_and_conditions_fail_only_with_a_usage_error(text: str) -> None:
    with contextlib.suppress(UnitError):
        assert parse_size(text) >= 0
    with contextlib.suppress(UnitError):
        assert parse_duration(text) >= 0
    with contextlib.suppress(UsageError):
        assert parse_condition("available", text).threshold_bytes >= 0
