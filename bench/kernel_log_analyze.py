"""Benchmark: `forensics analyze` on a bundle whose kernel log section is the full 1 MiB cap,
every line of it an event (the worst case for the kernel log parsers and rules).

The log is the kernel log corpus (tests/samples/kernel/corpus) re-stamped and repeated to
about 3 MiB, served by a scenario host's dmesg over a loopback sshd, so the host filters
it down to the newest 1 MiB of matching lines, as on a real host; the previous boot's
journal holds another copy (256 KiB kept). Then `forensics analyze BUNDLE` runs, the CLI
as a user runs it and the analysis in-process.

Run: python bench/kernel_log_analyze.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from forensics.judge.analysis import analyze
from forensics.probes.kernel_log import LOG_BYTES_KEPT
from forensics.remote.bundle import load
from tests.kernel_corpus import samples
from tests.kernel_scenario import KernelScenario
from tests.sshd import SshServer

LOG_BYTES = 3 * LOG_BYTES_KEPT


def corpus_log() -> tuple[str, str]:
    """The corpus as dmesg lines (this boot) and as journal lines (the previous boot)."""
    messages = []
    for sample in samples():
        current = sample.log.split("=== previous boot ===")[0]
        for line in current.splitlines():
            text = line.split("] ", 1)[1] if line.startswith("[") else line
            if " kernel: " in text:
                text = text.split(" kernel: ", 1)[1]
            messages.append(text.split("] ", 1)[1] if text.startswith("[ ") else text)
    dmesg, journal, second = [], [], 10.0
    size = 0
    while size < LOG_BYTES:
        for message in messages:
            second += 0.013
            line = f"[{second:12.6f}] {message}\n"
            dmesg.append(line)
            size += len(line)
    for message in messages * 40:
        journal.append(f"2025-11-28T10:00:00.000000+00:00 gpu-a kernel: {message}\n")
    return "".join(dmesg), "".join(journal)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    dmesg, journal = corpus_log()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        scenario = KernelScenario(root / "host", dmesg=dmesg, previous_journal=journal)
        server = SshServer(root=root / "sshd", force_command=scenario.force_command()).start()
        try:
            collected = subprocess.run(
                [sys.executable, "-m", "forensics", "collect", *server.target_args(),
                 "--out", str(root / "out"), "--format", "json", "--fail-on", "never"],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
        finally:
            server.stop()
        bundle = Path(json.loads(collected.stdout)["bundle"])
        section = (bundle / "raw" / "kernel_log.txt").read_bytes()
        log = json.loads(collected.stdout)["facts"]["kernel_log"]
        print(
            f"host log {len(dmesg)} bytes; kernel_log section {len(section)} bytes "
            f"(log kept: {log['cap_bytes']} of {log['filtered_bytes']} matching bytes); "
            f"{len(log['oom_kills'])} OOM kills, {len(log['xids'])} Xids, "
            f"{len(log['crashes'])} kernel crashes, {len(log['pcie_errors'])} PCIe errors"
        )
        cli = [sys.executable, "-m", "forensics", "analyze", str(bundle), "--format", "json",
               "--fail-on", "never"]  # fmt: skip
        timings = []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(cli, capture_output=True, check=True)
            timings.append(time.perf_counter() - start)
        print(
            f"forensics analyze (CLI), {runs} runs: median {statistics.median(timings):.2f} s, "
            f"min {min(timings):.2f} s"
        )
        timings = []
        for _ in range(runs):
            start = time.perf_counter()
            manifest, captures = load(bundle)
            analyze(manifest, captures, str(bundle))
            timings.append(time.perf_counter() - start)
        print(
            f"analyze in-process (read bundle + parse + rules): median "
            f"{statistics.median(timings):.2f} s, min {min(timings):.2f} s"
        )


if __name__ == "__main__":
    main()
