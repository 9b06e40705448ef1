"""A real memory-cgroup OOM kill on this machine, found over a real sshd.

A Python allocator renamed through /proc/self/comm moves itself into a fresh cgroup v1
memory cgroup limited to 64 MiB and allocates until the kernel kills it; then the collector
must name that pid and process, the memcg constraint, and the cgroup's own counter.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kernel_scenario import collect_json, findings
from tests.sshd import SshServer

MEMORY_ROOT = Path("/sys/fs/cgroup/memory")
LIMIT_BYTES = 64 << 20

HOG = """
import sys
with open("/proc/self/comm", "w") as comm:
    comm.write(sys.argv[1])
with open(sys.argv[2] + "/cgroup.procs", "w") as procs:
    procs.write("0")
hoard = []
while True:
    hoard.append(bytearray(1 << 20))
"""


@pytest.fixture
def memory_cgroup() -> Iterator[Path]:
    """A v1 memory cgroup of 64 MiB, removed afterwards."""
    cgroup = MEMORY_ROOT / f"forensics-test-{os.getpid()}"
    try:
        cgroup.mkdir()
        (cgroup / "memory.limit_in_bytes").write_text(str(LIMIT_BYTES))
    except OSError as error:
        with contextlib.suppress(OSError):
            cgroup.rmdir()
        pytest.skip(f"cgroup v1 memory controller not writable here ({error})")
    with contextlib.suppress(OSError):
        (cgroup / "memory.swappiness").write_text("0")
    yield cgroup
    deadline = time.monotonic() + 10
    while True:
        try:
            cgroup.rmdir()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_real_memcg_oom_kill_is_named_with_its_cgroup_and_counter(
    sshd: SshServer, memory_cgroup: Path, tmp_path: Path
) -> None:
    # The kernel log outlives this run: fresh containers reuse pids, so a name built from
    # one could match an earlier run's kill. A random name is this run's alone.
    name = f"fx{secrets.token_hex(6)}"
    hog = subprocess.run(
        [sys.executable, "-c", HOG, name, str(memory_cgroup)], timeout=60, check=False
    )
    assert hog.returncode == -9, "the allocator should have been OOM-killed (SIGKILL)"
    report = collect_json(sshd, tmp_path, "--focus", f"^{name}$")
    # Other kills on this shared machine are context (warning); ours is the one in question.
    [killed] = [f for f in findings(report, "oom.killed") if f["subject"].get("in_question")]
    subject = killed["subject"]
    cgroup = "/" + memory_cgroup.name
    assert killed["severity"] == "critical"
    assert subject["name"] == name and subject["scope"] == "memory_cgroup"
    assert subject["task_memcg"] == cgroup and subject["oom_memcg"] == cgroup
    assert subject["memcg_oom_kill"] == 1
    assert f"{cgroup} hit its limit of 64 MiB" in killed["title"]
    assert f"{MEMORY_ROOT}{cgroup} oom_kill = 1" in killed["explanation"]
    excerpts = [e["excerpt"] for e in killed["evidence"]]
    assert any(f"Killed process {subject['pid']} ({name})" in e for e in excerpts)
    assert any("constraint=CONSTRAINT_MEMCG" in e for e in excerpts)
    assert "oom_kill 1" in excerpts
    assert findings(report, "oom.inconclusive") == findings(report, "oom.ruled_out") == []
