"""Benchmark: how long the command line takes to answer ``--help``, ``version`` and a usage
error, beside the bare interpreter (``python3 -c 'import json'``).

Each command runs in a fresh interpreter, as the operator runs it, the commands taking
turns (A/B/C/A/B/C...) so that a change in the machine's load falls on all of them alike.
Prints, per command, the median and min wall time, the median CPU time (user+sys) and the
ratio of the median CPU time to the bare interpreter's (issue 15's target: at most 6x; CPU,
because on a loaded machine the wall time mostly measures the other processes).

``--bytecode``: with compiled bytecode cached (in a temporary ``PYTHONPYCACHEPREFIX``,
warmed by one run), as an installed package runs; without it, the environment's own
setting applies (``PYTHONDONTWRITEBYTECODE=1`` makes Python compile every module of ours
from source on every start).

Run: python bench/startup.py [--runs 9] [--bytecode]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CASES = {
    "python3 -c 'import json'": ["-c", "import json"],
    "forensics --help": ["-m", "forensics", "--help"],
    "forensics collect --help": ["-m", "forensics", "collect", "--help"],
    "forensics sweep --help": ["-m", "forensics", "sweep", "--help"],
    "forensics version": ["-m", "forensics", "version"],
    "forensics collect --timeout nope": ["-m", "forensics", "collect", "--timeout", "nope"],
}


def run_once(arguments: list[str], environment: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (user+sys) of one ``python3 ARGUMENTS``."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, *arguments],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, _, usage = os.wait4(child.pid, 0)
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--bytecode", action="store_true", help="cache compiled bytecode")
    chosen = parser.parse_args()
    environment = dict(os.environ, PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory(prefix="forensics-startup-") as cache:
        if chosen.bytecode:
            environment.pop("PYTHONDONTWRITEBYTECODE", None)
            environment["PYTHONPYCACHEPREFIX"] = cache
            for arguments in CASES.values():
                run_once(arguments, environment)
        load_before = os.getloadavg()[0]
        walls: dict[str, list[float]] = {name: [] for name in CASES}
        cpus: dict[str, list[float]] = {name: [] for name in CASES}
        for _ in range(chosen.runs):
            for name, arguments in CASES.items():
                wall, cpu = run_once(arguments, environment)
                walls[name].append(wall)
                cpus[name].append(cpu)
        load_after = os.getloadavg()[0]
    bytecode = "cached" if chosen.bytecode else os.environ.get("PYTHONDONTWRITEBYTECODE", "")
    print(
        f"{chosen.runs} runs each, interleaved; bytecode: "
        f"{'cached' if bytecode == 'cached' else 'compiled every start' if bytecode else 'default'}"
        f"; load average {load_before:.1f} before, {load_after:.1f} after ({os.cpu_count()} CPUs)"
    )
    bare = statistics.median(cpus["python3 -c 'import json'"])
    print(f"{'command':<34} {'wall median':>11} {'wall min':>9} {'CPU median':>11} {'x bare':>7}")
    for name in CASES:
        cpu = statistics.median(cpus[name])
        print(
            f"{name:<34} {statistics.median(walls[name]) * 1000:8.0f} ms "
            f"{min(walls[name]) * 1000:6.0f} ms {cpu * 1000:8.0f} ms {cpu / bare:6.1f}x"
        )


if __name__ == "__main__":
    main()
