"""Benchmark: what the flight recorder (`forensics arm`) costs the host, and how fast it
turns an exit into a bundle.

1. The host loop alone (``recorder.sh`` under /bin/sh), driven like the client drives it:
   one tick every ``--every`` (``recorder.tick_words``: the focus processes looked for
   again every 30 s, their threads counted every 5 s), for ``--seconds``. Its CPU time
   (the shell and every process it ran, from /proc/PID/stat after it ends) is printed as
   seconds per hour and as a share of one core.
2. ``forensics arm local`` (the real CLI) on a daemon that exits with status 42 under a
   parent that reaps it 2 s later, ``--runs`` times: from the exit (the zombie appearing)
   to the tick that saw it, and to the bundle on disk.

Run: python bench/arm_recorder.py [--seconds 120] [--every 1] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from forensics.watch.recorder import tick_words
from forensics.watch.recorder_host import loop_script
from tests.recorder_scenario import DAEMON

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def host_loop_cpu(seconds: float, every: float, focus: str) -> tuple[float, int]:
    """CPU seconds the host loop used over ``seconds`` of ticks, and the ticks sent."""
    nonce = secrets.token_hex(8)
    loop = subprocess.Popen(
        ["/bin/sh", "-c", loop_script(nonce, focus)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert loop.stdin is not None and loop.stdout is not None
    ticks, start, counted = 0, time.monotonic(), False
    while time.monotonic() - start < seconds:
        words = tick_words(ticks, every, counted)
        loop.stdin.write((words + "\n").encode())
        loop.stdin.flush()
        counted = False
        while not (line := loop.stdout.readline().rstrip()).endswith(b" E"):
            counted = counted or (b" C " in line and not line.endswith(b" -"))
        ticks += 1
        time.sleep(max(0.0, start + ticks * every - time.monotonic()))
    stat = Path(f"/proc/{loop.pid}/stat").read_text()
    fields = stat[stat.rfind(")") + 2 :].split()
    own = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime
    children = (int(fields[13]) + int(fields[14])) / CLOCK_TICKS  # cutime, cstime
    loop.stdin.close()
    loop.wait()
    return own + children, ticks


def exit_to_bundle(every: str) -> tuple[float, float]:
    """Seconds from the daemon's exit to the recorder seeing it, and to the bundle."""
    with tempfile.TemporaryDirectory() as work:
        name = f"fxbench{secrets.token_hex(3)}"
        go = Path(work) / "go"
        daemon = subprocess.Popen(
            [sys.executable, "-c", DAEMON, name, str(go), "5"], stdout=subprocess.PIPE, text=True
        )
        arm = subprocess.Popen(
            [
                sys.executable, "-m", "forensics", "arm", "local", "--focus", f"^{name}$",
                "--every", every, "--snapshot-gap", "0", "--format", "json",
                "--out", str(Path(work) / "out"), "--for", "60s",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        time.sleep(3)
        go.touch()
        out, _ = arm.communicate(timeout=120)
        assert daemon.stdout is not None
        zombie_at = float(daemon.stdout.readline().split()[2])
        daemon.wait()
        report = json.loads(out)
        seen = report["facts"]["recorder"]["events"][0]["time"]
        manifest = json.loads((Path(report["bundle"]) / "manifest.json").read_text())
        seen_at = datetime.fromisoformat(seen).timestamp()
        written_at = datetime.fromisoformat(manifest["finished"]).timestamp()
        return seen_at - zombie_at, written_at - zombie_at


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--every", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=3)
    arguments = parser.parse_args()
    marker = f"fxbenchfocus{secrets.token_hex(3)}"
    focus = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(86400)", marker]
    )  # one focus process, matched by its command line
    try:
        cpu_s, ticks = host_loop_cpu(arguments.seconds, arguments.every, marker)
    finally:
        focus.kill()
        focus.wait()
    per_hour = cpu_s * 3600 / arguments.seconds
    print(
        f"host loop: {ticks} ticks every {arguments.every:g}s over {arguments.seconds:g}s, "
        f"one focus process: {cpu_s:.2f} CPU s -> {per_hour:.1f} CPU s per hour "
        f"({100 * cpu_s / arguments.seconds:.3f}% of one core)"
    )
    seen, written = zip(
        *(exit_to_bundle(f"{arguments.every:g}s") for _ in range(arguments.runs)), strict=True
    )
    print(
        f"exit -> seen: median {statistics.median(seen):.2f}s (max {max(seen):.2f}s); "
        f"exit -> bundle on disk: median {statistics.median(written):.2f}s "
        f"(max {max(written):.2f}s) over {arguments.runs} runs"
    )


if __name__ == "__main__":
    main()
