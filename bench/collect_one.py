"""Benchmark: one host collection against a loopback sshd, beside OpenSSH doing the same.

Prints, over several runs (median and min):
- `forensics collect` as a user runs it (the CLI, Python start-up included),
- the collection in-process (`forensics.collect.collect`, no interpreter start-up), its
  wall time and the process-snapshot gap the host recorded (the default 2 s is asked;
  the other sections run inside it),
- OpenSSH's own `ssh host sh -s < script` with the very same script,
and the ratios. With ``--against DIR`` (another checkout, e.g. ``git archive main | tar -x
-C DIR``) it also runs in-process collections of that tree and of this one in turn, A/B/A/B
against the same sshd, each tree in its own interpreter, so the two see the same load on a
shared machine. Then the cost of the script on the target: how many processes it
spawned (counted in a private PID namespace) and the CPU time they used, in all and per
section (each section alone after the prelude, less the prelude's own cost), so that the
next change to the host script can see where its processes and CPU go.

Run: python bench/collect_one.py [--runs 7] [--against DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from forensics.collect import collect
from forensics.core.models import CollectOptions, SectionSpec, SshOptions
from forensics.core.targets import parse_target
from forensics.probes import PROBES
from forensics.remote.host_script import compose
from tests.sshd import SshServer


def timed(runs: int, action: object) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        action()  # type: ignore[operator]
        samples.append(time.perf_counter() - start)
    return samples


def client_cpu(runs: int, action: object) -> float:
    """Median CPU seconds (user+sys) this process spends per run of ``action``."""
    samples = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_SELF)
        action()  # type: ignore[operator]
        after = resource.getrusage(resource.RUSAGE_SELF)
        samples.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(samples)


def show(label: str, samples: list[float]) -> float:
    median = statistics.median(samples)
    print(f"  {label:<38} median {median * 1000:8.1f} ms   min {min(samples) * 1000:8.1f} ms")
    return median


def script_cost(script_text: str) -> tuple[int | None, float]:
    """Processes spawned and CPU seconds of one local run, in a private PID namespace (as
    the issue's hosts are: the processes and scripts probes read every process there is,
    so on the machine's own namespace their CPU grows with what else runs on it). The CPU
    includes the counting shell, ``unshare`` and ``cat`` (about 2 ms)."""
    if not shutil.which("unshare"):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(["/bin/sh", "-c", script_text], capture_output=True, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return None, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    counted = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", "/bin/sh", "-c",
         '/bin/sh -c "$1" >/dev/null 2>&1; cat /proc/sys/kernel/ns_last_pid', "sh",
         script_text],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = counted.stdout.split()
    # PID 1 is the namespace's sh, PID 2 the script's own shell (its EXIT trap counted
    # too), and the last PID is the counting `cat`.
    return (int(lines[-1]) - 3 if lines and lines[-1].isdigit() else None), cpu


# One in-process collection per line read; prints its wall seconds and the recorded gap.
# Only APIs every tree has, so that it runs in an older checkout as well as in this one.
_WORKER = """
import sys, time
from pathlib import Path
from forensics.collect import collect
from forensics.core.models import CollectOptions, SshOptions
from forensics.core.targets import parse_target
spec, identity, known, config, out = sys.argv[1:6]
target = parse_target(spec, SshOptions(identity=identity, known_hosts=known, ssh_config=config))
for _ in sys.stdin:
    start = time.perf_counter()
    facts = collect(target, CollectOptions(timeout=60), Path(out)).facts.processes
    gap = facts.gap_s if facts is not None and facts.gap_s is not None else -1
    print(time.perf_counter() - start, gap, flush=True)
"""


def alternate(runs: int, server: SshServer, root: Path, trees: dict[str, Path]) -> None:
    """In-process collections of each tree in turn (A/B/A/B), one interpreter per tree."""
    workers = {
        label: subprocess.Popen(
            [
                sys.executable,
                "-c",
                _WORKER,
                server.target,
                str(server.client_key),
                str(server.known_hosts),
                str(root / "sshd" / "ssh_config"),
                str(root / label),
            ],
            cwd=tree,
            env={**os.environ, "PYTHONPATH": str(tree)},
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        for label, tree in trees.items()
    }
    walls: dict[str, list[float]] = {label: [] for label in trees}
    gaps: dict[str, list[float]] = {label: [] for label in trees}
    try:
        for _ in range(runs):
            for label, worker in workers.items():
                assert worker.stdin is not None and worker.stdout is not None
                worker.stdin.write("go\n")
                worker.stdin.flush()
                wall, gap = worker.stdout.readline().split()
                walls[label].append(float(wall))
                gaps[label].append(float(gap))
    finally:
        for worker in workers.values():
            if worker.stdin is not None:
                worker.stdin.close()
            worker.wait(timeout=60)
    print(f"In-process collections, A/B/A/B, {runs} each:")
    for label, tree in trees.items():
        show(f"{label} ({tree.name}), wall", walls[label])
        print(f"  {'':<38} gap recorded median {statistics.median(gaps[label]):5.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--against", type=Path, help="another checkout to run A/B against")
    arguments = parser.parse_args()
    runs = arguments.runs
    options = CollectOptions(timeout=60)
    script = compose([spec for probe in PROBES for spec in probe.sections(options)])
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        server = SshServer(root=root / "sshd").start()
        try:
            target = parse_target(
                server.target,
                SshOptions(
                    identity=str(server.client_key),
                    known_hosts=str(server.known_hosts),
                    ssh_config=str(root / "sshd" / "ssh_config"),
                ),
            )
            cli = [sys.executable, "-m", "forensics", "collect", *server.target_args(),
                   "--out", str(root / "out"), "--format", "json",
                   "--fail-on", "never"]  # fmt: skip
            ssh = ["ssh", "-F", "/dev/null", "-p", str(server.port), "-i", str(server.client_key),
                   "-o", f"UserKnownHostsFile={server.known_hosts}", "-o", "BatchMode=yes",
                   "root@127.0.0.1", "sh", "-s"]  # fmt: skip
            print(f"One host over loopback sshd, {runs} runs each, {len(script.text)} byte script,"
                  f" probes: {', '.join(p.name for p in PROBES)}")  # fmt: skip
            cli_time = show("forensics collect (CLI)", timed(runs, lambda: subprocess.run(
                cli, capture_output=True, check=True)))  # fmt: skip
            gaps: list[float] = []

            def collect_once() -> None:
                facts = collect(target, options, root / "out").facts.processes
                gaps.append(facts.gap_s if facts and facts.gap_s is not None else float("nan"))

            inproc = show("forensics collect (in-process), wall", timed(runs, collect_once))
            gap = statistics.median(gaps)
            print(f"  process-snapshot gap recorded          median {gap:8.2f} s"
                  f"   (asked {options.snapshot_gap:g} s)")  # fmt: skip
            cpu = client_cpu(runs, lambda: collect(target, options, root / "out"))
            print(f"  client CPU per collection (in-process)  median {cpu * 1000:8.1f} ms")
            openssh = show("ssh host sh -s < script (OpenSSH)", timed(runs, lambda: subprocess.run(
                ssh, input=script.text.encode(), capture_output=True, check=True)))  # fmt: skip
            print(f"  ratio CLI / OpenSSH:        {cli_time / openssh:5.2f}")
            print(f"  ratio in-process / OpenSSH: {inproc / openssh:5.2f}")
            if arguments.against is not None:
                here = Path(__file__).resolve().parent.parent
                trees = {"against": arguments.against.resolve(), "this": here}
                alternate(runs, server, root, trees)
        finally:
            server.stop()
    processes, cpu = script_cost(script.text)
    print("Cost of the script on the target (one local run):")
    print(f"  processes spawned: {processes if processes is not None else 'unknown'}")
    print(f"  CPU time (user+sys of the script and its children): {cpu * 1000:.1f} ms")
    print_section_costs(options)


def print_section_costs(options: CollectOptions) -> None:
    """Each section run alone (the snapshot gap set to 0), less what it shares with the
    others: the prelude for all; for an in-shell section also the script's watchdog and
    (measured with an in-shell section that does
    nothing). Medians of 5 runs."""
    quick = options.model_copy(update={"snapshot_gap": 0.0})
    specs = [spec for probe in PROBES for spec in probe.sections(quick)]
    # Long enough (a few ms) that the watchdog has forked its sleep, as in a whole script.
    noop = SectionSpec(
        name="noop", shell="i=0; while [ $i -lt 3000 ]; do i=$((i + 1)); done", in_shell=True
    )
    prelude = median_cost(compose([]).text)
    shared = median_cost(compose([noop]).text)
    print("Per section (run alone, shared costs subtracted; the process gap set to 0):")
    for spec in specs:
        base = shared if spec.in_shell else prelude
        processes, cpu = median_cost(compose([spec]).text)
        spawned = "?" if processes is None or base[0] is None else str(processes - base[0])
        kind = "in-shell" if spec.in_shell else "own sh"
        print(f"  {spec.name:<12} {kind:<8} processes {spawned:>3}   "
              f"CPU {(cpu - base[1]) * 1000:6.1f} ms")  # fmt: skip
    print(f"  (prelude alone: processes {prelude[0]}, CPU {prelude[1] * 1000:.1f} ms; "
          f"in-shell sections share {_minus(shared[0], prelude[0])} more: the watchdog's "
          "subshell and sleep)")  # fmt: skip


def median_cost(script_text: str, runs: int = 5) -> tuple[int | None, float]:
    costs = [script_cost(script_text) for _ in range(runs)]
    return costs[0][0], statistics.median(cpu for _, cpu in costs)


def _minus(a: int | None, b: int | None) -> str:
    return "?" if a is None or b is None else str(a - b)


if __name__ == "__main__":
    main()
