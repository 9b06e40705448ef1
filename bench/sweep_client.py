"""Benchmark: what a `forensics sweep` costs the client, per source tree, A/B/A/B.

    python bench/sweep_client.py --hosts 64 --rounds 2 --tree /work/main --tree .

Starts N loopback sshd hosts, each session in its own PID and UTS namespace (`unshare`),
with an idle host's short kernel log (``--machine-kernel-log``: this machine's),
so what a host reports does not grow with N. Then runs `forensics sweep --format json`
from each ``--tree`` in turn (``PYTHONPATH`` set to it), round after round, against the
same hosts, and prints per run: wall time, the client's CPU (user + system of the sweep
process, from ``getrusage(RUSAGE_CHILDREN)``), the size of the JSON on stdout and of the
saved ``fleet.json``, and how many hosts were collected. Loopback: this measures the
client's own cost (SSH, decoding, parsing, judging, writing, reporting), not a network.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.fleet import Fleet, fleet  # noqa: E402

# Each session sees only its own processes and hostname, as on a real host; PID 1 is a
# small init script (not the session's command line, which holds the whole host script).
INIT = '#!/bin/sh\n/bin/sh -c "$SSH_ORIGINAL_COMMAND"\n'
# The kernel log is the machine's, shared by every host (and, on a test machine, full of
# the suite's OOM kills); an idle host's is a short boot log. Written for this bench in
# dmesg's format, with made-up values.
IDLE_KERNEL_LOG = """\
[    0.000000] Linux version 6.8.0-bench (bench@build) #1 SMP PREEMPT_DYNAMIC
[    0.000000] Command line: BOOT_IMAGE=/vmlinuz-6.8.0-bench root=/dev/vda1 ro
[    0.004000] DMI: bench virtual machine, BIOS 1.0 01/01/2026
[    1.210000] EXT4-fs (vda1): mounted filesystem with ordered data mode
[    2.500000] systemd[1]: Started Journal Service.
"""


# The peer: a bare paramiko thread pool that runs the same exec command on every host and
# reads everything back, nothing more (no parsing, no bundle, no report).
PARAMIKO_POOL = """
import os, sys, paramiko
from concurrent.futures import ThreadPoolExecutor
command = open(sys.argv[1]).read()
key, known, ports = sys.argv[2], sys.argv[3], sys.argv[4:]
def one(port):
    client = paramiko.SSHClient()
    client.load_host_keys(known)
    client.connect("127.0.0.1", port=int(port), username=os.environ.get("USER", "root"),
                   key_filename=key, look_for_keys=False, allow_agent=False)
    _, stdout, stderr = client.exec_command(command)
    size = len(stdout.read()) + len(stderr.read())
    client.close()
    return size
with ThreadPoolExecutor(len(ports)) as pool:
    sizes = list(pool.map(one, ports))
