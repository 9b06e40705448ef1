"""Real processes for the flight recorder's tests, and ``forensics arm`` run as a child.

``DAEMON`` is a daemon-like child under a parent that reaps late: once the file ``go``
appears, the child grows its RSS, then exits with status 42; the parent notices the zombie,
prints the moment, waits 2 s and only then reaps it (the exit status is readable from
/proc/PID/stat only in those 2 s).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

DAEMON = """
import os, sys, time
name, go, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
pid = os.fork()
if pid == 0:
    with open("/proc/self/comm", "w") as comm:
        comm.write(name)
    while not os.path.exists(go):
        time.sleep(0.05)
    hoard = []
    for _ in range(steps):
        hoard.append(bytearray(8 << 20))
        time.sleep(0.1)
    os._exit(42)
while True:
    stat = open(f"/proc/{pid}/stat").read()
    if stat[stat.rfind(")") + 2] == "Z":
        break
    time.sleep(0.01)
print(f"zombie {pid} {time.time()}", flush=True)
time.sleep(2)
os.waitpid(pid, 0)
print("reaped", flush=True)
"""

# A cgroup v1 allocator that waits for ``go``, then fills its 64 MiB cgroup slowly enough
# for the samples to show the usage climbing to the limit.
SLOW_HOG = """
import os, sys, time
with open("/proc/self/comm", "w") as comm:
    comm.write(sys.argv[1])
with open(sys.argv[2] + "/cgroup.procs", "w") as procs:
    procs.write("0")
while not os.path.exists(sys.argv[3]):
    time.sleep(0.05)
hoard = []
while True:
    hoard.append(bytearray(2 << 20))
    time.sleep(0.1)
"""


@dataclass
class Armed:
    """A running ``forensics arm``: ``wait_for`` reads its stderr as it comes, ``finish``
    waits for it and returns what it said."""

    process: subprocess.Popen[str]
    started: float
    said: list[str] = field(default_factory=list)
    reader: threading.Thread | None = None

    def __post_init__(self) -> None:
        self.reader = threading.Thread(target=self._read_stderr, daemon=True)
        self.reader.start()

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.said.append(line)

    def wait_for(self, *texts: str, timeout: float = 60) -> None:
        """Until every one of TEXTS appeared on stderr (the recorder says "HOST: armed"
        once its first samples are in), or fail naming what it said."""
        assert self.reader is not None
        deadline = time.monotonic() + timeout
        while True:
            reading = self.reader.is_alive()  # read before the lines: none come after it ends
            if all(any(text in line for line in self.said) for text in texts):
                return
            assert reading, "forensics arm ended first: " + "".join(self.said)
            assert time.monotonic() < deadline, f"never said {texts}: " + "".join(self.said)
            time.sleep(0.05)

    def finish(self, timeout: float = 60) -> tuple[int, str, str]:
        assert self.process.stdout is not None and self.reader is not None
        out = self.process.stdout.read()
        self.process.wait(timeout)
        self.reader.join(timeout)
        return self.process.returncode, out, "".join(self.said)

    def stop(self, number: int = signal.SIGINT) -> None:
        if self.process.poll() is None:
            self.process.send_signal(number)


def arm(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> Armed:
    """Start ``forensics arm ARGS`` as a child process (``env`` added to this one's)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "forensics", "arm", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )
    return Armed(process, time.monotonic())


def wait_armed(seconds: float = 4.0) -> None:
    """Give the recorder time to start, connect and take its first samples."""
    time.sleep(seconds)