print(sum(1 for size in sizes if size > 0))
"""
PEER = "paramiko pool"


@dataclass
class Run:
    tree: str
    wall_s: float
    cpu_s: float
    stdout_bytes: int
    saved_bytes: int
    collected: int


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _sweep(
    made: Fleet, root: Path, tree: Path, concurrency: int, number: int, profile: Path | None
) -> Run:
    inventory = made.write_inventory(root / "inventory.yaml")
    out = root / f"out-{number}"
    environment = {**os.environ, "PYTHONPATH": str(tree), "PYTHONPYCACHEPREFIX": str(root / "pyc")}
    # Byte-compiled, as an installed tool is (PYTHONDONTWRITEBYTECODE on a test machine makes
    # every run compile the package again: ~0.8 s), into a cache of this bench's own.
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    cpu_before = _children_cpu()
    began = time.monotonic()
    # --gil: only what holds the interpreter, i.e. the client's Python CPU, not its waits.
    spy = ["py-spy", "record", "--gil", "--nonblocking", "--format", "raw", "--rate", "250",
           "--output", str(profile), "--"] if profile else []  # fmt: skip
    result = subprocess.run(
        [*spy, sys.executable, "-m", "forensics", "sweep", "--inventory", str(inventory),
         "--out", str(out), "--concurrency", str(concurrency), "--format", "json",
         "--fail-on", "never"],
        capture_output=True, cwd=tree, env=environment, check=False,
    )  # fmt: skip
    wall = time.monotonic() - began
    cpu = _children_cpu() - cpu_before
    if result.returncode != 0:
        raise SystemExit(f"sweep from {tree} failed ({result.returncode}): {result.stderr!r}")
    saved = next(out.glob("*/fleet.json"))
    # From the saved report: py-spy writes its own lines on the sweep's stdout.
    hosts = json.loads(saved.read_text())["hosts"]
    collected = sum(1 for host in hosts if host["status"] == "ok")
    return Run(str(tree), wall, cpu, len(result.stdout), saved.stat().st_size, collected)


def _paramiko_pool(made: Fleet, root: Path) -> Run:
    from forensics.collect import _sections
    from forensics.core.models import CollectOptions
    from forensics.remote.host_script import compose
    from forensics.remote.transport import remote_command

    command = root / "command.txt"
    command.write_text(remote_command(compose(_sections(CollectOptions()))))
    ports = [str(host.port) for host in made.hosts]
    cpu_before = _children_cpu()
    began = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", PARAMIKO_POOL, str(command), str(made.client_key),
         str(made.known_hosts), *ports],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    wall = time.monotonic() - began
    cpu = _children_cpu() - cpu_before
    if result.returncode != 0:
        raise SystemExit(f"the paramiko pool failed: {result.stderr[-2000:]}")
    return Run(PEER, wall, cpu, 0, 0, int(result.stdout.strip() or 0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--machine-kernel-log",
        action="store_true",
        help="Let hosts read this machine's kernel log (default: a short idle boot log).",
    )
    parser.add_argument(
        "--paramiko", action="store_true", help="Run the bare paramiko pool too, each round."
    )
    parser.add_argument(
        "--py-spy",
        type=Path,
        metavar="FILE",
        help="Record the first run with py-spy (collapsed stacks, all threads) into FILE.",
    )
    parser.add_argument(
        "--tree", action="append", type=Path, help="A source tree to run (repeatable)."
    )
    arguments = parser.parse_args()
    trees = [tree.resolve() for tree in arguments.tree or [REPO]]
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix=f"bench-client-{os.getpid()}-") as directory:
        root = Path(directory)
        shims = root / "shims"
        shims.mkdir()
        (shims / "init").write_text(INIT)
        (shims / "init").chmod(0o755)
        command = f"unshare --pid --uts --fork --mount-proc {shims / 'init'}"
        if not arguments.machine_kernel_log:
            (shims / "kernel.log").write_text(IDLE_KERNEL_LOG)
            (shims / "dmesg").write_text(f"#!/bin/sh\nexec cat {shims / 'kernel.log'}\n")
            (shims / "dmesg").chmod(0o755)
            command = f"env PATH={shims}:/usr/sbin:/usr/bin:/sbin:/bin {command}"
        with fleet(root / "fleet") as made:
            for number in range(arguments.hosts):
                made.add(f"host-{number:03d}", force_command=command)
            print(f"{arguments.hosts} sshd hosts, load average {os.getloadavg()[0]:.1f}")
            for index, tree in enumerate(trees):  # not counted: fills the bytecode cache
                _sweep(made, root, tree, arguments.concurrency, 100 + index, None)
            for round_number in range(arguments.rounds):
                for index, tree in enumerate(trees):
                    number = round_number * 10 + index
                    profile = arguments.py_spy if number == 0 else None
                    run = _sweep(made, root, tree, arguments.concurrency, number, profile)
                    runs.append(run)
                    _print(run)
                if arguments.paramiko:
                    runs.append(_paramiko_pool(made, root))
                    _print(runs[-1])
    print(f"medians over {arguments.rounds} rounds, load average {os.getloadavg()[0]:.1f}:")
    names = [str(tree) for tree in trees] + ([PEER] if arguments.paramiko else [])
    for name in names:
        mine = [run for run in runs if run.tree == name]
        print(
            f"{name:32} wall {statistics.median(r.wall_s for r in mine):6.2f}s  "
            f"client CPU {statistics.median(r.cpu_s for r in mine):6.2f}s  "
            f"per host {1000 * statistics.median(r.cpu_s for r in mine) / arguments.hosts:5.1f} ms"
            f"  stdout {statistics.median(r.stdout_bytes for r in mine) / 1e6:6.2f} MB"
        )


def _print(run: Run) -> None:
    print(
        f"{run.tree:32} wall {run.wall_s:6.2f}s  client CPU {run.cpu_s:6.2f}s  "
        f"stdout {run.stdout_bytes / 1e6:6.2f} MB  fleet.json "
        f"{run.saved_bytes / 1e6:6.2f} MB  hosts ok {run.collected}",
        flush=True,
    )


if __name__ == "__main__":
    main()
